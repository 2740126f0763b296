"""Orders of the session list, shared by `seance ls` and the picker.

*recent* is last activity first, *created* is creation time first, *threaded* is pi's fork
tree: forks under the session named by their header's `parentSession` (a path, or for
oh-my-pi an id), roots and children newest first.  A fork whose parent is not listed is a
root; a `parentSession` cycle (a corrupt header) is broken, never followed forever.

Pinned sessions (`core.marks`) come first in every order: `pinned_first` moves them up,
keeping the order within the pinned and the unpinned; in *threaded* a pinned session's
whole thread goes first, and pinned forks lead their siblings (a fork stays under its
parent, so the thread still reads as one).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .model import SessionSummary

# Every order, in the picker's Ctrl+S cycle (pi's threaded first); `ls --sort` offers the same.
SORTS = ("threaded", "recent", "created", "relevance")

T = TypeVar("T")
Pinned = Callable[[SessionSummary], bool]  # is this session pinned?


def pinned_first(items: Iterable[T], pinned: Callable[[T], bool] | None) -> list[T]:
    """`items` with the pinned ones first; each part keeps its order (no pins: unchanged)."""
    items = list(items)
    if pinned is None:
        return items
    ahead = [item for item in items if pinned(item)]
    if not ahead:
        return items
    return ahead + [item for item in items if not pinned(item)]


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


def threaded(summaries: Sequence[SessionSummary], pinned: Pinned | None = None) -> list[ThreadedRow]:
    """pi's threaded order, iteratively (a long fork chain needs no recursion); with
    `pinned`, threads holding a pinned session first, and pinned forks first among siblings."""
    parent_of = _parents(summaries)
    children: dict[str, list[SessionSummary]] = {}
    roots: list[SessionSummary] = []
    for summary in summaries:
        parent = parent_of.get(summary.path)
        if parent is None:
            roots.append(summary)
        else:
            children.setdefault(parent, []).append(summary)
    lead = _leads(summaries, parent_of, pinned) if pinned is not None else None

    def order(group: Iterable[SessionSummary]) -> list[SessionSummary]:
        return pinned_first(by_recent(group), None if lead is None else lambda summary: summary.path in lead)

    rows: list[ThreadedRow] = []
    seen: set[str] = set()
    stack: list[tuple[SessionSummary, str, bool, int]] = [(root, "", True, 0) for root in reversed(order(roots))]
    while stack:
        summary, bars, is_last, depth = stack.pop()
        if summary.path in seen:  # the same file listed twice
            continue
        seen.add(summary.path)
        prefix = "" if depth == 0 else bars + ("└─ " if is_last else "├─ ")
        rows.append(ThreadedRow(summary, depth, prefix))
        kids = order(children.get(summary.path, ()))
        child_bars = "" if depth == 0 else bars + ("   " if is_last else "│  ")
        for index in range(len(kids) - 1, -1, -1):
            stack.append((kids[index], child_bars, index == len(kids) - 1, depth + 1))
    return rows


def _leads(summaries: Sequence[SessionSummary], parent_of: dict[str, str], pinned: Pinned) -> set[str]:
    """Paths of the pinned sessions and of every ancestor of one (what goes first in threaded)."""
    lead: set[str] = set()
    for summary in summaries:
        if pinned(summary):
            node: str | None = summary.path
            while node is not None and node not in lead:  # parent_of has no cycles left
                lead.add(node)
                node = parent_of.get(node)
    return lead
