"""Lenient JSONL parsing: keep every readable object, report every line that is not.

Real session files contain torn last lines (an agent was killed mid-write), two objects
glued onto one line (an append race) and bytes that are not UTF-8.  None of that may raise:
each bad line becomes a `Skipped` record that says where and why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
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
    append = records.append
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    start = 0
    lines = data.split(b"\n")
    last = len(lines) - 1
    for index, raw in enumerate(lines):
        end = start + len(raw)
        line_start, start = start, end + 1
        try:
            value = loads(raw)
            replaced = False
        except decode_error:
            if not raw.strip():
                continue
            try:
                value, replaced = _loads(raw)
            except decode_error:
                reason = "torn last line (no newline)" if index == last else _describe_failure(raw)
                skipped.append(Skipped(first_line + index, reason))
                continue
        if type(value) is not dict:
            skipped.append(Skipped(first_line + index, f"a JSON {type(value).__name__}, not an object"))
            continue
        if replaced:
            skipped.append(Skipped(first_line + index, "bytes that are not UTF-8 were replaced (line kept)"))
        append(Record(first_line + index, base_offset + line_start, base_offset + end, value))
    return records, skipped
