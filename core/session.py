"""Load one session file into the normalised model — read-only, never raising on bad input.

`read_session(path)` returns a `Session` or a `NotASession` that says why.  Everything that
was skipped on the way (bad lines, entries without ids, duplicate ids, broken parents) is
listed in `Session.problems`, so a caller can tell the user instead of failing.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain, compress, islice, repeat
from operator import eq
from pathlib import Path
from typing import Any

from . import dialects
from .entries import NOT_AN_OBJECT, Entries, IdPositions, Parsed, parse_lines
from .errors import SessionError  # re-exported: its home is errors.py (cheap for the CLI to import)
from .gcpause import gc_paused
from .jsonl import Skipped, content_bounds, line_blocks, oversized_reason
from .linesource import LineSource
from .migrate import CURRENT_VERSION, header_version, migrate
from .safeopen import open_regular
from .tree import SessionTree, TreeIndex, chain_positions


def new_digest(data: bytes = b"") -> Any:
    """The content hash of a `FileStamp` (SHA-256: with the CPU's SHA instructions about
    twice as fast as BLAKE2b, which counts on a file of hundreds of MB).  hashlib is imported
    here: a read-only load (`show`, `tree`) never hashes, and the import costs milliseconds."""
    import hashlib

    return hashlib.sha256(data)


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What a file looked like when it was read: used to refuse writes if it changed.

    `digest` is None for a read-only load (`read_session(..., digest=False)`): hashing a file
    of hundreds of MB costs as much as framing it, and only a write compares contents.  The
    write path refuses such a stamp (`writes.load_for_write` reads the file again, digested).
    """

    size: int
    mtime_ns: int
    digest: str | None

    @classmethod
    def of_bytes(cls, data: bytes, stat: os.stat_result) -> FileStamp:
        return cls(stat.st_size, stat.st_mtime_ns, new_digest(data).hexdigest())

    def matches(self, stat: os.stat_result) -> bool:
        """Whether a file now `stat` looks as it did when read (its size and modification time:
        a write refuses, and the tree reads the file again, when it does not)."""
        return stat.st_size == self.size and stat.st_mtime_ns == self.mtime_ns


@dataclass(frozen=True, slots=True)
class NotASession:
    """A file that cannot be read as a session, and the reason in one line."""

    path: Path
    reason: str

    def __bool__(self) -> bool:  # `if result:` reads naturally for callers
        return False


@dataclass(eq=False)
class Session:
    """A session file, normalised to pi's v3 shape and migrated in memory."""

    path: Path
    header: dict[str, Any]
    entries: Entries  # a Sequence of entry dicts, each decoded from its line when asked for
    stamp: FileStamp
    disk_version: int | float  # as pi compares it: see `header_version`
    dialect: str
    title_slot: dict[str, Any] | None = None
    title_slot_bytes: int = 0
    migrations: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # What the reader already knows for the tree, handed to `SessionTree` once.
    tree_index: TreeIndex | None = field(default=None, repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.header["id"]

    @property
    def cwd(self) -> str:
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @cached_property
    def tree(self) -> SessionTree:
        index, self.tree_index = self.tree_index, None
        with gc_paused():
            return SessionTree(self.entries, index)

    @property
    def leaf_id(self) -> str | None:
        return self.tree.leaf_id

    @property
    def needs_migration(self) -> bool:
        return bool(self.migrations)

    @property
    def problems(self) -> list[str]:
        """Everything skipped or repaired while reading, as one-line messages."""
        return [str(item) for item in self.skipped] + self.tree.problems

    @property
    def name(self) -> str | None:
        return session_name(self)

    def close(self) -> None:
        """Close the file entries are read back from, if any (see `read_session`'s
        `by_offset`); dropping the session does the same."""
        close = getattr(self.entries, "close", None)
        if close is not None:
            close()


def session_name(session: Session) -> str | None:
    """The display name: pi's `session_info`, else `title_change`, else header title.

    Like pi 0.73, the latest `session_info` decides, so an empty one clears the name.  An
    oh-my-pi file's is the name omp shows: its title slot's (none when empty), else, in a
    file without a slot, its header's `title` (omp reads neither `session_info` nor its own
    `title_change` audit entries for it).
    """
    if session.dialect == "omp":
        return dialects.slot_title(session.title_slot) if session.title_slot is not None else _header_title(session)
    info_seen = False
    info_name: str | None = None
    change_title: str | None = None
    for entry in _entries_of(session).where(("session_info", "title_change")):
        kind = entry.get("type")
        if kind == "session_info":
            info_seen = True
            name = entry.get("name")
            info_name = name.strip() or None if isinstance(name, str) else None
        elif kind == "title_change":
            title = entry.get("title")
            change_title = title.strip() or None if isinstance(title, str) else None
    if info_seen:
        return info_name
    return change_title or _header_title(session)


def _header_title(session: Session) -> str | None:
    title = session.header.get("title")
    return title.strip() or None if isinstance(title, str) else None


def _entries_of(session: Session) -> Entries:
    return Entries.of(session.entries)


_BOM = b"\xef\xbb\xbf"
# From this size on, a read-only load keeps no line in memory: each is read back from the file
# when asked for (`core.linesource`).  Keeping a line costs its bytes and the page faults of
# holding them (on a 200 MB file ~40% of the read); reading one back costs a system call per
# miss and a descriptor held while the session lives.  Below it the bytes are kept: small
# files are the many (a preview's cache, an export) and gain nothing from a held descriptor.
BY_OFFSET_MIN_BYTES = 4 << 20
# Bytes per read of a whole session: the reader keeps every line's bytes (see `core.entries`),
# so a read block is split and dropped at once; a block that stays in the CPU's cache while it
# is split reads a 200 MB session ~5% faster than 8 MB blocks.
_SESSION_BLOCK = 1 << 20  # Node's trim() drops one before JSON.parse: so do we


def _read_records(
    descriptor: int,
    stat: os.stat_result,
    with_digest: bool = True,
    keep: bool | Collection[str] = False,
    source: LineSource | None = None,
    fields: Mapping[str, str] | None = None,
    message_kinds: bool = True,
    message_facts: Callable[[dict[str, Any]], Any] | None = None,
) -> tuple[Parsed, FileStamp, bool]:
    """Stream a file into parsed lines (lines over `MAX_LINE_BYTES` skipped unread), its
    stamp (digested only `with_digest`), and whether it held anything but whitespace.
    `keep`: which parsed entries to keep (see `parse_lines`); `source`: where the others
    are read back from (None: their bytes are kept); `fields`, `message_kinds`, `message_facts`:
    see `read_session`."""
    parsed = Parsed(source, fields, message_kinds, message_facts)
    digest = new_digest() if with_digest else None
    head = os.pread(descriptor, 3, 0)
    start = 3 if head == _BOM else 0
    if start and digest is not None:
        digest.update(_BOM)
    parsed.bounds = content_bounds(descriptor, stat.st_size, head)
    content = False
    for block in line_blocks(descriptor, start, digest=digest, block_size=_SESSION_BLOCK, keepends=True):
        if block.oversized:
            parsed.skipped.append(Skipped(block.line + 1, oversized_reason(block.oversized)))
            content = True
            continue
        content = content or any(line.strip() for line in block.lines)
        # Each line with its newline; only the file's unterminated last line has none (and is
        # reported torn if it does not parse).
        parse_lines(block.lines, parsed, block.line + 1, block.offset, keep=keep, keepends=True)
    hexdigest = digest.hexdigest() if digest is not None else None
    return parsed, FileStamp(stat.st_size, stat.st_mtime_ns, hexdigest), content


def _build(path: Path, parsed: Parsed, stamp: FileStamp, content: bool) -> Session | NotASession:
    numbers, skipped, types = parsed.lines, parsed.skipped, parsed.types
    if not types:
        return NotASession(path, "no readable JSON line" if content else "empty file")
    title_slot = None
    slot_bytes = 0
    first = 0
    if types[0] == dialects.TITLE_SLOT_TYPE:
        title_slot = parsed.value(0)
        slot_bytes = (parsed.first_end or 0) + 1
        first = 1
    if first >= len(types):
        return NotASession(path, "only a title line, no session header")
    head = parsed.value(first)
    if not _is_header(head) or not isinstance(head.get("id"), str):
        return NotASession(path, f"line {numbers[first]} is not a session header")
    before = [item.line for item in skipped if item.line < numbers[first] and item.reason.endswith(NOT_AN_OBJECT)]
    if before:  # pi's first value (`[1]`, `"x"`, `null`) is the header it checks: no session (`ls` agrees)
        return NotASession(path, f"line {min(before)} is not a session header")
    sample = [parsed.value(position) for position in range(first + 1, min(first + 21, len(types)))]
    snake = dialects.is_snake_dialect(head, sample)
    header = dialects.normalise_header(head, snake)
    disk_version = header_version(header)
    # The Python port has its own format and versioning: never re-shape it into pi's.  NaN
    # compares false, so (as in pi) a NaN version applies no step either.
    migrations: list[str] = []
    start = first + 1
    tree_index: TreeIndex | None = None
    if snake or disk_version < CURRENT_VERSION:  # every entry decoded, normalised (and migrated)
        values = [parsed.value(position) for position in range(len(types))]
        if not snake:  # old files: normalised, migrated, then checked
            values, numbers = _placeable(values, numbers, start, skipped, snake, check=False)
            has_ids = any(isinstance(entry.get("id"), str) for entry in values)
            migrations = migrate(header, values, has_ids=has_ids)
            start = 0
        kept, _no_index = _placeable(values, numbers, start, skipped, snake)
        entries = Entries.of(kept)
    else:
        entries, tree_index = _placeable_columns(parsed, start)
    omp = title_slot is not None or _omp_header(header) or _omp_markers(entries)
    dialect = "operator" if snake else ("omp" if omp else "pi")
    return Session(
        path=path,
        header=header,
        entries=entries,
        stamp=stamp,
        disk_version=disk_version,
        dialect=dialect,
        title_slot=title_slot,
        title_slot_bytes=slot_bytes,
        migrations=migrations,
        skipped=sorted(skipped, key=lambda item: item.line),
        tree_index=tree_index,
    )


def _placeable_columns(parsed: Parsed, start: int) -> tuple[Entries, TreeIndex | None]:
    """The entries from position `start` on (a pi v3 file's, after its header) that can be
    placed in a tree, as `Entries` over the reader's columns, and the tree's index.

    The same rules as `_placeable` on the columns, no entry decoded but the few it changes:
    a `model_change` is normalised (`dialects.normalise_entry`), a second session header is
    dropped, and so is an entry without a string type or id; a `parentId` that is not a
    string becomes null; the last of duplicate ids is kept (the tree then builds its own index).

    Uses `parsed` up: its columns lose their first `start` items in place and become the
    entries' (slices would copy each column of hundreds of thousands of items and then free
    the originals: ~10 ms on 200,000 entries).
    """
    numbers, skipped = parsed.lines, parsed.skipped
    dropped: list[int] = []  # positions not kept (few)
    fast = _up_of_clean_columns(parsed, start)
    up, later = fast if fast is not None else _up_checking_each(parsed, start, dropped)
    columns = (parsed.items, parsed.ids, parsed.parents, parsed.types, parsed.kinds, parsed.offsets, parsed.lengths)
    for column in (*columns, numbers, parsed.field_values, parsed.facts):
        if column is not None:  # (the message kinds when not asked for)
            del column[:start]  # (a move of pointers, nothing copied or freed but the header's)
    entries = Entries(
        *columns,
        parsed.source,
        plain_types=True if fast is not None else None,  # (every type a string: checked above)
        fields=parsed.fields,
        field_values=parsed.field_values,
        message_facts=parsed.facts,
        message_facts_of=parsed.facts_of,
    )
    kept_lines = numbers
    if dropped:
        gone = {position - start for position in dropped}
        keep = [position for position in range(len(entries)) if position not in gone]
        entries = entries.select(keep)
        kept_lines = array("q", (kept_lines[position] for position in keep))
    kept_ids = entries.ids
    if len(set(kept_ids)) == len(kept_ids):  # no id twice: the tree's index (a set: half a dict's cost)
        positions = IdPositions(kept_ids)  # id -> its position, made when first needed
        unseen: list[str] = []  # (in entry order) a parent after its child, itself, or a missing one
        find, kept_parents = positions.get, entries.parents
        for at in later:
            above = find(kept_parents[at])
            if above is None or above >= at:
                unseen.append(kept_ids[at])
            else:
                up[at] = above
        return entries, TreeIndex(positions, unseen, "label" in entries.types, up)
    # The last of duplicate ids is kept: the earlier ones are reported and dropped (the tree
    # then indexes the entries itself).
    last = {entry_id: position for position, entry_id in enumerate(entries.ids)}
    keep = []
    for position, entry_id in enumerate(entries.ids):
        if last[entry_id] == position:
            keep.append(position)
        else:
            skipped.append(Skipped(kept_lines[position], f"duplicate id {entry_id} (the later entry is used)"))
    return entries.select(keep), None


def _up_of_clean_columns(parsed: Parsed, start: int) -> tuple[array, list[int]] | None:
    """`_up_checking_each` for columns with nothing to drop (no second header, every type
    and id a non-empty string, no junk parent: checked a column at a time), looking only at
    the entries whose parent is not the one just before (the reader shares that id's object:
    `parse_lines`) and the `model_change`s (normalised, as there); None for columns that need
    the entry-by-entry pass (nothing changed then)."""
    ids, parents, types = parsed.ids, parsed.parents, parsed.types
    clean = parsed.clean  # (types and ids checked while parsing)
    if not clean and set(map(type, islice(types, start, None))) - {str}:  # (a list is not even hashable)
        return None
    kinds = set(islice(types, start, None))  # (a few values)
    if kinds & dialects.HEADER_TYPES:
        return None
    kept_ids = ids[start:]
    if not clean and (set(map(type, kept_ids)) - {str} or "" in kept_ids):
        return None
    count = len(kept_ids)
    up = chain_positions(count)[:]  # each under the entry just before: corrected below
    later: list[int] = []
    # The kept positions whose parent is not the very id object of the entry before (a root,
    # a fork, a junk parent): recorded by the reader (`Parsed.unchained`), few in a session.
    odd = (position - start for position in parsed.unchained if position > start)
    for kept in chain((0,) if count else (), odd):
        parent = parents[start + kept]
        if kept and parent == kept_ids[kept - 1]:
            continue  # (equal, another object)
        if parent is None:
            up[kept] = -1
        elif parent.__class__ is str:
            up[kept] = -1
            later.append(kept)
        else:  # a junk parent: the entry-by-entry pass reports and repairs it
            return None
    if "model_change" in kinds:  # (its type stays: nothing above changes)
        changes = compress(range(start, len(types)), map(eq, islice(types, start, None), repeat("model_change")))
        for position in changes:
            parsed.items[position] = dialects.normalise_entry(parsed.value(position), False)
    return up, later


def _up_checking_each(parsed: Parsed, start: int, dropped: list[int]) -> tuple[array, list[int]]:
    """Per entry from `start` on, in one pass that checks each: its parent's kept position
    when that is the entry kept just before (else -1), and the kept positions whose parent
    is to be looked up (`later`).  An entry that cannot be placed is reported and its
    position added to `dropped`; a `model_change` is normalised, a junk parent set to null."""
    items, ids, parents, types = parsed.items, parsed.ids, parsed.parents, parsed.types
    numbers, skipped = parsed.lines, parsed.skipped
    header_types = dialects.HEADER_TYPES
    up = array("q")  # per kept position: its parent's kept position when that comes first, else -1
    add_up = up.append
    later: list[int] = []  # kept positions whose parent is not the entry just before: looked up below
    add_later = later.append
    previous: Any = None  # the id of the last entry kept
    kept = -1  # its position among the kept entries
    position = start - 1
    columns = zip(islice(types, start, None), islice(ids, start, None), islice(parents, start, None), strict=True)
    for kind, entry_id, parent in columns:  # the hot loop: millions of entries
        position += 1
        if kind == "model_change":  # the only entries `normalise_entry` changes in pi's dialect
            entry = dialects.normalise_entry(parsed.value(position), False)
            items[position] = entry
            kind = types[position] = entry.get("type")
        if kind.__class__ is not str or kind in header_types or entry_id.__class__ is not str or not entry_id:
            if kind.__class__ is not str:
                reason = "entry without a string type"
            elif kind in header_types:
                reason = "a second session header"
            else:
                reason = "entry without a string id"
            skipped.append(Skipped(numbers[position], reason))
            dropped.append(position)
            continue
        kept += 1
        if parent is None:
            add_up(-1)
        elif parent == previous:  # a chain: most of a session (a junk parent never equals a string id)
            add_up(kept - 1)
        elif parent.__class__ is str:
            add_up(-1)
            add_later(kept)
        else:
            skipped.append(Skipped(numbers[position], f"parentId of entry {entry_id} is not a string; shown as a root"))
            entry = parsed.value(position)
            entry["parentId"] = parents[position] = None
            items[position] = entry
            add_up(-1)
        previous = entry_id
    return up, later


def _is_header(value: dict[str, Any]) -> bool:
    """A session header line (its `type` checked as a string first: a list is unhashable)."""
    kind = value.get("type")
    return isinstance(kind, str) and kind in dialects.HEADER_TYPES


_OMP_TYPES = frozenset({"ttsr_injection", "session_init", "mode_change", "title_change", "service_tier_change"})


def _omp_header(header: dict[str, Any]) -> bool:
    """An oh-my-pi header: it has a `title` (omp wrote its titles there before its title
    slot, and still reads them; pi's header has none)."""
    return isinstance(header.get("title"), str)


def _omp_markers(entries: Entries) -> bool:
    """An entry among the first 200 only oh-my-pi writes: one of its own types, or its
    `model_change` (`"model": "provider/id"`, the first entry of every omp session; pi's has
    `provider` and `modelId`)."""
    types = entries.types[:200]
    if any(kind in _OMP_TYPES for kind in types):
        return True
    changes = (position for position, kind in enumerate(types) if kind == "model_change")
    return any(isinstance(entries[position].get("model"), str) for position in changes)


def _placeable(
    values: list[dict[str, Any]],
    numbers: array,
    start: int,
    skipped: list[Skipped],
    snake: bool,
    *,
    check: bool = True,
) -> Any:
    """The entries from `values[start:]`, in pi's shape, that can be placed in a tree.

    The path of files whose every entry is decoded (see `_build`).  Each is normalised
    (`dialects.normalise_entry`), a second session header is dropped, and then (with
    `check`) so is an entry without a string type or id; a `parentId` that is not a string
    becomes null; the last of duplicate ids is kept.

    With `check`: returns the entries and None (the tree indexes them itself: this path reads
    old and Python-port files, not the huge ones).  Without `check` (before a migration gives
    old entries their ids): returns the entries and their line numbers.
    """
    header_types = dialects.HEADER_TYPES
    normalise = dialects.normalise_entry
    kept: list[dict[str, Any]] = []
    append = kept.append
    kept_lines = array("q")
    dropped: set[int] = set()  # positions not kept (few): kept entries' lines are the others'
    latest: dict[str, dict[str, Any]] = {}  # id -> the entry that has it last
    duplicated: set[str] = set()
    for position in range(start, len(values)):  # the hot loop: millions of entries
        entry = values[position]
        kind = entry.get("type")
        if snake or kind == "model_change":  # the only entries `normalise_entry` changes
            entry = normalise(entry, snake)
            kind = entry.get("type")
        if kind.__class__ is not str:
            if check:
                skipped.append(Skipped(numbers[position], "entry without a string type"))
                dropped.add(position)
                continue
        elif kind in header_types:
            skipped.append(Skipped(numbers[position], "a second session header"))
            dropped.add(position)
            continue
        if not check:
            append(entry)
            kept_lines.append(numbers[position])
            continue
        entry_id = entry.get("id")
        if entry_id.__class__ is not str or not entry_id:
            skipped.append(Skipped(numbers[position], "entry without a string id"))
            dropped.add(position)
            continue
        parent = entry.get("parentId")
        if parent is not None and parent.__class__ is not str:
            skipped.append(Skipped(numbers[position], f"parentId of entry {entry_id} is not a string; shown as a root"))
            entry["parentId"] = None
        if entry_id in latest:
            duplicated.add(entry_id)
        latest[entry_id] = entry
        append(entry)
    if not check:
        return kept, kept_lines
    if not duplicated:
        return kept, None
    kept_lines = array("q", (numbers[position] for position in range(start, len(values)) if position not in dropped))
    out = []
    for index, entry in enumerate(kept):
        entry_id = entry["id"]
        if entry_id in duplicated and latest[entry_id] is not entry:
            skipped.append(Skipped(kept_lines[index], f"duplicate id {entry_id} (the later entry is used)"))
        else:
            out.append(entry)
    return out, None


def read_session(
    path: str | os.PathLike[str],
    *,
    digest: bool = True,
    decoded: bool | Collection[str] = False,
    by_offset: bool | None = None,
    fields: Mapping[str, str] | None = None,
    message_kinds: bool = True,
    message_facts: Callable[[dict[str, Any]], Any] | None = None,
) -> Session | NotASession:
    """Read a session file.  Never raises for bad content or a vanished/unreadable file.

    `digest=False` is for a read-only use (show, tree, a preview): the stamp then holds no
    content digest, and the write path refuses it (see `FileStamp`).  Entries are decoded
    from their lines when asked for (see `core.entries`); `decoded` keeps parsed entries
    instead, for a caller that reads them: True every entry (`tree --text`, stats, export),
    a collection of types the entries of those types (`show`: what the context reads).  The
    same entries either way, without parsing a line twice.

    `by_offset`: keep no line in memory, read each back from the file held open (see
    `core.linesource`; a file rewritten in place since raises `SessionChangedError` on such
    a read).  None (the default) chooses it for a read-only load (`digest=False`) of a file
    of `BY_OFFSET_MIN_BYTES` or more whose entries are not all kept decoded; the write path
    never reads back.  The descriptor is closed when the session is dropped, by
    `Session.close()`, or at once when no entry needs it.

    `fields`: entry type -> the one field of it the caller reads (`tree --text`: a `custom`
    entry's row is its `customType`): that field's value is kept per entry in
    `Entries.field_values`, so the entries of those types need not be kept decoded nor
    read again.  A pi v3 file's columns carry it; a file whose entries are all decoded
    (older versions, the Python port) has none (`field_values` None: read the entries).
    `model_change` is never one of them (the reader may rewrite its `modelId`).

    `message_kinds=False`: the caller never asks what kind each message is (`tree --json`):
    the reader does not look inside them (`Entries.message_kinds` is then made when first
    asked for, from the entries).

    `message_facts`: a function of a message (a `message` entry's `message`, an object) that
    gives what the caller reads of it (`show`: its `message_text`, see `context.context_texts`;
    `tree --text`: its row): applied to each message as it is parsed (`Entries.message_facts`),
    so the messages need not be kept decoded (their kinds are read with them, whatever
    `message_kinds` says).  A file whose entries are all decoded (older versions, the Python
    port) has none (None: read the entries).
    """
    if fields:
        fields = {kind: name for kind, name in fields.items() if kind != "model_change"}
    file_path = Path(path).expanduser().absolute()
    source: LineSource | None = None
    result: Session | NotASession | None = None
    try:
        descriptor, stat = open_regular(file_path)  # a FIFO or device never blocks us
        try:
            if by_offset is None:
                by_offset = not digest and decoded is not True and stat.st_size >= BY_OFFSET_MIN_BYTES
            if by_offset:
                source = LineSource(descriptor, file_path)  # (owns the descriptor from here)
            with gc_paused():
                parsed, stamp, content = _read_records(
                    descriptor, stat, digest, decoded, source, fields, message_kinds, message_facts
                )
        finally:
            if source is None:
                os.close(descriptor)
        with gc_paused():
            result = _build(file_path, parsed, stamp, content)
    except FileNotFoundError:
        result = NotASession(file_path, "no such file")
    except PermissionError:
        result = NotASession(file_path, "permission denied")
    except OSError as error:
        result = NotASession(file_path, error.strerror or str(error))
    finally:
        if source is not None and not (isinstance(result, Session) and result.entries.by_offset):
            source.close()  # nothing is read back (or the read failed): no descriptor held
    return result


def load_session(path: str | os.PathLike[str]) -> Session:
    """Like `read_session`, but raises `SessionError` for a file that is not a session."""
    result = read_session(path)
    if isinstance(result, NotASession):
        raise SessionError(f"{result.path}: not a session ({result.reason})")
    return result


__all__ = [
    "CURRENT_VERSION",
    "FileStamp",
    "NotASession",
    "Session",
    "SessionError",
    "load_session",
    "read_session",
    "session_name",
]
