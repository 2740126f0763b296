"""The watcher's refresh of the kept stores runs in a process of its own (`core.watchrefresh`),
never in a fork of the watcher, which has the index open.

Found in review: a forked child's SQLite connection joined the per-process lock table it
inherited and held no lock of its own on the index, so with the watcher killed mid-refresh
an `ls` closing last deleted the WAL under it; the child then read mixed pages, found the
index "malformed" and rebuilt the shared index empty (200 rows -> 0, every run).  A signal
landing right after the fork ran the watcher's handler in the child (the socket unlinked);
a refresh stopped at `REFRESH_LIMIT_S` had no cooldown; stopping one blocked the serve loop
up to 5 s.  Real watchers (in a thread, or `seance index --watch` in a process), real
refresh processes, a real index, real signals.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from write_harness import write_v3

from seance.core import watchd, watchrefresh
from seance.core.catalog import Catalog
from seance.core.watchclient import request, watcher_running

HERE = Path(__file__).resolve().parent
REPO_PARENT = HERE.parents[1]
WAIT_S = 30.0


def _sessions(tmp_path: Path, count: int) -> tuple[Path, Path]:
    root = tmp_path / "sessions"
    (root / "--proj--").mkdir(parents=True)
    for number in range(count):
        write_v3(root / "--proj--" / f"s{number}.jsonl", f"{number:04d}bbbb-refresh")
    cache = tmp_path / "cache"
    cache.mkdir()
    return root, cache


def _append(path: Path, word: str) -> None:
    """An agent's line (a user message with `word`) appended to the session at `path`."""
    line = {
        "type": "message",
        "id": f"z{time.monotonic_ns()}",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": word},
    }
    with open(path, "a") as handle:
        handle.write(json.dumps(line) + "\n")


def _wait_for(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _locks_of(pid: int, inode: int) -> list[str]:
    """The POSIX locks process `pid` holds on the file with `inode` (/proc/locks)."""
    lines = Path("/proc/locks").read_text().splitlines()
    return [line for line in lines if line.split()[4] == str(pid) and line.split()[5].endswith(f":{inode}")]


def _running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie is done)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _rows(cache: Path) -> tuple[int, int]:
    """The index's files rows and its inode (a rebuild makes a new file)."""
    path = cache / "index.v8.sqlite"
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT count(*) FROM files").fetchone()[0], os.stat(path).st_ino
    finally:
        db.close()


@pytest.fixture
def held_watcher(tmp_path: Path) -> Iterator[tuple[Path, Path, Path, subprocess.Popen[bytes]]]:
    """`seance index --watch` over 200 sessions whose refresh is held at `remake_answers`
    (tests/refresh_hold.py): (root, cache, hold dir, the watcher's process), answers kept."""
    root, cache = _sessions(tmp_path, 200)
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "SEANCE_NO_WATCH"}
    env.update(PYTHONPATH=str(REPO_PARENT), SEANCE_CACHE_DIR=str(cache), HOLD_DIR=str(hold))
    log = tmp_path / "watch.log"
    with open(log, "wb") as out:
        watcher = subprocess.Popen(
            [sys.executable, str(HERE / "refresh_hold.py"), "index", "--watch", "--root", str(root)],
            env=env,
            stderr=out,
        )
    try:
        _wait_for(lambda: b"watching (" in log.read_bytes(), log.read_text())
        ls = [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(root), "--query"]
        for word in ["question"] * 3 + ["answer"] * 2:  # the rows kept, every session's objects, answers
            assert subprocess.run([*ls, word], env=env, capture_output=True).returncode in (0, 1)
        _append(root / "--proj--" / "s7.jsonl", "held again")  # once quiet, a refresh: held at its answers
        _wait_for(lambda: (hold / "ready").exists(), log.read_text())
        yield root, cache, hold, watcher
    finally:
        (hold / "go").write_text("go")
        if watcher.poll() is None:
            watcher.terminate()
        watcher.wait(WAIT_S)


def test_the_refresh_process_holds_its_own_locks_on_the_index(
    held_watcher: tuple[Path, Path, Path, subprocess.Popen[bytes]],
) -> None:
    """Held mid-refresh with its index connection open, the refresh process holds a read
    lock on the index, as any `ls` does (a forked child held none: it believed the
    watcher's were its own); and it is not the watcher forked (its own executable run)."""
    _root, cache, hold, watcher = held_watcher
    pid = int((hold / "ready").read_text())
    assert pid != watcher.pid and Path(f"/proc/{pid}/stat").read_text().split()[3] == str(watcher.pid)
    assert "refresh_hold.py" in Path(f"/proc/{pid}/cmdline").read_bytes().decode()
    inode = os.stat(cache / "index.v8.sqlite").st_ino
    assert any(" READ " in line for line in _locks_of(pid, inode)), _locks_of(pid, inode)


def test_a_watcher_killed_mid_refresh_takes_its_refresh_along_and_the_index_survives_an_ls(
    held_watcher: tuple[Path, Path, Path, subprocess.Popen[bytes]],
) -> None:
    """The watcher killed (kill -9, OOM) while its refresh runs: the refresh process dies with
    it, and agents' appends and an `ls` after leave every row of the shared index where it
    was (the review's run: the orphaned child rebuilt it empty)."""
    root, cache, hold, watcher = held_watcher
    pid = int((hold / "ready").read_text())
    rows, inode = _rows(cache)
    watcher.kill()
    watcher.wait(WAIT_S)
    _wait_for(lambda: not _running(pid), "the refresh process outlived its watcher")
    for number in range(0, 200, 2):
        _append(root / "--proj--" / f"s{number}.jsonl", f"after {number}")
    env = {**os.environ, "PYTHONPATH": str(REPO_PARENT), "SEANCE_CACHE_DIR": str(cache), "SEANCE_NO_WATCH": "1"}
    ls = [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(root), "--query", "again"]
    assert subprocess.run(ls, env=env, capture_output=True).returncode in (0, 1)
    (hold / "go").write_text("go")
    time.sleep(0.5)
    assert not (hold / "done").exists()  # (it never went on)
    assert _rows(cache) == (rows, inode) and rows == 200


def test_a_background_catalog_never_heals_a_damaged_index(tmp_path: Path) -> None:
    """`Catalog(heal=False)` (the refresh process's): damage found in use is raised, not
    rebuilt; an index that cannot be opened is left as it is, byte for byte.  A foreground
    catalog rebuilds both (what the refresh leaves to it)."""
    import sqlite3 as sqlite

    from seance.core.index import IndexUnavailable
    from seance.core.search import parse_query

    root, cache = _sessions(tmp_path, 6)
    first = Catalog([root], cache_dir=cache)
    first.update_index()
    first.close()  # (a connection left open would write its WAL back into the file damaged below)
    rows, inode = _rows(cache)

    def malformed(_index: object) -> None:
        raise sqlite.DatabaseError("database disk image is malformed")

    background = Catalog([root], cache_dir=cache, heal=False)
    with pytest.raises(sqlite.DatabaseError):
        background._guarded(malformed)
    background.close()
    assert _rows(cache) == (rows, inode) and rows == 6
    index = cache / "index.v8.sqlite"
    for suffix in ("-wal", "-shm"):
        (cache / f"index.v8.sqlite{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"not a database at all" * 100)
    damaged = index.read_bytes()
    background = Catalog([root], cache_dir=cache, heal=False)
    assert background.index is None and background.refresh_kept([]) is None
    assert background.remake_answers(background.discover(), b"k" * 32, 2) == []
    with pytest.raises(IndexUnavailable):  # (never every session file read instead)
        background.ranked(parse_query("question"), None)
    background.close()
    assert index.read_bytes() == damaged
    foreground = Catalog([root], cache_dir=cache)
    foreground.update_index()
    foreground.close()
    assert _rows(cache)[0] == 6


@pytest.fixture
def watcher_thread(tmp_path: Path) -> Iterator[tuple[Path, Path, watchd.Watcher, list[str]]]:
    """A real watcher serving 4 sessions on a thread of this process: (root, cache, it, its log)."""
    root, cache = _sessions(tmp_path, 4)
    catalog = Catalog([root], cache_dir=cache)
    said: list[str] = []
    lock = watchd.take_lock(cache)  # (as `seance index --watch` does: clients ask only a lock holder)
    watcher = watchd.Watcher(catalog, cache, log=said.append)
    ready = threading.Event()
    server = threading.Thread(target=watcher.serve, kwargs={"ready": ready.set})
    server.start()
    try:
        assert ready.wait(WAIT_S)
        yield root, cache, watcher, said
    finally:
        watcher.stop()
        server.join(WAIT_S)
        catalog.close()
        watchd.release_lock(lock)


def _status(cache: Path) -> dict:
    conn = request(cache, b"STATUS", 5.0)
    assert conn is not None, "the watcher serves"
    try:
        return json.loads(conn.recv(1 << 16).split(b"\n")[0])
    finally:
        conn.close()


def test_a_sigterm_to_the_refresh_never_touches_the_watchers_socket_or_lock_3_trials(
    watcher_thread: tuple[Path, Path, watchd.Watcher, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM (a process group's stop, a user's `kill`) reaching the refresh process at
    once, while it starts: the watcher's socket and lock stay, it answers, and it says the
    refresh ended without its work (a forked child ran the watcher's handler there: the
    socket unlinked, the watcher's cleanup said it stopped watching)."""
    monkeypatch.setattr(watchd, "REFRESH_QUIET_S", 0.05)
    root, cache, watcher, said = watcher_thread
    first = root / "--proj--" / "s1.jsonl"
    for trial in range(3):
        _wait_for(lambda: watcher.refresh is None, "the last refresh ended")
        _append(first, f"term{trial}")
        _wait_for(lambda: watcher.refresh is not None, "a refresh started")
        refresh = watcher.refresh
        assert refresh is not None
        os.kill(refresh.process.pid, signal.SIGTERM)
        _wait_for(lambda started=refresh: watcher.refresh is not started, "the refresh was reaped")
        assert refresh.process.returncode != 0, trial
        assert (cache / "watchd.sock").exists() and watcher_running(cache), trial
        assert _status(cache)["pid"] == os.getpid(), trial
    assert not any("brought up to date" in line for line in said[-3:]), said


def test_a_refresh_stopped_at_the_limit_is_followed_by_its_cooldown_and_never_blocks_the_loop(
    watcher_thread: tuple[Path, Path, watchd.Watcher, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh that never ends in time (here one that ignores SIGTERM and sleeps) is
    stopped at `REFRESH_LIMIT_S`; the next starts no sooner than `REFRESH_COOLDOWN` times
    the limit later (it followed at once); the serve loop answers while it is being
    stopped (it polled for up to `REFRESH_STOP_S`), and it is killed and reaped."""
    limit, stop = 0.5, 1.5
    monkeypatch.setattr(watchd, "REFRESH_LIMIT_S", limit)
    monkeypatch.setattr(watchd, "REFRESH_STOP_S", stop)
    monkeypatch.setattr(watchd, "REFRESH_QUIET_S", 0.05)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    monkeypatch.setattr(watchrefresh, "command", lambda *_args: [sys.executable, "-c", stubborn])
    root, cache, watcher, said = watcher_thread
    starts: list[tuple[float, int]] = []
    stops: list[float] = []
    popen = subprocess.Popen

    def counted(*args: object, **kwargs: object) -> subprocess.Popen[bytes]:
        process = popen(*args, **kwargs)  # type: ignore[call-overload]
        starts.append((time.monotonic(), process.pid))
        return process

    monkeypatch.setattr(subprocess, "Popen", counted)
    watcher.log = lambda line: stops.append(time.monotonic()) if "took too long" in line else said.append(line)
    target = root / "--proj--" / "s1.jsonl"
    answered: list[float] = []
    finish = time.monotonic() + 5.0
    while time.monotonic() < finish:  # an agent appending every 0.4 s, a client asking meanwhile
        _append(target, "busy")
        asked = time.monotonic()
        _status(cache)
        answered.append(time.monotonic() - asked)
        time.sleep(0.4)
    assert stops, "a refresh was stopped at the limit"
    gaps = [min((at - stopped for at, _pid in starts if at > stopped), default=99.0) for stopped in stops]
    assert all(gap >= watchd.REFRESH_COOLDOWN * limit for gap in gaps), gaps
    assert max(answered) < 1.0, answered  # (the old stop polled waitpid on the loop for `REFRESH_STOP_S`)
    _wait_for(lambda: not _running(starts[0][1]), "the stubborn refresh was killed")
    with pytest.raises(ChildProcessError):
        os.waitpid(starts[0][1], os.WNOHANG)  # (reaped by the watcher)


def test_a_store_writer_killed_midway_leaves_no_file_once_pruned(tmp_path: Path) -> None:
    """A refresh killed while it writes a kept store (stopped, not ending in time) leaves
    `.KIND-….bin.PID.tmp` (tens of MB at 100,000 sessions, one per kill) that no entry
    names: `keptfile.prune` removes it once its writer is gone, and leaves a live writer's."""
    from seance.core import keptfile
    from seance.core.queryobjects import OBJECTS_KIND

    cache = tmp_path / "cache"
    cache.mkdir()
    path = keptfile.kept_file(cache, b"scope", OBJECTS_KIND)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # (a writer of this test's own: it opens no index)
        try:

            def chunks() -> Iterator[bytes]:  # a big store, written slowly: killed in the middle
                yield b"x" * (1 << 20)
                os.write(write_end, b"1")
                time.sleep(60)
                yield b"y"

            keptfile.write_tagged(path, chunks())
        finally:
            os._exit(0)
    assert os.read(read_end, 1) == b"1"
    keptfile.prune(cache, [], OBJECTS_KIND, grace_s=0)
    assert len(list(cache.iterdir())) == 1  # (its writer runs: left)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert not path.exists()  # (never put in place: never used)
    keptfile.prune(cache, [], OBJECTS_KIND, grace_s=60)
    assert len(list(cache.iterdir())) == 1  # (too young: maybe another writer's, just begun)
    keptfile.prune(cache, [], OBJECTS_KIND, grace_s=0)
    assert sorted(entry.name for entry in cache.iterdir()) == []
