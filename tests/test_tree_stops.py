"""The tree screen's background passes stop when the user leaves, and never run on the UI thread
(Pilot, real Textual, real files; issue 14: the UI thread never waits more than a frame).

The search index and the preview's path totals each decode every message of a huge session
(seconds at 200,000 entries): a key must not start that pass on the UI thread, and Esc must
not leave it running (holding the GIL the list screen needs) until it ends.  The passes are
held at their first entry by a gate, so what is checked is structural: how many entries the
pass decoded once the screen was gone, and on which thread — no wall-clock bound.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from test_screen_passes import _by_offset, _messages_session
from test_tree_first_frame import _custom_line
from test_ui_tree import SIZE, TreeApp, settle, status, write_session
from textual.worker import WorkerFailed

from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.tree_model import CALLS_READ_BACK, SEARCH_STOP_EVERY, TreeModel
from seance.app.widgets.tree_view import TreeView
from seance.core.errors import Stopped
from seance.core.linesource import LineSource
from seance.core.pathtotals import STOP_EVERY, PathTotals
from seance.core.session import Session, read_session
from seance.core.summary import ToolCallsFromEnd

ENTRIES = 20_000


def _long_session(tmp_path: Path) -> Path:
    """The UI tests' session with a chain of `ENTRIES` custom entries under its leaf."""
    path = write_session(tmp_path / "session.jsonl")
    with path.open("ab") as handle:
        handle.write(b"".join(_custom_line(index) for index in range(ENTRIES)))
    return path


class Gate:
    """Counts the search index's entries (`TreeModel._build_search_text`) and the threads
    that build them; holds the first one until `release`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started, self.released = threading.Event(), threading.Event()
        self.built = 0
        self.threads: set[int] = set()
        build = TreeModel._build_search_text

        def gated(model: TreeModel, entry_id: str, entry: dict[str, Any]) -> str:
            self.built += 1
            self.threads.add(threading.get_ident())
            if not self.started.is_set():
                self.started.set()
                self.released.wait(30)
            return build(model, entry_id, entry)

        monkeypatch.setattr(TreeModel, "_build_search_text", gated)
        self.ended = threading.Event()  # (a cancelled worker says it is finished at once: the pass may run on)
        texts = TreeModel._all_search_texts

        def ended(model: TreeModel, *args: Any) -> Any:
            try:
                return texts(model, *args)
            finally:
                self.ended.set()

        monkeypatch.setattr(TreeModel, "_all_search_texts", ended)

    async def wait_started(self, pilot: Any) -> None:
        for _ in range(400):
            if self.started.is_set():
                return
            await pilot.pause(0.02)
        raise AssertionError("the search index never started")

    async def held_tree(self, pilot: Any) -> SessionTreeScreen:
        """The tree screen, once its search index is held at its first entry."""
        await self.wait_started(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.model is not None
        return screen


def _index_worker(app: TreeApp) -> Any:
    return next(worker for worker in app.workers if worker.group == "tree-search-index")


async def test_leaving_the_tree_while_its_search_index_is_built_stops_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(monkeypatch)
    app = TreeApp(_long_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await gate.held_tree(pilot)
        model = screen.model  # (the screen lets go of it as it goes)
        worker = _index_worker(app)
        await pilot.press("escape")
        await pilot.pause()
        assert app.results == [None], "Esc left the screen while its index was held"
        assert worker.is_cancelled
        gate.released.set()
        assert await asyncio.to_thread(gate.ended.wait, 30), "the pass never ended"
        assert gate.built <= SEARCH_STOP_EVERY + 1, f"the pass went on after Esc: {gate.built} of {ENTRIES}"
        assert not model.search_ready, "a stopped pass keeps nothing half made"


async def test_a_word_typed_before_the_search_index_waits_for_it_off_the_ui_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = Gate(monkeypatch)
    app = TreeApp(_long_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await gate.held_tree(pilot)
        model = screen.model
        unfiltered = list(model.rows.ids)
        await pilot.press(*"approach b")
        assert model.query == "approach b"
        assert model.rows.ids == unfiltered, "the rows wait for the index"
        assert "search: approach b (indexing…)" in status(app)
        assert threading.get_ident() not in gate.threads, "the UI thread built search texts"
        gate.released.set()
        await settle(pilot)
        assert model.search_ready
        assert model.rows.ids == ["uB", "bB", "aB"], "the query filters once the index is here"
        assert "indexing" not in status(app)
        assert threading.get_ident() not in gate.threads
        assert gate.built <= len(model.order), "each entry's text was built once"


def test_path_totals_stop_when_asked_and_keep_a_valid_prefix(tmp_path: Path) -> None:
    """A stopped fill raises `Stopped` after at most `STOP_EVERY` more entries; the entries
    it filled stay right, and the next ask goes on from them to the same totals."""
    path = _messages_session(tmp_path / "m.jsonl", 2_000)
    session = read_session(path, digest=False)
    assert isinstance(session, Session)
    leaf = session.tree.leaf_id
    assert leaf is not None
    asks = 0

    def stop() -> bool:
        nonlocal asks
        asks += 1
        return asks > 2

    totals = PathTotals.of(session.tree)
    with pytest.raises(Stopped):
        totals.at(leaf, stop)
    assert asks == 3
    done = sum(totals._done)
    assert 0 < done <= 2 * STOP_EVERY, "the fill ended at the third ask"
    stopped_chars = totals.at(leaf)
    fresh = read_session(path, digest=False)
    assert isinstance(fresh, Session)
    assert stopped_chars == PathTotals.of(fresh.tree).at(leaf), "a stopped fill left the same sums behind"
    session.close()
    fresh.close()


def test_the_search_index_of_a_chain_fills_the_path_totals_on_its_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index pass decodes every entry of a chain in file order: it fills the preview's
    running totals as it goes (`PathTotals.chain_feed`), so the first preview at the leaf
    reads no message back — it was a second decoding of every message of the session."""
    path = _messages_session(tmp_path / "m.jsonl", 300)
    session = _by_offset(path)
    assert isinstance(session, Session) and session.tree.is_chain
    model = TreeModel(session.tree)
    assert model.prepare_search()
    reads = 0
    read = LineSource.read

    def counted(source: LineSource, offset: int, length: int) -> Any:
        nonlocal reads
        reads += 1
        return read(source, offset, length)

    monkeypatch.setattr(LineSource, "read", counted)
    totals = PathTotals.of(session.tree)
    leaf = session.tree.leaf_id
    assert leaf is not None
    chars, _cost = totals.at(leaf)
    assert reads == 0, "the totals read the path back"
    monkeypatch.undo()
    fresh = read_session(path, digest=False)
    assert isinstance(fresh, Session)
    fresh_totals = PathTotals.of(fresh.tree)
    for entry_id in session.tree.entries.ids[::7]:
        assert totals.at(entry_id) == fresh_totals.at(entry_id)
    assert totals.call_ids == fresh_totals.call_ids
    assert chars > 300 * 40
    session.close()
    fresh.close()


def test_a_stopped_search_index_leaves_totals_the_preview_goes_on_from(tmp_path: Path) -> None:
    path = _messages_session(tmp_path / "m.jsonl", 1_000)
    session = _by_offset(path)
    assert isinstance(session, Session)
    model = TreeModel(session.tree)
    asks = 0

    def stop() -> bool:
        nonlocal asks
        asks += 1
        return asks > 1

    assert not model.prepare_search(stop)
    totals = PathTotals.of(session.tree)
    assert 0 < sum(totals._done) < len(session.entries)
    fresh = read_session(path, digest=False)
    assert isinstance(fresh, Session)
    leaf = session.tree.leaf_id
    assert totals.at(leaf) == PathTotals.of(fresh.tree).at(leaf)
    assert totals.call_ids == PathTotals.of(fresh.tree).call_ids
    session.close()
    fresh.close()


def test_a_chain_of_few_messages_keeps_its_own_quick_totals(tmp_path: Path) -> None:
    """On a session of mostly other entries (the issue's shape) the totals' own pass decodes
    only the few messages: the index does not feed them, so the first preview does not wait
    for the index's pass over every entry."""
    path = _long_session(tmp_path)  # (the header and its 20,000 custom entries alone: a chain, no message)
    chain = tmp_path / "chain.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    chain.write_bytes(b"".join([lines[0], *lines[-ENTRIES:]]).replace(b'"parentId":"aA2"', b'"parentId":null'))
    session = _by_offset(chain)
    assert isinstance(session, Session) and session.tree.is_chain
    model = TreeModel(session.tree)
    assert model.prepare_search()
    assert sum(PathTotals.of(session.tree)._done) == 0
    session.close()


async def test_a_search_index_that_fails_in_its_worker_leaves_the_words_looked_up_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's pass raising (a bug, a file no one foresaw) must not leave a typed word
    waiting for an index that never comes ("indexing…" for good): it is looked up as before
    the worker built it."""
    build = TreeModel._build_search_text
    calls = 0

    def failing_once(model: TreeModel, entry_id: str, entry: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        if calls == 50:
            raise ValueError("an entry no one foresaw")
        return build(model, entry_id, entry)

    async def settle_past_the_failure(pilot: Any) -> None:
        """`settle`, the failing worker's error taken as the test's own (a loaded machine may
        start the index, and fail it, while the first rows settle)."""
        for _ in range(3):
            try:
                return await settle(pilot)
            except WorkerFailed as error:
                assert "no one foresaw" in str(error)

    monkeypatch.setattr(TreeModel, "_build_search_text", failing_once)
    app = TreeApp(_long_session(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle_past_the_failure(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.model is not None
        await pilot.press(*"approach b")
        await settle_past_the_failure(pilot)
        assert not screen.model.search_pending
        assert screen.model.rows.ids == ["uB", "bB", "aB"]
        assert "indexing" not in status(app)


async def test_in_a_terminal_too_small_for_a_row_the_first_word_starts_the_index(
    tmp_path: Path,
) -> None:
    """The index starts once the first rows are drawn; with no row to draw (a terminal a few
    lines high) the first typed word starts it, and the word filters once it is built."""
    app = TreeApp(_long_session(tmp_path))
    async with app.run_test(size=(80, 4)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.model is not None
        await pilot.press(*"approach b")
        for _ in range(200):
            if screen.model.search_ready:
                break
            await pilot.pause(0.02)
        await settle(pilot)
        assert screen.model.rows.ids == ["uB", "bB", "aB"]


def test_a_preview_waiting_for_totals_another_thread_fills_stops_when_cancelled(tmp_path: Path) -> None:
    """The index pass fills the totals as it goes (holding them); a preview cancelled while it
    waits for them stops then, rather than wait the pass out and make its preview for nothing."""
    path = _messages_session(tmp_path / "m.jsonl", 300)
    session = read_session(path, digest=False)
    assert isinstance(session, Session)
    leaf = session.tree.leaf_id
    assert leaf is not None
    totals = PathTotals.of(session.tree)
    cancelled = threading.Event()
    outcome: list[str] = []

    def preview() -> None:
        try:
            totals.at(leaf, cancelled.is_set)
            outcome.append("filled")
        except Stopped:
            outcome.append("stopped")

    with totals._lock:  # (as `chain_feed` holds it for its whole pass)
        waiter = threading.Thread(target=preview)
        waiter.start()
        cancelled.set()
        waiter.join(5)
        assert not waiter.is_alive(), "the cancelled preview waited for the totals"
    assert outcome == ["stopped"]
    assert totals.at(leaf)[0] > 0
    session.close()


async def test_rows_drawn_while_the_index_is_built_never_read_far_back_for_their_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Home from the leaf of a long session of tool calls while the search index is held: the
    top rows' tool results (their calls thousands of assistant messages back from the end)
    are drawn by their tool's name, without that read on the UI thread (it was every
    assistant message of the session, ~1 s at 200,000 messages); once the pass is done they
    are drawn again with their calls, where they were."""
    gate = Gate(monkeypatch)
    path = _messages_session(tmp_path / "m.jsonl", 3_000)
    app = TreeApp(path, session=_by_offset(path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await gate.held_tree(pilot)
        model = screen.model
        calls = model.tool_calls
        assert isinstance(calls, ToolCallsFromEnd)
        tree_view = screen.query_one(TreeView)
        await pilot.press("home")
        await pilot.pause()
        top = [tree_view.render_line(y).text for y in range(8)]
        assert any("[bash]" in line for line in top), top
        assert not any("[bash: ls" in line for line in top), top
        assert calls._left > 3_000 - CALLS_READ_BACK - 100, "the calls were read back on the UI thread"
        scroll = tree_view.scroll_offset.y
        gate.released.set()
        for _ in range(400):
            await pilot.pause(0.02)
            if not model.calls_coming:
                break
        await pilot.pause()
        top = [tree_view.render_line(y).text for y in range(8)]
        assert any("[bash: ls 0]" in line for line in top), top
        assert not any("[bash]" in line for line in top), top
        assert tree_view.scroll_offset.y == scroll and model.cursor == 0
