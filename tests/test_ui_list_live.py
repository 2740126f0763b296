"""Live updates: the watcher adds, updates and removes rows while the cursor keeps its session."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import PROJECT, Spec, make_root, session_path, write_session

from seance.app.screens.session_list import PickerOptions


async def wait_until(pilot: Pilot, condition, timeout: float = 8.0) -> bool:
    """Poll `condition` while the app runs (the watcher debounces ~200 ms)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if condition():
            return True
        await pilot.pause(0.1)
    return condition()


async def test_new_changed_and_deleted_sessions_update_in_place(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)  # the watcher is set up
        screen = screen_of(pilot)
        widget = screen.session_list
        await pilot.press("down", "down")
        chosen = widget.highlighted.path
        screen_y = widget.cursor - widget.scroll_offset.y

        write_session(root, Spec("s-brand-new", PROJECT, ("a session written just now",), timedelta(seconds=5)))
        assert await wait_until(pilot, lambda: any(row.summary.id == "s-brand-new" for row in widget.rows))
        await settle(pilot)
        assert widget.rows[0].summary.id == "s-brand-new", "newest first"
        assert widget.highlighted.path == chosen, "the cursor stays on the same session"
        assert widget.cursor - widget.scroll_offset.y == screen_y + 1, "everything fits: the rows shift by one"
        assert "new" not in screen.status.render().plain, "the list is at its top: the new row is in view"

        docs = session_path(root, Spec("s-docs", PROJECT))
        write_session(
            root, Spec("s-docs", PROJECT, ("update the README", "one more", "and another"), timedelta(days=2))
        )
        assert await wait_until(
            pilot, lambda: next(row for row in widget.rows if row.path == str(docs)).summary.message_count == 6
        )
        assert widget.highlighted.path == chosen

        session_path(root, Spec("s-old", PROJECT)).unlink()
        assert await wait_until(pilot, lambda: all(row.summary.id != "s-old" for row in widget.rows))
        assert widget.highlighted.path == chosen


async def test_rows_arriving_above_do_not_move_the_viewport(tmp_path: Path) -> None:
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt number {number:02d}",), timedelta(hours=number + 1))
        for number in range(60)
    ]
    root = make_root(tmp_path, specs)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list
        await pilot.press("pagedown", "pagedown", "down")
        chosen = widget.highlighted.path
        top_line = widget.scroll_offset.y
        first_visible = widget.rows[top_line].path
        screen_y = widget.cursor - top_line
        assert top_line > 0
        for number in range(3):
            write_session(root, Spec(f"new{number}", PROJECT, ("fresh",), timedelta(seconds=number + 1)))
        assert await wait_until(pilot, lambda: len(widget.rows) == 63)
        await settle(pilot)
        assert widget.highlighted.path == chosen
        assert widget.cursor - widget.scroll_offset.y == screen_y
        assert widget.rows[widget.scroll_offset.y].path == first_visible, "the same rows are on screen"
        assert "3 new" in screen_of(pilot).status.render().plain
        await pilot.press("home")
        assert "new" not in screen_of(pilot).status.render().plain


async def test_rows_scrolled_to_with_the_wheel_stay_in_view_when_a_session_changes(tmp_path: Path) -> None:
    """The wheel scrolls the list, not the cursor: a live change (an agent writing another
    session) kept the cursor and scrolled it back into view, so the rows the user had
    scrolled to jumped away every time an agent wrote."""
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt {number:02d}",), timedelta(hours=number + 1)) for number in range(60)
    ]
    root = make_root(tmp_path, specs)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list
        for _ in range(12):
            await pilot._post_mouse_events([events.MouseScrollDown], widget, offset=(5, 3))
        await settle(pilot)
        top_line = widget.scroll_offset.y
        first_visible = widget.rows[top_line].path
        assert top_line >= 10 and widget.cursor == 0, "the cursor (on the first row) is out of view"
        write_session(root, Spec("s40", PROJECT, ("prompt 40", "one more"), timedelta(hours=41)))
        write_session(root, Spec("new", PROJECT, ("fresh",), timedelta(seconds=5)))
        assert await wait_until(
            pilot, lambda: len(widget.rows) == 61 and any(row.summary.message_count == 4 for row in widget.rows)
        )
        await settle(pilot)
        assert widget.highlighted.summary.id == "s00", "the cursor keeps its session"
        assert widget.rows[widget.scroll_offset.y].path == first_visible, "the rows read stay on screen"
        await pilot.press("down")
        assert widget.highlighted.summary.id == "s01"
        assert 0 <= widget.cursor - widget.scroll_offset.y < widget.size.height, "a key brings the cursor back"


async def test_rows_scrolled_to_stay_when_the_session_on_the_top_line_is_written_or_removed(tmp_path: Path) -> None:
    """The view kept across a live change followed the one session on its top line: an agent
    writing that session moved it to the list's top, and the view went with it, to the top,
    away from every row the user had scrolled to read.  The view keeps most of its rows."""
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt {number:02d}",), timedelta(hours=number + 1)) for number in range(60)
    ]
    root = make_root(tmp_path, specs)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list

        def shown() -> list[str]:
            top = widget.scroll_offset.y
            lines = range(top, min(top + widget.size.height, len(widget.rows)))
            return [widget.rows[line].summary.id for line in lines]

        for _ in range(12):
            await pilot._post_mouse_events([events.MouseScrollDown], widget, offset=(5, 3))
        await settle(pilot)
        before = shown()
        assert widget.scroll_offset.y >= 10 and widget.cursor == 0
        number = int(before[0][1:])
        write_session(root, Spec(before[0], PROJECT, (f"prompt {number:02d}", "one more"), timedelta(seconds=5)))
        assert await wait_until(pilot, lambda: widget.rows[0].summary.id == before[0])
        await settle(pilot)
        assert shown()[1:] == before[1:], "the rows read stay on their lines; the written one went to the top"
        shown_before = shown()
        session_path(root, Spec(before[5], PROJECT)).unlink()
        assert await wait_until(pilot, lambda: len(widget.rows) == 59)
        await settle(pilot)
        assert shown()[:5] == shown_before[:5] and shown()[5:-1] == shown_before[6:], "the rows after it close up"


async def test_a_row_arriving_while_the_list_is_at_its_top_is_in_view(tmp_path: Path) -> None:
    """The list at its top with the cursor on the first row: a new session appears above the
    cursor, on screen (it used to be slipped in above the viewport, seen only after Home)."""
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt {number:02d}",), timedelta(hours=number + 1)) for number in range(60)
    ]
    root = make_root(tmp_path, specs)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list
        chosen = widget.highlighted.path
        for number in range(2):
            write_session(root, Spec(f"new{number}", PROJECT, ("fresh",), timedelta(seconds=5 - number)))
            assert await wait_until(pilot, lambda n=number: len(widget.rows) == 61 + n)
            await settle(pilot)
            assert widget.scroll_offset.y == 0 and widget.rows[0].summary.id == f"new{number}"
            assert widget.highlighted.path == chosen, "the cursor stays on its session"
        assert "new" not in screen_of(pilot).status.render().plain


async def test_live_rows_respect_the_query(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = picker_app(root, query="zebra", options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list
        assert [row.summary.id for row in widget.rows] == ["s-docs"]
        write_session(root, Spec("s-unrelated", PROJECT, ("nothing to see",), timedelta(seconds=5)))
        write_session(root, Spec("s-zebra", PROJECT, ("zebra stripes everywhere",), timedelta(seconds=5)))
        assert await wait_until(pilot, lambda: len(widget.rows) == 2)
        await settle(pilot)
        assert {row.summary.id for row in widget.rows} == {"s-docs", "s-zebra"}


@pytest.mark.slow
async def test_2000_files_come_and_go_the_bookkeeping_stays_bounded_and_counts_new_sessions(tmp_path: Path) -> None:
    """Finding 13a: `_known` kept every path ever seen and "↑ N new" counted events (120,305 new
    with 1,003 sessions present).  20 rounds of 100 distinct new sessions, each seen then deleted,
    while 50 stay: the screen's sets track the files present and the counter the new ones present."""
    specs = [Spec(f"stay{number:02d}", PROJECT, ("stays",), timedelta(hours=number + 1)) for number in range(50)]
    root = make_root(tmp_path, specs)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        screen = screen_of(pilot)
        widget = screen.session_list
        await pilot.press("pagedown", "pagedown")  # scrolled away from the top: arrivals above count as new
        assert widget.scroll_offset.y > 0
        present = len(widget.rows)
        for round_number in range(20):
            batch = [
                write_session(root, Spec(f"r{round_number:02d}n{number:03d}", PROJECT, ("fleeting",), timedelta(0)))
                for number in range(100)
            ]
            assert await wait_until(pilot, lambda: len(widget.rows) == present + 100, timeout=30)
            assert screen.status.new_count == 100, "the counter is the new sessions present"
            assert len(screen.model.known) <= present + 100 + 10
            for path in batch:
                path.unlink()
            assert await wait_until(pilot, lambda: len(widget.rows) == present, timeout=30)
            assert screen.status.new_count == 0
            assert not screen.model.new and len(screen.model.known) <= present + 10, "forgotten once gone"
        assert all(len(summaries) <= present for summaries in screen.model.summaries.values())


async def test_the_watcher_ends_when_the_picker_is_popped(tmp_path: Path) -> None:
    """No thread or OS watch outlives the screen: a host pushes the picker, it is dismissed,
    and by then the watcher's loop has closed its watch and its thread has been joined."""
    from textual.app import App
    from ui_sessions import clock

    from seance.app.screens.session_list import SessionPickerScreen
    from seance.core.catalog import Catalog

    root = make_root(tmp_path)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    picker = SessionPickerScreen(catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=True))
    results: list = []
    app = App()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(picker, results.append)
        assert await wait_until(pilot, lambda: picker.watching)
        watcher = picker.watcher
        assert watcher is not None and watcher.running and watcher.alive
        assert watcher.thread in threading.enumerate()
        await pilot.press("escape")
        assert await wait_until(pilot, lambda: results == [None])
        assert not picker.is_attached
        assert not watcher.alive and not watcher.running, "the pop joined the watcher's thread"
        assert watcher.thread not in threading.enumerate()
    catalog.close()


@pytest.mark.parametrize("where", ["out-of-the-root", "inside-the-root"])
async def test_a_folder_of_sessions_moved_away_takes_its_rows_with_it(tmp_path: Path, where: str) -> None:
    """A watch is per folder: a project folder moved out of the root (a file manager's Trash)
    or renamed inside it sent no event for its files, and their rows stayed, pointing nowhere
    (renamed inside: listed twice).  Enter on one resumed a file that was gone (the sweep)."""
    from ui_sessions import OTHER

    root = make_root(tmp_path)
    app = picker_app(root, scope="all", options=PickerOptions(watch=True), cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        widget = screen_of(pilot).session_list
        before = sorted(row.summary.id for row in widget.rows)
        folder = session_path(root, Spec("s-other1", OTHER)).parent
        moved = tmp_path / "elsewhere" if where == "out-of-the-root" else root / "--renamed--"
        folder.rename(moved)
        gone = {"s-other1", "s-other2", "s-inject"}  # (the folder's sessions)
        expected = sorted(set(before) - gone) if where == "out-of-the-root" else before

        def settled() -> bool:
            rows = widget.rows
            return sorted(row.summary.id for row in rows) == expected and all(Path(row.path).exists() for row in rows)

        assert await wait_until(pilot, settled), sorted(row.path for row in widget.rows)


async def test_enter_on_a_session_whose_file_is_gone_says_so_and_resumes_nothing(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = picker_app(root)  # (no watcher: nothing says the file went)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        target = Path(screen.session_list.highlighted.path)
        target.unlink()
        await pilot.press("enter")
        await settle(pilot)
        assert app.return_value is None and "gone" in screen.status.message
        assert all(row.path != str(target) for row in screen.session_list.rows)


@pytest.mark.parametrize("typed", [False, True], ids=["initial-query", "typed-after-no-query"])
async def test_the_plain_listing_under_an_invalid_query_follows_live_changes(tmp_path: Path, typed: bool) -> None:
    """An invalid query with no earlier results lists the sessions, the status says why; but
    those rows were never made again: a new session did not appear, a deleted one stayed."""
    root = make_root(tmp_path)
    app = picker_app(root, query="" if typed else "re:(", options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert await wait_until(pilot, lambda: screen_of(pilot).watching)
        screen = screen_of(pilot)
        widget = screen.session_list
        if typed:  # (at once: "re:" alone is a valid query, whose rows would stay)
            screen.search_input.value = "re:("
            await settle(pilot)
        assert "invalid query" in screen.status.message
        before = {row.summary.id for row in widget.rows}
        assert "s-old" in before and len(before) >= 3
        write_session(root, Spec("s-brand-new", PROJECT, ("a session written just now",), timedelta(seconds=5)))
        session_path(root, Spec("s-old", PROJECT)).unlink()
        want = before - {"s-old"} | {"s-brand-new"}
        assert await wait_until(pilot, lambda: {row.summary.id for row in widget.rows} == want)
        await settle(pilot)
        assert {row.summary.id for row in widget.rows} == want
        assert "invalid query" in screen.status.message and screen.search_input.value == "re:("
