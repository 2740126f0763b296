"""Huge sessions: the structural wins that keep `show`, `tree` and the tree view near the cost
of reading the file once (issue 14).  Speed itself is measured by `bench/huge.py`, not here.

* A read-only load does not hash the file (hashing 200 MB costs as much as framing it), and
  the write path refuses a stamp without a digest, so "refuse if it changed underneath"
  still holds for every write.
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import orjson
import pytest

from seance.cli.session import open_session_arg
from seance.core.errors import SessionError
from seance.core.safefile import atomic_write
from seance.core.session import read_session
from seance.core.writes import append_entry, load_for_write

STAMP = "2025-01-01T00:00:00.000Z"


def _session(path: Path, entries: int = 30, session_id: str = "s1") -> Path:
    lines = [{"type": "session", "version": 3, "id": session_id, "cwd": "/p", "timestamp": STAMP}]
    parent = None
    for index in range(entries):
        entry_id = f"e{index}"
        message = {"role": "user", "content": f"prompt {index}"}
        lines.append({"type": "message", "id": entry_id, "parentId": parent, "timestamp": STAMP, "message": message})
        parent = entry_id
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_a_read_only_load_has_no_digest_and_a_write_load_has_the_files(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    read_only = read_session(path, digest=False)
    assert read_only and read_only.stamp.digest is None
    assert len(read_only.entries) == 30  # everything else is read as before
    written = read_session(path)
    assert written and written.stamp.digest == hashlib.sha256(path.read_bytes()).hexdigest()
    assert load_for_write(path).stamp.digest == written.stamp.digest


def test_show_and_tree_load_the_session_without_hashing_it(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    args = argparse.Namespace(session=str(path), root=None, cwd=None, all=False)
    session = open_session_arg(args)
    assert session.stamp.digest is None


def test_writes_refuse_a_read_only_stamp_and_leave_the_file_alone(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    before = path.read_bytes()
    session = read_session(path, digest=False)
    assert session
    entry = {"type": "label", "id": "l1", "parentId": None, "timestamp": STAMP, "targetId": "e3", "label": "x"}
    with pytest.raises(SessionError, match="read for display only"):
        append_entry(session, entry)
    with pytest.raises(SessionError, match="read for display only"):
        atomic_write(path, b"replaced\n", session.stamp)
    assert path.read_bytes() == before
    # The same write from a digested load goes through.
    append_entry(load_for_write(path), dict(entry))
    assert path.read_bytes().startswith(before) and b'"label":"x"' in path.read_bytes()


# -- memory that does not grow with the corpus --------------------------------------------


def _mark_chunk(chunk: list[tuple[str, int]]) -> list[int]:
    """A worker's task: leave one marker file per chunk it started."""
    directory, number = chunk[0]
    Path(directory, f"chunk-{number}").touch()
    return [number]


def test_scan_pool_keeps_a_bounded_window_of_chunks_ahead_of_a_slow_consumer(tmp_path: Path) -> None:
    """Workers may not run arbitrarily far ahead of the consumer (writing the index): their
    results would pile up in memory, a few KB per file, 860 MB at 100k sessions."""
    import time

    from seance.core import scanpool

    if not scanpool.available():
        pytest.skip("the scan pool forks: Linux only")
    workers, chunks = 2, 40
    items = [(str(tmp_path), number // scanpool.CHUNK) for number in range(chunks * scanpool.CHUNK)]
    consumed = 0
    for _chunk, results in scanpool.map_chunks(_mark_chunk, items, workers):
        consumed += 1
        assert results == [consumed - 1]  # in order
        if consumed in (1, 10):
            time.sleep(0.3)  # a slow consumer: the workers would run ahead now
            started = len(list(tmp_path.glob("chunk-*")))
            assert started <= consumed + workers * scanpool.AHEAD, (consumed, started)
    assert consumed == chunks


def _write_corpus(root: Path, sessions: int) -> None:
    bucket = root / "--p--"
    bucket.mkdir(parents=True)
    for number in range(sessions):
        _session(bucket / f"2025-01-01T00-00-{number:05d}_s{number}.jsonl", entries=3, session_id=f"s{number}")


def test_update_index_indexes_everything_and_keeps_no_summary(tmp_path: Path) -> None:
    from seance.core.catalog import Catalog

    root = tmp_path / "sessions"
    _write_corpus(root, 300)
    catalog = Catalog([root], cache_dir=tmp_path / "cache", workers=2)
    try:
        assert catalog.update_index() == 300
        assert catalog.last_stats.read == 300
        assert len(catalog.search_text("prompt")) > 0  # the full text went in
        assert catalog.update_index() == 300 and catalog.last_stats.reused == 300  # warm: nothing read
        assert len(catalog.refresh()) == 300
    finally:
        catalog.close()


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["tree", "--json"], ["tree", "--text"]])
def test_a_command_keeps_what_it_read_for_the_exit_with_the_file_closed(
    tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`show` and `tree` do not free what they read as they return (their own process ends
    without freeing it, see `exit_now`): it is held until the next command, and the file
    the session's entries were read back from is closed once the answer is out."""
    import os

    from seance.cli import main
    from seance.cli import session as session_cli
    from seance.core.session import BY_OFFSET_MIN_BYTES, Session

    path = _session(tmp_path / "big.jsonl", entries=BY_OFFSET_MIN_BYTES // 100)  # (read back by offset)
    other = _session(tmp_path / "small.jsonl")
    descriptors = len(os.listdir("/proc/self/fd"))
    assert main([*command, str(path)]) == 0
    sessions = [item for item in session_cli._LEFT_FOR_THE_EXIT if isinstance(item, Session)]
    assert [session.path for session in sessions] == [path]
    source = sessions[0].entries._source
    assert source is not None and source.closed, "read back by offset, and the file closed since"
    assert len(os.listdir("/proc/self/fd")) == descriptors
    if command == ["show"]:
        assert len(session_cli._LEFT_FOR_THE_EXIT) == 2  # (and the context made of it)
    assert main([*command, str(other)]) == 0
    assert [item.path for item in session_cli._LEFT_FOR_THE_EXIT if isinstance(item, Session)] == [other]
    assert str(path) in capsys.readouterr().out or command[0] == "tree"
