"""An index that heals: whatever happens to the index file, `ls` answers what the files say.

Damaged pages, undecodable or wrongly typed values, missing tables, a truncated file, a
full disk, a lock held by another process, `seance index --rebuild` killed at any point:
the answer is byte for byte the one a fresh cache gives, with exit 0, no traceback, and at
most one line on stderr saying what happened to the index.  Runs the real CLI entry point
(in-process for the many trials, in a child process where a kill or a mount is needed).

One kind of damage is beyond that promise, and the fuzz test says so instead of depending
on where its random bytes land: bytes changed inside FTS5's posting lists (`fts_data`,
`fts_idx` pages).  SQLite keeps no page checksums, and the full-text signature counts the
index's pages: it catches lost, added or truncated pages, not a changed byte inside one.
Catching that needs every posting list read and checksummed on every query (103 MB, 61 ms
of CPU at 10,000 sessions; 436 MB, 0.3 s at 100,000, measured), more than the query itself.
Such a query may then miss or add hits, as the damaged list says, until `seance index
--rebuild`: the test holds it to valid JSON of real sessions, the other listings exact, and
a small share of the trials.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from seance.cli import main
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME

REPO_PARENT = Path(__file__).resolve().parents[2]  # the directory that holds the `seance` package

SESSIONS = 16
QUERY = "index"  # generated text is code and prose about the index: found in some sessions, not all


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.BytesIO, io.StringIO]]:
    out, err = io.BytesIO(), io.StringIO()
    text_out = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = text_out, err
    try:
        yield out, err
    finally:
        text_out.flush()
        text_out.detach()  # leaves `out` open to be read
        sys.stdout, sys.stderr = saved


def seance(args: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes, str]:
    """The real `seance` entry point in this process: (exit code, stdout, stderr).  Any
    exception escaping `main` (a traceback for a user) fails the test."""
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    monkeypatch.setenv("SEANCE_WORKERS", "1")
    with _captured() as (out, err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def seance_process(args: list[str], cache: Path, **kwargs: object) -> subprocess.Popen:
    env = {**os.environ, "SEANCE_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO_PARENT), "SEANCE_WORKERS": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "seance", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,  # type: ignore[arg-type]
    )


def index_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("healing") / "sessions"
    generate_corpus(root, sessions=SESSIONS, projects=3, seed=11, mean_bytes=6_000)
    return root


def commands(root: Path, project: str) -> list[list[str]]:
    """The listings compared: the fast path (all projects, one project), the summaries path
    (`--sort created`) and a full-text query."""
    base = ["--root", str(root), "ls"]
    return [
        [*base, "--all", "--json"],
        [*base, "--cwd", project, "--json"],
        [*base, "--all", "--json", "--sort", "created"],
        [*base, "--all", "--json", "--query", QUERY],
    ]


@pytest.fixture(scope="module")
def expected(store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """What a fresh cache answers for each command, and a template cache made by using it."""
    mp = pytest.MonkeyPatch()
    try:
        fresh = tmp_path_factory.mktemp("fresh")
        code, out, err = seance(["--root", str(store), "ls", "--all", "--json"], fresh / "probe", mp)
        assert code == 0 and err == ""
        listed = json.loads(out)
        assert len(listed) == SESSIONS
        project = listed[0]["cwd"]
        answers = {}
        for args in commands(store, project):
            answers[tuple(args)] = seance(args, fresh / f"cache-{len(answers)}", mp)
            assert answers[tuple(args)][2] == "", answers[tuple(args)]
        query_hits = json.loads(answers[tuple(commands(store, project)[3])][1])
        assert 0 < len(query_hits) < SESSIONS, "the query must tell sessions apart"
        # the template: an index with full text and every stored listing, as after real use
        template = fresh / "template"
        assert seance(["--root", str(store), "index"], template, mp)[0] == 0
        for args in commands(store, project):
            assert seance(args, template, mp)[1:] == answers[tuple(args)][1:]
        assert not (template / f"{DB_NAME}-wal").exists()
        # the same with the last writes still in the WAL (a reader pinned it, as another seance would)
        wal_template = fresh / "wal-template"
        shutil.copytree(template, wal_template)
        pin = sqlite3.connect(wal_template / DB_NAME, isolation_level=None)
        pin.execute("BEGIN")
        pin.execute("SELECT count(*) FROM files").fetchone()
        assert seance(["--root", str(store), "index", "--rebuild"], wal_template, mp)[0] == 0
        wal_copy = fresh / "wal-copy"
        wal_copy.mkdir()
        for suffix in ("", "-wal"):
            shutil.copy(wal_template / f"{DB_NAME}{suffix}", wal_copy / f"{DB_NAME}{suffix}")
        pin.execute("ROLLBACK")
        pin.close()
        assert (wal_copy / f"{DB_NAME}-wal").stat().st_size > 0
        return {"answers": answers, "template": template, "wal_template": wal_copy, "project": project}
    finally:
        mp.undo()


# -- the corruptions -------------------------------------------------------------------------


def _overwrite(path: Path, rng: random.Random) -> str:
    data = bytearray(path.read_bytes())
    places = rng.randint(1, 6)
    for _ in range(places):
        at = rng.randrange(len(data))
        run = rng.randint(1, 32)
        data[at : at + run] = rng.randbytes(min(run, len(data) - at))
    path.write_bytes(bytes(data))
    return f"{places} random runs in {path.name}"


def random_bytes_in_db(cache: Path, rng: random.Random) -> str:
    return _overwrite(cache / DB_NAME, rng)


def random_bytes_in_wal(cache: Path, rng: random.Random) -> str:
    return _overwrite(cache / f"{DB_NAME}-wal", rng)


def truncated(cache: Path, rng: random.Random) -> str:
    path = cache / DB_NAME
    size = rng.randrange(path.stat().st_size)
    os.truncate(path, size)
    return f"truncated to {size}"


def _sql(cache: Path, statement: str, params: tuple = ()) -> None:
    db = sqlite3.connect(cache / DB_NAME)
    try:
        db.execute(statement, params)
        db.commit()
    finally:
        db.close()


_BAD_JSON = [
    b'{"broken',
    b"[]",
    b"{}",
    b"null",
    b'{"path": "/elsewhere.jsonl", "id": "x"}',
    b"\xff\xfe\x00",
    b"",
    b'[1, 2, 3, "four", 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]',
]


def bad_json_blob(cache: Path, rng: random.Random) -> str:
    table, column, key = rng.choice(
        [
            ("files", "pi_json", "file_id"),
            ("files", "summary", "file_id"),
            ("states", "state", "file_id"),
            ("listings", "payload", "rowid"),
        ]
    )
    value = rng.choice(_BAD_JSON)
    if rng.random() < 0.4:  # valid JSON with one value changed: only a check can tell
        db = sqlite3.connect(cache / DB_NAME)
        original = db.execute(f"SELECT {column} FROM {table} ORDER BY random() LIMIT 1").fetchone()
        db.close()
        if original and original[0]:
            value = original[0].replace(b"1", b"2", 1) if b"1" in original[0] else original[0] + b" "
    _sql(
        cache,
        f"UPDATE {table} SET {column} = ? WHERE {key} IN (SELECT {key} FROM {table} ORDER BY random() LIMIT 3)",
        (value,),
    )
    return f"{table}.{column} = {value[:40]!r}"


def deleted_fts_rows(cache: Path, rng: random.Random) -> str:
    table = rng.choice(["fts_data", "fts_data", "fts_idx", "fts_docsize", "fts_content"])
    count = rng.randint(1, 5)
    key = "segid, term" if table == "fts_idx" else "rowid"  # fts_idx is WITHOUT ROWID
    _sql(cache, f"DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} ORDER BY random() LIMIT {count})")
    return f"{count} rows of {table} deleted"


_WRONG_VALUES = ["abc", 3.5, b"\x00\xff", -7, 0, 1, 2**40, "1", None]


def wrong_column_type(cache: Path, rng: random.Random) -> str:
    table, column = rng.choice(
        [
            *(("files", column) for column in ("path", "size", "mtime_ns", "session", "reason", "modified_ms")),
            *(("files", column) for column in ("cwd", "summary", "pi_json", "text_seq", "json_check")),
            ("files", "summary_check"),
            ("states", "state"),
            ("states", "checksum"),
            *(("listings", column) for column in ("payload", "reused", "skipped", "checksum", "files")),
        ]
    )
    for _attempt in range(10):
        value = rng.choice(_WRONG_VALUES)
        try:
            _sql(
                cache,
                f"UPDATE {table} SET {column} = ? WHERE rowid IN (SELECT rowid FROM {table} ORDER BY random() LIMIT 2)",
                (value,),
            )
        except sqlite3.IntegrityError:  # NOT NULL, UNIQUE: another value
            continue
        return f"{table}.{column} = {value!r}"
    return "no wrong value fitted"


def dropped_table(cache: Path, rng: random.Random) -> str:
    table = rng.choice(
        ["files", "states", "listings", "fts", "fts_data", "fts_idx", "fts_content", "fts_docsize", "fts_config"]
    )
    _sql(cache, f"DROP TABLE {table}")
    return f"dropped {table}"


CORRUPTIONS: list[Callable[[Path, random.Random], str]] = [
    random_bytes_in_db,
    random_bytes_in_db,
    random_bytes_in_wal,
    truncated,
    bad_json_blob,
    deleted_fts_rows,
    wrong_column_type,
    dropped_table,
]


FTS_POSTINGS = {"fts_data", "fts_idx"}  # FTS5's posting lists and the index of their pages


def page_owners(cache: Path) -> dict[int, str]:
    """Page number -> the table or index it belongs to (SQLite's `dbstat`), read from a
    scratch copy of `cache` (its WAL included), so the template stays as it was."""
    scratch = cache.parent / f"{cache.name}-pages"
    shutil.copytree(cache, scratch)
    try:
        db = sqlite3.connect(scratch / DB_NAME)
        try:
            return {page: name for name, page in db.execute("SELECT name, pageno FROM dbstat")}
        finally:
            db.close()
    finally:
        shutil.rmtree(scratch)


def damaged_pages(cache: Path, template: Path) -> set[int]:
    """The page numbers whose bytes differ between `cache` and the `template` it was copied
    from: in the database file by offset, in the WAL by the frames' page numbers."""
    original = (template / DB_NAME).read_bytes()
    size = int.from_bytes(original[16:18], "big")
    size = 65536 if size == 1 else size
    pages: set[int] = set()
    damaged = (cache / DB_NAME).read_bytes()
    for start in range(0, max(len(original), len(damaged)), size):
        if damaged[start : start + size] != original[start : start + size]:
            pages.add(start // size + 1)
    wal = template / f"{DB_NAME}-wal"
    if wal.exists():
        before, after = wal.read_bytes(), (cache / f"{DB_NAME}-wal").read_bytes()
        frame = 24 + size
        for start in range(32, len(before), frame):
            if after[start : start + frame] != before[start : start + frame]:
                pages.add(int.from_bytes(before[start : start + 4], "big"))
    return pages


def answers_real_sessions(got: tuple[int, bytes, str], sessions: set[str]) -> bool:
    """Exit 0, at most one line on stderr, and a JSON array of sessions the store holds."""
    code, out, err = got
    try:
        listed = json.loads(out)
    except ValueError:
        return False
    return (
        code == 0
        and len(index_lines(err)) <= 1
        and isinstance(listed, list)
        and all(isinstance(item, dict) and item.get("id") in sessions for item in listed)
    )


def in_posting_lists(corrupt: Callable, cache: Path, template: Path, owners: dict[int, str]) -> bool:
    """Whether `corrupt` changed bytes in a page of FTS5's posting lists (the module docstring)."""
    return corrupt in (random_bytes_in_db, random_bytes_in_wal) and any(
        owners.get(page) in FTS_POSTINGS for page in damaged_pages(cache, template)
    )


def check_damaged(
    args: list[str],
    got: tuple[int, bytes, str],
    want: tuple[int, bytes, str],
    what: str,
    postings: bool,
    sessions: set[str],
) -> bool:
    """`check_against_fresh`, but for a query over damaged posting lists (`postings`) an
    answer of real sessions is accepted; True when it was accepted so (it differed)."""
    if postings and "--query" in args and got[1] != want[1]:
        assert answers_real_sessions(got, sessions), f"{what}: the query's answer is not real sessions"
        return True
    check_against_fresh(args, got, want, what)
    return False


def _session_ids(answers: dict) -> set[str]:
    """The ids of every session in the store (from the fresh `ls --all --json`)."""
    return {item["id"] for item in json.loads(answers[next(iter(answers))][1])}


def _owners(expected: dict) -> dict[Path, dict[int, str]]:
    """`page_owners` of both templates."""
    return {template: page_owners(template) for template in (expected["template"], expected["wal_template"])}


def check_against_fresh(args: list[str], got: tuple[int, bytes, str], want: tuple[int, bytes, str], what: str) -> None:
    code, out, err = got
    assert (code, out) == want[:2], f"{what}: {' '.join(args[2:])} answered differently (exit {code}, stderr {err!r})"
    lines = index_lines(err)
    assert len(lines) <= 1, f"{what}: more than one line on stderr: {lines}"
    assert all("index" in line for line in lines), f"{what}: {lines}"


@pytest.mark.slow
def test_index_fuzz_240_corruptions_list_as_a_fresh_cache(
    store: Path, expected: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 6: damaged index contents never give a traceback, invalid JSON or a wrong listing."""
    rng = random.Random(20261126)
    answers = expected["answers"]
    sessions, owners = _session_ids(answers), _owners(expected)
    trials = 240
    notices = 0
    in_postings: list[str] = []  # trials whose query read a damaged posting list (the module docstring)
    for trial in range(trials):
        corrupt = CORRUPTIONS[trial % len(CORRUPTIONS)]
        cache = tmp_path / f"trial-{trial}"
        template = expected["wal_template"] if corrupt is random_bytes_in_wal else expected["template"]
        shutil.copytree(template, cache)
        what = f"trial {trial}: {corrupt(cache, rng)}"
        postings = in_posting_lists(corrupt, cache, template, owners[template])
        order = list(answers)
        rng.shuffle(order)
        for args in [*order[: 2 if trial % 4 else 4], order[0]]:  # the last: healed, the next run is right
            got = seance(list(args), cache, monkeypatch)
            notices += bool(got[2])
            if check_damaged(list(args), got, answers[args], what, postings, sessions):
                in_postings.append(what)
        shutil.rmtree(cache)
    assert notices > trials // 4, "the corruptions must mostly be noticed and said"
    assert len(set(in_postings)) <= trials // 40, f"damaged posting lists answered too often: {in_postings}"


def test_damaged_rows_are_read_again_and_the_index_heals(
    store: Path, expected: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 6, one by one: each kind of damage the adversarial pass found (a JSON blob that
    does not decode, a stored answer that is not JSON, deleted fts_data rows)."""
    answers = expected["answers"]
    all_json, _project, created, query = list(answers)
    cases = [
        ("UPDATE files SET summary = x'7b2262726f6b656e'", created),  # {"broken: JSONDecodeError before
        ("UPDATE listings SET payload = CAST('[{\"path\": ' AS BLOB)", all_json),  # printed as is before
        ("DELETE FROM fts_data WHERE rowid IN (SELECT rowid FROM fts_data ORDER BY rowid DESC LIMIT 3)", query),
        ('UPDATE files SET pi_json = CAST(\'{"path":"/forged.jsonl"}\' AS BLOB)', None),
        ("UPDATE files SET text_seq = 'many'", query),
        ("UPDATE states SET state = x'00'", None),
    ]
    for number, (statement, args) in enumerate(cases):
        cache = tmp_path / f"case-{number}"
        shutil.copytree(expected["template"], cache)
        _sql(cache, statement)
        if statement.startswith("UPDATE files SET pi_json"):
            _sql(cache, "DELETE FROM listings")  # the rows path, not the stored answer
            args = all_json
        if args is None:
            args = all_json
        for _run in range(2):
            check_against_fresh(list(args), seance(list(args), cache, monkeypatch), answers[args], statement)


@pytest.mark.slow
def test_index_fuzz_20_corruptions_in_a_child_process(store: Path, expected: dict, tmp_path: Path) -> None:
    """The same through `python -m seance`: what a user's terminal sees, interpreter and all."""
    rng = random.Random(7)
    answers = expected["answers"]
    sessions, owners = _session_ids(answers), _owners(expected)
    for trial in range(20):
        corrupt = CORRUPTIONS[trial % len(CORRUPTIONS)]
        cache = tmp_path / f"trial-{trial}"
        template = expected["wal_template"] if corrupt is random_bytes_in_wal else expected["template"]
        shutil.copytree(template, cache)
        what = f"trial {trial}: {corrupt(cache, rng)}"
        postings = in_posting_lists(corrupt, cache, template, owners[template])
        args = list(answers)[trial % len(answers)]
        child = seance_process(list(args), cache)
        out, err = child.communicate(timeout=60)
        assert "Traceback" not in err.decode(), what
        check_damaged(list(args), (child.returncode, out, err.decode()), answers[args], what, postings, sessions)


# -- a locked index ----------------------------------------------------------------------------


def test_a_locked_index_still_answers(
    store: Path, expected: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection holding the write lock (EXCLUSIVE, mid-write): `ls` answers from
    the files (or its stored answer), right, with at most one line saying so."""
    from seance.core.index import Index

    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    answers = expected["answers"]
    for mode in ("EXCLUSIVE", "IMMEDIATE"):
        for fresh_listings in (False, True):
            cache = tmp_path / f"locked-{mode}-{fresh_listings}"
            shutil.copytree(expected["template"], cache)
            if fresh_listings:
                _sql(cache, "DELETE FROM listings")
            holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
            holder.execute(f"BEGIN {mode}")
            holder.execute("DELETE FROM files WHERE rowid IN (SELECT rowid FROM files LIMIT 3)")
            try:
                for args in answers:
                    check_against_fresh(list(args), seance(list(args), cache, monkeypatch), answers[args], mode)
                # `index` itself worked into a private index, dropped at its end: nothing was
                # indexed where the next command looks, and it says so (exit 2), as with a
                # read-only one
                code, out, err = seance(["--root", str(store), "index"], cache, monkeypatch)
                assert code == 2 and "locked" in err and "nothing was indexed" in err, err
                assert not out
            finally:
                holder.execute("ROLLBACK")
                holder.close()
            assert not [path.name for path in cache.iterdir() if path.name.startswith("index-")]


# -- a full disk ---------------------------------------------------------------------------------


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs, to be filled up by the test (skipped where mounting is not permitted)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if not shutil.which("mount") or (hasattr(os, "geteuid") and os.geteuid() != 0):
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _stored_listings(cache: Path) -> int:
    """How many listing answers the index holds (read only: the disk is full)."""
    db = sqlite3.connect(f"file:{cache / DB_NAME}?mode=ro", uri=True)
    try:
        return db.execute("SELECT count(*) FROM listings").fetchone()[0]
    finally:
        db.close()


def _fill(directory: Path) -> None:
    """Write zeros until the file system says it is full."""
    descriptor = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(descriptor, b"\0" * 4096)
    finally:
        os.close(descriptor)


def test_a_full_disk_lists_from_the_files(
    store: Path, expected: dict, full_tmpfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 4b: the cache on a full disk.  An index made before the disk filled (reads work,
    writes do not) and none at all (cannot even be created): `ls` and `ls --json` answer from
    the files, exit 0, one line saying the index could not be written; `index`, whose one job
    is the index, says so and that nothing was indexed, exit 2."""
    answers = expected["answers"]
    all_json = next(iter(answers))
    # an index from before, without the stored answers: this run must write, and cannot
    cache = full_tmpfs / "cache"
    shutil.copytree(expected["template"], cache)
    _sql(cache, "DELETE FROM listings")
    _sql(cache, "DELETE FROM files WHERE rowid IN (SELECT rowid FROM files LIMIT 5)")
    _fill(full_tmpfs)
    # the fast path once (it leaves the WAL files made), then plain `ls` and `index`, which died
    # with sqlite3.OperationalError tracebacks before
    first = seance(list(all_json), cache, monkeypatch)
    assert first[:2] == answers[all_json][:2]
    assert len(index_lines(first[2])) == 1 and "could not be" in first[2], first[2]
    code, out, err = seance(["--root", str(store), "ls", "--all"], cache, monkeypatch)
    assert code == 0 and len(out.decode().splitlines()) == SESSIONS
    lines = index_lines(err)
    if lines or err:
        assert len(lines) == 1 and "could not be" in lines[0], lines
    # else SQLite wrote into the WAL pages the first command's failed write left (how far that
    # write got depends on what this process had cached): silence is right then
    for rebuild in ([], ["--rebuild"]):
        code, out, err = seance(["--root", str(store), "index", *rebuild], cache, monkeypatch)
        assert code == 2 and not out
        lines = index_lines(err)  # the reason, then what it meant for this command
        assert len(lines) == 2 and "could not be" in lines[0], lines
        assert lines[1] == f"seance: nothing was indexed ({SESSIONS} sessions read, none kept)", lines
    for args in answers:
        got = seance(list(args), cache, monkeypatch)
        check_against_fresh(list(args), got, answers[args], "full disk")
        if "could not be" not in got[2]:  # SQLite reused pages the failed rebuild left in the WAL
            assert got[2] == "", (args, got[2])
    # no index at all, and no room to make one
    empty = full_tmpfs / "empty-cache"
    got = seance(list(all_json), empty, monkeypatch)
    check_against_fresh(list(all_json), got, answers[all_json], "full disk, no index")
    assert "could not be" in got[2]


# -- kill -9 during `seance index --rebuild` ---------------------------------------------------


@pytest.mark.slow
def test_kill_9_during_index_rebuild_60_trials_next_ls_is_right(
    store: Path, expected: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 at a random moment of `seance index --rebuild`: the next `ls --json` is right
    (the old index, the new one, or one rebuilt), and the one after it says nothing."""
    rng = random.Random(99)
    answers = expected["answers"]
    all_json = next(iter(answers))
    cache = tmp_path / "cache"
    shutil.copytree(expected["template"], cache)
    # how long a rebuild takes here, to spread the kills over it: the shortest of three (one
    # slowed by the machine's other load would send most kills after the rebuild is over)
    spans = []
    for _ in range(3):
        started = time.perf_counter()
        child = seance_process(["--root", str(store), "index", "--rebuild"], cache)
        child.communicate(timeout=60)
        spans.append(time.perf_counter() - started)
    span = min(spans)
    killed_early = 0
    for trial in range(60):
        started = time.perf_counter()
        child = seance_process(["--root", str(store), "index", "--rebuild"], cache)
        time.sleep(rng.uniform(0.0, span))
        if child.poll() is None:
            killed_early += 1
        else:  # it was over already: the machine got quicker, the next kills come sooner
            span = min(span, 0.9 * (time.perf_counter() - started))
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        args = list(answers)[trial % len(answers)]
        check_against_fresh(list(args), seance(list(args), cache, monkeypatch), answers[args], f"kill {trial}")
        got = seance(list(all_json), cache, monkeypatch)
        check_against_fresh(list(all_json), got, answers[all_json], f"kill {trial}, the run after")
        assert got[2] == "", f"kill {trial}: the index did not heal: {got[2]!r}"
    assert killed_early >= 30, f"only {killed_early} kills landed during the rebuild"
