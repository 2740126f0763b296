"""PromptScreen: one line of text in a dialog — renaming a session, labelling an entry.

An input pre-filled with the current value (as drawn: one clean line); Enter submits the
trimmed text, Esc / Ctrl+C cancel (None).  Where the value is session text (a name, a label:
`keep_unedited`), Enter on it before any edit is None too: nothing was edited, and the stored
value, controls and all, is kept, not replaced by its drawn form (an edit, even one undone by
hand, is an answer; a value drawn as nothing answered with nothing clears it).  A prompt that needs a
value (a session name, as in pi) refuses a blank one and says so; one that allows it (pi's
`Label (empty to remove):`) returns "" to clear.
Writing the answer is the caller's job.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Input, Label

from seance.core.text import display_text

from ..widgets.ordered_input import OrderedInput
from .confirm import dialog_detail
from .modal import SeanceModal

HINT = "Enter save · Esc cancel"


class PromptScreen(SeanceModal[str | None]):
    """Dismisses with the trimmed text, or None on cancel (or, `keep_unedited`, on no edit);
    `required` refuses a blank answer."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+c", "cancel", "Cancel", priority=True),
    ]
    dialog_classes: ClassVar[str] = "-prompt"  # (modal.tcss: scrolls to its input on a short terminal)

    def __init__(
        self,
        title: str,
        current: str | None,
        detail: str = "",
        *,
        placeholder: str = "",
        required: bool = False,
        empty_error: str = "The text cannot be empty",
        keep_unedited: bool = False,
    ) -> None:
        super().__init__()
        self._title = display_text(title)
        self._stored = current or ""
        self._current = display_text(self._stored)
        self._edited = False
        self._detail = dialog_detail(detail)
        self._placeholder = placeholder
        self.required = required
        self._empty_error = empty_error
        self.keep_unedited = keep_unedited

    def compose_dialog(self) -> ComposeResult:
        yield Label(Content(self._title), id="seance-dialog-title")
        if self._detail:
            yield Label(Content(self._detail), id="seance-dialog-detail")
        yield OrderedInput(
            self._current, placeholder=self._placeholder, id="seance-prompt-input", select_on_focus=False
        )
        yield Label(Content(HINT), id="seance-dialog-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.value != self._current:
            self._edited = True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.is_active:  # cancelled by a key after Enter in the same burst: not twice
            return
        text = event.value.strip()
        if self.required and not text:
            self.query_one("#seance-dialog-hint", Label).update(Content(f"{self._empty_error} · Esc cancel"))
            return
        # pre-filled as drawn: submitted unedited, writing it would replace the stored value;
        # but a value drawn as nothing (controls, spaces) answered with nothing is cleared
        unedited = self.keep_unedited and not self._edited and text == self._current.strip()
        self.dismiss(None if unedited and (text or not self._stored) else text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def rename_prompt(current_name: str | None, title: str) -> PromptScreen:
    """pi's rename, the current name pre-filled; a blank answer ("") asks to clear the name
    (the caller confirms first), refused when there is no name to clear."""
    return PromptScreen(
        "Rename Session (empty to clear the name)" if current_name else "Rename Session",
        current_name,
        title,
        placeholder="a name for this session",
        required=not current_name,
        empty_error="A name cannot be empty",
        keep_unedited=True,
    )


def label_prompt(current_label: str | None, entry_text: str) -> PromptScreen:
    """pi's `Label (empty to remove):`: an empty answer clears the label."""
    return PromptScreen("Label (empty to remove):", current_label, entry_text, placeholder="label", keep_unedited=True)
