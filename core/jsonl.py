"""Lenient JSONL parsing: keep every readable object, report every line that is not.

Real session files contain torn last lines (an agent was killed mid-write), two objects
glued onto one line (an append race) and bytes that are not UTF-8.  None of that may raise:
each bad line becomes a `Skipped` record that says where and why.
"""

from __future__ import annotations

from dataclasses import dataclass
import json
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Skipped:
    """One line (1-based) that was not used, and why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Record:
    """One parsed JSON object with its 1-based line number and byte span."""

    line: int
    start: int
    end: int
    value: dict[str, Any]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads_slow(text: str) -> Any:
    """The stdlib parser, for what orjson refuses but JSON allows (integers beyond 64 bits)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as error:
        raise orjson.JSONDecodeError(str(error), text, 0) from error


def _loads(raw: bytes) -> tuple[Any, bool]:
    """Parse one line; retry with U+FFFD replacement when the bytes are not UTF-8.

    Returns the value and whether a replacement was needed.  Raises `orjson.JSONDecodeError`.
    """
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            # Node reads files as UTF-8 with replacement; so do we.
            return _loads_slow(raw.decode("utf-8", "replace")), True
        return _loads_slow(text), False


def _describe_failure(raw: bytes) -> str:
    stripped = raw.strip()
    if stripped.startswith(b"{") and b"}{" in stripped:
        return "two JSON objects glued onto one line"
    return "not valid JSON"


def parse_jsonl(data: bytes, *, first_line: int = 1, base_offset: int = 0) -> tuple[list[Record], list[Skipped]]:
    """Parse JSONL bytes leniently into objects plus a list of skipped lines.

    `first_line`/`base_offset` let callers parse a tail that starts mid-file.
    A final line without a newline is kept when it parses, and reported as torn when not.
    """
    records: list[Record] = []
    skipped: list[Skipped] = []
    pos = 0
    line_no = first_line - 1
    size = len(data)
    while pos < size:
        newline = data.find(b"\n", pos)
        end = size if newline == -1 else newline
        line_no += 1
        raw = data[pos:end]
        start = pos
        pos = end + 1
        if not raw.strip():
            continue
        try:
            value, replaced = _loads(raw)
        except orjson.JSONDecodeError:
            reason = "torn last line (no newline)" if newline == -1 else _describe_failure(raw)
            skipped.append(Skipped(line_no, reason))
            continue
        if not isinstance(value, dict):
            skipped.append(Skipped(line_no, f"a JSON {type(value).__name__}, not an object"))
            continue
        if replaced:
            skipped.append(Skipped(line_no, "bytes that are not UTF-8 were replaced (line kept)"))
        records.append(Record(line_no, base_offset + start, base_offset + end, value))
    return records, skipped
