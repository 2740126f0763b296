"""`tree --text` made a column at a time (the session read with only what its rows read,
`tree_text_reads`; rows of one-field entries made once per value; a chain's lines joined
from columns) prints byte for byte what the general path prints: every row laid out by the
tree view's model and summarised from its entry, on a session read with every entry kept
(the command as it was).  Checked on generated sessions with forks, several roots, labels,
compactions, odd field values, hostile ids, bad lines, duplicate ids and junk parents, each read kept in memory and read
back by offset, and on every file of ../shared/corpus."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import corpus_files

from seance.cli.session import tree_text, tree_text_reads
from seance.core.session import Session, read_session

STAMP = "2026-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "fast-1", "timestamp": STAMP, "cwd": "/p"}
# Values a one-field entry's field may hold: strings that need sanitising, and values that
# are not strings (`1` and `True` are equal dict keys, and print differently).
FIELD_VALUES: list[Any] = [
    None,
    "",
    "ext",
    "ext",
    "  a  b ",
    "\x1b[31mred",
    "bidi\u202e",
    1,
    True,
    1.0,
    {"k": 1},
    ["x"],
]
ODD_IDS = ["tab\tid", "\x1b[2Jclear", "c1\x85", "bidi\u202eid", "emoji 😀"]


def _line(value: Any) -> bytes:
    return orjson.dumps(value) + b"\n"


def _entry(rng: random.Random, index: int) -> dict[str, Any]:
    """One entry of a random type, with random field values (its id and parent set later)."""
    roll = rng.randrange(16)
    if roll < 4:
        return {"type": "custom", "customType": rng.choice(FIELD_VALUES), "data": "x" * rng.randrange(50)}
    if roll == 4:
        return {"type": "custom"}
    if roll == 5:
        return {
            "type": rng.choice(["thinking_level_change", "session_info", "title_change", "mode_change"]),
            **{field: rng.choice(FIELD_VALUES) for field in ("thinkingLevel", "name", "title", "mode")},
        }
    if roll == 6:
        return (
            {"type": "model_change", "model": "anthropic/claude"}
            if rng.random() < 0.5
            else {"type": "model_change", "provider": "p", "modelId": rng.choice(FIELD_VALUES)}
        )
    if roll == 7:
        return {"type": "compaction", "summary": "s", "tokensBefore": rng.choice([1234, 99_999, None, "x", True])}
    if roll == 8:
        return {"type": "branch_summary", "summary": rng.choice(["went left", "\x1b]0;t\x07", ""]), "fromId": "a"}
    if roll == 9:
        return {"type": rng.choice(["unknown_kind", "leaf", "session_init", "ttsr_injection"]), "targetId": "a"}
    if roll == 10:
        return {"type": "custom_message", "customType": rng.choice(FIELD_VALUES), "content": "note", "display": True}
    role = rng.choice(["user", "assistant", "assistant", "toolResult", "bashExecution", "odd"])
    message: dict[str, Any] = {"role": role, "content": rng.choice(["hi", "", "  two  spaces ", "x" * 300])}
    if role == "assistant":
        call = {"type": "toolCall", "id": f"call-{index}", "name": rng.choice(["bash", "read", "grep", "mcp"])}
        call["arguments"] = {"command": "ls -la", "path": "/p/f.py", "offset": 3, "pattern": "x"}
        message["content"] = rng.choice([[call], [{"type": "text", "text": "reply"}, call], "text"])
        message["stopReason"] = rng.choice(["toolUse", "stop", "aborted", "error"])
        message["errorMessage"] = rng.choice([None, "boom\nbang"])
    elif role == "toolResult":
        message["toolCallId"] = f"call-{rng.randrange(index + 2)}"  # a call before, after, or none
        message["toolName"] = rng.choice(["bash", None])
    elif role == "bashExecution":
        message["command"] = "echo hi"
    return {"type": "message", "timestamp": STAMP, "message": message}


def _session_lines(rng: random.Random, count: int, *, chain: bool) -> list[bytes]:
    """A header, then `count` entries: one chain, or a tree with forks and several roots;
    labels (set, changed, cleared, on entries before and after them), bad lines."""
    lines = [_line(HEADER)]
    ids: list[str] = []
    for index in range(count):
        entry = _entry(rng, index)
        entry_id = f"{index:x}" if rng.random() < 0.9 else f"{rng.choice(ODD_IDS)}{index}"
        if chain:
            parent = ids[-1] if ids else None
        else:
            parent = (
                rng.choice([*ids[-3:], *ids[:2], None]) if ids and rng.random() < 0.3 else (ids[-1] if ids else None)
            )
        if ids and rng.random() < 0.08:
            target = rng.choice(ids)
            label = {"type": "label", "label": rng.choice(["keep", "", None, "red\x1b[31m", " two  words "])}
            entry = {**label, "targetId": target, "timestamp": STAMP}
        entry = {"type": entry.pop("type"), "id": entry_id, "parentId": parent, **entry}
        lines.append(_line(entry))
        ids.append(entry_id)
        if rng.random() < 0.03:  # a bad line, an entry that cannot be placed, a duplicate id, a junk parent
            odd = [b"not json\n", b"[1, 2]\n", b"\n", b'{"type": "custom"}\n', b'"a string"\n', _line(HEADER)]
            odd += [_line({"type": "custom", "id": ids[0], "parentId": ids[-1], "customType": "dup"})]
            odd += [_line({"type": "custom", "id": f"junk{index}", "parentId": ["x"]})]
            lines.append(rng.choice(odd))
    return lines


def _fast(path: Path, *, by_offset: bool | None) -> str:
    session = read_session(path, digest=False, by_offset=by_offset, **tree_text_reads())
    assert isinstance(session, Session)
    return "".join(tree_text(session))


def _general(path: Path) -> str:
    session = read_session(path, digest=False, decoded=True)
    assert isinstance(session, Session)
    return "".join(tree_text(session, general=True))


def _assert_same_text(path: Path) -> str:
    general = _general(path)
    for by_offset in (None, True, False):
        assert _fast(path, by_offset=by_offset) == general, (path.name, by_offset)
    return general


def test_fast_tree_text_equals_the_general_path_on_120_generated_sessions(tmp_path: Path) -> None:
    rng = random.Random(14)
    chains = 0
    for trial in range(120):
        chain = trial % 2 == 0
        path = tmp_path / f"s{trial}.jsonl"
        path.write_bytes(b"".join(_session_lines(rng, rng.randrange(1, 120), chain=chain)))
        text = _assert_same_text(path)
        session = read_session(path, digest=False)
        assert isinstance(session, Session)
        chains += session.tree.is_chain
        assert text.count("\n") == len(session.entries)  # (one row per entry: none hidden, none twice)
    assert 25 <= chains <= 95, "both layouts are compared"


def test_fast_tree_text_of_many_rows_crosses_its_write_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seance.cli import session as cli_session

    rng = random.Random(7)
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(_session_lines(rng, 3000, chain=True)))
    for per_write in (1, 2, 7, 10_000):
        monkeypatch.setattr(cli_session, "_LINES_PER_WRITE", per_write)
        _assert_same_text(path)


def test_fast_tree_text_of_an_old_version_or_the_python_port_reads_whole_entries(tmp_path: Path) -> None:
    """A file whose entries are all decoded (migrated, or the port's dialect) has no field
    column: its rows are made from the entries."""
    old = tmp_path / "old.jsonl"
    old.write_bytes(
        _line({"type": "session", "version": 1, "id": "old", "timestamp": STAMP, "cwd": "/p"})
        + _line({"type": "message", "timestamp": STAMP, "message": {"role": "user", "content": "hi"}})
        + _line({"type": "custom", "customType": "ext", "timestamp": STAMP})
    )
    assert _assert_same_text(old).count("\n") == 2


def test_tree_text_cli_prints_the_general_path(tmp_path: Path) -> None:
    rng = random.Random(3)
    for chain in (True, False):
        path = tmp_path / f"cli-{chain}.jsonl"
        path.write_bytes(b"".join(_session_lines(rng, 200, chain=chain)))
        out = subprocess.run(
            [sys.executable, "-m", "seance", "tree", "--text", str(path)], capture_output=True, check=True
        ).stdout
        assert out.decode() == _general(path)


@pytest.mark.slow
def test_fast_tree_text_equals_the_general_path_on_every_corpus_file() -> None:
    files = corpus_files()
    if not files:
        pytest.skip("no ../shared/corpus")
    for path in files:
        if isinstance(read_session(path, digest=False), Session):
            _assert_same_text(path)


def test_rows_joined_by_slicing_equal_the_rows_joined_one_by_one() -> None:
    """`tree --text`'s and `show`'s lines are joined from their columns by list slicing."""
    from itertools import chain

    from seance.cli.session import _rows_joined

    rng = random.Random(5)
    for count in (0, 1, 2, 7, 300):
        ids = [rng.choice([*ODD_IDS, "a", ""]) for _ in range(count)]
        texts = [rng.choice(["user: hi", "", "[bash: ls]", "…"]) for _ in range(count)]
        one_by_one = "".join(chain.from_iterable(("  ", i, " ", t, "\n") for i, t in zip(ids, texts, strict=True)))
        assert _rows_joined(["  ", None, " ", None, "\n"], ids, texts) == one_by_one
        pairs = zip(ids, texts, strict=True)
        assert _rows_joined([None, None, "\n"], ids, texts) == "".join(f"{i}{t}\n" for i, t in pairs)
    with pytest.raises(ValueError):
        _rows_joined([None, None], ["a", "b"], ["c"])
