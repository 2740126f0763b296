"""A yes/no modal: Enter (or y) confirms, Esc / Ctrl+C / n cancel, every other key is swallowed."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from seance.core.text import display_text

from ..paths import STYLES

DETAIL_CHARS = 100  # a dialog's detail (a session's first message) is cut to about two lines


def dialog_detail(text: str) -> str:
    """The first words of `text` on one clean line, short enough for two lines of a dialog."""
    return display_text(text, DETAIL_CHARS)


class ConfirmScreen(ModalScreen[bool]):
    """Ask before doing something destructive; dismisses with True only on an explicit yes."""

    CSS_PATH: ClassVar[list[str | Path]] = [STYLES / "modal.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,y", "answer(True)", "Confirm", priority=True),
        Binding("escape,ctrl+c,n", "answer(False)", "Cancel", priority=True),
    ]

    def __init__(self, title: str, detail: str = "", *, confirm_label: str = "Delete") -> None:
        super().__init__(classes="seance-modal")
        self._title = display_text(title)
        self._detail = dialog_detail(detail)
        self._confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Content(self._title), id="dialog-title")
            if self._detail:
                yield Label(Content(self._detail), id="dialog-detail")
            yield Label(Content("Enter confirm · Esc cancel"), id="dialog-hint")
            with Horizontal(id="dialog-buttons"):
                yield Button(Content(self._confirm_label), variant="error", id="yes")
                yield Button(Content("Cancel"), id="no")

    def on_mount(self) -> None:
        self.query_one("#yes", Button).focus()  # Enter confirms, as in pi; Esc is the way out

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
