"""A big `ls --json --query` answer kept as runs of every session's stored objects
(`core.queryobjects`): printed again byte for byte as a fresh answer prints it, and only for
exactly the files (path, size, mtime) and full-text index it was made from."""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from write_harness import append_user_message

from seance.cli import main
from seance.core import catalog as catalog_module
from seance.core import indexquery
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME
from seance.core.keptfile import prune
from seance.core.marks import unmarked_objects
from seance.core.queryobjects import OBJECTS_KIND, Objects, compact, objects_file, runs, runs_of, write
from seance.core.text import json_safe_as_is

OBJECTS = (b"query-objects\0",)
WORDS = ["sqlite", "the", "fix", "test", "error", "file", "add", "code", "use", "run", '"fix the"', "make", "sqlt"]


@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer over 100 bytes is too big to keep whole (the 71 MB `sqlite` at 100,000)."""
    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 100)


class Rankings:
    """Counts the queries that ranked (not printed from a kept answer)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = indexquery._answered

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return original(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(indexquery, "_answered", counted)


def _corpus(tmp_path: Path, sessions: int = 48) -> tuple[Path, list[str]]:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=sessions, projects=3, seed=33, mean_bytes=3000)
    return root, [f"--root={root}"]


def _ls(capsysbinary: pytest.CaptureFixture[bytes], roots: list[str], query: str, cwd: str = "") -> tuple[int, bytes]:
    code = main(["ls", *([f"--cwd={cwd}"] if cwd else ["--all"]), "--json", *roots, "--query", query])
    return code, capsysbinary.readouterr().out


def _fresh(
    capsysbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    roots: list[str],
    query: str,
    cwd: str = "",
) -> tuple[int, bytes]:
    """The answer printed by a seance whose cache never kept one (the reference)."""
    cache = os.environ["SEANCE_CACHE_DIR"]
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / f"reference-{len(os.listdir(tmp_path))}"))
    try:
        return _ls(capsysbinary, roots, query, cwd)
    finally:
        monkeypatch.setenv("SEANCE_CACHE_DIR", cache)


def _stored(kind: bytes) -> list[bytes]:
    """The stored payloads of one kind of `listings` scope."""
    with sqlite3.connect(Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME) as db:
        rows = db.execute("SELECT scope, payload FROM listings").fetchall()
    return [payload for scope, payload in rows if scope.startswith(kind)]


@pytest.mark.usefixtures("small_budget")
def test_many_queries_kept_as_runs_print_what_a_fresh_answer_prints_byte_for_byte(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _root, roots = _corpus(tmp_path)
    rankings = Rankings(monkeypatch)
    for _ in range(2):  # the rows kept (the first query keeps their key, the second them)
        _ls(capsysbinary, roots, "zzqqxx")
    kept_as_runs = 0
    for word in WORDS:
        reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, word)
        printed = [_ls(capsysbinary, roots, word) for _ in range(3)]  # key, runs, from the runs
        assert printed == [reference] * 3, word
        if _stored(b"query-runs\0") and len(_stored(b"query-runs\0")) > kept_as_runs:
            kept_as_runs = len(_stored(b"query-runs\0"))
            rankings.count = 0
            assert _ls(capsysbinary, roots, word) == reference
            assert rankings.count == 0, word  # printed from the runs: nothing ranked
    assert kept_as_runs >= 3  # most of these words are in most sessions
    assert len(_stored(b"query-objects\0")) == 1  # every answer printed from one store of objects
    # one project: its sessions' positions among every session's objects
    cwd = orjson.loads(printed[0][1])[0]["cwd"]
    reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, "the", cwd)
    assert [_ls(capsysbinary, roots, "the", cwd) for _ in range(3)] == [reference] * 3


@pytest.mark.usefixtures("small_budget")
def test_a_new_words_first_askings_are_written_from_views_of_the_stored_objects(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once every session's objects are kept, a word never asked before is written as its
    kept answer is, from views of them (`cli.output.write_json_views`: at 100,000 sessions
    its 71 MB were joined, then written, 140 ms), on its first askings too: the same bytes."""
    from seance.cli import catalog as cli_catalog

    _root, roots = _corpus(tmp_path)
    words = ["the", "fix", "code"]
    references = {word: _fresh(capsysbinary, monkeypatch, tmp_path, roots, word) for word in words}
    for _ in range(3):  # the rows kept, then every session's objects
        _ls(capsysbinary, roots, "sqlite")
    assert len(_stored(b"query-objects\0")) == 1

    def joined(pieces: object) -> None:
        raise AssertionError("an answer printed from the stored objects was written joined")

    monkeypatch.setattr(cli_catalog, "write_json_pieces", joined)
    for word in words:
        for asking in range(3):  # ranked twice (its key kept, then its runs), then its runs printed
            assert _ls(capsysbinary, roots, word) == references[word], (word, asking)
        # (the scope ends with the query: the temp dir's name in it may hold the word)
        assert any(scope.endswith(b"\0" + word.encode()) for scope in _stored_scopes(b"query-runs\0")), word


def test_an_answer_from_the_stored_objects_is_kept_as_runs_never_as_a_copy_of_them(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default budget too: an answer small enough to keep whole (7 MB at 10,000
    sessions) but printed from every session's stored objects is kept as its runs of them
    (copying it made a word's second asking slower than its first); printed from those, the
    same bytes, nothing ranked."""
    _root, roots = _corpus(tmp_path)
    rankings = Rankings(monkeypatch)
    for _ in range(2):  # the rows kept (the first query keeps their key, the second them)
        _ls(capsysbinary, roots, "zzqqxx")
    for word in ["the", "fix"]:
        reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, word)
        assert [_ls(capsysbinary, roots, word) for _ in range(2)] == [reference] * 2  # key, then runs
        assert len(_stored(b"query-objects\0")) == 1  # (made by the first big answer)
        assert any(scope.endswith(b"\0" + word.encode()) for scope in _stored_scopes(b"query-runs\0")), word
        rankings.count = 0
        assert _ls(capsysbinary, roots, word) == reference
        assert rankings.count == 0, word  # printed from the runs
        with sqlite3.connect(Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME) as db:
            kept = [
                payload
                for scope, payload in db.execute("SELECT scope, payload FROM listings")
                if scope.startswith(b"query-json\0") and scope.endswith(b"\0" + word.encode())
            ]
        assert kept == [b""], word  # its key only, no copy of the objects


def _stored_scopes(kind: bytes) -> list[bytes]:
    with sqlite3.connect(Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME) as db:
        return [scope for (scope,) in db.execute("SELECT scope FROM listings") if scope.startswith(kind)]


@pytest.mark.slow
@pytest.mark.usefixtures("small_budget")
def test_kept_runs_after_appends_12_trials_are_never_the_old_answer(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, roots = _corpus(tmp_path, sessions=32)
    files = sorted(root.rglob("*.jsonl"))
    chance = random.Random(14)
    for trial in range(12):
        word = chance.choice(["the", "fix", "sqlite", "error"])
        for _ in range(3):
            _ls(capsysbinary, roots, word)  # kept as runs by now
        # an agent appends to a session: a word it did not hold, or one more of its words
        append_user_message(chance.choice(files), f"{word} quokka{trial}" if trial % 2 else f"quokka{trial}")
        reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, word)
        assert [_ls(capsysbinary, roots, word) for _ in range(3)] == [reference] * 3, trial
        reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, f"{word} quokka{trial}")
        assert _ls(capsysbinary, roots, f"{word} quokka{trial}") == reference, trial


@pytest.mark.usefixtures("small_budget")
def test_damaged_or_other_objects_are_never_printed(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    _root, roots = _corpus(tmp_path)
    reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, "the")
    for _ in range(4):
        assert _ls(capsysbinary, roots, "the") == reference
    assert _stored(b"query-runs\0") and _stored(b"query-objects\0")
    path = Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME
    rankings = Rankings(monkeypatch)
    # one byte of the objects changed: ranked again, the same bytes
    (objects,) = Path(os.environ["SEANCE_CACHE_DIR"]).glob("query-objects-*")
    data = objects.read_bytes()
    damaged = data.replace(b'"pinned":false', b'"pinned":fals3', 1)
    assert damaged != data
    objects.write_bytes(damaged)
    assert _ls(capsysbinary, roots, "the") == reference
    assert rankings.count == 1
    # objects stored again (another tag): the runs made from the old ones are not theirs
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM listings WHERE substr(scope, 1, 14) = ?", OBJECTS)
    assert _ls(capsysbinary, roots, "fix") == _fresh(capsysbinary, monkeypatch, tmp_path, roots, "fix")
    rankings.count = 0
    assert _ls(capsysbinary, roots, "the") == reference
    assert rankings.count == 1
    for _ in range(2):
        assert _ls(capsysbinary, roots, "the") == reference
    assert rankings.count == 1  # kept as runs again, of the new objects


def test_runs_and_objects_round_trip_and_refuse_what_is_not_theirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seance.core import queryobjects

    monkeypatch.setattr(queryobjects, "_CHUNK", 2)  # written two at a time: a chunk's comma too
    objects = [b'{"pinned":false,"a":1}', b'{"pinned":false,"b":[2]}', b'{"pinned":false,"c":"x,y"}']

    def stored(scope: bytes) -> tuple[bytes, Path]:
        path = objects_file(tmp_path, scope)
        made = write(path, objects, 7, [2, 0, 1])
        assert made is not None and b"".join(made.objects.parts(runs([0, 1, 2]))) == b"[" + b",".join(objects) + b"]"
        return b"".join(made.entry), path

    entry, path = stored(b"one")
    store = Objects.load(entry, path, 7)
    assert store is not None and len(store) == 3 and store.slots() == [2, 0, 1]
    assert Objects.load(entry, path, 8) is None  # made for other rows
    for order in ([2, 0, 1], [0, 1, 2], [1], [], [2, 1, 0], [1, 2, 0]):
        found = runs(order)
        payload = compact(store.tag, found)
        assert runs_of(payload, store) == found
        assert b"".join(store.parts(found)) == b"[" + b",".join(objects[i] for i in order) + b"]"
    assert runs([0, 1, 2, 5, 6, 3]) == [0, 2, 5, 6, 3, 3]
    other_entry, other_path = stored(b"two")
    other = Objects.load(other_entry, other_path)
    assert other is not None and runs_of(compact(store.tag, [0, 1]), other) is None  # another store's
    assert runs_of(compact(store.tag, [0, 3]), store) is None  # past the end
    assert runs_of(compact(store.tag, [2, 1]), store) is None  # not a run
    assert Objects.load(entry, other_path) is None  # a file that is not the entry's
    assert Objects.load(b"short", path) is None
    path.write_bytes(path.read_bytes().replace(b"x,y", b"x;y"))  # damaged, the same size
    assert Objects.load(entry, path) is None
    path.unlink()
    assert Objects.load(entry, path) is None
    prune(tmp_path, [b"one"], OBJECTS_KIND, grace_s=0)
    assert not other_path.exists()


@pytest.mark.usefixtures("small_budget")
def test_kept_runs_written_from_their_file_are_the_fresh_bytes(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A seance process writing the runs' views to its stdout (a pipe: `writev`, not joined)."""
    _root, roots = _corpus(tmp_path)
    reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, "the")
    env = dict(os.environ)
    script = (
        "import sys; from seance.core import catalog; catalog.ANSWER_BUDGET = 100; "
        "from seance.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    command = [sys.executable, "-c", script, "ls", "--all", "--json", *roots, "--query", "the"]
    for _ in range(4):  # the rows kept, the key, the runs, then printed from them
        done = subprocess.run(command, env=env, capture_output=True, check=False, cwd=tmp_path)
        assert (done.returncode, done.stdout) == reference
    assert _stored(b"query-runs\0")


def test_objects_a_terminal_obeys_or_a_random_tag_64_trials_say_if_written_as_stored(tmp_path: Path) -> None:
    plain = [b'{"path":"/a","b":"x"}', b'{"path":"/b","b":"y"}']
    bidi = [plain[0], '{"path":"/c","b":"\u202e"}'.encode()]
    made = write(tmp_path / "plain", plain, 1, [0, 1])
    assert made is not None and made.objects.safe
    assert b"".join(made.objects.parts([0, 1])) == b"[" + unmarked_objects(plain) + b"]"
    made = write(tmp_path / "bidi", bidi, 1, [0, 1])
    assert made is not None and not made.objects.safe
    assert json_safe_as_is(b'{"a":"caf\xc3\xa9"}') and not json_safe_as_is(b'{"a":"\x7f"}')
    assert json_safe_as_is(b'\xe2\x7f{"a":1}', 2)  # (after `start` only: a store's tag is random)
    for trial in range(64):  # a random tag never makes plain objects unsafe
        made = write(tmp_path / f"plain-{trial}", plain, 1, [0, 1])
        assert made is not None and made.objects.safe, trial
