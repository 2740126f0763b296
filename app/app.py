"""SeanceApp: the standalone host of seance's screens (`seance`, `seance pick`, `seance tree`).

The app only pushes one screen and exits with that screen's result; everything else lives in
the screens, which a host agent can push into its own Textual app the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import App
from textual.notifications import SeverityLevel
from textual.screen import Screen

from seance.core.text import display_text

from .paths import STYLES


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
        if theme:
            self.theme = theme

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
        never parsed as markup, whatever the caller passed."""
        super().notify(
            display_text(message), title=display_text(title), severity=severity, timeout=timeout, markup=False
        )

    def on_mount(self) -> None:
        self.push_screen(self._make_screen(), callback=self.exit)
