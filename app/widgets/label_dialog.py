"""LabelDialog: pi's `Label (empty to remove):` prompt, as a modal that returns the new label.

Dismisses with the text typed (an empty string clears the label) or None when cancelled.
Writing the label is the caller's job (through `seance.core.writes.set_label`).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from seance.core.text import display_text

from ..paths import STYLES
from ..screens.confirm import dialog_detail


class LabelDialog(ModalScreen[str | None]):
    """Edit the label of one entry: Enter saves, Esc cancels, empty removes."""

    CSS_PATH = STYLES / "tree.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+c", "cancel", "Cancel", show=False),
    ]

    def __init__(
        self,
        current: str | None,
        entry_text: str = "",
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.current = current or ""
        self.entry_text = dialog_detail(entry_text)

    def compose(self) -> ComposeResult:
        with Vertical(id="label-dialog"):
            yield Static(Content("Label (empty to remove):"), id="label-title")
            if self.entry_text:
                yield Static(Content(self.entry_text), id="label-entry", markup=False)
            yield Input(
                value=display_text(self.current or ""), placeholder="label", id="label-input", select_on_focus=False
            )
            yield Static(Content("Enter save · Esc cancel"), id="label-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
