"""OrderedInput: a Textual `Input` whose editing keys act in the order they were typed.

Textual runs a focused widget's own (non-priority) bindings — Backspace, Ctrl+U, Ctrl+W,
Ctrl+K, the arrows, Ctrl+Z in the query — only after the key has bubbled from the widget back
up to the app, one message queue per ancestor.  Typed characters are inserted by the input
itself, in its own queue.  So in a burst (one terminal write: a fast typist, a key repeat, tmux
`send-keys C-u word`) the characters behind a bound key are inserted *before* its action runs:
Ctrl+U then "word" ends with an empty input, Backspace×3 then "xyz" deletes the "xyz" just
typed.  Typed keys are the user's data; this input runs its own bindings where it inserts
characters, so each key acts on the text the keys before it made.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from seance.core.text import blank_controls, drop_escapes


def one_line(text: str) -> str:
    """`text` as a one-line input may hold it: escape sequences dropped whole, every other
    control (a newline, BEL, a bidi override) a space.  Textual's `Input` draws its value as
    it is, so an ESC in a `--query` or a paste reached the terminal and was obeyed (a colour
    change, the line's end lost).  Text without controls is returned unchanged (spaces kept:
    it is being typed)."""
    return text if text.isprintable() else blank_controls(drop_escapes(text))


class OrderedInput(Input):
    """An `Input` that runs its own bindings in its queue, in order with the typed characters.

    Only while it has the focus: a key that reaches it after its screen was dismissed or
    covered (Enter then Ctrl+C in a prompt) goes on up, and Textual resolves it against the
    widget focused now, as it always did.  Its value is always `one_line`: given, typed or pasted."""

    def validate_value(self, value: str) -> str:
        """Textual's validator of the `value` reactive: every way in (the initial value, a
        paste, a program's assignment) passes here."""
        return one_line(value)

    def _on_paste(self, event: events.Paste) -> None:
        """Clean the pasted line before `Input._on_paste` (called next: Textual runs each
        class's handler in turn) inserts it, so the cursor lands after what was inserted, not
        as many characters further as the dropped sequences had."""
        lines = event.text.splitlines()
        if lines:  # (Input pastes the first line only)
            event.text = one_line(lines[0])

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable and self.app.focused is self and await self._run_own_binding(event.key):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    async def _run_own_binding(self, key: str) -> bool:
        """Run this input's binding for `key` now, as the app would once the key came back to it
        (the focused widget's bindings come first in that search); False: none ran, the key goes
        on up as before (an ancestor's binding, or one whose `check_action` refused)."""
        for binding in self._bindings.key_to_bindings.get(key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                return True
        return False
