"""The help modal: a screen's keys (from its bindings) and a few text-only rows such as the query syntax."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from ..paths import STYLES

KEY_NAMES = {
    "up": "↑",
    "down": "↓",
    "left": "←",
    "right": "→",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "question_mark": "?",
    "escape": "Esc",
    "enter": "Enter",
    "tab": "Tab",
    "home": "Home",
    "end": "End",
}


def key_label(key: str) -> str:
    """How help shows a Textual key name: "ctrl+s" -> "Ctrl+S", "pageup" -> "PgUp", "question_mark" -> "?"."""
    return "+".join(
        KEY_NAMES.get(part, part.upper() if len(part) <= 2 else part.capitalize()) for part in key.split("+")
    )


def binding_rows(bindings: Iterable[Binding]) -> list[tuple[str, str]]:
    """Help rows from key bindings: one per help text (the binding's tooltip, else its description).

    Bindings sharing a text share a row ("↑ ↓ PgUp PgDn Home End  move the cursor"), so the
    screen's BINDINGS stay the one list of its keys and help cannot drift from them.
    """
    rows: dict[str, list[str]] = {}
    for binding in bindings:
        what = binding.tooltip or binding.description
        if not what:
            continue
        keys = rows.setdefault(what, [])
        for key in binding.key.split(","):
            if (label := key_label(key.strip())) not in keys:
                keys.append(label)
    return [((" / " if len(keys) <= 2 else " ").join(keys), what) for what, keys in rows.items()]


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of Esc, F1, ?, q or Enter closes it."""

    CSS_PATH: ClassVar[list] = [STYLES / "modal.tcss"]

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q,enter,ctrl+c", "close", "Close", priority=True),
    ]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__(classes="seance-modal")
        self._keys = keys

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
