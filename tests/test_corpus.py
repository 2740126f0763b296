"""Every real session file in ../shared/corpus loads; old ones read as pi reads them after migrating.

The corpus is personal data: it is read in place and never copied into the repository
(pi's own oracle migrates files in place, so it only ever sees temporary copies).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from conftest import CORPUS, NO_CORPUS, corpus_files, node_oracle_available, run_node

from seance.core.context import build_session_context
from seance.core.session import NotASession, Session, read_session

FILES = corpus_files()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_file_loads_without_writing(path: Path) -> None:
    before = _digest(path)
    session = read_session(path)
    assert isinstance(session, Session), getattr(session, "reason", "")
    assert session.entries, "a real session has entries"
    context = build_session_context(session)
    assert context.leaf_id == session.leaf_id
    assert _digest(path) == before, "loading must never modify a file"


def _pi_reading(paths: list[Path], tmp_path: Path) -> list[dict]:
    copies = []
    for index, path in enumerate(paths):
        copy = tmp_path / f"{index}-{path.name}"
        shutil.copyfile(path, copy)
        copies.append(str(copy))
    return json.loads(run_node("context_of.mjs", *copies))


V1_FILES = [p for p in FILES if (read_session(p) or None) is not None and read_session(p).disk_version < 2]


@pytest.mark.skipif(not node_oracle_available(), reason="npm oracle not installed")
@pytest.mark.skipif(not V1_FILES, reason="no v1 files in the corpus" if FILES else NO_CORPUS)
def test_v1_files_give_the_context_pi_gives_after_its_migration(tmp_path: Path) -> None:
    pi_files = [p for p in V1_FILES if not _has_title_slot(p)]
    readings = _pi_reading(pi_files, tmp_path)
    assert len(readings) == len(pi_files) >= 4
    for path, expected in zip(pi_files, readings, strict=True):
        session = read_session(path)
        assert session.migrations == ["v1→v2", "v2→v3"]
        context = build_session_context(session)
        ours = [{"role": m.role, "text": m.text} for m in context.messages]
        assert ours == expected["messages"], path
        assert context.thinking_level == expected["thinkingLevel"], path
        assert context.model == expected["model"], path
        assert [e["type"] for e in session.entries] == [n["type"] for n in expected["nodes"]], path


def _has_title_slot(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(16).startswith(b'{"type":"title"')


@pytest.mark.skipif(
    not (CORPUS / "omp" / "large-session.jsonl").exists(), reason=f"omp corpus missing: {CORPUS / 'omp'}"
)
def test_omp_title_slot_file_reads_like_its_v1_original() -> None:
    """omp rewrote the v1 fixture with a title slot and ids; pi itself cannot read it."""
    slotted = read_session(CORPUS / "omp" / "large-session.jsonl")
    original = read_session(CORPUS / "omp" / "v5.7.67" / "large-session.jsonl")
    assert isinstance(slotted, Session) and isinstance(original, Session)
    assert slotted.title_slot is not None and slotted.title_slot_bytes == 256
    assert slotted.dialect == "omp"
    assert slotted.disk_version == 3 and not slotted.migrations
    assert slotted.id == original.id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert slotted.name is None  # the slot's title is empty, and an empty slot wins over the header
    # Same conversation; omp renamed its package scope inside tool output, so compare shape
    # and the user's own words.
    ours = [(m.role, m.text if m.role == "user" else "") for m in build_session_context(slotted).messages]
    theirs = [(m.role, m.text if m.role == "user" else "") for m in build_session_context(original).messages]
    assert ours == theirs and len(ours) == 914


@pytest.mark.skipif(not node_oracle_available(), reason="npm oracle not installed")
def test_pi_itself_cannot_read_the_title_slot_file(tmp_path: Path) -> None:
    """Why the slot matters: pi sees no header and would start a fresh session."""
    source = CORPUS / "omp" / "large-session.jsonl"
    if not source.exists():
        pytest.skip(f"omp corpus missing: {CORPUS / 'omp'}")
    (reading,) = _pi_reading([source], tmp_path)
    assert reading["messages"] == []


def test_not_a_session_is_a_result_not_an_exception(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.jsonl"
    bogus.write_text('{"type":"message","id":"a"}\n')
    result = read_session(bogus)
    assert isinstance(result, NotASession) and "not a session header" in result.reason
    assert isinstance(read_session(tmp_path / "missing.jsonl"), NotASession)
    assert isinstance(read_session(tmp_path), NotASession)
