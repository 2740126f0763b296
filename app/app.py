"""SeanceApp: the standalone host of seance's screens (`seance`, `seance pick`, `seance tree`).

The app only pushes one screen and exits with that screen's result; everything else lives in
the screens, which a host agent can push into its own Textual app the same way.

Process-wide policy lives here and nowhere else: the app owns its process, so it may tune the
garbage collector (`seance.core.gcpause`).  Screens only post `LongLivedDataLoaded` when they
hold a large, long-lived set of objects; the app freezes them out of the collector's reach and
gives them back when such a screen goes away; and it runs thread workers in fresh contexts
(`thread_context`).  A host app never sees any of this happen.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import signal
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from textual import on
from textual.app import App, SystemCommand
from textual.notifications import SeverityLevel
from textual.screen import Screen

from seance.core import gcpause
from seance.core.text import display_lines, display_text

from .messages import LongLivedDataLoaded
from .paths import STYLES
from .thread_context import use_fresh_contexts

PI_KEYS = {"seance.picker.paths": "ctrl+p,f4"}
"""pi's own keys that a default Textual App owns (Ctrl+P is its command palette): only seance's
own app, which moves its palette to F2, gives them back to the screens (through Textual's keymap)."""

STOP_SIGNALS = (signal.SIGTERM,)
"""Signals that close the app as a cancel (`SeanceApp.on_load`), the terminal restored.  Not
SIGHUP: it means the terminal is gone, so there is nothing to restore, and writing the restoring
sequences to it failed with a traceback (EIO) where its default action ends the process quietly."""


def _in_foreground() -> bool:
    """Whether this process is in its controlling terminal's foreground process group."""
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)


class SeanceApp(App[Any]):
    """Push `make_screen()` on start; exit with whatever it dismisses with (None = cancelled)."""

    TITLE = "seance"
    CSS_PATH: ClassVar[list] = [STYLES / "app.tcss"]
    # pi's picker uses Ctrl+P for "show paths": the palette moves to F2.
    COMMAND_PALETTE_BINDING = "f2"
    COMMAND_PALETTE_DISPLAY = "F2"
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, make_screen: Callable[[], Screen[Any]], *, theme: str | None = None) -> None:
        super().__init__()
        self._make_screen = make_screen
        self._owned_before = False
        self._frozen_for: list[Screen[Any]] = []  # screens whose objects are frozen out of the collector
        self._signals_before: dict[int, Any] = {}  # the handlers `on_load` replaced, put back on unmount
        self.set_keymap(PI_KEYS)
        if theme:
            self.theme = theme

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Only Quit: Textual's Theme, Keys, Maximize and Screenshot are no seance commands (the
        screens' own providers list every seance action; F1 lists the keys)."""
        yield SystemCommand("Quit", "Leave seance without choosing a session", self.action_quit)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast's one exit: its text may name a path or a title, so it is sanitised and
        never parsed as markup, whatever the caller passed; its lines stay lines (a notice of
        several refusals is one a line)."""
        super().notify(
            display_lines(message), title=display_text(title), severity=severity, timeout=timeout, markup=False
        )

    def on_load(self) -> None:
        """SIGTERM leaves as Esc does (nothing chosen, exit 130): its default action killed the
        process in application mode, leaving the terminal on the alternate screen, in raw mode,
        with mouse reporting and bracketed paste on (`timeout 60 seance pick`, a `kill`).  Set
        before the terminal is put in application mode (Textual's `Load`); the app owns its process."""
        loop = asyncio.get_running_loop()

        def stop(number: int, _frame: object) -> None:
            # A plain handler, not the loop's: it runs once a stopped process is continued
            # (`timeout` from a script: the picker, in a background group, is stopped by
            # SIGTTOU as it sets the terminal up; the loop's handler never ran and only
            # SIGKILL ended it).  Not in the terminal's foreground there is no terminal of
            # ours to restore: the default action, as before.
            if not _in_foreground():
                signal.signal(number, signal.SIG_DFL)
                os.kill(os.getpid(), number)
                return
            loop.call_soon_threadsafe(self.exit)

        for number in STOP_SIGNALS:
            with contextlib.suppress(ValueError):  # (not the main thread: an embedding's own loop)
                previous = signal.signal(number, stop)
                self._signals_before[number] = previous if previous is not None else signal.SIG_DFL

    def on_mount(self) -> None:
        use_fresh_contexts()  # (before any worker: a closed screen's workers keep nothing alive)
        self._owned_before = gcpause.owns_collector()
        gcpause.own_collector()
        self.screen_change_signal.subscribe(self, self._screen_changed)
        screen = self._make_screen()
        self._add_screen_css(screen)
        self.push_screen(screen, callback=self.exit)
        self.call_after_refresh(gcpause.end_launch)  # the collector, paused for the launch (`run.py`), runs again

    def on_ready(self) -> None:
        """See `_whole_first_frame` (Textual handles `Ready` inside its start-up batch: the
        callback runs once the batch is over)."""
        self.call_later(self._whole_first_frame)

    def _whole_first_frame(self) -> None:
        """Textual's start-up draws the first screen once inside its start-up batch, where the
        frame is not written and its dirty regions are spent: the first frame written was a
        partial one (the rows, the preview, the footer) without the status line and the search
        box's border, which came a frame or two (~30 ms) later.  The whole screen is marked
        dirty for the next frame: its lines are cached from that first drawing."""
        screen = self.screen
        compositor = getattr(screen, "_compositor", None)  # Textual's, private: its own size and regions
        dirty, size = getattr(compositor, "_dirty_regions", None), getattr(compositor, "size", None)
        if isinstance(dirty, set) and size is not None:
            dirty.add(size.region)  # the compositor's whole region (not the screen's: a resize may be pending)
            screen.refresh()

    def _add_screen_css(self, screen: Screen[Any]) -> None:
        """Add the first screen's `CSS` to the stylesheet before it is pushed, as Textual's push
        would (same source key, same scope): the push then finds it there and does not re-parse
        every source of the app (Textual's re-parse starts from an empty parse cache: ~15 ms of a
        launch's CPU).  Only this source is parsed, with the rest, when the styles are next read."""
        if not screen.CSS:
            return
        try:
            screen_path = inspect.getfile(type(screen))
        except (TypeError, OSError):
            screen_path = ""
        read_from = (screen_path, f"{type(screen).__name__}.CSS")  # the key `App._load_screen_css` uses
        if not self.stylesheet.has_source(*read_from):
            scope = screen._css_type_name if screen.SCOPED_CSS else ""
            self.stylesheet.add_source(screen.CSS, read_from=read_from, is_default_css=False, scope=scope)

    @on(LongLivedDataLoaded)
    def _freeze_long_lived(self, message: LongLivedDataLoaded) -> None:
        """Ten thousand summaries and their haystacks, or a huge tree, live as long as their
        screen: out of the collector's reach, a full collection no longer walks them all in the
        middle of a keystroke.  Refcounting still frees what a refresh replaces."""
        gcpause.freeze_long_lived()
        if message.screen not in self._frozen_for:
            self._frozen_for.append(message.screen)

    def _screen_changed(self, _screen: Screen[Any]) -> None:
        """A screen that froze its objects is gone: give everything back to the collector, so
        what it held can be collected; the screens still open freeze again on their next
        `LongLivedDataLoaded` (the picker posts one after its next search)."""
        stack = self.screen_stack
        gone = [screen for screen in self._frozen_for if screen not in stack]
        if gone:
            self._frozen_for = [screen for screen in self._frozen_for if screen in stack]
            gcpause.release_frozen()

    def on_unmount(self) -> None:
        """The app is closing: nothing it froze stays frozen, and the collector is left as found."""
        if self._frozen_for:
            self._frozen_for = []
            gcpause.release_frozen()
        gcpause.own_collector(self._owned_before)
        for number, previous in self._signals_before.items():
            signal.signal(number, previous)
        self._signals_before = {}
