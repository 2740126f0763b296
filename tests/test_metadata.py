"""Exact metadata: pi 0.73's buildSessionInfo rules, seance's extras, and continuing a scan."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seance.core.metadata import MetaState, NotSessionFile, iso_ms, parse_time_ms, scan_file, summary_from_scan

HEADER = {"type": "session", "version": 3, "id": "abc-123", "timestamp": "2025-01-02T03:04:05.678Z", "cwd": "/p"}


def write(path: Path, *values: object, raw: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(value).encode() + b"\n" for value in values) + raw)
    return path


def msg(
    entry_id: str, parent: str | None, role: str, content: object, ts: object = 1_700_000_000_000, **extra: object
) -> dict:
    message = {"role": role, "content": content, **extra}
    if ts is not None:
        message["timestamp"] = ts
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2025-01-02T03:05:00.000Z",
        "message": message,
    }


def summary(path: Path):
    return summary_from_scan(str(path), scan_file(path))


def test_pi_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        {**HEADER, "parentSession": "/x/parent.jsonl"},
        msg("a", None, "user", [{"type": "text", "text": ""}]),  # empty text: not the first message
        msg("b", "a", "user", [{"type": "text", "text": "hello"}, {"type": "image"}, {"type": "text", "text": "w"}]),
        msg("c", "b", "assistant", [{"type": "text", "text": "hi"}], ts=1_700_000_500_000),
        msg("d", "c", "toolResult", [{"type": "text", "text": "out"}], ts=1_800_000_000_000),  # not activity
        {"type": "session_info", "id": "e", "parentId": "d", "name": "  first  "},
    )
    result = summary(path)
    assert result.to_pi_json() == {
        "path": str(path),
        "id": "abc-123",
        "cwd": "/p",
        "name": "first",
        "parentSession": "/x/parent.jsonl",
        "created": "2025-01-02T03:04:05.678Z",
        "modified": iso_ms(1_700_000_500_000),
        "messageCount": 4,
        "firstMessage": "hello w",
    }
    assert result.exact


def test_latest_session_info_decides_and_blank_clears(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        {"type": "session_info", "id": "a", "name": "named"},
        {"type": "session_info", "id": "b", "name": "   "},
    )
    assert summary(path).name is None
    path = write(
        tmp_path / "t.jsonl",
        HEADER,
        {"type": "session_info", "id": "a", "name": ""},
        {"type": "session_info", "id": "b", "name": "\ufeffkept\u00a0"},
    )
    assert summary(path).name == "kept"  # JavaScript's trim(): BOM and NBSP go


def test_modified_fallbacks(tmp_path: Path) -> None:
    # ISO entry timestamp when the message has no numeric one
    path = write(tmp_path / "a.jsonl", HEADER, msg("a", None, "user", "x", ts=None))
    assert summary(path).modified == "2025-01-02T03:05:00.000Z"
    # no user/assistant message with content: the header timestamp
    path = write(tmp_path / "b.jsonl", HEADER, msg("a", None, "toolResult", "x"))
    assert summary(path).modified == HEADER["timestamp"]
    # no usable header timestamp either: the file's mtime
    path = write(tmp_path / "c.jsonl", {**HEADER, "timestamp": "not a date"})
    os.utime(path, ns=(1_600_000_000_123_000_000, 1_600_000_000_123_000_000))
    result = summary(path)
    assert result.modified == "2020-09-13T12:26:40.123Z"
    assert result.created is None
    # a message without a `content` key does not count as activity
    path = write(
        tmp_path / "d.jsonl",
        HEADER,
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "timestamp": 5e12}},
    )
    assert summary(path).modified == HEADER["timestamp"]


def test_no_messages_and_cwd_not_a_string(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", {**HEADER, "cwd": 5})
    result = summary(path)
    assert (result.first_message, result.cwd, result.message_count) == ("(no messages)", "", 0)


def test_malformed_lines_bom_and_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [
        b"\xef\xbb\xbf" + json.dumps(HEADER).encode(),
        b"{not json",
        b"",
        b'{"a":1}{"b":2}',
        json.dumps(msg("a", None, "user", "caf\u00e9")).encode().replace(b"caf\\u00e9", b"caf\xe9"),
        json.dumps(msg("b", "a", "assistant", "ok")).encode() + b"\r",
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = summary(path)
    assert result.message_count == 2
    assert result.first_message == "caf\ufffd"


def test_not_a_session(tmp_path: Path) -> None:
    with pytest.raises(NotSessionFile):
        scan_file(write(tmp_path / "a.jsonl", {"type": "message", "id": "x"}, HEADER))
    with pytest.raises(NotSessionFile):
        scan_file(write(tmp_path / "b.jsonl", raw=b""))
    with pytest.raises(NotSessionFile):
        scan_file(write(tmp_path / "c.jsonl", raw=b"null\n" + json.dumps(HEADER).encode() + b"\n"))


def test_torn_last_line_counts_but_is_not_consumed(tmp_path: Path) -> None:
    complete = write(tmp_path / "s.jsonl", HEADER, msg("a", None, "user", "one"))
    tail = json.dumps(msg("b", "a", "assistant", "two")).encode()
    with open(complete, "ab") as handle:
        handle.write(tail)  # valid JSON, no newline: pi parses it
    result = scan_file(complete)
    assert result.final.message_count == 2
    assert result.state.message_count == 1
    assert result.state.offset == complete.stat().st_size - len(tail)


def test_omp_title_slot_and_title_change(tmp_path: Path) -> None:
    slot = json.dumps({"type": "title", "v": 1, "title": "Slot title", "pad": ""}).encode()
    slot = slot[:-1] + b" " * (255 - len(slot)) + b"}"  # keep it valid JSON: pad before the brace
    path = tmp_path / "omp.jsonl"
    path.write_bytes(
        slot[:255]
        + b"\n"
        + json.dumps(HEADER).encode()
        + b"\n"
        + json.dumps({"type": "title_change", "id": "t", "parentId": None, "title": "later"}).encode()
        + b"\n"
    )
    result = summary(path)
    assert (result.name, result.dialect, result.id) == ("Slot title", "omp", "abc-123")
    empty_slot = tmp_path / "empty.jsonl"
    empty_slot.write_bytes(
        json.dumps({"type": "title", "v": 1, "title": ""}).encode()
        + b"\n"
        + json.dumps({**HEADER, "title": "header"}).encode()
        + b"\n"
    )
    assert summary(empty_slot).name is None  # an empty slot means no title; the header title is ignored


def test_python_port_dialect(tmp_path: Path) -> None:
    path = write(
        tmp_path / "port.jsonl",
        {"type": "session_header", "id": "port-1", "timestamp": 1_700_000_000.5, "cwd": "/port"},
        {
            "type": "message",
            "id": "a",
            "parent_id": None,
            "timestamp": 1_700_000_001.0,
            "message": {"role": "user", "content": "from python", "timestamp": 1_700_000_002.25},
        },
    )
    result = summary(path)
    assert result.dialect == "operator"
    assert result.first_message == "from python"
    assert result.created == "2023-11-14T22:13:20.500Z"
    assert result.modified == "2023-11-14T22:13:22.250Z"


def test_extras_branches_labels_models_usage(tmp_path: Path) -> None:
    usage = {"input": 100, "output": 20, "cost": {"total": 0.5}}
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        {"type": "model_change", "id": "m", "parentId": None, "provider": "openai", "modelId": "gpt-5"},
        msg("a", "m", "user", "q1"),
        msg("b", "a", "assistant", "r1", provider="anthropic", model="claude", usage=usage, stopReason="stop"),
        msg("c", "a", "user", "q2 from a branch"),  # a second child of a: a branch point
        msg("d", "c", "assistant", "r2", provider="anthropic", model="claude", usage=usage, stopReason="toolUse"),
        {"type": "label", "id": "l1", "parentId": "d", "targetId": "a", "label": "start"},
        {"type": "label", "id": "l2", "parentId": "l1", "targetId": "b", "label": "gone"},
        {"type": "label", "id": "l3", "parentId": "l2", "targetId": "b"},  # clears b's label
        {"type": "compaction", "id": "k", "parentId": "l3", "summary": "s", "firstKeptEntryId": "c"},
    )
    result = summary(path)
    assert result.branch_points == 1
    assert result.labels == ("start",)
    assert result.compactions == 1
    assert result.models == ("openai/gpt-5", "anthropic/claude")
    assert (result.input_tokens, result.output_tokens, result.cost) == (200, 40, 1.0)
    assert result.last_stop == "toolUse"


def test_text_sink_fields(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("a", None, "user", "find the needle"),
        msg(
            "b",
            "a",
            "assistant",
            [
                {"type": "text", "text": "running"},
                {"type": "toolCall", "id": "t", "name": "bash", "arguments": {"command": "ls -la"}},
            ],
        ),
        msg("c", "b", "toolResult", [{"type": "text", "text": "tool output is indexed too"}]),
    )
    seen: list[tuple[str, str]] = []
    scan_file(path, sink=lambda field, text: seen.append((field, text)))
    assert seen == [
        ("user", "find the needle"),
        ("bash", "ls -la"),
        ("tool", "bash"),
        ("assistant", "running"),
        ("result", "tool output is indexed too"),  # what the preview shows is searchable (issue 14)
    ]


def _grow(path: Path, entries: list[dict]) -> None:
    with open(path, "ab") as handle:
        for entry in entries:
            handle.write(json.dumps(entry).encode() + b"\n")


def test_continue_from_offset_equals_full_read(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, msg("a", None, "user", "first"))
    first = scan_file(path)
    saved = MetaState.from_json(first.state.to_json())
    _grow(
        path,
        [
            msg("b", "a", "assistant", "r", model="m", provider="p", usage={"input": 1, "output": 2}),
            {"type": "session_info", "id": "n", "parentId": "b", "name": "named later"},
            {"type": "label", "id": "l", "parentId": "n", "targetId": "a", "label": "x"},
            msg("c", "a", "user", "branch", ts=1_900_000_000_000),
        ],
    )
    continued = scan_file(path, state=saved)
    full = scan_file(path)
    assert continued.continued and not full.continued
    assert summary_from_scan(str(path), continued) == summary_from_scan(str(path), full)
    assert continued.state.to_json() == full.state.to_json()


def test_rewritten_prefix_is_not_continued(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, msg("a", None, "user", "first"))
    saved = scan_file(path).state
    write(path, {**HEADER, "id": "other-id"}, msg("a", None, "user", "first"), msg("b", "a", "user", "more"))
    result = scan_file(path, state=saved)
    assert not result.continued
    assert (result.final.id, result.final.message_count) == ("other-id", 2)
    write(path, HEADER)  # shrunk
    result = scan_file(path, state=saved)
    assert not result.continued and result.final.message_count == 0


def test_time_helpers() -> None:
    assert iso_ms(1_736_911_215_920) == "2025-01-15T03:20:15.920Z"
    assert parse_time_ms("2025-01-15T03:20:15.920Z") == 1_736_911_215_920
    assert parse_time_ms("2025-01-15T03:20:15.9209+00:00") == 1_736_911_215_920
    assert parse_time_ms("garbage") is None
    assert parse_time_ms(True) is None
