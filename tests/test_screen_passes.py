"""The tree screen's two passes after its first rows: the search index (`TreeModel.prepare_search`)
and the preview's running totals (`PathTotals`) read each entry once and give what they gave
when a tool result's text looked its call up in `tool_calls` (every assistant message read
back a second time, from the end) and when every message of the path became a `ContextMessage`
to be counted.

The references below are the code as it was.  Compared on generated sessions (forks, several
roots, a call id defined twice with other arguments, results before their calls or of no
call, roles that are no string, capital sigmas at the ends of words, bad lines), each read as
the tree view reads (messages read back from the file) and decoded, and on every file of
../shared/corpus; the reads are counted on a session of messages."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import NO_CORPUS, corpus_files
from test_preview_totals import _assert_same_totals, _lines

import seance.core.pathtotals as pathtotals
import seance.core.session as session_module
from seance.app.tree_model import TreeModel
from seance.core.context import CONTEXT_TYPES
from seance.core.linesource import LineSource
from seance.core.pathtotals import PathTotals
from seance.core.session import Session, read_session
from seance.core.summary import format_tool_call
from seance.core.text import content_text, drop_escapes, message_text, user_run

FILES = corpus_files()
STAMP = "2026-01-01T00:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "passes", "timestamp": STAMP, "cwd": "/p"}


def _old_search_text(model: TreeModel, entry_id: str, entry: dict[str, Any]) -> str:
    """`TreeModel._build_search_text` made plainly: the whole text joined (what the preview
    shows: a run's command and output, a failed message's error, a custom message's type, a
    compaction's summary), its escape sequences dropped (as the rows and the preview show
    it), then lowercased."""
    kind = entry.get("type")
    parts: list[str] = []
    if kind == "message" and isinstance(message := entry.get("message"), dict):
        run = user_run(message)
        if message.get("role") == "toolResult" or run:
            parts.append(model.summary(entry_id, entry).plain())
        parts.append(str(message.get("role") or ""))
        parts.append(message_text(message))
        if run:
            parts += [str(run[1] or ""), str(run[2] or "")]
        elif message.get("role") == "custom":
            parts.append(str(message.get("customType") or ""))
        if isinstance(error := message.get("errorMessage"), str) and error:
            parts.append(error)
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                parts.append(format_tool_call(block.get("name"), block.get("arguments")))
    elif kind == "custom_message":
        parts.append(str(entry.get("customType") or ""))
        parts.append(content_text(entry.get("content"), "\n"))
    elif kind == "branch_summary":
        parts.append(f"branch summary {entry.get('summary') or ''}")
    elif kind == "compaction":
        summary = entry.get("summary")
        parts += [model.summary(entry_id, entry).plain(), summary if isinstance(summary, str) else ""]
    else:
        parts.append(model.summary(entry_id, entry).plain())
    return drop_escapes(" ".join(parts)).lower()


SIGMA_WORDS = ["ΟΔΟΣ", "Σ", "ΣΑ", "aΣ", "Σ.", "'Σ'", ""]


def _calls_lines(rng: random.Random, count: int, *, chain: bool) -> list[bytes]:
    """`test_preview_totals._lines`, and messages of tool calls and results: a call id
    defined twice (later with other arguments), results before their call and of none,
    roles that are no string, texts and tool names ending or starting in a capital sigma."""
    lines = _lines(rng, count, chain=chain)
    ids: list[str] = []
    for index in range(1, len(lines)):
        try:
            entry = orjson.loads(lines[index])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        ids.append(entry["id"])
        if entry.get("type") != "message" or rng.random() < 0.3:
            continue
        word = rng.choice(SIGMA_WORDS)
        roll = rng.randrange(4)
        if roll == 0:
            call_id = f"c{rng.randrange(6)}"  # (few ids: most are defined more than once)
            arguments = {"command": f"{word} {rng.randrange(3)}", "path": word}
            call = {
                "type": "toolCall",
                "id": call_id,
                "name": rng.choice(["bash", "read", word]),
                "arguments": arguments,
            }
            content = rng.choice([[call], [{"type": "text", "text": word}, call], [call, dict(call, name="grep")]])
            entry["message"] = {"role": "assistant", "content": content, "stopReason": "toolUse"}
        elif roll == 1:
            call_id = rng.choice([f"c{rng.randrange(8)}", 7, None])
            text = [{"type": "text", "text": f"{word} out {word}"}]
            entry["message"] = {"role": "toolResult", "toolCallId": call_id, "toolName": word or None, "content": text}
        elif roll == 2:
            entry["message"] = {"role": rng.choice([7, None, ["x"], "bashExecution"]), "content": word, "command": word}
        else:
            entry["message"] = {"role": "user", "content": f"{word} {word}"}
        lines[index] = orjson.dumps(entry) + b"\n"
    return lines


def _by_offset(path: Path) -> Session | Any:
    """`read_session` as the tree view reads a big file: every entry read back from it by offset."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(session_module, "BY_OFFSET_MIN_BYTES", 0)
        return read_session(path, digest=False)


def _reads(path: Path) -> list[Session]:
    """The tree view's read (messages read back from the file, as of a big file; a small
    file's lines kept) and one with the messages decoded."""
    sessions = [
        _by_offset(path),
        read_session(path, digest=False),
        read_session(path, digest=False, decoded=CONTEXT_TYPES),
    ]
    assert all(isinstance(session, Session) for session in sessions)
    return sessions  # type: ignore[return-value]


def _assert_same_search_texts(path: Path) -> int:
    """Every entry's search text, and each row's summary after it, as the old code made them."""
    compared = 0
    for session in _reads(path):
        model, reference = TreeModel(session.tree), TreeModel(session.tree)
        model.prepare_search()
        for entry_id in model.order:
            expected = _old_search_text(reference, entry_id, session.tree.by_id[entry_id])
            label = session.tree.labels.get(entry_id)
            assert model.search_text(entry_id) == (f"{label.lower()} {expected}" if label else expected), (
                path,
                entry_id,
            )
            assert model.summary(entry_id) == reference.summary(entry_id), (path, entry_id)
            compared += 1
        session.close()
    return compared


def test_search_texts_equal_the_old_ones_on_120_generated_sessions(tmp_path: Path) -> None:
    rng = random.Random(1400)
    compared = 0
    for trial in range(120):
        path = tmp_path / f"s{trial}.jsonl"
        path.write_bytes(b"".join(_calls_lines(rng, rng.randrange(0, 120), chain=trial % 3 == 0)))
        compared += _assert_same_search_texts(path)
    assert compared > 10_000


@pytest.mark.skipif(not FILES, reason=NO_CORPUS)
def test_search_texts_equal_the_old_ones_on_every_corpus_file() -> None:
    assert sum(_assert_same_search_texts(path) for path in FILES) > 1000


def test_totals_equal_the_summed_walk_on_80_generated_sessions_of_calls_and_odd_roles(tmp_path: Path) -> None:
    rng = random.Random(1401)
    for trial in range(80):
        path = tmp_path / f"t{trial}.jsonl"
        path.write_bytes(b"".join(_calls_lines(rng, rng.randrange(0, 120), chain=trial % 2 == 0)))
        for session in _reads(path):
            ids = list(session.tree.entries.ids)
            for leaf in [None, *rng.sample(ids, min(25, len(ids)))]:
                _assert_same_totals(session, leaf)
            session.close()


def _messages_session(path: Path, rounds: int) -> Path:
    """A chain of `rounds` × (user, assistant with a call, its result), a custom message and
    a branch summary every tenth round."""
    lines = [orjson.dumps(HEADER)]
    parent = None

    def add(entry: dict[str, Any]) -> None:
        nonlocal parent
        entry_id = f"e{len(lines)}"
        lines.append(orjson.dumps({**entry, "id": entry_id, "parentId": parent, "timestamp": STAMP}))
        parent = entry_id

    for turn in range(rounds):
        add({"type": "message", "message": {"role": "user", "content": f"prompt {turn}"}})
        call = {"type": "toolCall", "id": f"call-{turn}", "name": "bash", "arguments": {"command": f"ls {turn}"}}
        add({"type": "message", "message": {"role": "assistant", "content": [call], "stopReason": "toolUse"}})
        result = {"role": "toolResult", "toolCallId": f"call-{turn}", "toolName": "bash", "content": "x" * 40}
        add({"type": "message", "message": result})
        if turn % 10 == 0:
            add({"type": "custom_message", "customType": "note", "content": "n", "display": True})
            add({"type": "branch_summary", "summary": "went left", "fromId": "e1"})
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_the_search_index_reads_each_entry_of_a_session_of_messages_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its tool results' calls come from the assistant messages it decodes anyway: no line is
    read back twice (it was every assistant message again, from the end)."""
    path = _messages_session(tmp_path / "m.jsonl", 300)
    session = _by_offset(path)
    assert isinstance(session, Session)
    model = TreeModel(session.tree)
    reads = 0
    read = LineSource.read

    def counted(source: LineSource, offset: int, length: int) -> Any:
        nonlocal reads
        reads += 1
        return read(source, offset, length)

    monkeypatch.setattr(LineSource, "read", counted)
    model.prepare_search()
    entries = len(session.entries)
    assert reads == entries  # (300 rounds of 3 messages and 60 others)
    texts = [model.search_text(entry_id) for entry_id in model.order]
    assert sum(text.startswith("[bash: ls 7] toolresult") for text in texts) == 1  # (a result found by its call)


def test_totals_make_no_context_message_for_a_message_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `message` entry's characters are counted off its `message`: only the custom messages
    and branch summaries of the path become `ContextMessage`s (every entry did)."""
    path = _messages_session(tmp_path / "m.jsonl", 300)
    session = read_session(path, digest=False)
    assert isinstance(session, Session)
    made = 0
    as_message = pathtotals.as_message

    def counted(entry: dict[str, Any]) -> Any:
        nonlocal made
        made += 1
        return as_message(entry)

    monkeypatch.setattr(pathtotals, "as_message", counted)
    chars, _cost = PathTotals.of(session.tree).at(session.tree.leaf_id)
    assert chars > 300 * 40
    assert made == 60  # (30 custom messages, 30 branch summaries)
    _assert_same_totals(session, session.tree.leaf_id)
