"""The help modal, for every seance screen: its keys, generated from the bindings that are live
on the screen (`help_rows`), and a few text-only rows such as the query syntax."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Label, Static

from .modal import SHORT_ROWS, SeanceModal

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


def help_rows(
    screen: Screen, before: Iterable[tuple[str, str]] = (), after: Iterable[tuple[str, str]] = ()
) -> list[tuple[str, str]]:
    """`screen`'s help: `before`, then one row per help text of the bindings live on it now, then `after`.

    The bindings are Textual's `active_bindings`: for every key, the one binding that a key
    press would run (the focused widget's, the screen's, or a priority binding of the app),
    after `check_action` and the app's keymap.  A key the host app owns is therefore listed
    only if the host's binding has a help text, never with seance's meaning; the app's own
    bindings (quit, the command palette) are left to the app.  Only bindings with a `tooltip`
    (the help text) are listed.
    """
    app = screen.app
    live = [active for active in screen.active_bindings.values() if active.node is not app and active.binding.tooltip]
    nodes = list(dict.fromkeys(active.node for active in live))  # the focused widget first, then up to the screen
    bindings = [active.binding for active in sorted(live, key=lambda active: _position(nodes, active))]
    rows = [*before, *binding_rows(bindings), *after]
    if app.ENABLE_COMMAND_PALETTE:
        rows.append((key_label(app.COMMAND_PALETTE_BINDING), "command palette"))
    return rows


def _position(nodes: list, active: ActiveBinding) -> tuple[int, int, int]:
    """Where a live binding goes in help: by node, then in the order of that node's `BINDINGS`
    (and of the keys within one binding: "pageup,left" lists PgUp first)."""
    declared = [  # the node's own class first: its BINDINGS order wins over a base class's (ScrollView's)
        binding
        for cls in type(active.node).__mro__
        for binding in cls.__dict__.get("BINDINGS", ())
        if isinstance(binding, Binding)
    ]
    actions = [binding.action for binding in declared]
    action = active.binding.action
    if action not in actions:
        return nodes.index(active.node), len(actions), 0
    where = actions.index(action)
    keys = [key.strip() for key in declared[where].key.split(",")]
    key = active.binding.key
    return nodes.index(active.node), where, keys.index(key) if key in keys else len(keys)


KEYS_SHARE = "50%"
"""At most this much of a help row is the keys column: at 40 columns the widest keys
("↑ ↓ PgUp PgDn Home End") left each text a few cells, wrapped a letter or two a line."""


class HelpScreen(SeanceModal[None]):
    """Lists the keys; any of Esc, F1, ?, q or Enter closes it; ↑/↓, PgUp/PgDn scroll it.

    Each row is two columns (the keys, then the help text), so a long text wraps under its own
    column; the list scrolls inside the dialog, which always fits the terminal (60×20 too).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q,enter,ctrl+c", "close", "Close", priority=True),
    ]
    dialog_classes = "-help"
    CHROME_ROWS = 8  # border 2, padding 2, the title and its margin 2, the hint and its margin 2
    SHORT_CHROME_ROWS = 4  # a short terminal's box (modal.tcss `-short`): border 2, the title, the hint

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self._keys = keys

    @property
    def rows(self) -> list[tuple[str, str]]:
        """The (keys, help text) rows shown."""
        return list(self._keys)

    def compose_dialog(self) -> ComposeResult:
        width = max(len(key) for key, _ in self._keys) + 2  # (its padding: the gap before the texts)
        yield Label(Content("Keys"), id="seance-dialog-title")
        with VerticalScroll(id="seance-help-body"):
            for key, what in self._keys:
                with Horizontal(classes="seance-help-row"):
                    key_cell = Static(Content.styled(key, "bold"), classes="seance-help-key")
                    key_cell.styles.width = width
                    key_cell.styles.max_width = KEYS_SHARE  # a narrow terminal: the keys wrap, not the texts
                    yield key_cell
                    yield Static(Content(what), classes="seance-help-what")
        yield Label(Content("↑↓ scroll · Esc close"), id="seance-dialog-hint")

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The list takes what the terminal leaves it (the dialog is at most 90% high), then scrolls."""
        chrome = self.CHROME_ROWS if self.size.height >= SHORT_ROWS else self.SHORT_CHROME_ROWS
        room = int(self.size.height * 0.9) - chrome
        self.query_one("#seance-help-body", VerticalScroll).styles.max_height = max(room, 3)

    def action_close(self) -> None:
        self.dismiss(None)
