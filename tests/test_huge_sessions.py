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


def _session(path: Path, entries: int = 30) -> Path:
    lines = [{"type": "session", "version": 3, "id": "s1", "cwd": "/p", "timestamp": STAMP}]
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
