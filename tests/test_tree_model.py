"""The tree view's pure model: same rows, order, parents and prefixes as pi's own /tree.

Two oracles: pi's real `TreeSelectorComponent` (node, tests/oracle/tree_render.mjs) renders
the sessions its SessionManager wrote, and an independent, naive re-statement of the rules
over core's tree (pre-order restricted to visible entries, nearest visible ancestor).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from conftest import node_oracle_available, run_node

from seance.app.tree_model import FILTERS, TreeModel, resume_point
from seance.core.session import load_session
from seance.core.tree import SessionTree

# -- building small trees ------------------------------------------------------------------


def _stamp(index: int) -> str:
    return f"2025-01-01T00:{index // 60:02d}:{index % 60:02d}.000Z"


class Build:
    """Append entries with readable ids; `parent=` picks where the next one hangs."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def add(self, entry_id: str, parent: str | None, **fields: Any) -> str:
        entry = {"id": entry_id, "parentId": parent, "timestamp": _stamp(len(self.entries)), **fields}
        self.entries.append(entry)
        return entry_id

    def user(self, entry_id: str, parent: str | None, text: str) -> str:
        return self.add(entry_id, parent, type="message", message={"role": "user", "content": text})

    def assistant(self, entry_id: str, parent: str | None, text: str = "", calls: int = 0) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "toolCall", "id": f"{entry_id}-c{n}", "name": "bash", "arguments": {"command": f"ls {n}"}}
            for n in range(calls)
        ]
        return self.add(
            entry_id,
            parent,
            type="message",
            message={"role": "assistant", "content": content, "stopReason": "toolUse" if calls else "stop"},
        )

    def tool(self, entry_id: str, parent: str, call_id: str) -> str:
        return self.add(
            entry_id,
            parent,
            type="message",
            message={"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "content": "out"},
        )

    def tree(self) -> SessionTree:
        return SessionTree(self.entries)


def illustration() -> SessionTree:
    """pi.md §2.5's example: the leaf is the second user message of branch A."""
    b = Build()
    b.user("u1", None, "Hello, can you help")
    b.assistant("a1", "u1", "Of course!")
    b.user("uA", "a1", "Let's try approach A")
    b.assistant("aA", "uA", "For approach A")
    b.add("cA", "aA", type="compaction", summary="s", firstKeptEntryId="aA", tokensBefore=12_400)
    b.user("uA2", "cA", "That worked")
    b.user("uB", "a1", "Actually, approach B")
    b.assistant("aB", "uB", "For approach B")
    b.add("leaf", "uA2", type="leaf", targetId="uA2")
    return b.tree()


# -- pure rules ----------------------------------------------------------------------------


def test_illustration_renders_like_pi() -> None:
    model = TreeModel(illustration())
    assert model.leaf_id == "uA2"
    assert [model.row_text(row) for row in model.rows] == [
        "• user: Hello, can you help",
        "• assistant: Of course!",
        "├⊟ • user: Let's try approach A",
        "│     • assistant: For approach A",
        "│     • [compaction: 12k tokens]",
        "│     • user: That worked",
        "└⊟ user: Actually, approach B",
        "      assistant: For approach B",
    ]
    assert model.selected_id == "uA2"
    assert model.status() == "(6/8)"


def test_branch_holding_the_leaf_comes_first() -> None:
    b = Build()
    b.user("root", None, "start")
    b.user("older", "root", "older branch")
    b.user("newer", "root", "newer branch")  # the leaf: last entry
    model = TreeModel(b.tree())
    assert model.rows.ids == ["root", "newer", "older"]
    assert model.active_path == {"root", "newer"}


def test_textless_assistant_hidden_unless_leaf_or_error() -> None:
    b = Build()
    b.user("u", None, "go")
    b.assistant("calls", "u", calls=1)
    b.tool("t", "calls", "calls-c0")
    b.add(
        "err",
        "t",
        type="message",
        message={"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "boom"},
    )
    b.assistant("last", "err", calls=1)
    model = TreeModel(b.tree())
    assert model.rows.ids == ["u", "t", "err", "last"]
    assert model.summary("t").plain() == "[bash: ls 0]"
    model.set_filter("all")
    assert "calls" not in model.rows.ids


def test_filters_and_toggles() -> None:
    b = Build()
    b.user("u", None, "hi")
    b.add("m", "u", type="model_change", provider="p", modelId="x")
    b.assistant("a", "m", "text", calls=1)
    b.tool("t", "a", "a-c0")
    b.add("l", "t", type="label", targetId="u", label="start")
    b.add("th", "l", type="thinking_level_change", thinkingLevel="high")
    model = TreeModel(b.tree())
    seen = {}
    for mode in FILTERS:
        model.set_filter(mode)
        seen[mode] = model.rows.ids
    assert seen == {
        "default": ["u", "a", "t"],
        "no-tools": ["u", "a"],
        "user-only": ["u"],
        "labeled-only": ["u"],
        "all": ["u", "m", "a", "t", "l", "th"],
    }
    model.set_filter("default")
    model.toggle_filter("no-tools")
    assert model.filter_mode == "no-tools"
    model.toggle_filter("no-tools")
    assert model.filter_mode == "default"
    model.toggle_filter("all")
    model.toggle_filter("default")
    assert model.filter_mode == "default"
    model.cycle_filter()
    model.cycle_filter()
    assert model.filter_mode == "user-only"
    model.cycle_filter(-1)
    assert model.filter_mode == "no-tools"
    assert model.status().endswith("[no-tools]")


def test_cursor_keeps_its_entry_or_nearest_visible_ancestor() -> None:
    b = Build()
    b.user("u", None, "hi")
    b.assistant("a", "u", "reply", calls=1)
    b.tool("t", "a", "a-c0")
    model = TreeModel(b.tree())
    assert model.selected_id == "t"
    model.set_filter("no-tools")
    assert model.selected_id == "a"
    model.set_filter("labeled-only")  # nothing visible: the remembered entry survives
    assert model.rows.ids == [] and model.status() == "(0/0) [labeled]"
    model.set_filter("no-tools")
    assert model.selected_id == "a"
    model.set_filter("default")
    assert model.selected_id == "a"  # moved by the filter, so it stays on `a`


def test_moves_wrap_and_page() -> None:
    b = Build()
    parent = None
    for n in range(10):
        parent = b.user(f"u{n}", parent, f"message {n}")
    model = TreeModel(b.tree())
    assert model.cursor == 9
    model.move(1)
    assert model.cursor == 0
    model.move(-1)
    assert model.cursor == 9
    model.page(-1, 4)
    assert model.cursor == 5
    model.page(-1, 40)
    assert model.cursor == 0
    model.page(1, 4)
    assert model.cursor == 4
    model.end()
    assert model.cursor == 9
    model.home()
    assert model.cursor == 0


def test_search_covers_whole_text_and_is_an_and_of_words() -> None:
    b = Build()
    b.user("long", None, "x" * 500 + " needle at the very end")
    b.assistant("a", "long", "Another Reply")
    b.user("u2", "a", "needle alone")
    b.add("lab", "u2", type="label", targetId="a", label="Milestone")
    model = TreeModel(b.tree())
    model.set_query("needle")
    assert model.rows.ids == ["long", "u2"]
    model.set_query("needle end")
    assert model.rows.ids == ["long"]
    model.set_query("milestone reply")
    assert model.rows.ids == ["a"]
    model.set_query("user")  # the role is searchable, as in pi
    assert model.rows.ids == ["long", "u2"]
    model.set_query("nothing-like-this")
    assert model.rows.ids == [] and model.status() == "(0/0)"
    model.set_query("")
    assert model.rows.ids == ["long", "a", "u2"]


def test_every_entry_type_is_searchable_as_its_row_reads() -> None:
    b = Build()
    b.user("u", None, "hello")
    b.add("title", "u", type="title_change", title="Quarterly Report")
    b.add("mode", "title", type="mode_change", mode="plan")
    b.add("init", "mode", type="session_init", task="refactor the parser")
    b.add("rules", "init", type="ttsr_injection", injectedRules=["a", "b"])
    b.add("odd", "rules", type="future_kind_xyz")
    model = TreeModel(b.tree(), filter_mode="all")
    for query, expected in [
        ("quarterly", "title"),
        ("mode plan", "mode"),
        ("session init parser", "init"),
        ("rules injected", "rules"),
        ("future_kind_xyz", "odd"),
    ]:
        model.set_query(query)
        assert model.rows.ids == [expected], query
    for entry_id in ("title", "mode", "init", "rules", "odd"):
        assert model.search_text(entry_id) == model.summary(entry_id).plain().lower()


def test_search_finds_an_error_message_and_a_compaction_summary_the_preview_shows() -> None:
    """The preview shows a failed assistant message's error and a compaction's summary, and
    the list's search finds the session by them (`error:`, `summary:`): the tree's search
    read only the error's empty text and the compaction's row (`[compaction: 12k tokens]`)."""
    b = Build()
    b.user("u", None, "hello")
    b.add(
        "err",
        "u",
        type="message",
        message={"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "429 rate limited"},
    )
    b.add("c", "err", type="compaction", summary="we moved the zebrafish loader", firstKeptEntryId="u", tokensBefore=9)
    b.user("u2", "c", "next")
    model = TreeModel(b.tree(), filter_mode="all")
    for query, expected in [("rate limited", ["err"]), ("zebrafish loader", ["c"]), ("compaction", ["c"])]:
        model.set_query(query)
        assert model.rows.ids == expected, query


def test_search_finds_a_bash_run_s_output_and_a_summary_message_s_summary() -> None:
    """A `!` bash run shows its output in the preview (the list finds it: `result:`), a
    summary message its summary, a custom message its type: the tree's search read their
    `content` alone."""
    b = Build()
    b.user("u", None, "hello")
    run = {"role": "bashExecution", "command": "make dingo", "output": "dingo built with okapi", "exitCode": 0}
    b.add("run", "u", type="message", message=run)
    b.add("bs", "run", type="message", message={"role": "branchSummary", "summary": "the wombat branch"})
    note = {"role": "custom", "customType": "ext-alpha", "content": "note text", "display": True}
    b.add("note", "bs", type="message", message=note)
    model = TreeModel(b.tree(), filter_mode="all")
    for query, expected in [
        ("okapi", ["run"]),
        ("make dingo", ["run"]),
        ("wombat branch", ["bs"]),
        ("ext-alpha", ["note"]),  # (its row's and the preview's title, as a custom_message entry's type)
    ]:
        model.set_query(query)
        assert model.rows.ids == expected, query


def test_search_and_filter_changes_clear_folds() -> None:
    model = TreeModel(illustration())
    model.select_id("uB")
    model.fold_or_up()
    assert model.folded == {"uB"}
    model.set_query("approach")
    assert model.folded == set()
    model.fold_or_up()
    model.set_filter("all")
    assert model.folded == set()


def test_fold_unfold_and_segment_jumps() -> None:
    model = TreeModel(illustration())
    model.select_id("uA")
    assert model.is_foldable("uA") and not model.is_foldable("aA")
    model.fold_or_up()
    assert model.rows.ids == ["u1", "a1", "uA", "uB", "aB"]
    assert model.prefix(model.rows[2]) == ("├⊞ ", "")
    model.unfold_or_down()
    assert len(model.rows) == 8
    model.unfold_or_down()  # not folded: jump down to the branch end
    assert model.selected_id == "uA2"
    model.fold_or_up()  # not foldable: jump up to the segment start
    assert model.selected_id == "uA"
    model.fold_or_up()  # now fold it
    model.select_id("u1")
    model.fold_or_up()  # the root folds too
    assert model.rows.ids == ["u1"]
    assert model.row_text(model.rows[0]) == "⊞ • user: Hello, can you help"
    model.unfold_or_down()
    assert model.rows.ids == ["u1", "a1", "uA", "uB", "aB"]  # nested fold state kept


def test_labels_update_rows() -> None:
    model = TreeModel(illustration())
    model.set_filter("labeled-only")
    assert model.rows.ids == []
    model.set_label("aB", "  keep  ")
    assert model.rows.ids == ["aB"]
    assert model.row_text(model.rows[0]) == "[keep] assistant: For approach B"
    model.set_label("aB", "")
    assert model.rows.ids == []


def test_several_roots_hang_under_an_invisible_root() -> None:
    b = Build()
    b.user("r1", None, "first root")
    b.assistant("a1", "r1", "reply")
    b.user("r2", "missing-parent", "orphan")
    model = TreeModel(b.tree())
    assert model.rows.ids == ["r2", "r1", "a1"]
    assert [model.row_text(row) for row in model.rows] == ["• user: orphan", "user: first root", "   assistant: reply"]


def test_resume_point_follows_pi() -> None:
    tree = illustration()
    assert resume_point(tree.by_id["uA"], tree.parent["uA"]) == ("a1", "Let's try approach A")
    assert resume_point(tree.by_id["u1"], None) == (None, "Hello, can you help")
    assert resume_point(tree.by_id["aB"], "uB") == ("aB", None)
    custom = {"id": "c", "type": "custom_message", "customType": "x", "content": [{"type": "text", "text": "hey"}]}
    assert resume_point(custom, "p") == ("p", "hey")
    # the session's own leaf stays put, as pi's navigateTree (a no-op there), whatever it is
    assert resume_point(tree.by_id["uA"], tree.parent["uA"], "uA") == ("uA", None)
    assert resume_point(custom, "p", "c") == ("c", None)
    assert resume_point(tree.by_id["uA"], tree.parent["uA"], "aB") == ("a1", "Let's try approach A")
    # a prompt with no text (an image alone) offers nothing back: null, not "" (pi: `if (editorText)`)
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    pasted = {"id": "i", "type": "message", "message": {"role": "user", "content": [image]}}
    assert resume_point(pasted, "p") == ("p", None)


def test_a_big_linear_session_stays_flat() -> None:
    b = Build()
    parent = None
    for n in range(3000):
        parent = b.user(f"e{n}", parent, f"m {n}")
    model = TreeModel(b.tree())
    assert len(model.rows) == 3000
    assert all(row.indent == 0 for row in model.rows)
    assert model.cursor == 2999


# -- against pi's own /tree ------------------------------------------------------------------


def _session_files(oracle: Path) -> list[str]:
    return sorted(str(path) for path in (oracle / "sessions").rglob("*.jsonl"))


@pytest.fixture(scope="session")
def pi_views(pi_oracle: Path) -> list[dict]:
    if not node_oracle_available():
        pytest.skip("node or tests/oracle/node_modules missing")
    return json.loads(run_node("tree_render.mjs", *_session_files(pi_oracle)))


def _marks(model: TreeModel, row) -> str:
    prefix, fold = model.prefix(row)
    return prefix + fold + ("• " if row.id in model.active_path else "")


def test_rows_equal_pi_tree_selector_under_every_filter(pi_views: list[dict]) -> None:
    assert len(pi_views) >= 20
    for record in pi_views:
        model = TreeModel(load_session(record["path"]).tree)
        assert model.leaf_id == record["leafId"]
        for mode in FILTERS:
            model.set_filter(mode)
            view = record["views"][mode]
            where = f"{record['path']} [{mode}]"
            assert model.rows.ids == view["ids"], where
            for row, line in zip(model.rows, view["rows"], strict=True):
                assert line.startswith(_marks(model, row)), f"{where} {row.id}: {line!r}"
                label = model.tree.labels.get(row.id)
                assert (f"[{label}] " in line) if label else True, where
            assert model.status() == view["status"], where


def test_folds_and_segment_jumps_equal_pi(pi_views: list[dict]) -> None:
    folds = 0
    for record in pi_views:
        tree = load_session(record["path"]).tree
        model = TreeModel(tree)
        for position in range(len(model.rows)):
            model.cursor = position
            assert model._segment_start("up") == record["jumps"]["up"][position]
            assert model._segment_start("down") == record["jumps"]["down"][position]
        for fold in record["folds"]:
            folded = TreeModel(tree)
            folded.select_id(fold["id"])
            assert folded.is_foldable(fold["id"])
            folded.fold_or_up()
            assert folded.rows.ids == fold["ids"]
            for row, line in zip(folded.rows, fold["rows"], strict=True):
                assert line.startswith(_marks(folded, row))
            folds += 1
    assert folds > 20


# -- against an independent statement of the rules over core's tree ----------------------------


def _visible(entry: dict, leaf: str, mode: str, labels: dict[str, str]) -> bool:
    kind = entry.get("type")
    message = entry.get("message") or {}
    role = message.get("role") if kind == "message" else None
    if role == "assistant" and entry["id"] != leaf:
        content = message.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [block.get("text", "") for block in content or [] if block.get("type") == "text"]
        )
        stop = message.get("stopReason")
        if not any(text.strip() for text in texts) and stop in (None, "stop", "toolUse"):
            return False
    settings = kind in ("label", "custom", "model_change", "thinking_level_change", "session_info")
    return {
        "default": not settings,
        "no-tools": not settings and role != "toolResult",
        "user-only": role == "user",
        "labeled-only": entry["id"] in labels,
        "all": True,
    }[mode]


def _under(entry_id: str, folded: set[str], parent: dict[str, str | None]) -> bool:
    """Whether an ancestor of the entry is folded."""
    node = parent[entry_id]
    while node is not None:
        if node in folded:
            return True
        node = parent[node]
    return False


def test_rows_are_core_preorder_restricted_to_visible_entries(pi_oracle: Path) -> None:
    """Every visible row's order and parent equal core's tree, for filters, searches and folds."""
    rng = random.Random(3)
    checked = 0
    for record in json.loads((pi_oracle / "expected.json").read_text())["sessions"]:
        session = load_session(record["path"])
        tree = session.tree
        parent = {node["id"]: node["parentId"] for node in record["tree"]}  # pi's getTree
        children: dict[str | None, list[str]] = {}
        for node in record["tree"]:  # pre-order lists siblings oldest first
            children.setdefault(node["parentId"], []).append(node["id"])
        leaf = record["leafId"]
        on_path = set()
        node = leaf
        while node is not None:
            on_path.add(node)
            node = parent[node]
        order: list[str] = []
        stack = sorted(children.get(None, []), key=lambda i: i not in on_path)[::-1]
        while stack:
            node = stack.pop()
            order.append(node)
            stack.extend(sorted(children.get(node, []), key=lambda i: i not in on_path)[::-1])
        for mode in FILTERS:
            queries = ["", "user", rng.choice(["a", "e", "tree", "branch summary", "the code"])]
            for query in queries:
                model = TreeModel(tree)
                model.set_filter(mode)
                model.set_query(query)
                foldable = [i for i in model.rows.ids if model.is_foldable(i)]
                folded = set(rng.sample(foldable, min(2, len(foldable))))
                for entry_id in folded:
                    model.folded.add(entry_id)
                model._apply()
                tokens = query.lower().split()
                expected = [
                    entry_id
                    for entry_id in order
                    if _visible(tree.by_id[entry_id], leaf, mode, tree.labels)
                    and all(token in model.search_text(entry_id) for token in tokens)
                    and not _under(entry_id, folded, parent)
                ]
                assert model.rows.ids == expected, (record["path"], mode, query, folded)
                for entry_id in expected:
                    node = parent[entry_id]
                    while node is not None and node not in model.index:
                        node = parent[node]
                    assert model.visible_parent(entry_id) == node
                checked += 1
    assert checked >= 100


def test_a_chains_rows_mark_the_path_to_the_leaf_under_every_filter_search_and_fold() -> None:
    """On one chain the rows are made a column at a time (every entry a row: the order
    itself; a filtered chain: the path to the leaf is every row up to the leaf's): each row's
    `active` and id equal a naive statement (the path's ids, the rows' entries in order)."""
    rng = random.Random(11)
    for trial in range(60):
        b = Build()
        parent = None
        for n in range(rng.randrange(1, 40)):
            roll = rng.randrange(4)
            if roll == 0:
                parent = b.user(f"u{n}", parent, rng.choice(["fix it", "go on"]))
            elif roll == 1:
                parent = b.assistant(f"a{n}", parent, rng.choice(["", "done"]), calls=rng.randrange(2))
            elif roll == 2:
                parent = b.tool(f"t{n}", parent, f"a{n - 1}-c0")
            else:
                parent = b.add(f"x{n}", parent, type=rng.choice(["model_change", "label", "custom"]))
        tree = b.tree()
        ids = [entry["id"] for entry in b.entries]
        leaf = rng.choice([*ids, None])
        model = TreeModel(tree, leaf_id=leaf, every_entry=trial % 3 == 0)
        path = set(ids[: ids.index(leaf) + 1]) if leaf else set(ids)
        for mode in FILTERS:
            model.set_filter(mode)
            for query in ("", "fix", "done"):
                model.set_query(query)
                if query == "done" and model.rows:
                    model.folded.add(model.rows.ids[0])
                    model._apply()
                rows = list(model.rows)
                assert [row.id for row in rows] == model.rows.ids, (trial, mode, query)
                assert model.rows.ids == [entry_id for entry_id in ids if entry_id in set(model.rows.ids)]
                assert [row.active for row in rows] == [row.id in path for row in rows], (trial, mode, query)


def test_search_matches_what_is_shown_not_a_coloured_outputs_escape_sequences() -> None:
    """A tool's coloured output is searched as the row and the preview show it (escape
    sequences dropped whole, `text.drop_escapes`): its words are found, `[32m` is not."""
    b = Build()
    b.user("u", None, "start the tunnel")
    b.assistant("a", "u", calls=1)
    b.add("r", "a", type="message", message={
        "role": "toolResult", "toolCallId": "a-c0", "toolName": "bash",
        "content": [{"type": "text", "text": "hosts. \x1b[32mForwarding HTTP traffic\x1b[0m"}],
    })  # fmt: skip
    b.add("c", "r", type="custom_message", customType="tunnel", content="\x1b]0;title\x07\x1b[1mready")
    model = TreeModel(b.tree(), filter_mode="all")
    model.set_query("hosts. forwarding http traffic")
    assert model.rows.ids == ["r"]
    model.set_query("ready")
    assert model.rows.ids == ["c"]
    for hidden in ("[32m", "[0m", "32mforwarding", "title", "[1mready"):
        model.set_query(hidden)
        assert model.rows.ids == [], hidden


def _random_session(rng: random.Random, chain: bool) -> Build:
    """A small session of a few words: one chain, or with branches."""
    words = ["fix it", "go on", "done", "fixed the test", "gone", "don't"]
    b = Build()
    ids: list[str] = []
    parent = None
    for n in range(rng.randrange(1, 30)):
        if not chain and ids and rng.random() < 0.3:
            parent = rng.choice(ids)
        roll = rng.randrange(4)
        if roll == 0:
            parent = b.user(f"u{n}", parent, rng.choice(words))
        elif roll == 1:
            parent = b.assistant(f"a{n}", parent, rng.choice(["", *words]), calls=rng.randrange(2))
        elif roll == 2 and parent is not None:
            parent = b.tool(f"t{n}", parent, f"a{n - 1}-c0")
        else:
            parent = b.add(f"x{n}", parent, type=rng.choice(["model_change", "custom"]))
        ids.append(parent)
    return b


def test_a_search_typed_key_by_key_finds_what_each_query_alone_finds_400_trials() -> None:
    """A query typed a key at a time (each narrowing the last: only the texts the last one
    matched are tested again), with Backspace, Ctrl+U, new words, labels set and cleared and
    the filter changed between keys, shows after every key exactly the entries whose search
    text holds every word (label included), on one chain (the rows made a column at a time)
    and on a tree with branches (the general walk), folds included."""
    rng = random.Random(17)
    chains = 0
    for trial in range(400):
        b = _random_session(rng, chain=trial % 2 == 0)
        tree = b.tree()
        chains += tree.is_chain
        ids = [entry["id"] for entry in b.entries]
        parent = {entry["id"]: entry["parentId"] for entry in b.entries}
        leaf = tree.leaf_id
        model = TreeModel(tree)
        query = ""
        for _step in range(25):
            roll = rng.random()
            if roll < 0.55:
                query += rng.choice("fixdonegtes '")
            elif roll < 0.65:
                query = query[:-1]
            elif roll < 0.7:
                query = ""
            elif roll < 0.8:
                model.set_label(rng.choice(ids), rng.choice(["Fixed", "todo", "", None]))
            elif roll < 0.88:
                model.set_filter(rng.choice(FILTERS))
            elif roll < 0.94 and model.rows:
                model.folded.add(rng.choice(model.rows.ids))
                model._apply()
            else:
                query = rng.choice(["fix", "done", "go on", "fixe", "te"])
            model.set_query(query)
            tokens = query.lower().split()
            expected = [
                entry_id
                for entry_id in model.order
                if _visible(tree.by_id[entry_id], leaf, model.filter_mode, tree.labels)
                and all(token in model.search_text(entry_id) for token in tokens)
                and not _under(entry_id, model.folded, parent)
            ]
            assert model.rows.ids == expected, (trial, query, model.filter_mode, model.folded)
        assert set(model.order) == set(ids)
    assert 150 <= chains <= 250


class _CountedOrder(list):
    """`order`, counting the ids a `list.index` scan compares (a lookup per label per key)."""

    compared = 0

    def index(self, value: Any, *args: Any) -> int:
        at = super().index(value, *args)
        _CountedOrder.compared += at + 1
        return at


def test_a_search_on_a_branched_tree_finds_its_labels_without_scanning_the_entries() -> None:
    """Each key of a search looks a label's entry up in a map, not by a scan of every entry
    (a few hundred labels on a 200,000-entry tree with branches cost more than the old loop)."""
    b = Build()
    ids: list[str] = []
    parent = None
    for n in range(2_000):
        parent = b.user(f"u{n}", "u2" if n == 5 else parent, f"word{n}")
        ids.append(parent)
    tree = b.tree()
    assert not tree.is_chain
    model = TreeModel(tree)
    for n in range(100):
        model.set_label(ids[(n + 1) * 19], f"mark{n}")
    model.prepare_search()
    model.order = _CountedOrder(model.order)
    _CountedOrder.compared = 0
    for typed in ("w", "wo", "wor", "word", "word1"):
        model.set_query(typed)
    assert _CountedOrder.compared < 10 * len(model.order), _CountedOrder.compared
    assert set(model.rows.ids) >= {"u1", "u10", "u1999"}
