"""Prefix metadata for the first paint: one stat and the first 4096 bytes of a file.

Like oh-my-pi's `scanSessionFile`: complete lines of the prefix are parsed (the cut-off
last line is not), a title slot is peeled off, and what the prefix cannot know is marked:
`exact=False`, `message_count` is a lower bound (the parsed message entries plus a
`"type":"message"` marker on the cut-off line), and
`modified` is the file's mtime.  A header longer than the prefix is read with a tolerant
string scanner, and when no user text is in a complete line the raw bytes are searched.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from operator import itemgetter
from typing import Any, TypeVar

import orjson

from . import dialects
from .discovery import FileInfo
from .metadata import _BOM, NO_MESSAGES, MetaState, NotSessionFile, _Scanner, iso_ms
from .model import SessionSummary
from .safeopen import open_regular
from .text import json_bytes

PREFIX_BYTES = 4096

Item = TypeVar("Item")

_MESSAGE_MARKER = re.compile(rb'"type"\s*:\s*"message"')
_ROLE = re.compile(rb'"role"\s*:\s*"(user|assistant|developer)"')
_TEXT_AFTER_ROLE = re.compile(rb'"(?:content|text)"\s*:\s*"((?:[^"\\]|\\.)*)(?:"|\\?$)')


def _string_property(raw: bytes, key: str) -> str | None:
    """The value of `"key": "..."` in a possibly cut-off JSON line, or None."""
    match = re.search(rb'"' + re.escape(key.encode()) + rb'"\s*:\s*"((?:[^"\\]|\\.)*)"', raw)
    if not match:
        return None
    try:
        return orjson.loads(b'"' + match.group(1) + b'"')
    except orjson.JSONDecodeError:
        return None


def _tolerant_header(raw: bytes) -> dict[str, Any] | None:
    kind = _string_property(raw, "type")
    session_id = _string_property(raw, "id")
    if kind not in dialects.HEADER_TYPES or session_id is None:
        return None
    header: dict[str, Any] = {"type": kind, "id": session_id}
    for key in ("cwd", "timestamp", "parentSession", "title"):
        value = _string_property(raw, key)
        if value is not None:
            header[key] = value
    return header


def _json_string(body: bytes) -> str:
    """Decode a JSON string body that may be cut off (mid-escape, mid-UTF-8 sequence)."""
    for cut in range(0, 7):
        try:
            return orjson.loads(b'"' + body[: len(body) - cut] + b'"')
        except orjson.JSONDecodeError:
            continue
    return ""


def _raw_first_message(raw: bytes) -> str | None:
    """The first user (else assistant) text in the raw prefix, even on a cut-off line."""
    fallback = None
    for match in _ROLE.finditer(raw):
        text_match = _TEXT_AFTER_ROLE.search(raw, match.end())
        if not text_match:
            continue
        text = _json_string(text_match.group(1))
        if not text:
            continue
        if match.group(1) == b"user":
            return text
        fallback = fallback or text
    return fallback


def _read(info: FileInfo) -> bytes:
    descriptor, _info = open_regular(info.path)  # no buffered file object; never blocks on a FIFO
    try:
        return os.read(descriptor, PREFIX_BYTES)
    finally:
        os.close(descriptor)


def read_prefix(info: FileInfo, *, text: bool = True) -> SessionSummary:
    """Prefix metadata of one file.  Raises `NotSessionFile` or `OSError`."""
    return summary_from_prefix(info, _read(info), text=text)


def _trimmed(raw: bytes, whole: bool) -> bytes:
    """`raw` (a file's first bytes; `whole`: all of them) without the whitespace pi's
    `content.trim()` drops from the file's ends before its `JSON.parse`s."""
    if raw[:1] == b"{" and (not whole or raw[-2:] == b"}\n"):  # the usual file: nothing to trim
        return raw
    from .jsonl import data_bounds

    bounds = data_bounds(raw, whole=whole)
    return raw if bounds is None else raw[bounds[0] : bounds[1]]


def _scan_prefix(raw: bytes, text: bool) -> tuple[MetaState, int, str, list[str]]:
    """(state, message count lower bound, first message, texts) of a 4 KB prefix."""
    whole = len(raw) < PREFIX_BYTES
    complete = whole or raw.endswith(b"\n")
    if raw.startswith(_BOM):  # as the full reader (`metadata`) and pi's trim(): a BOM is no header
        raw = raw[len(_BOM) :]
    raw = _trimmed(raw, whole)
    lines = raw.split(b"\n")
    cut_line = lines.pop()  # after the last newline: b"" when complete (no parse error raised for it)
    if complete and cut_line:
        lines.append(cut_line)  # a short file without a trailing newline: its last line is whole
        cut_line = b""
    state = MetaState()
    texts: list[str] = []
    scanner = _Scanner(state, (lambda _field, text: texts.append(text)) if text else None, extras=False)
    scanner.feed_lines(lines)
    if not state.header_done:
        header = _tolerant_header(cut_line)
        if header is None:
            raise NotSessionFile("no session header in the first 4 KB")
        scanner.header(header)
    count = state.message_count  # the cut-off line counts too:
    if b'"message"' in cut_line:  # (a plain substring test first: most cut lines are text)
        count += len(_MESSAGE_MARKER.findall(cut_line))
    return state, count, state.first_message or _raw_first_message(raw) or NO_MESSAGES, texts


def summary_from_prefix(info: FileInfo, raw: bytes, *, text: bool = True) -> SessionSummary:
    """Prefix metadata of `raw`; `text=False` leaves `prefix_text` empty (a plain listing
    needs no searchable text, and the scanner then skips every text past the first prompt)."""
    state, count, first, texts = _scan_prefix(raw, text)
    mtime_ms = info.mtime_ns // 1_000_000
    return SessionSummary(
        path=info.path,
        id=state.id,
        cwd=state.cwd,
        name=state.name,
        parent_session=state.parent_session,
        created=state.created,
        modified=iso_ms(mtime_ms),
        modified_ms=mtime_ms,
        message_count=count,
        first_message=first,
        size=info.size,
        mtime_ns=info.mtime_ns,
        exact=False,
        dialect=state.dialect,
        labels=state.label_values,
        compactions=state.compactions,
        prefix_text=" ".join(texts),
    )


def pi_json_from_prefix(info: FileInfo, raw: bytes) -> dict[str, Any]:
    """`summary_from_prefix(info, raw).to_pi_json()` without the summary: `ls --quick --json`
    builds ten thousand of these, and a frozen 24-field summary costs as much as the parse."""
    state, count, first, _texts = _scan_prefix(raw, False)
    return {
        "path": info.path,
        "id": state.id,
        "cwd": state.cwd,
        "name": state.name,
        "parentSession": state.parent_session,
        "created": state.created,
        "modified": iso_ms(info.mtime_ns // 1_000_000),
        "messageCount": count,
        "firstMessage": first,
    }


def _each(
    infos: Sequence[FileInfo], skipped: list[tuple[str, str]] | None, build: Callable[[FileInfo, bytes], Item]
) -> Iterator[tuple[FileInfo, Item]]:
    """`build(info, prefix)` of every readable session; failures go to `skipped`."""
    for info in infos:
        try:
            yield info, build(info, _read(info))
        except NotSessionFile as error:
            if skipped is not None:
                skipped.append((info.path, str(error)))
        except OSError as error:
            if skipped is not None:
                skipped.append((info.path, error.strerror or str(error)))
        except Exception as error:  # one poisoned file must not hide the others
            if skipped is not None:
                skipped.append((info.path, f"cannot be read ({type(error).__name__}: {error})"))


def quick_summaries(
    infos: list[FileInfo], skipped: list[tuple[str, str]] | None = None, *, text: bool = True
) -> list[SessionSummary]:
    """Prefix summaries of many files, newest mtime first; failures go to `skipped`.
    `text=False`: no `prefix_text` (see `summary_from_prefix`)."""

    def build(info: FileInfo, raw: bytes) -> SessionSummary:
        return summary_from_prefix(info, raw, text=text)

    out = [summary for _info, summary in _each(infos, skipped, build)]
    out.sort(key=lambda summary: summary.modified_ms, reverse=True)
    return out


def quick_pi_json(
    infos: Sequence[FileInfo], skipped: list[tuple[str, str]] | None = None
) -> list[tuple[int, str, bytes]]:
    """(mtime ms, cwd, encoded `ls --json` object) of many files, newest mtime first, as
    `quick_summaries` orders them; failures go to `skipped`."""
    out = [
        (info.mtime_ns // 1_000_000, item["cwd"], json_bytes(item))
        for info, item in _each(infos, skipped, pi_json_from_prefix)
    ]
    out.sort(key=itemgetter(0), reverse=True)
    return out


def quick_pi_json_chunk(infos: Sequence[FileInfo]) -> list[list]:
    """`quick_pi_json` of one chunk of files, in a worker process: [items, skipped]."""
    skipped: list[tuple[str, str]] = []
    return [quick_pi_json(infos, skipped), skipped]


__all__ = [
    "PREFIX_BYTES",
    "pi_json_from_prefix",
    "quick_pi_json",
    "quick_pi_json_chunk",
    "quick_summaries",
    "read_prefix",
    "summary_from_prefix",
]
