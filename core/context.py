"""What the model receives when a session is resumed at a given entry (pi's buildSessionContext).

Walk root → leaf.  Settings: the latest `thinking_level_change` (default "off"); the model
from the latest `model_change` or assistant message on the path, whichever comes last (an
oh-my-pi file's `model_change` is never overridden by a later assistant's model).
Messages: with a compaction on the path, its summary first, then the path entries from
`firstKeptEntryId` up to the compaction, then everything after it; otherwise every entry.
`message` entries pass through, `custom_message` becomes role `custom`, `branch_summary`
becomes role `branchSummary`.  oh-my-pi extras: `mode_change` and `ttsr_injection` rules, and
its `/clear`: with a `reset_boundary` on the path after the last compaction, only the entries
after the last boundary become messages (that compaction is cleared too).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from dataclasses import dataclass, field
from heapq import merge
from itertools import compress, repeat
from operator import eq, is_, not_
from typing import Any

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
from .gcpause import gc_paused
from .session import Session
from .text import content_text, message_text
from .tree import SessionTree, timestamp_ms

_DEFAULT = object()


def _scalar(value: Any) -> Any:
    """A field that should be a string, as JSON output may carry it: an object or array (pi
    reads them nested 10,000 deep; JSON encoders refuse that) becomes null."""
    return None if isinstance(value, dict | list) else value


@dataclass(slots=True)
class ContextMessage:
    """One message the model will receive, and the entry it came from."""

    role: str
    message: dict[str, Any]
    entry_id: str

    @property
    def text(self) -> str:
        return message_text(self.message)


@dataclass(slots=True)
class SessionContext:
    leaf_id: str | None
    thinking_level: Any = "off"  # a string as pi writes it; whatever the file holds otherwise
    model: dict[str, Any] | None = None
    messages: list[ContextMessage] = field(default_factory=list)
    mode: str = "none"
    mode_data: Any = None
    injected_rules: list[str] = field(default_factory=list)
    compaction: dict[str, Any] | None = None
    kept_from: str | None = None
    """With a compaction: the first path entry whose messages are kept before it (its
    `firstKeptEntryId`, or the compaction itself when that entry is not on the path)."""
    cleared_at: str | None = None
    """oh-my-pi's `/clear`: the `reset_boundary` entry the messages start after (the path up
    to it, a compaction on it too, is not sent), else None."""
    role_models: dict[str, dict[str, Any]] | None = field(default=None, compare=False, repr=False)
    """oh-my-pi's models by `model_change` role met on the path so far (while it is read)."""
    omitted: int = 0
    """Messages before `messages` not made (a context built with a `tail`): the context
    holds `omitted + len(messages)` messages."""

    def to_json(self, messages: bool = True) -> dict[str, Any]:
        """The context's part of `show --json`; `messages=False`: its "messages" an empty list
        in its place (a caller that writes them a batch at a time: `messages_json`)."""
        model = self.model
        return {
            "leafId": self.leaf_id,
            "thinkingLevel": _scalar(self.thinking_level),
            "model": {key: _scalar(value) for key, value in model.items()} if model is not None else None,
            "messages": self.messages_json() if messages else [],
            "mode": self.mode,
            "injectedRules": self.injected_rules,
        }

    def messages_json(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """The "messages" of `to_json`, those from `start` to `stop` (a slice's bounds)."""
        return [{"role": m.role, "text": m.text, "entryId": m.entry_id} for m in self.messages[start:stop]]


def as_message(entry: dict[str, Any]) -> ContextMessage | None:
    """The message an entry of one of `MESSAGE_TYPES` becomes in the context (None: none)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        role = message.get("role")
        return ContextMessage(role if isinstance(role, str) else "unknown", message, entry["id"])
    if kind == "custom_message":
        message = {
            "role": "custom",
            "customType": entry.get("customType"),
            "content": entry.get("content"),
            "display": entry.get("display"),
            "details": entry.get("details"),
            "timestamp": timestamp_ms(entry.get("timestamp")),
        }
        return ContextMessage("custom", message, entry["id"])
    if kind == "branch_summary" and entry.get("summary"):
        message = {"role": "branchSummary", "summary": entry.get("summary"), "fromId": entry.get("fromId")}
        return ContextMessage("branchSummary", message, entry["id"])
    return None


# Entry types the walk looks at: every other entry on the path (most of a long one) is passed over.
RESET_TYPE = "reset_boundary"  # oh-my-pi's `/clear`
_SETTING_TYPES = frozenset(
    {"thinking_level_change", "model_change", "message", "compaction", "mode_change", "ttsr_injection", RESET_TYPE}
)
MESSAGE_TYPES = frozenset({"message", "custom_message", "branch_summary"})
_RELEVANT_TYPES = _SETTING_TYPES | MESSAGE_TYPES
CONTEXT_TYPES = _RELEVANT_TYPES  # what a reader about to build a context keeps decoded (`read_session`)


def build_session_context(
    session: Session | SessionTree, leaf: Any = _DEFAULT, *, tail: int | None = None
) -> SessionContext:
    """The context at `leaf` (an entry id), at the session's leaf by default.

    `tail`: only the last `tail` messages are made (and their entries read); the others are
    counted in `omitted` (a preview of a 200,000-message path shows its end).

    `leaf=None` means "before the first entry" (empty), as in pi.  An id that is not in the
    session falls back to the last entry, also as in pi; the CLI checks ids before calling.
    Only the path root → leaf is walked: the tree's children are never built here.
    """
    tree = session.tree if isinstance(session, Session) else session
    with gc_paused():  # a path of millions of entries: nothing built here forms a cycle
        return _in_dialect(session, _context_at(tree, leaf, tail))


def _in_dialect(session: Session | SessionTree, context: SessionContext) -> SessionContext:
    """`context` as the session's own agent reads it: oh-my-pi writes a null thinking level
    for a model without levels and resumes at "off" (`?? "off"`); pi's buildSessionContext
    keeps the null (a tree alone, of no known dialect, is read as pi's)."""
    if context.thinking_level is None and isinstance(session, Session) and session.dialect == "omp":
        context.thinking_level = "off"
    return context


@dataclass(slots=True)
class ContextFrame:
    """A context's settings and where its messages come from, none of them made: a reader
    that wants the context from the top until something (a search's first match) walks it
    with `message`, and makes only what it reaches."""

    context: SessionContext  # the settings (`messages` empty)
    head: list[ContextMessage]  # the messages it opens with (a compaction's summary)
    positions: list[int]  # the entries that may become its next messages, in order
    entries: Entries

    def __len__(self) -> int:
        """How many candidates (`head`, then `positions`): each becomes at most one message."""
        return len(self.head) + len(self.positions)

    def message(self, index: int) -> ContextMessage | None:
        """The message candidate `index` becomes (None: none), read without caching it."""
        head = self.head
        if index < len(head):
            return head[index]
        return _message_at(self.entries, self.positions[index - len(head)])

    def count(self) -> int:
        """How many messages the context holds (counted off the columns where they can be)."""
        return len(self.head) + _count_messages(self.entries, self.positions)


def context_frame(session: Session | SessionTree, leaf: Any = _DEFAULT) -> ContextFrame:
    """The `ContextFrame` of the context at `leaf` (as `build_session_context`)."""
    tree = session.tree if isinstance(session, Session) else session
    target = _target(tree, leaf)
    if target is None:
        return ContextFrame(SessionContext(leaf_id=None), [], [], tree.entries)
    with gc_paused():
        context, head, positions = _context_candidates(tree, target)
    return ContextFrame(_in_dialect(session, context), head, positions, tree.entries)


def _relevant_path(tree: SessionTree, target: str) -> list[int]:
    """The positions of the path root → `target` with only what the context reads: the
    entries of a type it looks at, and the last compaction's first kept entry (where keeping
    starts, whatever its type).  One walk up the columns, so a path of millions of entries is
    touched once and no entry is decoded but a compaction's."""
    if tree.is_chain:
        return _relevant_chain(tree, target)
    relevant = _RELEVANT_TYPES
    entries, types, ids = tree.entries, tree.entries.types, tree.entries.ids
    path: list[int] = []
    append = path.append
    first_kept: Any = _DEFAULT  # not yet known: no compaction met
    for position in tree.path_positions(target):  # leaf → root: the first compaction met is the last one
        kind = types[position]
        if kind.__class__ is str and kind in relevant:
            append(position)
            if kind == "compaction" and first_kept is _DEFAULT:
                first_kept = entries[position].get("firstKeptEntryId")
        elif first_kept is not _DEFAULT and ids[position] == first_kept:
            append(position)
    path.reverse()
    return path


def _relevant_chain(tree: SessionTree, target: str) -> list[int]:
    """`_relevant_path` on a chain (the path to an entry is every entry up to it): the
    positions of the types read found at C speed, then the last compaction's first kept
    entry (an entry of another type before it) put in its place."""
    entries, types, ids = tree.entries, tree.entries.types, tree.entries.ids
    end = tree.positions.get(target, -1) + 1
    found = list(entries.positions_of_types(_RELEVANT_TYPES, end))
    for position in reversed(found):  # the last compaction on the path
        if types[position] == "compaction":
            first_kept = entries[position].get("firstKeptEntryId")
            try:
                kept = ids.index(first_kept, 0, position)
            except ValueError:
                break
            if not (types[kept].__class__ is str and types[kept] in _RELEVANT_TYPES):  # (else found already)
                insort(found, kept)
            break
    return found


# A message entry's role by its `message_kinds` code, for the codes that name one role (the
# others, MESSAGE_OTHER, are read from the entry).
_ROLE_OF_CODE = {
    MESSAGE_USER: "user",
    MESSAGE_TOOL_RESULT: "toolResult",
    MESSAGE_ASSISTANT: "assistant",
    MESSAGE_TEXTLESS_ASSISTANT: "assistant",
}


def compaction_summary(compaction: dict[str, Any]) -> ContextMessage:
    """The message a compaction entry opens the context with."""
    summary = {
        "role": "compactionSummary",
        "summary": compaction.get("summary"),
        "tokensBefore": compaction.get("tokensBefore"),
    }
    return ContextMessage("compactionSummary", summary, compaction["id"])


def _target(tree: SessionTree, leaf: Any) -> str | None:
    """The entry a context is built at: `leaf`, the session's leaf (`_DEFAULT`), the last
    entry for an id not in the session; None for `leaf=None` or an empty session."""
    if leaf is None:
        return None
    target = tree.leaf_id if leaf is _DEFAULT else leaf
    if target not in tree.by_id:
        target = tree.entries.ids[-1] if tree.entries else None
    return target  # type: ignore[no-any-return]


def _context_at(tree: SessionTree, leaf: Any, tail: int | None = None) -> SessionContext:
    target = _target(tree, leaf)
    if target is None:
        return SessionContext(leaf_id=None)
    if tail is not None and tree.is_chain:
        return _chain_tail(tree, target, tail)
    context, head, positions = _context_candidates(tree, target)
    entries = tree.entries
    if tail is None:
        context.messages = head + _messages_at(entries, positions)
        return context
    made: list[ContextMessage] = []  # the last `tail`, made from the end back
    start = len(positions)
    while start and len(made) < tail:
        start -= 1
        if message := _message_at(entries, positions[start]):
            made.append(message)
    made.reverse()
    context.omitted = _count_messages(entries, positions[:start])
    if head and len(made) < tail:
        made[:0] = head
    else:
        context.omitted += len(head)
    context.messages = made
    return context


def _context_candidates(tree: SessionTree, target: str) -> tuple[SessionContext, list[ContextMessage], list[int]]:
    """The context at `target` with its settings read and no messages yet, the messages it
    opens with (a compaction's summary), and the positions of the entries that may become
    its messages after them, in order."""
    entries = tree.entries
    types, ids, codes = entries.types, entries.ids, entries.message_kinds
    path = _relevant_path(tree, target)  # positions
    context = SessionContext(leaf_id=target)
    start = path[0] if path else 0
    if path and path[-1] - start + 1 == len(path) and types[start : path[-1] + 1].count("message") == len(path):
        # Every entry of a run a message (an agent's chain): no setting, no compaction, each a
        # candidate; the model is the last assistant's (found at C speed).
        _take_last_model(context, entries, start, path[-1] + 1)
        return context, [], path
    # The `message` entries (most of a path) are told apart by their columns, at C speed: a
    # message is always a candidate, and only the last assistant's model can count.  The
    # other entries (few) are decoded and read one by one, in path order.
    is_message = list(map(eq, repeat("message"), map(types.__getitem__, path)))
    message_indexes = list(compress(range(len(path)), is_message))
    candidates: list[int] = []  # where the entries that may become messages are on the path
    compaction_index = model_index = reset_index = -1
    explicit = False  # an oh-my-pi model_change met: no assistant's model counts any more
    relevant, message_types = _RELEVANT_TYPES, MESSAGE_TYPES
    for index in compress(range(len(path)), map(not_, is_message)):
        kind = types[path[index]]
        if kind.__class__ is not str or kind not in relevant:
            continue
        if kind in message_types:
            candidates.append(index)
        if kind == "compaction":
            compaction_index = index
        elif kind == RESET_TYPE:
            reset_index = index
        elif model := _read_setting(context, kind, entries[path[index]]):
            model_index, explicit = _model_found(model, index, explicit)
    for index in reversed(message_indexes):  # the last assistant message, if after the last model_change
        if index < model_index or explicit:
            break
        if codes[path[index]] in (MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT):
            message = entries[path[index]]["message"]
            context.model = {"provider": message.get("provider"), "modelId": message.get("model")}
            break
    candidates = list(merge(candidates, message_indexes)) if candidates else message_indexes
    head: list[ContextMessage] = []
    if reset_index > compaction_index:  # oh-my-pi's `/clear` after the last compaction (if any)
        context.cleared_at = ids[path[reset_index]]
        candidates = [i for i in candidates if i > reset_index]
    elif compaction_index >= 0:
        compaction = entries[path[compaction_index]]
        context.compaction = compaction
        head.append(compaction_summary(compaction))
        # Before the compaction, only what follows its first kept entry (none if that is not there).
        first_kept = compaction.get("firstKeptEntryId")
        keep_from = next((i for i in range(compaction_index) if ids[path[i]] == first_kept), compaction_index)
        context.kept_from = ids[path[keep_from]]
        candidates = [i for i in candidates if keep_from <= i < compaction_index or i > compaction_index]
    return context, head, list(map(path.__getitem__, candidates))


@dataclass(slots=True)
class ContextTexts:
    """A context's messages as columns, what `show` prints of each: its role, its text
    (`ContextMessage.text`) and the id of its entry; `context` holds the settings (its
    `messages` left empty)."""

    context: SessionContext
    roles: list[str]
    texts: list[str]
    entry_ids: list[str]

    def messages_json(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """`SessionContext.messages_json` of the messages these columns hold."""
        rows = zip(self.roles[start:stop], self.texts[start:stop], self.entry_ids[start:stop], strict=True)
        return [{"role": role, "text": text, "entryId": entry_id} for role, text, entry_id in rows]


def _kind_and_text(message: dict[str, Any]) -> tuple[int, str]:
    """(`message_kind(message)`, `message_text(message)`) in one look at the message: a
    reply's text is not blank exactly when one of its text blocks is not."""
    role = message.get("role")
    if role == "user":
        content = message.get("content")
        return MESSAGE_USER, content if content.__class__ is str else content_text(content, "\n")
    if role == "toolResult":
        return MESSAGE_TOOL_RESULT, content_text(message.get("content"), "\n")
    if role != "assistant":
        return MESSAGE_OTHER, message_text(message)
    text = content_text(message.get("content"), "\n")
    if text and not text.isspace():
        return MESSAGE_ASSISTANT, text
    return message_kind(message), text  # (blank: text-less unless it ended in an error or abort)


# What `show` reads of each message as it is parsed (`read_session(message_facts=MESSAGE_TEXTS)`):
# its `message_text`, and with it its kind (`KindedFacts`).
MESSAGE_TEXTS = KindedFacts(_kind_and_text)


def context_texts(session: Session | SessionTree, leaf: Any = _DEFAULT) -> ContextTexts:
    """`build_session_context(session, leaf)` as `ContextTexts`.  For a session read with
    `read_session(message_facts=MESSAGE_TEXTS)` the messages' texts are its column's: a `message`
    entry whose role its kind names is never decoded (`show` of 200,000 messages keeps none
    of them); any other candidate is read as `build_session_context` reads it."""
    tree = session.tree if isinstance(session, Session) else session
    entries = tree.entries
    with gc_paused():
        target = _target(tree, leaf)
        texts = entries.message_facts if entries.message_facts_of is MESSAGE_TEXTS else None
        if target is None or texts is None:
            context = _in_dialect(session, _context_at(tree, leaf))
            made, context.messages = context.messages, []
            return ContextTexts(context, *_columns(made))
        context, head, positions = _context_candidates(tree, target)
        _in_dialect(session, context)
        codes, ids = entries.message_kinds, entries.ids
        if positions and positions[-1] - positions[0] + 1 == len(positions):  # a run (a chain of messages): slices
            start, stop = positions[0], positions[-1] + 1
            roles: list[Any] = list(map(_ROLE_OF_CODE.get, codes[start:stop]))
            row_texts: list[Any] = texts[start:stop]  # (a str at each position whose role is named)
            row_ids = ids[start:stop]
        else:
            roles = list(map(_ROLE_OF_CODE.get, map(codes.__getitem__, positions)))
            row_texts = list(map(texts.__getitem__, positions))
            row_ids = list(map(ids.__getitem__, positions))
        rows = ContextTexts(context, roles, row_texts, row_ids)
        if None in roles:  # a message of another role, a custom message, a branch summary: read (few)
            odd = list(compress(range(len(roles)), map(is_, roles, repeat(None))))
            for index in reversed(odd):
                message = as_message(entries.peek(positions[index]))
                if message is None:
                    del rows.roles[index], rows.texts[index], rows.entry_ids[index]
                else:
                    rows.roles[index], rows.texts[index], rows.entry_ids[index] = (
                        message.role,
                        message.text,
                        message.entry_id,
                    )
        if head:
            rows.roles[:0], rows.texts[:0], rows.entry_ids[:0] = _columns(head)
        return rows


def _columns(messages: list[ContextMessage]) -> tuple[list[str], list[str], list[str]]:
    """The role, text and entry id of each of `messages`: `ContextTexts`' columns."""
    return [m.role for m in messages], [m.text for m in messages], [m.entry_id for m in messages]


def _take_last_model(context: SessionContext, entries: Entries, start: int, stop: int) -> None:
    """The model of the last assistant message among positions [start, stop), if any, as the
    context's (found at C speed over the messages' kind codes)."""
    codes = entries.message_kinds
    last = max(codes.rfind(code, start, stop) for code in (MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT))
    if last >= 0:
        message = entries[last]["message"]
        context.model = {"provider": message.get("provider"), "modelId": message.get("model")}


# What `_read_setting` says of the model: set by pi's `model_change` (a later assistant
# message's model wins over it), or by oh-my-pi's (`"model": "provider/id"`): omp's
# buildSessionContext takes no assistant's model once one is on the path (its issue #849: a
# retry fallback's or a downgraded reply's model is not the one the session resumes with).
_MODEL_SET = "set"
_MODEL_KEPT = "kept"
# ... or, oh-my-pi's "fallback" with no default `model_change` on the path (an older omp's
# session): omp's default is then the replies' model, every reply's counting (none was made
# explicit), so the last assistant's on the path, whatever came before.
_MODEL_REPLIES = "replies"
# oh-my-pi's `model_change` roles: "default" (also a missing role), a role's own model (its
# model picker's session-only "temporary", "smol", "slow" ...) and a retry's "fallback".
# omp resumes with the model of the last change's role (`getRestorableSessionModels`), the
# default's after a fallback.
_OMP_DEFAULT_ROLES = frozenset({"default", "fallback"})


def _model_found(model: str, index: int, explicit: bool) -> tuple[int, bool]:
    """After a setting entry at `index` that set the model (`_read_setting`'s answer `model`):
    where the last assistant's model may come from (after this index; -1: anywhere on the
    path) and whether no assistant's model counts any more (oh-my-pi's)."""
    if model is _MODEL_REPLIES:
        return -1, False
    return index, explicit or model is _MODEL_KEPT


def _read_setting(context: SessionContext, kind: str, entry: dict[str, Any]) -> str | None:
    """Apply a setting entry on the path (in path order) to `context`; `_MODEL_SET`,
    `_MODEL_KEPT` or `_MODEL_REPLIES` if it set the model, else None."""
    if kind == "thinking_level_change":
        context.thinking_level = entry.get("thinkingLevel")  # (null: see `_in_dialect`)
    elif kind == "model_change":
        model = {"provider": entry.get("provider"), "modelId": entry.get("modelId")}
        if isinstance(entry.get("model"), str):
            return _omp_model_change(context, entry.get("role"), model)
        if entry.get("role") in (None, "default"):
            context.model = model
            return _MODEL_SET
    elif kind == "mode_change":
        mode = entry.get("mode")
        context.mode = mode if isinstance(mode, str) else "none"
        context.mode_data = entry.get("data")
    elif kind == "ttsr_injection":
        rules = entry.get("injectedRules")
        for rule in rules if isinstance(rules, list) else ():
            if isinstance(rule, str) and rule not in context.injected_rules:
                context.injected_rules.append(rule)
    return None


def _omp_model_change(context: SessionContext, role: Any, model: dict[str, Any]) -> str | None:
    """An oh-my-pi `model_change` on the path: its role's model is remembered, and the
    context's model is the one omp resumes with after it (see `_OMP_DEFAULT_ROLES`)."""
    role = "default" if role is None else role
    if not isinstance(role, str):
        return None
    roles = context.role_models = context.role_models or {}
    roles[role] = model
    if role not in _OMP_DEFAULT_ROLES:
        context.model = model
    elif "default" in roles:
        context.model = roles["default"]
    else:  # (a fallback, no default: the last reply's, if any)
        context.model = None
        return _MODEL_REPLIES
    return _MODEL_KEPT


_NOT_MESSAGE_TYPES = _RELEVANT_TYPES - {"message"}


def _chain_tail(tree: SessionTree, target: str, tail: int) -> SessionContext:
    """`_context_at(tree, target, tail)` on a chain (the path is every entry up to
    `target`), without a list of the path: the few entries of the other types read are
    found at C speed, the last `tail` messages walked back to from the end, and the
    messages before them counted off the columns (slices)."""
    entries = tree.entries
    types, ids = entries.types, entries.ids
    end = tree.positions[target] + 1
    context = SessionContext(leaf_id=target)
    compaction = model_at = reset = -1
    explicit = False  # (as in `_context_candidates`)
    others = list(entries.positions_of_types(_NOT_MESSAGE_TYPES, end))  # (few)
    for position in others:
        kind = types[position]
        if kind == "compaction":
            compaction = position
        elif kind == RESET_TYPE:
            reset = position
        elif kind not in MESSAGE_TYPES and (model := _read_setting(context, kind, entries[position])):
            model_at, explicit = _model_found(model, position, explicit)
    if not explicit:  # the last assistant message, if after the last model_change (found at C speed)
        _take_last_model(context, entries, model_at + 1, end)
    windows = [(0, end)]  # where messages are kept: [start, stop) ranges of positions
    head: list[ContextMessage] = []
    if reset > compaction:  # oh-my-pi's `/clear` after the last compaction (if any)
        context.cleared_at = ids[reset]
        windows = [(reset + 1, end)]
    elif compaction >= 0:
        entry = context.compaction = entries[compaction]
        head.append(compaction_summary(entry))
        try:
            kept = ids.index(entry.get("firstKeptEntryId"), 0, compaction)
        except ValueError:
            kept = compaction
        context.kept_from = ids[kept]
        windows = [(kept, compaction), (compaction + 1, end)]
    made: list[ContextMessage] = []  # the last `tail`, made from the end back
    stop = end
    for start, window_end in reversed(windows):
        position = window_end
        while position > start and len(made) < tail:
            position -= 1
            kind = types[position]
            if kind.__class__ is str and kind in MESSAGE_TYPES and (message := _message_at(entries, position)):
                made.append(message)
        if len(made) >= tail:
            stop = position
            break
        stop = start
    made.reverse()
    omitted = 0  # the messages of the windows before `stop`
    for start, window_end in windows:
        window_end = min(window_end, stop)
        if window_end > start:
            omitted += _count_range(entries, start, window_end, others)
    if head and len(made) < tail:
        made[:0] = head
    else:
        omitted += len(head)
    context.messages, context.omitted = made, omitted
    return context


def _count_range(entries: Entries, start: int, stop: int, others: list[int]) -> int:
    """How many messages the entries at positions `start` to `stop` (a chain's) become:
    the `message` entries whose kind names a role counted off the columns; those of another
    role, and the custom messages and branch summaries among `others`, read."""
    types, codes = entries.types, entries.message_kinds
    count = sum(map(codes.count, _ROLE_OF_CODE, repeat(start), repeat(stop)))
    if types[start:stop].count("message") > count:  # (a message of another role: rare)
        position = codes.find(MESSAGE_OTHER, start, stop)
        while position >= 0:
            count += as_message(entries.peek(position)) is not None
            position = codes.find(MESSAGE_OTHER, position + 1, stop)
    for position in others[bisect_left(others, start) : bisect_left(others, stop)]:
        if types[position] in MESSAGE_TYPES:
            count += as_message(entries.peek(position)) is not None
    return count


def _message_at(entries: Entries, position: int) -> ContextMessage | None:
    """The message a candidate entry becomes (None: none), read without caching it."""
    role = _ROLE_OF_CODE.get(entries.message_kinds[position])
    entry = entries.peek(position)
    if role is not None:  # (a message whose `message` is an object with that role)
        return ContextMessage(role, entry["message"], entry["id"])
    return as_message(entry)


def _messages_at(entries: Entries, positions: list[int]) -> list[ContextMessage]:
    """The messages the candidate entries at `positions` become, in order."""
    messages: list[ContextMessage] = []
    add, role_of, peek, codes = messages.append, _ROLE_OF_CODE.get, entries.peek, entries.message_kinds
    for position in positions:
        role = role_of(codes[position])
        if role is not None:  # (a message whose `message` is an object with that role)
            entry = peek(position)
            add(ContextMessage(role, entry["message"], entry["id"]))
        elif message := as_message(peek(position)):
            add(message)
    return messages


def _count_messages(entries: Entries, positions: list[int]) -> int:
    """How many messages the candidate entries at `positions` become: those whose message
    kind names a role counted off the column (at C speed), only the others read."""
    codes = bytes(map(entries.message_kinds.__getitem__, positions))
    named = sum(map(codes.count, _ROLE_OF_CODE))
    if named == len(positions):
        return named
    others = (position for position, code in zip(positions, codes, strict=True) if code not in _ROLE_OF_CODE)
    return named + sum(1 for position in others if as_message(entries.peek(position)) is not None)
