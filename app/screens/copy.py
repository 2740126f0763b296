"""CopyScreen: which of a session's handles to copy — its id, its path or the line that resumes it.

Each choice shows the exact text that will be copied (made visible: a control in an id or a
path shows as its escape) and has a key; Enter takes the highlighted one.  The dialog only
chooses: the caller copies (OSC 52 through `App.copy_to_clipboard`) and says so.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from seance.core.model import SessionSummary
from seance.core.text import display_text, shell_path, visible

from .confirm import dialog_detail
from .modal import SeanceModal


class CopyChoice(NamedTuple):
    key: str  # the key that takes it in the dialog
    what: str  # "session id", "path", "resume command": for the dialog and the notice
    text: str  # what goes to the clipboard


def copy_choices(summary: SessionSummary) -> list[CopyChoice]:
    """What can be copied of a session: the resume command first (what one pastes most)."""
    from seance.core.resume import resume_command  # on Ctrl+Y, not with the picker (~2 ms of a launch)

    return [
        CopyChoice("c", "resume command", resume_command(summary)),
        CopyChoice("i", "session id", visible(summary.id)),
        CopyChoice("p", "path", shell_path(summary.path)),  # as is, or $'...' when it holds a control
    ]


class CopyScreen(SeanceModal[CopyChoice | None]):
    """Dismisses with the chosen `CopyChoice`, or None on Esc / Ctrl+C."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,ctrl+c", "dismiss_none", "Cancel", priority=True),
        Binding("c", "choose('c')", "Resume command", show=False),
        Binding("i", "choose('i')", "Session id", show=False),
        Binding("p", "choose('p')", "Path", show=False),
    ]

    def __init__(self, summary: SessionSummary) -> None:
        super().__init__()
        self._title = dialog_detail(summary.title)
        self._choices = copy_choices(summary)

    def compose_dialog(self) -> ComposeResult:
        yield Label(Content("Copy to the clipboard"), id="seance-dialog-title")
        yield Label(Content(self._title), id="seance-dialog-detail")
        yield OptionList(
            *(
                Option(Content(f"{choice.key}  {choice.what}: {display_text(choice.text, 200)}"), id=choice.key)
                for choice in self._choices
            ),
            id="seance-copy-choices",
        )
        yield Label(Content("c / i / p or Enter copy · Esc cancel"), id="seance-dialog-hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_choose(event.option.id or "")

    def action_choose(self, key: str) -> None:
        self.dismiss(next((choice for choice in self._choices if choice.key == key), None))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
