"""Lenient JSONL: keep every readable object, report every line that is not, bound the cost.

Real session files contain torn last lines (an agent was killed mid-write), two objects
glued onto one line (an append race) and bytes that are not UTF-8.  None of that may raise:
each bad line becomes a `Skipped` record that says where and why.

`loads_line` is the one place a session line becomes a Python value.  It accepts what pi's
`JSON.parse` accepts and hands on only values every later step can store and print:

* a lone surrogate escape (`"\\ud83c"`, written when pi cuts a string mid-emoji) becomes
  U+FFFD — a Python string holding a lone surrogate cannot be encoded as UTF-8 (orjson, SQLite
  and the terminal all refuse it);
* an integer beyond 64 bits becomes a float, as every JavaScript number is (`1e400` and a
  400-digit integer are `inf`, JavaScript's `Infinity`); `NaN`/`Infinity` literals stay
  errors, as in `JSON.parse`;
* nesting deeper than a recursive parser allows (pi reads 10,000 levels) is parsed
  iteratively.

`line_blocks` frames a file into blocks of whole lines without reading a line longer than
`MAX_LINE_BYTES` into memory: such a line is skipped (and reported) while it streams past.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from io import BytesIO
from operator import itemgetter
from typing import Any, NamedTuple

import orjson

# A line longer than this is skipped without being held in memory.  pi writes whole images
# inline as base64 (a screenshot is a few MB; the model APIs cap images at ~5-20 MB, so
# ~27 MB of base64 at most), and its tools truncate their output to tens of KB: 64 MB leaves
# a wide margin above anything pi writes, while one line's bytes plus its parsed value stay
# far below the memory a listing may use.  (Node itself cannot hold a string over ~512 MB.)
MAX_LINE_BYTES = 64 << 20
READ_BLOCK = 8 << 20  # bytes per read


@dataclass(frozen=True, slots=True)
class Skipped:
    """One line (1-based) that was not used, and why."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


class LineError(ValueError):
    """A line `JSON.parse` would refuse."""


# Every escape, left to right (so `\\\\ud83c` is an escaped backslash, not an escape): a valid
# surrogate pair, a lone surrogate, or any other escape.
_ESCAPE = re.compile(rb"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})|\\u(d[89a-f][0-9a-f]{2})|\\.", re.IGNORECASE)
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _replace_lone(match: re.Match[bytes]) -> bytes:
    return b"\\ufffd" if match.group(3) else match.group(0)


_INT64_DIGITS = 18  # any integer of up to 18 digits fits in 64 bits


def _js_int(text: str) -> int | float:
    """An integer literal as a JavaScript number would hold it: beyond 64 bits, a float (or inf)."""
    if len(text) <= _INT64_DIGITS:
        return int(text)
    digits = len(text) - (text[0] == "-")
    if digits <= 19:
        value = int(text)
        if -(1 << 63) <= value < (1 << 63):
            return value
    return float(text)  # no digit limit, unlike int(): a 5,000-digit literal is inf


def _reject_constant(name: str) -> Any:
    raise LineError(f"{name} is not JSON")


def _loads_text(text: str) -> Any:
    """The slow path: the stdlib parser with JavaScript's numbers, then an iterative one for depth."""
    try:
        return json.loads(text, parse_int=_js_int, parse_constant=_reject_constant)
    except RecursionError:
        return _loads_iterative(text)
    except ValueError as error:  # JSONDecodeError is one
        raise LineError(str(error)) from error


def loads_line(raw: bytes) -> tuple[Any, bool]:
    """Parse one line as `JSON.parse` would, normalised (see the module docstring).

    Returns the value and whether bytes that are not UTF-8 were replaced (U+FFFD, as Node
    decodes files).  Raises `LineError` for a line that is not JSON.
    """
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError:
        pass
    replaced = changed = False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raw = raw.decode("utf-8", "replace").encode("utf-8")
        replaced = changed = True
    if _LONE_SURROGATE.search(raw):
        raw = _ESCAPE.sub(_replace_lone, raw)
        changed = True
    if changed:
        try:
            return orjson.loads(raw), replaced
        except orjson.JSONDecodeError:
            pass
    return _loads_text(raw.decode("utf-8")), replaced


# -- the file's two ends: pi reads `content.trim().split("\n")` ----------------------------

# JavaScript's whitespace (`String.prototype.trim`) as UTF-8.  pi trims the whole file before it
# splits it into lines, so this is stripped from the file's first line's start and its last
# line's end (and a line that is nothing else is skipped); `JSON.parse` itself allows only
# " \t\r\n" around a value, so a no-break space, \v, \f, a second BOM or U+3000 there makes
# a line pi reads but a parser refuses.  (Python's `str.strip` set differs: \x1c-\x1f, \x85.)
_JS_SPACE = (
    rb"(?:[\t\n\v\f\r ]|\xc2\xa0|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]|\xe2\x81\x9f|\xe3\x80\x80|\xef\xbb\xbf)"
)
_JS_SPACES = re.compile(_JS_SPACE + b"*")
_TRAILING_JS_SPACES = re.compile(_JS_SPACE + rb"*\Z")
_JSON_SPACE = b" \t\r\n"
_END_PROBE = 64  # bytes read from each end first; longer runs of whitespace are read on
_LONGEST_SPACE = 3  # bytes in the longest whitespace character (a run may start just before a read)


def js_blank(raw: bytes) -> bool:
    """True when `raw` is nothing but JavaScript whitespace: a line pi skips (`!line.trim()`)."""
    return _JS_SPACES.fullmatch(raw) is not None


def js_trim_end(raw: bytes) -> bytes:
    """`raw` without the JavaScript whitespace it ends with (pi's `trim()` at a file's end)."""
    found = _TRAILING_JS_SPACES.search(raw)
    return raw[: found.start()] if found else raw


Read = Callable[[int, int], bytes]  # (length, offset) -> bytes, as `os.pread` without its descriptor


def _leading_space(read: Read, size: int) -> bytes:
    """The whitespace run the file starts with."""
    length = _END_PROBE
    while True:
        head = read(length, 0)
        match = _JS_SPACES.match(head)  # (`X*` always matches)
        run = match.end() if match else 0
        if run < len(head) - _LONGEST_SPACE or len(head) >= size:
            return head[:run]
        length *= 4


def _trailing_space(read: Read, size: int) -> bytes:
    """The whitespace run the file ends with."""
    length = _END_PROBE
    while True:
        start = max(size - length, 0)
        tail = read(size - start, start)
        found = _TRAILING_JS_SPACES.search(tail)  # (always found: `X*` matches at the end)
        run = found.start() if found else len(tail)
        if run > _LONGEST_SPACE or start == 0:
            return tail[run:]
        length *= 4


def _bounds(read: Read, size: int, *, ends: bool = True, head: bytes = b"") -> tuple[int, int] | None:
    """`content_bounds` over `read`; `ends=False`: the data is a file's prefix (its end unknown)."""
    if not size:
        return None
    leading = b"" if (head[:1] or read(1, 0)) == b"{" else _leading_space(read, size)
    if len(leading) == size:  # nothing but whitespace: no line to cut
        return None
    trailing = _trailing_space(read, size) if ends else b""
    if leading.strip(_JSON_SPACE) or trailing.strip(_JSON_SPACE):
        return len(leading), size - len(trailing)
    return None


def content_bounds(descriptor: int, size: int, head: bytes = b"") -> tuple[int, int] | None:
    """The byte range pi's `content.trim()` keeps of a file of `size` bytes, or None when the
    trim changes nothing a JSON parser would not skip anyway (whitespace at the ends that is
    only " \t\r\n": the usual file, which starts with `{` and ends with a newline).

    One small read at each end (`head`: the file's first bytes, when the caller read them
    already); a longer run of whitespace is read on until it ends."""

    def read(length: int, offset: int) -> bytes:
        return os.pread(descriptor, length, offset)

    return _bounds(read, size, head=head)


def data_bounds(data: bytes, *, whole: bool) -> tuple[int, int] | None:
    """`content_bounds` of bytes in memory: a whole file, or (`whole=False`) its first bytes."""

    def read(length: int, offset: int) -> bytes:
        return data[offset : offset + length]

    return _bounds(read, len(data), ends=whole)


def clip_lines(lines: list[bytes], offset: int, bounds: tuple[int, int]) -> tuple[list[bytes], int]:
    """Split lines (as `Block.lines`) that start at byte `offset`, cut to `bounds` (see
    `content_bounds`): a line before the start or after the end becomes `b""`, the one
    crossing the start or the end loses what lies outside.  Returns the lines and the index of
    the first line that reaches past the end (`len(lines)` when none does)."""
    start, end = bounds
    out = list(lines)
    tail = len(lines)
    position = offset
    for index, line in enumerate(lines):
        line_end = position + len(line)
        if position < start or line_end > end:
            out[index] = line[max(start - position, 0) : max(min(line_end, end) - position, 0)]
            if line_end > end and tail == len(lines):
                tail = index
        position = line_end + 1
    return out, tail


# -- an iterative parser, for lines nested deeper than the recursive ones go ----------------

_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null)|([{}\[\]:,]))"
)
_LITERALS = {"true": True, "false": False, "null": None}
_VALUE, _FIRST_VALUE, _KEY, _FIRST_KEY, _COLON, _NEXT, _END = range(7)


def _number(text: str) -> int | float:
    return float(text) if ("." in text or "e" in text or "E" in text) else _js_int(text)


def _loads_iterative(text: str) -> Any:
    """Strict JSON without recursion (containers on an explicit stack)."""
    stack: list[Any] = []  # open containers; for an object, the pending key follows it
    keys: list[str | None] = []
    expect = _VALUE
    result: Any = None
    position = 0
    match_token = _TOKEN.match
    while True:
        match = match_token(text, position)
        if match is None:
            if expect == _END and not text[position:].strip(" \t\n\r"):
                return result
            raise LineError(f"not JSON at character {position}")
        position = match.end()
        string, number, literal, punct = match.groups()
        if expect == _END:
            raise LineError(f"extra data at character {match.start()}")
        if expect in (_KEY, _FIRST_KEY):
            if string is not None:
                keys[-1] = json.loads(string)
                expect = _COLON
                continue
            if punct == "}" and expect == _FIRST_KEY:
                value = stack.pop()
                keys.pop()
            else:
                raise LineError(f"expected a key at character {match.start()}")
        elif expect == _COLON:
            if punct != ":":
                raise LineError(f"expected ':' at character {match.start()}")
            expect = _VALUE
            continue
        elif expect == _NEXT:
            top = stack[-1]
            if punct == ",":
                expect = _KEY if type(top) is dict else _VALUE
                continue
            if punct == ("}" if type(top) is dict else "]"):
                value = stack.pop()
                keys.pop()
            else:
                raise LineError(f"expected ',' at character {match.start()}")
        else:  # a value (or, right after '[', the closing bracket)
            if string is not None:
                value = json.loads(string)
            elif number is not None:
                value = _number(number)
            elif literal is not None:
                value = _LITERALS[literal]
            elif punct == "{":
                stack.append({})
                keys.append(None)
                expect = _FIRST_KEY
                continue
            elif punct == "[":
                stack.append([])
                keys.append(None)
                expect = _FIRST_VALUE
                continue
            elif punct == "]" and expect == _FIRST_VALUE:
                value = stack.pop()
                keys.pop()
            else:
                raise LineError(f"expected a value at character {match.start()}")
        # a complete value: put it in its container, or it is the result
        if not stack:
            result = value
            expect = _END
            continue
        top = stack[-1]
        if type(top) is dict:
            top[keys[-1]] = value
        else:
            top.append(value)
        expect = _NEXT


# -- framing: blocks of whole lines, oversized lines skipped while they stream past ----------


class Block(NamedTuple):
    """Whole lines read from a file, or one line too long to read.

    `lines` is what `data.split(b"\n")` would give for the block's bytes: it ends with `b""`
    when the block ends with a newline, and only a file's unterminated last line is a
    non-empty last piece.  Read with `keepends`, each line keeps its newline instead (what
    `data.splitlines(keepends=True)` gives for `\n` alone): no empty last piece, and only a
    file's unterminated last line lacks one.  `size` is the block's length in bytes
    (newlines included), `line` the number (counting from the reader's first line as 0) of
    its first line.  An oversized line has no `lines` and its length in `oversized`.
    """

    offset: int
    line: int
    lines: list[bytes]
    size: int = 0
    oversized: int = 0


_WITHOUT_END = itemgetter(slice(None, -1))  # a line without its last byte (its newline)


def split_lines(lines: list[bytes]) -> list[bytes]:
    """`data.split(b"\n")` of the bytes that `lines` (each with its newline, the last
    perhaps without: a `keepends` block) hold."""
    if lines and not lines[-1].endswith(b"\n"):
        return [*map(_WITHOUT_END, lines[:-1]), lines[-1]]
    return [*map(_WITHOUT_END, lines), b""]


def line_blocks(
    descriptor: int,
    offset: int = 0,
    *,
    limit: int = MAX_LINE_BYTES,
    block_size: int = READ_BLOCK,
    digest: Any = None,
    keepends: bool = False,
) -> Iterator[Block]:
    """Read `descriptor` from `offset` to its end as `Block`s (see there; `keepends`: each
    line with its newline).

    Memory stays near `limit + block_size` however long a line is.  Each read is cut into
    lines once, in place: no slice of the read is copied before (on a file of hundreds of MB
    the copies cost as much as the cutting).  The lines are found by `BytesIO.readlines`,
    whose search for each newline is `memchr`'s: `bytes.split` compares byte by byte, 3.5×
    slower on a 200 MB session (70 against 20 ms).  `digest` (a hashlib object) is fed every
    byte read, the skipped ones included.
    """
    block_size = max(1, min(block_size, limit))  # so a line inside one block is within the limit
    line = 0
    parts: list[bytes] = []  # the current unfinished line, in pieces: no quadratic re-joining
    pending = 0  # its length
    start = offset  # where it starts
    skipping = False
    position = offset
    while True:
        chunk = os.pread(descriptor, block_size, position)
        if not chunk:
            break
        if digest is not None:
            digest.update(chunk)
        chunk_start = position
        position += len(chunk)
        pieces = BytesIO(chunk).readlines()  # (each with its newline; the last may have none)
        rest = b"" if pieces[-1].endswith(b"\n") else pieces.pop()  # (the start of a line)
        if not pieces:  # no line ends in this chunk
            if not skipping:
                if pending + len(chunk) > limit:
                    skipping, parts = True, []
                else:
                    parts.append(chunk)
            pending += len(chunk)
            continue
        head = pieces[0]
        first = start  # where the block's first line starts
        if skipping or pending + len(head) - 1 > limit:  # the unfinished line ends here, too long
            yield Block(start, line, [], 0, pending + len(head) - 1)
            line += 1
            del pieces[0]
            first = chunk_start + len(head)
        elif parts:  # the unfinished line ends here: the block's first line
            parts.append(head)
            pieces[0] = b"".join(parts)
        skipping, parts, pending = False, [], 0
        end = position - len(rest)  # just after the chunk's last newline
        if pieces:
            first_line, line = line, line + len(pieces)  # (before the caller may change the list)
            yield Block(first, first_line, pieces if keepends else split_lines(pieces), end - first)
        start = end
        if rest:
            parts, pending = [rest], len(rest)
    if skipping:
        yield Block(start, line, [], 0, pending)
    elif parts:
        data = b"".join(parts)
        yield Block(start, line, [data], len(data))


def oversized_reason(size: int) -> str:
    return f"a line of {size / (1 << 20):.0f} MB, over the {MAX_LINE_BYTES >> 20} MB limit, was not read"


def describe_failure(raw: bytes) -> str:
    """Why a line that is not JSON is not: the usual cause named."""
    stripped = raw.strip()
    if stripped.startswith(b"{") and b"}{" in stripped:
        return "two JSON objects glued onto one line"
    return "not valid JSON"
