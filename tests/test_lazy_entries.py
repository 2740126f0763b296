"""Entries decoded from their lines when asked for (`core.entries`) are the entries the reader
saw: equal, entry for entry, to a read that keeps every parsed entry (`decoded=True`, the
reader as it was), on every corpus file and on hostile lines; the tree, `show` and `tree
--json` decode only what they print; the write paths still see whole entries."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import CORPUS, NO_CORPUS, corpus_files

from seance.app.tree_model import TreeModel
from seance.cli import session as cli_session
from seance.cli.session import show_payload, tree_payload, tree_text_reads
from seance.core import entries as entries_module
from seance.core.context import CONTEXT_TYPES, build_session_context
from seance.core.entries import NOT_A_MESSAGE, Entries, message_kind
from seance.core.session import Session, read_session
from seance.core.summary import summarize, tool_calls_by_id
from seance.core.tree import SessionTree
from seance.core.writes import persist_migration, rename_session, set_label

FILES = corpus_files()
STAMP = "2026-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "lazy-1", "timestamp": STAMP, "cwd": "/p"}


def _read(path: Path, **options: Any) -> Session:
    session = read_session(path, digest=False, **options)
    assert isinstance(session, Session), getattr(session, "reason", "")
    return session


def _assert_same_session(lazy: Session, eager: Session) -> None:
    """Everything a caller can ask of the two reads is equal."""
    assert len(lazy.entries) == len(eager.entries)
    assert list(lazy.entries) == list(eager.entries)
    for position in range(len(eager.entries)):  # indexing (and its cache) as well as iterating
        assert lazy.entries[position] == eager.entries[position]
    assert lazy.entries == eager.entries and lazy.entries[-3:] == eager.entries[-3:]
    assert lazy.problems == eager.problems and lazy.skipped == eager.skipped
    assert (lazy.header, lazy.title_slot, lazy.dialect, lazy.migrations) == (
        eager.header,
        eager.title_slot,
        eager.dialect,
        eager.migrations,
    )
    assert lazy.name == eager.name
    lazy_tree, eager_tree = lazy.tree, eager.tree
    assert lazy_tree.leaf_id == eager_tree.leaf_id and lazy_tree.labels == eager_tree.labels
    assert lazy_tree.by_id == eager_tree.by_id
    assert list(lazy_tree.walk()) == list(eager_tree.walk())
    assert dict(tool_calls_by_id(lazy.entries)) == dict(tool_calls_by_id(list(eager.entries)))
    assert build_session_context(lazy) == build_session_context(eager)
    for entry_id in list(eager_tree.by_id)[:: max(1, len(eager_tree.by_id) // 50)]:
        assert lazy_tree.path_to(entry_id) == eager_tree.path_to(entry_id)


def _assert_columns_match(entries: Entries) -> None:
    """The reader's columns say what the entries hold (recomputed from the decoded dicts)."""
    again = Entries.of(list(entries))
    assert entries.ids == again.ids and entries.parents == again.parents and entries.types == again.types
    assert entries.message_kinds == again.message_kinds
    for position, kind in enumerate(entries.message_kinds):
        if entries.types[position] == "message":
            assert kind == message_kind(entries[position].get("message"))
        else:
            assert kind == NOT_A_MESSAGE


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_a_lazily_decoded_corpus_file_equals_the_eager_read(path: Path) -> None:
    lazy, eager = _read(path), _read(path, decoded=True)
    _assert_same_session(lazy, eager)
    _assert_columns_match(lazy.entries)
    calls = tool_calls_by_id(lazy.entries)
    for entry in lazy.entries:  # every row's summary, tool results resolved through the lazy calls
        assert summarize(entry, calls) == summarize(entry, tool_calls_by_id(list(eager.entries)))


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_a_corpus_file_read_back_by_offset_equals_the_eager_read(path: Path) -> None:
    """No line kept: every entry read back from the file held open (`core.linesource`)."""
    eager = _read(path, decoded=True)
    for options in ({}, {"decoded": CONTEXT_TYPES}):
        by_offset = _read(path, by_offset=True, **options)
        _assert_same_session(by_offset, eager)
        _assert_columns_match(by_offset.entries)
        assert show_payload(by_offset) == show_payload(eager) and tree_payload(by_offset) == tree_payload(eager)
        by_offset.close()


def _line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def _message(entry_id: str, parent: Any, role: str = "user", **fields: Any) -> dict[str, Any]:
    message = {"role": role, "content": f"text of {entry_id}", **fields}
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": STAMP, "message": message}


def _hostile_file(path: Path) -> None:
    call = {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"command": "ls"}}
    lines = [
        _line(HEADER),
        _line(_message("a", None)),
        b'{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"caf\xe9"}}\n',  # not UTF-8
        # a lone surrogate escape
        b'{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"\\ud83c cut"}}\n',
        b'{"type":"custom","id":"g1","parentId":"c"}{"type":"custom","id":"g2","parentId":"c"}\n',  # glued
        b"[1, 2, 3]\n",  # not an object
        b"\n",
        _line({"type": "custom", "id": "junk", "parentId": ["not", "an", "id"]}),
        _line({"type": "model_change", "id": "m", "parentId": "c", "model": "anthropic/claude"}),
        _line({"type": "custom", "parentId": "m"}),  # no id
        _line({"type": ["list"], "id": "t", "parentId": "m"}),  # no string type
        _line({**HEADER, "id": "second"}),  # a second header
        _line(_message("d", "m", "assistant", content=[call], stopReason="toolUse")),
        _line(_message("dup", "d")),
        _line(_message("e", "dup", "toolResult", toolCallId="call-1", toolName="bash")),
        _line(_message("dup", "e", "assistant", content=[{"type": "text", "text": "later"}])),
        _line(_message("fwd", "later-parent")),
        _line(_message("later-parent", "dup")),
        _line({"type": "label", "id": "l", "parentId": "later-parent", "targetId": "d", "label": "here"}),
        b'{"type":"custom","id":"torn","parentId":"l"',  # torn last line
    ]
    path.write_bytes(b"".join(lines))


def test_hostile_lines_are_skipped_and_reported_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    _hostile_file(path)
    lazy, eager = _read(path), _read(path, decoded=True)
    _assert_same_session(lazy, eager)
    _assert_columns_match(lazy.entries)
    assert [str(item) for item in lazy.skipped] == [
        "line 3: bytes that are not UTF-8 were replaced (line kept)",
        "line 5: two JSON objects glued onto one line",
        "line 6: a JSON list, not an object",
        "line 8: parentId of entry junk is not a string; shown as a root",
        "line 10: entry without a string id",
        "line 11: entry without a string type",
        "line 12: a second session header",
        "line 14: duplicate id dup (the later entry is used)",
        "line 20: torn last line (no newline)",
    ]
    entries = lazy.entries
    assert entries[1]["message"]["content"] == "caf\ufffd"  # kept as the reader repaired it
    assert entries[2]["message"]["content"] == "\ufffd cut"
    junk = lazy.tree.by_id["junk"]
    assert junk["parentId"] is None and lazy.tree.parent_of("junk") is None
    assert lazy.tree.by_id["m"]["modelId"] == "claude"  # normalised as pi's dialect reads omp's model
    assert lazy.tree.by_id["dup"]["message"]["role"] == "assistant"  # the later one
    assert "entry fwd: parent later-parent" not in " ".join(lazy.problems)  # a forward parent is placed
    assert lazy.tree.parent_of("fwd") == "later-parent"
    assert lazy.tree.labels == {"d": "here"}
    calls = tool_calls_by_id(lazy.entries)
    assert summarize(lazy.tree.by_id["e"], calls).text == "[bash: ls]"


def test_hostile_lines_read_back_by_offset_equal_the_eager_read(tmp_path: Path) -> None:
    """The hostile file, and the same behind a BOM, with CRLF line ends, blank lines between
    entries and a title slot: each entry read back from its offset is the entry read at load."""
    path = tmp_path / "hostile.jsonl"
    _hostile_file(path)
    hostile = path.read_bytes()
    slot = _line({"type": "title", "title": "slot"})
    for data in (
        hostile,
        b"\xef\xbb\xbf" + hostile,
        hostile.replace(b"\n", b"\r\n"),
        hostile.replace(b"\n", b"\n\n  \n"),
        slot + hostile,
    ):
        path.write_bytes(data)
        eager = _read(path, decoded=True)
        for options in ({}, {"decoded": CONTEXT_TYPES}):
            by_offset = _read(path, by_offset=True, **options)
            assert by_offset.entries.by_offset
            _assert_same_session(by_offset, eager)
            _assert_columns_match(by_offset.entries)


def _chain(path: Path, count: int, *, every: int = 10) -> None:
    """A chain of `count` entries: a message every `every` (user and assistant in turn), the
    rest `custom` entries."""
    lines = [_line(HEADER)]
    parent = None
    for index in range(count):
        entry_id = f"e{index}"
        if index % every == 0:
            lines.append(_line(_message(entry_id, parent, "assistant" if index % (2 * every) else "user")))
        else:
            lines.append(_line({"type": "custom", "id": entry_id, "parentId": parent, "data": "x" * 200}))
        parent = entry_id
    path.write_bytes(b"".join(lines))


@pytest.fixture
def decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many entries were decoded from their lines since the fixture started."""
    count = [0]
    real = entries_module.decode

    def counting(item: Any) -> dict[str, Any]:
        if item.__class__ is bytes:
            count[0] += 1
        return real(item)

    monkeypatch.setattr(entries_module, "decode", counting)
    return count


def test_show_and_tree_json_decode_only_what_they_print(tmp_path: Path, decodes: list[int]) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 3_000)
    session = _read(path)
    decodes[0] = 0  # (the reader decodes the header's neighbours to tell the dialect)
    nodes = tree_payload(session)["nodes"]
    assert len(nodes) == 3_000 and nodes[1] == {"id": "e1", "parentId": "e0", "type": "custom", "label": None}
    assert decodes[0] == 0, "tree --json reads the columns"
    payload = show_payload(session)
    assert len(payload["messages"]) == 300
    assert decodes[0] == 300, "show decodes the messages on the path, nothing else"
    assert session.name is None and decodes[0] == 300


def test_show_keeps_what_the_context_reads_decoded(tmp_path: Path, decodes: list[int]) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 3_000)
    session = _read(path, decoded=CONTEXT_TYPES)
    decodes[0] = 0
    assert len(show_payload(session)["messages"]) == 300
    assert decodes[0] == 0, "every message on the path was kept from the one parse"
    assert session.entries[1]["type"] == "custom" and decodes[0] == 1  # the rest decoded on demand
    _assert_same_session(session, _read(path, decoded=True))
    hostile = tmp_path / "hostile.jsonl"
    _hostile_file(hostile)
    _assert_same_session(_read(hostile, decoded=CONTEXT_TYPES), _read(hostile))


def test_a_decoded_read_keeps_every_entry_and_equals_the_lazy_one(tmp_path: Path, decodes: list[int]) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 500)
    eager = _read(path, decoded=True)
    decodes[0] = 0
    assert [entry["id"] for entry in eager.entries] == [f"e{index}" for index in range(500)]
    assert decodes[0] == 0
    _assert_same_session(_read(path), eager)


def test_a_decoded_entry_is_cached_and_iteration_keeps_nothing(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 5_000)
    entries = _read(path).entries
    first = entries[7]
    assert entries[7] is first and entries[-1] is entries[4_999]
    assert sum(1 for _ in entries) == 5_000
    for position in range(5_000):  # past the cache's size: the oldest go, the values stay equal
        entries[position]
    assert entries[7] == first and entries[7] is not first


def test_threads_decoding_at_once_see_equal_entries(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 4_000)
    entries = _read(path).entries
    expected = list(_read(path, decoded=True).entries)
    failures: list[int] = []

    def read_all(step: int) -> None:
        for position in range(0, 4_000, step):
            if entries[position] != expected[position]:
                failures.append(position)

    threads = [threading.Thread(target=read_all, args=(step,)) for step in (1, 3, 7, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_writes_see_whole_entries(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    _chain(path, 1_000)
    before = list(_read(path, decoded=True).entries)
    set_label(path, "e500", "halfway", quiet=0)
    rename_session(path, "lazy chain", quiet=0)
    after = _read(path)
    assert list(after.entries)[:1_000] == before
    assert after.tree.labels == {"e500": "halfway"} and after.name == "lazy chain"
    label = after.entries[1_000]
    assert (label["type"], label["targetId"], label["parentId"]) == ("label", "e500", "e999")


def test_an_old_file_is_migrated_from_whole_entries(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = {"type": "session", "id": "old-1", "timestamp": STAMP, "cwd": "/p"}  # v1: no ids
    messages = [
        {"type": "message", "timestamp": STAMP, "message": {"role": "user", "content": f"m{n}"}} for n in range(5)
    ]
    path.write_bytes(b"".join(_line(value) for value in [header, *messages]))
    session = _read(path)
    assert session.migrations and len(session.entries) == 5
    _assert_same_session(session, _read(path, decoded=True))
    ids = [entry["id"] for entry in session.entries]
    fresh = read_session(path)  # (a stamp with a digest: the write path's)
    assert isinstance(fresh, Session) and persist_migration(fresh, quiet=0)
    migrated = _read(path)
    assert migrated.migrations == [] and len(migrated.entries) == 5
    assert [entry["message"]["content"] for entry in migrated.entries] == [f"m{n}" for n in range(5)]
    assert len(set(ids)) == 5


def _general(session: Session) -> SessionTree:
    """The session's tree built again, told it is not a chain: the general walks."""
    tree = SessionTree(session.entries)
    tree.__dict__["is_chain"] = False
    return tree


class _Slow(TreeModel):
    """The tree model without its column-at-a-time shortcuts (with a tree told it is not a
    chain: the general walks too)."""

    def _shows_every_entry(self, allowed: Any) -> bool:
        return False

    def _is_chain_rows(self, row_parent: list[int]) -> bool:
        return False


def _assert_walks_match(fast: SessionTree, general: SessionTree) -> None:
    assert fast.roots == general.roots and fast.children == general.children
    assert fast.children.only == general.children.only and fast.children.many == general.children.many
    for options in ({}, {"flat_chains": True}, {"first_depth": 2}, {"flat_chains": True, "first_depth": 1}):
        assert list(fast.walk(**options)) == list(general.walk(**options))
    for every_entry in (False, True):
        mine, theirs = TreeModel(fast, every_entry=every_entry), _Slow(general, every_entry=every_entry)
        assert (mine.order, list(mine._parent_position), mine._categories) == (
            theirs.order,
            list(theirs._parent_position),
            theirs._categories,
        )
        for mode in ("default", "no-tools", "user-only", "labeled-only", "all"):  # (the visibility passes)
            mine.set_filter(mode)
            theirs.set_filter(mode)
            assert list(mine.rows) == list(theirs.rows) and mine.cursor == theirs.cursor, mode
            assert list(mine._nearest_row) == list(theirs._nearest_row), mode
            assert list(mine._row_parent) == list(theirs._row_parent), mode  # (a chain's: a range)
            assert (mine._kid_count, mine._last_kid, mine._roots) == (
                theirs._kid_count,
                theirs._last_kid,
                theirs._roots,
            )
            assert mine.multiple_roots == theirs.multiple_roots
        mine.prepare_search()
        theirs.prepare_search()
        assert mine._search_texts == theirs._search_texts


def test_a_chain_walks_as_the_general_walk_does(tmp_path: Path) -> None:
    path = tmp_path / "chain.jsonl"
    for count in (0, 1, 2, 19_999, 20_000, 20_001, 45_000):  # around `tree --json`'s batches
        _chain(path, count, every=3)
        session = _read(path) if count else None
        if session is None:
            continue
        assert session.tree.is_chain
        general = _read(path)
        general.__dict__["tree"] = _general(general)
        assert tree_payload(session) == tree_payload(general)
        if count < 3_000:
            _assert_walks_match(session.tree, general.tree)
    for count in (1, 2, 7, 300):  # every entry a message (an agent's session): the kinds say all
        _chain(path, count, every=1)
        session, general = _read(path), _read(path)
        assert session.tree.is_chain and set(session.entries.types) == {"message"}
        general.__dict__["tree"] = _general(general)
        _assert_walks_match(session.tree, general.tree)


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
def test_corpus_chains_walk_as_the_general_walk_does() -> None:
    chains = 0
    for path in FILES:
        session = _read(path)
        chains += session.tree.is_chain
        _assert_walks_match(session.tree, _general(session))
    assert chains >= 5, "the corpus has sessions that never branch"


def test_rows_of_one_field_entries_are_made_once_per_value_and_read_the_same() -> None:
    from seance.core import summary

    fields = {
        "custom": "customType",
        "model_change": "modelId",
        "thinking_level_change": "thinkingLevel",
        "session_info": "name",
        "title_change": "title",
        "mode_change": "mode",
    }
    assert fields == summary.ONE_FIELD  # every type here reads only its field (see `_summarize`)
    values: list[Any] = [None, "", "  ", "x", "ext\x1b[31m", "a  b\n", {"no": "t a string"}, ["x"], 3]
    for kind, field in fields.items():
        for value in values:
            for extra in ({}, {"data": "x" * 50, "id": "e1", "parentId": None, "label": "ignored"}):
                entry = {"type": kind, field: value, **extra}
                first, again = summarize(entry), summarize(dict(entry))
                assert first == again == summary._summarize(entry, None), (kind, value)
                assert summary.field_summary(kind, value) == first, (kind, value)  # (the field alone)
        assert summarize({"type": kind}) == summary._summarize({"type": kind}, None)
    rows = {summarize({"type": "custom", "customType": f"ext-{n}"}) for n in range(summary._ONE_FIELD_ROWS_MAX + 10)}
    assert len(rows) == summary._ONE_FIELD_ROWS_MAX + 10 and len(summary._ONE_FIELD_ROWS) <= summary._ONE_FIELD_ROWS_MAX


def _placements(path: Path) -> tuple[Any, Any]:
    """What the reader's two ways of placing a v3 file's entries give (the column-at-a-time
    one None when it declines)."""
    from seance.core import session as session_module
    from seance.core.entries import Parsed, parse_lines

    data = path.read_bytes()
    parsed = Parsed()
    parse_lines(data.split(b"\n"), parsed, 1, 0)
    start = 2 if parsed.types[:1] == ["title"] else 1
    fast = session_module._up_of_clean_columns(parsed, start)
    dropped: list[int] = []
    slow = session_module._up_checking_each(parsed, start, dropped)
    return fast, (slow, dropped)


def test_clean_columns_are_placed_as_the_entry_by_entry_pass_places_them(tmp_path: Path) -> None:
    files = [path for path in FILES if b'"version":3' in path.read_bytes()[:400]]
    checked = 0
    for count, every in ((1, 1), (2, 1), (500, 3)):
        _chain(tmp_path / f"chain-{count}.jsonl", count, every=every)
        files.append(tmp_path / f"chain-{count}.jsonl")
    forked = tmp_path / "forked.jsonl"  # roots, forks, a parent after its child, one missing
    entries = [HEADER, _message("a", None), _message("b", "a"), _message("c", "a"), _message("d", "b")]
    entries += [_message("e", None), _message("f", "later"), _message("later", "e"), _message("g", "gone")]
    forked.write_bytes(b"".join(map(_line, entries)))
    files.append(forked)
    hostile = tmp_path / "hostile.jsonl"  # junk parents, headers, model changes: declined
    _hostile_file(hostile)
    for path in [*files, hostile]:
        fast, ((up, later), dropped) = _placements(path)
        if fast is not None:
            assert dropped == [] and fast[0] == up and fast[1] == later, path.name
            checked += 1
    assert checked == len(files), "every v3 file here (the hostile one is declined)"
    assert checked >= 20 or not FILES, "the corpus's v3 files were among them"  # (without ../shared: the 4 made here)
    assert _placements(forked)[0] is not None and _placements(hostile)[0] is None


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
def test_a_chain_reads_the_same_path_and_preview_as_the_general_walk(tmp_path: Path) -> None:
    """The column-at-a-time path of a chain (`context._relevant_chain`, `path_positions`,
    `branch_points`) gives what the walk up the parents gives, at every entry of every corpus
    chain, compactions included (and one whose first kept entry is of a type not read)."""
    from seance.app.widgets.context_preview import build_preview
    from seance.core.context import _relevant_path

    compacted = tmp_path / "compacted.jsonl"
    entries = [HEADER, _message("a", None), {"type": "custom", "id": "k", "parentId": "a", "timestamp": STAMP}]
    entries += [_message("b", "k"), {"type": "compaction", "id": "c", "parentId": "b", "timestamp": STAMP}]
    entries[-1].update(summary="so far", firstKeptEntryId="k", tokensBefore=1000)
    entries += [_message("d", "c"), {"type": "label", "id": "l", "parentId": "d", "targetId": "a", "label": "x"}]
    compacted.write_bytes(b"".join(map(_line, entries)))
    chains = 0
    for path in [*FILES, compacted]:
        session = _read(path)
        if not session.tree.is_chain:
            continue
        chains += 1
        fast, general = session.tree, _general(session)
        assert fast.branch_points() == general.branch_points() == 0
        for entry_id in [*list(fast.by_id)[:: max(1, len(fast.by_id) // 40)], fast.entries.ids[-1]]:
            assert list(fast.path_positions(entry_id)) == list(general.path_positions(entry_id))
            assert _relevant_path(fast, entry_id) == _relevant_path(general, entry_id), (path.name, entry_id)
            assert build_session_context(fast, entry_id) == build_session_context(general, entry_id)
        general_session = _read(path)
        general_session.__dict__["tree"] = _general(general_session)
        assert build_preview(session) == build_preview(general_session)
    assert chains >= 6
    tree = _read(compacted).tree
    kept = _relevant_path(tree, "d")  # (positions)
    assert [tree.entries.ids[position] for position in kept] == ["a", "k", "b", "c", "d"]


def _parsed_columns(
    path: Path,
    block_size: int,
    keep: Any,
    *,
    by_columns: bool,
    fields: dict[str, str] | None = None,
    keepends: bool = False,
    source: Any = None,
    facts: Any = None,
) -> dict[str, Any]:
    """Every column the reader makes of `path` (read `block_size` bytes at a time, so blocks
    of whole lines alternate with blocks holding a bad line), with the column-at-a-time
    parse or only the line-by-line loop, from lines `split` gives or (`keepends`) lines
    with their newlines, as the session reader reads them; `parents_shared`: which parents
    are the very id object of the entry before (what placing a chain relies on)."""
    import os

    from seance.core.entries import Parsed, parse_lines
    from seance.core.jsonl import line_blocks

    original = entries_module._parse_clean_block
    if not by_columns:
        entries_module._parse_clean_block = lambda *args: False  # type: ignore[assignment]
    try:
        parsed = Parsed(source, fields, True, facts)
        descriptor = os.open(path, os.O_RDONLY)
        try:
            for block in line_blocks(descriptor, 0, block_size=block_size, keepends=keepends):
                if not block.oversized:
                    parse_lines(block.lines, parsed, block.line + 1, block.offset, keep=keep, keepends=keepends)
        finally:
            os.close(descriptor)
    finally:
        entries_module._parse_clean_block = original
    ids = parsed.ids
    return {
        "items": parsed.items,
        "ids": ids,
        "parents": parsed.parents,
        "parents_shared": [at > 0 and parent is ids[at - 1] for at, parent in enumerate(parsed.parents)],
        "unchained": parsed.unchained,
        "types": parsed.types,
        "kinds": parsed.kinds,
        "offsets": parsed.offsets,
        "lengths": parsed.lengths,
        "lines": parsed.lines,
        "skipped": parsed.skipped,
        "first_end": parsed.first_end,
        "clean": parsed.clean,
        "field_values": parsed.field_values,
        "facts": parsed.facts,
    }


def test_columns_parsed_a_block_at_a_time_equal_the_line_by_line_loop_180_reads(tmp_path: Path) -> None:
    """Each line is still parsed on its own: a block with a blank, bad, non-object, typeless
    or id-less line goes through the line-by-line loop, and every column (skips, line
    numbers, offsets, shared parents, kept values, the messages' facts) is the loop's, whatever
    the block size, from lines `split` gives or lines that keep their newlines (the session
    reader's), as each command reads."""
    hostile = tmp_path / "hostile.jsonl"
    _hostile_file(hostile)
    chain = tmp_path / "chain.jsonl"
    _chain(chain, 300, every=3)
    odd = _odd_file(tmp_path / "odd.jsonl")
    for path in (hostile, chain, odd, *FILES[:3]):
        for block_size in (64, 300, 4096, 1 << 20):
            text = tree_text_reads()  # (what `tree --text` reads: some types kept, one field of others, rows)
            show = cli_session._SHOW_READS  # (`show`: the context's types kept, the messages' texts)
            for keep, fields, facts in (
                (False, None, None),
                (CONTEXT_TYPES, None, None),
                (True, None, None),
                (text["decoded"], text["fields"], None),
                (text["decoded"], text["fields"], "rows"),  # (`MessageRows`: one per read, its calls read so far)
                (show["decoded"], None, show["message_facts"]),
            ):
                fresh = (lambda: tree_text_reads()["message_facts"]) if facts == "rows" else (lambda: facts)  # noqa: B023
                by_lines = _parsed_columns(path, block_size, keep, by_columns=False, fields=fields, facts=fresh())
                assert by_lines.pop("clean") is False
                for by_columns, keepends in ((True, False), (True, True), (False, True)):
                    how = {"by_columns": by_columns, "fields": fields, "keepends": keepends, "facts": fresh()}
                    read = _parsed_columns(path, block_size, keep, **how)
                    clean = read.pop("clean")
                    assert read == by_lines, (path.name, block_size, keep, keepends)
                    every_id_named = all(type(entry_id) is str and entry_id for entry_id in by_lines["ids"])
                    assert clean is False or every_id_named, (path.name, block_size)
    assert _parsed_columns(chain, 1 << 20, False, by_columns=True)["clean"] is True
    assert _parsed_columns(chain, 1 << 20, False, by_columns=True, keepends=True)["clean"] is True


def _odd_file(path: Path) -> Path:
    """Forks, an empty id, a numeric id, blank lines, CRLF, a torn last line."""
    entries = [HEADER, _message("a", None), _message("b", "a"), _message("c", "a"), _message("", "c")]
    entries += [_message("d", ""), {"type": "custom", "id": 7, "parentId": "d"}, _message("e", 7), _message("f", None)]
    data = b"".join(map(_line, entries)) + b"\n\r\n" + _line(_message("g", "f")).replace(b"\n", b"\r\n")
    path.write_bytes(data + _line(_message("h", "g"))[:-9])
    return path


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
def test_lines_read_with_their_newlines_give_the_columns_split_lines_give_every_corpus_file_340_reads(
    tmp_path: Path,
) -> None:
    """The session reader's lines keep their newlines (found by `memchr`, see `line_blocks`):
    every column of every corpus file (and of a file ending in a torn line, CRLF lines, blank
    lines) is what the lines `split` gives make, with every line's bytes kept or none."""
    from seance.core.linesource import LineSource

    files = [*FILES, _odd_file(tmp_path / "odd.jsonl")]
    reads = 0
    for path in files:
        for block_size in (4096, 1 << 20):
            for by_offset in (False, True):
                source = LineSource(os.open(path, os.O_RDONLY), path) if by_offset else None
                try:
                    how = {"by_columns": True, "source": source}
                    split = _parsed_columns(path, block_size, CONTEXT_TYPES, **how)
                    kept = _parsed_columns(path, block_size, CONTEXT_TYPES, **how, keepends=True)
                finally:
                    if source is not None:
                        source.close()
                assert kept == split, (path.name, block_size, by_offset)
                reads += 1
    assert reads == 4 * len(files) >= 340


def test_tree_json_written_a_batch_at_a_time_is_the_dumped_payload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """`tree --json` writes its nodes a batch at a time, each dumped at the depth it has in
    the payload: byte for byte `write_json(tree_payload(...))`, with ids holding quotes,
    backslashes, controls, C1, bidi, line separators and emoji, for a chain, a labelled chain
    and a branching tree, whatever the batch size."""
    from seance.cli import session as cli_session
    from seance.cli.output import write_json

    odd_ids = ['q"uote', '","', "back\\slash\\", "tab\there", "\x1b[31mred", "c1\x85", "bidi\u202e", "ls\u2028"]
    entries: list[dict[str, Any]] = [HEADER]
    parent = None
    for index, entry_id in enumerate([*odd_ids, "emoji 😀", "plain"] * 3):
        entry_id = f"{entry_id}{index}"
        entries.append(
            _message(entry_id, parent) if index % 3 else {"type": "custom", "id": entry_id, "parentId": parent}
        )
        parent = entry_id
    chain = tmp_path / "chain.jsonl"
    chain.write_bytes(b"".join(map(_line, entries)))
    labelled = tmp_path / "labelled.jsonl"
    label = {"type": "label", "id": "lab", "parentId": parent, "targetId": entries[2]["id"], "label": "x\n\x9b"}
    labelled.write_bytes(chain.read_bytes() + _line(label))
    branching = tmp_path / "branching.jsonl"
    branching.write_bytes(chain.read_bytes() + _line(_message("fork", entries[3]["id"])))
    for path in (chain, labelled, branching, *FILES[:5]):
        for per_write in (1, 2, 7, 20_000):
            monkeypatch.setattr(cli_session, "_NODES_PER_WRITE", per_write)
            session = _read(path)
            cli_session._write_tree_json(session)
            written = capsysbinary.readouterr().out
            write_json(tree_payload(session))
            assert written == capsysbinary.readouterr().out, (path.name, per_write)
