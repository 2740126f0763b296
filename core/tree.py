"""The entry tree: parents, children, roots, leaf, labels — with pi's rules, no recursion.

pi's `getTree()`: an entry whose `parentId` is null, equal to its own id, or names a
missing entry is a root; roots keep file order; children are sorted oldest first by
timestamp (stable, so ties keep file order); the latest `label` entry per target wins and
one without a label clears it.  On top of that seance breaks parent cycles (which pi
would loop on) and reports them, so every entry is reachable exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .timefmt import parse_time_ms

_INFINITY = float("inf")


def timestamp_ms(value: Any) -> float:
    """Milliseconds since the epoch for an ISO string (pi's `new Date(ts).getTime()`)."""
    ms = parse_time_ms(value)
    return _INFINITY if ms is None else float(ms)


@dataclass(slots=True)
class TreeNode:
    """One entry placed in the tree, with its resolved label."""

    entry: dict[str, Any]
    parent_id: str | None
    label: str | None
    children: list[TreeNode] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.entry["id"]


class SessionTree:
    """Index over a session's entries (already normalised and migrated)."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.by_id: dict[str, dict[str, Any]] = {}
        self.labels: dict[str, str] = {}
        self.label_times: dict[str, Any] = {}  # the label entry's timestamp, as written
        self.problems: list[str] = []
        self.leaf_id: str | None = None
        for entry in entries:
            entry_id = entry["id"]
            self.by_id[entry_id] = entry
            kind = entry.get("type")
            if kind == "leaf":  # the Python port's durable leaf pointer
                target = entry.get("targetId")
                self.leaf_id = target if isinstance(target, str) and target in self.by_id else entry_id
            else:
                self.leaf_id = entry_id
            if kind == "label":
                target = entry.get("targetId")
                label = entry.get("label")
                if isinstance(target, str):
                    if isinstance(label, str) and label:
                        self.labels[target] = label
                        self.label_times[target] = entry.get("timestamp")
                    else:
                        self.labels.pop(target, None)
                        self.label_times.pop(target, None)
        self.parent: dict[str, str | None] = {}
        self.children: dict[str | None, list[str]] = {}
        self.roots: list[str] = []
        self._place()

    # -- building ---------------------------------------------------------------------

    def _place(self) -> None:
        by_id = self.by_id
        parents = self.parent
        children = self.children
        roots = self.roots
        forward = False
        for entry_id, entry in by_id.items():  # the hot loop: millions of entries
            parent = entry.get("parentId")
            if parent.__class__ is not str:  # null (or, from a caller that did not check, junk)
                parents[entry_id] = None
                roots.append(entry_id)
            elif parent == entry_id or parent not in by_id:
                if parent == entry_id:
                    self.problems.append(f"entry {entry_id} is its own parent; shown as a root")
                else:
                    self.problems.append(f"entry {entry_id}: parent {parent} is missing; shown as a root")
                parents[entry_id] = None
                roots.append(entry_id)
            else:
                if parent not in parents:  # a parent placed after its child: a cycle is possible
                    forward = True
                parents[entry_id] = parent
                kids = children.get(parent)
                if kids is None:
                    children[parent] = [entry_id]
                else:
                    kids.append(entry_id)
        if forward:  # with every parent before its child, parents strictly precede: no cycle
            self._break_cycles()
        for kids in children.values():
            if len(kids) > 1:  # only branch points need timestamps parsed
                kids.sort(key=lambda kid: timestamp_ms(by_id[kid].get("timestamp")))

    def _break_cycles(self) -> None:
        """Entries not reachable from a root sit on or under a parent cycle: cut each cycle."""
        # Every entry has one parent, so a walk down from the roots meets each reachable
        # entry once: counting them tells whether a cycle exists, without a set of millions.
        if sum(1 for _node in self._reach(self.roots)) == len(self.by_id):
            return
        order = {entry_id: index for index, entry_id in enumerate(self.by_id)}
        reached = set(self._reach(self.roots))
        for entry_id in list(self.by_id):
            if entry_id in reached:
                continue
            # Walk up until a node repeats: that node is on the cycle.
            seen: list[str] = []
            seen_set: set[str] = set()
            node: str | None = entry_id
            while node is not None and node not in seen_set and node not in reached:
                seen.append(node)
                seen_set.add(node)
                node = self.parent.get(node)
            if node is None or node in reached:
                continue  # pragma: no cover - defensive; would have been reachable
            cycle = seen[seen.index(node) :]
            cut = min(cycle, key=order.__getitem__)
            old_parent = self.parent[cut]
            self.children[old_parent].remove(cut)
            self.parent[cut] = None
            self.roots.append(cut)
            self.problems.append(f"entries {' → '.join(cycle)} form a parent cycle; {cut} is shown as a root")
            reached.update(self._reach([cut]))
        self.roots.sort(key=order.__getitem__)

    def _reach(self, starts: list[str]) -> Iterator[str]:
        stack = list(starts)
        while stack:
            node = stack.pop()
            yield node
            stack.extend(self.children.get(node, ()))

    # -- queries ----------------------------------------------------------------------

    def get(self, entry_id: str) -> dict[str, Any] | None:
        return self.by_id.get(entry_id)

    def label(self, entry_id: str) -> str | None:
        return self.labels.get(entry_id)

    def kids(self, entry_id: str | None) -> list[str]:
        """Children ids of an entry (or the roots for None), oldest first."""
        return self.roots if entry_id is None else self.children.get(entry_id, [])

    def path_to(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Root → entry along the placed parents (cycle-free by construction)."""
        path: list[dict[str, Any]] = []
        node = entry_id
        while node is not None and node in self.by_id:
            path.append(self.by_id[node])
            node = self.parent[node]
        path.reverse()
        return path

    def ancestors(self, entry_id: str) -> set[str]:
        """Ids on the path root → entry, the entry included."""
        return {entry["id"] for entry in self.path_to(entry_id)}

    def preorder(self, roots: list[str] | None = None) -> Iterator[tuple[str, int]]:
        """Depth-first pre-order over (id, depth), children oldest first."""
        stack = [(entry_id, 0) for entry_id in reversed(self.roots if roots is None else roots)]
        while stack:
            entry_id, depth = stack.pop()
            yield entry_id, depth
            kids = self.children.get(entry_id)
            if kids:
                stack.extend((kid, depth + 1) for kid in reversed(kids))

    def get_tree(self) -> list[TreeNode]:
        """The tree as nested nodes (pi's `getTree()`), built without recursion."""
        nodes = {
            entry_id: TreeNode(entry, self.parent[entry_id], self.labels.get(entry_id))
            for entry_id, entry in self.by_id.items()
        }
        for parent, kids in self.children.items():
            nodes[parent].children = [nodes[kid] for kid in kids]  # type: ignore[index]
        return [nodes[root] for root in self.roots]

    def branch_points(self) -> int:
        """How many entries have more than one child."""
        return sum(1 for kids in self.children.values() if len(kids) > 1)
