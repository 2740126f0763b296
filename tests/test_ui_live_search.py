"""Live recall: a session created or appended while the picker is open is indexed as it
changes (the watcher's `Catalog.summary` reads its full text) and is found by a word that is
only in the index (not in its title) within 2 s of the write."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path

from textual.pilot import Pilot
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import PROJECT, Spec, make_root, session_path, write_session

from seance.app.screens.session_list import PickerOptions

LIVE_SECONDS = 2.0


async def found_within(pilot: Pilot, session_id: str, started: float, seconds: float = LIVE_SECONDS) -> float:
    """Seconds from `started` (a `perf_counter`) until the list shows `session_id`; fails after `seconds`."""
    widget = screen_of(pilot).session_list
    while time.perf_counter() - started < seconds:
        if [row.summary.id for row in widget.rows] == [session_id]:
            return time.perf_counter() - started
        await pilot.pause(0.05)
    rows = [row.summary.id for row in widget.rows]
    raise AssertionError(f"{session_id} not the only row {seconds} s after the write: {rows}")


async def clear_query(pilot: Pilot) -> None:
    screen_of(pilot).search_input.value = ""
    await settle(pilot)


def tool_result_line(entry_id: str, parent: str, text: str) -> str:
    """A pi tool result entry: its text reaches only the index, never a row's title."""
    message = {
        "role": "toolResult",
        "toolCallId": "call-1",
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": False,
        "timestamp": 1_780_315_200_000,
    }
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-06-01T12:00:00.000Z"}
    return json.dumps({**entry, "message": message}) + "\n"


async def test_new_and_appended_sessions_become_searchable_within_2_s(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = picker_app(root, options=PickerOptions(watch=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 8
        while not screen_of(pilot).watching and loop.time() < deadline:
            await pilot.pause(0.05)
        assert screen_of(pilot).watching

        # A new session whose unique word is in its second prompt (the title is the first).
        started = time.perf_counter()
        write_session(
            root,
            Spec("s-live-new", PROJECT, ("an ordinary title", "the quuxolotl is loose"), timedelta(seconds=5)),
            mtime=False,
        )
        await pilot.press(*"quuxolotl")
        await found_within(pilot, "s-live-new", started)

        # A line appended to an existing session: a tool result with another unique word.
        await clear_query(pilot)
        docs = session_path(root, Spec("s-docs", PROJECT))
        last_id = json.loads(docs.read_text().splitlines()[-1])["id"]
        started = time.perf_counter()
        with docs.open("a") as file:
            file.write(tool_result_line("t-appended", last_id, "drwx------ 2 zorbliter zorbliter 3452 build"))
        await pilot.press(*"zorbliter")
        await found_within(pilot, "s-docs", started)
        rows = screen_of(pilot).session_list.rows
        assert rows[0].hit is not None and rows[0].hit.tier == "full-text"


async def test_a_burst_of_keys_after_a_pause_searches_the_last_query(tmp_path: Path) -> None:
    """The first key after a pause starts its search once the character is drawn; keys that
    come before that frame (a paste, a fast typist, tmux `send-keys`) start theirs at once.
    The deferred search must not start after them: it cancelled the newest query's search
    and its own answer, for an older query, was dropped, so the list never followed."""
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        everything = len(screen.session_list.rows)
        for typed in ("z", "ze", "zeb", "zebr", "zebra"):  # one burst: no frame between the keys
            screen.search_input.value = typed
        await settle(pilot)
        await pilot.pause(0.3)
        await settle(pilot)
        assert screen.model.query == "zebra"
        assert [row.summary.id for row in screen.session_list.rows] == ["s-docs"], everything
