"""The text heal (`Catalog.heal_text`) when things go wrong: a session it cannot read, a file
that is gone, a full disk, a locked index, the picker left mid-heal, another writer in the
same rows; and what 0.7.8's fold changed beyond the text chunks (the stored title).

The heal records the rules only when every stale session was read again (or its row is
gone), so none is left unhealed for good; it is optional upkeep, so a lock or a full disk
ends it quietly (tried again next time) and never costs the index.  Found by the review of
the heal's merge (their reproductions: EACCES, an unmounted root, a 4 MB tmpfs, a writer
holding the lock, Esc while it runs, two `seance index` while pi appends)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_text_heal import PHRASE, _found, _old_index, _session, _store, needs_node
from ui_harness import picker_app
from write_harness import Agent

from seance.app.screens.session_list import PickerOptions
from seance.cli import main
from seance.core import fulltext, metadata, scanpool
from seance.core.catalog import Catalog, RefreshStats
from seance.core.discovery import stat_file
from seance.core.fulltext import TEXT_RULES, stale_under
from seance.core.index import DB_NAME, Index
from seance.core.text import INTRODUCERS

PACKAGE = str(Path(__file__).resolve().parents[2])  # the directory that holds the `seance` package


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    return tmp_path / "sessions", tmp_path / "cache"


def _stale(cache: Path) -> tuple[int, list[str] | None]:
    """The index's recorded rules and the files whose stored text or title is still stale."""
    index = Index(cache)
    try:
        return index.text_rules(), index.stale_text_files(stale_under(0))
    finally:
        index.close()


def _index(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`seance index --root`: what it printed."""
    assert main(["index", "--root", str(root)]) == 0
    return capsys.readouterr().out


def _line(number: int, text: str) -> str:
    return json.dumps({"type": "message", "id": f"x{number}", "parentId": "t1", "timestamp": "2026-06-01T11:00:09.000Z",
                       "message": {"role": "user", "content": text, "timestamp": 9}}) + "\n"  # fmt: skip


def test_the_introducers_are_esc_and_two_byte_utf8() -> None:
    """`stale_under` looks for ESC as a byte and for the 8-bit introducers by their UTF-8
    bytes, each starting with C2 (its memchr pre-check)."""
    assert INTRODUCERS[0] == "\x1b"
    assert all(len(char.encode()) == 2 and char.encode()[:1] == b"\xc2" for char in INTRODUCERS[1:])
    for char in INTRODUCERS:
        assert stale_under(0)(f"a {char}[1m b".encode())
    assert tuple(char.encode() for char in INTRODUCERS[1:]) == fulltext._INTRODUCER_BYTES


# -- a stale session not read again: the rules stay unrecorded -------------------------------------


def test_a_session_unreadable_during_the_heal_is_healed_by_the_next_run(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One coloured session cannot be opened while `seance index` heals (EACCES: a file pi
    rewrites under a stricter umask, an NFS hiccup, EMFILE): the other is healed and counted,
    the rules are not recorded, and once the file reads again (unchanged: same size and
    mtime, so no refresh reads it) the next run's heal reads it alone."""
    root, cache = env
    coloured, _plain = _store(root, 2, 1)
    _old_index(root, cache, monkeypatch)
    blocked = str(coloured[0])
    real = metadata.scan_file

    def scan_file(path, **kwargs):  # the one file's open fails, as `open_regular` raises it
        if os.fspath(path) == blocked:
            raise PermissionError(13, "Permission denied", blocked)
        return real(path, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(metadata, "scan_file", scan_file)
        out = _index(root, capsys)
    assert "; 1 read again first" in out, out  # the one read, not the one that failed
    assert _stale(cache) == (0, [blocked])
    assert "; 1 read again first" in _index(root, capsys)
    assert _stale(cache) == (TEXT_RULES, [])
    assert _found(root, PHRASE, capsys) == sorted(map(str, coloured))


def test_a_session_that_cannot_be_looked_at_keeps_the_rules_unrecorded_and_its_row(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stale file whose stat fails with EACCES (its folder's permissions changed) is not
    taken for gone: its row is kept and the rules stay unrecorded; the other is healed."""
    from seance.core import catalog as catalog_module

    root, cache = env
    coloured, _plain = _store(root, 2, 1)
    _old_index(root, cache, monkeypatch)
    hidden = str(coloured[0])
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if os.fspath(path) == hidden:
            raise PermissionError(13, "Permission denied", hidden)
        return real_stat(path, *args, **kwargs)

    catalog = Catalog([root], cache_dir=cache)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(catalog_module.os, "stat", stat)
            assert catalog.heal_text() == 1
        assert catalog.index is not None and catalog.index.row(hidden) is not None
        assert catalog.index.text_rules() == 0
        assert catalog.heal_text() == 1
        assert catalog.index.text_rules() == TEXT_RULES
    finally:
        catalog.close()


def test_another_roots_session_away_during_the_heal_is_found_when_it_is_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cache serves two roots; B's folder is away (unmounted, renamed) while `seance
    index --root A` heals every file the index holds: B's stale row is forgotten (A's
    listing never prunes B's rows), so B back unchanged is read as new, its phrase found."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(cache))
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    a, b = tmp_path / "a", tmp_path / "b"
    _session(a, 1, coloured=True)
    b_file = _session(b, 2, coloured=True)
    for root in (a, b):
        _old_index(root, cache, monkeypatch)
    away = tmp_path / "b-away"
    b.rename(away)
    assert "; 1 read again first" in _index(a, capsys)
    away.rename(b)  # back, unchanged (rename keeps every mtime)
    assert _stale(cache) == (TEXT_RULES, [])
    assert "(1 read," in _index(b, capsys)
    assert _found(b, PHRASE, capsys) == [str(b_file)]


def test_a_session_whose_name_alone_is_coloured_gets_the_current_folded_title(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.7.8 also changed search's fold (`haystack.one_line` drops whole sequences) and the
    index stores each session's folded title: one whose name alone holds a sequence (no text
    chunk does) kept 0.7.7's `[32mrelease`.  The heal reads it again too, so its title is
    a cold index's."""
    from seance.core.search import haystack

    root, cache = env
    path = _session(root, 1, coloured=False)
    _session(root, 2, coloured=False)
    stamp, name = "2026-06-01T11:00:05.000Z", "\x1b[32mrelease\x1b[0m prep"
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"type": "session_info", "id": "n1", "parentId": "t1", "timestamp": stamp, "name": name}))
        out.write("\n")
    with monkeypatch.context() as patch:  # 0.7.7's fold: the ESC blanked, the rest kept
        patch.setattr(haystack, "has_introducer", lambda text: False)
        patch.setattr(haystack, "drop_escapes", lambda text: text)
        _old_index(root, cache, monkeypatch)
    assert _stale(cache) == (0, [str(path)])
    healer = Catalog([root], cache_dir=cache)
    try:
        assert healer.heal_text() == 1
    finally:
        healer.close()
    cold = cache.parent / "cold"
    catalog = Catalog([root], cache_dir=cold)
    catalog.update_index()
    catalog.close()

    def titles(where: Path) -> list[tuple[str, bytes]]:
        with sqlite3.connect(where / DB_NAME) as db:
            return sorted(db.execute("SELECT path, title FROM files").fetchall())

    assert _stale(cache) == (TEXT_RULES, [])
    assert titles(cache) == titles(cold)
    assert b"[32m" not in titles(cache)[0][1] + titles(cache)[1][1]


# -- a lock or a full disk: optional upkeep, the index kept ------------------------------------------


def test_a_locked_index_ends_the_heal_quietly_and_the_next_run_heals(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another seance holds the write lock past the busy timeout: the heal gives up (0, the
    rules not recorded) without a "listing from the session files" problem or a lock wait
    counted, the index still the one on disk; once the lock is let go the next call heals."""
    root, cache = env
    coloured, _plain = _store(root, 2, 2)
    _old_index(root, cache, monkeypatch)
    monkeypatch.setattr(Index, "busy_timeout", 0.2)
    catalog = Catalog([root], cache_dir=cache)
    try:
        index = catalog.index
        assert index is not None
        holder = sqlite3.connect(cache / DB_NAME, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            assert catalog.heal_text() == 0
        finally:
            holder.execute("COMMIT")
            holder.close()
        assert catalog.index_problem is None and catalog.lock_waits == 0
        assert catalog.index is index and not index.in_memory
        assert index.text_rules() == 0
        assert len(catalog.refresh()) == 4 and catalog.last_stats.read == 0  # the rows kept
        assert catalog.heal_text() == 2
        assert {hit.path for hit in catalog.search_text(PHRASE)} == set(map(str, coloured))
    finally:
        catalog.close()


def test_a_full_disk_ends_the_heal_quietly_and_keeps_the_index(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk is full (every write fails with SQLITE_FULL, as `_guarded` sees it; the real
    disk below): the heal gives up without dropping the on-disk index for an empty one in
    memory, so the picker's search still finds every session and `seance index` reads none."""
    root, cache = env
    _store(root, 2, 3)
    _old_index(root, cache, monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    try:
        index = catalog.index
        assert index is not None and len(catalog.refresh()) == 5
        with monkeypatch.context() as patch:

            def full(*args: object, **kwargs: object) -> None:
                raise sqlite3.OperationalError("database or disk is full")

            patch.setattr(Index, "writing", full)
            assert catalog.heal_text() == 0
        assert catalog.index is index and not index.in_memory and catalog.index_problem is None
        assert len(catalog.search_text("tunnel")) == 5
        assert catalog.update_index() == 5 and catalog.last_stats.read == 0
    finally:
        catalog.close()


_FULL_DISK = """
import json, sys
from pathlib import Path
from seance.core.catalog import Catalog
root, cache = Path(sys.argv[1]), Path(sys.argv[2])
catalog = Catalog([root], cache_dir=cache)
rows = len(catalog.refresh())
before = len(catalog.search_text("tunnel"))
healed = catalog.heal_text()
after = len(catalog.search_text("tunnel"))
count = catalog.update_index()
print(json.dumps({"rows": rows, "before": before, "healed": healed, "after": after, "count": count,
                  "read": catalog.last_stats.read, "memory": catalog.index.in_memory,
                  "problem": catalog.index_problem}))
"""


def test_a_real_full_disk_ends_the_heal_quietly_and_keeps_the_index(
    env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same on a real full file system: the old index copied into a 4 MB tmpfs (in a
    mount namespace of its own: `unshare -rm`) whose free space is filled."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("no unshare -rm here (user and mount namespaces)")
    root, cache = env
    _store(root, 2, 3)
    _old_index(root, cache, monkeypatch)
    with contextlib.closing(sqlite3.connect(cache / DB_NAME)) as db:  # (no WAL space to write into again)
        assert db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    mount = root.parent / "mnt"
    mount.mkdir()
    script = root.parent / "full_disk.py"
    script.write_text(_FULL_DISK, encoding="utf-8")
    shell = (
        f"mount -t tmpfs -o size=4M tmpfs {mount} && cp -a {cache} {mount}/cache && "
        f"avail=$(df --output=avail -k {mount} | tail -1) && "
        f"(dd if=/dev/zero of={mount}/filler bs=1k count=$((avail - 48)) 2>/dev/null || true) && "
        f"{sys.executable} {script} {root} {mount}/cache"
    )
    environment = {**os.environ, "PYTHONPATH": PACKAGE}
    done = subprocess.run(["unshare", "-rm", "sh", "-c", shell], env=environment, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer == {"rows": 5, "before": 5, "healed": 0, "after": 5, "count": 5, "read": 0, "memory": False,
                      "problem": None}  # fmt: skip


# -- the picker left while it heals ------------------------------------------------------------------


async def test_leaving_the_picker_stops_its_heal(env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The heal runs in the load worker once the rows are listed; Textual waits for its thread
    workers at exit (and pi's extension for `seance pick`).  Leaving cancels the worker, and
    the heal stops at the next file: the rules not recorded (the next run heals), not every
    session read."""
    root, cache = env
    many = scanpool.MIN_FILES // 4  # (scanned in this process: its scans are counted)
    _store(root, many, 2)
    _old_index(root, cache, monkeypatch)
    read: list[str] = []
    started = threading.Event()
    real = scanpool.scan_one

    def slow(info, state, want_text):  # (scan_one's own signature) a slow disk: 50 ms a session
        read.append(info.path)
        started.set()
        time.sleep(0.05)
        return real(info, state, want_text)

    monkeypatch.setattr(scanpool, "scan_one", slow)
    ended: list[int] = []
    heal = Catalog.heal_text
    monkeypatch.setattr(Catalog, "heal_text", lambda self, cancel=None: ended.append(heal(self, cancel)) or ended[-1])
    app = picker_app(root, scope="all", cache_dir=cache, options=PickerOptions(watch=False))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(500):  # (not `settle`: it waits for the workers, the heal's end)
            if started.is_set():
                break
            await pilot.pause(0.02)
        app.exit()
    for _ in range(400):  # the heal's end, however the app's exit went
        if ended:
            break
        time.sleep(0.05)
    assert started.is_set() and ended == [0]
    assert 0 < len(read) < many
    rules, stale = _stale(cache)
    assert rules == 0 and stale is not None and len(stale) > 0


def test_a_cancelled_scan_answers_none(env: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, cache = env
    _store(root, 3, 1)
    _old_index(root, cache, monkeypatch)
    catalog = Catalog([root], cache_dir=cache)
    try:
        assert catalog.index is not None
        assert catalog.index.stale_text_files(stale_under(0), lambda: True) is None
        assert catalog.heal_text(lambda: True) == 0
        assert catalog.index.text_rules() == 0
    finally:
        catalog.close()


# -- two writers in one file's rows ------------------------------------------------------------------


def test_a_continued_write_from_a_row_another_writer_replaced_is_skipped_not_damage(tmp_path: Path) -> None:
    """Two catalogs (two processes' indexes) read an appended session's row; the first
    writes its new chunks, the agent appends again, the second continues from the row it
    read: its chunks would go in at the seqs the first used (FTS5's rowid constraint, once
    "the index was damaged; rebuilt it").  Its write is skipped instead: the index is
    whole, and the next refresh reads the file on from the first writer's state."""
    root, cache = tmp_path / "sessions", tmp_path / "cache"
    path = _session(root, 1, coloured=False)
    first, second = Catalog([root], cache_dir=cache), Catalog([root], cache_dir=cache)
    try:
        first.refresh()
        with path.open("a", encoding="utf-8") as out:
            out.write(_line(2, "second question " * 50))
        info = stat_file(str(path))
        assert first.index is not None and second.index is not None
        row_a, row_b = first.index.row(str(path)), second.index.row(str(path))
        list(first._read_changed([(info, row_a)], RefreshStats(), None, None, True, 1, first.index))
        with path.open("a", encoding="utf-8") as out:
            out.write(_line(3, "third question " * 50))
        info = stat_file(str(path))
        stats = RefreshStats()
        list(second._read_changed([(info, row_b)], stats, None, None, True, 1, second.index))
        assert stats.appended == 1 and second.index_problem is None and first.index_problem is None
        with sqlite3.connect(cache / DB_NAME) as db:
            db.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")
        (summary,) = second.refresh()
        assert second.last_stats.appended == 1 and summary.message_count == 5
        assert {hit.path for hit in second.search_text("third")} == {str(path)}
        assert {hit.path for hit in second.search_text("second")} == {str(path)}
    finally:
        first.close()
        second.close()


@needs_node
@pytest.mark.slow
def test_two_seance_index_processes_while_pi_appends_never_damage_the_index_8_trials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `seance index` processes heal and refresh the same old index at once while pi's
    SessionManager appends to the coloured sessions, 8 times over: neither reports a damaged
    or rebuilt index, the index passes SQLite's and FTS5's checks, and once the agent stops
    it says what a cold read says and finds the agent's last lines."""
    root, cache = tmp_path / "sessions", tmp_path / "cache"
    coloured, _plain = _store(root, 60, 20)
    _old_index(root, cache, monkeypatch)
    environment = {**os.environ, "PYTHONPATH": PACKAGE, "SEANCE_CACHE_DIR": str(cache), "SEANCE_NO_WATCH": "1"}
    agent = Agent(coloured, tmp_path / "stop", interval_us=100)
    try:
        for _trial in range(8):
            with sqlite3.connect(cache / DB_NAME) as db:  # the heal runs again in both
                db.execute("DELETE FROM meta WHERE key = 'text_rules'")
            runs = [
                subprocess.Popen(
                    [sys.executable, "-m", "seance", "index", "--root", str(root)],
                    env=environment,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(2)
            ]
            for run in runs:
                out, err = run.communicate(timeout=120)
                assert run.returncode == 0, err
                assert "damaged" not in out + err and "rebuilt" not in out + err, out + err
            with sqlite3.connect(cache / DB_NAME) as db:
                assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
                db.execute("INSERT INTO fts (fts) VALUES ('integrity-check')")
    finally:
        appended = agent.finish()
    assert all(appended.get(str(path)) for path in coloured[:5]), "the agent appended"
    warm = Catalog([root], cache_dir=cache)
    cold = Catalog([root], cache_dir=tmp_path / "cold")
    try:
        after = warm.refresh()
        assert warm.index_problem is None
        comparable = sorted((s.path, s.id, s.modified, s.message_count, s.size) for s in after)
        assert comparable == sorted((s.path, s.id, s.modified, s.message_count, s.size) for s in cold.refresh())
        assert {hit.path for hit in warm.search_text('"agent"')} == {hit.path for hit in cold.search_text('"agent"')}
        assert {hit.path for hit in warm.search_text(PHRASE)} == set(map(str, coloured))
    finally:
        cold.close()
        warm.close()
