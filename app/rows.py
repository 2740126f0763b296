"""From summaries (and search hits) to the rows the session list draws, in each sort order.

Sort orders follow pi's picker: *threaded* shows forks under their parent session (via the
header's `parentSession`), *recent* is last activity first, *created* is creation time first,
*relevance* is the search ranking (recent when there is no query).  With a query, threaded
becomes relevance, as in pi: the tree is dropped while searching.  Pinned sessions come
first in every order (`core.listing.pinned_first`); each row carries its session's marks
(pin, tags) for the widget to draw.  The child-session mode (`seance.core.listing.CHILD_MODES`)
says whether child sessions are hidden, drawn under their parent or listed flat
(`listing.arrange`).  No Textual here: the widget draws these rows,
`PickerModel` makes them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import attrgetter
from typing import Any, Generic, TypeVar, overload

from seance.core import listing
from seance.core.listing import pinned_first
from seance.core.marks import NO_MARK, Mark
from seance.core.model import SessionSummary
from seance.core.search.rank import FULL_TEXT, TIERS

FIRST_MESSAGE_LABEL = "first message: "
Marks = Mapping[str, Mark]  # session id -> marks
Item = TypeVar("Item")


@dataclass(frozen=True, slots=True, eq=False)
class SessionRow:
    """One session as the list shows it: the summary, its fork prefix, and the search hit.

    `hit` (a `seance.core.search.Hit`) is kept whole: highlight spans and the full-text
    snippet are computed only when the row is drawn.
    """

    summary: SessionSummary
    prefix: str = ""  # threaded sort: "├─ " / "│  └─ " ...
    hit: Any = None
    mark: Mark = NO_MARK  # the user's pin and tags
    children: int = 0  # child sessions not drawn under this row: the row says "3 children"

    @property
    def path(self) -> str:
        return self.summary.path

    @property
    def has_snippet(self) -> bool:
        return hit_has_snippet(self.hit)

    @property
    def height(self) -> int:
        return 2 if self.has_snippet else 1

    @property
    def query(self) -> Any:
        """The query the row was found by in the session's text (a `seance.core.search.Query`),
        for the preview and the tree to show where: None without one, and None for a hit in
        its title, id or path (the session was found for what it is: its preview stays at the
        leaf, where it resumes, as pi's `/seance words` then Ctrl+T expects)."""
        hit = self.hit
        return hit.query if hit is not None and hit.tier == TIERS[FULL_TEXT] else None

    def title_spans(self) -> list[tuple[int, int]]:
        return self.hit.title_spans() if self.hit is not None else []

    def snippet(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        """The second line's text and highlight spans (a first-message match says so first)."""
        found = self.hit.snippet() if self.has_snippet else None
        if found is None:
            return "", ()
        if self.hit.tier != "full-text":  # the first message of a named session
            label = FIRST_MESSAGE_LABEL
            return label + found.text, tuple((start + len(label), end + len(label)) for start, end in found.spans)
        return found.text, tuple(found.spans)


def hit_has_snippet(hit: Any) -> bool:
    """A second line says why the session matched: a full-text hit, or a hit in the first
    message of a session whose row shows its name (`Hit.shows_snippet`; `Matched.tally`
    counts them ahead of the ranking: tests/test_search_count_ahead.py holds them equal)."""
    return hit is not None and (
        hit.tier == "full-text" or (hit.field == "first message" and hit.in_hidden_first_message)
    )


class RowSet(Sequence[SessionRow], Generic[Item]):
    """The list's rows, each made when it is first looked at (what is on screen, the cursor's).

    Ordering (a sort, the fork tree, the ranking) happens once, over light items (a listing's
    `ThreadedRow`s, search hits); `make` turns one item into its `SessionRow` on demand, so
    100,000 sessions cost the UI thread the rows it draws.  What the widget needs about all
    rows at once (the line each starts on, the index of a path) is worked out here, at
    construction, which a worker thread does for a long list.  `total`: how many sessions the
    rows were chosen from (the status line's "of N").  With `index_later`, the path -> index
    table is made when first needed (`index_of`; `position` looks at the first rows first):
    a keystroke's hits are shown with the cursor at the top, and the search thread makes the
    table after posting them (35 ms at 100,000 hits).
    """

    def __init__(
        self,
        items: Sequence[Item],
        make: Callable[[Item], SessionRow],
        path_of: Callable[[Item], str],
        *,
        two_lines: Callable[[Item], bool] | None = None,
        total: int | None = None,
        index_later: bool = False,
    ) -> None:
        self._items = items
        self._make = make
        self._path_of = path_of
        self._made: dict[int, SessionRow] = {}
        self.total = len(items) if total is None else total
        self._index_of: dict[str, int] | None = None if index_later else self._indexed()
        tall = list(map(two_lines, items)) if two_lines is not None else []  # (C-level loops: 100,000 hits)
        self.line_starts: list[int] = []  # the first line of each row; empty when every row is one line
        self.line_count = len(items)
        if any(tall):
            self.line_starts = [0, *accumulate(2 if two else 1 for two in tall)]
            self.line_count = self.line_starts.pop()

    def _indexed(self) -> dict[str, int]:
        return dict(zip(map(self._path_of, self._items), range(len(self._items)), strict=True))

    @property
    def index_of(self) -> dict[str, int]:
        """path -> the index of its row (made now if it was left for later)."""
        index = self._index_of
        if index is None:
            index = self._index_of = self._indexed()  # (two threads may both make it: the same table)
        return index

    def make_index(self, step: int = 4096) -> None:
        """`index_of` made now, by a worker thread, `step` rows at a time with the GIL given up
        between steps: made in one go, the table of 40,000 hits' paths held the GIL for
        20-30 ms (a C-level loop), just as the UI thread took the rows to draw them."""
        if self._index_of is not None:
            return
        items, path_of = self._items, self._path_of
        made: dict[str, int] = {}
        for start in range(0, len(items), step):
            part = items[start : start + step]
            made.update(zip(map(path_of, part), range(start, start + len(part)), strict=True))
            time.sleep(0)
        if self._index_of is None:
            self._index_of = made

    def position(self, path: str) -> int | None:
        """The index of `path`'s row; while the table is not made, the first rows are looked
        at first (where a cursor kept across new rows usually is)."""
        if self._index_of is None:
            path_of = self._path_of
            for index, item in enumerate(self._items[:_LOOK_FIRST]):
                if path_of(item) == path:
                    return index
            if len(self._items) <= _LOOK_FIRST:
                return None
        return self.index_of.get(path)

    @classmethod
    def of(cls, rows: Sequence[SessionRow]) -> RowSet[SessionRow]:
        """Rows made already (a test's, a short list's) as a `RowSet`."""
        if isinstance(rows, RowSet):
            return rows
        return RowSet(rows, _same, _row_path, two_lines=_row_two_lines)

    @property
    def materialised(self) -> int:
        """How many rows have been made so far (the rest exist only as items)."""
        return len(self._made)

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> SessionRow: ...
    @overload
    def __getitem__(self, index: slice) -> list[SessionRow]: ...
    def __getitem__(self, index: int | slice) -> SessionRow | list[SessionRow]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self._items)))]
        if index < 0:
            index += len(self._items)
        row = self._made.get(index)
        if row is None:
            row = self._made[index] = self._make(self._items[index])  # IndexError past the end
        return row

    def __iter__(self) -> Iterator[SessionRow]:
        """Every row, made for the caller and not kept (a bulk action over all of them)."""
        made, make = self._made, self._make
        for index, item in enumerate(self._items):
            row = made.get(index)
            yield row if row is not None else make(item)

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or `RowSet`) of the same rows, in order."""
        if not isinstance(other, (list, tuple, RowSet)) or len(other) != len(self):
            return NotImplemented if not isinstance(other, (list, tuple, RowSet)) else False
        return all(mine == theirs for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, as a list

    def summaries(self) -> list[SessionSummary]:
        """Every row's session, in order, without making the rows."""
        return [_summary_of(item) for item in self._items]


_LOOK_FIRST = 512  # rows `RowSet.position` looks through before it makes the table


def _same(row: SessionRow) -> SessionRow:
    return row


def _row_path(row: SessionRow) -> str:
    return row.summary.path


def _row_two_lines(row: SessionRow) -> bool:
    return row.has_snippet


def _summary_of(item: Any) -> SessionSummary:
    summary: SessionSummary = item.summary  # a `SessionRow`, a `ThreadedRow` and a `Hit` all carry one
    return summary


_summary_path: Callable[[Any], str] = attrgetter("summary.path")  # a `SessionRow`, a `ThreadedRow`, a `Hit`


def effective_sort(sort: str, searching: bool) -> str:
    """The order the rows are really in: with a query, threaded ranks by relevance; without
    one, relevance is recent (see `plain_rows` and `hit_rows`)."""
    if searching:
        return "relevance" if sort == "threaded" else sort
    return "recent" if sort == "relevance" else sort


def sort_label(sort: str, searching: bool) -> str:
    """The status line's sort: the order in effect, and why when it is not the one chosen
    ("Relevance (query)": Ctrl+S chose threaded, but a query ranks)."""
    shown = effective_sort(sort, searching)
    if shown == sort:
        return sort.capitalize()
    return f"{shown.capitalize()} ({'query' if searching else 'no query'})"


def mark_of(summary: SessionSummary, marks: Marks | None) -> Mark:
    return marks.get(summary.id, NO_MARK) if marks and summary.id else NO_MARK


def _pinned(marks: Marks | None) -> listing.Pinned | None:
    """The "is it pinned" test for the orders, or None when nothing is pinned."""
    if not marks or not any(mark.pinned for mark in marks.values()):
        return None
    return lambda summary: mark_of(summary, marks).pinned


def threaded(summaries: Sequence[SessionSummary], marks: Marks | None = None) -> list[SessionRow]:
    """pi's fork tree as rows, with the `├─ ` / `└─ ` / `│  ` prefix drawn before each fork."""
    return [
        SessionRow(row.summary, prefix=row.prefix, mark=mark_of(row.summary, marks))
        for row in listing.threaded(summaries, _pinned(marks))
    ]


def plain_rows(
    summaries: Sequence[SessionSummary],
    sort: str,
    marks: Marks | None = None,
    children: listing.ChildMode = "threaded",
) -> RowSet[listing.ThreadedRow]:
    """Rows for an empty query (made as they are drawn)."""

    def make(row: listing.ThreadedRow) -> SessionRow:
        return SessionRow(row.summary, prefix=row.prefix, mark=mark_of(row.summary, marks), children=row.children)

    arranged = listing.arrange(summaries, sort, children, _pinned(marks))
    return RowSet(arranged, make, _summary_path, total=len(summaries))


def hit_rows(
    hits: Sequence[Any],
    sort: str,
    marks: Marks | None = None,
    children: listing.ChildMode = "threaded",
    parent_of: dict[str, str] | None = None,
    *,
    total: int | None = None,
) -> RowSet[Any]:
    """Rows for search hits (already ranked by relevance); recent/created re-order them; each
    row is made when it is drawn.

    `parent_of` (`listing.parents` of every listed session): hidden children are left out, and
    outside *threaded* a hit says how many child sessions it has.  `total`: how many sessions
    were searched."""
    parent_of = parent_of or {}
    if children == "hidden" and parent_of:
        hits = [hit for hit in hits if hit.summary.path not in parent_of]
    if sort == "recent":
        hits = sorted(hits, key=lambda hit: hit.summary.modified_ms, reverse=True)
    elif sort == "created":
        hits = sorted(
            hits, key=lambda hit: (hit.summary.created or hit.summary.modified, hit.summary.path), reverse=True
        )
    pinned = _pinned(marks)
    if pinned is not None:
        hits = pinned_first(hits, lambda hit: pinned(hit.summary))
    counts = listing.descendants(parent_of) if parent_of and children != "threaded" else {}

    def make(hit: Any) -> SessionRow:
        return SessionRow(
            hit.summary, hit=hit, mark=mark_of(hit.summary, marks), children=counts.get(hit.summary.path, 0)
        )

    return RowSet(hits, make, _summary_path, two_lines=hit_has_snippet, total=total, index_later=True)
