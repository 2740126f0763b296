"""ContextPreview: what the model will receive if a session is resumed at a given entry.

Used by the session list (the highlighted session at its leaf) and by the tree screen (the
highlighted node).  Loading and building happen in an exclusive, debounced thread worker, so
moving the cursor or typing never waits for a big file; the worker posts a `Loaded` message
and the handler on the UI thread swaps the text in.

Every string from the session is shown as plain `Content` (never markup), sanitised by
`seance.core.text`.

With a query (the list's, while it searches) the pane shows where the session matched: the
context from its first matching message on (`at_match`; none matching: the usual tail), each
match highlighted (`context-preview--match`), a body clipped around its first match rather
than at its head.  The matches are those of the list's full-text search
(`core.search.TextMarks`: the words the index matched, as its tokenizer splits and folds
them; a field prefix's only in the text the index files under that field; a `re:` term's
pattern, over each text's first `REGEX_SCAN` characters, one that may backtrack
exponentially not at all).  A title the list matched by its own substring and fuzzy
matcher (`highlight`) may have no such match in the messages: the preview is then as
without a query.  The first match is looked for from the top of the context, as far as
it is (`_ContextScan`, one kept per session and leaf: each term's answer is kept, so typing
on rebuilds nothing, and a document equal to the one shown is not redrawn).

With `stats=True` (the session list) a compact stats block (`core.statsformat.compact_lines`:
tokens, cost, models, tools, files, branches, duration — the whole tree) sits under the
header: computed in the same worker, cached by file stamp, shown by default when the pane is
at least `STATS_AUTO_ROWS` tall, and toggled with `toggle_stats` (Alt+I in the list).
"""

from __future__ import annotations

import copy
import os
import re
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.style import Style
from textual.widgets import Static
from textual.worker import get_current_worker

from seance.app.paths import stylesheet
from seance.app.widgets.preview_body import PreviewBody, wrapped_lines
from seance.app.widgets.static_update import update_static
from seance.core.context import CONTEXT_TYPES, ContextMessage, as_message, build_session_context, context_frame
from seance.core.entries import MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT
from seance.core.errors import Stopped
from seance.core.fulltext import ARGUMENT_DEPTH, tool_call_text
from seance.core.gcpause import gc_paused
from seance.core.pathtotals import PathTotals
from seance.core.search.query import Query, fold_accents
from seance.core.search.snippet import MarkTerm, Span, TextMarks
from seance.core.search.userregex import UserRegex
from seance.core.search.words import word_syntax
from seance.core.session import NotASession, Session, read_session
from seance.core.statsformat import cost_text
from seance.core.summary import format_tool_call, tool_calls_by_id, tool_result_title
from seance.core.text import content_text, display_text, drop_escapes, safe_multiline, user_run

DEFAULT: Any = object()
"""Sentinel for `leaf_id`: the session's own leaf (where it would resume by default)."""

DEBOUNCE_SECONDS = 0.12
TAIL_MESSAGES = 200
BODY_LIMIT = 2_000
TOOL_OUTPUT_LIMIT = 400
TOOL_OUTPUT_LINES = 6
STATS_AUTO_ROWS = 30  # a pane this tall shows the stats block unless toggled off
CLIP_SLACK = 80
"""A text at most this many characters over its limit is shown whole: "… (4 more characters)"
would hide less than it takes to say so."""
MATCH_BEFORE, MATCH_SNAP = 40, 15
"""A body clipped around a match starts at the match's line, or at most `MATCH_BEFORE`
characters before the match (moved up to `MATCH_SNAP` on to start at a word), as the
list's snippets are cut."""

STOP_EVERY = 500  # messages a scan looks at between two askings of its `stop`

# The index's fields (core/fulltext.py) each part of a message is in, as core/metadata.py
# files them: a field-narrowed term (`error:x`) marks only the parts of its field.  A call's
# line is in `bash` when the term is in its `command`, in `tool` when it is in its name or
# other arguments (`_call_fields`: what the index holds, not what the line shows); a result's
# title (its call again) and the line shown shortened are the approximations: they are marked
# for a plain term only (`ANY_FIELD`: a field no narrowed term names).
USER_FIELDS, ASSISTANT_FIELDS, ANY_FIELD = ("user",), ("assistant",), ("any",)
ERROR_FIELDS, RESULT_FIELDS, BASH_FIELDS = ("error",), ("result",), ("bash",)
CUSTOM_FIELDS, SUMMARY_FIELDS, TOOL_FIELDS, NO_FIELDS = ("custom",), ("summary",), ("tool",), ()


def _call_fields(block: dict[str, Any], marks: TextMarks) -> tuple[str, ...]:
    """The index's fields a tool call's line counts as for `marks`: `bash` when they match in
    its command, `tool` when in its name and other arguments (core/metadata.py's split);
    neither: `ANY_FIELD` (a plain term's match still marked)."""
    name, arguments = block.get("name"), block.get("arguments")
    command = arguments.get("command") if type(arguments) is dict else None
    fields: list[str] = []
    if isinstance(command, str) and command and marks.found(command, BASH_FIELDS):
        fields.append("bash")
    if isinstance(name, str) and marks.found(tool_call_text(name, arguments), TOOL_FIELDS):
        fields.append("tool")
    return tuple(fields) or ANY_FIELD


# -- the document (pure data, built in the worker thread) -------------------------------


@dataclass(frozen=True, slots=True)
class PreviewBlock:
    """One message of the context: a styled title line and an optional body."""

    kind: str  # user | assistant | tool | error | custom | branch | bash | compaction | other
    title: str
    body: str = ""
    calls: tuple[str, ...] = ()
    # where a query matches (with one): in the title, the body and each call
    title_marks: tuple[Span, ...] = ()
    body_marks: tuple[Span, ...] = ()
    call_marks: tuple[tuple[Span, ...], ...] = ()

    @property
    def marked(self) -> bool:
        """Whether a query matches anywhere in the block."""
        return bool(self.title_marks or self.body_marks or any(self.call_marks))


@dataclass(slots=True)
class PreviewDoc:
    """Everything the pane shows, ready to render."""

    header: list[tuple[str, str]] = field(default_factory=list)  # (what, self-describing text)
    blocks: list[PreviewBlock] = field(default_factory=list)
    earlier: int = 0
    notice: str | None = None
    stats: list[str] = field(default_factory=list)  # the compact stats block (empty: none)
    editor: str | None = None  # the text resuming here puts in the editor (a chosen user message)
    editor_marks: tuple[Span, ...] = ()  # where a query matches in `editor`
    later: int = 0  # messages after the blocks not shown (the context shown from a match on)
    at_match: bool = False  # the blocks start at the query's first match: the pane shows their top


class Clipped(NamedTuple):
    """A clipped text and where a query matches in it."""

    text: str
    marks: tuple[Span, ...] = ()


def _cut(whole: str, start: int, limit: int, max_lines: int | None) -> str:
    """What of `whole` from `start` is shown: `limit` characters (the rest whole when it is
    only a little over), `max_lines` lines (one more line is shown whole)."""
    rest = whole[start:] if start else whole
    clean = rest if len(rest) <= limit + CLIP_SLACK else rest[:limit]
    if max_lines is not None:
        lines = clean.split("\n")
        if len(lines) > max_lines + 1:
            clean = "\n".join(lines[:max_lines])
    return clean


def _window_start(whole: str, first: int) -> int:
    """Where a body clipped around a match at `first` starts (see `MATCH_BEFORE`)."""
    start = max(whole.rfind("\n", 0, first) + 1, first - MATCH_BEFORE)
    if whole[start - 1 : start] not in ("", "\n"):  # (inside a line: start at a word)
        space = whole.find(" ", start, min(start + MATCH_SNAP, first))
        start = space + 1 if space != -1 else start
    return start


def _clip_marked(
    text: str,
    limit: int,
    max_lines: int | None = None,
    marks: TextMarks | None = None,
    fields: Collection[str] = NO_FIELDS,
) -> Clipped:
    """`_clip`, and where `marks` match in what is shown (`fields`: the index's fields the text
    is in).  A first match the clip would hide is shown: the window of the text around it,
    "… (N earlier characters)" before it."""
    whole = safe_multiline(text).strip("\n")
    spans = marks.spans(whole, fields) if marks is not None else []
    start = 0
    shown = _cut(whole, 0, limit, max_lines)
    if spans and spans[0][1] > len(shown):
        start = _window_start(whole, spans[0][0])
        shown = _cut(whole, start, limit, max_lines)
    head = f"… ({plural(start, 'earlier character')})\n" if start else ""
    hidden = len(whole) - start - len(shown)
    tail = f"\n… ({plural(hidden, 'more character')})" if hidden else ""
    end, shift = start + len(shown), len(head) - start
    kept = tuple((max(a, start) + shift, min(b, end) + shift) for a, b in spans if b > start and a < end)
    return Clipped(head + shown + tail, kept)


def _clip(text: str, limit: int, max_lines: int | None = None) -> str:
    """Sanitised multi-line text cut to `limit` characters (and `max_lines` lines); a text
    only a little over (`CLIP_SLACK`, one more line) is shown whole."""
    return _clip_marked(text, limit, max_lines).text


def plural(count: int, noun: str) -> str:
    """`1 token`, `2 tokens`, `1,234 tokens`."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _message_block(
    item: ContextMessage, calls: Mapping[str, dict[str, Any]], marks: TextMarks | None = None
) -> PreviewBlock:
    """One message as the pane shows it; with `marks`, where they match in each part."""
    message, role = item.message, item.role

    def clip(text: str, limit: int, fields: Collection[str], max_lines: int | None = None) -> Clipped:
        return _clip_marked(text, limit, max_lines, marks, fields)

    def titled(title: str, fields: Collection[str]) -> tuple[Span, ...]:
        return tuple(marks.spans(title, fields)) if marks is not None and fields else ()

    if role == "user":
        content = message.get("content")
        images = (
            sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
            if isinstance(content, list)
            else 0
        )
        body = clip(content_text(content, "\n"), BODY_LIMIT, USER_FIELDS)
        text = body.text
        if images:  # (after the text as it is: the marks' offsets stay the text's)
            said = f"[{images} image{'s' if images > 1 else ''}]"
            text = f"{text}\n{said}" if text.strip() else said
        return PreviewBlock("user", "user", text, body_marks=body.marks if text.startswith(body.text) else ())
    if role == "assistant":
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        call_blocks = [block for block in blocks if isinstance(block, dict) and block.get("type") == "toolCall"]
        tool_lines = tuple(format_tool_call(block.get("name"), block.get("arguments")) for block in call_blocks)
        if message.get("errorMessage"):
            error = clip(str(message.get("errorMessage")), BODY_LIMIT, ERROR_FIELDS)
            return PreviewBlock("error", "assistant (error)", error.text, body_marks=error.marks)
        body = clip(content_text(content, "\n"), BODY_LIMIT, ASSISTANT_FIELDS)
        text = body.text
        if not text and not tool_lines:
            text = "(aborted)" if message.get("stopReason") == "aborted" else "(no content)"
        call_marks = (
            tuple(titled(line, _call_fields(block, marks)) for line, block in zip(tool_lines, call_blocks, strict=True))
            if marks is not None
            else ()
        )
        return PreviewBlock("assistant", "assistant", text, tool_lines, body_marks=body.marks, call_marks=call_marks)
    if role == "toolResult":
        title = f"result {tool_result_title(message, calls)}"
        failed = bool(message.get("isError"))
        output = clip(
            content_text(message.get("content"), "\n"),
            TOOL_OUTPUT_LIMIT,
            ERROR_FIELDS if failed else RESULT_FIELDS,
            TOOL_OUTPUT_LINES,
        )
        return PreviewBlock(
            "error" if failed else "tool",
            title,
            output.text,
            title_marks=titled(title, ANY_FIELD),
            body_marks=output.marks,
        )
    if run := user_run(message):
        title = f"[{run[0]}]: {display_text(run[1])}"
        output = clip(str(run[2] or ""), TOOL_OUTPUT_LIMIT, RESULT_FIELDS, TOOL_OUTPUT_LINES)
        return PreviewBlock("bash", title, output.text, title_marks=titled(title, BASH_FIELDS), body_marks=output.marks)
    if role == "custom":
        body = clip(content_text(message.get("content"), "\n"), BODY_LIMIT, CUSTOM_FIELDS)
        title = f"[{display_text(message.get('customType'))}]"  # (its type: indexed with its text)
        return PreviewBlock("custom", title, body.text, title_marks=titled(title, CUSTOM_FIELDS), body_marks=body.marks)
    if role == "branchSummary":
        body = clip(item.text, BODY_LIMIT, SUMMARY_FIELDS)
        return PreviewBlock("branch", "branch summary", body.text, body_marks=body.marks)
    if role == "compactionSummary":
        tokens = message.get("tokensBefore")
        count = f"{round(tokens / 1000)}k" if isinstance(tokens, int | float) and not isinstance(tokens, bool) else "?"
        body = clip(item.text, BODY_LIMIT, SUMMARY_FIELDS)
        title = f"compaction summary ({count} tokens before)"
        return PreviewBlock("compaction", title, body.text, body_marks=body.marks)
    fields = _OTHER_ROLE_FIELDS.get(role, NO_FIELDS) if isinstance(role, str) else NO_FIELDS
    body = clip(item.text, BODY_LIMIT, fields)
    return PreviewBlock("other", f"[{display_text(role)}]", body.text, body_marks=body.marks)


# The search fields the index keeps the text of other roles under (`core.metadata`'s scanner):
# oh-my-pi's prompts the agent made itself under `custom:`, a file mention's files under `result:`.
_OTHER_ROLE_FIELDS = {"developer": CUSTOM_FIELDS, "fileMention": RESULT_FIELDS}


MESSAGE_DEPTH = ARGUMENT_DEPTH + 4
"""How deep `_strings` looks into a message: as deep as the index reads a tool call's
arguments (`core.fulltext.ARGUMENT_DEPTH` levels under them; they are 3 under the message)."""


_UNSHOWN = frozenset({"thinkingSignature", "textSignature"})
"""Keys of strings no block shows (an image's `data` neither): opaque, long, never matched."""


def _strings(value: Any, out: list[str], depth: int = 0) -> list[str]:
    """Every string (and number) in a message (its text, calls' arguments, output, ids too;
    not `_UNSHOWN`'s nor an image's data), collected for a quick test that a query may match
    in it, before its block is made.
    (Decoded JSON: exact types, told apart by `type`, the quickest test.)"""
    kind = type(value)
    if kind is str:
        out.append(value)
    elif kind is dict:
        if depth < MESSAGE_DEPTH:
            image = value.get("type") == "image"
            for key, item in value.items():
                if key not in _UNSHOWN and not (image and key == "data"):
                    _strings(item, out, depth + 1)
    elif kind is list:
        if depth < MESSAGE_DEPTH:
            for item in value:
                _strings(item, out, depth + 1)
    elif kind is int or kind is float:
        out.append(str(value))
    return out


def _quick_text(item: ContextMessage) -> str:
    """What a message's quick test (`_matches`) looks in: its every string, and each tool
    call's text as the index reads it (`tool_call_text`: its file beside its name, which
    the message's own order of arguments may part)."""
    strings = _strings(item.message, [])
    content = item.message.get("content") if item.role == "assistant" else None
    for block in content if type(content) is list else ():
        if type(block) is dict and block.get("type") == "toolCall" and isinstance(name := block.get("name"), str):
            strings.append(tool_call_text(name, block.get("arguments")))
    return drop_escapes("\n".join(strings))


def _regex_found(item: ContextMessage, marks: TextMarks) -> bool:
    """Whether a `re:` term of `marks` matches in one of the message's strings, each capped
    (`REGEX_SCAN`) alone as a block caps each of its parts: capped joined, a long first
    string (thinking) would hide a later part's match."""
    regexes = TextMarks([term for term in marks.terms if term.regex])
    return bool(regexes.terms) and any(regexes.found(drop_escapes(text), None) for text in _strings(item.message, []))


def _matches(item: ContextMessage, text: str, marks: TextMarks) -> bool:
    """Whether `marks` match in what `item`'s block shows (`text`: its `_quick_text`, where
    the words are looked for; a `re:` term is looked for string by string)."""
    return (marks.found(text, None) or _regex_found(item, marks)) and _message_block(item, {}, marks).marked


def _narrows(term: MarkTerm, wider: MarkTerm) -> bool:
    """Whether every text `term` matches in, `wider` matches in too (so `term`'s first match
    is not before `wider`'s): `wider` a word prefix (`pro`), `term` words from a longer one
    (`prompt`, `promptly done`), in the same field."""
    if term.regex or wider.regex or term.within != wider.within:
        return False
    syntax = word_syntax()
    head = wider.pattern.pattern
    word = head.partition("(")[0]
    if head != syntax.first(word) + syntax.tail or not _WORD.fullmatch(word):
        return False
    return term.pattern.pattern.startswith(word)  # (its first word, from a word start: begins with `word`)


_WORD = re.compile(r"[^\W_]+")  # (a plain word: one `re.escape` leaves as it is)


class _ContextScan:
    """The context of one session at one leaf, walked from the top as far as a search
    needed: each candidate's message and quick-test text kept once made, and each term's
    first match (`MarkTerm`: its field and pattern) once found, so typing a query on with
    the same session highlighted builds nothing again (a 200,000-message path: the walk is
    the cost) and a match near the top costs only the walk to it."""

    def __init__(self, session: Session, leaf_id: Any) -> None:
        self.session, self.leaf_id = weakref.ref(session), leaf_id
        self.frame = context_frame(session, leaf_id)
        # The candidates made so far (from the top): each one's message (None: none) and its
        # `_quick_text` with accents folded (what a word term is looked for in).
        self._items: list[ContextMessage | None] = []
        self._folded: list[str] = []
        self._firsts: dict[MarkTerm, int | None] = {}
        self._count: int | None = None
        self.lock = threading.Lock()  # (one walker at a time: the list's preview, the tree's look)

    def _grow(self, stop: int) -> None:
        """Make the candidates up to `stop`."""
        items, folded, message = self._items, self._folded, self.frame.message
        for index in range(len(items), stop):
            item = message(index)
            items.append(item)
            folded.append(fold_accents(_quick_text(item)) if item is not None else "")

    def _first_of(self, term: MarkTerm, stop: Callable[[], bool] | None) -> int | None:
        """The candidate index of `term`'s first match (raises `Stopped`)."""
        if term in self._firsts:
            return self._firsts[term]
        start = 0
        for known, index in self._firsts.items():
            if _narrows(term, known):
                if index is None:
                    self._firsts[term] = None
                    return None
                start = max(start, index)
        marks, pattern, regex = TextMarks([term]), term.pattern, term.regex
        found, total = None, len(self.frame)
        with gc_paused():  # (kept objects, no cycles: a 200,000-message walk must not feed the collector)
            while start < total and found is None:
                if stop is not None and stop():
                    raise Stopped
                chunk = min(start + STOP_EVERY, total)
                self._grow(chunk)
                items = self._items
                folded = self._folded  # ("" for a candidate that is no message)
                for index in range(start, chunk):
                    # (`_matches`, inlined: a word term's quick test in the folded text kept)
                    if (
                        (item := items[index]) is not None
                        and (_regex_found(item, marks) if regex else pattern.search(folded[index]))
                        and _message_block(item, {}, marks).marked
                    ):
                        found = index
                        break
                start = chunk
        if found is None and isinstance(pattern, UserRegex) and pattern.gave_up:
            return None  # (a look ran out: not an answer to keep for this session)
        self._firsts[term] = found
        return found

    def first(self, marks: TextMarks, stop: Callable[[], bool] | None = None) -> int | None:
        """The candidate index of the first message where `marks` match (raises `Stopped`)."""
        firsts = [index for term in marks.terms if (index := self._first_of(term, stop)) is not None]
        return min(firsts) if firsts else None

    def ordinal(self, index: int) -> int:
        """How many messages the candidates before `index` (all made) became."""
        return index - self._items[:index].count(None)

    def looked(self) -> set[str]:
        """The entries of the messages made so far."""
        return {item.entry_id for item in self._items if item is not None}

    def messages(self, index: int, tail: int) -> list[ContextMessage]:
        """Up to `tail` messages from candidate `index` on."""
        out: list[ContextMessage] = []
        made = len(self._items)
        while index < len(self.frame) and len(out) < tail:
            item = self._items[index] if index < made else self.frame.message(index)
            if item is not None:
                out.append(item)
            index += 1
        return out

    def count(self) -> int:
        if self._count is None:
            self._count = self.frame.count()
        return self._count


_scan_lock = threading.RLock()  # (`_forget` may run inside `_scan_of`: a collection there)
_scan: _ContextScan | None = None


def _scan_of(session: Session, leaf_id: Any) -> _ContextScan:
    """The `_ContextScan` of `session` at `leaf_id`: the last one made if it is of this very
    session (a session read again is another object) at this leaf, else a new one, kept
    until another is made or the session is let go (what it holds goes with it)."""
    global _scan
    with _scan_lock:
        scan = _scan
        if scan is None or scan.session() is not session or scan.leaf_id != leaf_id:
            scan = _scan = _ContextScan(session, leaf_id)
            weakref.finalize(session, _forget, weakref.ref(scan))
        return scan


def _forget(scan: weakref.ref[_ContextScan]) -> None:
    """A session let go: its scan, if it is the one kept, goes too."""
    global _scan
    with _scan_lock:
        if _scan is not None and _scan is scan():
            _scan = None


def first_matching_entry(
    session: Session, order: Collection[str], query: Query | None, stop: Callable[[], bool] | None = None
) -> str | None:
    """The entry a tree opened from a search starts on: the first message of the context at
    the session's leaf where `query` matches (the one the list's preview shows first), else
    the first such entry in the tree's `order` (a branch off the leaf's path), else None.
    `stop` (a worker's cancellation) is asked along the way: None once it says so."""
    marks = TextMarks.of(query)
    if marks is None:
        return None
    scan = _scan_of(session, DEFAULT)
    try:
        with scan.lock:
            index = scan.first(marks, stop)
            if index is not None:
                found = scan.messages(index, 1)
                return found[0].entry_id if found else None
            looked = scan.looked()  # (nothing read again)
    except Stopped:
        return None
    by_id = session.tree.by_id
    for count, entry_id in enumerate(order):
        if stop is not None and not count % STOP_EVERY and stop():
            return None
        if entry_id in looked:
            continue
        item = as_message(by_id[entry_id])
        if item is not None and _matches(item, _quick_text(item), marks):
            return entry_id
    return None


def _path_calls(
    session: Session, leaf_id: str | None, messages: list[ContextMessage], known: set[str]
) -> dict[str, dict[str, Any]]:
    """`tool_calls_by_id` of the path's assistant messages for the tool results among
    `messages` (the calls asked for): the assistants read from the leaf back only until each
    is met (the last one on the path: the one `tool_calls_by_id` keeps), those in `messages`
    not read again.  A call in no assistant read (`known`: `PathTotals.call_ids`) is not
    looked for, so an orphan result costs no walk to the root."""
    wanted = {
        call_id
        for item in messages
        if item.role == "toolResult" and isinstance(call_id := item.message.get("toolCallId"), str)
    } & known
    found: dict[str, dict[str, Any]] = {}
    if not wanted:
        return found
    tree = session.tree
    entries = tree.entries
    codes, ids = entries.message_kinds, entries.ids
    held = {item.entry_id: item.message for item in messages if item.role == "assistant"}
    assistant = (MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT)
    for position in tree.path_positions(leaf_id):
        if codes[position] not in assistant:
            continue
        message = held.get(ids[position])
        entry = {"type": "message", "message": message} if message is not None else entries.peek(position)
        for call_id, block in tool_calls_by_id((entry,)).items():  # (an entry's own: its last block of each id)
            if call_id in wanted:
                found.setdefault(call_id, block)
        if len(found) == len(wanted):
            break
    return found


def build_preview(
    session: Session,
    leaf_id: Any = DEFAULT,
    tail: int = TAIL_MESSAGES,
    *,
    editor: str | None = None,
    query: Query | str | None = None,
    at_match: bool = True,
    stop: Callable[[], bool] | None = None,
) -> PreviewDoc:
    """The preview document for `session` resumed at `leaf_id` (pure; safe in a thread).

    `editor`: the text a resume here offers back in the editor (pi's rule for a user message:
    resume at its parent, the message goes to the editor), shown after the context.
    `query`: its matches are marked in every block; with `at_match` the blocks are the
    context from its first matching message on (up to `tail` of them), and when no message
    matches the document is the one without a query.  `stop`: a worker's cancellation,
    asked every `STOP_EVERY` messages of the walk and of the path's totals.
    """
    tree = session.tree
    marks = TextMarks.of(query)
    # Only the shown part of the context is made; its size and cost are running totals
    # along the tree (`PathTotals`): a cursor move on a 200,000-message path reads no more
    # than what it shows.  A query's first match is looked for from the top of the context
    # (`_ContextScan`: walked only as far as the match, kept for the next key typed).
    first: int | None = None
    if marks is not None and at_match:
        scan = _scan_of(session, leaf_id)
        try:
            with scan.lock:
                index = scan.first(marks, stop)
                if index is not None:
                    context = copy.copy(scan.frame.context)
                    context.messages = scan.messages(index, tail)
                    first, count = scan.ordinal(index), scan.count()
                    context.omitted = first
        except Stopped:
            return PreviewDoc(notice="Stopped.")  # (a cancelled worker's: never shown)
    if first is None:
        marks = marks if not at_match else None  # nothing to show at: the preview without a query
        if leaf_id is DEFAULT:
            context = build_session_context(session, tail=tail)
        else:
            context = build_session_context(session, leaf_id, tail=tail)
        count = context.omitted + len(context.messages)
    totals = PathTotals.of(tree)
    doc = PreviewDoc()
    model = context.model
    if model and (model.get("provider") or model.get("modelId")):
        names = (model.get("provider"), model.get("modelId"))
        doc.header.append(("model", "/".join(display_text(name) for name in names if name)))
    doc.header.append(("thinking", f"thinking {display_text(context.thinking_level) or 'off'}"))
    try:  # (the first ask on a long path sums every message of it: a cancelled worker stops it)
        tokens = totals.context_chars(context, stop) // 4
    except Stopped:
        return PreviewDoc(notice="Stopped.")  # (a cancelled worker's: never shown)
    if stop is not None and stop():  # (cancelled while it waited for the totals: the blocks are for nothing)
        return PreviewDoc(notice="Stopped.")
    doc.header.append(("context", f"~{plural(tokens, 'token')} · {plural(count, 'message')}"))
    _chars, cost = totals.at(context.leaf_id)
    if cost:
        doc.header.append(("cost", cost_text(cost)))  # one format: the stats report's
    doc.header.append(("branches", plural(tree.branch_points(), "branch point")))
    if tree.labels and context.leaf_id is not None:  # (the path's labelled ids, found at C speed)
        ids = tree.entries.ids
        path_ids = list(filter(tree.labels.__contains__, map(ids.__getitem__, tree.path_positions(context.leaf_id))))
        path_ids.reverse()
        labels = [display_text(tree.labels[entry_id]) for entry_id in path_ids]
        if labels:
            doc.header.append(("labels", ", ".join(f"[{label}]" for label in labels)))
    if context.mode and context.mode != "none":
        doc.header.append(("mode", f"mode {display_text(context.mode)}"))
    if session.problems:
        doc.header.append(("skipped", f"{plural(len(session.problems), 'problem')} skipped while reading"))
    messages = context.messages
    doc.earlier = context.omitted
    if first is not None:
        doc.later = count - first - len(messages)
        doc.at_match = True
    elif len(messages) > tail:
        doc.earlier += len(messages) - tail
        messages = messages[-tail:]
    # (the calls of the results shown: from the last one shown back, so a context shown from
    # a match near the top of a long path does not walk its whole length)
    last = messages[-1].entry_id if first is not None and messages else context.leaf_id
    calls = _path_calls(session, last, messages, totals.call_ids)
    doc.blocks = [_message_block(item, calls, marks) for item in messages]
    if editor is not None:
        doc.editor, doc.editor_marks = _clip_marked(editor, BODY_LIMIT, None, marks, USER_FIELDS)
    if not count:
        doc.notice = "Nothing to send yet: the context is empty at this point."
    return doc


class Marking(NamedTuple):
    """What a preview request marks: a query's matches, and whether it shows the context
    from the first of them on (`build_preview`'s `at_match`)."""

    query: Query | None = None
    at_match: bool = True


BodyStyles = dict[str, Style]  # component class (without `context-preview--`) -> its style
Geometry = tuple[int, int, int]  # `PreviewBody.geometry()`


@dataclass(frozen=True, slots=True)
class Prepared:
    """A document's text made off the UI thread, for these styles (and wrapped for a geometry)."""

    styles: BodyStyles
    content: Content
    wrapped: tuple[Geometry, list[Content]] | None


def body_content(doc: PreviewDoc, styles: BodyStyles) -> Content:
    """The pane's text for `doc`: its notice, what is left out, each message (title, body,
    calls) and the editor's text, styled with the pane's component `styles`.  Pure: a worker
    makes it."""
    parts: list[Content] = []
    if doc.notice:
        parts.append(Content.styled(doc.notice, styles["muted"]))
    if doc.earlier:
        parts.append(Content.styled(f"… {plural(doc.earlier, 'earlier message')} not shown", styles["muted"]))
    for block in doc.blocks:
        lines = [_marked(Content.styled(block.title, styles[block.kind]), block.title_marks, styles)]
        if block.body:
            lines.append(_marked(Content.styled(block.body, styles["body"]), block.body_marks, styles))
        call_marks = block.call_marks or ((),) * len(block.calls)
        lines.extend(
            _marked(Content.styled(f"→ {call}", styles["call"]), marks, styles, 2)
            for call, marks in zip(block.calls, call_marks, strict=True)
        )
        parts.append(Content("\n").join(lines))
    if doc.later:
        parts.append(Content.styled(f"… {plural(doc.later, 'later message')} not shown", styles["muted"]))
    if doc.editor is not None:
        parts.append(
            Content("\n").join(
                [
                    Content.styled("Enter: this message goes to the editor", styles["user"]),
                    _marked(Content.styled(doc.editor, styles["body"]), doc.editor_marks, styles),
                ]
            )
        )
    return Content("\n\n").join(parts)


def _marked(content: Content, marks: tuple[Span, ...], styles: BodyStyles, shift: int = 0) -> Content:
    """`content` with the query's matches (`marks`, moved by `shift`) in the match style."""
    for start, end in marks:
        content = content.stylize(styles["match"], start + shift, end + shift)
    return content


class _SessionCache:
    """A few recently read sessions, keyed by path and validated by size and mtime."""

    def __init__(self, size: int = 4) -> None:
        self._items: OrderedDict[Path, tuple[tuple[int, int], Session]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def read(self, path: Path) -> Session | NotASession:
        try:
            stat = os.stat(path)
            key = (stat.st_size, stat.st_mtime_ns)
        except OSError:
            key = None
        with self._lock:
            cached = self._items.get(path)
            if cached is not None and cached[0] == key:
                self._items.move_to_end(path)
                return cached[1]
        result = read_session(path, digest=False, decoded=CONTEXT_TYPES)  # the preview is a context
        if isinstance(result, Session) and key is not None:
            with self._lock:
                self._items[path] = (key, result)
                while len(self._items) > self._size:
                    self._items.popitem(last=False)
        return result


# -- the widget ---------------------------------------------------------------------------


class ContextPreview(Vertical):
    """A scrollable pane showing the context a resume at some entry would send."""

    DEFAULT_CSS = stylesheet("preview.tcss")

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "context-preview--key",
        "context-preview--user",
        "context-preview--assistant",
        "context-preview--tool",
        "context-preview--error",
        "context-preview--custom",
        "context-preview--branch",
        "context-preview--bash",
        "context-preview--compaction",
        "context-preview--other",
        "context-preview--call",
        "context-preview--body",
        "context-preview--muted",
        "context-preview--match",
    }

    class Loaded(Message, bubble=False):
        """The worker finished building a document for request `token`."""

        def __init__(self, token: int, doc: PreviewDoc, body: Prepared | None = None, *, same: bool = False) -> None:
            super().__init__()
            self.token = token
            self.doc = doc
            self.body = body  # the doc's text made and wrapped in the worker, for the styles and geometry asked with
            self.same = same  # the document shown already: its text is not made again, nothing is redrawn

    def __init__(
        self,
        *,
        stats: bool = False,
        placeholder: str = "No session selected",
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`stats`: a stats block can be shown (the session list's pane); `placeholder`: what
        the pane says while it has nothing to show and nothing coming."""
        super().__init__(name=name, id=id, classes=classes)
        self.stats_enabled = stats
        self.stats_choice: bool | None = None  # None: by the pane's height (STATS_AUTO_ROWS)
        self._stats_cache: OrderedDict[tuple[Path, Any], list[str]] = OrderedDict()
        self.placeholder = placeholder
        self._token = 0
        self._shown_token = 0
        self._doc: PreviewDoc | None = None
        self._cache = _SessionCache()

    def compose(self) -> ComposeResult:
        yield Static(id="seance-preview-header", markup=False)
        yield Static(id="seance-preview-stats", markup=False)
        yield PreviewBody(id="seance-preview-body")

    def on_mount(self) -> None:
        self._render_doc()

    @property
    def document(self) -> PreviewDoc | None:
        """The document currently shown (None while empty or loading)."""
        return self._doc

    @property
    def stats_visible(self) -> bool:
        """Whether the stats block shows: the user's Alt+I choice, else whether the pane is tall enough."""
        if not self.stats_enabled:
            return False
        return self.stats_choice if self.stats_choice is not None else self.size.height >= STATS_AUTO_ROWS

    def toggle_stats(self) -> None:
        """Show the stats block if hidden, hide it if shown (overrides the height rule)."""
        self.stats_choice = not self.stats_visible
        self._render_doc()

    def on_resize(self) -> None:
        if self.stats_enabled and self.is_mounted:
            self._render_doc()

    @property
    def pending(self) -> bool:
        """True while a requested preview has not been shown yet."""
        return self._shown_token != self._token

    # -- public API -----------------------------------------------------------------------

    def show(self, path: Path | None, leaf_id: Any = DEFAULT, *, query: Query | None = None) -> None:
        """Preview the session at `path` resumed at `leaf_id` (debounced; None clears); with a
        `query`, from its first match on, matches marked (`build_preview`)."""
        self._token += 1
        if path is None:
            self.workers.cancel_group(self, "context-preview")
            self._shown_token = self._token
            self._doc = None
            self._render_doc()
            return
        self._loading_shown()
        self._load(self._token, Path(path), None, leaf_id, None, self._layout(), Marking(query, True))

    def show_session(
        self, session: Session, leaf_id: Any = DEFAULT, *, editor: str | None = None, query: Query | None = None
    ) -> None:
        """Preview an already loaded session resumed at `leaf_id` (debounced); `editor` is the
        text the resume offers back in the editor (see `build_preview`); `query`: its matches
        marked, the context still shown at its end."""
        self._token += 1
        self._loading_shown()
        given = weakref.ref(session)
        self._load(self._token, session.path, given, leaf_id, editor, self._layout(), Marking(query, False))

    def set_placeholder(self, text: str) -> None:
        """Say `text` while there is nothing to show (e.g. why nothing will come)."""
        self.placeholder = text
        if self.is_mounted and self._doc is None:
            self._render_doc()

    def _loading_shown(self) -> None:
        """An empty pane says "Loading…" from the request on, not "No session selected"."""
        if self.is_mounted and self._doc is None:
            self._render_doc()

    # -- worker and handler ---------------------------------------------------------------

    @work(thread=True, exclusive=True, group="context-preview", exit_on_error=False, description="context preview")
    def _load(
        self,
        token: int,
        path: Path,
        session_ref: weakref.ref[Session] | None,
        leaf_id: Any,
        editor: str | None,
        layout: tuple[BodyStyles, Geometry | None],
        marking: Marking,
    ) -> None:
        """Read (or take) the session and build its preview.  A session given comes weakly:
        Textual's finished worker (its arguments with it) and the task that ran it hold each
        other until a full collection, and must not keep a closed tree's session alive."""
        worker = get_current_worker()
        time.sleep(DEBOUNCE_SECONDS)
        if worker.is_cancelled:
            return
        session = session_ref() if session_ref is not None else None
        if session_ref is not None and session is None:
            return  # (its screen is gone)
        if session is None:
            try:
                result = self._cache.read(path)
            except Exception as error:  # say it in the pane; never leave it blank
                self.post_message(self.Loaded(token, PreviewDoc(notice=f"Cannot read: {display_text(error)}")))
                return
            if isinstance(result, NotASession):
                self.post_message(self.Loaded(token, PreviewDoc(notice=f"Not a session: {result.reason}")))
                return
            session = result
        if worker.is_cancelled:
            return
        try:
            doc = build_preview(
                session,
                leaf_id,
                editor=editor,
                query=marking.query,
                at_match=marking.at_match,
                stop=lambda: worker.is_cancelled,
            )
        except Exception as error:  # a malformed entry must not take the pane down
            doc = PreviewDoc(notice=f"Cannot build the context: {display_text(error)}")
        if self.stats_enabled and not worker.is_cancelled:
            doc.stats = self._stats_lines(session)
        if worker.is_cancelled:
            return
        if doc == self._doc:  # (a key typed on that marks the same: its text is on screen, restyled as styles change)
            self.post_message(self.Loaded(token, doc, None, same=True))
            return
        styles, geometry = layout
        body = body_content(doc, styles)  # made and wrapped here: 200 messages are ~100 ms of wrapping
        prepared = Prepared(styles, body, None if geometry is None else (geometry, wrapped_lines(body, *geometry)))
        if not worker.is_cancelled:
            self.post_message(self.Loaded(token, doc, prepared))

    def _stats_lines(self, session: Session) -> list[str]:
        """The session's compact stats block (worker thread), cached by path and file stamp."""
        from seance.core.stats import session_stats
        from seance.core.statsformat import compact_lines

        key = (session.path, session.stamp)
        lines = self._stats_cache.get(key)
        if lines is None:
            try:
                lines = compact_lines(session_stats(session))
            except Exception as error:  # stats must never take the preview down
                lines = [f"stats unavailable: {display_text(error)}"]
            self._stats_cache[key] = lines
            while len(self._stats_cache) > 16:
                self._stats_cache.popitem(last=False)
        return lines

    def on_context_preview_loaded(self, message: Loaded) -> None:
        if message.token != self._token:
            return  # a newer request is on its way
        self._shown_token = message.token
        if message.same and self._doc == message.doc:
            return
        self._doc = message.doc
        self._render_doc(message.body)
        body = self.query_one("#seance-preview-body", PreviewBody)
        if message.doc.at_match:  # (the first match is the first block: the top shows it)
            body.scroll_home(animate=False, immediate=False)
        else:
            body.scroll_end(animate=False, immediate=False)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        if self.is_mounted:
            self._render_doc()

    # -- rendering ------------------------------------------------------------------------

    _PREFIX = "context-preview--"

    def _styles(self) -> BodyStyles:
        """Each component class's style (without the `context-preview--` prefix)."""
        prefix = self._PREFIX
        names = self.COMPONENT_CLASSES
        styles = {name.removeprefix(prefix): self.get_visual_style(name, partial=True) for name in names}
        # (a partial style drops an opaque background: a match's is its own, as in the list)
        styles["match"] = self.get_visual_style(f"{prefix}match")
        return styles

    def _layout(self) -> tuple[BodyStyles, Geometry | None]:
        """The component styles and the body's geometry a worker makes the text for (read
        here, on the UI thread)."""
        body = self.query_one("#seance-preview-body", PreviewBody) if self.is_mounted else None
        return self._styles(), body.geometry() if body is not None else None

    def _render_doc(self, prepared: Prepared | None = None) -> None:
        """Show the current document; `prepared`: its text as a worker made it (used while
        the styles it was made with are still the pane's)."""
        header = self.query_one("#seance-preview-header", Static)
        body = self.query_one("#seance-preview-body", PreviewBody)
        stats = self.query_one("#seance-preview-stats", Static)
        doc = self._doc
        stats.display = bool(doc is not None and doc.stats and self.stats_visible)
        update_static(stats, Content("\n".join(doc.stats)) if doc is not None else "")
        styles = self._styles()
        if doc is None:
            header.update("")
            header.display = False
            body.update(Content.styled("Loading…" if self.pending else self.placeholder, styles["muted"]))
            return
        header.display = bool(doc.header)
        separator = Content.styled(" · ", styles["key"])
        update_static(header, separator.join(Content(value) for _key, value in doc.header))
        if prepared is not None and prepared.styles == styles:
            body.update(prepared.content, prepared.wrapped)
        else:
            body.update(body_content(doc, styles))
