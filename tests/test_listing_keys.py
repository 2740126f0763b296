"""A stored answer is checked against the files' key made where the files were found.

`ls --json` and `ls --json --query` print a stored answer when the files found now are
exactly those it was made from (`fileskey.files_key`: every path, size and mtime).  The
CLI's forked discovery child makes that key right after its scan (`discovery.Pending.head`)
and the resident watcher sends it with its listing, so a warm answer decodes no file's
stats.  These tests check the key is the files' key, that a child cut short after its key
never leaves an answer stored under a key it was not made from, and, on generated stores
with real SQLite, that every answer after appends, new files and removed files is the
bytes a cache that never stored anything prints.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest
from conftest import IndexRowReads

from seance.cli import main
from seance.core import discovery
from seance.core.catalog import Catalog
from seance.core.discovery import discover, discover_ahead
from seance.core.fileskey import files_key
from seance.core.generate import generate_corpus

needs_fork = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking is Linux-only")


def _store(tmp_path: Path, sessions: int = 30, seed: int = 5) -> Path:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=sessions, projects=3, seed=seed, mean_bytes=2500)
    return root


@needs_fork
def test_the_childs_head_is_the_files_key_and_the_files_are_never_decoded(tmp_path: Path) -> None:
    root = _store(tmp_path)
    (root / "--junk--").mkdir()
    (root / "--junk--" / "dir.jsonl").mkdir()  # a skip, with its reason
    here = discover([root])
    pending = discover_ahead([root], fork=True, also=lambda: "verdict")
    head = pending.head()
    assert head.key == files_key(here.infos) and head.files == len(here.infos) and head.skipped == here.skipped
    assert pending.known() is None  # only the head was read
    pending.close()  # the child (blocked on its files, or on its other work) is stopped and reaped
    assert pending.head() is head and not pending.moved


@needs_fork
def test_a_child_cut_short_after_its_head_is_scanned_again_and_says_the_files_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child sends its head, then a session is appended to and its files message is cut
    short: the files are found here again (exact), their head replaces the child's, and
    `moved` says the answer is not to be stored under either key."""
    root = _store(tmp_path)
    victim = sorted(root.rglob("*.jsonl"))[0]
    parent = os.getpid()
    real = discovery._write_message
    written: list[int] = []

    def cut_after_head(descriptor: int, data: bytes) -> None:
        if os.getpid() == parent:
            real(descriptor, data)
            return
        written.append(1)
        if len(written) == 1:
            real(descriptor, data)  # the head
            return
        with open(victim, "a", encoding="utf-8") as out:  # a change after the child's scan
            out.write("\n")
        os.write(descriptor, (len(data) + 5).to_bytes(8, "little") + data[:10])  # cut short

    monkeypatch.setattr(discovery, "_write_message", cut_after_head)
    before = discover([root])
    pending = discover_ahead([root], fork=True)
    assert pending.head().key == files_key(before.infos)
    found = pending()
    assert found == discover([root]) and found != before
    assert pending.moved and pending.head().key == files_key(found.infos)
    # the same cut with nothing changed meanwhile: not moved
    victim.write_bytes(victim.read_bytes())
    monkeypatch.setattr(discovery, "_write_message", real)
    again = discover_ahead([root], fork=True)
    again.head()
    assert again() == discover([root]) and not again.moved


def _ls(capsysbinary: pytest.CaptureFixture[bytes], root: Path, *query: str) -> bytes:
    scope = [] if "--cwd" in query else ["--all"]
    code = main(["ls", *scope, "--json", "--root", str(root), *query])
    out = capsysbinary.readouterr().out
    assert code in (0, 1)
    return out


def _reference(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, root: Path, cache: Path, *query: str
) -> bytes:
    """The same command on a cache that never stored an answer (and no child: in-process)."""
    with monkeypatch.context() as patched:
        patched.setenv("SEANCE_CACHE_DIR", str(cache))
        patched.setenv("SEANCE_WORKERS", "1")
        return _ls(capsysbinary, root, *query)


def _user_line(text: str, when: str = "2025-01-02T00:00:01.000Z") -> str:
    line = {
        "type": "message",
        "id": f"a{time.monotonic_ns() % 10**7:07d}",
        "parentId": None,
        "timestamp": when,
        "message": {"role": "user", "content": text},
    }
    return json.dumps(line) + "\n"


@needs_fork
@pytest.mark.slow
def test_ls_and_queries_after_appends_new_and_removed_files_equal_a_fresh_cache_12_trials(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """12 trials, each a random change to the store (a line appended to a session with the
    queried word, a new session copied in, a session removed, or nothing), then `ls --json`
    and `ls --json --query` of five words (every project) and one in one project, each
    asked three times (the first answer, the one kept, the one printed from the store; a
    later word is ranked from the rows kept by the first, `queryrows.KeptRows`): every one
    the bytes of a fresh cache's."""
    monkeypatch.setenv("SEANCE_WORKERS", "2")  # the forked discovery child (the CLI's path)
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    root = _store(tmp_path, sessions=40, seed=9)
    # a session whose title is not ASCII, among the others (by its last message's time), with
    # a word only its title holds (the titles are then searched decoded)
    middle = sorted(root.rglob("*.jsonl"))[len(list(root.rglob("*.jsonl"))) // 2]
    when = json.loads(middle.read_text().splitlines()[-1])["timestamp"]
    header = {"type": "session", "version": 3, "id": "7e57c0de-0000-4000-8000-00000000cafe", "cwd": "/home/dev/infra"}
    header["timestamp"] = when
    (root / "--home-dev-infra--" / "2025-10-05T00-00-00-000Z_7e57c0de.jsonl").write_text(
        json.dumps(header) + "\n" + _user_line("façade データベース: Ünïcode café, the sqlite naïvely", when)
    )
    with open(sorted(root.rglob("*.jsonl"))[0], "a", encoding="utf-8") as out:  # in a body: ranked below
        out.write(_user_line("データベース again", "2026-01-01T00:00:00.000Z"))
    reads, forks = IndexRowReads(monkeypatch), _Calls(monkeypatch, discovery, "_fork_discovery")
    refreshes = _Calls(monkeypatch, Catalog, "_refresh")
    rng = random.Random(14)
    # a word in most sessions, a phrase, one only appended, one in a non-ASCII title, a cwd's
    words = ["sqlite", '"fix the"', "zanzibar", "データベース", "infra"]
    for trial in range(12):
        files = sorted(root.rglob("*.jsonl"))
        change = ("append", "add", "remove", "none")[trial % 4]
        if change == "append":
            with open(rng.choice(files), "a", encoding="utf-8") as out:
                out.write(_user_line(f"zanzibar trial {trial}"))
        elif change == "add":
            source = rng.choice(files)
            copy = source.with_name(f"2026-01-0{trial % 9 + 1}T00-00-00-000Z_{trial:08d}-copy.jsonl")
            shutil.copyfile(source, copy)
        elif change == "remove":
            rng.choice(files).unlink()
        project = ["--cwd", "/home/dev/infra"]  # one project's sessions (`ls` without --all)
        for query in ([], *(["--query", word] for word in words), [*project, "--query", "sqlite"]):
            fresh = tmp_path / "fresh"
            expected = _reference(capsysbinary, monkeypatch, root, fresh, *query)
            shutil.rmtree(fresh)
            for attempt in range(3):
                reads.count = refreshes.count = forks.count = 0
                assert _ls(capsysbinary, root, *query) == expected, (trial, change, query, attempt)
                assert forks.count == 1  # the files were found by the child
                if attempt == 2:  # printed from the store: no row ranked, nothing refreshed
                    assert reads.count == 0 and refreshes.count == 0, (trial, change, query)


def test_after_an_append_a_new_and_a_removed_file_a_query_reads_only_their_rows_and_keeps_the_rows_at_once(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows kept for other files (`queryrows`) are updated, not read again: after a line is
    appended to one session, a session is copied in and one removed, `ls --json --query`
    reads from the index only the rows of those files (`indexquery._updated_rows`), not all
    40, keeps the rows for the files now at once (another word reads none), and every
    answer is the bytes of a fresh cache's."""
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    monkeypatch.setenv("SEANCE_WORKERS", "1")
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    root = _store(tmp_path, sessions=40, seed=3)
    (root / "--junk--").mkdir()
    (root / "--junk--" / "notes.jsonl").write_text("not a session\n")  # a skipped file, read again each time
    reads = IndexRowReads(monkeypatch)
    for _ in range(2):  # the first keeps the files' key, the second the rows
        _ls(capsysbinary, root, "--query", "sqlite")
    files = sorted(root.rglob("*-*.jsonl"))
    with open(files[5], "a", encoding="utf-8") as out:
        out.write(_user_line("zanzibar appended"))
    shutil.copyfile(files[7], files[7].with_name("2026-01-01T00-00-00-000Z_00000042-copy.jsonl"))
    files[9].unlink()
    for word, most in (("sqlite", 2 * 3), ("zanzibar", 0), ('"fix the"', 0)):
        reads.rows = 0
        got = _ls(capsysbinary, root, "--query", word)
        assert reads.rows <= most, (word, reads.rows)  # (the changed files', once stale and once fresh)
        fresh = tmp_path / "fresh"
        assert got == _reference(capsysbinary, monkeypatch, root, fresh, "--query", word), word
        shutil.rmtree(fresh)


class _Calls:
    """Counts the calls of `owner.name` (made in this process)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        self.count = 0
        original = getattr(owner, name)

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
