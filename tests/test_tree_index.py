"""The tree index a reader hands over (entries by id, and whether a parent comes after its
child) gives the same tree as one built from the entries alone, and `show` walks only the
path: the children maps of a session are built only when a tree view asks for them."""

from __future__ import annotations

from pathlib import Path

import orjson

from seance.core.context import build_session_context
from seance.core.session import Session, read_session
from seance.core.tree import SessionTree

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def _msg(entry_id: str, parent: object, ts: int) -> dict:
    stamp = f"2026-01-01T00:00:{ts:02d}.000Z"
    message = {"role": "user", "content": entry_id}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}


def _read(tmp_path: Path, entries: list[dict]) -> Session:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [HEADER, *entries]))
    session = read_session(path)
    assert isinstance(session, Session)
    return session


# Two cycles, each first reached (in file order) from an entry hanging below it, a self
# parent, a missing parent, a junk parent, a label, and a branch point sorted by time.
BROKEN = [
    _msg("root", None, 0),
    _msg("under-b", "b2", 1),  # leads into the b-cycle: names it from where it enters
    _msg("a1", "a2", 2),
    _msg("a2", "a1", 3),
    _msg("b1", "b3", 4),
    _msg("b2", "b1", 5),
    _msg("b3", "b2", 6),
    _msg("self", "self", 7),
    _msg("orphan", "nowhere", 8),
    _msg("junk", ["not", "an", "id"], 9),
    _msg("late", "root", 20),
    _msg("early", "root", 10),
    {"type": "label", "id": "l1", "parentId": "early", "targetId": "late", "label": "here", "timestamp": "x"},
]


def test_a_handed_over_index_gives_the_tree_built_from_entries_alone(tmp_path: Path) -> None:
    session = _read(tmp_path, BROKEN)
    assert session.tree_index is not None and session.tree_index.has_labels
    handed = session.tree
    alone = SessionTree(session.entries)
    assert handed.roots == alone.roots == ["root", "a1", "b1", "self", "orphan", "junk"]
    assert handed.parent == alone.parent and handed.children == alone.children
    assert handed.children["root"] == ["early", "late"]  # oldest first, not file order
    assert handed.problems == alone.problems
    cycles = [problem for problem in handed.problems if "cycle" in problem]
    assert cycles == [
        "entries b2 → b1 → b3 form a parent cycle; b1 is shown as a root",
        "entries a1 → a2 form a parent cycle; a1 is shown as a root",
    ]
    assert handed.labels == alone.labels == {"late": "here"}
    assert handed.leaf_id == alone.leaf_id == "l1"
    for entry_id in handed.by_id:
        assert handed.path_to(entry_id) == alone.path_to(entry_id)
    assert [entry["id"] for entry in handed.path_to("under-b")] == ["b1", "b2", "under-b"]


def test_a_clean_chain_needs_no_cycle_search(tmp_path: Path) -> None:
    session = _read(tmp_path, [_msg("a", None, 0), _msg("b", "a", 1), _msg("c", "b", 2)])
    assert session.tree_index is not None and session.tree_index.suspects == []
    assert [entry["id"] for entry in session.tree.path_to("c")] == ["a", "b", "c"]


def test_show_walks_only_the_path(tmp_path: Path) -> None:
    session = _read(tmp_path, [*BROKEN[:2], _msg("c", "root", 30), _msg("d", "c", 31)])
    context = build_session_context(session)
    assert [message.entry_id for message in context.messages] == ["root", "c", "d"]
    assert session.problems  # the missing parent "b2" is reported without a tree view
    built = session.tree.__dict__
    assert "children" not in built and "roots" not in built and "parent" not in built


def test_walk_gives_each_entry_its_placed_parent_and_only_forks_hold_lists(tmp_path: Path) -> None:
    tree = _read(tmp_path, BROKEN).tree
    walked = list(tree.walk())
    assert [(entry_id, depth) for entry_id, depth, _ in walked] == list(tree.preorder())
    assert {entry_id: parent for entry_id, _, parent in walked} == tree.parent
    assert len(walked) == len(tree.by_id)
    assert tree.children.many == {"b2": ["under-b", "b3"], "root": ["early", "late"]}
    assert tree.branch_points() == 2
    assert tree.children.get("early") == ["l1"] and tree.children.get("l1") is None
    assert tree.kids("late") == [] and tree.kids(None) == tree.roots
