"""The session list's bulk delete of the selected rows: the one confirm, and the Trash work.

`trash_selected` and `undo_selected` run in the picker's worker threads and return the message
the screen applies (`SelectionTrashed`, `BatchUndone`): every session goes through the catalog's
own `trash` (refusing the open session and one an agent is writing, like a single ctrl+d
without "anyway") and `restore`, as one batch (`core.trash.trash_each` / `undo_each`), so one
ctrl+z puts them all back.  A refusal skips that session; the others still go.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seance.core.catalog import SessionSource
from seance.core.clean import human_size
from seance.core.model import SessionSummary
from seance.core.text import display_text
from seance.core.trash import TrashBatch, trash_each, undo_each

from ..messages import BatchUndone, SelectionTrashed
from ..picker_model import Deleted, DeletedBatch
from .confirm import ConfirmScreen

NOTICE_LINES = 5  # refusals named in the notice; the rest are counted


def confirm_selected(summaries: Sequence[SessionSummary], total_bytes: int) -> ConfirmScreen:
    """ "Move N selected sessions to the Trash?" with their count and bytes."""
    count = len(summaries)
    plural = "" if count == 1 else "s"
    return ConfirmScreen(
        f"Move {count} selected session{plural} to the Trash?",
        f"{count} session{plural}, {human_size(total_bytes)} · ctrl+z puts all of them back",
        confirm_label="Move to Trash",
    )


def trash_selected(
    catalog: SessionSource, summaries: Sequence[SessionSummary], open_session: str | None, active_seconds: float
) -> SelectionTrashed:
    """Move the selected sessions to the Trash as one batch (a worker's job)."""
    outcome = trash_each(
        [summary.path for summary in summaries],
        lambda path: catalog.trash(path, open_session=open_session, active_seconds=active_seconds),
    )
    refused = {str(path) for path, _ in outcome.refused}
    moved = [summary for summary in summaries if str(Path(summary.path)) not in refused]
    items = [Deleted(receipt, summary) for receipt, summary in zip(outcome.batch.receipts, moved, strict=True)]
    return SelectionTrashed(items, list(outcome.refused))


def undo_selected(catalog: SessionSource, batch: DeletedBatch) -> BatchUndone:
    """Undo a batch of deletions: all that can be (a worker's job)."""
    notes: list[str] = []
    outcome = undo_each(
        TrashBatch(tuple(item.receipt for item in batch.items)), lambda receipt: catalog.restore(receipt, notes)
    )
    failed_receipts = {id(receipt) for receipt, _ in (*outcome.gone, *outcome.blocked)}
    blocked = {id(receipt) for receipt, _ in outcome.blocked}
    succeeded = [item for item in batch.items if id(item.receipt) not in failed_receipts]
    restored = [found or item.summary for item, found in zip(succeeded, outcome.restored, strict=True)]
    left = [item for item in batch.items if id(item.receipt) in blocked]
    failed = [display_text(reason, 200) for _, reason in (*outcome.gone, *outcome.blocked)]
    return BatchUndone(restored, failed, left, list(dict.fromkeys(notes)))


def refusal_notice(refused: Sequence[tuple[Any, str]]) -> str:
    """One notice for every session that was not moved, each with its reason (sanitised)."""
    lines = [f"{len(refused)} not moved to the Trash:"]
    lines += [display_text(reason, 200) for _, reason in refused[:NOTICE_LINES]]
    if len(refused) > NOTICE_LINES:
        lines.append(f"(+{len(refused) - NOTICE_LINES} more)")
    return "\n".join(lines)


__all__ = ["confirm_selected", "refusal_notice", "trash_selected", "undo_selected"]
