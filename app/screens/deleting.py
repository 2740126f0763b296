"""Deleting from the session list: Ctrl+D (one session, or the selected ones), Ctrl+Z, and the
selection itself (Space / Ctrl+Space / Alt+A).

`DeleteActions` is mixed into `SessionPickerScreen` (whose BINDINGS name these actions, so
help keeps its order).  Every move goes through the catalog (`Catalog.trash` / `restore`,
`core.trash`) in a "writes" thread worker, which posts what happened; the handlers here own
the model's undo stack.  A session an agent is writing is refused unless the user insists,
as `seance rm` refuses it without `--force`; a selection moves as one batch that one Ctrl+Z
restores (app/screens/bulk.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from seance.core.model import SessionSummary
from seance.core.session import SessionError
from seance.core.text import display_text

from ..messages import BatchUndone, Restored, SelectionTrashed, Trashed, UndoFailed, WriteFailed
from ..picker_model import Deleted, DeletedBatch
from ..toasts import withdraw_toasts
from .confirm import ConfirmScreen
from .key_order import in_key_order

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.app import App

    from seance.core.catalog import SessionSource

    from ..picker_model import PickerModel
    from ..widgets.session_list import SessionList
    from ..widgets.status_bar import StatusBar

DELETED_TOAST = "Deleted"  # the title of the delete toasts, which an undo withdraws


class DeleteActions:
    """Delete, undo and the selection of the session list (a mixin of `SessionPickerScreen`)."""

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        app: App
        catalog: SessionSource
        model: PickerModel
        options: Any

        @property
        def session_list(self) -> SessionList: ...
        @property
        def status(self) -> StatusBar: ...
        def _rebuild(self, *, top: bool = False) -> None: ...
        def _apply_changes(
            self, changed: Sequence[SessionSummary], removed: Sequence[str] = (), *, restored: bool = False
        ) -> None: ...
        def post_message(self, message: object) -> bool: ...
        def notify(self, message: str, **options: Any) -> None: ...

    _cursor_to: frozenset[str] = frozenset()
    """The sessions the cursor goes to with the next rows, the first they list (an undone delete)."""

    active_seconds: float | None = None
    """A session written more recently is "in use" (tests lower it); None: `core.trash.ACTIVE_SECONDS`
    (`core.trash` is imported on the first delete, not with the picker: ~4 ms of a launch)."""

    def _active_seconds(self) -> float:
        from seance.core.trash import ACTIVE_SECONDS

        return ACTIVE_SECONDS if self.active_seconds is None else self.active_seconds

    @in_key_order()
    def action_delete(self) -> None:
        from seance.core.trash import same_file, session_activity

        if len(self.model.selection):
            self._delete_selected()
            return
        row = self.session_list.highlighted
        if row is None:
            return
        if self.options.open_session and same_file(row.path, self.options.open_session):
            self.status.show_message("Cannot delete the currently active session", error=True)
            return
        summary = row.summary
        busy = session_activity(summary.path, active_seconds=self._active_seconds())

        def answered(yes: bool | None) -> None:
            if yes:
                self._trash_worker(summary, force=busy is not None)

        if busy is None:
            dialog = ConfirmScreen("Delete session?", summary.title or summary.path, confirm_label="Move to Trash")
        else:  # as `seance rm`: refused unless the user insists (the button is `--force`)
            detail = f"{busy}: an agent may be using it. {summary.title or summary.path}"
            dialog = ConfirmScreen("Session in use — delete anyway?", detail, confirm_label="Move to Trash anyway")
        self.app.push_screen(dialog, answered)

    @work(thread=True, group="writes", exit_on_error=False, description="trash")
    def _trash_worker(self, summary: SessionSummary, *, force: bool = False) -> None:
        try:
            receipt = self.catalog.trash(
                summary.path, open_session=self.options.open_session, force=force, active_seconds=self._active_seconds()
            )
        except (SessionError, OSError) as error:
            self.post_message(WriteFailed(f"Failed to delete: {display_text(error)}"))
            return
        self.post_message(Trashed(receipt, summary))

    def on_trashed(self, message: Trashed) -> None:
        self.model.trashed(message.receipt, message.summary)
        self._rebuild()
        self.status.show_message("Session moved to trash · ctrl+z to undo")
        self.notify("Session moved to trash. Press ctrl+z to undo.", title=DELETED_TOAST, timeout=6, markup=False)
        self._say_unfinished(message.receipt.notes)

    def _say_unfinished(self, notes: Sequence[str]) -> None:
        """A move into the Trash left unfinished (kept for a later try): what is where."""
        if notes:
            self.notify(
                "\n".join(display_text(note) for note in notes), title="Not finished", severity="warning", markup=False
            )

    def action_undo_delete(self) -> None:
        deleted = self.model.undo_next()
        if isinstance(deleted, DeletedBatch):
            self._undo_batch_worker(deleted)
        elif deleted is not None:
            self._undo_worker(deleted)

    @work(thread=True, group="writes", exit_on_error=False, description="undo trash")
    def _undo_worker(self, deleted: Deleted) -> None:
        from seance.core.trash import NotInTrash

        try:
            notes: list[str] = []
            restored = self.catalog.restore(deleted.receipt, notes)
        except NotInTrash as error:  # gone for good (emptied, restored elsewhere)
            self.post_message(WriteFailed(f"Undo failed: {display_text(error)}"))
            return
        except (SessionError, OSError) as error:  # the path is taken, the disk is full: may work later
            self.post_message(UndoFailed(f"Undo failed: {display_text(error)}", deleted))
            return
        self.post_message(Restored(restored or deleted.summary, notes))

    def on_undo_failed(self, message: UndoFailed) -> None:
        """As `seance rm --undo` keeps it: the next Ctrl+Z tries this deletion again."""
        self.model.deleted.append(message.deleted)
        self.status.show_message(message.text, error=True)
        notify_failure(self, message.text)

    def on_restored(self, message: Restored) -> None:
        """The session is back: in its place, with the cursor on it, as before the delete
        (the delete had moved the cursor to the next row)."""
        self._cursor_to = frozenset((message.summary.path,))
        self._apply_changes([message.summary], restored=True)
        withdraw_toasts(self.app, DELETED_TOAST)  # "press ctrl+z to undo" no longer stands
        self.status.show_message("Session restored")
        self._say_unfinished(message.notes)

    # -- the selection: a bulk delete (app/selection.py, the batch in app/screens/bulk.py) ------------

    @in_key_order()
    def action_toggle_select(self) -> None:
        row = self.session_list.highlighted
        if row is not None:
            self.model.selection.toggle(row.summary)
            self._show_selection()

    @in_key_order()
    def action_select_all(self) -> None:
        pinned = {session_id for session_id, mark in self.model.marks.items() if mark.pinned}  # loaded by a worker
        rows = [row.summary for row in self.session_list.rows]
        kept = [summary for summary in rows if summary.id in pinned]  # never pinned ones in bulk
        changed = self.model.selection.select_all([summary for summary in rows if summary.id not in pinned])
        self._show_selection()
        if kept and changed > 0:
            self.status.show_message(f"{len(kept)} pinned not selected (Space selects one)")

    def _show_selection(self) -> None:
        self.session_list.set_selected(self.model.selection.paths)
        self.status.selected = len(self.model.selection)

    def _delete_selected(self) -> None:
        from .bulk import confirm_selected

        summaries = self.model.selection.summaries

        def answered(yes: bool | None) -> None:
            if yes:
                self._trash_selected_worker(summaries)

        self.app.push_screen(confirm_selected(summaries, self.model.selection.total_bytes), answered)

    @work(thread=True, group="writes", exit_on_error=False, description="trash selected")
    def _trash_selected_worker(self, summaries: list[SessionSummary]) -> None:
        from .bulk import trash_selected

        self.post_message(trash_selected(self.catalog, summaries, self.options.open_session, self._active_seconds()))

    def on_selection_trashed(self, message: SelectionTrashed) -> None:
        from .bulk import refusal_notice

        self.model.trashed_batch(message.items)
        self._rebuild()
        moved = len(message.items)
        self.status.show_message(f"{moved} session{'' if moved == 1 else 's'} moved to trash · ctrl+z to undo")
        if message.refused:
            self.notify(refusal_notice(message.refused), title="Not deleted", severity="warning", markup=False)
        from seance.core.trash import receipt_notes

        self._say_unfinished(receipt_notes(item.receipt for item in message.items))

    @work(thread=True, group="writes", exit_on_error=False, description="undo trash")
    def _undo_batch_worker(self, batch: DeletedBatch) -> None:
        from .bulk import undo_selected

        self.post_message(undo_selected(self.catalog, batch))

    def on_batch_undone(self, message: BatchUndone) -> None:
        """The batch is back, the cursor on its first session in the list (as `on_restored`)."""
        self._cursor_to = frozenset(summary.path for summary in message.restored)
        self._apply_changes(message.restored, restored=True)
        if message.left:
            self.model.deleted.append(DeletedBatch(tuple(message.left)))
        self.status.show_message(f"{len(message.restored)} sessions restored")
        self._say_unfinished(message.notes)
        if message.failed:
            self.notify("\n".join(message.failed), title="Not restored", severity="warning", markup=False)


def notify_failure(screen: Any, text: str) -> None:
    """A failed write's whole message as a toast: in the one-line status bar a long path (one
    word) wraps out of sight and takes the reason after it along ("Undo failed:" and nothing)."""
    screen.notify(display_text(text), title="Not done", severity="error", timeout=8, markup=False)


__all__ = ["DELETED_TOAST", "DeleteActions", "notify_failure"]
