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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seance.core import listing
from seance.core.listing import pinned_first
from seance.core.marks import NO_MARK, Mark
from seance.core.model import SessionSummary

FIRST_MESSAGE_LABEL = "first message: "
Marks = Mapping[str, Mark]  # session id -> marks


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
        """A second line says why the session matched: a full-text hit, or a hit in the first
        message of a session whose row shows its name."""
        return self.hit is not None and (self.hit.tier == "full-text" or self.hit.in_hidden_first_message)

    @property
    def height(self) -> int:
        return 2 if self.has_snippet else 1

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
) -> list[SessionRow]:
    """Rows for an empty query."""
    return [
        SessionRow(row.summary, prefix=row.prefix, mark=mark_of(row.summary, marks), children=row.children)
        for row in listing.arrange(summaries, sort, children, _pinned(marks))
    ]


def hit_rows(
    hits: Sequence[Any],
    sort: str,
    marks: Marks | None = None,
    children: listing.ChildMode = "threaded",
    parent_of: dict[str, str] | None = None,
) -> list[SessionRow]:
    """Rows for search hits (already ranked by relevance); recent/created re-order them.

    `parent_of` (`listing.parents` of every listed session): hidden children are left out, and
    outside *threaded* a hit says how many child sessions it has."""
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
    return [
        SessionRow(hit.summary, hit=hit, mark=mark_of(hit.summary, marks), children=counts.get(hit.summary.path, 0))
        for hit in hits
    ]
