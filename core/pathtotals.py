"""Running totals along a session's tree: what the context preview counts, per entry.

The preview's header says how many tokens the context at an entry holds (its messages'
characters / 4) and what the path root → entry cost (its assistant messages' `usage.cost`).
Summed message by message, that reads every message on the path: on a 200,000-message
session, a second and more of CPU per cursor move.  Here each entry's total is its
parent's plus its own, computed once per entry (lazily: a path the first time one of its
entries is asked for, then only the entries not met yet), so a question is two lookups.

The sums are made in path order, root first, the way `sum()` adds them one by one (Python
3.11's float `sum` is that plain left-to-right addition): the numbers are the ones a walk
would give.  A compaction keeps only part of the path: that part is a difference of two
totals (see `context_chars`).
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from .context import MESSAGE_TYPES, ContextMessage, SessionContext, as_message, compaction_summary
from .entries import MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT, NOT_A_MESSAGE
from .errors import Stopped
from .text import as_text, message_text, user_run
from .tree import SessionTree

_ASSISTANT_CODES = frozenset({MESSAGE_ASSISTANT, MESSAGE_TEXTLESS_ASSISTANT})
STOP_EVERY = 1024
"""How many entries `PathTotals` fills between two asks of its `stop` (a few ms)."""
LOCK_POLL = 0.02
"""Seconds between two asks of `stop` while another thread fills the totals (`chain_feed`)."""


def message_chars(item: ContextMessage) -> int:
    """Characters the model reads for a message: its text plus tool-call arguments."""
    return message_size(item.message)


def message_size(message: dict[str, Any]) -> int:
    """Characters the model reads for the context message whose `message` this is: its text,
    a bash execution's command and output, and each tool call's name and arguments (its role
    read from it, as a `ContextMessage` holds it).  A `message` entry's own `message` is one:
    no `ContextMessage` made."""
    size = len(message_text(message))
    if run := user_run(message):
        size += len(as_text(run[1] or "")) + len(as_text(run[2] or ""))
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolCall":
            # (`as_text`: arguments nested 5,000 deep are read by pi; `str()` of them raises)
            size += len(as_text(block.get("name") or "")) + len(as_text(block.get("arguments") or ""))
    return size


def assistant_cost(entry: dict[str, Any]) -> float:
    """An assistant message entry's `usage.cost.total` (0.0 for anything else or no number)."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "assistant":
        return 0.0
    return _cost(message)


def _cost(message: dict[str, Any]) -> float:
    """An assistant message's `usage.cost.total` (0.0 when it has no number)."""
    usage = message.get("usage")
    cost = usage.get("cost") if isinstance(usage, dict) else None
    total = cost.get("total") if isinstance(cost, dict) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else 0.0


class PathTotals:
    """Per entry of a tree, along its path root → entry: the characters of the messages
    the context would hold without a compaction, and the assistant messages' cost.  Also the
    tool-call ids met in the assistant messages read (a call asked for that is not among
    them is on no path read).  One per tree (`of`); safe to ask from several threads."""

    _made: ClassVar[weakref.WeakKeyDictionary[SessionTree, PathTotals]] = weakref.WeakKeyDictionary()
    _made_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, tree: SessionTree) -> PathTotals:
        """The totals of `tree` (made on first use, kept as long as the tree: they hold it
        weakly, or the map's value would keep its key, and every tree ever previewed, alive)."""
        with cls._made_lock:
            totals = cls._made.get(tree)
            if totals is None:
                totals = cls._made[tree] = cls(tree)
            return totals

    def __init__(self, tree: SessionTree) -> None:
        self._tree_ref = weakref.ref(tree)
        count = len(tree.entries)
        self._chars = array("q", bytes(8 * count))
        self._cost = array("d", bytes(8 * count))
        self._done = bytearray(count)
        self.call_ids: set[str] = set()
        self._lock = threading.Lock()

    @property
    def _tree(self) -> SessionTree:
        """The tree (alive: whoever asks for its totals holds it)."""
        tree = self._tree_ref()
        if tree is None:
            raise ReferenceError("the tree of these totals is gone")
        return tree

    def at(self, entry_id: str | None, stop: Callable[[], bool] | None = None) -> tuple[int, float]:
        """(characters, cost) summed along the path root → `entry_id` ((0, 0.0) for None or
        an unknown id).  `stop`: asked every `STOP_EVERY` entries filled; once it says so,
        `Stopped` is raised (the entries filled so far, root first, stay filled)."""
        position = self._tree.positions.get(entry_id, -1) if entry_id is not None else -1
        if position < 0:
            return 0, 0.0
        if not self._done[position]:
            self._fill(entry_id, stop)  # type: ignore[arg-type]
        return self._chars[position], self._cost[position]

    def before(self, entry_id: str, stop: Callable[[], bool] | None = None) -> tuple[int, float]:
        """The totals at `entry_id`'s parent on its path ((0, 0.0) for a root)."""
        walk = self._tree.path_positions(entry_id)
        next(walk, None)
        parent = next(walk, -1)
        return self.at(self._tree.entries.ids[parent], stop) if parent >= 0 else (0, 0.0)

    def context_chars(self, context: SessionContext, stop: Callable[[], bool] | None = None) -> int:
        """The characters of every message of `context` (built on this tree), as summing
        `message_chars` over them gives: with a compaction, its summary and the path from
        the entry it keeps from (a difference of two totals); after oh-my-pi's `/clear`, the
        path from its boundary on.  `stop`: as `at`'s."""
        chars, _cost = self.at(context.leaf_id, stop)
        if context.cleared_at is not None:  # (oh-my-pi's `/clear`: only what follows it)
            chars -= self.at(context.cleared_at, stop)[0]
        elif context.compaction is not None and context.kept_from is not None:
            chars -= self.before(context.kept_from, stop)[0]
            chars += message_chars(compaction_summary(context.compaction))
        return chars

    @contextmanager
    def chain_feed(self) -> Iterator[Callable[[int, dict[str, Any]], None] | None]:
        """For a pass that decodes every entry of a chain in file order anyway (the tree's
        search index): a function of (position, entry) that fills that entry's totals from
        the one before it, so the path's totals need no pass of their own (a second decoding
        of every message).  The totals are held meanwhile: a question waits for the pass (or
        for its stop).  None when the tree is no chain, when fewer than half of its entries
        are messages (the totals' own pass decodes only those: on a session of mostly other
        entries it is quicker than the whole pass the question would wait for), or when the
        totals are being filled already (the pass then leaves them alone)."""
        entries = self._tree.entries
        messages = len(entries) - entries.message_kinds.count(NOT_A_MESSAGE)
        if not self._tree.is_chain or 2 * messages < len(entries) or not self._lock.acquire(blocking=False):
            yield None
            return
        try:
            yield self._feed
        finally:
            self._lock.release()

    def _feed(self, position: int, entry: dict[str, Any]) -> None:
        """`chain_feed`'s: `entry`'s totals, when the entry before it has its own (always, fed
        in order from the first; an entry filled already is left as it is)."""
        done = self._done
        if done[position] or (position and not done[position - 1]):
            return
        chars, cost = (self._chars[position - 1], self._cost[position - 1]) if position else (0, 0.0)
        kind = self._tree.entries.types[position]
        if kind.__class__ is str and kind in MESSAGE_TYPES:
            own_chars, own_cost = self._own(kind, self._tree.entries.message_kinds[position], entry)
            chars += own_chars
            cost += own_cost
        self._chars[position] = chars
        self._cost[position] = cost
        done[position] = 1

    def _own(self, kind: str, code: int, entry: dict[str, Any]) -> tuple[int, float]:
        """A context entry's own characters and cost (`kind` its type, one of `MESSAGE_TYPES`;
        `code` its message kind), its tool calls' ids added to `call_ids`."""
        if kind != "message":
            item = as_message(entry)
            return (message_chars(item), 0.0) if item else (0, 0.0)
        message = entry.get("message")
        if message.__class__ is not dict:
            return 0, 0.0
        if code in _ASSISTANT_CODES:  # (an assistant `message` entry; most: no `ContextMessage` made)
            self.call_ids.update(_call_ids(message))
            return message_size(message), _cost(message)
        return message_size(message), 0.0

    @contextmanager
    def _held(self, stop: Callable[[], bool] | None) -> Iterator[None]:
        """The lock, waited for while `stop` says go on (the index pass may hold it for a
        second filling the totals as it goes, `chain_feed`: a preview cancelled meanwhile
        must not wait it out, then make its preview for nothing)."""
        lock = self._lock
        if stop is None:
            lock.acquire()
        else:
            while not lock.acquire(timeout=LOCK_POLL):
                if stop():
                    raise Stopped
        try:
            yield
        finally:
            lock.release()

    def _fill(self, entry_id: str, stop: Callable[[], bool] | None = None) -> None:
        """Totals for every entry on the path to `entry_id` that has none yet, root first
        (`stop`: as `at`'s; each entry is marked done with its totals, so a fill stopped
        half way leaves a valid prefix the next one starts from)."""
        tree = self._tree
        entries = tree.entries
        types, codes = entries.types, entries.message_kinds
        with self._held(stop):
            done, chars_at, cost_at = self._done, self._chars, self._cost
            todo: list[int] = []
            base = -1
            for position in tree.path_positions(entry_id):
                if done[position]:
                    base = position
                    break
                todo.append(position)
            chars, cost = (chars_at[base], cost_at[base]) if base >= 0 else (0, 0.0)
            message_types, own, peek = MESSAGE_TYPES, self._own, entries.peek
            every = STOP_EVERY if stop is not None else len(todo) + 1
            for step, position in enumerate(reversed(todo)):
                if not step % every and stop is not None and stop():
                    raise Stopped
                kind = types[position]
                if kind.__class__ is str and kind in message_types:
                    own_chars, own_cost = own(kind, codes[position], peek(position))
                    chars += own_chars
                    cost += own_cost
                chars_at[position] = chars
                cost_at[position] = cost
                done[position] = 1


def _call_ids(message: dict[str, Any]) -> list[str]:
    """The ids of an assistant message's tool calls (as `tool_calls_by_id` keys them)."""
    content = message.get("content")
    return [
        block["id"]
        for block in (content if isinstance(content, list) else ())
        if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str)
    ]
