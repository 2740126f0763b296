"""The entry tree: parents, children, roots, leaf, labels — with pi's rules, no recursion.

pi's `getTree()`: an entry whose `parentId` is null, equal to its own id, or names a
missing entry is a root; roots keep file order; children are sorted oldest first by
timestamp (stable, so ties keep file order); the latest `label` entry per target wins and
one without a label clears it.  On top of that seance breaks parent cycles (which pi
would loop on) and reports them, so every entry is reachable exactly once.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, pairwise, repeat
from typing import Any, NamedTuple

from .entries import ById, Entries
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


_chain_positions: array = array("q")


def chain_positions(count: int) -> array:
    """`array("q", range(-1, count - 1))`: the `up` column of a chain of `count` entries
    (each under the one before it).  Made once per count (the reader copies it, the tree
    compares with it: on hundreds of thousands of entries each making costs milliseconds)
    and SHARED: never changed in place (copy it, `[:]`, to edit)."""
    global _chain_positions
    made = _chain_positions
    if len(made) != count:
        made = array("q")
        for start in range(-1, count - 1, 1 << 16):  # (from lists, a piece at a time: twice as fast as from
            made.fromlist(list(range(start, min(start + (1 << 16), count - 1))))  # the range, no big list)
        _chain_positions = made
    return made


class TreeIndex(NamedTuple):
    """What a reader that checked every entry already knows for the tree."""

    positions: Mapping[str, int]  # id → its position in the entries, in entry order, one per id
    suspects: list[str]  # ids (in entry order) whose parent is junk, themselves, or not before them
    has_labels: bool  # whether any `label` entry exists
    up: array  # per position: its parent's position when that comes before it, else -1


class SessionTree:
    """Index over a session's entries (already normalised and migrated).

    Works on the entries' columns (`Entries`: ids, parents, types), so no entry is decoded
    to place it; `by_id` decodes an entry when asked for.  Built in at most one pass that
    keeps no per-entry structure but the id → position map: `show` follows parents from the
    leaf and needs nothing else.  The parent and children maps (`parent`, `children`,
    `roots`) are built on first use, for the tree views.  A reader that already checked the
    entries hands over a `TreeIndex` and no pass is made at all.
    """

    def __init__(self, entries: Iterable[dict[str, Any]], index: TreeIndex | None = None) -> None:
        self.entries = entries = Entries.of(entries)
        self._ids, self._parents, self._types = entries.ids, entries.parents, entries.types
        self.labels: dict[str, str] = {}
        self.label_times: dict[str, Any] = {}  # the label entry's timestamp, as written
        self.problems: list[str] = []
        # Entries shown as roots although their parentId names something: junk, themselves,
        # a missing entry, or the entry where a parent cycle is cut.
        self._rooted: dict[str, None] = {}
        if index is None:
            index = self._index()
        self.positions: Mapping[str, int] = index.positions
        self.by_id = ById(index.positions, entries)
        # Per position, where its placed parent is (-1 for a root): walks up need no lookups.
        self._up = up = index.up
        positions, parents = index.positions, self._parents
        forward = False
        for entry_id in dict.fromkeys(index.suspects):  # in entry order, as pi reports nothing and we say why
            parent = parents[positions[entry_id]]
            if parent.__class__ is not str:  # junk from a caller that did not check
                pass
            elif parent == entry_id:
                self.problems.append(f"entry {entry_id} is its own parent; shown as a root")
            elif parent not in positions:
                self.problems.append(f"entry {entry_id}: parent {parent} is missing; shown as a root")
            else:
                forward = True  # a parent after its child: parents may form a cycle
                up[positions[entry_id]] = positions[parent]
                continue
            self._rooted[entry_id] = None
            up[positions[entry_id]] = -1
        labels_seen = index.has_labels
        if labels_seen:
            self._read_labels()
        self.leaf_id: str | None = self._find_leaf()
        if forward:  # with every parent before its child, parents strictly precede: no cycle
            self._break_cycles()

    # -- building ---------------------------------------------------------------------

    def _index(self) -> TreeIndex:
        """The one pass over entries nobody checked: ids, labels, and suspect parents."""
        positions: dict[str, int] = {}
        suspects: list[str] = []
        for position, (entry_id, parent) in enumerate(zip(self._ids, self._parents, strict=True)):
            positions[entry_id] = position
            if parent is not None and (parent.__class__ is not str or parent == entry_id or parent not in positions):
                suspects.append(entry_id)
        find = positions.get
        up = array("q", (-1 if parent.__class__ is not str else find(parent, -1) for parent in self._parents))
        return TreeIndex(positions, suspects, "label" in self._types, up)

    def _read_labels(self) -> None:
        """The latest `label` entry per target wins; one without a label clears it."""
        for entry in self.entries.where(("label",)):
            target = entry.get("targetId")
            label = entry.get("label")
            if isinstance(target, str):
                if isinstance(label, str) and label:
                    self.labels[target] = label
                    self.label_times[target] = entry.get("timestamp")
                else:
                    self.labels.pop(target, None)
                    self.label_times.pop(target, None)

    def _find_leaf(self) -> str | None:
        """The last entry, or the target of a last `leaf` entry (the Python port's durable
        leaf pointer) when that names an entry."""
        if not self._ids:
            return None
        if self._types[-1] == "leaf":
            target = self.entries[-1].get("targetId")
            if isinstance(target, str) and target in self.positions:
                return target
        return self._ids[-1]

    def _parent_of(self, entry_id: str) -> str | None:
        return None if entry_id in self._rooted else self._parents[self.positions[entry_id]]

    def _break_cycles(self) -> None:
        """Cut every parent cycle at its entry that comes first, and say so.

        Entries are walked up in order until a walk meets an entry already settled (it
        leads to a root) or comes back onto itself: that loop is a cycle.  The first entry
        (in order) that leads into a cycle names it from where its walk entered the loop.
        """
        order = {entry_id: index for index, entry_id in enumerate(self.positions)}
        settled: set[str] = set()
        for entry_id in self.positions:
            walk: list[str] = []
            on_walk: set[str] = set()
            node: str | None = entry_id
            while node is not None and node not in settled and node not in on_walk:
                walk.append(node)
                on_walk.add(node)
                node = self._parent_of(node)
            if node is not None and node in on_walk:
                cycle = walk[walk.index(node) :]
                cut = min(cycle, key=order.__getitem__)
                self._rooted[cut] = None
                self._up[self.positions[cut]] = -1
                self.problems.append(f"entries {' → '.join(cycle)} form a parent cycle; {cut} is shown as a root")
            settled.update(walk)

    @cached_property
    def parent(self) -> dict[str, str | None]:
        """Entry id → the parent it is placed under (None for a root)."""
        rooted, parents = self._rooted, self._parents
        return {
            entry_id: None if entry_id in rooted else parents[position] for entry_id, position in self.positions.items()
        }

    @cached_property
    def children(self) -> Children:
        """Entry id → its children's ids, oldest first (stable: ties keep entry order)."""
        self._place()
        return self.__dict__["children"]

    @cached_property
    def roots(self) -> list[str]:
        """Entries without a (placeable) parent, in entry order."""
        self._place()
        return self.__dict__["roots"]

    @cached_property
    def is_chain(self) -> bool:
        """Whether the entries form one chain in file order (each placed under the entry just
        before it): most sessions, whose pre-order is then the entry order itself."""
        count = len(self._ids)
        return len(self.positions) == count and self._up == chain_positions(count)

    def _place(self) -> None:
        if self.is_chain:  # (no lookups: each entry's only child is the next one)
            ids = self._ids
            self.__dict__["children"] = Children(dict(pairwise(ids)), {})
            self.__dict__["roots"] = ids[:1]
            return
        positions, rooted, parents = self.positions, self._rooted, self._parents
        only: dict[str, str] = {}  # parent → its first child (all most parents have)
        many: dict[str, list[str]] = {}  # parent → all its children, where more than one
        roots: list[str] = []
        for entry_id, position in positions.items():  # the hot loop: millions of entries
            parent = parents[position]
            if parent is None or entry_id in rooted:
                roots.append(entry_id)
                continue
            first = only.setdefault(parent, entry_id)
            if first is not entry_id:  # a second child (ids are distinct objects: by_id's keys)
                kids = many.get(parent)
                if kids is None:
                    many[parent] = [first, entry_id]
                else:
                    kids.append(entry_id)
        by_id = self.by_id
        for kids in many.values():  # only branch points need timestamps parsed (and their entries decoded)
            kids.sort(key=lambda kid: timestamp_ms(by_id[kid].get("timestamp")))
        self.__dict__["children"] = Children(only, many)
        self.__dict__["roots"] = roots

    # -- queries ----------------------------------------------------------------------

    def get(self, entry_id: str) -> dict[str, Any] | None:
        return self.by_id.get(entry_id)

    def label(self, entry_id: str) -> str | None:
        return self.labels.get(entry_id)

    def kids(self, entry_id: str | None) -> list[str]:
        """Children ids of an entry (or the roots for None), oldest first."""
        return self.roots if entry_id is None else self.children.get(entry_id, [])

    def type_of(self, entry_id: str) -> Any:
        """An entry's `type` (from the column: nothing decoded)."""
        return self._types[self.positions[entry_id]]

    def path_positions(self, entry_id: str | None) -> Iterator[int]:
        """The positions (in `entries`) from `entry_id` up to its root along the placed
        parents (none for an unknown id): the one walk up every path question is answered by,
        without decoding an entry."""
        position = self.positions.get(entry_id, -1) if entry_id is not None else -1
        if self.is_chain:  # every entry under the one before it: the positions themselves
            yield from range(position, -1, -1)
            return
        up = self._up
        while position >= 0:  # millions of steps on a long chain
            yield position
            position = up[position]

    def walk_up(self, entry_id: str | None) -> Iterator[dict[str, Any]]:
        """The entries from `entry_id` up to its root along the placed parents (each decoded:
        a caller that needs only some uses `path_positions` and the columns)."""
        entries = self.entries
        return (entries[position] for position in self.path_positions(entry_id))

    def path_to(self, entry_id: str | None) -> list[dict[str, Any]]:
        """Root → entry along the placed parents (cycle-free once cycles are cut)."""
        path = list(self.walk_up(entry_id))
        path.reverse()
        return path

    def ancestors(self, entry_id: str) -> set[str]:
        """Ids on the path root → entry, the entry included."""
        ids = self._ids
        return {ids[position] for position in self.path_positions(entry_id)}

    def branch_choices(self, entry_id: str) -> dict[str | None, str]:
        """Along the path root → `entry_id`: each entry with several children → the child
        on the path, and None → the path's root (empty for an unknown id).  No set of every
        id on the path: what the tree view needs to put the leaf's branch first."""
        many = self.children.many
        ids, parents = self._ids, self._parents
        choices: dict[str | None, str] = {}
        node: str | None = None
        for position in self.path_positions(entry_id):
            node = ids[position]
            parent = parents[position]
            if parent in many and node not in self._rooted:
                choices[parent] = node
        if node is not None:
            choices[None] = node
        return choices

    def parent_of(self, entry_id: str) -> str | None:
        """The id an entry is placed under (None for a root or an unknown id): `parent.get`
        without building the map of every entry's parent."""
        position = self.positions.get(entry_id)
        if position is None or entry_id in self._rooted:
            return None
        return self._parents[position]  # type: ignore[no-any-return]

    def preorder(self, roots: list[str] | None = None) -> Iterator[tuple[str, int]]:
        """Depth-first pre-order over (id, depth), children oldest first."""
        return ((entry_id, depth) for entry_id, depth, _parent in self.walk(roots))

    def walk(
        self, roots: list[str] | None = None, *, flat_chains: bool = False, first_depth: int = 0
    ) -> Iterator[tuple[str, int, str | None]]:
        """Depth-first pre-order over (id, depth, parent id), children oldest first.

        With `flat_chains`, depth counts only branch points above an entry (pi's /tree: a
        single-child chain stays flat, a fork indents its children).  Roots are at
        `first_depth`.
        """
        step = 0 if flat_chains else 1
        if roots is None and self.is_chain:
            return self._walk_chain(step, first_depth)
        return self._walk(roots, step, first_depth)

    def _walk_chain(self, step: int, first_depth: int) -> Iterator[tuple[str, int, str | None]]:
        ids = self._ids
        if step:
            return zip(ids, range(first_depth, first_depth + len(ids)), chain((None,), ids), strict=False)
        return zip(ids, repeat(first_depth), chain((None,), ids), strict=False)

    def _walk(self, roots: list[str] | None, step: int, first_depth: int) -> Iterator[tuple[str, int, str | None]]:
        children = self.children
        only, many = children.only, children.many
        stack: list[tuple[str, int, str | None]] = [
            (entry_id, first_depth, None if roots is None else self._parent_of(entry_id))
            for entry_id in reversed(self.roots if roots is None else roots)
        ]
        while stack:
            entry_id, depth, parent = stack.pop()
            while True:  # down a chain of only children without the stack: most of a session
                yield entry_id, depth, parent
                kids = many.get(entry_id)
                if kids is not None:
                    stack.extend((kid, depth + 1, entry_id) for kid in reversed(kids))
                    break
                kid = only.get(entry_id)
                if kid is None:
                    break
                entry_id, depth, parent = kid, depth + step, entry_id

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
        return 0 if self.is_chain else len(self.children.many)  # (a chain: no children map made)


class Children(Mapping[str, list[str]]):
    """Entry id → its children's ids, oldest first, for entries that have any.

    Most entries of a session have one child: those are kept as one id each, not as a
    list each (millions of lists on a long chain); a lookup hands out a new one-item list.
    """

    __slots__ = ("many", "only")

    def __init__(self, only: dict[str, str], many: dict[str, list[str]]) -> None:
        self.only = only  # parent → first child (every parent is here)
        self.many = many  # parent → all children, sorted, where more than one

    def get(self, entry_id: Any, default: Any = None) -> Any:
        kids = self.many.get(entry_id)
        if kids is not None:
            return kids
        kid = self.only.get(entry_id)
        return default if kid is None else [kid]

    def __getitem__(self, entry_id: Any) -> list[str]:
        kids = self.get(entry_id)
        if kids is None:
            raise KeyError(entry_id)
        return kids

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.only

    def __iter__(self) -> Iterator[str]:
        return iter(self.only)

    def __len__(self) -> int:
        return len(self.only)
