"""Bad input never raises: what is broken is skipped, said, and the rest still works."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import node_oracle_available, run_node

from seance.core.context import build_session_context
from seance.core.session import NotASession, Session, read_session

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}


def _msg(entry_id: str, parent: str | None, role: str = "user", text: str = "hi", ts: int = 0) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{ts:02d}.000Z",
        "message": {"role": role, "content": text},
    }


def _write(path: Path, lines: list[dict | bytes | str]) -> Path:
    with open(path, "wb") as handle:
        for line in lines:
            if isinstance(line, dict):
                handle.write(orjson.dumps(line) + b"\n")
            elif isinstance(line, str):
                handle.write(line.encode() + b"\n")
            else:
                handle.write(line)
    return path


def _load(path: Path) -> Session:
    result = read_session(path)
    assert isinstance(result, Session), result
    return result


def test_malformed_glued_torn_and_non_object_lines_are_skipped_and_said(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            HEADER,
            _msg("a", None),
            "this is not json",
            json.dumps(_msg("x", "a")) + json.dumps(_msg("y", "a")),  # two objects glued
            "[1, 2, 3]",
            "",
            _msg("b", "a", "assistant", "hello", 1),
            b'{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:02.000Z","mess',  # torn
        ],
    )
    session = _load(path)
    assert [e["id"] for e in session.entries] == ["a", "b"]
    reasons = {item.line: item.reason for item in session.skipped}
    assert reasons == {
        3: "not valid JSON",
        4: "two JSON objects glued onto one line",
        5: "a JSON list, not an object",
        8: "torn last line (no newline)",
    }
    assert [m.text for m in build_session_context(session).messages] == ["hi", "hello"]


def test_json_that_orjson_refuses_but_pi_reads(tmp_path: Path) -> None:
    big = (
        b'{"type":"message","id":"a","parentId":null,"n":123456789012345678901234567890,'
        b'"message":{"role":"user","content":"big"}}\n'
    )
    path = _write(tmp_path / "s.jsonl", [HEADER, big, b'{"type":"x","id":"b","v":NaN}\n'])
    session = _load(path)
    assert [e["id"] for e in session.entries] == ["a"]
    assert [item.line for item in session.skipped] == [3]


def test_bytes_that_are_not_utf8_never_crash(tmp_path: Path) -> None:
    raw = orjson.dumps(_msg("a", None, text="caf\u00e9")).replace("caf\u00e9".encode(), b"caf\xe9\xff")
    path = _write(tmp_path / "s.jsonl", [HEADER, raw + b"\n", b"\xff\xfe\x00garbage\n"])
    session = _load(path)
    assert build_session_context(session).messages[0].text == "caf\ufffd\ufffd"
    assert any("not UTF-8" in problem for problem in session.problems)


def test_wrong_field_types(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            HEADER,
            _msg("a", None),
            {"type": "message", "id": 42, "parentId": "a"},  # id not a string
            {"type": 7, "id": "t", "parentId": "a"},  # type not a string
            {"type": "message", "id": "b", "parentId": ["a"], "message": "not a dict"},
            {"type": "message", "id": "c", "parentId": "b", "message": {"role": "user", "content": {"x": 1}}},
            {"type": "compaction", "id": "d", "parentId": "c", "summary": None, "tokensBefore": "lots"},
            {"type": "label", "id": "e", "parentId": "d", "targetId": 5, "label": ["x"]},
            {"type": "thinking_level_change", "id": "f", "parentId": "e", "thinkingLevel": 3},
        ],
    )
    session = _load(path)
    assert [e["id"] for e in session.entries] == ["a", "b", "c", "d", "e", "f"]
    assert session.tree.roots == ["a", "b"]  # b's list-typed parent was dropped, and said
    context = build_session_context(session)
    assert [m.role for m in context.messages] == ["compactionSummary"]
    assert len(session.problems) == 3


def test_header_must_come_first(tmp_path: Path) -> None:
    result = read_session(_write(tmp_path / "s.jsonl", [_msg("a", None), HEADER]))
    assert isinstance(result, NotASession)
    assert isinstance(read_session(_write(tmp_path / "e.jsonl", [])), NotASession)
    no_id = dict(HEADER, id=None)
    assert isinstance(read_session(_write(tmp_path / "n.jsonl", [no_id])), NotASession)


@pytest.mark.parametrize("first", ["[1]", '"x"', "null", "5"])
def test_a_value_that_is_no_object_before_the_header_is_no_session(tmp_path: Path, first: str) -> None:
    """pi checks its first JSON value as the header: a `[1]` line before it makes no session
    (pi's open then truncates the file to a fresh header), and `ls --skipped` and `resolve`
    say so; `show`, `tree` and `export` skipped the line and showed the session anyway."""
    path = _write(tmp_path / "s.jsonl", ["", first, HEADER, _msg("a", None)])
    result = read_session(path)
    assert isinstance(result, NotASession) and result.reason == "line 2 is not a session header"
    code = subprocess.run(
        [sys.executable, "-m", "seance", "show", str(path)], capture_output=True, text=True, timeout=60
    )
    assert code.returncode == 2 and code.stderr.strip().endswith("(line 2 is not a session header)"), code.stderr
    bad = _write(tmp_path / "bad.jsonl", ["garbage", HEADER, _msg("a", None)])  # pi skips a line it cannot parse
    assert isinstance(read_session(bad), Session)
    if first != "null" and node_oracle_available():  # (pi's open throws a TypeError on `null`)
        (pi,) = json.loads(run_node("context_of.mjs", str(path)))  # (pi rewrites the file: last)
        assert pi["nodes"] == [] and pi["messages"] == []


def test_cycles_self_parents_duplicates_and_orphans(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            HEADER,
            _msg("root", None, ts=0),
            _msg("self", "self", ts=1),
            _msg("c1", "c3", ts=2),
            _msg("c2", "c1", ts=3),
            _msg("c3", "c2", ts=4),  # a 3-cycle
            _msg("below", "c2", ts=5),
            _msg("orphan", "nowhere", ts=6),
            _msg("dup", "root", text="first", ts=7),
            _msg("dup", "root", text="second", ts=8),
        ],
    )
    session = _load(path)
    tree = session.tree
    assert tree.roots == ["root", "self", "c1", "orphan"]
    order = [entry_id for entry_id, _ in tree.preorder()]
    assert sorted(order) == sorted(tree.by_id) and len(order) == len(set(order)) == 8
    assert tree.by_id["dup"]["message"]["content"] == "second"
    problems = " | ".join(session.problems)
    assert "duplicate id dup" in problems and "parent cycle" in problems
    assert "own parent" in problems and "parent nowhere is missing" in problems
    # A context walk from inside the (broken) cycle terminates.
    assert [m.entry_id for m in build_session_context(session, "below").messages] == ["c1", "c2", "below"]


def test_a_100k_deep_chain_has_no_recursion_limit(tmp_path: Path) -> None:
    lines = [HEADER] + [_msg(f"e{i}", f"e{i - 1}" if i else None, ts=i % 60) for i in range(100_000)]
    session = _load(_write(tmp_path / "deep.jsonl", lines))
    assert session.leaf_id == "e99999"
    assert sum(1 for _ in session.tree.preorder()) == 100_000
    assert len(session.tree.get_tree()[0].children) == 1
    assert len(build_session_context(session).messages) == 100_000


def test_multi_megabyte_single_line(tmp_path: Path) -> None:
    huge = "x" * 8_000_000
    session = _load(_write(tmp_path / "s.jsonl", [HEADER, _msg("a", None, text=huge)]))
    assert build_session_context(session).messages[0].text == huge


def test_loading_and_showing_never_modify_the_file(tmp_path: Path) -> None:
    v1 = tmp_path / "v1.jsonl"
    _write(
        v1,
        [
            {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
            {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "a"}},
            {"type": "compaction", "timestamp": "2025-01-01T00:00:02.000Z", "summary": "S", "firstKeptEntryIndex": 1},
        ],
    )
    digest = hashlib.sha256(v1.read_bytes()).hexdigest()
    mtime = v1.stat().st_mtime_ns
    session = _load(v1)
    assert session.needs_migration and session.header["version"] == 3
    for command in (["show", str(v1), "--json"], ["tree", str(v1), "--json"], ["tree", str(v1), "--text"]):
        subprocess.run([sys.executable, "-m", "seance", *command], check=True, capture_output=True)
    assert hashlib.sha256(v1.read_bytes()).hexdigest() == digest
    assert v1.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("content", [b"", b"\n\n", b"garbage\n", b'{"type":"message"}\n'])
def test_cli_not_a_session_exits_2_with_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    for command in ("show", "tree"):
        result = subprocess.run(
            [sys.executable, "-m", "seance", command, str(path), "--json"], capture_output=True, text=True
        )
        assert result.returncode == 2
        assert result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and "not a session" in result.stderr
        assert "Traceback" not in result.stderr


def test_cli_unknown_leaf_and_missing_file(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [HEADER, _msg("a", None)])
    result = subprocess.run(
        [sys.executable, "-m", "seance", "show", str(path), "--leaf", "zzz", "--json"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "no entry 'zzz'" in result.stderr
    result = subprocess.run(
        [sys.executable, "-m", "seance", "show", str(tmp_path / "nope.jsonl")], capture_output=True, text=True
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
