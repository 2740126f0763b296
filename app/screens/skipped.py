"""The "skipped files" modal of the session list (Alt+S): every file or root the last refresh
did not list, each with the reason, so the status line's "N skipped" can be checked.

`seance ls --skipped` prints the same list on the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.widgets import Label, Static

from seance.core.text import display_text

from .modal import SeanceModal

SKIPPED_KEY = "alt+s"
"""The session list's key for this list (in the status line's hint too)."""


def skipped_lines(skipped: Sequence[tuple[Path | str, str]]) -> list[Content]:
    """One plain line per skipped file: the path, then why (session text: sanitised, never markup)."""
    return [Content.assemble((display_text(str(path)), "bold"), "  ", display_text(reason)) for path, reason in skipped]


class SkippedScreen(SeanceModal[None]):
    """Lists the skipped files and why; Esc, Enter, q or Alt+S closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(f"escape,q,enter,ctrl+c,{SKIPPED_KEY}", "close", "Close", priority=True),
    ]
    dialog_classes = "-help"

    def __init__(self, skipped: Sequence[tuple[Path | str, str]]) -> None:
        super().__init__()
        self._skipped = list(skipped)

    def compose_dialog(self) -> ComposeResult:
        count = len(self._skipped)
        title = f"{count:,} file{'' if count == 1 else 's'} skipped (not listed)" if count else "Nothing skipped"
        yield Label(Content(title), id="seance-dialog-title")
        with VerticalScroll(id="seance-help-body"):
            for line in skipped_lines(self._skipped):
                yield Static(line, classes="seance-help-row")
        yield Label(Content("Esc close · seance ls --skipped prints this list"), id="seance-dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
