"""Messages that carry data from workers to the screens that own the state.

Workers never touch widgets (no `call_from_thread` either): they post one of these, and a
handler on the screen applies it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from seance.core.model import SessionSummary
    from seance.core.trash import TrashReceipt


@dataclass
class SessionsLoaded(Message):
    """A scope's session list arrived: `exact` once the index refresh has finished."""

    scope: str
    summaries: list[SessionSummary]
    exact: bool
    generation: int
    partial: bool = False  # only the newest files: the first screenful while the rest loads


@dataclass
class LoadProgress(Message):
    """The index refresh read `done` of `total` files."""

    done: int
    total: int
    generation: int

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


@dataclass
class LoadFailed(Message):
    """Listing sessions failed; `text` is a one-line message for the status bar."""

    text: str
    generation: int


@dataclass
class Skipped(Message):
    """The refresh skipped files or roots: `files` all of them with the reason (None: this is
    only a note, e.g. about the index); `text` a status message (a root that cannot be read)."""

    text: str
    root_problem: bool
    files: list[tuple[Path, str]] | None = None


@dataclass
class SessionsChanged(Message):
    """The watcher saw session files appear, change or disappear (already coalesced)."""

    changed: list[SessionSummary] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    restored: bool = False  # an undone delete: not "new"
    # folders moved away or deleted: no event comes for the files in them (a watch is per
    # folder), so every session listed under one is gone too
    gone_dirs: list[str] = field(default_factory=list)


@dataclass
class TextHealed(Message):
    """The index's stored text was brought up to the current extraction rules (`Catalog.heal_text`):
    `count` sessions read again, so a query's full-text hits may have changed."""

    count: int


@dataclass
class TextUnindexed(Message):
    """The sessions the search of rows request `generation` asked the index about that it holds
    no file of (`IndexHits.unindexed`: their text cannot be found); empty when it holds them all."""

    paths: Sequence[str]
    generation: int


@dataclass
class IndexedAgain(Message):
    """`Catalog.index_again` indexed what it could of the sessions asked; `missing`: what it
    could not; `gone`: those whose files are gone (deleted while listed: no search misses them)."""

    missing: frozenset[str]
    gone: frozenset[str] = frozenset()


@dataclass
class SearchDone(Message):
    """Ranked hits for `query_text`; `top` moves the cursor to the best hit (a new query)."""

    query_text: str
    hits: list
    error: str | None = None
    top: bool = False
    rows: Any = None  # the hits' `RowSet`, made by the worker for rows request `generation`
    generation: int = 0


@dataclass
class Watching(Message):
    """The file watcher is set up on `roots`: every change from now on will be reported."""

    roots: list


@dataclass
class Trashed(Message):
    """The session was moved to the Trash; `receipt` undoes it."""

    receipt: TrashReceipt
    summary: SessionSummary


@dataclass
class SelectionTrashed(Message):
    """The selected sessions went to the Trash (one undo step); `refused`: (path, reason) of the others."""

    items: list  # `picker_model.Deleted`: receipt and summary of each moved session
    refused: list[tuple[Any, str]]


@dataclass
class BatchUndone(Message):
    """A batch of deletions was undone: the sessions as they read now, and what failed
    (`left`: the deletions still undoable later, their path being taken now)."""

    restored: list[SessionSummary]
    failed: list[str]
    left: list  # `picker_model.Deleted`
    notes: list[str] = field(default_factory=list)  # as `Restored`'s, each once


@dataclass
class Restored(Message):
    """A deletion was undone; `summary` is the session as it reads now; `notes`: what an
    earlier delete that could not be finished left where (`core.trash.undo`)."""

    summary: SessionSummary
    notes: list[str] = field(default_factory=list)


@dataclass
class UndoFailed(Message):
    """An undo could not be done now (the path is taken, the disk is full): `text` for the
    status bar; `deleted` (a `picker_model.Deleted`) goes back on the undo stack to retry."""

    text: str
    deleted: Any


@dataclass
class Renamed(Message):
    """The session was named `name`; `summary` is it re-read (None if it could not be)."""

    name: str
    summary: SessionSummary | None


@dataclass
class WriteFailed(Message):
    """A delete, undo or rename failed; `text` is a one-line message for the status bar."""

    text: str


@dataclass
class LongLivedDataLoaded(Message):
    """`screen` built a large set of objects that live as long as it is shown (the loaded list
    and its search haystacks, a huge session's tree).  A hint for whoever owns the process:
    `SeanceApp` freezes them out of the cyclic collector's reach; a host app ignores it."""

    screen: Any
