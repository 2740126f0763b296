"""What the list's query costs the preview and the tree, and what bounds it: typing on with
one session highlighted builds nothing twice, a backtracking `re:` does not freeze the app,
the words the index found are the words the preview shows, and a tree search typed before
the tree's own look ends keeps its cursor.  Real files, a real index, Textual Pilot."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

import pytest
from test_ui_preview_match import call, chatter, highlighted_preview, message, preview_ready, result, root, text, write
from ui_harness import picker_app, screen_of, searched, settle, wait_until

import seance.app.widgets.context_preview as cp
from seance.app.screens import session_tree
from seance.app.screens.session_tree import SessionTreeScreen
from seance.core.search import parse_query

__all__ = ["root"]  # (the fixture, used by name)


async def test_typing_on_with_the_same_session_highlighted_builds_its_context_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wom` → `wombat`: each key asks for a preview, none walks the context again (its first
    match is kept per term: `womb` narrows `wom`), and the document, the same, is not made
    into text again.  On a 200,000-message session each was a whole-context build and scan."""
    folder = tmp_path / "sessions" / "--work-demo-match--"
    write(folder / "s.jsonl", message("user", text("go")), call("c1", "ls"), result("c1", "a wombat"), *chatter(150))
    frames: list[object] = []
    texts: list[object] = []
    real_frame, real_body = cp.context_frame, cp.body_content
    monkeypatch.setattr(cp, "context_frame", lambda *args: frames.append(args) or real_frame(*args))
    monkeypatch.setattr(cp, "body_content", lambda *args: texts.append(args) or real_body(*args))
    async with picker_app(tmp_path / "sessions", scope="all", cache_dir=tmp_path / "cache").run_test(
        size=(160, 45)
    ) as pilot:
        screen = await searched(pilot, "wom")
        preview = await preview_ready(pilot)
        doc = preview.document
        assert doc is not None and doc.at_match and doc.earlier == 2
        assert len(frames) == 1
        texts.clear()
        for typed in ("womb", "womba", "wombat"):
            screen.search_input.value = typed
            await settle(pilot)
            await preview_ready(pilot)
            assert preview.document == doc, typed
        assert len(frames) == 1, "the context was walked again"
        assert texts == [], "the same document was made into text again"


async def test_a_backtracking_regex_does_not_freeze_the_ui(tmp_path: Path) -> None:
    """`re:(a+)+$` over `aaa…a!` backtracks 2^25 times: `re` held the GIL for it, the
    preview's look now stops at `userregex.LOOK_TIMEOUT`, off the GIL."""
    folder = tmp_path / "sessions" / "--work-demo-match--"
    write(folder / "s.jsonl", message("user", text("fix a")), call("c1", "ls"), result("c1", "a" * 25 + "!"))
    async with picker_app(tmp_path / "sessions", scope="all", cache_dir=tmp_path / "cache").run_test(
        size=(160, 45)
    ) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.search_input.value = "re:(a+)+$"
        worst, end = 0.0, time.perf_counter() + 4
        while time.perf_counter() < end:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            worst = max(worst, time.perf_counter() - start - 0.01)
        assert len(screen.session_list.rows) == 1
        assert worst < 0.5, f"the event loop stalled {worst:.1f}s"


@pytest.mark.parametrize(
    ("said", "query", "word"),
    [
        ("we load it in load_config at start", "config", "config"),  # the index's words split at `_`
        ("the bug is in parse_args", '"args"', "args"),
        ("meet at the café tomorrow", "cafe", "café"),  # and fold accents
        ("meet at the cafe tomorrow", "café", "cafe"),
    ],
)
async def test_the_words_the_list_found_are_where_the_preview_starts(
    tmp_path: Path, said: str, query: str, word: str
) -> None:
    folder = tmp_path / "sessions" / "--work-demo-match--"
    write(folder / "s.jsonl", message("user", text("hello")), call("c1", "ls"), result("c1", said), *chatter(120))
    async with picker_app(tmp_path / "sessions", scope="all", cache_dir=tmp_path / "cache").run_test(
        size=(160, 45)
    ) as pilot:
        screen = await searched(pilot, query)
        assert len(screen.session_list.rows) == 1, "the index finds it"
        preview = await preview_ready(pilot)
        doc = preview.document
        assert doc is not None and doc.at_match and doc.blocks[0].kind == "tool"
        body = doc.blocks[0].body
        assert [body[start:end] for start, end in doc.blocks[0].body_marks] == [word]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event, threading.Event]:
    """The tree's look (`first_matching_entry`) held until released: (release, looked, ended)."""
    release, looked, ended = threading.Event(), threading.Event(), threading.Event()
    real = session_tree.first_matching_entry

    def look(*args: object) -> str | None:
        looked.set()
        release.wait(10)
        try:
            return real(*args)  # type: ignore[arg-type]
        finally:
            ended.set()

    monkeypatch.setattr(session_tree, "first_matching_entry", look)
    return release, looked, ended


async def test_the_tree_draws_its_rows_before_the_match_is_found_and_a_cursor_moved_first_stays(
    root: Path, tmp_path: Path, held: tuple[threading.Event, threading.Event, threading.Event]
) -> None:
    """The match is looked for after the first rows (a 200,000-entry session's look is
    seconds): rows are shown while the look is held, the cursor then moves to the match; a
    look that ends after the user moved leaves their cursor."""
    from seance.app.widgets.tree_view import TreeView

    release, looked, _ended = held
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        await highlighted_preview(pilot, "platypus")
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, looked.is_set)
        assert looked.is_set(), "the look begins once the rows are drawn"
        view = tree.query_one(TreeView)
        assert tree.model is not None and view.display and tree.model.rows, "the rows did not wait for it"
        assert tree.model.selected_id == "o2", "where it opens without a query, while it looks"
        release.set()
        await wait_until(pilot, lambda: tree.model is not None and tree.model.selected_id == "p1")
        assert tree.model.selected_id == "p1", "then on the branch that holds the match"
        await pilot.press("escape")
        await settle(pilot)

        release.clear()
        looked.clear()
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, looked.is_set)
        assert looked.is_set()
        await pilot.press("up")  # the user moves before the look ends
        assert tree.model is not None
        moved = tree.model.selected_id
        release.set()
        await settle(pilot)
        assert tree.model.selected_id == moved, "a cursor the user moved stays theirs"


async def test_a_tree_search_typed_before_the_match_arrives_keeps_the_cursor(
    root: Path, tmp_path: Path, held: tuple[threading.Event, threading.Event, threading.Event]
) -> None:
    """The user types in the tree's own search while the look runs: the rows and the cursor's
    row number stay (every entry holds an "e"), its entry may not; the look's answer then
    must not move the cursor (the user acted)."""
    release, looked, ended = held
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        await highlighted_preview(pilot, "platypus")
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, looked.is_set)
        assert tree.model is not None
        await pilot.press("e")
        typed = tree.model.selected_id
        release.set()
        await wait_until(pilot, ended.is_set)
        await settle(pilot)
        assert tree.model.query == "e" and tree.model.selected_id == typed


async def test_esc_while_the_tree_looks_stops_the_look(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look is handed its worker's cancellation: Esc (the screen and its workers gone)
    makes it give up, and a look given up moves no cursor."""
    release, asked = threading.Event(), threading.Event()
    said: list[bool] = []
    real = session_tree.first_matching_entry

    def look(*args: object) -> str | None:
        stop = args[3]
        assert callable(stop)
        said.append(stop())
        asked.set()
        release.wait(10)
        said.append(stop())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(session_tree, "first_matching_entry", look)
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        screen = screen_of(pilot)
        await highlighted_preview(pilot, "platypus")
        await pilot.press("ctrl+t")
        await wait_until(pilot, asked.is_set)
        await pilot.press("escape")
        await wait_until(pilot, lambda: pilot.app.screen is screen)
        release.set()
        await wait_until(pilot, lambda: len(said) == 2)
        assert said == [False, True], "the screen gone, its look is told to stop"


def test_a_stopped_look_gives_up(tmp_path: Path) -> None:
    """`first_matching_entry` asks `stop` as it walks: told to stop, it answers None (and the
    match is still found when asked again without it)."""
    path = write(tmp_path / "s.jsonl", *chatter(600), message("user", text("the zebra at last")))
    session = cp.read_session(path)
    order = list(session.tree.by_id)
    asked: list[int] = []
    assert cp.first_matching_entry(session, order, parse_query("zebra"), lambda: asked.append(1) or True) is None
    assert asked, "stop was asked"
    assert cp.first_matching_entry(session, order, parse_query("zebra")) == "e1200"
