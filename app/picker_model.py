"""The picker's state without a UI: which sessions are listed, how, and what changed.

`SessionPickerScreen` owns one `PickerModel` and applies to it what its workers post:

* `loaded(scope, summaries, exact)`: a listing of one scope arrived (quick, then exact);
* `changed(changed, removed, ...)`: the watcher saw files appear, change or vanish (also an
  undone delete or a rename: the same merge);
* `drop(paths)`: sessions that are gone (a delete): rows, search hits and bookkeeping;
* `marks`: the user's pins and tags (session id -> `Mark`), replaced whole when they change.
* `trashed` / `trashed_batch` / `undo_next`: the undo stack of deletions (a batch is one step);
* `selection`: the rows selected for a bulk delete (app/selection.py).
* `toggle_scope`, `cycle_sort`, `toggle_named`, `cycle_children` (child sessions hidden,
  threaded or flat), the query and its `searched` hits;

It answers with rows (`rows`, `hit_rows`), the count for the status line, the "↑ N new"
counter, and the empty-list text.  `view()` freezes what the rows are made from (a
`RowsView`), so a worker thread can order 100,000 sessions while the UI thread goes on: the
summary lists are never changed in place once listed (a merge copies the list it changes).
Every set it keeps is bounded by the files present: a path is forgotten when its file goes,
so a picker left open for days while agents create and delete sessions does not grow
(issue 9, finding 13a).  Nothing here imports
Textual; tests drive it directly (tests/test_picker_model.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from seance.core import listing
from seance.core.catalog import same_dir
from seance.core.listing import SORTS, ChildMode
from seance.core.marks import Mark
from seance.core.model import SessionSummary

from .rows import RowSet, hit_rows, plain_rows
from .selection import Selection

if TYPE_CHECKING:
    from seance.core.search import Matched

Scope = Literal["project", "all"]
UNDO_KEPT = 50  # deletions ctrl+z can walk back

EMPTY = {
    ("project", False): "No sessions in current folder. Press Tab to view all.",
    ("all", False): "No sessions found",
    ("project", True): "No named sessions in current folder. Press ctrl+n to show all, or Tab to view all.",
    ("all", True): "No named sessions found. Press ctrl+n to show all.",
}


@dataclass(frozen=True)
class RowsView:
    """What the current rows are made from, frozen: a worker builds them while the model goes on.

    `summaries` is the scope's list as it was (the model replaces it, never changes it), `hits`
    the current query's (None: the plain listing)."""

    summaries: Sequence[SessionSummary]
    named_only: bool
    sort: str
    children: ChildMode
    marks: Mapping[str, Mark]
    hits: list[Any] | None = None
    memo: RowsMemo = field(default_factory=lambda: RowsMemo(), compare=False)

    def visible(self) -> Sequence[SessionSummary]:
        """The summaries, named ones only under ctrl+n."""
        return self.memo.named(self.summaries) if self.named_only else self.summaries

    def rows(self) -> RowSet:
        """The hits' rows if there are hits, else the plain listing's."""
        return self.plain_rows() if self.hits is None else self.hit_rows(self.hits)

    def plain_rows(self) -> RowSet:
        """The listing's rows, remembered for the last few lists (`RowsMemo`)."""
        visible = self.visible()
        return self.memo.rows(visible, self.sort, self.children, self.marks)

    def remembered_rows(self) -> RowSet | None:
        """The plain listing's rows if the model already made them (`RowsMemo`), else None."""
        return None if self.hits is not None else self.memo.made(self.visible(), self.sort, self.children, self.marks)

    def hit_rows(self, hits: list[Any]) -> RowSet:
        visible = self.visible()
        return hit_rows(hits, self.sort, self.marks, self.children, self.memo.parents(visible), total=len(visible))

    def child_count(self) -> int:
        """How many listed sessions are child sessions (of a session listed too)."""
        return len(self.memo.parents(self.visible()))

    def hit_lines(self, matched: Matched) -> tuple[int, int]:
        """(rows, lines) `hit_rows` will make of the hits in `matched`, known before they are
        made and ranked: hidden child sessions left out, a row with a snippet two lines."""
        parent_of = self.memo.parents(self.visible()) if self.children == "hidden" else {}
        rows, snippets = matched.tally(parent_of)
        return rows, rows + snippets


class RowsMemo:
    """The last few lists' rows and fork trees, kept by one `PickerModel` (Tab back, Esc after
    a query, a sort seen before, and every keystroke's need for the scope's fork tree: 0.7 s
    and 0.3 s of CPU at 100,000 sessions otherwise).  A scope's list and the marks are
    replaced, never changed, so their identities (held alive by the entry) with the sort and
    child mode say the rows are the same; rows are immutable.  Workers call it: each update
    replaces a whole list, which the GIL makes atomic."""

    KEPT = 3

    def __init__(self) -> None:
        self._rows: list[tuple[Sequence[SessionSummary], str, ChildMode, Mapping[str, Mark], RowSet]] = []
        self._parents: list[tuple[Sequence[SessionSummary], dict[str, str]]] = []
        self._lock = threading.Lock()
        self._making: dict[tuple[int, str, ChildMode, int], threading.Event] = {}  # rows under way
        self._named: tuple[Sequence[SessionSummary], Sequence[SessionSummary]] | None = None  # `named`

    def rows(
        self, visible: Sequence[SessionSummary], sort: str, children: ChildMode, marks: Mapping[str, Mark]
    ) -> RowSet:
        """`plain_rows(visible, sort, marks, children)`, made once per list, sort, mode and
        marks: a second thread asking for rows under way (Tab while they are made ahead)
        waits for them instead of making them again beside them."""
        key = (id(visible), sort, children, id(marks))
        while True:
            with self._lock:
                made = self.made(visible, sort, children, marks)
                if made is not None:
                    return made
                under_way = self._making.get(key)
                if under_way is None:
                    done = self._making[key] = threading.Event()
                    break
            under_way.wait()
        try:
            rows = plain_rows(visible, sort, marks, children)
            with self._lock:
                self._rows = [(visible, sort, children, marks, rows), *self._rows[: self.KEPT - 1]]
        finally:
            with self._lock:
                del self._making[key]
            done.set()
        return rows

    def named(self, summaries: Sequence[SessionSummary]) -> Sequence[SessionSummary]:
        """The named sessions of `summaries` (ctrl+n), filtered once per list: the same list
        object each time, so the rows and the fork tree made from it are remembered too."""
        kept = self._named
        if kept is None or kept[0] is not summaries:
            named = [summary for summary in summaries if summary.name and summary.name.strip()]
            kept = self._named = (summaries, named)
        return kept[1]

    def made(
        self, visible: Sequence[SessionSummary], sort: str, children: ChildMode, marks: Mapping[str, Mark]
    ) -> RowSet | None:
        """The rows `rows()` made for these, if it still has them."""
        for kept, kept_sort, kept_children, kept_marks, rows in self._rows:
            if kept is visible and kept_marks is marks and kept_sort == sort and kept_children == children:
                return rows
        return None

    def parents(self, summaries: Sequence[SessionSummary]) -> dict[str, str]:
        """`listing.parents(summaries)`, made once per list."""
        for kept, parent_of in self._parents:
            if kept is summaries:
                return parent_of
        parent_of = listing.parents(summaries)
        self._parents = [(summaries, parent_of), *self._parents[: self.KEPT - 1]]
        return parent_of


@dataclass(frozen=True)
class Deleted:
    """One deletion ctrl+z can undo: the Trash receipt and the session as it was listed."""

    receipt: Any  # a `seance.core.trash.TrashReceipt`
    summary: SessionSummary


@dataclass(frozen=True)
class DeletedBatch:
    """Deletions ctrl+z undoes as one (the selected rows' ctrl+d)."""

    items: tuple[Deleted, ...]


class PickerModel:
    """Loaded summaries per scope, the live merge, scope / sort / named filter / query, the
    "new" counter and the undo stack; `exists` answers whether a session file is still there."""

    def __init__(
        self,
        cwd: str,
        *,
        scope: Scope = "project",
        query: str = "",
        children: ChildMode = "threaded",
        exists: Callable[[str], bool] = os.path.exists,
    ) -> None:
        self.cwd = cwd
        self.scope: Scope = scope
        self.sort: str = SORTS[0]
        self.children: ChildMode = children
        self.named_only = False
        self.query = query
        self.summaries: dict[str, list[SessionSummary]] = {}  # per scope, as loaded and merged since
        self.hits: list[Any] | None = None  # the current query's ranked hits (None: no query or not yet)
        self.hits_query = ""  # the query `hits` were ranked for (the list keeps them while a newer one runs)
        self.known: set[str] = set()  # paths listed now (a path seen again is no new session)
        self.new: set[str] = set()  # live arrivals in scope above the viewport: the "↑ N new" count
        self.marks: Mapping[str, Mark] = {}  # pins and tags by session id (`core.marks`)
        self.deleted: list[Deleted | DeletedBatch] = []  # undo stack, the latest UNDO_KEPT deletions
        self.selection = Selection()  # rows selected for a bulk delete
        self._exists = exists
        self._positions: dict[str, dict[str, int]] = {}  # per scope: path -> index, kept across merges
        self._memo = RowsMemo()  # the last few lists' rows and fork trees

    # -- what is shown -------------------------------------------------------------------------

    @property
    def loaded_scope(self) -> bool:
        """The current scope has been listed at least once."""
        return self.scope in self.summaries

    @property
    def searching(self) -> bool:
        return bool(self.query.strip())

    @property
    def new_count(self) -> int:
        return len(self.new)

    @property
    def empty_text(self) -> str:
        return EMPTY[(self.scope, self.named_only)]

    def view(self, *, plain: bool = False) -> RowsView:
        """What the rows are made from now (`plain`: the listing without a query, which
        forgets any previous query's hits)."""
        if plain:
            self.hits = None
        summaries = self.summaries.get(self.scope, [])
        return RowsView(summaries, self.named_only, self.sort, self.children, self.marks, self.hits, self._memo)

    def search_view(self) -> RowsView:
        """`view()` for a search worker: the sessions it ranks, without the previous query's
        hits.  A Textual worker and its context form a reference cycle, so its arguments live
        until the collector runs: a view holding the hits would keep every keystroke's hits
        (100,000 at 100,000 sessions) for a full collection to walk and free, or for ever once
        frozen (`gcpause.freeze_long_lived`)."""
        summaries = self.summaries.get(self.scope, [])
        return RowsView(summaries, self.named_only, self.sort, self.children, self.marks, None, self._memo)

    def other_view(self) -> RowsView | None:
        """The other scope's plain listing, as Tab would show it now (None: not listed yet)."""
        other: Scope = "all" if self.scope == "project" else "project"
        summaries = self.summaries.get(other)
        return None if summaries is None else self.listing_view(summaries)

    def listing_view(self, summaries: Sequence[SessionSummary]) -> RowsView:
        """The plain listing of `summaries` as it would be shown now (sort, filters, marks),
        sharing the model's `RowsMemo`: rows a worker makes of a listing before it is loaded
        are found made once it is (the same list object)."""
        return RowsView(summaries, self.named_only, self.sort, self.children, self.marks, None, self._memo)

    def visible(self) -> Sequence[SessionSummary]:
        """The current scope's summaries, named ones only under ctrl+n."""
        return self.view().visible()

    def rows(self) -> RowSet:
        """Rows without a query (it forgets any previous query's hits)."""
        return self.view(plain=True).plain_rows()

    def hit_rows(self) -> RowSet | None:
        """The current hits in the current sort; None when there are none to re-order."""
        return self.view().hit_rows(self.hits) if self.hits is not None else None

    def accept_hits(self, query_text: str, hits: list[Any]) -> bool:
        """A search finished: keep its hits, unless the query has changed since (a newer one runs)."""
        if query_text != self.query:
            return False
        self.hits, self.hits_query = hits, query_text
        return True

    @property
    def hits_current(self) -> bool:
        """Whether `hits` are the current query's (not those of the query before, still shown
        while its search runs): only then may the rows be re-ordered from them."""
        return self.hits is not None and self.hits_query == self.query

    def searched(self, query_text: str, hits: list[Any]) -> RowSet | None:
        """A search finished: its rows, or None if the query has changed since (a newer one runs)."""
        return self.view().hit_rows(hits) if self.accept_hits(query_text, hits) else None

    def child_count(self) -> int:
        """How many listed sessions are child sessions (of a session listed too)."""
        return self.view().child_count()

    def in_project(self, summary: SessionSummary) -> bool:
        return bool(summary.cwd) and same_dir(summary.cwd, self.cwd)

    def in_scope(self, summary: SessionSummary) -> bool:
        return self.scope == "all" or self.in_project(summary)

    # -- scope, sort, filters ------------------------------------------------------------------

    def toggle_scope(self) -> Scope:
        """Current folder ↔ all projects; the "new" count starts again."""
        self.scope = "all" if self.scope == "project" else "project"
        self.clear_new()
        return self.scope

    def cycle_sort(self) -> str:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        return self.sort

    def cycle_children(self) -> ChildMode:
        """Child sessions: hidden → threaded under their parent → flat rows → hidden."""
        self.children = listing.next_child_mode(self.children)
        return self.children

    def toggle_named(self) -> bool:
        self.named_only = not self.named_only
        return self.named_only

    def clear_new(self) -> None:
        self.new.clear()

    # -- loading and live changes --------------------------------------------------------------

    def loaded(self, scope: str, summaries: list[SessionSummary], *, exact: bool) -> bool:
        """A listing of `scope` arrived; returns whether it is that scope's first."""
        first = scope not in self.summaries
        self.summaries[scope] = summaries
        self._positions.pop(scope, None)
        paths = {summary.path for summary in summaries}
        if exact and scope == "all":  # every file there is: forget the ones gone (a stat of the others only)
            self.known = paths | {path for path in self.known - paths if self._exists(path)}
        else:
            self.known.update(paths)
        return first

    def as_listed(self, scope: str, summaries: list[SessionSummary]) -> list[SessionSummary]:
        """`summaries` (an exact listing of `scope`), or the list `scope` has now if it holds
        the same sessions, equal and in the same order: the exact refresh found nothing
        changed since the stored listing, whose rows (made already) then stay.  Called by the
        load worker: comparing 10,000 summaries takes ~20 ms, not for the UI thread."""
        listed = self.summaries.get(scope)
        if listed is not None and len(listed) == len(summaries) and listed == summaries:
            return listed
        return summaries

    def paths_under(self, dirs: Sequence[str]) -> list[str]:
        """The listed sessions (of every loaded scope) inside one of the folders `dirs`."""
        prefixes = tuple(os.path.join(folder, "") for folder in dirs)
        if not prefixes:
            return []
        return sorted({s.path for listed in self.summaries.values() for s in listed if s.path.startswith(prefixes)})

    def changed(
        self,
        changed: Sequence[SessionSummary],
        removed: Iterable[str] = (),
        *,
        restored: bool = False,
        at_top: bool = True,
    ) -> None:
        """Merge what the watcher saw: `changed` sessions are updated in place or added (to
        each loaded scope they belong to), `removed` paths are dropped.  Sessions never seen
        before that arrive in scope count as new unless the user is `at_top` (they are in
        view) or they are `restored` (an undone delete)."""
        removed = list(removed)
        if removed:
            self.drop(removed)
        for scope, listed in list(self.summaries.items()):
            arrived = [summary for summary in changed if scope != "project" or self.in_project(summary)]
            if not arrived:
                continue
            position = self._position(scope)
            summaries = list(listed)  # a copy: a worker may be making rows from the listed one
            for summary in arrived:
                index = position.get(summary.path)
                if index is None:
                    position[summary.path] = len(summaries)
                    summaries.append(summary)
                else:
                    summaries[index] = summary
            self.summaries[scope] = summaries
        new = {summary.path for summary in changed if summary.path not in self.known and self.in_scope(summary)}
        self.known.update(summary.path for summary in changed)
        if new and not restored and not at_top:
            self.new |= new  # they arrived above what the user is looking at

    def _position(self, scope: str) -> dict[str, int]:
        """path -> index in the scope's list, made once per listing and kept up by `changed`."""
        position = self._positions.get(scope)
        if position is None:
            position = self._positions[scope] = {
                summary.path: index for index, summary in enumerate(self.summaries[scope])
            }
        return position

    def drop(self, paths: Iterable[str]) -> None:
        """Forget sessions that are gone: summaries, search hits, and the bookkeeping."""
        gone = set(paths)
        self.selection.drop(gone)
        self.known -= gone
        self.new -= gone
        for scope, summaries in self.summaries.items():
            if any(summary.path in gone for summary in summaries):
                self.summaries[scope] = [summary for summary in summaries if summary.path not in gone]
                self._positions.pop(scope, None)
        if self.hits is not None:
            self.hits = [hit for hit in self.hits if hit.summary.path not in gone]

    # -- deletions -----------------------------------------------------------------------------

    def trashed(self, receipt: Any, summary: SessionSummary) -> None:
        """A session went to the Trash: off the list, onto the undo stack (the latest UNDO_KEPT)."""
        self.deleted = [*self.deleted[-UNDO_KEPT + 1 :], Deleted(receipt, summary)]
        self.drop([summary.path])

    def trashed_batch(self, items: Sequence[Deleted]) -> None:
        """Sessions went to the Trash together: off the list, onto the undo stack as one step."""
        if not items:
            return
        self.deleted = [*self.deleted[-UNDO_KEPT + 1 :], DeletedBatch(tuple(items))]
        self.drop([item.summary.path for item in items])

    @property
    def can_undo(self) -> bool:
        return bool(self.deleted)

    def undo_next(self) -> Deleted | DeletedBatch | None:
        """The latest deletion, taken off the stack (the screen restores it)."""
        return self.deleted.pop() if self.deleted else None
