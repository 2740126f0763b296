"""Shared set-up for the session-list UI tests: a real catalog over real files, a fixed clock."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input
from textual.worker import WorkerCancelled
from ui_sessions import PROJECT, clock

from seance.app.app import SeanceApp
from seance.app.screens.session_list import PickerOptions, SessionPickerScreen
from seance.core.catalog import Catalog

SIZE = (120, 30)


def picker_app(
    root: Path,
    *,
    scope: str = "project",
    query: str = "",
    cwd: str = PROJECT,
    options: PickerOptions | None = None,
    cache_dir: Path | None = None,
    confirm_missing_cwd: bool = False,
) -> SeanceApp:
    """The standalone app around a picker on `root`; watchers off unless `options` says so.

    The test sessions' cwds (`/work/demo/...`) exist on no machine, so the question pi asks
    before resuming such a session is off unless a test asks for it (tests/test_ui_keys.py).
    """
    catalog = Catalog([root], cache_dir=cache_dir)
    chosen = replace(options or PickerOptions(watch=False), confirm_missing_cwd=confirm_missing_cwd)

    def make_screen() -> SessionPickerScreen:
        return SessionPickerScreen(catalog, cwd=cwd, scope=scope, query=query, clock=clock, options=chosen)

    app = SeanceApp(make_screen, theme="textual-dark")
    app.animation_level = "none"
    return app


async def settle(pilot: Pilot, rounds: int = 3) -> None:
    """Let workers finish and their messages land (loading, search, preview)."""
    for _ in range(rounds):
        await pilot.pause()
        for worker in list(pilot.app.workers):
            if not worker.is_finished:
                with contextlib.suppress(WorkerCancelled):  # (a burst's next key cancelled it: settled too)
                    await worker.wait()
        await pilot.pause(0.05)
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False


async def wait_until(pilot: Pilot, ready: Callable[[], object], pause: float = 0.02, tries: int = 100) -> None:
    """Pause until `ready()` is true, at most `tries` times (the caller asserts what it needs)."""
    for _ in range(tries):
        if ready():
            return
        await pilot.pause(pause)


def settled_after(*keys: str, settle_with: Callable[[Pilot], Awaitable[None]] = settle):
    """A snapshot's `run_before`: let the data land, press `keys`, let their work land too."""

    async def run_before(pilot: Pilot) -> None:
        await settle_with(pilot)
        if keys:
            await pilot.press(*keys)
            await settle_with(pilot)

    return run_before


def screen_of(pilot: Pilot) -> SessionPickerScreen:
    screen = pilot.app.screen
    assert isinstance(screen, SessionPickerScreen), type(screen)
    return screen


async def searched(pilot: Pilot, text: str) -> SessionPickerScreen:
    """The settled picker with `text` typed into its search and the search settled."""
    await settle(pilot)
    screen = screen_of(pilot)
    screen.search_input.value = text
    await settle(pilot)
    return screen


def titles(pilot: Pilot) -> list[str]:
    return [row.summary.title for row in screen_of(pilot).session_list.rows]


def cursor_title(pilot: Pilot) -> str | None:
    row = screen_of(pilot).session_list.highlighted
    return row.summary.title if row else None


def visible_text(pilot: Pilot) -> list[str]:
    """The list's visible lines as plain text."""
    widget = screen_of(pilot).session_list
    return [widget.render_line(y).text for y in range(widget.size.height)]
