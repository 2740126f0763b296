"""From summaries (and search hits) to the rows the session list draws, in each sort order.

Sort orders follow pi's picker: *threaded* shows forks under their parent session (via the
header's `parentSession`), *recent* is last activity first, *created* is creation time first,
*relevance* is the search ranking (recent when there is no query).  With a query, threaded
becomes relevance, as in pi: the tree is dropped while searching.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from seance.core.model import SessionSummary

from .widgets.session_list import SessionRow

SORTS = ("threaded", "recent", "created", "relevance")


def by_recent(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: summary.modified_ms, reverse=True)


def by_created(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: (summary.created or summary.modified, summary.path), reverse=True)


def threaded(summaries: Sequence[SessionSummary]) -> list[SessionRow]:
    """pi's fork tree: roots and children newest first; a fork whose parent is not listed is a root.

    The prefix draws `├─ ` / `└─ ` for a fork and a `│  ` bar for every non-root ancestor that
    has later siblings.  Cycles in `parentSession` (a corrupt header) are broken: such a
    session becomes a root.
    """
    by_path = {summary.path: summary for summary in summaries}
    children: dict[str, list[SessionSummary]] = {}
    roots: list[SessionSummary] = []
    for summary in summaries:
        parent = summary.parent_session
        if parent and parent in by_path and parent != summary.path and not _in_cycle(summary, by_path):
            children.setdefault(parent, []).append(summary)
        else:
            roots.append(summary)
    rows: list[SessionRow] = []
    # Iterative pre-order walk: (summary, bars of the ancestors, is_last, depth).
    stack: list[tuple[SessionSummary, str, bool, int]] = [(root, "", True, 0) for root in reversed(by_recent(roots))]
    while stack:
        summary, bars, is_last, depth = stack.pop()
        prefix = "" if depth == 0 else bars + ("└─ " if is_last else "├─ ")
        rows.append(SessionRow(summary, prefix=prefix))
        kids = by_recent(children.get(summary.path, ()))
        child_bars = "" if depth == 0 else bars + ("   " if is_last else "│  ")
        for index in range(len(kids) - 1, -1, -1):
            stack.append((kids[index], child_bars, index == len(kids) - 1, depth + 1))
    return rows


def _in_cycle(summary: SessionSummary, by_path: dict[str, SessionSummary]) -> bool:
    """True if following `parent_session` from `summary` comes back to it."""
    seen = {summary.path}
    parent = summary.parent_session
    while parent and parent in by_path:
        if parent in seen:
            return True
        seen.add(parent)
        parent = by_path[parent].parent_session
    return False


def plain_rows(summaries: Sequence[SessionSummary], sort: str) -> list[SessionRow]:
    """Rows for an empty query."""
    if sort == "threaded":
        return threaded(summaries)
    ordered = by_created(summaries) if sort == "created" else by_recent(summaries)
    return [SessionRow(summary) for summary in ordered]


def hit_rows(hits: Sequence[Any], sort: str) -> list[SessionRow]:
    """Rows for search hits (already ranked by relevance); recent/created re-order them."""
    if sort == "recent":
        hits = sorted(hits, key=lambda hit: hit.summary.modified_ms, reverse=True)
    elif sort == "created":
        hits = sorted(hits, key=lambda hit: (hit.summary.created or hit.summary.modified, hit.summary.path),
                      reverse=True)
    return [SessionRow(hit.summary, hit=hit) for hit in hits]
