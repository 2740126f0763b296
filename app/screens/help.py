"""The help modal: every key of the session list, and the query syntax."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from .confirm import STYLES

KEYS: list[tuple[str, str]] = [
    ("type", "search: words, \"a phrase\", re:regex, !not, label:x"),
    ("↑ ↓ PgUp PgDn Home End", "move the cursor"),
    ("Enter / double-click", "resume the selected session"),
    ("Esc", "clear the query, then cancel"),
    ("Ctrl+C", "cancel"),
    ("Tab", "current folder ↔ all projects"),
    ("Ctrl+S", "sort: threaded, recent, created, relevance"),
    ("Ctrl+N", "named sessions only"),
    ("Ctrl+P", "show file paths"),
    ("Ctrl+D", "move the session to the Trash (confirm)"),
    ("Ctrl+Z", "undo the last delete"),
    ("Ctrl+R", "rename the session"),
    ("Ctrl+T", "tree of the session (resume at any entry)"),
    ("Ctrl+F", "fork the session (pick it as a fork)"),
    ("Ctrl+O / F3", "show or hide the preview"),
    ("F2", "command palette"),
    ("F1 / ?", "this help (? when the query is empty)"),
]


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of Esc, F1, ?, q or Enter closes it."""

    CSS_PATH: ClassVar[list] = [STYLES / "modal.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q,enter,ctrl+c", "close", "Close", priority=True),
    ]

    def __init__(self, keys: list[tuple[str, str]] | None = None) -> None:
        super().__init__(classes="seance-modal")
        self._keys = keys or KEYS

    def compose(self) -> ComposeResult:
        width = max(len(key) for key, _ in self._keys) + 2
        with Vertical(id="dialog", classes="help"):
            yield Label(Content("Keys"), id="dialog-title")
            with VerticalScroll(id="help-body"):
                for key, what in self._keys:
                    yield Static(Content.assemble((key.ljust(width), "bold"), what), classes="help-row")
            yield Label(Content("Esc close"), id="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
