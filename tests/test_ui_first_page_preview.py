"""Under a first page the preview waits for the list to settle (app/screens/search_flow.py,
`_preview_waits`): the first page's top session is read and drawn once the search's count
is shown, not while the index hits are merged (at 100,000 sessions its read and two frames
landed in the middle of that merge, ~100 ms before the count, on two cores)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_ui_first_page import Gate, specs, wait_for
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import make_root


async def _off_the_top_with_previews_recorded(pilot: Any) -> tuple[Any, list[Path | None]]:
    """The settled picker with a first page for any search, its cursor moved off the top (so
    the first page's top is another session than the one previewed), and the list every
    later preview's session is appended to."""
    await settle(pilot)
    screen = screen_of(pilot)
    screen.first_page_sessions = 1
    preview = screen._preview()
    assert preview is not None and screen._preview_visible()
    shown: list[Path | None] = []
    original = preview.show

    def recorded(path: Path | None, *args: Any, **kwargs: Any) -> None:
        shown.append(path)
        original(path, *args, **kwargs)

    preview.show = recorded
    await pilot.press("down", "down")
    await settle(pilot)
    shown.clear()
    return screen, shown


async def _first_page_held(pilot: Any, screen: Any) -> Gate:
    """Search "deploy" with its index query held (`Gate`) until its first page is on screen:
    the count, and the preview it releases, wait for `gate.open()`."""
    gate = Gate(screen)
    screen.search_input.value = "deploy"
    await wait_for(pilot, lambda: gate.entered.is_set() and screen.model.query == "deploy")
    await wait_for(pilot, lambda: screen._first_page_generation == screen._rows_generation)
    return gate


async def test_the_first_pages_preview_waits_for_its_count_then_shows_the_highlighted_session(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        screen, shown = await _off_the_top_with_previews_recorded(pilot)
        before = screen.session_list.highlighted
        gate = await _first_page_held(pilot, screen)
        await pilot.pause(0.3)  # (more than the preview's debounce)
        top = screen.session_list.highlighted
        assert top is not None and before is not None and top.path != before.path  # (the first page moved it)
        assert shown == []  # the first page is on screen: its preview waits
        await pilot.press("down")  # the cursor moves meanwhile: still waiting
        await pilot.pause(0.05)
        assert shown == []
        gate.open()
        await settle(pilot)
        moved = screen.session_list.highlighted
        assert moved is not None and moved.path != top.path
        assert shown and shown[-1] == Path(moved.path)  # the count came: the highlighted row's session
        assert screen._preview_held is None
        await pilot.press("down")  # settled: the preview follows the cursor again at once
        await pilot.pause(0.05)
        after = screen.session_list.highlighted
        assert after is not None and shown[-1] == Path(after.path)


async def test_a_first_pages_preview_is_shown_when_the_query_turns_invalid_before_its_count(tmp_path: Path) -> None:
    """The first page's rows stay under an invalid query (no search, so no count comes for
    them): the preview they held back shows the highlighted session, not a blank pane."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        screen, shown = await _off_the_top_with_previews_recorded(pilot)
        before = screen.session_list.highlighted
        gate = await _first_page_held(pilot, screen)
        await pilot.pause(0.3)
        shown.clear()
        screen.search_input.value = "deploy re:("
        await wait_for(pilot, lambda: "invalid query" in screen.status.message)
        await pilot.pause(0.3)  # (more than the preview's debounce)
        top = screen.session_list.highlighted
        assert top is not None and before is not None and top.path != before.path  # (the first page moved it)
        assert shown and shown[-1] == Path(top.path)
        assert screen._preview_held is None
        gate.open()
        await settle(pilot)


async def test_a_search_failing_under_its_first_page_says_so_and_shows_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search that raises after its first page (a bug, a cache gone underneath) says so on
    the status line, as text, and lets the held preview show the highlighted session: the
    first page's rows stay, and no count will come for them."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        screen, shown = await _off_the_top_with_previews_recorded(pilot)

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("ranking [bold]broke[/bold]\x1b[2J")

        monkeypatch.setattr("seance.app.screens.search_flow.search_iter", broken)
        gate = await _first_page_held(pilot, screen)
        paths = [row.path for row in screen.session_list.rows]
        gate.open()
        await wait_for(pilot, lambda: "search failed" in screen.status.message)
        await pilot.pause(0.3)  # (more than the preview's debounce)
        assert "[bold]broke[/bold]" in screen.status.message and "\x1b" not in screen.status.message
        assert [row.path for row in screen.session_list.rows] == paths  # the first page's rows stay
        top = screen.session_list.highlighted
        assert top is not None and shown and shown[-1] == Path(top.path)
        assert screen._preview_held is None
