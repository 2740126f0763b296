"""Exact list metadata of a session file, equal to pi 0.73's `SessionManager.list()` field for field.

pi's `buildSessionInfo` reads the whole file, `JSON.parse`s every non-blank line (skipping
malformed ones) and requires the first parsed value to be the `session` header.  Then:

* `name` — the LATEST `session_info` decides (trimmed; an empty one clears it).  For
  oh-my-pi files (title slot, `title_change`) and Python-port files seance follows
  `seance.core.session.session_name`; pi cannot read those files at all.
* `messageCount` — every `message` entry, any role, all branches.
* `firstMessage` — the first user text that is not empty (string content, or text blocks
  joined by one space), else `(no messages)`.
* `modified` — the latest user/assistant message time (`message.timestamp` in epoch ms,
  else the entry's ISO timestamp); else the header timestamp; else the file's mtime.
* `created` — the header timestamp; `cwd` — the header's if a string, else `""`.

On top of that, seance's own: branch points, labels, compactions, models, token and cost
totals from assistant `usage`, and how the last turn ended.

`MetaState` is an accumulator that can be saved and continued: the index keeps it and, when
a file has only grown, feeds just the appended bytes (`scan_file(..., state=saved)`).
The text sink collects, for full-text search, every text the context preview can show, each
under its field (`core.fulltext`): user and assistant text, thinking, tool calls with their
arguments, tool results and errors, bash commands and output, custom messages, compaction
and branch summaries.  Prefix scans (`extras=False`) get user and assistant text only.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from . import dialects
from .fulltext import BASH, CUSTOM, ERROR, RESULT, SUMMARY, THINKING, TOOL, custom_text, tool_call_text
from .model import SessionSummary
from .safeopen import open_regular
from .text import file_mention_text, user_run
from .timefmt import MAX_MS, MIN_MS, iso_ms, parse_time_ms  # noqa: F401  (re-exported)

NO_MESSAGES = "(no messages)"
_INT64_MAX = (1 << 63) - 1
_FINGERPRINT_HEAD = 4096
_FINGERPRINT_TAIL = 64
_BOM = b"\xef\xbb\xbf"
# JavaScript's String.prototype.trim() set (Python's str.strip() differs: it strips \x1c-\x1f, not U+FEFF).
_JS_SPACE = (
    " \t\n\v\f\r\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

TextSink = Callable[[str, str], None]  # (field, text): field is one of `core.fulltext.TEXT_FIELDS`


def js_trim(text: str) -> str:
    return text.strip(_JS_SPACE)


def _content_text(content: Any, joiner: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text")
            parts.append(text if isinstance(text, str) else ("" if text is None else str(text)))
    return joiner.join(parts)


def first_message(entries: Iterable[dict[str, Any]]) -> str:
    """pi's `firstMessage` of already-parsed entries: the first user message with text (string
    content, or its text blocks joined by one space), else `(no messages)`.  The same rule as
    the scanner's inline hot loop (`_Scanner.feed_lines`), for a session the caller has read."""
    for entry in entries:
        if entry.get("type") != "message":
            continue
        message = entry.get("message")
        if type(message) is not dict or message.get("role") != "user" or "content" not in message:
            continue
        content = message["content"]
        text = content if type(content) is str else _content_text(content, " ")
        if text:
            return text
    return NO_MESSAGES


_STATE_FIELDS = (
    "offset",
    "header_done",
    "slot",
    "slot_title",
    "id",
    "cwd",
    "parent_session",
    "created",
    "created_ms",
    "header_title",
    "snake",
    "message_count",
    "first_message",
    "last_activity",
    "info_seen",
    "info_name",
    "change_title",
    "labels",
    "compactions",
    "models",
    "input_tokens",
    "output_tokens",
    "cost",
    "last_stop",
    "last_entry_id",
    "branched",
    "omp",
    "head_hash",
    "tail_bytes",
    "bad_lines",
)


@dataclass(slots=True)
class MetaState:
    """Everything needed to finish or continue a scan; JSON-serialisable via `to_json`."""

    offset: int = 0  # bytes consumed: the end of the last newline-terminated line
    header_done: bool = False
    slot: bool = False  # oh-my-pi title slot seen
    slot_title: str | None = None
    id: str = ""
    cwd: str = ""
    parent_session: str | None = None
    created: str | None = None
    created_ms: int | None = None
    header_title: str | None = None
    snake: bool = False
    message_count: int = 0
    first_message: str = ""
    last_activity: float | None = None
    info_seen: bool = False
    info_name: str | None = None
    change_title: str | None = None
    labels: dict[str, str] | None = None
    compactions: int = 0
    models: list[str] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    last_stop: str | None = None
    last_entry_id: str | None = None
    branched: list[str] | None = None
    omp: bool = False
    head_hash: str = ""
    tail_bytes: str = ""
    bad_lines: int = 0

    def to_json(self) -> bytes:
        return orjson.dumps({name: getattr(self, name) for name in _STATE_FIELDS})

    @classmethod
    def from_json(cls, data: bytes) -> MetaState:
        values = orjson.loads(data)
        return cls(**{name: values[name] for name in _STATE_FIELDS if name in values})

    def copy(self) -> MetaState:
        clone = MetaState(**{name: getattr(self, name) for name in _STATE_FIELDS})
        clone.labels = dict(self.labels) if self.labels else None
        clone.models = list(self.models) if self.models else None
        clone.branched = list(self.branched) if self.branched else None
        return clone

    # -- results -------------------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """As `session.session_name`: session_info, else title_change, else header title; an
        oh-my-pi file's: its title slot's, else (no slot) its header's title."""
        if self.dialect == "omp":
            return self.slot_title if self.slot else self.header_title
        if self.info_seen:
            return self.info_name
        return self.change_title or self.header_title

    def modified_ms(self, mtime_ns: int) -> int:
        if self.last_activity is not None and 0 < self.last_activity <= MAX_MS:
            return int(self.last_activity)  # new Date(float) truncates
        if self.created_ms is not None:
            return self.created_ms
        return mtime_ns // 1_000_000

    @property
    def dialect(self) -> str:
        """Whose file: the Python port's, oh-my-pi's (a title slot, a header `title`, an entry
        only omp writes: see `_Scanner.entry`), else pi's."""
        omp = self.slot or self.omp or self.header_title is not None
        return "operator" if self.snake else ("omp" if omp else "pi")

    @property
    def branch_points(self) -> int:
        return len(self.branched or ())

    @property
    def label_values(self) -> tuple[str, ...]:
        return tuple(sorted(set((self.labels or {}).values())))


class NotSessionFile(Exception):
    """The file's first JSON value is not a session header; `str()` is the reason."""


_OMP_TYPES = frozenset({"ttsr_injection", "session_init", "mode_change", "title_change", "service_tier_change"})
# Entry types that only matter for branch tracking (which prefix scans skip).
_PLAIN_TYPES = frozenset({"thinking_level_change", "custom", "custom_message", "branch_summary", "model_change"})


class _Scanner:
    """Feeds lines into a `MetaState`; one instance per scan."""

    def __init__(self, state: MetaState, sink: TextSink | None, *, extras: bool = True) -> None:
        self.state = state
        self.sink = sink
        self.extras = extras  # False (prefix scans): no branch points, models, usage or tool names
        self.last_model: Any = None
        self.last_provider: Any = None

    def feed_lines(self, lines: list[bytes]) -> None:
        """The hot loop: pi-dialect `message` entries are handled inline, everything else by `entry`."""
        state = self.state
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        entry = self.entry
        sink = self.sink
        extras = self.extras
        for line in lines:
            try:
                value = loads(line)
            except decode_error:
                if not line.strip():
                    continue
                from .jsonl import LineError, js_blank, loads_line  # only for lines orjson refuses

                if js_blank(line):  # (no-break spaces, \v...: pi skips the line unread)
                    continue
                try:
                    value = loads_line(line)[0]
                except LineError:
                    state.bad_lines += 1
                    continue
            if type(value) is not dict:
                if not state.header_done:
                    raise NotSessionFile("the first JSON line is not a session header")
                state.bad_lines += 1
                continue
            if state.header_done and (state.snake or "parent_id" in value):
                value = self.normalise(value)
            kind = value.get("type")
            if kind != "message" or not state.header_done:
                if type(kind) is str and kind in _PLAIN_TYPES and state.header_done and not extras:
                    continue  # nothing in it for a prefix scan (thinking changes, extension state...)
                entry(value)
                continue
            # -- a message entry (the vast majority of lines) --
            if extras:
                parent = value.get("parentId")
                if parent is not None and parent != state.last_entry_id and type(parent) is str:
                    self.branch(parent)
                entry_id = value.get("id")
                if type(entry_id) is str:
                    state.last_entry_id = entry_id
            state.message_count += 1
            message = value.get("message")
            if type(message) is not dict:
                continue
            role = message.get("role")
            if role == "assistant":
                stop = message.get("stopReason")
                state.last_stop = stop if type(stop) is str else "stop"
                if extras:
                    self.assistant_extras(message)
                if "content" not in message:
                    continue
            elif role == "user":
                state.last_stop = "user"
                if "content" not in message:
                    continue
            else:
                if type(role) is str:
                    state.last_stop = role
                    if sink is not None and extras:
                        self.other_message(role, message)
                continue
            stamp = message.get("timestamp")
            if type(stamp) is int or type(stamp) is float:
                last = state.last_activity or 0
                state.last_activity = stamp if stamp > last else last
            else:
                self.activity_from_entry(value)
            if sink is None and (role == "assistant" or state.first_message):
                continue  # the text is only needed for the first message and full-text search
            content = message["content"]
            text = content if type(content) is str else _content_text(content, " ")
            if not text:
                continue
            if sink is not None:
                sink(role, text)
            if role == "user" and not state.first_message:
                state.first_message = text

    def other_message(self, role: str, message: dict[str, Any]) -> None:
        """The searchable text of a message that is neither user's nor assistant's."""
        sink = self.sink
        assert sink is not None
        if role == "toolResult":
            text = _content_text(message.get("content"), "\n")
            if text:
                sink(ERROR if message.get("isError") is True else RESULT, text)
        elif run := user_run(message):
            _word, command, output = run
            if isinstance(command, str) and command:
                sink(BASH, command)
            if isinstance(output, str) and output:
                sink(RESULT, output)
        elif role == "custom" or role == "developer":  # (developer: oh-my-pi's prompts made by the agent)
            text = custom_text(message.get("customType"), _content_text(message.get("content"), "\n"))
            if text:
                sink(CUSTOM, text)
        elif role == "fileMention":  # (oh-my-pi: the files a prompt's `@path` read, as the model reads them)
            text = file_mention_text(message.get("files"))
            if text:
                sink(RESULT, text)
        elif role in ("branchSummary", "compactionSummary"):
            summary = message.get("summary")
            if isinstance(summary, str) and summary:
                sink(SUMMARY, summary)

    def normalise(self, value: dict[str, Any]) -> dict[str, Any]:
        """A Python-port entry in pi's shape (its message timestamps are Unix seconds)."""
        self.state.snake = True
        value = dialects.normalise_entry(value, True)
        message = value.get("message")
        if type(message) is dict:
            stamp = message.get("timestamp")
            if isinstance(stamp, int | float) and not isinstance(stamp, bool) and -1e11 < stamp < 1e11:
                message["timestamp"] = int(stamp * 1000)  # (never int() of -inf)
        return value

    def branch(self, parent: str) -> None:
        """Appending under anything but the previous entry starts a new branch at `parent`."""
        branched = self.state.branched
        if branched is None:
            self.state.branched = [parent]
        elif parent not in branched:
            branched.append(parent)

    def activity_from_entry(self, value: dict[str, Any]) -> None:
        stamp = value.get("timestamp")
        moment = parse_time_ms(stamp) if isinstance(stamp, str) else None
        if moment is not None:  # Math.max(last ?? 0, moment)
            last = self.state.last_activity or 0
            self.state.last_activity = moment if moment > last else last

    def header(self, value: dict[str, Any]) -> None:
        state = self.state
        kind = value.get("type")
        if not isinstance(kind, str):  # `"type": [...]` is no header (and unhashable)
            raise NotSessionFile("the first JSON line is not a session header")
        if kind == dialects.TITLE_SLOT_TYPE and not state.slot:
            state.slot = True
            state.slot_title = dialects.slot_title(value)
            return
        if kind not in dialects.HEADER_TYPES or not isinstance(value.get("id"), str):
            raise NotSessionFile("the first JSON line is not a session header")
        state.snake = kind == "session_header" or "parent_session" in value or "parent_id" in value
        if state.snake:
            value = dialects.normalise_header(value, True)
        state.header_done = True
        state.id = value["id"]
        cwd = value.get("cwd")
        state.cwd = cwd if isinstance(cwd, str) else ""
        parent = value.get("parentSession")
        state.parent_session = parent if isinstance(parent, str) else None
        stamp = value.get("timestamp")
        state.created_ms = parse_time_ms(stamp)
        if state.created_ms is None:
            state.created = None
        elif type(stamp) is str and len(stamp) == 24 and stamp[10] == "T" and stamp[19] == "." and stamp[23] == "Z":
            state.created = stamp  # already what toISOString() would print
        else:
            state.created = iso_ms(state.created_ms)
        title = value.get("title")
        state.header_title = js_trim(title) or None if isinstance(title, str) else None
        state.omp = state.omp or isinstance(title, str)  # (omp's header has a title, pi's none)

    def entry(self, value: dict[str, Any]) -> None:
        state = self.state
        if not state.header_done:
            self.header(value)
            return
        kind = value.get("type")
        if not isinstance(kind, str):  # an entry without a usable type counts for nothing
            kind = ""
        entry_id = value.get("id")
        parent = value.get("parentId")
        if parent is not None and parent != state.last_entry_id and isinstance(parent, str):
            self.branch(parent)
        if isinstance(entry_id, str):
            state.last_entry_id = entry_id
        if kind == "session_info":
            state.info_seen = True
            name = value.get("name")
            state.info_name = (js_trim(name) or None) if isinstance(name, str) else None
        elif kind == "label":
            target = value.get("targetId")
            if isinstance(target, str):
                label = value.get("label")
                labels = state.labels if state.labels is not None else {}
                if isinstance(label, str) and label.strip():
                    labels[target] = label
                else:
                    labels.pop(target, None)
                state.labels = labels or None
        elif kind == "compaction":
            state.compactions += 1
            if self.sink is not None and self.extras and isinstance(summary := value.get("summary"), str) and summary:
                self.sink(SUMMARY, summary)
        elif kind == "branch_summary":
            if self.sink is not None and self.extras and isinstance(summary := value.get("summary"), str) and summary:
                self.sink(SUMMARY, summary)
        elif kind == "custom_message":
            text = custom_text(value.get("customType"), _content_text(value.get("content"), "\n"))
            if self.sink is not None and self.extras and text:
                self.sink(CUSTOM, text)
        elif kind == "model_change":
            provider, model = value.get("provider"), value.get("modelId")
            if not isinstance(model, str):
                model = value.get("model")
                state.omp = state.omp or isinstance(model, str)  # omp's "provider/id" (pi: provider, modelId)
            if isinstance(model, str):
                self.model(f"{provider}/{model}" if isinstance(provider, str) and provider else model)
        elif kind in _OMP_TYPES:
            state.omp = True
            if kind == "title_change":
                title = value.get("title")
                state.change_title = (js_trim(title) or None) if isinstance(title, str) else None

    def model(self, name: str) -> None:
        models = self.state.models
        if models is None:
            self.state.models = [name]
        elif name not in models:
            models.append(name)

    def assistant_extras(self, message: dict[str, Any]) -> None:
        state = self.state
        model = message.get("model")
        provider = message.get("provider")
        if model != self.last_model or provider != self.last_provider:  # a session rarely switches
            self.last_model, self.last_provider = model, provider
            if isinstance(model, str) and model:
                self.model(f"{provider}/{model}" if isinstance(provider, str) and provider else model)
        usage = message.get("usage")
        if type(usage) is dict:
            # Sums of what the file says, kept storable: capped at 64 bits (orjson and SQLite
            # refuse more), a cost that would become inf/nan is left out.
            tokens_in, tokens_out = usage.get("input"), usage.get("output")
            if type(tokens_in) is int:
                state.input_tokens = min(state.input_tokens + tokens_in, _INT64_MAX)
            if type(tokens_out) is int:
                state.output_tokens = min(state.output_tokens + tokens_out, _INT64_MAX)
            cost = usage.get("cost")
            total = cost.get("total") if type(cost) is dict else None
            if isinstance(total, int | float) and not isinstance(total, bool) and math.isfinite(state.cost + total):
                state.cost += total
        sink = self.sink
        if sink is not None:
            content = message.get("content")
            for block in content if type(content) is list else ():
                kind = block.get("type") if type(block) is dict else None
                if kind == "toolCall":
                    name = block.get("name")
                    arguments = block.get("arguments")
                    if isinstance(name, str):
                        command = arguments.get("command") if type(arguments) is dict else None
                        if isinstance(command, str) and command:
                            sink(BASH, command)
                        sink(TOOL, tool_call_text(name, arguments))
                elif kind == "thinking":
                    thinking = block.get("thinking")
                    if isinstance(thinking, str) and thinking:
                        sink(THINKING, thinking)
            error = message.get("errorMessage")
            if isinstance(error, str) and error:
                sink(ERROR, error)


@dataclass(frozen=True, slots=True)
class ScanResult:
    """A finished scan: the saved state (up to the last full line) and the state including a torn tail."""

    state: MetaState  # continue from here next time
    final: MetaState  # what the file means now (may include an unterminated last line)
    size: int
    mtime_ns: int
    continued: bool = False  # True when only the bytes after the saved offset were read


def _head_hash(head: bytes) -> str:
    return f"{len(head)}:{zlib.crc32(head):08x}"


def _tail(descriptor: int, offset: int) -> str:
    start = max(offset - _FINGERPRINT_TAIL, 0)
    return os.pread(descriptor, offset - start, start).hex()


def can_continue(state: MetaState, descriptor: int, size: int) -> bool:
    """True when the file still starts with the bytes `state` was computed from."""
    if not state.header_done or size < state.offset or state.offset == 0:
        return False
    head = os.pread(descriptor, min(_FINGERPRINT_HEAD, state.offset), 0)
    return _head_hash(head) == state.head_hash and _tail(descriptor, state.offset) == state.tail_bytes


def _feed_clipped(scanner: _Scanner, lines: list[bytes], offset: int, bounds: tuple[int, int]) -> tuple[int, bytes]:
    """Feed a block's split lines cut as pi's `content.trim()` cuts the file (`bounds`, see
    `core.jsonl.content_bounds`); returns (the offset read up to, the line left for `final`).

    The line reaching into the file's trailing whitespace is handled as an unterminated last
    line: counted in `final` only, and read again next time, when an append may have made it
    a middle line that pi no longer trims (and so no longer reads)."""
    from .jsonl import clip_lines

    clipped, tail = clip_lines(lines, offset, bounds)
    whole = len(lines) - 1  # the terminated lines (the last piece is unterminated or b"")
    if tail >= whole:  # no terminated line reaches the trailing whitespace
        scanner.feed_lines(clipped[:whole])
        return offset + sum(map(len, lines)) + whole - len(lines[-1]), clipped[-1]
    scanner.feed_lines(clipped[:tail])
    return offset + sum(map(len, lines[:tail])) + tail, clipped[tail]


def scan_file(
    path: str | os.PathLike[str], *, state: MetaState | None = None, sink: TextSink | None = None
) -> ScanResult:
    """Read a session file (or only what was appended after `state.offset`) into metadata.

    Raises `NotSessionFile` for a file whose first JSON value is not a header, and `OSError`
    for a file that cannot be read.  A `state` whose prefix no longer matches is ignored.
    """
    from .jsonl import content_bounds, line_blocks  # (a listing's prefix scans do not need this module)

    descriptor, info = open_regular(path)  # never blocks on a FIFO; raises for one
    try:
        continued = state is not None and can_continue(state, descriptor, info.st_size)
        state = state.copy() if continued and state is not None else MetaState()
        start = state.offset
        head = os.pread(descriptor, 3, 0) if start == 0 else b""
        if head == _BOM:  # Node's trim() drops a BOM
            start = 3
        bounds = content_bounds(descriptor, info.st_size, head)  # None for the usual file
        scanner = _Scanner(state, sink)
        consumed = start  # the end of the last newline-terminated line
        carry = b""  # an unterminated last line
        for block in line_blocks(descriptor, start):
            if block.oversized:  # a line too long to read is a bad line, read past unread
                if block.offset + block.oversized < info.st_size:  # (an unfinished one waits)
                    state.bad_lines += 1
                    consumed = block.offset + block.oversized + 1
                continue
            lines = block.lines
            if bounds is not None and (block.offset < bounds[0] or block.offset + block.size > bounds[1]):
                consumed, carry = _feed_clipped(scanner, block.lines, block.offset, bounds)
                if consumed < block.offset + block.size - len(block.lines[-1]):
                    break  # the file's last line, cut by pi's trim(): what follows is whitespace
                continue
            carry = lines.pop()  # b"" when the block ends with a newline
            scanner.feed_lines(lines)
            consumed = block.offset + block.size - len(carry)
        state.offset = consumed
        if state.header_done:
            if start < _FINGERPRINT_HEAD:  # a first scan, or the hashed head grew
                state.head_hash = _head_hash(os.pread(descriptor, min(_FINGERPRINT_HEAD, consumed), 0))
            state.tail_bytes = _tail(descriptor, consumed)
    finally:
        os.close(descriptor)
    final = state
    if carry.strip():  # an unterminated last line counts now, but is re-read once it is complete,
        final = state.copy()  # so its text waits until then: sent now, it would be indexed twice
        _Scanner(final, None).feed_lines([carry])
    if not final.header_done:
        raise NotSessionFile("empty file" if not info.st_size else "no session header")
    return ScanResult(state, final, info.st_size, info.st_mtime_ns, continued)


def summary_from_scan(path: str, result: ScanResult) -> SessionSummary:
    """The exact `SessionSummary` of a finished scan."""
    final = result.final
    modified_ms = final.modified_ms(result.mtime_ns)
    return SessionSummary(
        path=path,
        id=final.id,
        cwd=final.cwd,
        name=final.name,
        parent_session=final.parent_session,
        created=final.created,
        modified=iso_ms(modified_ms),
        modified_ms=modified_ms,
        message_count=final.message_count,
        first_message=final.first_message or NO_MESSAGES,
        size=result.size,
        mtime_ns=result.mtime_ns,
        exact=True,
        dialect=final.dialect,
        branch_points=final.branch_points,
        labels=final.label_values,
        compactions=final.compactions,
        models=tuple(final.models or ()),
        input_tokens=final.input_tokens,
        output_tokens=final.output_tokens,
        cost=final.cost,
        last_stop=final.last_stop,
    )
