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

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from seance.core.summary import Summary, format_tool_call, summarize, tool_calls_by_id
from seance.core.text import content_text
from seance.core.timefmt import parse_time_ms
from seance.core.tree import SessionTree

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


class Rows(Sequence[Row]):
    """The visible rows, stored as parallel lists; a `Row` object is only made when asked for."""

    __slots__ = ("_connector", "_gutters", "_ids", "_indent", "_last", "_virtual")

    def __init__(
        self,
        ids: list[str],
        indent: list[int],
        connector: bytearray,
        last: bytearray,
        gutters: list[tuple[Gutter, ...]],
        virtual: bytearray,
    ) -> None:
        self._ids, self._indent, self._connector = ids, indent, connector
        self._last, self._gutters, self._virtual = last, gutters, virtual

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
        )

    @property
    def ids(self) -> list[str]:
        """The visible entry ids, in display order."""
        return self._ids


def _has_text(content: Any) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and text.strip():
                    return True
    return False


def _category(entry: dict[str, Any]) -> int:
    kind = entry.get("type")
    if kind != "message":  # most entries are messages: test that first
        return _SETTINGS if kind in SETTINGS_TYPES else _OTHER
    message = entry.get("message")
    if not isinstance(message, dict):
        return _OTHER
    role = message.get("role")
    if role == "user":
        return _USER
    if role == "toolResult":
        return _TOOL_RESULT
    if role == "assistant" and not _has_text(message.get("content")):
        stop = message.get("stopReason")
        if not stop or stop in ("stop", "toolUse"):  # an error or abort stays visible
            return _TEXTLESS_ASSISTANT
    return _OTHER


def resume_point(entry: dict[str, Any], parent_id: str | None) -> tuple[str | None, str | None]:
    """Where Enter on `entry` resumes, pi's `navigateTree` rule: (leaf id, text offered back).

    A user message or custom message resumes *before* itself (at its parent, None for a
    root) and offers its text back for editing; any other entry resumes at itself.
    """
    kind = entry.get("type")
    if kind == "custom_message":
        return parent_id, content_text(entry.get("content"), "")
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict) and message.get("role") == "user":
        return parent_id, content_text(message.get("content"), "")
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
        self.active_path: set[str] = tree.ancestors(self.leaf_id) if self.leaf_id else set()
        self.order = self._ordered_preorder()
        self._position = {entry_id: position for position, entry_id in enumerate(self.order)}
        parent, position, by_id = tree.parent, self._position, tree.by_id
        self._parent_position = [-1 if (up := parent[entry_id]) is None else position[up] for entry_id in self.order]
        self._categories = [_category(by_id[entry_id]) for entry_id in self.order]
        if every_entry:
            self._categories = [_OTHER if kind == _TEXTLESS_ASSISTANT else kind for kind in self._categories]
        self._leaf_position = position.get(self.leaf_id, -1) if self.leaf_id else -1
        self._tool_calls: dict[str, dict[str, Any]] | None = None
        self._summaries: dict[str, Summary] = {}
        self._search_texts: list[str] | None = None
        self.rows: Rows = Rows([], [], bytearray(), bytearray(), [], bytearray())
        self.index: dict[str, int] = {}
        self._row_parent: list[int] = []
        self._row_children: dict[int, list[int]] = {}
        self.multiple_roots = False
        self.cursor = 0
        self.version = 0  # bumped whenever rows or labels change (views redraw on it)
        self._remembered: str | None = None
        self._apply()
        start = self.leaf_id
        self.cursor = self.nearest_visible_index(start) if start else max(len(self.rows) - 1, 0)
        self._remembered = self.selected_id

    # -- order --------------------------------------------------------------------------

    def _ordered_preorder(self) -> list[str]:
        """All entry ids in pre-order, the branch holding the leaf first at every fork."""
        active = self.active_path
        children = self.tree.children

        def active_first(ids: list[str]) -> list[str]:
            if len(ids) < 2 or not active:
                return ids
            first = [entry_id for entry_id in ids if entry_id in active]
            return first + [entry_id for entry_id in ids if entry_id not in active] if first else ids

        order: list[str] = []
        stack = list(reversed(active_first(self.tree.roots)))
        while stack:
            entry_id = stack.pop()
            order.append(entry_id)
            kids = children.get(entry_id)
            if kids:
                stack.extend(reversed(active_first(kids)))
        return order

    # -- search text --------------------------------------------------------------------

    def prepare_search(self) -> None:
        """Build the search text of every entry now (thread-safe to call from a worker)."""
        if self._search_texts is None:
            self._search_texts = [self._build_search_text(entry_id) for entry_id in self.order]

    def search_text(self, entry_id: str) -> str:
        """The lowercase text a search runs over: label, role/type words and the whole text."""
        self.prepare_search()
        assert self._search_texts is not None
        text = self._search_texts[self._position[entry_id]]
        label = self.tree.labels.get(entry_id)
        return f"{label.lower()} {text}" if label else text

    def _build_search_text(self, entry_id: str) -> str:
        entry = self.tree.by_id[entry_id]
        kind = entry.get("type")
        parts: list[str] = []
        if kind == "message" and isinstance(message := entry.get("message"), dict):
            if message.get("role") in ("toolResult", "bashExecution"):
                parts.append(self.summary(entry_id).plain())  # `[bash: ls -la]`, `[read: path]`
            parts.append(str(message.get("role") or ""))
            parts.append(content_text(message.get("content"), "\n"))
            if message.get("role") == "bashExecution":
                parts.append(str(message.get("command") or ""))
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    parts.append(format_tool_call(block.get("name"), block.get("arguments")))
        elif kind == "custom_message":
            parts.append(str(entry.get("customType") or ""))
            parts.append(content_text(entry.get("content"), "\n"))
        elif kind == "branch_summary":
            parts.append(f"branch summary {entry.get('summary') or ''}")
        else:  # every other type (unknown ones too) is searched as its row reads: core.summary is the one table
            parts.append(self.summary(entry_id).plain())
        return " ".join(parts).lower()

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
        if tokens:
            self.prepare_search()
        texts = self._search_texts or []
        nearest = [-1] * len(order)
        blocked = bytearray(len(order))
        visible: list[int] = []
        visible_parent: list[int] = []
        for position, up in enumerate(parents):
            if up >= 0:
                if blocked[up] or up in folded:
                    blocked[position] = 1
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
            if shown and tokens:
                text = texts[position]
                label = labels.get(order[position])
                if label:
                    text = f"{label.lower()} {text}"
                shown = all(token in text for token in tokens)
            if shown:
                nearest[position] = position
                visible.append(position)
                visible_parent.append(above)
            else:
                nearest[position] = above
        self._layout(visible, visible_parent)
        if self.rows:
            if self._remembered is not None:
                self.cursor = self.nearest_visible_index(self._remembered)
            else:
                self.cursor = min(self.cursor, len(self.rows) - 1)
            self._remembered = self.rows.ids[self.cursor]
        else:
            self.cursor = 0

    def _layout(self, visible: list[int], visible_parent: list[int]) -> None:
        """Indentation, connectors and gutters of the visible forest (pi's rules, one pass)."""
        count = len(visible)
        row_of = {position: row for row, position in enumerate(visible)}
        row_parent = [row_of[up] if up >= 0 else -1 for up in visible_parent]
        children: dict[int, list[int]] = {-1: []}
        for row, up in enumerate(row_parent):
            kids = children.get(up)
            if kids is None:
                children[up] = [row]
            else:
                kids.append(row)
        roots = children[-1]
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
        for row in range(count):
            kids = children.get(row)
            if not kids:
                continue
            multiple = len(kids) > 1
            level = indent[row]
            child_indent = level + 1 if multiple or (just_branched[row] and level > 0) else level
            child_gutters = gutters[row]
            if connector[row] and not virtual[row]:
                display_indent = max(0, level - 1) if multiple_roots else level
                child_gutters = (*child_gutters, Gutter(max(0, display_indent - 1), not last[row]))
            for kid in kids:
                indent[kid] = child_indent
                just_branched[kid] = connector[kid] = multiple
                gutters[kid] = child_gutters
            last[kids[-1]] = 1
        ids = [self.order[position] for position in visible]
        self.rows = Rows(ids, indent, connector, last, gutters, virtual)
        self.index = {entry_id: row for row, entry_id in enumerate(ids)}
        self._row_parent = row_parent
        self._row_children = children
        self.multiple_roots = multiple_roots

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
        return [self.rows.ids[kid] for kid in self._row_children.get(row, ())]

    def nearest_visible_index(self, entry_id: str) -> int:
        """Row of `entry_id`, else of its nearest visible ancestor, else the last row (pi)."""
        if not self.rows:
            return 0
        node: str | None = entry_id
        while node is not None:
            position = self.index.get(node)
            if position is not None:
                return position
            node = self.tree.parent.get(node)
        return len(self.rows) - 1

    def is_foldable(self, entry_id: str) -> bool:
        """Has visible children and is a root or the first entry of a branch segment."""
        row = self.index.get(entry_id)
        if row is None or not self._row_children.get(row):
            return False
        up = self._row_parent[row]
        return up < 0 or len(self._row_children[up]) > 1

    @property
    def tool_calls(self) -> dict[str, dict[str, Any]]:
        """toolCallId → its call, to summarise tool results: one pass over every entry, so a
        loader touches it in its worker before the first row is drawn (see `summary`)."""
        if self._tool_calls is None:
            self._tool_calls = tool_calls_by_id(self.tree.entries)
        return self._tool_calls

    def summary(self, entry_id: str) -> Summary:
        """The entry's one-line rendering (cached; tool results resolved to their calls)."""
        cached = self._summaries.get(entry_id)
        if cached is None:
            cached = summarize(self.tree.by_id[entry_id], self.tool_calls)
            self._summaries[entry_id] = cached
        return cached

    def prefix(self, row: Row, *, fold_marks: bool = True) -> tuple[str, str]:
        """(tree prefix, fold marker) for a row: `│  ├⊟ ` and `⊞ ` for a folded root (`├─ ` without fold marks)."""
        display_indent = max(0, row.indent - 1) if self.multiple_roots else row.indent
        connector = row.show_connector and not row.virtual_root_child
        connector_position = display_indent - 1 if connector else -1
        folded = row.id in self.folded
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
        active = "• " if row.id in self.active_path else ""
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
        children, parents = self._row_children, self._row_parent
        current = self.cursor
        if direction == "down":
            while True:
                kids = children.get(current)
                if not kids:
                    return current
                if len(kids) > 1:
                    return kids[0]
                current = kids[0]
        while True:
            up = parents[current]
            if up < 0:
                return current
            if len(children[up]) > 1 and current < self.cursor:
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
