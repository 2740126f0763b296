"""Discovery: buckets and flat roots, and every non-session thing skipped and reported."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seance.core.discovery import default_roots, discover

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
    session(root / "--home-u-proj--" / "a" / "subagent.jsonl")  # an artifacts dir: not a session list
    session(root / "deep" / "er" / "c.jsonl")  # two levels down: not scanned
    (root / "--home-u-proj--" / "notes.txt").write_text("x")
    found = discover([root])
    assert sorted(found.files) == sorted([in_bucket, omp_bucket, flat])
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
