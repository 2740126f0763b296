"""From summaries (and search hits) to the rows the session list draws, in each sort order.

Sort orders follow pi's picker: *threaded* shows forks under their parent session (via the
header's `parentSession`), *recent* is last activity first, *created* is creation time first,
*relevance* is the search ranking (recent when there is no query).  With a query, threaded
becomes relevance, as in pi: the tree is dropped while searching.  The child-session mode
(`seance.core.listing.CHILD_MODES`) says whether child sessions are hidden, drawn under their
parent or listed flat (`listing.arrange`).  No Textual here: the widget draws these rows,
`PickerModel` makes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seance.core import listing
from seance.core.model import SessionSummary


@dataclass(frozen=True, slots=True, eq=False)
class SessionRow:
    """One session as the list shows it: the summary, its fork prefix, and the search hit.

    `hit` (a `seance.core.search.Hit`) is kept whole: highlight spans and the full-text
    snippet are computed only when the row is drawn.
    """

    summary: SessionSummary
    prefix: str = ""  # threaded sort: "├─ " / "│  └─ " ...
    hit: Any = None
    children: int = 0  # child sessions not drawn under this row: the row says "3 children"

    @property
    def path(self) -> str:
        return self.summary.path

    @property
    def has_snippet(self) -> bool:
        return self.hit is not None and self.hit.tier == "full-text"

    @property
    def height(self) -> int:
        return 2 if self.has_snippet else 1

    def title_spans(self) -> list[tuple[int, int]]:
        return self.hit.title_spans() if self.hit is not None else []

    def snippet(self) -> tuple[str, tuple[tuple[int, int], ...]]:
        found = self.hit.snippet() if self.has_snippet else None
        return (found.text, tuple(found.spans)) if found is not None else ("", ())


def threaded(summaries: Sequence[SessionSummary]) -> list[SessionRow]:
    """pi's fork tree as rows, with the `├─ ` / `└─ ` / `│  ` prefix drawn before each fork."""
    return [SessionRow(row.summary, prefix=row.prefix) for row in listing.threaded(summaries)]


def plain_rows(
    summaries: Sequence[SessionSummary], sort: str, children: listing.ChildMode = "threaded"
) -> list[SessionRow]:
    """Rows for an empty query."""
    return [
        SessionRow(row.summary, prefix=row.prefix, children=row.children)
        for row in listing.arrange(summaries, sort, children)
    ]


def hit_rows(
    hits: Sequence[Any],
    sort: str,
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
    counts = listing.descendants(parent_of) if parent_of and children != "threaded" else {}
    return [SessionRow(hit.summary, hit=hit, children=counts.get(hit.summary.path, 0)) for hit in hits]
