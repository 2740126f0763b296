"""A session's entries as columns, each entry decoded from its line only when asked for.

A session of hundreds of thousands of entries is read once; what the tree, `show` and the
listing walk over is kept in columns (`ids`, `parents`, `types`, and for messages a small
`message_kinds` code), and every entry's line stays as the bytes
it was read from, or, for a big file read only to be shown, is not kept at all: its offset and
length are, and the line is read back from the file when asked for (`core.linesource`; each
line read back is checked against the columns, and a file rewritten in place since raises
`SessionChangedError`).  `Entries[i]` decodes that line (`orjson`, the same parse the reader made,
so the value is equal to the one the reader saw); an entry the reader had to change (a
normalised `model_change`, a junk `parentId` set to null, a line only `loads_line` could
read, a migrated file) is kept as the changed dict itself, and so is every entry of the
types a caller said it will read (`read_session(decoded=...)`: no line is parsed twice).
Keeping a million parsed dicts costs more than parsing them (allocation, page faults): a
view that needs a few hundred entries decodes a few hundred.

`Entries` is a read-only `Sequence[dict]`: every caller that iterates or indexes a list of
entries keeps working.  A small cache keeps recently decoded entries (emptied when full), so
asking twice in a row gives the same dict; iterating decodes each entry once and keeps nothing.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, ItemsView, Iterable, Iterator, Mapping, Sequence
from itertools import accumulate, compress, islice, repeat
from operator import add, ne, sub
from sys import intern
from typing import Any, overload

import orjson

from .jsonl import LineError, Skipped, describe_failure, js_blank, loads_line, split_lines
from .linesource import LineSource, changed_error

NOT_AN_OBJECT = "not an object"  # how the reason a JSON value that is no object was skipped for ends

# Message kinds (`Entries.message_kinds`): what a view tells about a message without its text.
MESSAGE_OTHER = 0  # a role that is none of the below, or `message` not an object
MESSAGE_USER = 1
MESSAGE_TOOL_RESULT = 2
MESSAGE_ASSISTANT = 3  # with text, or ended in an error or abort
MESSAGE_TEXTLESS_ASSISTANT = 4  # tool calls only (pi's tree hides them)
NOT_A_MESSAGE = 255  # (an entry of another type)

_CACHE_SIZE = 2048


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


def message_kind(message: Any) -> int:
    """The `MESSAGE_*` code of a `message` entry's `message` field."""
    if not isinstance(message, dict):
        return MESSAGE_OTHER
    role = message.get("role")
    if role == "user":
        return MESSAGE_USER
    if role == "toolResult":
        return MESSAGE_TOOL_RESULT
    if role != "assistant":
        return MESSAGE_OTHER
    if not _has_text(message.get("content")):
        stop = message.get("stopReason")
        if not stop or stop in ("stop", "toolUse"):  # an error or abort stays visible
            return MESSAGE_TEXTLESS_ASSISTANT
    return MESSAGE_ASSISTANT


class KindedFacts:
    """A `read_session(message_facts=...)` function that reads each message's kind with its
    facts, in one look at the message: `with_kind(message)` gives (`message_kind(message)`,
    the facts), and calling it gives the facts alone.  The reader's own kind of a message
    reads its role and its content's text blocks again (~0.4 µs a message, an assistant's
    most): facts that read them anyway (`tree --text`'s rows) tell the kind for free."""

    __slots__ = ("with_kind",)
    # Whether a message's facts are its own alone (False: they depend on the messages read
    # before it, as `summary.MessageRows`' do, so a selection of the entries drops them).
    each_alone = True

    def __init__(self, with_kind: Callable[[dict[str, Any]], tuple[int, Any]]) -> None:
        self.with_kind = with_kind

    def __call__(self, message: dict[str, Any]) -> Any:
        return self.with_kind(message)[1]


def read_back(source: LineSource | None, offset: int, length: int, entry_id: Any, kind: Any) -> dict[str, Any]:
    """The entry whose line the reader found at `offset` (`length` bytes), read from the file
    again, when it still has the id and type the reader recorded (else `SessionChangedError`:
    the file was rewritten since, and whatever is there now is another entry or none)."""
    if source is None:
        raise ValueError("an entry read by offset without its file")
    try:
        value = orjson.loads(source.read(offset, length))
    except orjson.JSONDecodeError:
        raise changed_error(source.path) from None
    if value.__class__ is not dict or value.get("id") != entry_id or value.get("type") != kind:
        raise changed_error(source.path)
    return value  # type: ignore[no-any-return]


def decode(item: bytes | dict[str, Any]) -> dict[str, Any]:
    """An entry from what `Entries` keeps for it: its line's bytes, or the entry itself."""
    if item.__class__ is not bytes:
        return item  # type: ignore[return-value]
    try:
        return orjson.loads(item)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError:  # (the reader keeps such lines decoded: not reached)
        return loads_line(item)[0]  # type: ignore[arg-type, no-any-return]


class Entries(Sequence[dict[str, Any]]):
    """The entries of a session in file order, decoded on access (see the module docstring).

    Columns, one item per entry: `ids`, `parents` (the `parentId` as the entry holds it),
    `types` and `message_kinds` (a `MESSAGE_*` code, `NOT_A_MESSAGE` for other types), and
    `field_values` when the reader was asked for one field of some types (`fields`, type ->
    field, see `read_session(fields=...)`): that field's value (None when absent) for an
    entry of those types, None for the others; `message_facts` when the reader was asked for
    them (`read_session(message_facts=f)`, `message_facts_of` is `f`): `f(message)` of a
    `message` entry whose `message` is an object, None for the others (None: not read).
    An item is an entry's line (bytes), the entry itself, or None: read back from `source`
    at `offsets[i]`, `lengths[i]` bytes (see `read_back`).
    """

    __slots__ = (
        "_cache",
        "_items",
        "_lengths",
        "_message_kinds",
        "_offsets",
        "_plain_types",
        "_source",
        "field_values",
        "fields",
        "ids",
        "message_facts",
        "message_facts_of",
        "parents",
        "types",
    )

    def __init__(
        self,
        items: list[Any],
        ids: list[Any],
        parents: list[Any],
        types: list[Any],
        message_kinds: bytearray | None,
        offsets: array | None = None,
        lengths: array | None = None,
        source: LineSource | None = None,
        *,
        plain_types: bool | None = None,
        fields: Mapping[str, str] | None = None,
        field_values: list[Any] | None = None,
        message_facts: list[Any] | None = None,
        message_facts_of: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self._items = items
        self.message_facts = message_facts
        self.message_facts_of = message_facts_of if message_facts is not None else None
        self.fields: Mapping[str, str] | None = fields if field_values is not None else None
        self.field_values: list[Any] | None = field_values
        self.ids, self.parents, self.types = ids, parents, types
        self._message_kinds = message_kinds  # (None: made from the entries when first asked for)
        self._offsets = offsets if offsets is not None else array("q")
        self._lengths = lengths if lengths is not None else array("q")
        self._source = source
        # Whether every type is a string (see `where`); None: not known yet (a reader that
        # checked says so).
        self._plain_types = plain_types
        self._cache: dict[int, dict[str, Any]] = {}  # (views decode from worker threads and the UI thread at once)

    @classmethod
    def of(cls, entries: Iterable[dict[str, Any]]) -> Entries:
        """Entries already decoded (a migrated file, a test's list): kept as they are."""
        if isinstance(entries, Entries):
            return entries
        items = list(entries)
        return cls(
            items,
            [entry.get("id") for entry in items],
            [entry.get("parentId") for entry in items],
            [entry.get("type") for entry in items],
            None,  # (`message_kinds` made from them when first asked for)
        )

    @property
    def message_kinds(self) -> bytearray:
        """The `MESSAGE_*` code of each entry (`NOT_A_MESSAGE` for the other types).  A reader
        told that no one would ask (`read_session(message_kinds=False)`: `tree --json`), and
        `Entries.of`, leave them to be made here, from the entries, if someone asks after all."""
        kinds = self._message_kinds
        if kinds is None:  # (two threads may both make it: equal codes, either kept)
            kinds = bytearray([NOT_A_MESSAGE]) * len(self._items)
            for position in self.positions_of_types(("message",)):
                kinds[position] = message_kind(self.peek(position).get("message"))
            self._message_kinds = kinds
        return kinds

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(len(self._items)))]
        if index < 0:
            index += len(self._items)
        cached = self._cache.get(index)
        if cached is not None:
            return cached
        item = self._items[index]  # (IndexError as a list raises it)
        if item is None:
            entry = self._read_back(index)
        elif item.__class__ is bytes:
            entry = decode(item)
        else:
            return item
        cache = self._cache
        if len(cache) >= _CACHE_SIZE:  # full: start again (evicting one at a time from a dict's
            cache.clear()  # front makes every eviction walk past the ones deleted before it)
        cache[index] = entry
        return entry

    def peek(self, index: int) -> dict[str, Any]:
        """`self[index]` without caching it: for a pass over many entries."""
        item = self._items[index]
        if item is None:
            cached = self._cache.get(index)
            return cached if cached is not None else self._read_back(index)
        if item.__class__ is not bytes:
            return item  # type: ignore[no-any-return]
        cached = self._cache.get(index)
        return cached if cached is not None else decode(item)

    def _read_back(self, index: int) -> dict[str, Any]:
        if index < 0:
            index += len(self._items)
        return read_back(self._source, self._offsets[index], self._lengths[index], self.ids[index], self.types[index])

    @property
    def by_offset(self) -> bool:
        """Whether some entries are read back from their file (which is then held open)."""
        return self._source is not None and not self._source.closed and None in self._items

    def close(self) -> None:
        """Let go of the file entries are read back from (a later read of one raises
        `SessionChangedError`); nothing to do for entries kept in memory."""
        if self._source is not None:
            self._source.close()

    def __eq__(self, other: object) -> bool:
        """Equal to a list (or `Entries`) of equal entries, as the list it stands for."""
        if isinstance(other, Entries | list | tuple):
            return len(self) == len(other) and all(mine == theirs for mine, theirs in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (mutable entries, as a list's)

    def __repr__(self) -> str:
        return f"<Entries: {len(self)} entries>"

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every entry, decoded one at a time (nothing kept beyond the cache's own)."""
        cache = self._cache
        for position, item in enumerate(self._items):
            if item is None:
                cached = cache.get(position)
                yield cached if cached is not None else self._read_back(position)
            elif item.__class__ is not bytes:
                yield item
            else:
                cached = cache.get(position)
                yield cached if cached is not None else decode(item)

    def select(self, keep: list[int]) -> Entries:
        """The entries at positions `keep` (ascending), as new `Entries` (without facts of
        the messages that depend on the messages read before, `KindedFacts.each_alone`)."""
        kinds, offsets, lengths = self._message_kinds, self._offsets, self._lengths
        facts = self.message_facts if getattr(self.message_facts_of, "each_alone", True) else None
        return Entries(
            [self._items[position] for position in keep],
            [self.ids[position] for position in keep],
            [self.parents[position] for position in keep],
            [self.types[position] for position in keep],
            None if kinds is None else bytearray(kinds[position] for position in keep),
            array("q", (offsets[position] for position in keep)) if offsets else None,
            array("q", (lengths[position] for position in keep)) if lengths else None,
            self._source,
            fields=self.fields,
            field_values=None if self.field_values is None else [self.field_values[position] for position in keep],
            message_facts=None if facts is None else [facts[position] for position in keep],
            message_facts_of=self.message_facts_of,
        )

    def where(self, kinds: Iterable[str]) -> Iterator[dict[str, Any]]:
        """The entries whose `type` is one of `kinds`, in order (the others are not decoded)."""
        return (self[position] for position in self.positions_of_types(kinds))

    def positions_of_types(self, kinds: Iterable[str], stop: int | None = None) -> Iterator[int]:
        """The positions (before `stop`) whose `type` is one of `kinds`, in order."""
        wanted = frozenset(kinds)
        types = self.types if stop is None else self.types[:stop]
        if self._plain_types is None:  # (every type a string: the reader's; a caller's list may hold junk)
            self._plain_types = not (set(map(type, self.types)) - {str})
        if self._plain_types:  # found at C speed: a name or a label among millions of entries
            return compress(range(len(types)), map(wanted.__contains__, types))
        return (position for position, kind in enumerate(types) if kind.__class__ is str and kind in wanted)

    def messages(self, *message_kinds: int) -> Iterator[dict[str, Any]]:
        """The `message` entries of the given `MESSAGE_*` kinds, in order (not cached: a pass)."""
        codes = self.message_kinds
        found = compress(range(len(codes)), map(frozenset(message_kinds).__contains__, codes))
        return (self.peek(position) for position in found)


_NEAR = 128  # ids compared (at C speed) around the last one found before the map is made
# Then up to this many on each side, by a reader of rows spread out in file order (a tree
# view's first screen of a filtered chain: a row every hundred entries), for a budget of
# `_WIDE_SEARCHES` such searches (~0.1 ms each at most) before the map is made after all.
_WIDE = 8192
_WIDE_SEARCHES = 128


class IdPositions(Mapping[str, int]):
    """Entry id → its position, over ids known to be distinct (`SessionTree.positions`).

    The dict is made on first need: on a session of hundreds of thousands of entries it costs
    tens of milliseconds (an int and a slot per entry, every id hashed), and `show` or
    `tree --json` on a session that never branches asks only where its leaf, the last entry,
    is: answered from the list, as is an id near the last one found (the rows a view draws
    around its cursor, even a row every hundred entries: the tree screen's first draw of a
    filtered chain; a caller asking for ids all over the session soon gets the map made).
    Iterating gives the ids in entry order, as the dict would.
    """

    __slots__ = ("_hint", "_ids", "_map", "_wide_left")

    def __init__(self, ids: list[Any]) -> None:
        self._ids = ids
        self._map: dict[str, int] | None = None
        self._hint = len(ids) - 1  # where the last id asked for was: a view asks for neighbours
        self._wide_left = _WIDE_SEARCHES  # wider searches left before the map is made

    def _made(self) -> dict[str, int]:
        made = self._map
        if made is None:  # (two threads may both make it: equal dicts, either kept)
            made = self._map = dict(zip(self._ids, range(len(self._ids)), strict=True))
        return made

    def _near(self, entry_id: object) -> int:
        """Its position when the map is not made yet and it is within `_NEAR` of the last one
        found (the ids are distinct: the first equal one is the one), else -1."""
        if self._map is not None or entry_id.__class__ is not str:
            return -1
        ids, hint = self._ids, self._hint
        try:
            position = ids.index(entry_id, max(0, hint - _NEAR), hint + _NEAR)
        except ValueError:
            if self._wide_left <= 0:
                return -1
            self._wide_left -= 1
            try:  # (forwards first: a view draws its rows top to bottom)
                position = ids.index(entry_id, hint + _NEAR, hint + _WIDE)
            except ValueError:
                try:
                    position = ids.index(entry_id, max(0, hint - _WIDE), max(0, hint - _NEAR))
                except ValueError:
                    return -1
        self._hint = position
        return position

    # (Once the map is made, each question is one dict lookup: placing a branching tree and
    # laying it out ask about every entry, several times.)

    def __getitem__(self, entry_id: str) -> int:
        made = self._map
        if made is not None:
            return made[entry_id]
        position = self._near(entry_id)
        return position if position >= 0 else self._made()[entry_id]

    def get(self, entry_id: Any, default: Any = None) -> Any:
        made = self._map
        if made is not None:
            return made.get(entry_id, default)
        position = self._near(entry_id)
        return position if position >= 0 else self._made().get(entry_id, default)

    def __contains__(self, entry_id: object) -> bool:
        made = self._map
        if made is not None:
            return entry_id in made
        return self._near(entry_id) >= 0 or entry_id in self._made()

    def items(self) -> ItemsView[str, int]:
        """(id, position) in entry order: the map's own (a caller walking every pair asks about
        every id; `Mapping.items` would look each one up again)."""
        return self._made().items()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class ById(Mapping[str, dict[str, Any]]):
    """Entry id → entry (`SessionTree.by_id`): ids and positions in a dict, each entry
    decoded from `Entries` when asked for."""

    __slots__ = ("_entries", "positions")

    def __init__(self, positions: Mapping[str, int], entries: Sequence[dict[str, Any]]) -> None:
        self.positions, self._entries = positions, entries

    def __getitem__(self, entry_id: str) -> dict[str, Any]:
        return self._entries[self.positions[entry_id]]

    def get(self, entry_id: Any, default: Any = None) -> Any:
        position = self.positions.get(entry_id)
        return default if position is None else self._entries[position]

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.positions

    def __iter__(self) -> Iterator[str]:
        return iter(self.positions)

    def __len__(self) -> int:
        return len(self.positions)


class Parsed:
    """What a file's lines parsed into, as the columns `Entries` keeps (one item per object
    line: its bytes, or None when it is read back from `source`, or its value when only
    `loads_line` could read it or the caller keeps it, see `parse_lines`), each line's offset
    and length, their 1-based line
    numbers, the skipped lines, and where the first object's line ends (a title slot's byte
    length).  Positions count object lines from the file's first."""

    __slots__ = (
        "bounds",
        "clean",
        "facts",
        "facts_of",
        "field_values",
        "fields",
        "first_end",
        "ids",
        "items",
        "kinded",
        "kinds",
        "lengths",
        "lines",
        "offsets",
        "parents",
        "skipped",
        "source",
        "types",
        "unchained",
    )

    def __init__(
        self,
        source: LineSource | None = None,
        fields: Mapping[str, str] | None = None,
        message_kinds: bool = True,
        message_facts: Callable[[dict[str, Any]], Any] | None = None,
    ) -> None:
        self.source = source  # where lines not kept are read back from (None: every line's bytes kept)
        # Entry type -> the one field of it a caller reads (`read_session(fields=...)`): that
        # field's value is kept per object in `field_values` (None for the other types), and
        # the entry itself need not be kept or decoded again for it.
        self.fields = dict(fields) if fields else None
        self.field_values: list[Any] | None = [] if fields else None
        self.offsets = array("q")
        self.lengths = array("q")
        self.items: list[Any] = []
        self.ids: list[Any] = []
        self.parents: list[Any] = []
        self.types: list[Any] = []
        # MESSAGE_* of each `message`, NOT_A_MESSAGE of the others (None: not asked for, see
        # `Entries.message_kinds`; a message's `message` is then not even looked at)
        self.kinds: bytearray | None = bytearray() if message_kinds or message_facts else None
        # `facts_of(message)` of each object that is a `message` whose `message` is an object,
        # else None (None: not asked for, see `read_session(message_facts=...)`): what a
        # caller reads of each message, made as it is parsed, so the message need not be kept.
        self.facts_of = message_facts
        self.facts: list[Any] | None = [] if message_facts else None
        # (facts that tell each message's kind with them: see `KindedFacts`)
        self.kinded = message_facts.with_kind if isinstance(message_facts, KindedFacts) else None
        self.lines = array("q")
        self.skipped: list[Skipped] = []
        self.first_end: int | None = None
        # Positions whose parent is not the very id object of the object just before (a root,
        # a fork, a junk parent; the others share that object): few, and found while parsing
        # so placing the entries need not compare every parent with the id before it.
        self.unchained: list[int] = []
        # Whether every type is a string and every id a non-empty one, as checked a block at
        # a time while the columns are hot (False once a block needed the line-by-line loop:
        # placing the entries then checks the columns itself).
        self.clean = True
        # The byte range pi's `content.trim()` keeps of the file (`core.jsonl.content_bounds`):
        # a line that crosses it is parsed cut to it.  None: the usual file, nothing to cut.
        self.bounds: tuple[int, int] | None = None

    def value(self, position: int) -> dict[str, Any]:
        """The object at `position`, decoded (a fresh dict for a kept line)."""
        item = self.items[position]
        if item is None:
            return read_back(
                self.source, self.offsets[position], self.lengths[position], self.ids[position], self.types[position]
            )
        return decode(item)


def parse_lines(
    lines: list[bytes],
    parsed: Parsed,
    first_line: int,
    base_offset: int,
    *,
    keep: bool | Collection[str] = False,
    keepends: bool = False,
) -> None:
    """Parse split lines (starting at line `first_line`, byte `base_offset`) into `parsed`.

    A final piece that is not empty is a line without a newline: kept when it parses,
    reported as torn when not.  Each object's line is parsed once, here: its columns are
    read off the parsed value, and the value itself is dropped (see `Entries`) unless `keep`
    says otherwise: True keeps every value, a collection of types the values of those types
    (for a caller about to read them all anyway: no second parse).  A line whose value is
    dropped keeps its bytes, or nothing when `parsed.source` will read it back (its offset
    and length are recorded either way).  The field `parsed.fields` names for an object's
    type is read into `parsed.field_values` (when fields were asked for).

    `keepends`: each line still ends with its newline (a `keepends` block of `line_blocks`:
    no empty last piece, only a file's unterminated last line without one).
    """
    if _parse_clean_block(lines, parsed, first_line, base_offset, keep, keepends):
        return
    if keepends:  # (the line-by-line loop reads the pieces `split` gives)
        lines = split_lines(lines)
    parsed.clean = False
    items, ids, parents, types = parsed.items, parsed.ids, parsed.parents, parsed.types
    add_item, add_id, add_parent, add_type = items.append, ids.append, parents.append, types.append
    add_offset, add_length = parsed.offsets.append, parsed.lengths.append
    by_offset = parsed.source is not None
    offset = base_offset  # where the line being parsed starts
    skipped = parsed.skipped
    add_kind = parsed.kinds.append if parsed.kinds is not None else None
    facts_of, kinded = parsed.facts_of, parsed.kinded
    add_facts = parsed.facts.append if parsed.facts is not None else None
    add_unchained = parsed.unchained.append
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    last = len(lines) - 1
    unused: list[int] = []  # lines that gave no object (blank, bad, not an object): few
    previous = ids[-1] if ids else None  # the last object's id
    keep_all = keep is True
    keep_types = frozenset(keep) if not isinstance(keep, bool) else frozenset()
    fields = parsed.fields or {}
    add_field = parsed.field_values.append if parsed.field_values is not None else None
    for index, raw in enumerate(lines):  # the hot loop: millions of lines
        at, size = offset, len(raw)
        offset += size + 1
        item: Any = None if by_offset else raw
        try:
            value = loads(raw)
        except decode_error:
            unused.append(index)
            if not raw.strip():
                continue
            bounds = parsed.bounds
            if bounds is not None and (at < bounds[0] or at + size > bounds[1]):  # the file's first or last line
                raw = raw[max(bounds[0] - at, 0) : max(min(at + size, bounds[1]) - at, 0)]
            if js_blank(raw):  # (no-break spaces, \v...: pi skips the line unread)
                continue
            try:
                value, replaced = loads_line(raw)
            except LineError:
                reason = "torn last line (no newline)" if index == last else describe_failure(raw)
                skipped.append(Skipped(first_line + index, reason))
                continue
            item = value  # kept decoded: a later decode of the bytes would not give it
            if type(value) is dict:
                unused.pop()
                if replaced:
                    skipped.append(Skipped(first_line + index, "bytes that are not UTF-8 were replaced (line kept)"))
        if type(value) is not dict:
            if not unused or unused[-1] != index:
                unused.append(index)
            skipped.append(Skipped(first_line + index, f"a JSON {type(value).__name__}, {NOT_AN_OBJECT}"))
            continue
        get = value.get
        kind = get("type")
        code = NOT_A_MESSAGE
        facts = None
        if kind.__class__ is str:  # a few distinct values, millions of copies: share one each
            kind = intern(kind)
            if kind in keep_types:
                item = value
            if kind == "message" and add_kind is not None:
                message = get("message")
                if kinded is not None and message.__class__ is dict:
                    code, facts = kinded(message)
                else:
                    code = message_kind(message)
                    if facts_of is not None and message.__class__ is dict:
                        facts = facts_of(message)
        if add_kind is not None:
            add_kind(code)
        if add_facts is not None:
            add_facts(facts)
        if add_field is not None:
            field = fields.get(kind) if kind.__class__ is str else None
            add_field(None if field is None else get(field))
        entry_id = get("id")
        parent = get("parentId")
        if parent == previous:  # a chain, most of a session: share the id string, drop the copy
            parent = previous
        else:
            add_unchained(len(ids))
        add_item(value if keep_all else item)
        add_offset(at)
        add_length(size)
        add_id(entry_id)
        add_parent(parent)
        add_type(kind)
        previous = entry_id
    # Line numbers of the kept objects, and (once per file) where the first one's line ends.
    numbers = parsed.lines
    if unused == [last]:  # the usual block: whole lines, then the empty piece after the last newline
        numbers.extend(range(first_line, first_line + last))
        first = 0 if last else None
    else:
        gaps = set(unused)
        kept = [index for index in range(len(lines)) if index not in gaps]
        numbers.extend(first_line + index for index in kept)
        first = kept[0] if kept else None
    if parsed.first_end is None and first is not None:
        parsed.first_end = base_offset + sum(len(line) + 1 for line in lines[:first]) + len(lines[first])


def _parse_clean_block(
    lines: list[bytes],
    parsed: Parsed,
    first_line: int,
    base_offset: int,
    keep: bool | Collection[str],
    keepends: bool = False,
) -> bool:
    """`parse_lines` for the usual block: every line an object with a string type (the last
    piece empty, or an object too).  Each line is parsed on its own by `orjson.loads`, as
    in the line-by-line loop (never a batch of lines in one call), and only the three
    columns every entry has (and a message's kind and facts, read while its value is hot:
    keeping the block's messages until after the loop cost ~10% of the read) are read per
    line; the rest (offsets, lengths, shared types and parent ids, kept values) is made a
    column at a time at C speed.  False, with nothing added to
    `parsed`, for a block that needs the line-by-line loop (a blank or bad line, a value
    that is not an object, a type that is not a string) or for `keep=True`.  `keepends`:
    see `parse_lines` (orjson reads the newline as the whitespace after the value)."""
    if keep is True:
        return False
    last = len(lines) - 1
    count = last if last >= 0 and not lines[last] and not keepends else len(lines)
    if not count:
        return False
    keep_types = frozenset(keep or ())
    coding = parsed.kinds is not None  # (each message's kind and facts read as it is parsed: not kept a while)
    facts_of, kinded = parsed.facts_of, parsed.kinded
    special = keep_types | {"message"} if coding else keep_types
    codes: list[int] = []  # of the messages, in order
    message_facts: list[Any] = []  # of the messages, in order (when asked for)
    add_code, add_facts = codes.append, message_facts.append
    ids: list[Any] = []
    types: list[Any] = []
    raw_parents: list[Any] = []
    values: list[dict[str, Any]] = []  # of the types kept decoded only
    add_id, add_type, add_parent, add_value = ids.append, types.append, raw_parents.append, values.append
    field_values: list[Any] = []  # (the asked-for field of each, see `Parsed.fields`: `get(None)` is None)
    field_of, add_field = (parsed.fields.get, field_values.append) if parsed.fields else (None, None)
    loads = orjson.loads
    refused = (orjson.JSONDecodeError, AttributeError, TypeError)  # not JSON, not an object, an unhashable type
    try:
        for raw in islice(lines, count):  # the hot loop: millions of lines
            value = loads(raw)
            kind = value.get("type")
            add_id(value.get("id"))
            add_parent(value.get("parentId"))
            add_type(kind)
            if kind in special:
                if kind in keep_types:
                    add_value(value)
                if kind == "message" and coding:
                    message = value.get("message")
                    if kinded is not None and message.__class__ is dict:
                        code, facts = kinded(message)
                        add_code(code)
                        add_facts(facts)
                    else:
                        add_code(message_kind(message))
                        if facts_of is not None:
                            add_facts(facts_of(message) if message.__class__ is dict else None)
            if field_of is not None:
                add_field(value.get(field_of(kind)))  # type: ignore[misc]
        types = list(map(intern, types))  # a few distinct values, millions of copies: share one each
    except refused:
        return False
    if parsed.clean:
        try:
            "".join(ids)  # (TypeError: an id that is not a string)
        except TypeError:
            parsed.clean = False
        else:
            parsed.clean = all(ids)  # (no empty one)
    # A chain, most of a session: an entry whose parent equals the id before it shares that
    # id's object (as the line-by-line loop does); the others (a root, a fork) keep theirs.
    parents = [parsed.ids[-1] if parsed.ids else None, *ids]
    parents.pop()
    unchained = list(compress(range(count), map(ne, raw_parents, parents)))
    for position in unchained:
        parents[position] = raw_parents[position]
    first = len(parsed.ids)
    parsed.unchained.extend([first + position for position in unchained])
    if parsed.source is not None:
        items: list[Any] = [None] * count
    else:
        items = split_lines(lines)[:count] if keepends else lines[:count]
    kinds = facts = None
    if coding and len(codes) == count:  # every entry a message: the columns as they are
        kinds, facts = bytearray(codes), message_facts if facts_of is not None else None
    elif coding:
        kinds = bytearray([NOT_A_MESSAGE]) * count
        facts = [None] * count if facts_of is not None else None
        position = -1
        for index, code in enumerate(codes):  # (each message found by `index`: the types are interned)
            position = types.index("message", position + 1)
            kinds[position] = code
            if facts is not None:
                facts[position] = message_facts[index]
    for position, value in zip(compress(range(count), map(keep_types.__contains__, types)), values, strict=True):
        items[position] = value
    # (Into the arrays from lists: `fromlist` is about twice as fast as extending from an iterator.)
    if keepends:
        sizes = list(map(len, lines))  # (newlines included)
        offsets = list(accumulate(sizes, initial=base_offset))
        lengths = list(map(sub, sizes, repeat(1)))
        if not lines[-1].endswith(b"\n"):  # (a file's unterminated last line)
            lengths[-1] += 1
    else:
        lengths = list(map(len, islice(lines, count)))
        offsets = list(accumulate(map(add, lengths, repeat(1)), initial=base_offset))
    offsets.pop()  # (where the line after the block would start)
    parsed.offsets.fromlist(offsets)
    parsed.lengths.fromlist(lengths)
    parsed.items.extend(items)
    parsed.ids.extend(ids)
    parsed.parents.extend(parents)
    parsed.types.extend(types)
    if kinds is not None:
        parsed.kinds.extend(kinds)  # type: ignore[union-attr]
    if facts is not None:
        parsed.facts.extend(facts)  # type: ignore[union-attr]
    if parsed.field_values is not None:
        parsed.field_values.extend(field_values)
    parsed.lines.fromlist(list(range(first_line, first_line + count)))
    if parsed.first_end is None:
        parsed.first_end = base_offset + lengths[0]
    return True
