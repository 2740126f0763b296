"""Orders of the session list and its child sessions, shared by `seance ls` and the picker.

*recent* is last activity first, *created* is creation time first, *threaded* is pi's fork
tree: child sessions under their parent, roots and children newest first.  A fork whose
parent is not listed is a root; a `parentSession` cycle (a corrupt header) is broken, never
followed forever.

A session's parent, the first that names a listed session:

1. its folder: a file inside another session's own folder (`X/…/c.jsonl` under `X.jsonl`,
   nearest first) — oh-my-pi's subagents (`X/Alpha.jsonl`, `X/Alpha/Alpha.Gamma.jsonl`)
   and advisors (`X/__advisor.jsonl`), pi subagent extensions' `X/<run>/run-0/session.jsonl`;
2. its header's `parentSession`: pi writes the parent's path (a fork, `newSession({parentSession})`),
   oh-my-pi the parent's id; a path from another machine or an older home still finds the
   file by its last two components (bucket and name) or by the id in pi's `<ts>_<id>.jsonl`.

Pinned sessions (`core.marks`) come first in every order: `pinned_first` moves them up,
keeping the order within the pinned and the unpinned; in *threaded* a pinned session's
whole thread goes first, and pinned forks lead their siblings (a fork stays under its
parent, so the thread still reads as one).

`CHILD_MODES` say how child sessions are listed: *hidden* (only sessions without a listed
parent; each says how many it hides), *threaded* (pi's picker: under their parent in the
threaded sort) or *flat* (ordinary rows, never indented, each parent saying how many it has).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .childmodes import CHILD_MODES, ChildMode
from .childmodes import child_mode as child_mode  # (its home: the CLI reads it without the listing)
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


# What users expect (pi #9847: subagent and fork sessions flood the list; oh-my-pi never lists its
# subagents): hidden, each parent saying how many it has.  `seance ls` keeps pi's list() (flat).
DEFAULT_CHILD_MODE: ChildMode = "hidden"
MAX_FOLDER_DEPTH = 9  # a child file at most this many directories below its parent's folder name


def next_child_mode(mode: ChildMode) -> ChildMode:
    return CHILD_MODES[(CHILD_MODES.index(mode) + 1) % len(CHILD_MODES)]


def children_label(count: int) -> str:
    """What a parent's row says about its child sessions: "1 child", "3 children"."""
    return f"{count} child" if count == 1 else f"{count} children"


def by_recent(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: summary.modified_ms, reverse=True)


def by_created(summaries: Iterable[SessionSummary]) -> list[SessionSummary]:
    return sorted(summaries, key=lambda summary: (summary.created or summary.modified, summary.path), reverse=True)


@dataclass(frozen=True, slots=True)
class ThreadedRow:
    summary: SessionSummary
    depth: int
    prefix: str  # "├─ " / "└─ " after "│  " bars of the ancestors; "" for a root
    children: int = 0  # child sessions (all descendants) not drawn under this row: "3 children"


def _tail(path: str, parts: int) -> str:
    """The last `parts` components of a path, either separator (a header may come from Windows)."""
    pieces = path.replace("\\", "/").rstrip("/").split("/")
    return "/".join(pieces[-parts:])


def folder_parent(path: str, listed: Container[str]) -> str | None:
    """The listed session whose own folder holds `path` (`X/…/c.jsonl` → `X.jsonl`), nearest first."""
    return _folder_session(os.path.dirname(path), listed)


def _folder_session(directory: str, listed: Container[str]) -> str | None:
    """The listed session `directory` (or the nearest of its ancestors) is the own folder of."""
    for _ in range(MAX_FOLDER_DEPTH):
        candidate = directory + ".jsonl"
        if candidate in listed:
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return None


class _Keys:
    """Lookups from a `parentSession` value to a listed session's path."""

    def __init__(self, summaries: Sequence[SessionSummary]) -> None:
        self.summaries = summaries
        self.paths: dict[str, SessionSummary] = {summary.path: summary for summary in summaries}
        self.ids: dict[str, str] = {}
        for summary in summaries:
            if summary.id:
                self.ids.setdefault(summary.id, summary.path)
        self._tails: dict[str, str | None] | None = None  # built when a path is not found as it is

    def tails(self) -> dict[str, str | None]:
        """bucket/file name -> path (None: two listed files share it, ambiguous)."""
        if self._tails is None:
            self._tails = {}
            for summary in self.summaries:
                tail = _tail(summary.path, 2)
                self._tails[tail] = None if tail in self._tails else summary.path
        return self._tails

    def find(self, reference: str | None) -> str | None:
        if not reference:
            return None
        if reference in self.paths:
            return reference
        found = self.ids.get(reference)
        if found is not None or not reference.endswith(".jsonl"):
            return found
        found = self.tails().get(_tail(reference, 2))
        if found is not None:
            return found
        head, separator, file_id = _tail(reference, 1).removesuffix(".jsonl").rpartition("_")
        return self.ids.get(file_id) if separator and head else None


def parents(summaries: Sequence[SessionSummary]) -> dict[str, str]:
    """path -> parent path, for the child sessions whose parent is listed (cycles cut)."""
    keys = _Keys(summaries)
    parent_of: dict[str, str] = {}
    folders: dict[str, str | None] = {}  # directory -> its session: ten thousand files share a few buckets
    for summary in summaries:
        directory = summary.path.rpartition(os.sep)[0]  # os.path.dirname, at a third of the cost
        if directory in folders:
            parent = folders[directory]
        else:
            parent = folders[directory] = _folder_session(directory, keys.paths)
        parent = parent or keys.find(summary.parent_session)
        if parent is not None and parent != summary.path:
            parent_of[summary.path] = parent
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


def descendants(parent_of: dict[str, str]) -> dict[str, int]:
    """path -> how many child sessions (children, their children...) it has, without recursion."""
    kids: dict[str, list[str]] = {}
    for child, parent in parent_of.items():
        kids.setdefault(parent, []).append(child)
    counts: dict[str, int] = {}
    for top in kids:
        if top in parent_of:
            continue  # counted from its root
        order: list[str] = []
        stack = [top]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(kids.get(node, ()))
        for node in reversed(order):  # children before their parent
            below = kids.get(node)
            if below:
                counts[node] = sum(1 + counts.get(child, 0) for child in below)
    return counts


def threaded(
    summaries: Sequence[SessionSummary], pinned: Pinned | None = None, *, parent_of: dict[str, str] | None = None
) -> list[ThreadedRow]:
    """pi's threaded order: children under their parent, roots and children most recent first,
    iteratively (a long fork chain needs no recursion); with `pinned`, threads holding a pinned
    session first, and pinned forks first among siblings."""
    if parent_of is None:
        parent_of = parents(summaries)
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
        kids = children.get(summary.path)
        if not kids:  # most rows: no sort of an empty group (100,000 of them in the all-projects list)
            continue
        kids = order(kids)
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


def arrange(
    summaries: Sequence[SessionSummary],
    sort: str,
    children: ChildMode = "threaded",
    pinned: Pinned | None = None,
) -> list[ThreadedRow]:
    """The rows of a listing without a query: `sort` orders them, `children` says how child
    sessions appear: *threaded* is pi's picker (the threaded sort draws them under their parent,
    the other sorts list them as they come), *flat* never draws the tree (the threaded sort is
    then most recent first), *hidden* lists only sessions without a listed parent.  Outside
    *threaded*, a row counts its child sessions ("3 children").  Pinned sessions come first."""
    parent_of = parents(summaries)
    if children == "threaded":
        if sort == "threaded":
            return threaded(summaries, pinned, parent_of=parent_of)
        counts: dict[str, int] = {}
    else:
        counts = descendants(parent_of)
    if children == "hidden":
        summaries = [summary for summary in summaries if summary.path not in parent_of]
    ordered = pinned_first(by_created(summaries) if sort == "created" else by_recent(summaries), pinned)
    return [ThreadedRow(summary, 0, "", counts.get(summary.path, 0)) for summary in ordered]
