"""Text helpers shared by listing, context and display: message text and sanitising.

Session text is data, and so are ids, names, paths and tool arguments.  Everything seance
draws or prints passes through one of the sanitisers here, all built on `CONTROL_CHARS`:
C0/C1 controls (ESC, CSI, OSC, DCS ... all land there), DEL, bidi marks, embeddings,
overrides and isolates (which reorder what the user sees), and lone surrogates (undecodable
file-name bytes, which a terminal encoder would choke on).  Those that draw text (not
`visible`) first drop each whole escape sequence (`ESCAPE_SEQUENCES`: what a terminal swallows),
so `\x1b[32mok` reads `ok`, not `[32mok`; an ESC left over is a control like any other.

    display_text      one clean line for the UI and prose (controls become spaces)
    display_lines     clean lines for a notice: `display_text` of each, the line breaks kept
    safe_multiline    the same with newlines kept (previews)
    blank_controls    escape sequences and controls become spaces one for one (match
                      offsets stay valid)
    drop_escapes      the escape sequences a terminal swallows dropped whole (`\x1b[32m`, an
                      OSC hyperlink): the three above and search's fold do this first, so a
                      coloured tool output reads as the terminal showed it, never `[32m`
    visible           one line with every control shown as an escape (`\\n`, `\\x1b`): ids,
                      names and paths in messages
    shell_path        a path for stdout: itself, or bash `$'...'` quoting if it holds a control
    json_safe         JSON bytes with C1, DEL and bidi characters as `\\uXXXX` escapes
    json_bytes        orjson's bytes, a non-UTF-8 file name's bytes as U+FFFD (`unsurrogate`)
"""

from __future__ import annotations

import os
import re
from typing import Any

CONTROL_CHARS = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1 (ESC, CSI, OSC ... all land here)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\ud800-\udfff"  # lone surrogates: bytes of a file name that is not UTF-8
    "]"
)
# What a terminal swallows whole (ECMA-48 5.4, 8.3.89/8.3.128): a control sequence (CSI, `ESC [`
# or 8-bit, parameters 0x30-0x3F, intermediates 0x20-0x2F, a final 0x40-0x7E); a control string
# (OSC `ESC ]`, DCS `ESC P`, SOS `ESC X`, PM `ESC ^`, APC `ESC _`, or their 8-bit forms) ended by
# ST (`ESC \` or 8-bit) or, for OSC, BEL (xterm); any other escape (`ESC` + intermediates + a
# final 0x30-0x7E: `ESC c`, `ESC ( B`, `ESC \`, `ESC 7`).  A string's body holds no control, so a
# scan stops at the next one (linear over any text).  What is not a whole sequence (cut short,
# unterminated, `ESC` + a control) is left to `CONTROL_CHARS`: its ESC never gets through.
# (An 8-bit introducer in ordinary text, mojibake such as "Å\x9d ... Ä\x9c", is taken as one
# too, and what lies between is dropped: rare, and a terminal would do the same.)
ESCAPE_SEQUENCES = re.compile(
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI
    "|(?:\x1b\\]|\x9d)[^\x00-\x1f\x7f-\x9f]*(?:\x07|\x1b\\\\|\x9c)"  # OSC ... BEL or ST
    "|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x00-\x1f\x7f-\x9f]*(?:\x1b\\\\|\x9c)"  # DCS, SOS, PM, APC ... ST
    "|\x1b(?:[\x20-\x2f]+[\x30-\x7e]|[\x30-\x4f\x51-\x57\x59\x5a\\\\\x60-\x7e])"  # other escapes
)
# The characters that start a sequence `ESCAPE_SEQUENCES` drops: ESC and the 8-bit CSI, OSC, DCS,
# SOS, PM, APC (`has_introducer` looks for each; the full-text index's heal looks for their UTF-8
# bytes in stored text, `fulltext.stale_under`).
INTRODUCERS = "\x1b\x9b\x9d\x90\x98\x9e\x9f"
# A run of whitespace and controls: what `display_text` folds to one space, in one pass.
_BLANK_RUN = re.compile("[\\s" + CONTROL_CHARS.pattern[1:-1] + "]+")
_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x1b": "\\e"}


def as_text(value: object) -> str:
    """`value` as text for display, never raising: a string itself, None empty, anything
    else its `str()` — "[nested too deeply]" for a value too deep for that (pi reads JSON
    nested 10,000 levels deep; Python's `str()` of it raises `RecursionError`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return str(value)
    except RecursionError:
        return "[nested too deeply]"


def is_clean_line(text: str) -> bool:
    """Whether `text` is already one clean line as `display_text` makes it: not empty,
    printable (the only blank character `isprintable` accepts is the space, checked over all
    of Unicode in tests), no run of spaces, no space at either end.  `display_text` only cuts
    such a text; every fast path that skips the sanitiser asks this, and nothing else."""
    return bool(text) and text[0] != " " and text[-1] != " " and text.isprintable() and "  " not in text


def display_text(value: object, limit: int | None = None) -> str:
    """One clean line for a list row: controls become spaces, runs of space fold to one."""
    text = value if type(value) is str else as_text(value)  # (no call for the usual string)
    # A long text whose first limit + 1 characters are already one clean line is cut there:
    # folding the rest could not change them, and what is left is longer than the limit (a
    # tool's output, 200,000 times in a session: a quarter of the time otherwise goes to
    # cleaning text cut off).
    if limit is not None and len(text) > limit > 0 and is_clean_line(text[: limit + 1]):
        return text[: limit - 1] + "…"
    if limit is not None and len(text) > limit * 4:
        if has_introducer(text[: limit * 4]):  # (coloured: its sequences go first, none cut in half)
            text = drop_escapes(text)
        text = text[: limit * 4]
    # The usual text, at C speed: printable (the only blank character `isprintable` accepts is
    # the space, checked over all of Unicode in tests) and no run of spaces to fold.
    folded = text if text.isprintable() and "  " not in text else _BLANK_RUN.sub(" ", drop_escapes(text))
    text = folded.strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def display_lines(value: object) -> str:
    """`display_text` of each line of `value`, the line breaks kept and blank lines dropped:
    a notice that names one refused session a line keeps its lines."""
    return "\n".join([line for line in map(display_text, as_text(value).split("\n")) if line])


def safe_multiline(value: object) -> str:
    """Multi-line text with controls removed but newlines and tabs kept (for previews)."""
    text = drop_escapes(as_text(value).replace("\r\n", "\n").replace("\t", "    "))
    return CONTROL_CHARS.sub(lambda m: "\n" if m.group() == "\n" else "", text)


def has_introducer(text: str) -> bool:
    """Whether `text` holds a character that starts an escape sequence: ESC or the 8-bit CSI,
    OSC, DCS, SOS, PM, APC.  Seven memchr-speed scans (a regex's charset scan is 200x slower:
    a tenth of `display_text`'s time on a multi-line text)."""
    return (
        "\x1b" in text
        or "\x9b" in text
        or "\x9d" in text
        or "\x90" in text
        or "\x98" in text
        or "\x9e" in text
        or "\x9f" in text
    )


def drop_escapes(text: str) -> str:
    """`text` without the escape sequences a terminal would swallow (`ESCAPE_SEQUENCES`): a
    coloured `\x1b[32mok` is `ok`, as the terminal showed it, not `[32mok` once the ESC is
    blanked.  Controls left over are the caller's (`CONTROL_CHARS`).  Text holding no ESC and
    no 8-bit introducer (all but a tool's coloured output) is returned as it is, after one scan."""
    return ESCAPE_SEQUENCES.sub("", text) if has_introducer(text) else text


def _blanked(match: re.Match[str]) -> str:
    """As many spaces as `match` has characters."""
    return " " * (match.end() - match.start())


def blank_controls(text: str) -> str:
    """Escape sequences, controls and bidi marks become spaces one for one, so match offsets
    stay valid."""
    if has_introducer(text):
        text = ESCAPE_SEQUENCES.sub(_blanked, text)
    return CONTROL_CHARS.sub(" ", text)


def _escape(char: str) -> str:
    """The visible escape of one control character (bash `$'...'` syntax)."""
    named = _NAMED_ESCAPES.get(char)
    if named:
        return named
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the file name's raw byte
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def visible(value: object) -> str:
    """`value` on one line with every control shown as an escape (`\\n`, `\\e`, `\\x07`,
    `\\u202e`): for ids, names, paths and messages a terminal must print, not obey."""
    text = value if type(value) is str else as_text(value)  # (no call for the usual string)
    if text.isprintable():  # no control (every one is unprintable: checked in tests), at C speed
        return text
    return CONTROL_CHARS.sub(lambda m: _escape(m.group()), text)


def shell_path(path: object) -> str:
    """A path for stdout, one per line: the path itself when it holds no control (so
    `$(seance pick)` stays exact), else bash's `$'...'` quoting, which no raw path printed
    here can be mistaken for (they are absolute) and which bash turns back into the path."""
    text = os.fspath(path) if isinstance(path, os.PathLike) else as_text(path)
    if not CONTROL_CHARS.search(text) and not text.startswith("$'"):
        return text
    return _dollar_quoted(text)


def shell_word(value: object) -> str:
    """`value` as one shell word a user can paste into bash: `shlex.quote`d, or `$'...'`-quoted
    with each control as its escape (a pasted raw ESC or newline would act, not be text)."""
    import shlex

    text = as_text(value)
    return _dollar_quoted(text) if CONTROL_CHARS.search(text) else shlex.quote(text)


def _dollar_quoted(text: str) -> str:
    """bash's `$'...'` quoting of `text`, each control as its escape."""
    quoted = text.replace("\\", "\\\\").replace("'", "\\'")
    return "$'" + CONTROL_CHARS.sub(lambda m: _escape(m.group()), quoted) + "'"


def unsurrogate(text: str) -> str:
    """`text` as valid Unicode: a file name's undecodable bytes (lone surrogates) become U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def _unsurrogated(value: Any) -> Any:
    """`value` with every string (keys too) `unsurrogate`d, for an encoder that refuses them."""
    if isinstance(value, str):
        return unsurrogate(value)
    if isinstance(value, dict):
        return {_unsurrogated(key): _unsurrogated(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_unsurrogated(item) for item in value]
    return value


def is_utf8(text: str) -> bool:
    """`text` encodes as UTF-8: no lone surrogates (the bytes of a file name that is not UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_bytes(value: Any, *, indent: bool = False) -> bytes:
    """`orjson.dumps(value)`; a string holding lone surrogates (a path whose file name is not
    UTF-8), which orjson refuses with a TypeError, is written with U+FFFD in their place."""
    import orjson

    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        data = orjson.dumps(value, option=option)
    except TypeError:
        data = orjson.dumps(_unsurrogated(value), option=option)
    return compact_bytes(data)


_COMPACTED = 1 << 20


def compact_bytes(data: bytes) -> bytes:
    """`data` in an allocation of its own size.  orjson's output keeps the buffer it grew
    (at least 4 KB, often 10x the value), so a small value held in memory, one per session
    in a listing of 100,000, costs its buffer, not its bytes: that was most of a cold
    listing's memory.  Copied below 1 MB (a microsecond); bigger ones waste little."""
    return bytes(memoryview(data)) if len(data) < _COMPACTED else data


# The UTF-8 bytes of DEL, C1 (U+0080-U+009F) and the bidi characters of CONTROL_CHARS.
_JSON_UNSAFE_LEADS = (b"\x7f", b"\xc2", b"\xd8", b"\xe2")  # the first byte of each
_JSON_UNSAFE = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]")


def json_safe_as_is(data: Any, start: int = 0, end: int | None = None) -> bool:
    """Whether `json_safe(data[start:end])` is that itself (no byte it looks at), for bytes
    or an `mmap` (its `find` is memchr too): such bytes may be written as they are."""
    stop = len(data) if end is None else end
    return all(data.find(lead, start, stop) < 0 for lead in _JSON_UNSAFE_LEADS)


def json_safe(data: bytes) -> bytes:
    """UTF-8 JSON with the characters JSON leaves raw but a terminal obeys or reorders (DEL,
    C1, bidi) written as `\\uXXXX`: the same JSON value, harmless on a terminal.  (C0 is
    escaped by every JSON encoder; outside strings JSON is ASCII, so only strings change.)"""
    if not any(lead in data for lead in _JSON_UNSAFE_LEADS):  # memchr: the usual answer, fast
        return data
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group().decode()):04x}".encode(), data)


def content_text(content: Any, joiner: str) -> str:
    """Text of a message `content`: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # (a list for `join`, not a generator: one text per message, 200,000 of them)
        return joiner.join(
            [
                block["text"]
                for block in content
                if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
            ]
        )
    return ""


# What a user ran themselves, by message role: the field holding it and the word its row
# shows: pi's `!command` and oh-my-pi's `$` Python cells (`code`, `output` alike).
_RUN_BY_USER = {"bashExecution": ("command", "bash"), "pythonExecution": ("code", "python")}


def user_run(message: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(its row's word, what was run, its output: as the file holds them) of a message the
    user ran themselves (pi's `bashExecution`, oh-my-pi's `pythonExecution`), else None."""
    role = message.get("role")
    run = _RUN_BY_USER.get(role) if isinstance(role, str) else None
    if run is None:
        return None
    field, word = run
    return word, message.get(field), message.get("output")


def message_text(message: dict[str, Any]) -> str:
    """The contract text of a context message (see `seance show --json`)."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    if role == "fileMention":
        return file_mention_text(message.get("files"))
    return content_text(message.get("content"), "\n")


def file_mention_paths(files: Any) -> list[str]:
    """The paths an oh-my-pi `fileMention` message (the files a prompt's `@path` read) names."""
    return [file["path"] for file in _mentioned(files) if isinstance(file.get("path"), str)]


def file_mention_text(files: Any) -> str:
    """An oh-my-pi `fileMention`'s files as omp sends them to the model (`convertToLlm`):
    each `<file path="P">` with its content, one after the other."""
    parts = []
    for file in _mentioned(files):
        path, content = file.get("path"), file.get("content")
        inner = f"\n{content}\n" if isinstance(content, str) and content else "\n"
        parts.append(f'<file path="{path if isinstance(path, str) else ""}">{inner}</file>')
    return "\n".join(parts)


def _mentioned(files: Any) -> list[dict[str, Any]]:
    return [file for file in files if isinstance(file, dict)] if isinstance(files, list) else []


def home_short(path: str) -> str:
    """`/home/me/p` -> `~/p`, as pi shows paths (only at a path boundary)."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip(os.sep) + os.sep)):
        return "~" + path[len(home.rstrip(os.sep)) :]
    return path


_AGE_UNITS = ((365, "y"), (30, "mo"), (7, "w"), (1, "d"))


def relative_age(moment_ms: float, now_ms: float) -> str:
    """pi's compact age of a moment: now, 5m, 2h, 3d, 2w, 1mo, 1y (both in epoch ms)."""
    minutes = int(max(now_ms - moment_ms, 0.0) // 60_000)
    if minutes < 1:
        return "now"
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 24:
        return f"{hours}h"
    days = hours // 24
    for size, unit in _AGE_UNITS:
        if days >= size:
            return f"{days // size}{unit}"
    return f"{hours}h"  # pragma: no cover - days >= 1 always matches above
