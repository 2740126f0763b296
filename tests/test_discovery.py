"""Discovery: buckets and flat roots, and every non-session thing skipped and reported."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from seance.core import discovery
from seance.core.discovery import Discovery, FileInfo, default_roots, discover, discover_ahead

HEADER = {"type": "session", "version": 3, "id": "x", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}


def session(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(HEADER) + "\n")
    return path


def test_buckets_flat_files_and_what_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    in_bucket = session(root / "--home-u-proj--" / "a.jsonl")
    omp_bucket = session(root / "-work-app" / "b.jsonl")
    flat = session(root / "flat.jsonl")
    subagent = session(root / "--home-u-proj--" / "a" / "subagent.jsonl")  # a's own folder: its child
    session(root / "--home-u-proj--" / "other" / "x.jsonl")  # a folder of no session: not scanned
    session(root / "deep" / "er" / "c.jsonl")  # two levels down: not scanned
    (root / "--home-u-proj--" / "notes.txt").write_text("x")
    found = discover([root])
    assert sorted(found.files) == sorted([in_bucket, omp_bucket, flat, subagent])
    assert found.skipped == []
    info = next(item for item in found.infos if item.path == str(flat))
    assert (info.size, info.mtime_ns) == (flat.stat().st_size, flat.stat().st_mtime_ns)


def test_skipped_things_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    bucket = root / "--p--"
    good = session(bucket / "good.jsonl")
    (bucket / "dir.jsonl").mkdir()
    (bucket / "dangling.jsonl").symlink_to(bucket / "missing-target")
    (bucket / "loop.jsonl").symlink_to(bucket / "loop.jsonl")
    os.mkfifo(bucket / "fifo.jsonl")
    found = discover([root, tmp_path / "no-such-root"])
    reasons = {path.name: reason for path, reason in found.skipped}
    assert found.files == [good]
    assert reasons == {
        "dir.jsonl": "a directory named *.jsonl",
        "dangling.jsonl": "dangling symlink",
        "loop.jsonl": "symlink loop",
        "fifo.jsonl": "not a regular file",
        "no-such-root": "no such directory",
    }


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads everything")
def test_unreadable_bucket_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session(root / "--p--" / "a.jsonl")
    locked = root / "--locked--"
    session(locked / "b.jsonl")
    locked.chmod(0)
    try:
        found = discover([root])
    finally:
        locked.chmod(0o755)
    assert [path.name for path, _ in found.skipped] == ["--locked--"]


def test_symlinked_bucket_is_listed_once(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    real = session(root / "--p--" / "a.jsonl")
    (root / "--alias--").symlink_to(root / "--p--")
    found = discover([root, root])
    assert found.files == [real]


def test_default_roots_follow_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    (tmp_path / ".operator" / "profiles" / "work").mkdir(parents=True)
    assert default_roots() == [
        tmp_path / "agent" / "sessions",
        tmp_path / ".omp" / "agent" / "sessions",
        tmp_path / ".operator" / "profiles" / "work" / "sessions",
    ]
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert default_roots()[0] == tmp_path / ".pi" / "agent" / "sessions"
    session(tmp_path / ".pi" / "agent" / "sessions" / "--p--" / "a.jsonl")
    assert len(discover().files) == 1  # missing default roots are not reported
    assert discover().skipped == []


def test_a_file_linked_twice_is_listed_once_in_order(tmp_path: Path) -> None:
    """Hard and symbolic links to one session count once (the first by name); the rest are listed."""
    root = tmp_path / "sessions"
    first = session(root / "--a--" / "1.jsonl")
    os.link(first, root / "--a--" / "2-hard.jsonl")
    third = session(root / "--a--" / "3.jsonl")
    (root / "--b--").mkdir()
    (root / "--b--" / "0-link.jsonl").symlink_to(third)
    fourth = session(root / "--b--" / "4.jsonl")
    found = discover([root])
    assert found.files == [first, third, fourth]
    assert found.skipped == []


def test_child_sessions_in_a_sessions_own_folder(tmp_path: Path) -> None:
    """oh-my-pi keeps subagents and advisors in the folder named after the session file (nested
    for a subagent's own subagents); pi subagent extensions write `<run>/run-0/session.jsonl`
    there.  Every one is found; tool logs, other folders and a link out are not followed."""
    root = tmp_path / "sessions"
    bucket = root / "-work-app"
    parent = session(bucket / "2026-01-01T00-00-00-000Z_p.jsonl")
    folder = bucket / "2026-01-01T00-00-00-000Z_p"
    children = [
        session(folder / "Alpha.jsonl"),
        session(folder / "__advisor.jsonl"),
        session(folder / "__advisor.review.jsonl"),
        session(folder / "Alpha" / "Alpha.Gamma.jsonl"),
        session(folder / "Alpha" / "__advisor.jsonl"),
        session(folder / "3d9b3c4e" / "run-0" / "session.jsonl"),
    ]
    (folder / "1.bash.log").write_text("log")
    (folder / ".Alpha.jsonl.lock.os").write_text("")
    session(bucket / "subagent-artifacts" / "5f316403_worker.jsonl")  # no session of that name
    outside = session(tmp_path / "elsewhere" / "x.jsonl")
    (folder / "link").symlink_to(outside.parent)
    deep = folder
    for level in range(12):
        deep = deep / f"d{level}"
    session(deep / "too-deep.jsonl")
    flat_parent = session(root / "flat.jsonl")  # a flat root: the folder beside it is a session folder
    flat_child = session(root / "flat" / "Beta" / "Beta.Delta.jsonl")
    found = discover([root])
    assert sorted(found.files) == sorted([parent, *children, flat_parent, flat_child])
    assert found.skipped == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking is Linux-only")
def test_discovery_ahead_in_a_forked_child_equals_discovery_here(tmp_path: Path) -> None:
    """`discover_ahead(fork=True)` (the CLI's query: the stats overlap the reading of the index)
    gives exactly `discover`'s answer: the same files in the same order with the same stats,
    a name that is not UTF-8, and every skip with its reason; an answer not wanted is stopped."""
    root = tmp_path / "sessions"
    for bucket in ("--b--", "--a--"):
        for name in ("2.jsonl", "1.jsonl", "a/child.jsonl"):
            session(root / bucket / name)
    odd = os.fsdecode(b"\xff\xfe-odd.jsonl")  # a name that is not UTF-8 (surrogate-escaped)
    session(root / "--a--" / odd)
    (root / "--a--" / "dangling.jsonl").symlink_to(root / "missing")
    (root / "--b--" / "dir.jsonl").mkdir()
    roots = [root, tmp_path / "no-such-root"]
    here = discover(roots)
    pending = discover_ahead(roots, fork=True)
    ahead = pending()
    assert ahead.infos == here.infos and ahead.skipped == here.skipped
    assert all(type(info) is FileInfo for info in ahead.infos)
    assert str(root / "--a--" / odd) in [info.path for info in ahead.infos]
    assert pending() is ahead  # asked once, kept
    stopped = discover_ahead(roots, fork=True)
    stopped.close()  # not wanted: the child is stopped and reaped
    assert stopped() == here  # asked anyway: scanned here


def test_a_failed_child_is_never_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that cannot scan (here: the scan raises in it) leaves the answer to this process."""
    root = tmp_path / "sessions"
    session(root / "--p--" / "a.jsonl")
    expected = discover([root])
    calls: list[int] = []
    real = discovery.discover

    def failing_in_the_child(roots: list[Path] | None = None) -> Discovery:
        if calls and os.getpid() != calls[0]:
            raise OSError("the child fails")
        return real(roots)

    calls.append(os.getpid())
    monkeypatch.setattr(discovery, "discover", failing_in_the_child)
    assert discover_ahead([root], fork=True)() == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forking is Linux-only")
def test_the_child_does_other_work_after_its_scan_and_its_answer_comes_apart(tmp_path: Path) -> None:
    """`discover_ahead(also=...)`: the child's other work (the full-text signature check of
    `ls --query`) comes back after the files, on its own; a failure in it gives None, never a
    wrong discovery."""
    root = tmp_path / "sessions"
    session(root / "--p--" / "a.jsonl")
    expected = discover([root])
    pending = discover_ahead([root], fork=True, also=lambda: ("checked", 1, b"\x00"))
    assert pending.also() == ("checked", 1, b"\x00")  # (the files read on the way)
    assert pending() == expected
    failed_also = discover_ahead([root], fork=True, also=lambda: 1 / 0)
    assert failed_also() == expected
    assert failed_also.also() is None
    assert discover_ahead([root], fork=False, also=lambda: "never run").also() is None
