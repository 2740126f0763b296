"""Pins and tags in the session list: Alt+P pins or unpins, Alt+T edits the tags.

`MarkActions` is mixed into `SessionPickerScreen` (which adds `MARK_BINDINGS` to its own):
the marks file (`core.marks.MarkStore`) is read when the screen mounts and after every
change, in a thread worker; the worker posts `MarksChanged` and the handler hands the new
marks to the model and rebuilds the rows (pinned first, a ★ and the tags on the row, and
`tag:` / `is:` searches see the change).  A session file is never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual import work
from textual.binding import Binding
from textual.message import Message

from seance.core.marks import Mark, MarkError, MarkStore, split_tags
from seance.core.text import display_text

from ..messages import WriteFailed
from .key_order import in_key_order
from .prompt import PromptScreen

if TYPE_CHECKING:
    from textual.app import App

    from ..picker_model import PickerModel
    from ..widgets.session_list import SessionList
    from ..widgets.status_bar import StatusBar

PIN_HELP = "pin or unpin the session (pinned sessions come first)"
TAGS_HELP = "edit the session's tags (tag:x in the search)"

MARK_BINDINGS = [
    Binding("alt+p", "toggle_pin", "Pin", show=False, priority=True, tooltip=PIN_HELP),
    Binding("alt+t", "edit_tags", "Tags", show=False, priority=True, tooltip=TAGS_HELP),
]


@dataclass
class MarksChanged(Message):
    """The marks as they are now (after a change, or read at mount); `note` for the status line."""

    marks: Mapping[str, Mark]
    note: str = ""


def tags_prompt(tags: tuple[str, ...], title: str) -> PromptScreen:
    """The current tags pre-filled, separated by spaces; an empty answer clears them."""
    return PromptScreen("Tags (empty to remove all):", " ".join(tags), title, placeholder="work auth later")


class MarkActions:
    """The pin and tag actions of the session list (a mixin of `SessionPickerScreen`)."""

    marks_store: MarkStore

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        model: PickerModel
        app: App[Any]

        @property
        def session_list(self) -> SessionList: ...

        @property
        def status(self) -> StatusBar: ...

        def post_message(self, message: Message) -> bool: ...

        def _rebuild(self, *, top: bool = False) -> None: ...

    def load_marks(self) -> None:
        """Read the marks file (the screen calls this when it mounts)."""
        self._marks_worker(None, "")

    @in_key_order()
    def action_toggle_pin(self) -> None:
        row = self.session_list.highlighted
        if row is None:
            return
        session_id, title, pin = row.summary.id, display_text(row.summary.title, 60), not row.mark.pinned
        note = f"Pinned {title}" if pin else f"Unpinned {title}"
        # (what the row shows, not a toggle of the file: another process may have pinned it since)
        self._marks_worker(lambda store: store.set_pinned(session_id, pin), note)

    @in_key_order()
    def action_edit_tags(self) -> None:
        row = self.session_list.highlighted
        if row is None:
            return
        session_id, title, shown = row.summary.id, row.summary.title, row.mark.tags

        def answered(text: str | None) -> None:
            if text is None:
                return
            try:
                tags = split_tags(text)
            except MarkError as error:
                self.status.show_message(f"Tags not saved: {display_text(error)}", error=True)
                return
            note = f"Tags: {' '.join(f'#{tag}' for tag in tags)}" if tags else "Tags removed"
            self._marks_worker(lambda store: store.set_tags(session_id, tags, shown=shown), display_text(note, 80))

        self.app.push_screen(tags_prompt(row.mark.tags, title), answered)

    @work(thread=True, group="marks", exit_on_error=False, description="marks")
    def _marks_worker(self, change: Callable[[MarkStore], object] | None, note: str) -> None:
        """Apply `change` to the marks file (None: only read it), then post the marks."""
        store = self.marks_store
        try:
            if change is not None:
                change(store)
            marks = store.load()
        except (MarkError, OSError) as error:
            self.post_message(WriteFailed(f"Marks: {display_text(error)}"))
            return
        self.post_message(MarksChanged(marks, note))

    def on_marks_changed(self, message: MarksChanged) -> None:
        unchanged = message.marks == self.model.marks  # no marks yet at launch: the rows being made stand
        self.model.marks = message.marks
        if not unchanged:
            self._rebuild()
        if message.note:
            self.status.show_message(message.note)


__all__ = ["MARK_BINDINGS", "MarkActions", "MarksChanged", "tags_prompt"]
