"""The rename modal: an input pre-filled with the current name; Enter saves, Esc cancels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from seance.core.text import display_text

from ..paths import STYLES
from .confirm import dialog_detail


class RenameScreen(ModalScreen[str | None]):
    """Dismisses with the trimmed new name, or None on cancel.  A blank name is refused (as in pi)."""

    CSS_PATH: ClassVar[list] = [STYLES / "modal.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+c", "cancel", "Cancel", priority=True),
    ]

    def __init__(self, current_name: str | None, title: str) -> None:
        super().__init__(classes="seance-modal")
        self._current = display_text(current_name or "")
        self._title = dialog_detail(title)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Content("Rename Session"), id="dialog-title")
            yield Label(Content(self._title), id="dialog-detail")
            yield Input(self._current, placeholder="a name for this session", id="rename-input", select_on_focus=False)
            yield Label(Content("Enter save · Esc cancel"), id="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        name = event.value.strip()
        if not name:
            self.query_one("#dialog-hint", Label).update(Content("A name cannot be empty · Esc cancel"))
            return
        self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)
