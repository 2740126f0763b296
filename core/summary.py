"""One-line summaries of entries, following pi's `/tree` rendering rules.

`summarize(entry)` returns a `Summary` whose `kind` names a style (the UI maps kinds to
component classes) and whose `prefix`/`text` are plain, sanitised strings.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from itertools import compress
from typing import Any, NamedTuple

import orjson

from .entries import (
    MESSAGE_ASSISTANT,
    MESSAGE_OTHER,
    MESSAGE_TEXTLESS_ASSISTANT,
    MESSAGE_TOOL_RESULT,
    MESSAGE_USER,
    Entries,
    KindedFacts,
    message_kind,
)
from .text import as_text, content_text, display_text, file_mention_paths, home_short, is_clean_line, user_run

_TEXT_LIMIT = 200


class Summary(NamedTuple):  # (immutable like a frozen dataclass, at half its cost to make: one per row)
    kind: str  # user | assistant | error | tool | bash | custom | compaction | branch | dim | other
    prefix: str
    text: str

    def plain(self) -> str:
        return f"{self.prefix}{self.text}"


def tool_calls_by_id(entries: Iterable[dict[str, Any]]) -> Mapping[str, dict[str, Any]]:
    """toolCallId -> the assistant's toolCall block, to summarise tool results (of a
    session's `Entries`, only the assistant messages are decoded)."""
    if isinstance(entries, Entries):
        entries = entries.messages(MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT)
    calls: dict[str, dict[str, Any]] = {}
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for block in tool_call_blocks(message):
            calls[block["id"]] = block
    return calls


def tool_call_blocks(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """An assistant message's tool call blocks that have an id, in order."""
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
            yield block


class Pending:
    """`ToolCallsFromEnd.lookup`'s answer when the call is not known yet (read no further)."""

    def __repr__(self) -> str:
        return "PENDING"


PENDING = Pending()


class ToolCallsFromEnd(Mapping[str, dict[str, Any]]):
    """`tool_calls_by_id(entries)` (equal as a mapping), found by reading the assistant
    messages from the session's end back only as far as a question needs.

    The last block with an id is the one `tool_calls_by_id` keeps, and the first one met
    going backwards: a call asked for is final once met.  A view opened at its leaf asks for
    the calls of the tool results around it, made a few entries before them: its first rows
    decode tens of assistant messages, not every one in the session (`tool_calls_by_id` on a
    200,000-entry session: a quarter of a second before any row).  An id that is in no call
    reads every message left, once.  Safe to ask from several threads (one reads at a time).
    """

    def __init__(self, entries: Entries) -> None:
        codes = entries.message_kinds
        wanted = frozenset((MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT)).__contains__
        self._entries = entries
        self._positions = list(compress(range(len(codes)), map(wanted, codes)))  # (the assistants)
        self._left = len(self._positions)  # the assistants before this one are not read yet
        self._found: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _read_back_to(self, call_id: object) -> None:
        """Read assistant messages backwards until `call_id` is met (every one: None)."""
        with self._lock:
            self._read_back(call_id, 0)

    def _read_back(self, call_id: object, stop: int) -> None:
        """`_read_back_to`, reading no message before the `stop`-th assistant; the lock held."""
        found, positions, peek = self._found, self._positions, self._entries.peek
        while self._left > stop and (call_id is None or call_id not in found):
            # (an entry's own: its last block of each id; met first going backwards: the last one)
            for block_id, block in tool_calls_by_id((peek(positions[self._left - 1]),)).items():
                found.setdefault(block_id, block)
            self._left -= 1  # (after the read: a read that raises is asked again)

    def lookup(self, call_id: str, budget: int) -> dict[str, Any] | Pending | None:
        """`get(call_id)` for a caller that must not wait (the UI thread drawing a row): it
        reads back at most `budget` more assistant messages, and none while another thread
        reads.  `PENDING` when the call may be further back than that."""
        block = self._found.get(call_id)
        if block is not None or not self._left:
            return block
        if not self._lock.acquire(blocking=False):
            return PENDING
        try:
            self._read_back(call_id, max(0, self._left - budget))
        finally:
            self._lock.release()
        block = self._found.get(call_id)
        return PENDING if block is None and self._left else block

    def get(self, call_id: Any, default: Any = None) -> Any:
        block = self._found.get(call_id)
        if block is None and self._left and call_id.__class__ is str:
            self._read_back_to(call_id)
            block = self._found.get(call_id)
        return default if block is None else block

    def __getitem__(self, call_id: str) -> dict[str, Any]:
        block = self.get(call_id)
        if block is None:
            raise KeyError(call_id)
        return block  # type: ignore[no-any-return]

    def __contains__(self, call_id: object) -> bool:
        return self.get(call_id) is not None

    def __iter__(self) -> Iterator[str]:
        self._read_back_to(None)
        return iter(self._found)

    def __len__(self) -> int:
        self._read_back_to(None)
        return len(self._found)


def tool_result_title(message: dict[str, Any], calls: Mapping[str, dict[str, Any]], limit: int | None = None) -> str:
    """What a tool result is the result of: its call as `format_tool_call` shows it (found by
    `toolCallId` in `calls`, see `tool_calls_by_id`), else `[<toolName>]` cut to `limit`."""
    call_id = message.get("toolCallId")
    call = calls.get(call_id) if isinstance(call_id, str) else None
    if call is not None:
        return format_tool_call(call.get("name"), call.get("arguments"))
    return f"[{display_text(message.get('toolName') or 'tool', limit)}]"


def format_tool_call(name: Any, args: Any) -> str:
    """`[bash: ls -la]`, `[read: ~/p/f.py:10-29]` ... like pi's tree, on one sanitised line
    (a path, a pattern or a tool name is session text: it may hold escape sequences)."""
    return display_text(_tool_call_text(name, args))


def _tool_call_text(name: Any, args: Any) -> str:
    args = args if isinstance(args, dict) else {}
    name = as_text(name)
    if name == "read":
        path = _call_path(args)
        offset, limit = args.get("offset"), args.get("limit")
        if offset is not None or limit is not None:
            start = offset if isinstance(offset, int) else 1
            end = f"-{start + limit - 1}" if isinstance(limit, int) else ""
            path += f":{start}{end}"
        return f"[read: {path}]"
    if name in ("write", "edit"):
        return f"[{name}: {_call_path(args)}]"
    if name == "bash":
        raw = as_text(args.get("command") or "")
        return _bash_label(display_text(raw), cut=len(raw) > _BASH_SHOWN)
    if name == "grep":
        return f"[grep: /{as_text(args.get('pattern') or '')}/ in {home_short(as_text(args.get('path') or '.'))}]"
    if name == "find":
        return f"[find: {as_text(args.get('pattern') or '')} in {home_short(as_text(args.get('path') or '.'))}]"
    if name == "ls":
        return f"[ls: {home_short(as_text(args.get('path') or '.'))}]"
    try:
        encoded = orjson.dumps(args).decode()
    except TypeError:  # (JSONEncodeError is one: too deep for orjson, for one)
        encoded = as_text(args)
    return f"[{name}: {encoded[:40]}{'...' if len(encoded) > 40 else ''}]"


def _call_path(args: dict[str, Any]) -> str:
    """The file a read, write or edit call names, as pi shows it (only those read it: a bash
    call's row, the usual one, need not look up the home directory)."""
    return home_short(as_text(args.get("path") or args.get("file_path") or ""))


# Bookkeeping entries whose row reads one short field (`summarize` below): thousands of them
# share a few values (an extension's `custom` entries, switches to the same model), so their
# rows are made once per value.
ONE_FIELD: dict[str, str] = {
    "custom": "customType",
    "model_change": "modelId",
    "thinking_level_change": "thinkingLevel",
    "session_info": "name",
    "title_change": "title",
    "mode_change": "mode",
}
_ONE_FIELD_ROWS: dict[tuple[Any, str | None], Summary] = {}
_ONE_FIELD_ROWS_MAX = 4096
# The entry types whose row reads more of the entry than its type (any other type's row is
# `[type]`): what a caller that summarises every entry reads (`tree --text`).
ROW_READS = frozenset(
    {"message", "custom_message", "compaction", "branch_summary", "label", "ttsr_injection", "session_init", "leaf"}
    | {"credential_pin", "service_tier_change", "model_usage"}
    | ONE_FIELD.keys()
)


def summarize(entry: dict[str, Any], tool_calls: Mapping[str, dict[str, Any]] | None = None) -> Summary:
    """The one-line rendering of an entry (text already free of controls)."""
    kind = entry.get("type")
    field = ONE_FIELD.get(kind) if kind.__class__ is str else None
    if field is not None:
        value = entry.get(field)
        if value is None or value.__class__ is str:
            key = (kind, value)
            summary = _ONE_FIELD_ROWS.get(key)
            if summary is None:
                summary = _summarize(entry, tool_calls)
                if len(_ONE_FIELD_ROWS) >= _ONE_FIELD_ROWS_MAX:
                    _ONE_FIELD_ROWS.clear()
                _ONE_FIELD_ROWS[key] = summary
            return summary
    return _summarize(entry, tool_calls)


def field_summary(kind: str, value: Any) -> Summary:
    """`summarize` of an entry of a `ONE_FIELD` type, from the value of that field alone
    (what its row reads: see `read_session(fields=...)`)."""
    return summarize({"type": kind, ONE_FIELD[kind]: value})


def _summarize(entry: dict[str, Any], tool_calls: Mapping[str, dict[str, Any]] | None) -> Summary:
    kind = entry.get("type")
    if kind == "message":
        return _summarize_message(entry.get("message"), {} if tool_calls is None else tool_calls)  # (no len():
        # a `ToolCallsFromEnd` would read every call to answer it)
    if kind == "custom_message":
        text = content_text(entry.get("content"), "")
        return Summary("custom", f"[{display_text(entry.get('customType'))}]: ", display_text(text, _TEXT_LIMIT))
    if kind == "compaction":
        tokens = entry.get("tokensBefore")
        count = round(tokens / 1000) if isinstance(tokens, int | float) and not isinstance(tokens, bool) else "?"
        return Summary("compaction", "", f"[compaction: {count}k tokens]")
    if kind == "branch_summary":
        return Summary("branch", "[branch summary]: ", display_text(entry.get("summary"), _TEXT_LIMIT))
    if kind == "model_change":
        return Summary("dim", "", f"[model: {display_text(entry.get('modelId'))}]")
    if kind == "thinking_level_change":
        level = entry.get("thinkingLevel")  # (null: oh-my-pi's "off", as `context` reads it)
        return Summary("dim", "", f"[thinking: {'off' if level is None else display_text(level)}]")
    if kind == "custom":
        return Summary("dim", "", f"[custom: {display_text(entry.get('customType'))}]")
    if kind == "label":
        label = entry.get("label")
        return Summary("dim", "", f"[label: {display_text(label) if label else '(cleared)'}]")
    if kind == "session_info":
        return Summary("dim", "", f"[title: {display_text(entry.get('name')) or 'empty'}]")
    if kind == "title_change":
        return Summary("dim", "", f"[title: {display_text(entry.get('title')) or 'empty'}]")
    if kind == "mode_change":
        return Summary("dim", "", f"[mode: {display_text(entry.get('mode'))}]")
    if kind == "ttsr_injection":
        rules = entry.get("injectedRules")
        count = len(rules) if isinstance(rules, list) else 0
        return Summary("dim", "", f"[rules injected: {count}]")
    if kind == "session_init":
        return Summary("dim", "", f"[session init: {display_text(entry.get('task'), 60)}]")
    if kind == "leaf":
        return Summary("dim", "", f"[leaf → {display_text(entry.get('targetId'))}]")
    return _omp_bookkeeping(kind, entry) or Summary("other", "", f"[{display_text(kind)}]")


def _omp_bookkeeping(kind: Any, entry: dict[str, Any]) -> Summary | None:
    """oh-my-pi's own bookkeeping entries, as its tree names them (`/clear`'s boundary says
    what it does: the context starts after it); None for any other type."""
    if kind == "reset_boundary":
        return Summary("dim", "", "[context cleared]")
    if kind == "credential_pin":
        return Summary("dim", "", f"[credential pin: {display_text(entry.get('provider'))}]")
    if kind == "service_tier_change":
        tiers = entry.get("serviceTier")
        named = ", ".join(f"{family}:{tier}" for family, tier in tiers.items()) if isinstance(tiers, dict) else ""
        return Summary("dim", "", f"[service tier: {display_text(named) or '(default)'}]")
    if kind == "model_usage":
        return Summary("dim", "", f"[model usage: {display_text(entry.get('purpose'))}]")
    return None


def _summarize_message(message: Any, tool_calls: Mapping[str, dict[str, Any]]) -> Summary:
    if not isinstance(message, dict):
        return Summary("other", "", "[message]")
    role = message.get("role")
    if role == "user":
        return Summary("user", "user: ", display_text(content_text(message.get("content"), ""), _TEXT_LIMIT))
    if role == "assistant":
        text = display_text(content_text(message.get("content"), ""), _TEXT_LIMIT)
        if text:
            return Summary("assistant", "assistant: ", text)
        if message.get("stopReason") == "aborted":
            return Summary("assistant", "assistant: ", "(aborted)")
        if message.get("errorMessage"):
            return Summary("error", "assistant: ", display_text(message.get("errorMessage"), 80))
        return Summary("assistant", "assistant: ", "(no content)")
    if role == "toolResult":
        return tool_result_summary(message.get("toolCallId"), message.get("toolName"), tool_calls)
    if run := user_run(message):
        return Summary("bash", "", f"[{run[0]}]: {display_text(run[1])}")
    if role == "developer":  # (oh-my-pi's prompts the agent itself makes, shown as omp does)
        return Summary("dim", "developer: ", display_text(content_text(message.get("content"), ""), _TEXT_LIMIT))
    if role == "fileMention":  # (oh-my-pi: the files a prompt's `@path` read)
        return Summary("dim", "", f"[fileMention]: {display_text(', '.join(file_mention_paths(message.get('files'))))}")
    if role == "custom":
        text = content_text(message.get("content"), "")
        return Summary("custom", f"[{display_text(message.get('customType'))}]: ", display_text(text, _TEXT_LIMIT))
    return Summary("dim", "", f"[{display_text(role)}]")


def tool_result_summary(call_id: Any, tool_name: Any, tool_calls: Mapping[str, dict[str, Any]]) -> Summary:
    """A tool result's summary: its call's (found by its `toolCallId` in `tool_calls`), else its tool's name."""
    call = tool_calls.get(call_id) if isinstance(call_id, str) else None
    if call:
        return Summary("tool", "", format_tool_call(call.get("name"), call.get("arguments")))
    return Summary("tool", "", f"[{display_text(tool_name or 'tool')}]")


class ToolResultRow(NamedTuple):
    """What a tool result's row reads of it (`MessageRows`) when its call was not read before
    it: the call is looked up among the session's calls once they are all read
    (`message_row_texts`)."""

    call_id: Any
    tool_name: Any


class MessageRows(KindedFacts):
    """What `tree --text`'s row of a `message` entry reads of its `message` (an object), as the
    message is parsed (`read_session(message_facts=MessageRows())`: the messages need not be
    kept), with the message's kind (`KindedFacts`): its row text (`entry_summary_text` of its
    summary, cut to 100 characters); for a tool result whose call was read before it, its
    call's row (made while the call was read when it is a clean bash one, `_clean_bash_row`);
    for any other tool result a `ToolResultRow`, looked up once every call is read
    (`message_row_texts`).  A prompt's or a reply's usual text makes its row at C speed
    (`_clean_row`).

    One per read: it keeps the calls read so far (`calls`, the last of each id), so a call
    met again with other content (`redefined`: a result's row made before it may not be the
    one the last call of its id gives, which `tool_calls_by_id` keeps) makes its facts of
    tool results unusable; a call met again as it was (a block parsed twice) changes no row.
    Its facts depend on the messages read before (`each_alone` False): a selection of the
    entries (duplicate ids, entries dropped) does not keep them."""

    __slots__ = ("calls", "deferred", "redefined")
    each_alone = False

    def __init__(self) -> None:  # (`with_kind` is the method below, not the slot)
        self.calls: dict[str, Any] = {}  # call id -> its results' row (a clean bash call) or its block
        self.deferred = 0  # tool results read before their call: their facts are `ToolResultRow`s
        self.redefined = False

    def with_kind(self, message: dict[str, Any]) -> tuple[int, str | ToolResultRow]:  # type: ignore[override]
        """(`message_kind(message)`, the message's facts) in one look at it."""
        role = message.get("role")
        if role == "toolResult":
            call_id = message.get("toolCallId")
            call = self.calls.get(call_id) if call_id.__class__ is str else None
            if call.__class__ is str:  # (its row, made as the call was read: a clean bash one)
                return MESSAGE_TOOL_RESULT, call
            if call is None:
                self.deferred += 1
                return MESSAGE_TOOL_RESULT, ToolResultRow(call_id, message.get("toolName"))
            return MESSAGE_TOOL_RESULT, _result_row(call_id, message.get("toolName"), call, self.calls)
        if role == "user":
            content = message.get("content")
            row = _clean_row("user: ", content if content.__class__ is str else content_text(content, ""))
            return MESSAGE_USER, row if row is not None else entry_summary_text(_summarize_message(message, {}), 100)
        if role != "assistant":  # (only a tool result's row reads calls)
            return MESSAGE_OTHER, entry_summary_text(_summarize_message(message, {}), 100)
        content = message.get("content")
        if content.__class__ is list:
            calls = self.calls
            texts: list[str] = []  # (one pass over the blocks: the text `content_text` joins, and the calls)
            for block in content:
                if isinstance(block, dict):
                    kind = block.get("type")
                    if kind == "text":
                        text = block.get("text")
                        if isinstance(text, str):
                            texts.append(text)
                    elif kind == "toolCall" and isinstance(block.get("id"), str):
                        # (a result's row made here while the call is hot, when it is a clean bash one)
                        call_id, call = block["id"], _clean_bash_row(block) or block
                        known = calls.get(call_id)
                        if known is not None and not _same_call(known, call):
                            self.redefined = True
                        calls[call_id] = call
            row = _clean_row("assistant: ", "".join(texts))
        else:
            row = _clean_row("assistant: ", content_text(content, ""))
        if row is None:  # (the general row, and the kind read as the reader reads it)
            return message_kind(message), entry_summary_text(_summarize_message(message, {}), 100)
        return MESSAGE_ASSISTANT, row  # (a text that is not blank: a reply with text)


def _same_call(known: Any, call: Any) -> bool:
    """Whether a call met again (its row or its block) is the one met before."""
    try:
        return bool(known == call)
    except RecursionError:  # (arguments nested deeper than a comparison goes: taken as another call)
        return False


def _result_row(call_id: Any, tool_name: Any, call: Any, calls: Mapping[str, Any]) -> str:
    """The row of a tool result whose call (`calls[call_id]`, None: none) is `call`."""
    if call.__class__ is str:  # (its row, made as the call was read)
        return call  # type: ignore[no-any-return]
    return entry_summary_text(tool_result_summary(call_id, tool_name, calls), 100)


def _clean_row(prefix: str, text: Any) -> str | None:
    """`entry_summary_text(Summary(_, prefix, display_text(text, _TEXT_LIMIT)), 100)` (a
    prompt's or a reply's row: its text cut to 200 characters, then the row to 100) for
    the usual text, whose first 201 characters are one clean line (`is_clean_line`: both
    `display_text`s then only cut it); None for
    any other (the caller makes its row the general way).  `prefix` ends with its one space."""
    if text.__class__ is not str:
        return None
    head = text[: _TEXT_LIMIT + 1]
    if is_clean_line(head):
        row = prefix + head
        return row if len(row) <= 100 else row[:99] + "…"
    return None


def message_row_texts(facts: list[Any], calls: Mapping[str, Any]) -> Iterator[str]:
    """The row texts of the messages whose `MessageRows` facts are `facts`, in file order
    (`calls`: its `calls` once every message is read; a tool result's row is the one the last
    call of its id gives, as `tool_calls_by_id` finds it)."""
    for fact in facts:
        if fact.__class__ is ToolResultRow:
            call_id = fact.call_id
            yield _result_row(call_id, fact.tool_name, calls.get(call_id) if call_id.__class__ is str else None, calls)
        else:
            yield fact


def _clean_bash_row(call: dict[str, Any]) -> str | None:
    """The row of a result of `call` (a `toolCall` block) when it is a bash call whose
    command is one clean line (`is_clean_line`): `_bash_label` of it, which no sanitiser or
    cut changes (at most 61 characters); None for any other call (its row is made the
    general way)."""
    if call.get("name") != "bash":
        return None
    args = call.get("arguments")
    command = args.get("command") if args.__class__ is dict else None
    if command.__class__ is not str or not is_clean_line(command):
        return None
    return _bash_label(command, cut=len(command) > _BASH_SHOWN)


_BASH_SHOWN = 50  # a bash call's row shows this much of its command


def _bash_label(command: str, *, cut: bool) -> str:
    """A bash call's row: `[bash: <command's first _BASH_SHOWN characters>]`, with `...`
    when the command was longer (`cut`)."""
    return f"[bash: {command[:_BASH_SHOWN]}{'...' if cut else ''}]"


def entry_summary(
    entry: dict[str, Any], limit: int | None = None, tool_calls: Mapping[str, dict[str, Any]] | None = None
) -> str:
    """Plain one-line text of an entry, cut to `limit` characters."""
    return entry_summary_text(summarize(entry, tool_calls), limit)


def entry_summary_text(summary: Summary, limit: int | None = None) -> str:
    """`entry_summary` from the entry's `Summary` (for a caller that keeps one per summary)."""
    return display_text(summary.plain(), limit)
