"""`seance ls --json --query` keeps its printed answer (`Catalog.query_json_parts`): the same
query on exactly the same files and full-text index prints it again without ranking, the
bytes equal to a fresh answer's; anything else (an appended session, other marks, a damaged
stored answer, another scope) gets a fresh one, and stored answers never push out the
listing or grow past their budget."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import orjson
import pytest
from conftest import IndexRowReads

from seance.cli import main
from seance.core import catalog as catalog_module
from seance.core.catalog import ANSWERS_KEPT, Catalog
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME
from seance.core.marks import MarkStore
from seance.core.search import parse_query


def _corpus(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=21, mean_bytes=3000)
    folders = sorted({path.parent for path in root.rglob("*.jsonl")})
    return root, [f"--root={folder}" for folder in folders]


def _ls(capsysbinary: pytest.CaptureFixture[bytes], roots: list[str], query: str, cwd: str = "") -> tuple[int, bytes]:
    """`ls --json --query` over every project (or `cwd`'s): exit code and stdout."""
    code = main(["ls", *([f"--cwd={cwd}"] if cwd else ["--all"]), "--json", *roots, "--query", query])
    return code, capsysbinary.readouterr().out


def _fresh(tmp_path: Path, roots: list[str], query: str, cwd: str | None = None) -> list[dict]:
    """The answer from a private cache that never stored one (the reference)."""
    folders = [Path(root.removeprefix("--root=")) for root in roots]
    catalog = Catalog(folders, cache_dir=tmp_path / f"reference-{len(os.listdir(tmp_path))}")
    try:
        answer = catalog.matching_pi_json(parse_query(query), cwd)
        assert answer is not None
        return [{"pinned": False, "tags": [], **item} for item in json.loads(answer)]
    finally:
        catalog.close()


def _stored(kind: bytes = b"query-json\0") -> list[tuple[bytes, int]]:
    """(scope, payload length) of the stored answers of one kind."""
    path = Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT scope, length(payload) FROM listings").fetchall()
    return [(scope, size) for scope, size in rows if scope.startswith(kind)]


def test_the_same_query_again_prints_the_stored_answer_byte_for_byte(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _root, roots = _corpus(tmp_path)
    expected = _fresh(tmp_path, roots, "sqlt")
    assert len(expected) >= 2
    reads = IndexRowReads(monkeypatch)
    # the first and second rank (the first keeps the answer's key, the second the answer) ...
    printed = [_ls(capsysbinary, roots, "sqlt") for _ in range(2)]
    assert reads.count >= 2
    reads.count = 0
    printed += [_ls(capsysbinary, roots, "sqlt") for _ in range(2)]
    assert reads.count == 0  # ... the later ones print the stored answer
    assert {code for code, _out in printed} == {0}
    assert len({out for _code, out in printed}) == 1  # the stored answer is the bytes a fresh one prints
    assert json.loads(printed[0][1]) == expected
    assert [size > 0 for _scope, size in _stored()] == [True]
    # another query, or the same one in one project, is its own answer
    assert json.loads(_ls(capsysbinary, roots, "fix the")[1]) == _fresh(tmp_path, roots, "fix the")
    cwd = expected[0]["cwd"]
    one_project = json.loads(_ls(capsysbinary, roots, "sqlt", cwd)[1])
    assert one_project == _fresh(tmp_path, roots, "sqlt", cwd)
    # no hit: `[]` and exit 1, stored or not
    assert [_ls(capsysbinary, roots, "zzqqxx") for _ in range(3)] == [(1, b"[]\n")] * 3


def test_an_appended_session_or_new_marks_are_never_answered_from_the_old_answer(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    root, roots = _corpus(tmp_path)
    for _ in range(3):
        _ls(capsysbinary, roots, "sqlt")
    assert [size > 0 for _scope, size in _stored()] == [True]
    # a session that did not match now does: an agent appended to it
    before = {item["path"] for item in json.loads(_ls(capsysbinary, roots, "quokkaword sqlt")[1] or b"[]")}
    assert not before
    path = sorted(root.rglob("*.jsonl"))[5]
    with path.open("rb") as handle:
        *_, last = handle.read().splitlines()
    parent = orjson.loads(last)["id"]
    line = {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": parent,
        "timestamp": "2026-11-26T12:00:00.000Z",
        "message": {"role": "user", "content": "sqlt quokkaword", "timestamp": 1_795_000_000_000},
    }
    with path.open("ab") as handle:
        handle.write(orjson.dumps(line) + b"\n")
    answer = json.loads(_ls(capsysbinary, roots, "sqlt")[1])
    assert answer == _fresh(tmp_path, roots, "sqlt")
    assert str(path) in {item["path"] for item in json.loads(_ls(capsysbinary, roots, "quokkaword sqlt")[1])}
    # marks are not part of a stored answer: a pin made after it puts that session first
    for _ in range(2):
        _ls(capsysbinary, roots, "sqlt")
    last_hit = answer[-1]
    MarkStore().set_pinned(last_hit["id"], True)
    marked = json.loads(_ls(capsysbinary, roots, "sqlt")[1])
    assert marked[0]["path"] == last_hit["path"] and marked[0]["pinned"] is True
    assert [item["path"] for item in marked[1:]] == [item["path"] for item in answer[:-1]]


def test_a_damaged_stored_answer_is_never_printed(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    _root, roots = _corpus(tmp_path)
    first = _ls(capsysbinary, roots, "sqlt")[1]
    assert _ls(capsysbinary, roots, "sqlt")[1] == first  # (the second run stores the answer)
    path = Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME
    with sqlite3.connect(path) as db:  # one byte of the answer changed, its check kept
        kind = (b"query-json\0",)
        (payload,) = db.execute("SELECT payload FROM listings WHERE substr(scope, 1, 11) = ?", kind).fetchone()
        damaged = payload.replace(b'"pinned":false', b'"pinned":fals3', 1)
        assert damaged != payload
        db.execute("UPDATE listings SET payload = ? WHERE substr(scope, 1, 11) = ?", (damaged, *kind))
    assert _ls(capsysbinary, roots, "sqlt")[1] == first


def test_many_queries_keep_their_few_answers_and_never_push_the_listing_out(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _root, roots = _corpus(tmp_path)
    assert main(["ls", "--all", "--json", *roots]) == 0  # the stored `ls --json` answer
    listing = capsysbinary.readouterr().out
    assert len(_stored(b"ls-json\0")) == 1
    words = ["sqlt", "fix", "the", "test", "error", "file", "run", "add", "make", "code", "use"]
    for word in words:
        for _ in range(2):
            _ls(capsysbinary, roots, word)
    assert len(_stored()) == ANSWERS_KEPT
    assert len(_stored(b"ls-json\0")) == 1
    assert main(["ls", "--all", "--json", *roots]) == 0
    assert capsysbinary.readouterr().out == listing
    # an answer over the budget is printed whole and never stored whole (at most as runs
    # of every session's stored objects, `core.queryobjects`)
    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 100)
    printed = [_ls(capsysbinary, roots, "sqlite")[1] for _ in range(3)]
    assert len(set(printed)) == 1 and json.loads(printed[0]) == _fresh(tmp_path, roots, "sqlite")
    assert all(size < len(printed[0]) // 4 for scope, size in _stored() if scope.endswith(b"\0sqlite"))
