"""A yes/no modal: Enter (or y) confirms, Esc / Ctrl+C / n cancel, every other key is swallowed."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Button, Label

from seance.core.text import display_text

from .modal import SeanceModal

DETAIL_CHARS = 100  # a dialog's detail (a session's first message) is cut to about two lines


def dialog_detail(text: str) -> str:
    """The first words of `text` on one clean line, short enough for two lines of a dialog."""
    return display_text(text, DETAIL_CHARS)


class ConfirmScreen(SeanceModal[bool]):
    """Ask before doing something destructive; dismisses with True only on an explicit yes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,y", "answer(True)", "Confirm", priority=True),
        Binding("escape,ctrl+c,n", "answer(False)", "Cancel", priority=True),
    ]

    def __init__(
        self, title: str, detail: str = "", *, confirm_label: str = "Delete", lines: Sequence[str] = ()
    ) -> None:
        """`detail`: one short line (cut to two lines); `lines`: whole lines shown as they are (paths)."""
        super().__init__()
        self._title = display_text(title)
        self._detail = dialog_detail(detail)
        self._lines = [display_text(line) for line in lines]
        self._confirm_label = confirm_label

    def compose_dialog(self) -> ComposeResult:
        yield Label(Content(self._title), id="seance-dialog-title")
        if self._detail:
            yield Label(Content(self._detail), id="seance-dialog-detail")
        for line in self._lines:
            yield Label(Content(line), classes="seance-dialog-line")
        yield Label(Content("Enter confirm · Esc cancel"), id="seance-dialog-hint")
        with Horizontal(id="seance-dialog-buttons"):
            yield Button(Content(self._confirm_label), variant="error", id="seance-yes")
            yield Button(Content("Cancel"), id="seance-no")

    def on_mount(self) -> None:
        self.query_one("#seance-yes", Button).focus()  # Enter confirms, as in pi; Esc is the way out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "seance-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
