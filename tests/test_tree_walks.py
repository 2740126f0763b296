"""The walks that replaced whole-tree maps give what those maps gave (issue 14, huge sessions).

The tree model no longer builds the set of every id on the leaf's path, a parent map or an
index of every row to place its cursor, and `show`'s context keeps only the path entries it
reads.  Each is checked here against the plain definition on random trees with forks,
several roots, missing and junk parents, cycles and compactions (a fixed seed, real files).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

from seance.app.tree_model import FILTERS, TreeModel
from seance.core.context import build_session_context
from seance.core.session import Session, read_session

HEADER = {"type": "session", "version": 3, "id": "s", "cwd": "/p", "timestamp": "2025-01-01T00:00:00.000Z"}


def _random_entries(rng: random.Random) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    ids: list[str] = []
    for index in range(rng.randint(1, 80)):
        entry_id = f"e{index}"
        roll = rng.random()
        parent: Any = None if not ids or roll < 0.05 else rng.choice(ids) if roll < 0.35 else ids[-1]
        if rng.random() < 0.03:
            parent = rng.choice(["missing", entry_id, f"e{index + 2}", ["junk"]])  # self, later: cycles
        kind = rng.random()
        if kind < 0.35:
            body: dict[str, Any] = {"type": "message", "message": {"role": "user", "content": f"ask {index}"}}
        elif kind < 0.55:
            text = rng.choice([[], [{"type": "text", "text": f"answer {index}"}]])
            body = {"type": "message", "message": {"role": "assistant", "content": text, "stopReason": "stop"}}
        elif kind < 0.65 and ids:
            body = {"type": "label", "targetId": rng.choice(ids), "label": rng.choice(["L", ""])}
        elif kind < 0.8:
            body = {"type": "custom", "customType": "x"}
        elif kind < 0.9:
            kept = rng.choice([*ids[-5:], "missing", None]) if ids else None
            body = {"type": "compaction", "summary": f"sum {index}", "firstKeptEntryId": kept, "tokensBefore": 9}
        else:
            body = {"type": "custom_message", "customType": "note", "content": f"note {index}", "display": True}
        stamp = f"2025-01-01T00:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.000Z"
        entries.append({**body, "id": entry_id, "parentId": parent, "timestamp": stamp})
        ids.append(entry_id)
    return entries


def _sessions(tmp_path: Path, count: int) -> list[Session]:
    sessions = []
    for seed in range(count):
        path = tmp_path / f"r{seed}.jsonl"
        lines = [HEADER, *_random_entries(random.Random(seed))]
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
        session = read_session(path)
        assert isinstance(session, Session)
        sessions.append(session)
    return sessions


def test_rows_mark_the_path_to_the_leaf_and_the_cursor_finds_the_nearest_visible_ancestor_60_trees(
    tmp_path: Path,
) -> None:
    for session in _sessions(tmp_path, 60):
        tree = session.tree
        on_path = {entry["id"] for entry in tree.path_to(tree.leaf_id)}
        for mode, fold in [(mode, fold) for mode in FILTERS for fold in (False, True)]:
            model = TreeModel(tree, filter_mode=mode)
            if fold:  # fold every foldable row: entries under a fold are hidden
                for entry_id in list(model.rows.ids):
                    if model.is_foldable(entry_id) and entry_id in model.index:
                        model.select_id(entry_id)
                        model.fold_or_up()
            assert model.active_path == on_path
            assert [row.active for row in model.rows] == [row.id in on_path for row in model.rows]
            index = {entry_id: row for row, entry_id in enumerate(model.rows.ids)}
            for entry_id in [*tree.by_id, "not-an-entry"]:
                node: str | None = entry_id  # the definition: up the parents until a visible row
                while node is not None and node not in index:
                    node = tree.parent.get(node)
                expected = index[node] if node is not None else len(model.rows) - 1
                assert model.nearest_visible_index(entry_id) == (expected if model.rows else 0)


def test_the_leafs_branch_comes_first_at_every_fork_and_among_roots_60_trees(tmp_path: Path) -> None:
    for session in _sessions(tmp_path, 60):
        tree = session.tree
        model = TreeModel(tree, every_entry=True)
        on_path = {entry["id"] for entry in tree.path_to(tree.leaf_id)}
        order = model.rows.ids
        assert sorted(order) == sorted(tree.by_id)  # every entry once
        for parent in [None, *tree.by_id]:
            kids = tree.kids(parent)
            ranked = sorted(kids, key=order.index)
            first = [kid for kid in kids if kid in on_path]
            assert ranked == first + [kid for kid in kids if kid not in on_path]


def test_the_context_at_every_entry_keeps_what_the_whole_path_rule_keeps_60_trees(tmp_path: Path) -> None:
    for session in _sessions(tmp_path, 60):
        tree = session.tree
        for leaf in tree.by_id:
            path = tree.path_to(leaf)  # pi's rule over the whole path, written out plainly
            compactions = [index for index, entry in enumerate(path) if entry["type"] == "compaction"]
            kinds = ("message", "custom_message", "branch_summary")
            if compactions:
                last = compactions[-1]
                first_kept = path[last].get("firstKeptEntryId")
                ids = [entry["id"] for entry in path[:last]]
                start = ids.index(first_kept) if first_kept in ids else last
                kept = [entry["id"] for entry in path[start:last] + path[last + 1 :] if entry["type"] in kinds]
                expected = [path[last]["id"], *kept]
            else:
                expected = [entry["id"] for entry in path if entry["type"] in kinds]
            context = build_session_context(session, leaf)
            assert [message.entry_id for message in context.messages] == expected, leaf
