"""The resident watcher (`seance index --watch`, core/watchd.py) keeps the listing exact.

A real watcher process over real files and a real index; the client (`core.watchclient`) is
asked for the listing as `ls` asks it.  Each check compares with what discovery finds on disk
right after the change: every write that completed before the request is in the answer.
When the watcher cannot answer (killed, stopped, a stale socket, another layout), the CLI
falls back and stays exact.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ORACLE_DIR, node_oracle_available
from write_harness import write_v3

from seance.core import catalog as catalog_module
from seance.core.catalog import Catalog
from seance.core.discovery import default_roots, discover
from seance.core.fileskey import files_key
from seance.core.index import Index
from seance.core.search import parse_query
from seance.core.watchclient import synced_discovery, synced_listing, watcher_running
from seance.core.watchproto import LOCK_NAME, SOCKET_NAME

REPO_PARENT = Path(__file__).resolve().parents[2]
START_WAIT_S = 30.0

needs_node = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "SEANCE_NO_WATCH"}
    return {**env, "SEANCE_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO_PARENT), **extra}


class Daemon:
    """`seance index --watch --root ROOT` as a child process (`root` None: no `--root`, the
    default roots of this process's environment)."""

    def __init__(self, root: Path | None, cache: Path, *, cwd: Path | None = None) -> None:
        self.root, self.cache = root, cache
        self.log = cache.parent / f"watchd-{time.monotonic_ns()}.log"
        self.log_file = open(self.log, "wb")  # noqa: SIM115
        given = ["--root", str(root)] if root is not None else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "seance", "index", "--watch", *given],
            env=_env(cache),
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=self.log_file,
        )
        deadline = time.monotonic() + START_WAIT_S
        while b"watching (" not in self.log.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the watcher did not start: {self.log.read_text()}")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log_file.close()


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "sessions"
    (root / "--proj--").mkdir(parents=True)
    for number in range(4):
        write_v3(root / "--proj--" / f"s{number}.jsonl", f"{number:04d}bbbb-watched")
    cache = tmp_path / "cache"
    cache.mkdir()
    return root, cache


@pytest.fixture
def daemon(store: tuple[Path, Path]) -> Iterator[Daemon]:
    root, cache = store
    running = Daemon(root, cache)
    try:
        yield running
    finally:
        running.stop()


def _synced(daemon: Daemon) -> list[tuple]:
    found = synced_discovery(daemon.cache, [daemon.root], True)
    assert found is not None, "the watcher answered the sync"
    return [tuple(info) for info in found.infos]


def _on_disk(root: Path) -> list[tuple]:
    return [tuple(info) for info in discover([root]).infos]


def _ls_query(root: Path, cache: Path, word: str, **env: str) -> list[str]:
    return [item["path"] for item in json.loads(_ls_query_out(root, cache, word, **env) or b"[]")]


def _ls_query_out(root: Path, cache: Path, word: str, **env: str) -> bytes:
    """`seance ls --all --json --query word`'s output, in a child process."""
    result = subprocess.run(
        [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(root), "--query", word],
        env=_env(cache, **env),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def _append_user_line(path: Path, text: str) -> None:
    line = {
        "type": "message",
        "id": f"x{time.monotonic_ns() % 10**7:07d}",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": text},
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def _ranked_from_watcher(cache: Path, root: Path, word: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`ls --json --query word`'s sessions, in this process, with discovery forbidden: only the
    watcher's listing can answer."""

    def no_discovery(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("discovery ran: the watcher's listing was not used")

    monkeypatch.setattr(catalog_module, "discover", no_discovery)
    catalog = Catalog([root], cache_dir=cache, watched=True)
    try:
        ranked = catalog.ranked(parse_query(word), None)
        assert ranked is not None
        return [row[1] for row in ranked.rows]
    finally:
        catalog.close()
        monkeypatch.undo()


def test_the_watcher_answers_with_what_discovery_finds(daemon: Daemon) -> None:
    assert watcher_running(daemon.cache)
    assert _synced(daemon) == _on_disk(daemon.root)


def test_an_append_a_new_a_deleted_and_a_renamed_file_are_in_the_next_answer(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = daemon.root / "--proj--"
    _append_user_line(bucket / "s1.jsonl", "appendedword")
    assert _synced(daemon) == _on_disk(daemon.root)
    index = Index(daemon.cache)
    try:  # the watcher indexed it before answering: the client reads nothing
        row = index.row(str(bucket / "s1.jsonl"))
        assert row is not None and row.size == (bucket / "s1.jsonl").stat().st_size
    finally:
        index.close()
    assert _ranked_from_watcher(daemon.cache, daemon.root, "appendedword", monkeypatch) == [str(bucket / "s1.jsonl")]

    write_v3(bucket / "new.jsonl", "9999cccc-newcomer")
    assert _synced(daemon) == _on_disk(daemon.root)
    assert _ranked_from_watcher(daemon.cache, daemon.root, "newcomer", monkeypatch) == [str(bucket / "new.jsonl")]

    (bucket / "s2.jsonl").unlink()
    assert _synced(daemon) == _on_disk(daemon.root)
    assert str(bucket / "s2.jsonl") not in _ranked_from_watcher(daemon.cache, daemon.root, "question", monkeypatch)

    (bucket / "s3.jsonl").rename(bucket / "a3.jsonl")
    assert _synced(daemon) == _on_disk(daemon.root)
    found = _ranked_from_watcher(daemon.cache, daemon.root, "0003bbbb", monkeypatch)
    assert found == [str(bucket / "a3.jsonl")]
    # and the command line says the same, as it does without the watcher
    assert _ls_query(daemon.root, daemon.cache, "0003bbbb") == [str(bucket / "a3.jsonl")]
    listing = [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(daemon.root)]
    watched = subprocess.run(listing, env=_env(daemon.cache), capture_output=True, timeout=60)
    unwatched = subprocess.run(listing, env=_env(daemon.cache, SEANCE_NO_WATCH="1"), capture_output=True, timeout=60)
    assert watched.returncode == unwatched.returncode == 0
    assert watched.stdout == unwatched.stdout and len(json.loads(watched.stdout)) == 4


def test_the_listing_carries_its_files_key_and_a_stored_answer_is_never_stale_6_trials(daemon: Daemon) -> None:
    """The watcher's listing comes with its files' key (`fileskey.files_key`), so the client
    compares it with a stored answer's without decoding the files (`Pending.head`); after
    each of 6 changes (appends, a new file, a removed one) the key is the files' on disk and
    `ls --json` and `ls --json --query`, asked three times (the third printed from the
    store), print what they print without the watcher."""
    bucket = daemon.root / "--proj--"
    listing = [sys.executable, "-m", "seance", "ls", "--all", "--json", "--root", str(daemon.root)]
    keys: list[bytes] = []
    for trial in range(6):
        if trial % 3 == 0:
            _append_user_line(bucket / f"s{trial % 4}.jsonl", f"keyword{trial}")
        elif trial % 3 == 1:
            write_v3(bucket / f"n{trial}.jsonl", f"{trial:04d}dddd-keyed")
        else:
            (bucket / f"n{trial - 1}.jsonl").unlink()
        pending = synced_listing(daemon.cache, [daemon.root], True)
        assert pending is not None and pending.known() is None  # received, not decoded
        on_disk = discover([daemon.root]).infos
        assert pending.head().key == files_key(on_disk) and pending.head().files == len(on_disk)
        assert [tuple(info) for info in pending().infos] == [tuple(info) for info in on_disk]
        keys.append(pending.head().key)
        for command in (listing, [*listing, "--query", f"keyword{trial - trial % 3}"]):
            unwatched = subprocess.run(command, env=_env(daemon.cache, SEANCE_NO_WATCH="1"), capture_output=True)
            for _ in range(3):
                watched = subprocess.run(command, env=_env(daemon.cache), capture_output=True, timeout=60)
                assert (watched.returncode, watched.stdout) == (unwatched.returncode, unwatched.stdout), trial
    # every change changes the key; removing the file added restores the files, and their key
    assert all(key != previous for previous, key in itertools.pairwise(keys)) and keys[2] == keys[0]


def test_new_projects_and_session_folders_keep_discoverys_order(daemon: Daemon) -> None:
    root = daemon.root
    write_v3(root / "flat.jsonl", "1111dddd-flat")  # a file directly in the root
    (root / "--zeta--").mkdir()  # a new project
    write_v3(root / "--zeta--" / "z.jsonl", "2222dddd-zeta")
    folder = root / "--proj--" / "s1"  # oh-my-pi's session folder with a subagent
    folder.mkdir()
    write_v3(folder / "Alpha.jsonl", "3333dddd-alpha")
    (root / "--proj--" / "other").mkdir()  # not a session's folder: never listed
    write_v3(root / "--proj--" / "other" / "x.jsonl", "4444dddd-other")
    assert _synced(daemon) == _on_disk(root)
    for name in ("b0.jsonl", "s0a.jsonl", "zz.jsonl"):  # new files land where discovery lists them
        write_v3(root / "--proj--" / name, f"5555dddd-{name}")
        write_v3(folder / name, f"6666dddd-{name}")
        assert _synced(daemon) == _on_disk(root)


@pytest.mark.parametrize("folder_first", [False, True], ids=["session-then-folder", "folder-then-session"])
def test_a_new_sessions_folder_is_listed_without_discovering_everything(daemon: Daemon, folder_first: bool) -> None:
    bucket = daemon.root / "--proj--"
    discoveries = daemon.log.read_bytes().count(b" directories, ")
    if folder_first:  # not a session's folder yet: nothing in it is listed
        (bucket / "omp" / "Alpha").mkdir(parents=True)
        write_v3(bucket / "omp" / "Alpha.jsonl", "1414aaaa-alpha")
        assert _synced(daemon) == _on_disk(daemon.root)
        write_v3(bucket / "omp.jsonl", "1515aaaa-omp")
    else:
        write_v3(bucket / "omp.jsonl", "1515aaaa-omp")
        assert _synced(daemon) == _on_disk(daemon.root)
        (bucket / "omp" / "Alpha").mkdir(parents=True)
        write_v3(bucket / "omp" / "Alpha.jsonl", "1414aaaa-alpha")
    write_v3(bucket / "omp" / "Alpha" / "Alpha.Beta.jsonl", "1616aaaa-beta")
    assert _synced(daemon) == _on_disk(daemon.root)
    assert str(bucket / "omp" / "Alpha" / "Alpha.Beta.jsonl") in {path for path, *_ in _synced(daemon)}
    write_v3(bucket / "omp" / "__advisor.jsonl", "1717aaaa-advisor")
    (bucket / "other").mkdir()  # not a session's folder: never listed
    write_v3(bucket / "other" / "x.jsonl", "1818aaaa-other")
    assert _synced(daemon) == _on_disk(daemon.root)
    assert daemon.log.read_bytes().count(b" directories, ") == discoveries, "no discovery of everything"


@needs_node
@pytest.mark.slow
def test_pis_append_is_in_the_next_ls_query_12_trials(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    for trial in range(12):
        target = files[trial % len(files)]
        word = f"pitrial{trial}x"
        agent = [str(ORACLE_DIR / "append_loop.mjs"), str(target), "--count", "1", "--interval-us", "0"]
        subprocess.run(
            ["node", *agent, "--word", word],
            check=True,
            capture_output=True,
            timeout=60,
        )  # returned: pi's appendFileSync is done
        assert _ranked_from_watcher(daemon.cache, daemon.root, word, monkeypatch) == [str(target)], trial
    assert _ls_query(daemon.root, daemon.cache, "pitrial11x") == [str(files[11 % len(files)])]


def test_queries_right_after_pis_appends_equal_a_fresh_caches_12_trials(
    daemon: Daemon, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With the watcher, rows kept by earlier queries are updated for the file pi appended to
    (`indexquery._updated_rows`) and kept at once: each trial's word, a word in every session
    and a phrase, asked twice right after pi's append, are each the bytes of a fresh cache's."""
    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    for _ in range(3):  # the rows kept (the first query keeps only the files' key)
        _ls_query_out(daemon.root, daemon.cache, "question")
    for trial in range(12):
        target = files[(trial * 5) % len(files)]
        word = f"pikept{trial}x"
        agent = [str(ORACLE_DIR / "append_loop.mjs"), str(target), "--count", "1", "--interval-us", "0"]
        subprocess.run(["node", *agent, "--word", word], check=True, capture_output=True, timeout=60)
        assert _synced(daemon) == _on_disk(daemon.root), trial  # the watcher has indexed it
        for query in ("question", word, '"pikept"', "question"):
            fresh = tmp_path_factory.mktemp("fresh")
            expected = _ls_query_out(daemon.root, fresh, query, SEANCE_NO_WATCH="1")
            assert _ls_query_out(daemon.root, daemon.cache, query) == expected, (trial, query)


def test_queries_while_pi_appends_to_two_sessions_then_after_equal_a_fresh_caches_8_trials(
    daemon: Daemon, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Kept rows and every session's objects spliced while pi's SessionManager appends (two
    sessions at once, several lines each, `rowsplice`, `queryobjects.write_spliced`): the
    queries asked during the appends answer (whatever moment they saw), and once the watcher
    has the last line, each answer is the bytes of a fresh cache's; one objects file."""
    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    for _ in range(3):  # the rows kept, then every session's objects
        _ls_query_out(daemon.root, daemon.cache, "question")
    for trial in range(8):
        tags = {store.read_bytes()[:16] for store in daemon.cache.glob("query-objects-*.bin")}
        targets = [str(files[trial % len(files)]), str(files[(trial + 1) % len(files)])]
        word = f"pisplice{trial}x"
        agent = [str(ORACLE_DIR / "append_loop.mjs"), *targets, "--count", "4", "--interval-us", "20000"]
        with subprocess.Popen(["node", *agent, "--word", word], stdout=subprocess.PIPE) as pi:
            during = [_ls_query_out(daemon.root, daemon.cache, query) for query in ("question", word)]
            assert pi.wait(60) == 0
        assert all(isinstance(json.loads(answer or b"[]"), list) for answer in during)
        assert _synced(daemon) == _on_disk(daemon.root), trial  # the watcher has every line
        for query in ("question", word, "question", '"pisplice"'):
            fresh = tmp_path_factory.mktemp("fresh")
            expected = _ls_query_out(daemon.root, fresh, query, SEANCE_NO_WATCH="1")
            assert _ls_query_out(daemon.root, daemon.cache, query) == expected, (trial, query)
        assert len(list(daemon.cache.glob("query-objects-*.bin"))) == 1, trial
        (store,) = daemon.cache.glob("query-objects-*.bin")
        assert store.read_bytes()[:16] not in tags, trial  # (the store made again for the files now)


def _refreshes(daemon: Daemon) -> int:
    """How many refreshes of the kept stores the watcher has logged (`Watcher._refreshed`)."""
    return daemon.log.read_bytes().count(b"brought up to date")


def _wait_refreshes(daemon: Daemon, count: int) -> None:
    deadline = time.monotonic() + START_WAIT_S
    while _refreshes(daemon) < count:
        assert time.monotonic() < deadline, f"no refresh of the kept stores: {daemon.log.read_text()}"
        time.sleep(0.05)


def test_once_quiet_after_an_append_the_watcher_refreshes_the_kept_stores_and_a_query_updates_nothing_4_trials(
    daemon: Daemon,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    """After an append the watcher, once the files are quiet, brings the kept rows and every
    session's objects up to date (`Catalog.refresh_kept` in a child) under the key a query
    computes from its listing (`files_key` of it and the full-text state), and makes the
    last kept answers again: a query then reads nothing but them (no row checked or read;
    for a word in every session no object read: the spy) and prints the bytes of a fresh
    cache's answer."""
    from test_refresh_kept import _Reads

    from seance.cli import main

    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    command = ["ls", "--all", "--json", "--root", str(daemon.root), "--query", "question"]
    monkeypatch.delenv("SEANCE_NO_WATCH", raising=False)
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(daemon.cache))
    monkeypatch.setenv("SEANCE_WORKERS", "1")
    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 100)  # (never kept whole: printed from the objects)
    for _ in range(3):  # the rows kept, then every session's objects
        assert main(command) == 0
    capsysbinary.readouterr()
    for trial in range(4):
        done = _refreshes(daemon)
        _append_user_line(files[trial % len(files)], f"question refreshed{trial}")
        _wait_refreshes(daemon, done + 1)
        for word in ("question", f"refreshed{trial}", "answer"):
            expected = _ls_query_out(daemon.root, tmp_path_factory.mktemp("fresh"), word, SEANCE_NO_WATCH="1")
            with monkeypatch.context() as patched:
                reads = _Reads(patched)
                code = main([*command[:-1], word])
            assert (code, capsysbinary.readouterr().out) == (0, expected), (trial, word)
            if word == f"refreshed{trial}":  # one session's: ranked on the kept rows, its object read
                assert "row_checks" not in reads.calls and "query_rows" not in reads.calls, (trial, reads.calls)
            else:  # in every session: the kept answer (made again), or the kept rows and stored objects
                assert reads.calls == [], (trial, word, reads.calls)
    assert daemon.log.read_bytes().count(b"sessions and their objects brought up to date") == 4


def test_an_agent_appending_all_the_time_makes_at_most_one_refresh_until_it_stops(daemon: Daemon) -> None:
    """The refresh waits for the files to be quiet (`REFRESH_QUIET_S`): lines appended every
    0.2 s for 4 s make at most one (a stall of this process), not one per line; once they
    stop, one brings the kept rows up to date."""
    target = sorted((daemon.root / "--proj--").glob("*.jsonl"))[1]
    for _ in range(2):  # the rows kept
        _ls_query_out(daemon.root, daemon.cache, "question")
    done = _refreshes(daemon)
    stop = time.monotonic() + 4.0
    while time.monotonic() < stop:
        _append_user_line(target, "question streamed")
        time.sleep(0.2)
    assert _refreshes(daemon) <= done + 1, daemon.log.read_text()
    _wait_refreshes(daemon, _refreshes(daemon) + 1)


def test_a_refresh_that_cannot_start_is_said_and_tried_again_later(
    store: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No process for the refresh (it cannot be started): the watcher says so, raises
    nothing (its loop goes on), and tries again once `REFRESH_LIMIT_S` passed."""
    import errno

    from seance.core.watchd import Watcher

    root, cache = store
    said: list[str] = []
    catalog = Catalog([root], cache_dir=cache)
    watcher = Watcher(catalog, cache, log=said.append)
    try:
        watcher._start()

        def no_process(*_args: object, **_kwargs: object) -> None:
            raise OSError(errno.EAGAIN, "no more processes")

        monkeypatch.setattr(subprocess, "Popen", no_process)
        watcher._start_refresh()
        assert watcher.refresh is None and "could not start a refresh" in said[-1]
        again = watcher._refresh_at()
        assert again is not None and again > time.monotonic() + 60
    finally:
        watcher.close()
        catalog.close()


@needs_node
def test_queries_while_pi_appends_and_the_watcher_refreshes_equal_a_fresh_caches_10_trials(
    daemon: Daemon, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """pi's SessionManager appends, the watcher refreshes the kept stores once the files are
    quiet (its child writing them), and queries run at random moments around it, writing
    the same stores: each answer is a fresh cache's for the files as they were, those of
    the query asked while pi appended to another session the answer before or after it."""
    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    for _ in range(3):  # the rows kept, then every session's objects
        _ls_query_out(daemon.root, daemon.cache, "question")
    chance = random.Random(14)

    def fresh(query: str) -> bytes:
        return _ls_query_out(daemon.root, tmp_path_factory.mktemp("fresh"), query, SEANCE_NO_WATCH="1")

    for trial in range(10):
        word = f"piwarm{trial}x"
        agent = [str(ORACLE_DIR / "append_loop.mjs"), "--count", "1", "--interval-us", "0", "--word", word]
        subprocess.run(["node", *agent, str(files[trial % len(files)])], check=True, capture_output=True, timeout=60)
        time.sleep(chance.uniform(0.6, 1.6))  # around the refresh (`REFRESH_QUIET_S` after the watcher applied it)
        answers = {query: _ls_query_out(daemon.root, daemon.cache, query) for query in ("question", word, "question")}
        before = fresh("question")
        assert answers == {"question": before, word: fresh(word)}, trial
        with subprocess.Popen(["node", *agent, str(files[(trial + 1) % len(files)])], stdout=subprocess.PIPE) as pi:
            time.sleep(chance.uniform(0.0, 0.3))  # (node starts in ~0.1 s: the line lands before, during or after)
            during = _ls_query_out(daemon.root, daemon.cache, "question")
            assert pi.wait(60) == 0
        assert during in (before, fresh("question")), trial
    assert _refreshes(daemon) >= 1


@pytest.mark.slow
def test_appends_between_syncs_200_trials_each_answer_exact(daemon: Daemon) -> None:
    files = sorted((daemon.root / "--proj--").glob("*.jsonl"))
    for trial in range(200):
        _append_user_line(files[trial % len(files)], f"burst {trial}")
        if trial % 7 == 0:
            write_v3(daemon.root / "--proj--" / f"n{trial}.jsonl", f"{trial:04d}eeee-burst")
        if trial % 11 == 0 and trial:
            (daemon.root / "--proj--" / f"n{trial - 4 - trial % 7}.jsonl").unlink(missing_ok=True)
        assert _synced(daemon) == _on_disk(daemon.root), trial


def test_a_second_watcher_refuses(daemon: Daemon) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "seance", "index", "--watch", "--root", str(daemon.root)],
        env=_env(daemon.cache),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert b"a watcher already serves the index" in result.stderr
    assert str(daemon.process.pid).encode() in result.stderr
    assert _synced(daemon) == _on_disk(daemon.root)  # the first one still serves


def test_unwatch_stops_it(daemon: Daemon) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "seance", "index", "--unwatch"], env=_env(daemon.cache), capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert daemon.process.wait(10) == 0
    assert not watcher_running(daemon.cache)
    assert not (daemon.cache / SOCKET_NAME).exists()
    assert synced_discovery(daemon.cache, [daemon.root], True) is None


def test_unwatch_without_a_watcher_says_so(store: tuple[Path, Path]) -> None:
    _root, cache = store
    result = subprocess.run(
        [sys.executable, "-m", "seance", "index", "--unwatch"], env=_env(cache), capture_output=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip() == b"seance: no watcher is running"


def test_a_fifo_as_the_watch_lock_blocks_nothing(store: tuple[Path, Path]) -> None:
    """`watchd.lock` a FIFO: `ls` and `index --unwatch` blocked forever opening it to see
    whether a watcher holds it, and `index --watch` said only "Invalid argument"."""
    root, cache = store
    os.mkfifo(cache / LOCK_NAME)

    def seance(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "seance", *args]
        return subprocess.run(command, env=_env(cache), capture_output=True, text=True, timeout=60)

    listed = seance("ls", "--root", str(root), "--all", "--json")
    assert listed.returncode == 0 and len(json.loads(listed.stdout)) > 0, listed.stderr
    assert seance("index", "--unwatch").stderr.strip() == "seance: no watcher is running"
    watch = seance("index", "--watch", "--root", str(root))
    assert watch.returncode == 2 and watch.stderr.strip() == f"seance: not a regular file: {cache / LOCK_NAME}"
    assert not watcher_running(cache)


def test_killed_watcher_the_cli_falls_back_and_stays_exact(daemon: Daemon) -> None:
    bucket = daemon.root / "--proj--"
    assert _synced(daemon) == _on_disk(daemon.root)
    daemon.process.send_signal(signal.SIGKILL)
    daemon.process.wait(10)
    _append_user_line(bucket / "s2.jsonl", "afterthekill")  # no watcher sees this
    write_v3(bucket / "late.jsonl", "7777ffff-afterthekill")
    assert (daemon.cache / SOCKET_NAME).exists(), "kill -9 leaves the socket file behind"
    assert not watcher_running(daemon.cache)
    assert synced_discovery(daemon.cache, [daemon.root], True) is None
    assert sorted(_ls_query(daemon.root, daemon.cache, "afterthekill")) == sorted(
        [str(bucket / "late.jsonl"), str(bucket / "s2.jsonl")]
    )


def test_killed_while_it_indexes_the_cli_falls_back_and_stays_exact(store: tuple[Path, Path]) -> None:
    root, cache = store
    bucket = root / "--proj--"
    made = [str(write_v3(bucket / f"m{number:03d}.jsonl", f"{number:04d}cafe-midway")) for number in range(300)]
    process = subprocess.Popen(
        [sys.executable, "-m", "seance", "index", "--watch", "--root", str(root)],
        env=_env(cache),
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + START_WAIT_S
    while not watcher_running(cache):  # the lock is taken first, then the index is brought up to date
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    made.append(str(write_v3(bucket / "after.jsonl", "9090cafe-midway")))
    deadline = time.monotonic() + 5  # (a child forked just before the kill closes its copy of the lock when first run)
    while watcher_running(cache) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not watcher_running(cache)
    assert sorted(_ls_query(root, cache, "midway")) == sorted(made)


HOLDER = r"""
import os, sys, time
from pathlib import Path
from seance.core.watchd import take_lock
take_lock(Path(sys.argv[1]))
child = os.fork()
if child == 0:  # a scanning worker or the discovery child: outlives the watcher's kill -9
    os.write(1, b"child\n")  # (its at-fork hooks ran before this line; one write: a whole line)
    time.sleep(60)
    os._exit(0)
os.write(1, f"{child}\n".encode())
time.sleep(60)
"""


def test_the_lock_ends_with_the_watcher_even_while_a_child_it_forked_lives(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(cache)], env=_env(cache), stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    lines = {holder.stdout.readline().strip(), holder.stdout.readline().strip()}  # the child's pid, and the child
    assert "child" in lines, lines
    child = int(next(line for line in lines if line != "child"))
    try:
        assert watcher_running(cache)
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        os.kill(child, 0)  # (still alive: the lock would be held by its copy of the descriptor)
        assert not watcher_running(cache)
    finally:
        os.kill(child, signal.SIGKILL)


def test_a_stale_socket_with_a_lock_held_by_another_process_is_not_trusted(store: tuple[Path, Path]) -> None:
    root, cache = store
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(cache / SOCKET_NAME))
    stale.close()  # bound, never listening: a connection is refused
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,os,sys,time; fd=os.open(sys.argv[1], os.O_RDWR|os.O_CREAT);"
         "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)", str(cache / LOCK_NAME)],
        stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert watcher_running(cache)
        started = time.monotonic()
        assert synced_discovery(cache, [root], True) is None
        assert time.monotonic() - started < 1.0
        write_v3(root / "--proj--" / "fresh.jsonl", "8888aaaa-stalesocket")
        assert _ls_query(root, cache, "stalesocket") == [str(root / "--proj--" / "fresh.jsonl")]
    finally:
        holder.kill()
        holder.wait()


def test_a_watcher_that_does_not_answer_in_time_is_not_waited_for(daemon: Daemon) -> None:
    daemon.process.send_signal(signal.SIGSTOP)
    try:
        write_v3(daemon.root / "--proj--" / "meanwhile.jsonl", "9999aaaa-stopped")
        started = time.monotonic()
        os.environ["SEANCE_WATCH_TIMEOUT"] = "0.3"
        try:
            assert synced_discovery(daemon.cache, [daemon.root], True) is None
        finally:
            del os.environ["SEANCE_WATCH_TIMEOUT"]
        assert time.monotonic() - started < 2.0
        found = _ls_query(daemon.root, daemon.cache, "stopped", SEANCE_WATCH_TIMEOUT="0.3")
        assert found == [str(daemon.root / "--proj--" / "meanwhile.jsonl")]
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    assert _synced(daemon) == _on_disk(daemon.root)  # and it catches up


def test_lost_events_queue_overflow_discovers_again(daemon: Daemon) -> None:
    """inotify drops events past its queue (16,384 by default) and says so: the watcher then
    discovers everything again before it answers."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 40_000:
        pytest.skip("this machine's inotify queue is too long to overflow quickly")
    bucket = daemon.root / "--proj--"
    daemon.process.send_signal(signal.SIGSTOP)
    try:
        for number in range(limit // 2 + 100):  # create + delete: two events each, all distinct
            scratch = bucket / f"tmp{number}.txt"
            scratch.touch()
            scratch.unlink()
        _append_user_line(bucket / "s0.jsonl", "overflowed")  # its event is dropped
        write_v3(bucket / "lost.jsonl", "1212aaaa-overflowed")
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    os.environ["SEANCE_WATCH_TIMEOUT"] = "20"
    try:
        assert _synced(daemon) == _on_disk(daemon.root)
    finally:
        del os.environ["SEANCE_WATCH_TIMEOUT"]
    assert b"watching" in daemon.log.read_bytes().split(b"watching (")[-1], "it discovered again"


def test_resolve_finds_a_session_written_just_before(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_v3(daemon.root / "--proj--" / "resolved.jsonl", "abcd1234-0000-just-written")
    result = subprocess.run(
        [sys.executable, "-m", "seance", "resolve", "abcd1234", "--root", str(daemon.root), "--cwd", "/proj"],
        env=_env(daemon.cache),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode().strip() == str(path)
    monkeypatch.setattr(catalog_module, "discover", lambda *_args: pytest.fail("discovery ran"))
    catalog = Catalog([daemon.root], cache_dir=daemon.cache, watched=True)
    try:  # `resolve`'s lookup, from the watcher's listing alone
        kept = catalog.exact_where(lambda _path, title: title is None or "abcd1234" in title[0])
        assert [summary.path for summary in kept] == [str(path)]
    finally:
        catalog.close()


@pytest.mark.parametrize("link", ["symbolic", "hard"])
def test_a_linked_session_file_is_not_vouched_for(store: tuple[Path, Path], tmp_path: Path, link: str) -> None:
    root, cache = store
    outside = write_v3(tmp_path / "elsewhere.jsonl", "1313aaaa-linked")
    if link == "symbolic":
        (root / "--proj--" / "link.jsonl").symlink_to(outside)
    else:
        os.link(outside, root / "--proj--" / "link.jsonl")
    daemon = Daemon(root, cache)
    try:
        why = "a symbolic link" if link == "symbolic" else "a session file with another hard link"
        assert f"not vouching: {why}".encode() in daemon.log.read_bytes()
        assert synced_discovery(cache, [root], True) is None
        _append_user_line(outside, "throughthelink")  # no event reaches the watched directory
        assert _ls_query(root, cache, "throughthelink") == [str(root / "--proj--" / "link.jsonl")]
    finally:
        daemon.stop()


def test_other_roots_are_not_answered(daemon: Daemon, tmp_path: Path) -> None:
    assert synced_discovery(daemon.cache, [tmp_path], True) is None
    assert synced_discovery(daemon.cache, [daemon.root], False) is None


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own (its default roots, and a watcher's started without `--root`):
    a pi session and an oh-my-pi profile's; `$XDG_DATA_HOME` set, not made."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    for key in ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR", "PI_CONFIG_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("SEANCE_WATCH_TIMEOUT", "20")  # (a new root: every root is discovered again first)
    for root, sid in ((".pi/agent/sessions", "1414aaaa-pi"), (".omp/profiles/default/agent/sessions", "1515aaaa-omp")):
        (home / root / "--proj--").mkdir(parents=True)
        write_v3(home / root / "--proj--" / "s.jsonl", sid)
    return home


def _served_default_roots(cache: Path) -> list[tuple]:
    """The listing a command of the default roots (`ls`, `resolve`) takes from the watcher now."""
    found = synced_discovery(cache, default_roots(), False)
    assert found is not None, "the watcher serves the default roots"
    return [tuple(info) for info in found.infos]


@pytest.mark.parametrize("change", ["new omp profile", "omp profile gone", "omp in XDG_DATA_HOME", "omp's own root"])
def test_a_watcher_of_the_default_roots_follows_them_as_they_come_and_go(
    home: Path, tmp_path: Path, change: str
) -> None:
    """Without `--root` the watcher serves the default roots as every command computes them
    when it starts: a root that appears (a new omp profile: a new directory in
    `~/.omp/profiles`) or goes is taken up, watched and answered for, without a restart."""
    cache = tmp_path / "cache"
    cache.mkdir()
    daemon = Daemon(None, cache)
    try:
        assert _served_default_roots(cache) == [tuple(info) for info in discover().infos]
        roots = {
            "new omp profile": home / ".omp" / "profiles" / "work" / "agent" / "sessions",
            "omp in XDG_DATA_HOME": tmp_path / "xdg-data" / "omp" / "sessions",
            "omp's own root": home / ".omp" / "agent" / "sessions",
        }
        if change == "omp profile gone":
            shutil.rmtree(home / ".omp" / "profiles" / "default")
            session = home / ".pi" / "agent" / "sessions" / "--proj--" / "s.jsonl"
        else:
            (roots[change] / "--proj--").mkdir(parents=True)
            session = write_v3(roots[change] / "--proj--" / "new.jsonl", "1616aaaa-new-root")
            assert roots[change] in default_roots()
        assert _served_default_roots(cache) == [tuple(info) for info in discover().infos]
        _append_user_line(session, "appended")  # the root is watched: the append is in the next answer
        assert _served_default_roots(cache) == [tuple(info) for info in discover().infos]
    finally:
        daemon.stop()


def test_rust_notify_keeps_one_instances_order_across_its_paths_50_trials(tmp_path: Path) -> None:
    """watchfiles' RustNotify over several directories: once a change made last is reported,
    every change made before it has been (its one inotify descriptor is read in order)."""
    from watchfiles._rust_notify import RustNotify

    dirs = [tmp_path / name for name in ("a", "b", "c", "mark")]
    for path in dirs:
        path.mkdir()
    notify = RustNotify([str(path) for path in dirs], False, False, 0, False, True)
    try:
        for trial in range(50):
            made = []
            for number in range(30):
                path = dirs[number % 3] / f"t{trial}-{number}.jsonl"
                path.write_bytes(b"x")
                made.append(str(path))
            sentinel = dirs[3] / f"mark{trial}"
            sentinel.touch()
            seen: set[str] = set()
            deadline = time.monotonic() + 10
            while str(sentinel) not in seen:
                assert time.monotonic() < deadline
                result = notify.watch(0, 1, 50, None)
                if isinstance(result, set):
                    seen |= {path for _change, path in result}
            assert set(made) <= seen, trial
    finally:
        notify.close()


def test_inotify_reads_one_descriptors_events_in_order(tmp_path: Path) -> None:
    from inotify_simple import INotify, flags

    dirs = [tmp_path / name for name in ("a", "b", "c")]
    watcher = INotify()
    try:
        names = {}
        for path in dirs:
            path.mkdir()
            names[watcher.add_watch(str(path), flags.CREATE)] = path
        made = []
        for number in range(300):
            path = dirs[number % 3] / f"f{number}"
            path.touch()
            made.append(str(path))
        read: list[str] = []
        while len(read) < len(made):
            events = watcher.read(5000)
            assert events
            read += [str(names[event.wd] / event.name) for event in events]
        assert read == made
    finally:
        watcher.close()


def _indexed_size(cache: Path, path: Path) -> int | None:
    import sqlite3

    db = sqlite3.connect(f"file:{cache / 'index.v8.sqlite'}?mode=ro", uri=True)
    try:
        found = db.execute("SELECT size FROM files WHERE path = ?", (str(path),)).fetchone()
    finally:
        db.close()
    return None if found is None else found[0]


def _until(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return bool(condition())  # type: ignore[operator]


def test_the_watcher_takes_up_the_index_another_process_healed(daemon: Daemon) -> None:
    """A foreground command found the index damaged, deleted it and made a new one: the watcher
    wrote on into the deleted files (its descriptors kept them) for as long as it ran, and the
    shared index was no longer kept up to date (the sweep)."""
    root, cache = daemon.root, daemon.cache
    target = root / "--proj--" / "s1.jsonl"
    with open(cache / "index.v8.sqlite", "r+b") as damaged:
        damaged.write(b"\0garbage" * 16)
    healed = subprocess.run(
        [sys.executable, "-m", "seance", "ls", "--all", "--root", str(root)],
        env=_env(cache, SEANCE_NO_WATCH="1"),
        capture_output=True,
        timeout=60,
    )
    assert healed.returncode == 0 and b"corrupt" in healed.stderr, healed.stderr
    _append_user_line(target, "after the heal")
    assert _until(lambda: _indexed_size(cache, target) == target.stat().st_size), daemon.log.read_text()
    fds = [os.readlink(f"/proc/{daemon.process.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{daemon.process.pid}/fd")]
    assert not [fd for fd in fds if "index" in fd and fd.endswith("(deleted)")]


def test_a_watcher_started_while_the_index_was_locked_keeps_the_shared_one_once_free(
    store: tuple[Path, Path],
) -> None:
    """It made a private index (every session read into it) and kept it for its whole life,
    the shared index left stale (the sweep)."""
    import sqlite3

    root, cache = store
    subprocess.run([sys.executable, "-m", "seance", "index", "--root", str(root)], env=_env(cache), check=True)
    holder = sqlite3.connect(cache / "index.v8.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another seance writing for long
    released = False
    try:
        running = Daemon(root, cache)  # (it waits out the busy timeout, then goes private)
        try:
            holder.execute("ROLLBACK")
            released = True
            target = root / "--proj--" / "s2.jsonl"
            _append_user_line(target, "once the lock is gone")
            assert _until(lambda: _indexed_size(cache, target) == target.stat().st_size), running.log.read_text()
            assert _until(lambda: not [path for path in cache.iterdir() if path.name.startswith("index-")])
        finally:
            running.stop()
    finally:
        if not released:
            holder.execute("ROLLBACK")
        holder.close()
