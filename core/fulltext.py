"""The full-text index's fields: what of a session is indexed under which name, what a plain
word searches, and which fields rank first.

Every piece of text the context preview can show is indexed under one field:

    user        user messages                  assistant   assistant text
    thinking    assistant thinking (searched only when asked for: `thinking:word`)
    tool        tool calls: the tool's name and its arguments' text
    bash        shell commands (a bash tool call's `command`, a `!` bash execution's)
    result      tool results and bash output
    error       failed tool results, an assistant's error message
    custom      custom (extension) messages
    summary     compaction and branch summaries
    name label cwd id    the session's metadata rows

`field:word` narrows a term to one field (`tool:npm`, `error:"Cannot find module"`);
`text:word` is the explicit form of a plain word.  Ranking puts what a person wrote or was
told (`PRIMARY`) before what tools printed.

Bounds (`TextCollector`): user, assistant and summary text is indexed whole (what people
wrote and read; small next to tool output).  Every other piece (one tool result, one bash
output, one thinking block, one tool call's arguments) keeps its first `PIECE_HEAD` and last
`PIECE_TAIL` characters (an error: `ERROR_HEAD`/`ERROR_TAIL`): the command echo, the first
lines of a listing, and the end where errors and exit codes are; the middle of a 5 MB build
log is not what anyone searches for.  A line such a piece repeats from earlier in the same
read in the same field (the same file read twice, the same warning; a warning a run printed
is still an `error` line when a failed run prints it) is not indexed again; a tool call is kept
whole or, the same call made before, not at all (its name and arguments are one line in the
preview, `[write: src/b.py]`: dropping its lines seen before, a `read src/b.py` and a
`write src/a.py`, would leave neither `write` beside `src/b.py` for a phrase).  And those pieces
share `READ_BUDGET` characters per read of a session (a first read, or one append), a guard
against a runaway session.  Why these numbers: tool output is most of a session's bytes, and
indexing all of it made `index --rebuild` 8x slower on the benchmark corpus; real sessions
hold the words people search for near the start of a piece (an error's first line, a
listing's first entries), but a long real session has ~250 KB of tool pieces even when
bounded, and a word searched for may come after 150 KB of them, so a small per-session
budget would miss it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .text import INTRODUCERS, drop_escapes, has_introducer

USER, ASSISTANT, THINKING, TOOL, BASH, RESULT, ERROR, CUSTOM, SUMMARY = (
    "user",
    "assistant",
    "thinking",
    "tool",
    "bash",
    "result",
    "error",
    "custom",
    "summary",
)
META_FIELDS = ("name", "label", "cwd", "id")  # the index's metadata rows
TEXT_FIELDS = (USER, ASSISTANT, THINKING, TOOL, BASH, RESULT, ERROR, CUSTOM, SUMMARY)  # the query's `field:` prefixes
OPT_IN = frozenset({THINKING})  # indexed, but a plain word does not search them
PRIMARY = frozenset({USER, ASSISTANT, "name", "label", "id", SUMMARY})  # ranked first among full-text hits

# A session's reported hit is its best field: metadata, then people's words, then tools'.
_ORDER = ("name", "label", "id", USER, ASSISTANT, SUMMARY, CUSTOM, TOOL, BASH, ERROR, RESULT, THINKING, "cwd")
FIELD_RANK = {name: rank for rank, name in enumerate(_ORDER)}


def field_rank(field: str | None) -> int:
    """Where a hit in `field` sorts among a session's hits (lower is better)."""
    return FIELD_RANK.get(field or "", len(_ORDER))


def is_primary(field: str | None) -> bool:
    """A hit in what a person wrote or was told (ranks before tool output)."""
    return field in PRIMARY


# ---------------------------------------------------------------------------- collecting

PIECE_HEAD = 1024  # characters kept from the start of a long tool piece
PIECE_TAIL = 256  # ... and from its end
ERROR_HEAD, ERROR_TAIL = 2048, 1024  # an error's message and its last lines
# Pieces kept to ERROR_HEAD/ERROR_TAIL: an error, and a custom message (an extension's report:
# the preview shows its first 2,000 characters, `context_preview.BODY_LIMIT`).
WIDE = frozenset({ERROR, CUSTOM})
READ_BUDGET = 1024 * 1024  # characters of tool pieces indexed per read of a session
WHOLE = frozenset({USER, ASSISTANT, SUMMARY})  # indexed without a cut
_CUT = "\n…\n"


def bounded(text: str, head: int = PIECE_HEAD, tail: int = PIECE_TAIL) -> str:
    """A long piece as its head and tail (see the module docstring)."""
    if len(text) <= head + tail:
        return text
    return text[:head] + _CUT + text[-tail:]


class TextCollector:
    """A text sink (`metadata.TextSink`) that keeps `(field, text)` pairs within the bounds."""

    __slots__ = ("dropped", "seen", "spent", "texts")

    def __init__(self) -> None:
        self.texts: list[tuple[str, str]] = []
        self.spent = 0  # characters of bounded pieces kept so far
        self.dropped = 0  # pieces left out once the budget was spent
        self.seen: dict[str, set[str]] = {}  # each field's lines of bounded pieces already kept

    def __call__(self, field: str, text: str) -> None:
        if has_introducer(text):  # (a coloured tool output: its words as the terminal showed them)
            text = drop_escapes(text)
        if field not in WHOLE:
            if self.spent >= READ_BUDGET:
                self.dropped += 1
                return
            text = bounded(text, ERROR_HEAD, ERROR_TAIL) if field in WIDE else bounded(text)
            seen = self.seen.get(field)
            if seen is None:
                seen = self.seen[field] = set()
            if "\n" in text and field != TOOL:
                add = seen.add  # `not add(line)` is always true: keeps a line and marks it seen
                text = "\n".join([line for line in text.split("\n") if line not in seen and not add(line)])
            elif text in seen:
                return
            else:
                seen.add(text)
            if not text:
                return
            self.spent += len(text)
        self.texts.append((field, text))


# ---------------------------------------------------------------------------- the rules' version

# The version of the extraction rules: what `TextCollector` makes of the same session text.  An
# index records the version its stored text was made under (`Index.text_rules`: the `meta` row
# `text_rules`; 0 in an index made before it was recorded).  When that is older than this,
# `Catalog.heal_text` reads again, once, only the sessions whose stored text `stale_under` says
# the change touches, instead of a schema bump that reads every session again (~50 s at
# 100,000).  A change of the rules bumps this and teaches `stale_under` what stored text it
# changes (one no stored text shows: every chunk, i.e. every session read again).
#   0: escape sequences kept as they were (seance <= 0.7.7).
#   1: escape sequences dropped whole (`drop_escapes`, since 0.7.8).
#   2: a tool call's piece kept whole or not at all, not line by line (`TextCollector`), the
#      file it names first (`tool_call_text`); a line repeated only in another field kept;
#      a custom message's first 2 KB and last 1 KB (`WIDE`), not 1 KB and 256 characters,
#      after its type (`custom_text`).
TEXT_RULES = 2

# The 8-bit ones, in UTF-8: each two bytes from C2 (`INTRODUCERS[0]` is ESC; both facts a test's,
# tests/test_text_heal_faults.py).
_INTRODUCER_BYTES = tuple(char.encode() for char in INTRODUCERS[1:])


def _holds_introducer(body: bytes) -> bool:
    """Whether a stored chunk's UTF-8 bytes hold ESC or an 8-bit introducer (`text.INTRODUCERS`):
    memchr-speed scans (a few C2 bytes, such as a `°`, cost the six two-byte ones)."""
    return b"\x1b" in body or (b"\xc2" in body and any(map(body.__contains__, _INTRODUCER_BYTES)))


def stale_fields(rules: int) -> dict[str, bytes]:
    """Field -> bytes: a stored chunk of that field holding them, made under text rules
    `rules`, may differ from what `TextCollector` makes now, whatever else it holds
    (`Index.stale_text_files` tells a chunk's field by its rowid).  Before 2: a chunk of any
    bounded field (b"": any).  Rules 1 dropped a line any bounded piece of the session said
    before, whatever its field, and a tool call's lines one by one; no chunk shows which (a
    failed run's warning its result printed before, gone from `error`; a piece dropped whole,
    its field's chunk with it, a `!ls` run after a thought of `ls`), so every session with
    such a piece is read again, as a rebuild would (almost every real session: any tool call);
    one of people's words alone is the same under both.  A custom message is bounded (and
    now read with its type) too."""
    return {field: b"" for field in TEXT_FIELDS if field not in WHOLE} if rules < 2 else {}


def _never(body: bytes) -> bool:
    """No stored chunk is touched (the index's text is already under the current rules)."""
    return False


def stale_under(rules: int) -> Callable[[bytes], bool]:
    """Whether a stored full-text chunk (its UTF-8 bytes) made under text rules `rules` may
    differ from what `TextCollector` makes of the same text now: its session is read again.

    Rules 0 kept escape sequences; 1 drops every one, and each starts with an introducer, so a
    chunk without one is the same under both (an introducer alone, not a whole sequence, is
    kept by both: such a session is read again for nothing, rarely).  What the chunk cannot
    show is not found: a piece whose only sequences were in the middle `bounded` cut away, and
    which 1 keeps whole once they are dropped (a few characters more indexed).

    Rules 2 changed which lines of bounded pieces are kept, which no chunk's bytes show:
    `stale_fields`.

    The next change of the rules bumps `TEXT_RULES` and answers here (or in `stale_fields`)
    for the rules before it (a chain: text under 0 is stale under 2 if either change touches
    it); `Catalog.heal_text` and the `meta` record need nothing more."""
    return _never if rules >= 1 else _holds_introducer


def custom_text(custom_type: Any, text: str) -> str:
    """A custom message's `CUSTOM` text: its type (what the preview's title shows, `[notes]`),
    then its content's text."""
    if isinstance(custom_type, str) and custom_type:
        return f"{custom_type}\n{text}" if text else custom_type
    return text


ARGUMENT_DEPTH = 4
"""How many levels of nested values under a call's arguments `arguments_text` reads."""

SHOWN_FIRST = ("path", "file_path")
"""The arguments a call's line in the preview shows right after the tool's name (`[write:
src/b.py]`, `core.summary.format_tool_call`): first in its `TOOL` text too, whatever their
order in the call (pi writes `content` before `path`; oh-my-pi an intent first)."""


def tool_call_text(name: str, arguments: Any) -> str:
    """A tool call's `TOOL` text: its name, then the file it names (`SHOWN_FIRST`), then its
    other arguments' words but a `command` (a `BASH` text of its own): `write src/b.py` is a
    phrase in it, as in the preview's line."""
    if type(arguments) is dict and arguments and next(iter(arguments)) not in SHOWN_FIRST:
        first = {key: arguments[key] for key in SHOWN_FIRST if key in arguments}
        if first:
            arguments = first | {key: value for key, value in arguments.items() if key not in first}
    words = arguments_text(arguments, {"command"})
    return f"{name}\n{words}" if words else name


def arguments_text(arguments: Any, skip: set[str] | frozenset[str] = frozenset(), depth: int = 0) -> str:
    """The words of a tool call's arguments: string and number values, one per line, nested
    ones included (a few levels), keys left out (`path`, `command` are not what is searched);
    `skip` names top-level keys indexed elsewhere."""
    parts: list[str] = []
    if isinstance(arguments, dict):
        values = [value for key, value in arguments.items() if key not in skip]
    elif isinstance(arguments, list):
        values = arguments
    else:
        values = [arguments]
    for value in values:
        if isinstance(value, str):
            if value:
                parts.append(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(str(value))
        elif isinstance(value, dict | list) and depth < ARGUMENT_DEPTH:
            nested = arguments_text(value, frozenset(), depth + 1)
            if nested:
                parts.append(nested)
    return "\n".join(parts)
