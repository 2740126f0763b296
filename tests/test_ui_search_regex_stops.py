"""A slow `re:` in the picker: the UI thread stays free while it runs (keys are drawn, Esc
clears), and once its budget is spent the status line says why and the rows stay.  With
Python's `re` the same search held the GIL for a minute.  Real files, real index, Pilot."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from test_ui_preview_match import message, text, write
from ui_harness import picker_app, screen_of, settle, wait_until

from seance.core.search import userregex

SLOW = r"re:\w*\w*\w*x"  # `re`: ~2.4 s for each title below; `regex`: ~0.07 s each, off the GIL
LONG = "a" * 290 + " x"


async def _worst_stall(seconds: float) -> float:
    """The longest the event loop was late for a 10 ms sleep, over `seconds`."""
    worst, end = 0.0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter()
        await asyncio.sleep(0.01)
        worst = max(worst, time.perf_counter() - start - 0.01)
    return worst


async def test_a_slow_regex_leaves_the_ui_free_and_stops_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(userregex, "QUERY_BUDGET", 0.25)
    folder = tmp_path / "sessions" / "--work-demo-match--"
    for number in range(12):
        write(folder / f"s{number:02}.jsonl", message("user", text(LONG)))
    write(folder / "fix.jsonl", message("user", text("fix the sqlite index")))
    async with picker_app(tmp_path / "sessions", scope="all", cache_dir=tmp_path / "cache").run_test(
        size=(160, 45)
    ) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        shown = len(screen.session_list.rows)
        assert shown == 13
        screen.search_input.focus()
        started = time.perf_counter()
        await pilot.press(*SLOW)
        assert screen.search_input.value == SLOW
        assert await _worst_stall(0.5) < 0.5, "the event loop stalled"
        await pilot.press("space")  # a key while it runs: drawn at once (the same term: slow again)
        assert screen.search_input.value == SLOW + " "
        assert time.perf_counter() - started < 3, "the keys waited for the search"
        await wait_until(pilot, lambda: "s of matching: stopped" in screen.status.message, pause=0.05, tries=200)
        assert screen.status.message.startswith("invalid query: re:") and "took over 0.3 s" in screen.status.message
        assert len(screen.session_list.rows) == shown, "the rows stay (`re:\\w*\\w*\\w*`'s: every session)"
        pressed = time.perf_counter()
        await pilot.press("escape")
        assert screen.search_input.value == ""
        assert time.perf_counter() - pressed < 3
        await settle(pilot)
        assert len(screen.session_list.rows) == shown
        assert "took over" not in screen.status.message
