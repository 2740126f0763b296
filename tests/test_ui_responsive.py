"""The UI thread never waits (issue 14): structure, not timing.

On a real corpus above the picker's inline limit (`row_flow.ROWS_INLINE_MAX`), typing, Tab,
Ctrl+S, Alt+C, Esc and a live merge must not order or thread every session on the event
loop: every call of the row makers (`plain_rows`, `hit_rows`) and of the fork-tree builder
(`listing.parents`) over the whole listing has to happen in a worker thread.  The list widget
must make only the rows it draws (`RowSet.materialised`).  Spies record where each call ran;
nothing is stubbed (a real catalog, real files, real Textual).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import NOW, OTHER, PROJECT, Spec, write_session

from seance.app import picker_model
from seance.app.messages import SessionsChanged
from seance.app.rows import RowSet, SessionRow, hit_rows, plain_rows
from seance.app.screens.row_flow import ROWS_INLINE_MAX, RowsReady
from seance.core import listing
from seance.core.catalog import Catalog
from seance.core.model import SessionSummary

IN_PROJECT = ROWS_INLINE_MAX + 300  # above the inline limit in either scope
ELSEWHERE = 200


@pytest.fixture(scope="module")
def big_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,500 real sessions: most in the project, forks among them, words to search for."""
    root = tmp_path_factory.mktemp("responsive") / "sessions"
    words = ("sqlite cursor", "deadline tests", "refactor parser", "zebra crossing")
    for number in range(IN_PROJECT + ELSEWHERE):
        cwd = PROJECT if number < IN_PROJECT else OTHER
        parent = f"s{number - 1:05d}" if number % 50 == 1 else None  # a fork every 50 sessions
        prompt = f"{words[number % len(words)]} number {number}"
        spec = Spec(f"s{number:05d}", cwd, (prompt,), timedelta(minutes=number), parent=parent, replies=False)
        write_session(root, spec)
    return root


class Spy:
    """Where the whole-listing row work ran: (on the UI thread?, how many items) per call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, bool, int]] = []
        self._wrap(monkeypatch, picker_model, "plain_rows", plain_rows)
        self._wrap(monkeypatch, picker_model, "hit_rows", hit_rows)
        self._wrap(monkeypatch, listing, "parents", listing.parents)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, module: Any, name: str, real: Callable[..., Any]) -> None:
        def spied(items: Any, *args: Any, **kwargs: Any) -> Any:
            on_ui = threading.current_thread() is threading.main_thread()
            self.calls.append((name, on_ui, len(items)))
            return real(items, *args, **kwargs)

        monkeypatch.setattr(module, name, spied)

    def on_ui_thread(self) -> list[tuple[str, bool, int]]:
        """The calls over more sessions than the inline limit that ran on the event loop."""
        return [call for call in self.calls if call[1] and call[2] > ROWS_INLINE_MAX]

    def off_ui_thread(self) -> list[tuple[str, bool, int]]:
        """The calls made by a worker, of any size (the fork tree of a list seen before is
        remembered, so a sorted search may make only its hits' rows)."""
        return [call for call in self.calls if not call[1]]


def drawn_bound(pilot: Pilot) -> int:
    """The rows a screenful shows, the cursor's, and a page either way (Page Up/Down)."""
    return 3 * screen_of(pilot).session_list.size.height + 2


async def test_typing_tab_sort_children_and_escape_make_no_rows_on_the_ui_thread(
    big_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = Spy(monkeypatch)
    app = picker_app(big_root, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert len(screen.session_list.rows) == IN_PROJECT
        assert spy.off_ui_thread(), "the listing's rows were made by a worker"
        for step, keys in (
            ("type a query", ["z", "e", "b"]),
            ("sort", ["ctrl+s"]),
            ("children", ["alt+c"]),
            ("clear the query", ["escape"]),
            ("switch scope", ["tab"]),
            ("sort without a query", ["ctrl+s"]),
            ("children without a query", ["alt+c"]),
            ("children back to threaded", ["alt+c"]),
            ("switch back", ["tab"]),
        ):
            spy.calls.clear()
            await pilot.press(*keys)
            await settle(pilot)
            assert spy.on_ui_thread() == [], f"{step}: whole-listing row work ran on the UI thread"
            assert spy.off_ui_thread(), f"{step}: the rows were made (by a worker)"
        assert screen.search_input.value == ""
        assert len(screen.session_list.rows) == IN_PROJECT


async def test_a_live_merge_on_a_long_list_orders_nothing_on_the_ui_thread_and_counts_new_rows(
    big_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watcher event (SessionsChanged) while the user is scrolled away: merged, its rows made
    by a worker, and the new session counted in "↑ N new" (the arrival is above the viewport)."""
    spy = Spy(monkeypatch)
    cache = tmp_path / "cache"
    app = picker_app(big_root, cache_dir=cache)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        await pilot.press("pagedown", "pagedown", "pagedown")
        await settle(pilot)
        assert screen.session_list.scroll_offset.y > 0
        newcomer = tmp_path / "live" / "sessions"
        path = write_session(newcomer, Spec("s-live", PROJECT, ("arrived while open",), timedelta(0)))
        summary = Catalog([newcomer], cache_dir=tmp_path / "other-cache").summary(path)
        assert summary is not None
        spy.calls.clear()
        screen.post_message(SessionsChanged([summary]))
        await settle(pilot)
        assert spy.on_ui_thread() == []
        assert screen.session_list.index_of(str(path)) is not None, "the new session is listed"
        assert screen.status.new_count == 1, "↑ 1 new: it arrived above the viewport"
        assert screen.session_list.highlighted is not None
        assert screen.session_list.highlighted.summary.id != "s-live", "the cursor stayed where it was"


async def test_the_list_makes_only_the_rows_it_draws(big_root: Path, tmp_path: Path) -> None:
    app = picker_app(big_root, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        assert isinstance(widget.rows, RowSet)
        assert len(widget.rows) == IN_PROJECT
        assert 0 < widget.rows.materialised <= drawn_bound(pilot)
        await pilot.press("pagedown", "pagedown")
        await settle(pilot)
        assert widget.rows.materialised <= 2 * drawn_bound(pilot), "paging makes the pages seen, no more"
        await pilot.press("z", "e", "b", "r", "a")  # full-text hits: two lines each
        await settle(pilot)
        assert len(widget.rows) > 0
        assert widget.rows.materialised <= drawn_bound(pilot)
        await pilot.press("end")
        await settle(pilot)
        assert widget.rows.materialised <= 2 * drawn_bound(pilot), "End makes the last page, not the ones between"


async def test_rows_made_for_an_older_request_are_dropped(big_root: Path, tmp_path: Path) -> None:
    """A worker's rows that arrive after the state moved on (a newer request) are not shown."""
    app = picker_app(big_root, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        shown = screen.session_list.rows
        stale = RowSet.of([SessionRow(shown[0].summary)])
        screen.post_message(RowsReady(stale, screen._rows_generation - 1, top=True))
        await settle(pilot)
        assert screen.session_list.rows is shown
        screen.post_message(RowsReady(stale, screen._rows_generation, top=True))
        await settle(pilot)
        assert screen.session_list.rows is stale, "the current request's rows are shown"


def summaries(count: int) -> list[SessionSummary]:
    moment = int(NOW.timestamp() * 1000)
    return [
        SessionSummary(
            path=f"/sessions/--p--/s{number}.jsonl",
            id=f"s{number}",
            cwd=PROJECT,
            name=None,
            parent_session=None,
            created=None,
            modified=NOW.isoformat(),
            modified_ms=moment - number,
            message_count=1,
            first_message=f"session {number}",
        )
        for number in range(count)
    ]


def test_a_row_set_makes_rows_on_demand_and_knows_every_line_and_path() -> None:
    listed = summaries(10)
    rows = plain_rows(listed, "recent")
    assert rows.materialised == 0 and len(rows) == 10 and rows.total == 10
    assert rows.index_of[listed[3].path] == 3 and rows.line_count == 10 and rows.line_starts == []
    assert rows[3].summary is listed[3] and rows[3] is rows[3] and rows.materialised == 1
    assert rows[-1].summary is listed[9]
    assert [row.summary for row in rows] == listed and rows.materialised == 2, "iterating keeps nothing"
    assert rows.summaries() == listed
    assert RowSet.of(rows) is rows


async def test_tab_finds_the_other_scope_rows_made_ahead(
    big_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once both scopes are listed, a worker makes the other scope's rows, so the first Tab
    only swaps them in (it was 0.1 s at 10,000 sessions, 0.7 s at 100,000, after each launch)."""
    spy = Spy(monkeypatch)
    everything = IN_PROJECT + ELSEWHERE
    app = picker_app(big_root, cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for _ in range(100):  # the rows ahead start a moment after the exact listing
            if any(call == ("plain_rows", False, everything) for call in spy.calls):
                break
            await pilot.pause(0.05)
        await settle(pilot)
        assert ("plain_rows", False, everything) in spy.calls, "the other scope's rows were made ahead, by a worker"
        spy.calls.clear()
        await pilot.press("tab")
        await settle(pilot)
        assert len(screen_of(pilot).session_list.rows) == everything
        assert [call for call in spy.calls if call[0] == "plain_rows"] == [], "Tab made no rows"
