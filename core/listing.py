"""Orders of the session list, shared by `seance ls` and the picker.

*recent* is last activity first, *created* is creation time first, *threaded* is pi's fork
tree: forks under the session named by their header's `parentSession` (a path, or for
oh-my-pi an id), roots and children newest first.  A fork whose parent is not listed is a
root; a `parentSession` cycle (a corrupt header) is broken, never followed forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .model import SessionSummary

# Every order, in the picker's Ctrl+S cycle (pi's threaded first); `ls --sort` offers the same.
SORTS = ("threaded", "recent", "created", "relevance")


def by_recent(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: summary.modified_ms, reverse=True)


def by_created(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: (summary.created or summary.modified, summary.path), reverse=True)


@dataclass(frozen=True, slots=True)
class ThreadedRow:
    summary: SessionSummary
    depth: int
    prefix: str  # "├─ " / "└─ " after "│  " bars of the ancestors; "" for a root


def _parents(summaries: Sequence[SessionSummary]) -> dict[str, str]:
    """path -> parent path, for the forks whose parent is in the list (cycles cut)."""
    by_key: dict[str, SessionSummary] = {}
    for summary in summaries:
        by_key[summary.path] = summary
    for summary in summaries:
        by_key.setdefault(summary.id, summary)
    parent_of: dict[str, str] = {}
    for summary in summaries:
        parent = by_key.get(summary.parent_session or "")
        if parent is not None and parent.path != summary.path:
            parent_of[summary.path] = parent.path
    for start in list(parent_of):  # cut each cycle at the node where it is found
        seen = {start}
        node = parent_of.get(start)
        while node is not None:
            if node in seen:
                parent_of.pop(start, None)
                break
            seen.add(node)
            node = parent_of.get(node)
    return parent_of


def threaded(summaries: Sequence[SessionSummary]) -> list[ThreadedRow]:
    """pi's threaded order, iteratively (a long fork chain needs no recursion)."""
    parent_of = _parents(summaries)
    children: dict[str, list[SessionSummary]] = {}
    roots: list[SessionSummary] = []
    for summary in summaries:
        parent = parent_of.get(summary.path)
        if parent is None:
            roots.append(summary)
        else:
            children.setdefault(parent, []).append(summary)
    rows: list[ThreadedRow] = []
    seen: set[str] = set()
    stack: list[tuple[SessionSummary, str, bool, int]] = [(root, "", True, 0) for root in reversed(by_recent(roots))]
    while stack:
        summary, bars, is_last, depth = stack.pop()
        if summary.path in seen:  # the same file listed twice
            continue
        seen.add(summary.path)
        prefix = "" if depth == 0 else bars + ("└─ " if is_last else "├─ ")
        rows.append(ThreadedRow(summary, depth, prefix))
        kids = by_recent(children.get(summary.path, ()))
        child_bars = "" if depth == 0 else bars + ("   " if is_last else "│  ")
        for index in range(len(kids) - 1, -1, -1):
            stack.append((kids[index], child_bars, index == len(kids) - 1, depth + 1))
    return rows
