"""A screen closed is freed: its thread workers keep nothing alive (app/thread_context.py).

Textual sets a thread worker's `active_worker` in the pool thread's own context, which outlived
the worker: a tree closed with Esc stayed in memory (its screen, model and session) until that
thread ran another worker.  Checked with weak references after a collection, in seance's own
app and in a host app that uses `use_fresh_contexts()`; no memory figure is asserted.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
from test_screen_passes import _messages_session
from test_ui_tree import SIZE as TREE_SIZE
from test_ui_tree import write_session
from textual.app import App
from ui_harness import SIZE, picker_app, settle, wait_until
from ui_sessions import make_root

from seance.app import use_fresh_contexts
from seance.app.screens.session_tree import GC_FREEZE_ENTRIES, SessionTreeScreen
from seance.app.thread_context import FreshContextExecutor


async def test_a_tree_closed_in_the_picker_is_freed(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await wait_until(pilot, lambda: isinstance(app.screen, SessionTreeScreen) and app.screen.model is not None)
        await settle(pilot)
        tree = app.screen
        assert isinstance(tree, SessionTreeScreen) and tree.model is not None
        gone = [weakref.ref(tree), weakref.ref(tree.model), weakref.ref(tree.model.tree)]
        del tree
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SessionTreeScreen))
        await settle(pilot)
        gc.collect()
        assert [ref() is None for ref in gone] == [True, True, True], "the closed tree is still alive"


class Host(App[Any]):
    """A host app that pushes seance's tree screen, its loop's workers in fresh contexts."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.results: list[Any] = []

    def on_mount(self) -> None:
        use_fresh_contexts()
        self.push_screen(SessionTreeScreen(self.path, cwd="/nowhere"), callback=self.results.append)


async def test_a_host_using_fresh_contexts_frees_the_tree_it_closed(tmp_path: Path) -> None:
    app = Host(write_session(tmp_path / "session.jsonl"))
    async with app.run_test(size=TREE_SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SessionTreeScreen) and app.screen.model is not None)
        await settle(pilot)
        tree = app.screen
        assert isinstance(tree, SessionTreeScreen) and tree.model is not None
        gone = [weakref.ref(tree), weakref.ref(tree.model)]
        del tree
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.results == [None])
        await settle(pilot)
        gc.collect()
        assert [ref() is None for ref in gone] == [True, True], "the closed tree is still alive"


def test_each_call_runs_in_a_copy_of_the_callers_context_and_leaves_the_thread_clean() -> None:
    """What a call sets is gone with it, and it sees what its caller had set."""
    variable: contextvars.ContextVar[str] = contextvars.ContextVar("variable", default="unset")

    def set_and_read() -> tuple[str, str]:
        seen = variable.get()
        variable.set("set by the call")
        return seen, variable.get()

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(FreshContextExecutor(max_workers=1))
        variable.set("the caller's")
        first = await loop.run_in_executor(None, set_and_read)
        second = await loop.run_in_executor(None, variable.get)  # (the same pool thread)
        return [first, second]

    assert asyncio.run(main()) == [("the caller's", "set by the call"), "the caller's"]


@pytest.mark.parametrize("big", [False, True], ids=["small", "frozen"])
async def test_a_tree_closed_is_freed_at_once_not_by_a_later_full_collection(tmp_path: Path, big: bool) -> None:
    """With the collector stopped (as it is between seance's idle collections), the session of
    a tree closed with Esc is freed by reference counting as the screen goes: kept until a
    full collection, a 200,000-entry session stayed in memory meanwhile and that collection
    then walked it on the UI thread.  `frozen`: a session big enough to be frozen out of the
    collector's reach (`GC_FREEZE_ENTRIES`), its preview and search index built."""
    if big:
        root = tmp_path / "sessions"
        (root / "--p--").mkdir(parents=True)
        _messages_session(root / "--p--" / "m.jsonl", GC_FREEZE_ENTRIES // 3 + 10)
        app = picker_app(root, scope="all")
    else:
        app = picker_app(make_root(tmp_path))
    thresholds = gc.get_threshold()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        gc.collect()
        gc.set_threshold(0)  # (no collection from here on, whatever seance pauses and resumes)
        try:
            await pilot.press("ctrl+t")
            await wait_until(pilot, lambda: isinstance(app.screen, SessionTreeScreen) and app.screen.model is not None)
            await settle(pilot)
            await wait_until(pilot, lambda: app.screen.model is not None and app.screen.model.search_ready)
            await settle(pilot)
            tree = app.screen
            assert isinstance(tree, SessionTreeScreen) and tree.model is not None and tree.session is not None
            gone = [weakref.ref(tree.model), weakref.ref(tree.model.tree), weakref.ref(tree.session)]
            del tree
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(app.screen, SessionTreeScreen))
            await settle(pilot)
            alive = [ref() is not None for ref in gone]
        finally:
            gc.set_threshold(*thresholds)
        assert alive == [False, False, False], "the closed tree waits for a full collection"
