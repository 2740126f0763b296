"""Shared pieces of the tests of what `ls --query` keeps (rows, every session's objects,
answers): an in-process seance on its own cache, its answer, and a fresh cache's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seance.cli import main
from seance.core import catalog as catalog_module


def kept_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A test module's `cache`: an in-process seance (no watcher, no discovery child) on its own
    cache; every answer over 100 bytes too big to keep whole (printed from every session's
    stored objects)."""
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    monkeypatch.setenv("SEANCE_WORKERS", "1")
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 100)
    return tmp_path / "cache"


def ls_json(capsysbinary: pytest.CaptureFixture[bytes], root: Path, query: str) -> bytes:
    """`seance ls --all --json --query QUERY` over `root`: its output."""
    code = main(["ls", "--all", "--json", "--root", str(root), "--query", query])
    assert code in (0, 1)
    return capsysbinary.readouterr().out


def fresh_answer(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, root: Path, query: str
) -> bytes:
    """The answer of a cache that never kept anything."""
    with monkeypatch.context() as patched:
        patched.setenv("SEANCE_CACHE_DIR", str(root.parent / f"fresh-{os.urandom(4).hex()}"))
        return ls_json(capsysbinary, root, query)
