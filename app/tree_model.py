"""The tree view's logic without a UI: which entries are visible, in what order, how they are drawn.

This follows pi's `/tree` selector (`tree-selector.ts`) rule for rule:

* order: depth-first pre-order, children oldest first, the child holding the current leaf
  first at every branch point (and the root holding it first among several roots);
* visibility: a filter mode (default / no-tools / user-only / labeled-only / all), a search
  (AND of lowercase substrings) and folds; text-less assistant messages (tool calls only) are
  always hidden unless they ended in an error/abort or are the current leaf.  Hidden entries
  are skipped structurally: a visible entry hangs under its nearest visible ancestor;
* drawing: 3 columns per level, single-child chains flat, `├─ `/`└─ ` connectors at branch
  points, `│` gutters, `⊟`/`⊞` fold markers, several roots under an invisible branching root.

Two deliberate differences: search covers an entry's *whole* text (pi cuts messages to their
first 200 characters), and each step is linear in the number of entries (pi walks ancestors
per entry), so a 20,000-entry session stays instant.  Nothing here imports Textual.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import compress, repeat
from operator import contains
from typing import Any

from seance.core.entries import (
    MESSAGE_ASSISTANT,
    MESSAGE_OTHER,
    MESSAGE_TEXTLESS_ASSISTANT,
    MESSAGE_TOOL_RESULT,
    MESSAGE_USER,
    NOT_A_MESSAGE,
    Entries,
)
from seance.core.errors import SessionChangedError
from seance.core.pathtotals import PathTotals
from seance.core.summary import (
    PENDING,
    Summary,
    ToolCallsFromEnd,
    format_tool_call,
    summarize,
    tool_call_blocks,
    tool_calls_by_id,
    tool_result_summary,
)
from seance.core.text import content_text, drop_escapes, message_text, user_run
from seance.core.timefmt import parse_time_ms
from seance.core.tree import SessionTree

CALLS_READ_BACK = 64
"""How many assistant messages a row drawn on the UI thread reads back for its tool result's
call while the search index's pass is on its way to every call (`TreeModel.summary`)."""

SEARCH_STOP_EVERY = 1024
"""How many entries the search index builds between two asks of its `stop` (a few ms)."""

CHANGED_SUMMARY = Summary("dim", "", "(the session file changed on disk: reopen it)")
"""A row whose entry can no longer be read back (see `TreeModel.source_changed`)."""

FILTERS: tuple[str, ...] = ("default", "no-tools", "user-only", "labeled-only", "all")
FILTER_TAGS: dict[str, str] = {
    "default": "",
    "no-tools": "[no-tools]",
    "user-only": "[user]",
    "labeled-only": "[labeled]",
    "all": "[all]",
}

# Bookkeeping entries hidden outside the `all` view (pi's list plus oh-my-pi's own types).
SETTINGS_TYPES = frozenset(
    {
        "label",
        "custom",
        "model_change",
        "thinking_level_change",
        "session_info",
        "service_tier_change",
        "title_change",
        "credential_pin",
        "session_init",
        "ttsr_injection",
        "mode_change",
        "reset_boundary",
        "leaf",
    }
)

# Per-entry categories (exclusive), computed once; filters are lookup tables over them.
_OTHER, _TEXTLESS_ASSISTANT, _SETTINGS, _TOOL_RESULT, _USER = range(5)
# Entry type → category, without looking into the entry; -1: a message (looked into).
_TYPE_CATEGORIES: dict[Any, int] = {kind: _SETTINGS for kind in SETTINGS_TYPES} | {"message": -1}
_ALLOWED: dict[str, tuple[bool, ...] | None] = {
    "default": (True, False, False, True, True),
    "no-tools": (True, False, False, False, True),
    "user-only": (False, False, False, False, True),
    "labeled-only": None,  # decided by the entry's label
    "all": (True, False, True, True, True),
}


@dataclass(frozen=True, slots=True)
class Gutter:
    """A vertical line at `position` (a level) that continues while its branch has siblings below."""

    position: int
    show: bool


@dataclass(slots=True)
class Row:
    """One visible entry and the shape of its tree prefix (built on demand, see `Rows`)."""

    id: str
    indent: int
    show_connector: bool
    is_last: bool
    gutters: tuple[Gutter, ...]
    virtual_root_child: bool
    active: bool = False  # on the path root → the session's leaf


class Rows(Sequence[Row]):
    """The visible rows, stored as parallel lists; a `Row` object is only made when asked for."""

    __slots__ = ("_active", "_connector", "_gutters", "_ids", "_indent", "_last", "_virtual")

    def __init__(
        self,
        ids: list[str],
        indent: list[int],
        connector: bytearray,
        last: bytearray,
        gutters: list[tuple[Gutter, ...]],
        virtual: bytearray,
        active: bytes = b"",
    ) -> None:
        self._ids, self._indent, self._connector = ids, indent, connector
        self._last, self._gutters, self._virtual = last, gutters, virtual
        self._active = active or bytes(len(ids))

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, index: int) -> Row:  # type: ignore[override]
        if index < 0:
            index += len(self._ids)
        return Row(
            self._ids[index],
            self._indent[index],
            bool(self._connector[index]),
            bool(self._last[index]),
            self._gutters[index],
            bool(self._virtual[index]),
            bool(self._active[index]),
        )

    def __iter__(self) -> Iterator[Row]:
        flags = (self._connector, self._last, self._virtual, self._active)
        connector, last, virtual, active = (map(bool, column) for column in flags)
        return map(Row, self._ids, self._indent, connector, last, self._gutters, virtual, active)

    @property
    def ids(self) -> list[str]:
        """The visible entry ids, in display order."""
        return self._ids

    @property
    def indents(self) -> list[int]:
        """Each row's indent level (`Row.indent`), in display order."""
        return self._indent


class _ShownUpTo(Sequence[int]):
    """Per position of a chain: the row of the last entry shown at or above it (-1: none),
    counted when asked for (one `count` of the filter's bytes, at C speed) instead of a list
    made for every position (~10 ms on 200,000 entries, before the tree screen's first draw);
    asked for only where the cursor is placed."""

    __slots__ = ("_shown",)

    def __init__(self, shown: bytearray) -> None:
        self._shown = shown

    def __len__(self) -> int:
        return len(self._shown)

    def __getitem__(self, position: int) -> int:  # type: ignore[override]
        if not -len(self._shown) <= position < len(self._shown):
            raise IndexError(position)
        return self._shown.count(1, 0, position % len(self._shown) + 1) - 1


def _both(first: bytearray, second: bytearray) -> bytearray:
    """Per byte, 1 where both of two equal-length columns of 0s and 1s hold 1 (one AND of
    their integers: no loop over the bytes)."""
    size = len(first)
    both = int.from_bytes(first, "little") & int.from_bytes(second, "little")
    return bytearray(both.to_bytes(size, "little"))


# The same as bytes: a message (whose category its kind decides) is 255.
_TYPE_BYTES: dict[Any, int] = {kind: category & 0xFF for kind, category in _TYPE_CATEGORIES.items()}

# A message's kind (read by the session reader, see `core.entries`) → its category here.
_MESSAGE_CATEGORIES = {
    MESSAGE_OTHER: _OTHER,
    MESSAGE_USER: _USER,
    MESSAGE_TOOL_RESULT: _TOOL_RESULT,
    MESSAGE_ASSISTANT: _OTHER,
    MESSAGE_TEXTLESS_ASSISTANT: _TEXTLESS_ASSISTANT,
}


def resume_point(
    entry: dict[str, Any], parent_id: str | None, leaf_id: str | None = None
) -> tuple[str | None, str | None]:
    """Where Enter on `entry` resumes, pi's `navigateTree` rule: (leaf id, text offered back).

    The session's own leaf (`leaf_id`) stays where it is, whatever it is: pi's `navigateTree`
    does nothing for it (its /tree says "Already at this point"), so a session that ends with
    an unanswered prompt is not resumed before it.  Otherwise a user message or custom message
    resumes *before* itself (at its parent, None for a root) and offers its text back for
    editing (none when it has no text, an image alone: pi fills the editor only `if
    (editorText)`); any other entry resumes at itself.
    """
    if leaf_id is not None and entry.get("id") == leaf_id:
        return leaf_id, None
    kind = entry.get("type")
    if kind == "custom_message":
        return parent_id, content_text(entry.get("content"), "") or None
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict) and message.get("role") == "user":
        return parent_id, content_text(message.get("content"), "") or None
    return entry["id"], None


class TreeModel:
    """The visible rows of a session tree under a filter, a search and folds, plus a cursor."""

    def __init__(
        self, tree: SessionTree, leaf_id: str | None = None, filter_mode: str = "default", *, every_entry: bool = False
    ) -> None:
        """`every_entry`: show every entry, text-less assistant messages too (`seance tree --text`)."""
        self.tree = tree
        self.leaf_id = leaf_id if leaf_id is not None else tree.leaf_id
        self.filter_mode = "all" if every_entry else filter_mode if filter_mode in FILTERS else "default"
        self.query = ""
        self.folded: set[str] = set()
        self.show_label_times = False  # pi's Shift+T: each label followed by when it was set
        # One walk gives the order, each entry's parent (a position) and its category.
        # Nothing else is kept per entry: `_position` is built on first need.
        self.order, self._parent_position, self._categories = self._ordered_preorder(every_entry)
        self._positions: Mapping[str, int] | None = None
        self._present: set[int] | None = None  # the categories present (`_shows_every_entry`)
        self._leaf_position = self._find_position(self.leaf_id) if self.leaf_id else -1
        self._active = self._active_flags()
        self._active_path: set[str] | None = None
        self._tool_calls: Mapping[str, dict[str, Any]] | None = None
        # Set by a screen while its worker's search index pass runs (it finds every tool
        # result's call): rows drawn meanwhile do not read far back for one (`summary`), and
        # `provisional` says a row was drawn without it (the screen draws it again after).
        self.calls_coming = False
        self.provisional = False
        self._summaries: dict[str, Summary] = {}
        self._search_texts: list[str] | None = None
        # The last search's answer (`_matching`): its texts, labels, tokens and matches.
        self._last_match: tuple[list[str] | None, tuple[tuple[str, str], ...], list[str], bytearray] | None = None
        # Set by a screen whose worker builds the search index (`prepare_search`): until it is
        # built a query leaves the rows unfiltered (`search_pending`) instead of building it
        # on the caller's thread (a UI thread would wait seconds on a 200,000-entry session).
        self.defer_search = False
        # Set when an entry read back from a big session's file no longer matches it (the
        # file was rewritten in place): rows then say so instead of showing other data, and
        # `on_source_changed` (a screen's hook, called from any thread) is told once.
        self.source_changed: SessionChangedError | None = None
        self.on_source_changed: Callable[[SessionChangedError], None] | None = None
        self.rows: Rows = Rows([], [], bytearray(), bytearray(), [], bytearray())
        self._index: dict[str, int] | None = None
        self._nearest_row: Sequence[int] = []  # per position: the row of its nearest visible ancestor-or-self
        self._row_parent: Sequence[int] = []
        self._kid_count: list[int] = []
        self._last_kid: list[int] = []
        self._roots: list[int] = []
        self._many_kids: dict[int, list[int]] | None = None
        self.multiple_roots = False
        self.cursor = 0
        self.version = 0  # bumped whenever rows or labels change (views redraw on it)
        self._remembered: str | None = None
        self._apply()
        start = self.leaf_id
        self.cursor = self.nearest_visible_index(start) if start else max(len(self.rows) - 1, 0)
        self._remembered = self.selected_id

    # -- order --------------------------------------------------------------------------

    def _ordered_preorder(self, every_entry: bool) -> tuple[list[str], Sequence[int], bytearray]:
        """All entry ids in pre-order, the branch holding the leaf first at every fork, each
        one's parent as a position in that order (-1 for a root), and each one's category
        (messages by the kind the reader noted, other types by a table: no entry decoded)."""
        textless = _OTHER if every_entry else _TEXTLESS_ASSISTANT
        if self.tree.is_chain:  # one chain in file order (most sessions): the order is the entries'
            return self._chain_preorder(textless)  # (no children map: each entry's is the next)
        children, roots, positions = self.tree.children, self.tree.roots, self.tree.positions
        entries = self.tree.entries
        types, kinds = entries.types, entries.message_kinds
        message_categories = _MESSAGE_CATEGORIES
        by_type = _TYPE_CATEGORIES
        only, many = children.only, children.many
        # Where the path to the leaf goes at each fork (and which root it starts from): only
        # a tree that forks anywhere needs the walk.
        forks = bool(many) or len(roots) > 1
        choices = self.tree.branch_choices(self.leaf_id) if self.leaf_id and forks else {}

        def active_first(ids: list[str], parent: str | None) -> list[str]:
            chosen = choices.get(parent) if len(ids) > 1 else None
            return ids if chosen is None else [chosen, *(entry_id for entry_id in ids if entry_id != chosen)]

        order: list[str] = []
        parents: list[int] = []
        categories = bytearray()
        add, add_parent, add_category = order.append, parents.append, categories.append
        stack = [(root, -1) for root in reversed(active_first(roots, None))]
        while stack:
            entry_id, up = stack.pop()
            while True:  # down a chain of only children without the stack: most of a session
                position = len(order)
                add(entry_id)
                add_parent(up)
                at = positions[entry_id]
                category = by_type.get(types[at], _OTHER)
                if category < 0:  # a message
                    category = message_categories[kinds[at]]
                    if category == _TEXTLESS_ASSISTANT:
                        category = textless
                add_category(category)
                kids = many.get(entry_id)
                if kids is not None:
                    stack.extend((kid, position) for kid in reversed(active_first(kids, entry_id)))
                    break
                kid = only.get(entry_id)
                if kid is None:
                    break
                entry_id, up = kid, position
        return order, parents, categories

    def _chain_preorder(self, textless: int) -> tuple[list[str], Sequence[int], bytearray]:
        """`_ordered_preorder` of a tree that is one chain in file order, a byte string at a
        time: each entry's category by its type (255 for a message) and by its message kind
        (255 for any other entry); one AND of the two gives every entry's."""
        entries = self.tree.entries
        kind_table = bytearray([255]) * 256
        for kind, category in _MESSAGE_CATEGORIES.items():
            kind_table[kind] = textless if category == _TEXTLESS_ASSISTANT else category
        by_kind = entries.message_kinds.translate(kind_table)
        count = len(by_kind)
        # (each entry's parent is the one before: a range, not a list of 200,000 ints)
        if NOT_A_MESSAGE not in entries.message_kinds:  # every entry a message (an agent's): the kinds say all
            return list(entries.ids), range(-1, count - 1), by_kind
        by_type = bytes(map(_TYPE_BYTES.get, entries.types, repeat(_OTHER)))
        both = int.from_bytes(by_type, "little") & int.from_bytes(by_kind, "little")
        return list(entries.ids), range(-1, count - 1), bytearray(both.to_bytes(count, "little"))

    def _active_flags(self) -> bytearray:
        """Per position: 1 on the path root → leaf (a walk up the parent positions; on a
        chain, every position up to the leaf's)."""
        position, parents = self._leaf_position, self._parent_position
        if self.tree.is_chain:  # (the order is the chain's, see `_ordered_preorder`)
            return bytearray(b"\x01") * (position + 1) + bytearray(len(self.order) - position - 1)
        flags = bytearray(len(self.order))
        while position >= 0:
            flags[position] = 1
            position = parents[position]
        return flags

    @property
    def active_path(self) -> set[str]:
        """The ids on the path root → leaf (built on first use; rows carry `active`)."""
        if self._active_path is None:
            self._active_path = set(compress(self.order, self._active))
        return self._active_path

    @property
    def _position(self) -> Mapping[str, int]:
        """Entry id → its position in `order` (built on first need: folds, search; a chain's
        order is the entries', so the tree's own positions answer)."""
        if self._positions is None:
            chain = self.tree.is_chain
            self._positions = self.tree.positions if chain else {entry: at for at, entry in enumerate(self.order)}
        return self._positions

    def _find_position(self, entry_id: str) -> int:
        """`entry_id`'s position in `order`, -1 if it has none (no map built for one lookup)."""
        if self._positions is not None:
            return self._positions.get(entry_id, -1)
        if self.tree.is_chain:  # (the order is the entries': the tree's positions find the leaf, and
            return self.tree.positions.get(entry_id, -1)  # ids near the last found, without a scan)
        try:
            return self.order.index(entry_id)
        except ValueError:
            return -1

    # -- search text --------------------------------------------------------------------

    @property
    def search_ready(self) -> bool:
        """Whether every entry's search text is built (`prepare_search`)."""
        return self._search_texts is not None

    @property
    def search_pending(self) -> bool:
        """A query waits for the search index (`defer_search`): the rows ignore it until
        `search_prepared` is called."""
        return self.defer_search and self._search_texts is None and bool(self.query.split())

    def prepare_search(self, stop: Callable[[], bool] | None = None) -> bool:
        """Build the search text of every entry now (thread-safe to call from a worker);
        `stop` is asked every `SEARCH_STOP_EVERY` entries: once it says so, the pass ends
        and nothing is kept.  True when the index is built."""
        if self._search_texts is None:
            try:
                texts = self._all_search_texts(stop)
            except SessionChangedError as error:  # nothing read from the file can be trusted now
                self.source_lost(error)
                texts = [""] * len(self.order)
            if texts is None:
                return False
            self._search_texts = texts
        return True

    def search_prepared(self) -> bool:
        """The search index a worker built is here (`prepare_search`): a query that waited
        for it (`search_pending` before) filters the rows now.  True if the rows changed."""
        if self._search_texts is None or not self.defer_search or not self.query.split():
            return False
        self._apply()
        return True

    def _all_search_texts(self, stop: Callable[[], bool] | None = None) -> list[str] | None:
        """Every entry's search text, in `order`: one pass decoding each entry once (not
        cached); None when `stop` ended it.

        A tool result's text starts with its call's row, and its call is the last one of its
        id in the file (`tool_calls_by_id`): those texts are finished after the pass, from the
        calls of the assistant messages the pass decodes anyway (not read back a second time
        by `tool_calls`, from the end to the first call asked for: every assistant message of
        the session, for the first tool result of a long one)."""
        tree, order = self.tree, self.order
        entries = tree.entries
        positions = tree.positions
        # (a chain's order is the entries': no id looked up)
        at: Sequence[int] = range(len(order)) if tree.is_chain else list(map(positions.__getitem__, order))
        texts: list[str] = []
        every = SEARCH_STOP_EVERY if stop is not None else len(order) + 1
        if len(order) != len(entries):  # (entries not in `order`: calls the pass would not see; the general way)
            build, peek = self._build_search_text, entries.peek
            for start in range(0, len(order), every):
                if stop is not None and stop():
                    return None
                part = zip(order[start : start + every], at[start : start + every], strict=True)
                texts.extend(build(entry_id, peek(position)) for entry_id, position in part)
            return texts
        with PathTotals.of(tree).chain_feed() as feed:  # (a chain's totals too: the preview's pass not made)
            return self._search_texts_pass(order, at, every, stop, feed)

    def _search_texts_pass(
        self,
        order: list[str],
        at: Sequence[int],
        every: int,
        stop: Callable[[], bool] | None,
        feed: Callable[[int, dict[str, Any]], None] | None,
    ) -> list[str] | None:
        """`_all_search_texts` when every entry is in `order`: each entry decoded once, its
        totals fed (`PathTotals.chain_feed`) on a chain."""
        tree = self.tree
        entries = tree.entries
        texts: list[str] = []
        codes, peek, summaries = entries.message_kinds, entries.peek, self._summaries
        assistants = (MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT)
        found: dict[str, dict[str, Any]] = {}  # call id -> its last call block in file order
        where: dict[str, int] = {}  # (out of file order: call id -> the position of that block)
        in_file_order = tree.is_chain
        # The tool results' indexes, call ids and tool names (flat: no container made per result).
        result_at: list[int] = []
        result_calls: list[Any] = []
        result_tools: list[Any] = []
        add_text = texts.append
        for index, (entry_id, position) in enumerate(zip(order, at, strict=True)):
            if not index % every and stop is not None and stop():
                return None
            entry = peek(position)
            if feed is not None:
                feed(position, entry)
            code = codes[position]
            if code == MESSAGE_TOOL_RESULT and entry_id not in summaries:
                message = entry["message"]  # (a tool result's kind: a `message` whose `message` is an object)
                result_at.append(index)
                result_calls.append(message.get("toolCallId"))
                result_tools.append(message.get("toolName"))
                add_text(self._search_text_after(message))
                continue
            if code in assistants:
                for block in tool_call_blocks(entry["message"]):
                    call_id = block["id"]
                    if in_file_order or where.get(call_id, -1) <= position:
                        found[call_id] = block
                        if not in_file_order:
                            where[call_id] = position
            add_text(self._build_search_text(entry_id, entry))
        for index, call_id, tool_name in zip(result_at, result_calls, result_tools, strict=True):
            summary = summaries[order[index]] = tool_result_summary(call_id, tool_name, found)
            # (`" ".join(parts).lower()` a part at a time: no character's lowercase depends
            # on what is across a space, see `_build_search_text`)
            texts[index] = f"{summary.plain().lower()} {texts[index]}"
        return texts

    def _search_text_after(self, message: dict[str, Any]) -> str:
        """The search text of a message after its row's text (`_build_search_text` without
        its first part), lowercase."""
        parts = [str(message.get("role") or ""), message_text(message)]  # (a summary message: its summary)
        if run := user_run(message):  # (what the preview shows of a run: what was run, its output)
            parts += [str(run[1] or ""), str(run[2] or "")]
        elif message.get("role") == "custom":  # (its type: the preview's title, `[ext-a]`)
            parts.append(str(message.get("customType") or ""))
        error = message.get("errorMessage")
        if isinstance(error, str) and error:  # (the body the preview shows a failed message with)
            parts.append(error)
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                parts.append(format_tool_call(block.get("name"), block.get("arguments")))
        return drop_escapes(" ".join(parts)).lower()

    def source_lost(self, error: SessionChangedError) -> None:
        """The session's file changed under it: remember it and tell the screen, once."""
        if self.source_changed is None:
            self.source_changed = error
            if self.on_source_changed is not None:
                self.on_source_changed(error)

    def search_text(self, entry_id: str) -> str:
        """The lowercase text a search runs over: label, role/type words and the whole text."""
        self.prepare_search()
        assert self._search_texts is not None
        text = self._search_texts[self._position[entry_id]]
        label = self.tree.labels.get(entry_id)
        return f"{label.lower()} {text}" if label else text

    def _build_search_text(self, entry_id: str, entry: dict[str, Any]) -> str:
        kind = entry.get("type")
        if kind == "message" and isinstance(message := entry.get("message"), dict):
            after = self._search_text_after(message)
            if message.get("role") == "toolResult" or user_run(message):  # `[bash]: ls -la`, `[read: path]`
                return f"{self.summary(entry_id, entry).plain().lower()} {after}"
            return after
        parts: list[str] = []
        if kind == "custom_message":
            parts.append(str(entry.get("customType") or ""))
            parts.append(content_text(entry.get("content"), "\n"))
        elif kind == "branch_summary":
            parts.append(f"branch summary {entry.get('summary') or ''}")
        elif kind == "compaction":  # its row, and the summary the preview shows
            summary = entry.get("summary")
            parts += [self.summary(entry_id, entry).plain(), summary if isinstance(summary, str) else ""]
        else:  # every other type (unknown ones too) is searched as its row reads: core.summary is the one table
            parts.append(self.summary(entry_id, entry).plain())
        return drop_escapes(" ".join(parts)).lower()  # (what the row and preview show)

    # -- visibility ---------------------------------------------------------------------

    def _apply(self) -> None:
        """Recompute the visible rows, keeping the cursor on its entry (or nearest visible ancestor).

        One pass over the pre-order: an entry hidden by a fold hides its subtree; a visible
        entry's visible parent is the nearest visible ancestor (carried down in `nearest`).
        """
        self.version += 1
        if self.rows:
            self._remembered = self.rows.ids[self.cursor]
        order, parents, categories = self.order, self._parent_position, self._categories
        labels = self.tree.labels
        allowed = _ALLOWED[self.filter_mode]
        leaf = self._leaf_position
        folded = {self._position[entry_id] for entry_id in self.folded if entry_id in self._position}
        tokens = self.query.lower().split()
        if tokens and self._search_texts is None:
            if self.defer_search:  # (never built here: the screen's worker builds it, `search_prepared`)
                tokens = []
            else:
                self.prepare_search()
        if not folded and not tokens and self._shows_every_entry(allowed):  # `tree --text`, filter "all"
            self._nearest_row = range(len(order))  # (ranges, not lists of every position: nothing
            self._layout(range(len(order)), parents)  # changes them, and they are read by index)
            self._keep_cursor()
            return
        matched = self._matching(tokens) if tokens else None
        if not folded and allowed is not None and self.tree.is_chain:  # the screen's first filter, and a search
            self._apply_chain(allowed, matched)
            return
        # nearest[position]: the row of the entry's nearest visible ancestor-or-self (-1: none);
        # it also places a hidden entry's cursor (`nearest_visible_index`).
        nearest = [-1] * len(order)
        blocked = bytearray(len(order))
        visible: list[int] = []
        visible_parent: list[int] = []  # rows
        show, add_parent = visible.append, visible_parent.append
        for position, up in enumerate(parents):  # the hot loop: millions of entries
            if up >= 0:
                if blocked[up] or up in folded:
                    blocked[position] = 1
                    nearest[position] = nearest[up]
                    continue
                above = nearest[up]
            else:
                above = -1
            category = categories[position]
            if category == _TEXTLESS_ASSISTANT and position != leaf:
                shown = False
            elif allowed is None:
                shown = order[position] in labels
            else:
                shown = allowed[_OTHER if category == _TEXTLESS_ASSISTANT else category]
            if shown and matched is not None:
                shown = matched[position] == 1
            if shown:
                nearest[position] = len(visible)
                show(position)
                add_parent(above)
            else:
                nearest[position] = above
        self._nearest_row = nearest
        self._layout(visible, visible_parent)
        self._keep_cursor()

    def _apply_chain(self, allowed: tuple[bool, ...], matched: bytearray | None = None) -> None:
        """`_apply` on one chain (the order is the file's) with no fold: which entries are rows
        is a table lookup per category (bytes.translate), and those a search `matched`
        (`_matching`), each row's parent is the row before, and an entry's nearest visible
        ancestor-or-self is the last row at or above it (a running count): made a column at a
        time."""
        table = bytearray(256)
        for category in (_OTHER, _SETTINGS, _TOOL_RESULT, _USER):
            table[category] = allowed[category]
        shown = bytearray(self._categories.translate(table))
        leaf = self._leaf_position
        if leaf >= 0 and self._categories[leaf] == _TEXTLESS_ASSISTANT:  # (hidden but at the leaf)
            shown[leaf] = allowed[_OTHER]
        if matched is not None:
            shown = _both(shown, matched)
        visible = list(compress(range(len(shown)), shown))
        self._nearest_row = _ShownUpTo(shown)
        self._layout(visible, range(-1, len(visible) - 1))
        self._keep_cursor()

    def _matching(self, tokens: list[str]) -> bytearray:
        """Per position in `order`: 1 where the entry's search text (after its label, if it has
        one) holds every one of `tokens`, else 0.  At C speed, a token at a time: the test made
        per entry in `_apply`'s loop was ~1 µs of the UI thread each, 200-300 ms a key in the
        search of a 200,000-entry session.  A query that narrows the last one (a key typed at
        its end: every earlier token is in one of its tokens) tests only the texts the last one
        matched: the rest cannot match."""
        texts: Sequence[str] = self._search_texts or [""] * len(self.order)
        labels = tuple(self.tree.labels.items())
        if labels:  # (a few: those texts alone are made again, on a copy of the list)
            texts = list(texts)
            positions = self._position  # (a map: a scan of `order` per label was ~1 ms each on a branched tree)
            for entry_id, label in labels:
                position = positions.get(entry_id, -1)
                if position >= 0:
                    texts[position] = f"{label.lower()} {texts[position]}"
        last = self._last_match
        if (
            last is not None
            and last[0] is self._search_texts
            and last[1] == labels
            and all(any(old in new for new in tokens) for old in last[2])
        ):
            candidates: list[int] = list(compress(range(len(texts)), last[3]))
            for token in tokens:
                found = map(contains, map(texts.__getitem__, candidates), repeat(token))
                candidates = list(compress(candidates, found))
            matched = bytearray(len(texts))
            deque(map(matched.__setitem__, candidates, repeat(1)), maxlen=0)  # (set at C speed)
        else:
            matched = bytearray(map(contains, texts, repeat(tokens[0])))
            for token in tokens[1:]:
                matched = _both(matched, bytearray(map(contains, texts, repeat(token))))
        self._last_match = (self._search_texts, labels, tokens, matched)
        return matched

    def _shows_every_entry(self, allowed: tuple[bool, ...] | None) -> bool:
        """Whether the filter shows every category present (a text-less assistant message,
        hidden but at the leaf, counts as not): then every entry is a row, in order."""
        if allowed is None:
            return False
        present = self._present
        if present is None:
            present = self._present = set(self._categories)  # (a few values, counted at C speed; fixed)
        return _TEXTLESS_ASSISTANT not in present and all(allowed[category] for category in present)

    def _keep_cursor(self) -> None:
        """After the rows changed: the cursor back on its entry (or its nearest visible ancestor)."""
        if self.rows:
            if self._remembered is not None:
                self.cursor = self.nearest_visible_index(self._remembered)
            else:
                self.cursor = min(self.cursor, len(self.rows) - 1)
            self._remembered = self.rows.ids[self.cursor]
        else:
            self.cursor = 0

    def _layout(self, visible: Sequence[int], row_parent: Sequence[int]) -> None:
        """Indentation, connectors and gutters of the visible forest (pi's rules), in two
        passes over the rows: count each row's children, then lay each row out from its parent's
        layout (a parent comes before its children)."""
        count = len(visible)
        if self._is_chain_rows(row_parent):  # one chain: no fork, no gutter
            self._layout_chain(visible, row_parent)
            return
        kid_count = [0] * count
        last_kid = [-1] * count
        roots: list[int] = []
        for row, up in enumerate(row_parent):
            if up < 0:
                roots.append(row)
            else:
                kid_count[up] += 1
                last_kid[up] = row
        multiple_roots = len(roots) > 1
        indent = [0] * count
        just_branched = bytearray(count)
        connector = bytearray(count)
        last = bytearray(count)
        virtual = bytearray(count)
        gutters: list[tuple[Gutter, ...]] = [()] * count
        for root in roots:
            indent[root] = 1 if multiple_roots else 0
            just_branched[root] = connector[root] = virtual[root] = multiple_roots
        if roots:
            last[roots[-1]] = 1
        branch_gutters: dict[int, tuple[Gutter, ...]] = {}  # a connector row's children's gutters
        for row, up in enumerate(row_parent):  # the hot loop: every visible row
            if up < 0:
                continue
            multiple = kid_count[up] > 1
            level = indent[up]
            indent[row] = level + 1 if multiple or (just_branched[up] and level > 0) else level
            if connector[up] and not virtual[up]:
                child_gutters = branch_gutters.get(up)
                if child_gutters is None:
                    display_indent = max(0, level - 1) if multiple_roots else level
                    child_gutters = (*gutters[up], Gutter(max(0, display_indent - 1), not last[up]))
                    branch_gutters[up] = child_gutters
                gutters[row] = child_gutters
            else:
                gutters[row] = gutters[up]
            if multiple:
                just_branched[row] = connector[row] = 1
            if last_kid[up] == row:
                last[row] = 1
        self._set_rows(visible, indent, connector, last, gutters, virtual)
        self._row_parent = row_parent
        self._kid_count = kid_count
        self._last_kid = last_kid
        self._roots = roots
        self._many_kids = None
        self.multiple_roots = multiple_roots

    def _is_chain_rows(self, row_parent: Sequence[int]) -> bool:
        """Whether each row is the only child of the row above (compared at C speed)."""
        chain = range(-1, len(row_parent) - 1)  # (a range equals a range, never a list)
        return bool(row_parent) and row_parent == (chain if isinstance(row_parent, range) else list(chain))

    def _layout_chain(self, visible: Sequence[int], row_parent: Sequence[int]) -> None:
        """`_layout` of rows that form one chain (each row the only child of the row above):
        what its passes would give, made a column at a time."""
        count = len(visible)
        last = bytearray(b"\x01") * count  # (each row its parent's last child)
        self._set_rows(visible, [0] * count, bytearray(count), last, [()] * count, bytearray(count))
        self._row_parent = row_parent
        self._kid_count = [1] * (count - 1) + [0]
        self._last_kid = [*range(1, count), -1]
        self._roots = [0]
        self._many_kids = None
        self.multiple_roots = False

    def _set_rows(
        self,
        visible: Sequence[int],
        indent: list[int],
        connector: bytearray,
        last: bytearray,
        gutters: list[tuple[Gutter, ...]],
        virtual: bytearray,
    ) -> None:
        """`visible`: the positions shown, ascending (as long as the order: every one)."""
        order, flags, count = self.order, self._active, len(visible)
        if count == len(order):  # every entry a row (an agent's session under the screen's first filter)
            ids, active = list(order), bytes(flags)
        else:
            ids = list(map(order.__getitem__, visible))
            if self.tree.is_chain:  # (the path to the leaf: every position up to the leaf's)
                above = bisect_right(visible, self._leaf_position)
                active = b"\x01" * above + bytes(count - above)
            else:
                active = bytes(map(flags.__getitem__, visible))
        self.rows = Rows(ids, indent, connector, last, gutters, virtual, active)
        self._index = None

    @property
    def index(self) -> dict[str, int]:
        """Visible entry id → its row (built on first need)."""
        if self._index is None:
            self._index = {entry_id: row for row, entry_id in enumerate(self.rows.ids)}
        return self._index

    def _kids(self, row: int) -> list[int]:
        """The visible children rows of a row (the visible roots for -1), in order."""
        if row < 0:
            return self._roots
        count = self._kid_count[row]
        if count < 2:
            return [self._last_kid[row]] if count else []
        if self._many_kids is None:  # the rows with several children, all at once
            many: dict[int, list[int]] = {}
            kid_count = self._kid_count
            for kid, up in enumerate(self._row_parent):
                if up >= 0 and kid_count[up] > 1:
                    many.setdefault(up, []).append(kid)
            self._many_kids = many
        return self._many_kids[row]

    # -- queries ------------------------------------------------------------------------

    @property
    def selected_id(self) -> str | None:
        return self.rows.ids[self.cursor] if self.rows else None

    def visible_parent(self, entry_id: str) -> str | None:
        """The nearest visible ancestor of a visible entry (None for a visible root)."""
        up = self._row_parent[self.index[entry_id]]
        return self.rows.ids[up] if up >= 0 else None

    def visible_children(self, entry_id: str | None) -> list[str]:
        """Visible children of a visible entry (or the visible roots for None), in order."""
        row = -1 if entry_id is None else self.index[entry_id]
        return [self.rows.ids[kid] for kid in self._kids(row)]

    def nearest_visible_index(self, entry_id: str) -> int:
        """Row of `entry_id`, else of its nearest visible ancestor, else the last row (pi)."""
        if not self.rows:
            return 0
        position = self._leaf_position if entry_id == self.leaf_id else self._find_position(entry_id)
        row = self._nearest_row[position] if position >= 0 else -1
        return row if row >= 0 else len(self.rows) - 1

    def is_foldable(self, entry_id: str) -> bool:
        """Has visible children and is a root or the first entry of a branch segment."""
        row = self.index.get(entry_id)
        if row is None or not self._kid_count[row]:
            return False
        up = self._row_parent[row]
        return up < 0 or self._kid_count[up] > 1

    @property
    def tool_calls(self) -> Mapping[str, dict[str, Any]]:
        """toolCallId → its call, to summarise tool results: `tool_calls_by_id`, over a
        session's `Entries` read from the end only as far as the rows summarised need (the
        first screen, at the leaf, needs the last few calls; see `ToolCallsFromEnd`)."""
        if self._tool_calls is None:
            entries = self.tree.entries
            self._tool_calls = ToolCallsFromEnd(entries) if isinstance(entries, Entries) else tool_calls_by_id(entries)
        return self._tool_calls

    def summary(self, entry_id: str, entry: dict[str, Any] | None = None, *, waits: bool = True) -> Summary:
        """The entry's one-line rendering (cached; tool results resolved to their calls);
        `entry`: the entry itself, when the caller has it decoded.  Without `waits` (a row
        drawn on the UI thread) while `calls_coming`, a tool result whose call is further back
        than `CALLS_READ_BACK` assistant messages is summarised by its tool's name alone, not
        kept, and `provisional` says one was: the search index's pass finds every call."""
        cached = self._summaries.get(entry_id)
        if cached is None:
            if self.source_changed is not None and entry is None:
                return CHANGED_SUMMARY
            try:
                entry = self.tree.by_id[entry_id] if entry is None else entry
                if not waits and self.calls_coming and (provisional := self._provisional(entry)) is not None:
                    return provisional
                cached = summarize(entry, self.tool_calls)
            except SessionChangedError as error:
                self.source_lost(error)
                return CHANGED_SUMMARY
            self._summaries[entry_id] = cached
        return cached

    def _provisional(self, entry: dict[str, Any]) -> Summary | None:
        """A tool result's summary by its tool's name when its call is not within
        `CALLS_READ_BACK` assistant messages, or not read yet once a row was provisional
        (None: the entry's own summary is at hand).
        Down from the leaf to the top of a 200,000-message session read every assistant
        message back on the UI thread (~1 s) before the row could be drawn."""
        message = entry.get("message") if entry.get("type") == "message" else None
        if not isinstance(message, dict) or message.get("role") != "toolResult":
            return None
        calls, call_id = self.tool_calls, message.get("toolCallId")
        if not isinstance(calls, ToolCallsFromEnd) or not isinstance(call_id, str):
            return None
        # (once a row waits for its call, the others read nothing back: a frame reads at most that many)
        if calls.lookup(call_id, 0 if self.provisional else CALLS_READ_BACK) is not PENDING:
            return None
        self.provisional = True
        return tool_result_summary(None, message.get("toolName"), {})

    def prefix(self, row: Row, *, fold_marks: bool = True) -> tuple[str, str]:
        """(tree prefix, fold marker) for a row: `│  ├⊟ ` and `⊞ ` for a folded root (`├─ ` without fold marks)."""
        display_indent = max(0, row.indent - 1) if self.multiple_roots else row.indent
        connector = row.show_connector and not row.virtual_root_child
        folded = row.id in self.folded
        if not display_indent:  # a chain at the top: most rows of a long session
            return "", ("⊞ " if folded and not connector else "")
        connector_position = display_indent - 1 if connector else -1
        chars: list[str] = []
        gutters = {gutter.position: gutter.show for gutter in row.gutters}
        for level in range(display_indent):
            show = gutters.get(level)
            if show is not None:
                chars.append("│  " if show else "   ")
            elif level == connector_position:
                mark = "─" if not fold_marks else "⊞" if folded else ("⊟" if self.is_foldable(row.id) else "─")
                chars.append(("└" if row.is_last else "├") + mark + " ")
            else:
                chars.append("   ")
        return "".join(chars), ("⊞ " if folded and not connector else "")

    def row_text(self, row: Row, now: datetime | None = None) -> str:
        """The whole row as plain text (no cursor): prefix, markers, label (and its time) and summary."""
        prefix, fold = self.prefix(row)
        active = "• " if row.active else ""
        label = self.tree.labels.get(row.id)
        when = self.label_time(row.id, now or datetime.now(UTC))
        return f"{prefix}{fold}{active}{f'[{label}] ' if label else ''}{when}{self.summary(row.id).plain()}"

    def label_time(self, entry_id: str, now: datetime) -> str:
        """`"14:05 "` after a label while label times are shown (pi's Shift+T), else ``""``."""
        if not self.show_label_times or entry_id not in self.tree.labels:
            return ""
        text = format_label_time(self.tree.label_times.get(entry_id), now)
        return f"{text} " if text else ""

    def toggle_label_times(self) -> None:
        self.show_label_times = not self.show_label_times
        self.version += 1

    def status(self) -> str:
        """pi's footer: `(i/N)` plus the filter tag (and `[+label time]` while label times show)."""
        tag = FILTER_TAGS[self.filter_mode]
        position = f"({self.cursor + 1 if self.rows else 0}/{len(self.rows)})"
        times = " [+label time]" if self.show_label_times else ""
        return f"{position} {tag}".rstrip() + times

    # -- cursor -------------------------------------------------------------------------

    def _select(self, position: int) -> None:
        if self.rows:
            self.cursor = max(0, min(position, len(self.rows) - 1))
            self._remembered = self.rows.ids[self.cursor]

    def select_id(self, entry_id: str) -> None:
        self._select(self.nearest_visible_index(entry_id))

    def move(self, delta: int) -> None:
        """Up/down by one, wrapping around at both ends."""
        if self.rows:
            self._select((self.cursor + delta) % len(self.rows))

    def page(self, delta: int, height: int) -> None:
        """Page by `height` rows (no wrap)."""
        self._select(self.cursor + delta * max(1, height))

    def home(self) -> None:
        self._select(0)

    def end(self) -> None:
        self._select(len(self.rows) - 1)

    def fold_or_up(self) -> None:
        """Fold the selected entry if it can be folded, else jump up to the previous segment start."""
        selected = self.selected_id
        if selected is None:
            return
        if self.is_foldable(selected) and selected not in self.folded:
            self.folded.add(selected)
            self._apply()
        else:
            self._select(self._segment_start("up"))

    def unfold_or_down(self) -> None:
        """Unfold the selected entry if folded, else jump down to the next branch point."""
        selected = self.selected_id
        if selected is None:
            return
        if selected in self.folded:
            self.folded.discard(selected)
            self._apply()
        else:
            self._select(self._segment_start("down"))

    def _segment_start(self, direction: str) -> int:
        """pi's `findBranchSegmentStart`: a segment start is the first row after a branch point."""
        kid_count, parents = self._kid_count, self._row_parent
        current = self.cursor
        if direction == "down":
            while True:
                if not kid_count[current]:
                    return current
                if kid_count[current] > 1:
                    return self._kids(current)[0]
                current = self._last_kid[current]
        while True:
            up = parents[current]
            if up < 0:
                return current
            if kid_count[up] > 1 and current < self.cursor:
                return current
            current = up

    # -- filters, search, labels --------------------------------------------------------

    def set_filter(self, mode: str) -> None:
        """Switch to a filter mode; like every filter change it clears the folds."""
        if mode not in FILTERS:
            raise ValueError(f"unknown filter {mode!r}")
        self.filter_mode = mode
        self.folded.clear()
        self._apply()

    def toggle_filter(self, mode: str) -> None:
        """pi's Ctrl+T/U/L/A: toggle between `mode` and default (Ctrl+D always sets default)."""
        self.set_filter("default" if self.filter_mode == mode or mode == "default" else mode)

    def cycle_filter(self, step: int = 1) -> None:
        self.set_filter(FILTERS[(FILTERS.index(self.filter_mode) + step) % len(FILTERS)])

    def restore_folds(self, entry_ids: set[str]) -> None:
        """Fold these entries again (those shown as rows now): a tree read again keeps its
        folds.  (A fold on an entry the filter hides now would hide its branch with no row
        to unfold it from.)"""
        folded = {entry_id for entry_id in entry_ids if entry_id in self.index}
        if folded != self.folded:
            self.folded = folded
            self._apply()

    def set_query(self, query: str) -> None:
        """Change the search; like pi, every search change clears the folds."""
        if query != self.query:
            self.query = query
            self.folded.clear()
            self._apply()

    def set_label(self, entry_id: str, label: str | None, timestamp: str | None = None) -> None:
        """Reflect a label change written to disk (empty/None clears it); `timestamp`: the label entry's."""
        text = (label or "").strip()
        if text:
            self.tree.labels[entry_id] = text
            self.tree.label_times[entry_id] = timestamp
        else:
            self.tree.labels.pop(entry_id, None)
            self.tree.label_times.pop(entry_id, None)
        self.version += 1
        if self.filter_mode == "labeled-only" or self.query:
            self._apply()

    def visible_ids(self) -> list[str]:
        return self.rows.ids


def format_label_time(timestamp: Any, now: datetime) -> str:
    """pi's `formatLabelTimestamp`, in local time: `14:05` today, `3/7 14:05` this year, else `24/3/7 14:05`."""
    ms = parse_time_ms(timestamp)
    if ms is None:
        return ""
    try:
        when = datetime.fromtimestamp(ms / 1000, UTC).astimezone()
    except (OverflowError, OSError, ValueError):
        return ""
    today = now.astimezone()
    clock = f"{when.hour:02d}:{when.minute:02d}"
    if when.date() == today.date():
        return clock
    if when.year == today.year:
        return f"{when.month}/{when.day} {clock}"
    return f"{when.year % 100:02d}/{when.month}/{when.day} {clock}"
