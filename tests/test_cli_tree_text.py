"""`seance tree --text`: pi's /tree shape in plain text — flat chains, ├─ └─ │ at branch points."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson


def _entry(entry_id: str, parent: str | None, text: str, second: int) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-01-01T00:00:{second:02d}.000Z",
        "message": {"role": "user", "content": text},
    }


def test_chains_stay_flat_and_branches_indent(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        _entry("a", None, "one", 1),
        _entry("b", "a", "two", 2),
        _entry("c", "b", "branch A", 3),
        _entry("d", "b", "branch B", 4),
        _entry("e", "d", "B goes on", 5),
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    out = subprocess.run(
        [sys.executable, "-m", "seance", "tree", str(path), "--text"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # pi's /tree: connectors show the branch point, a gutter the branch going on, the leaf's branch first
    assert out == [
        "  a user: one",
        "  b user: two",
        "  ├─ d user: branch B",
        "* │     e user: B goes on",
        "  └─ c user: branch A",
    ]
