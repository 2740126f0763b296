"""Load one session file into the normalised model — read-only, never raising on bad input.

`read_session(path)` returns a `Session` or a `NotASession` that says why.  Everything that
was skipped on the way (bad lines, entries without ids, duplicate ids, broken parents) is
listed in `Session.problems`, so a caller can tell the user instead of failing.
"""

from __future__ import annotations

import hashlib
import os
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from . import dialects
from .errors import SessionError  # re-exported: its home is errors.py (cheap for the CLI to import)
from .gcpause import gc_paused
from .jsonl import Parsed, Skipped, line_blocks, oversized_reason, parse_lines
from .migrate import CURRENT_VERSION, header_version, migrate
from .safeopen import open_regular
from .tree import SessionTree


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What a file looked like when it was read: used to refuse writes if it changed."""

    size: int
    mtime_ns: int
    digest: str

    @classmethod
    def of_bytes(cls, data: bytes, stat: os.stat_result) -> FileStamp:
        return cls(stat.st_size, stat.st_mtime_ns, hashlib.blake2b(data, digest_size=16).hexdigest())


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
    entries: list[dict[str, Any]]
    stamp: FileStamp
    disk_version: int | float  # as pi compares it: see `header_version`
    dialect: str
    title_slot: dict[str, Any] | None = None
    title_slot_bytes: int = 0
    migrations: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # What the reader already knows for the tree: entries by id (in entry order) and whether
    # any entry names a parent that comes after it.  Handed to `SessionTree` once.
    tree_index: tuple[dict[str, dict[str, Any]], bool] | None = field(default=None, repr=False, compare=False)

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
            if index is None:
                return SessionTree(self.entries)
            return SessionTree(self.entries, index[0], forward=index[1])

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


def session_name(session: Session) -> str | None:
    """The display name: pi's `session_info`, else omp's title slot / `title_change`, else header title.

    Like pi 0.73, the latest `session_info` decides, so an empty one clears the name.
    """
    info_seen = False
    info_name: str | None = None
    change_title: str | None = None
    for entry in session.entries:
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
    if session.title_slot is not None:
        return dialects.slot_title(session.title_slot) or change_title
    if change_title:
        return change_title
    title = session.header.get("title")
    return title.strip() or None if isinstance(title, str) else None


_BOM = b"\xef\xbb\xbf"  # Node's trim() drops one before JSON.parse: so do we


def _read_records(descriptor: int, stat: os.stat_result) -> tuple[Parsed, FileStamp, bool]:
    """Stream a file into parsed lines (lines over `MAX_LINE_BYTES` skipped unread), its
    stamp, and whether it held anything but whitespace."""
    parsed = Parsed()
    digest = hashlib.blake2b(digest_size=16)
    start = 3 if os.pread(descriptor, 3, 0) == _BOM else 0
    if start:
        digest.update(_BOM)
    content = False
    for block in line_blocks(descriptor, start, digest=digest):
        if block.oversized:
            parsed.skipped.append(Skipped(block.line + 1, oversized_reason(block.oversized)))
            content = True
            continue
        content = content or bool(block.data.strip())
        # A block of whole lines splits into an empty last piece; only the file's unterminated
        # last line is a non-empty one there (and reported torn if it does not parse).
        parse_lines(block.data.split(b"\n"), parsed, block.line + 1, block.offset)
    return parsed, FileStamp(stat.st_size, stat.st_mtime_ns, digest.hexdigest()), content


def _build(path: Path, parsed: Parsed, stamp: FileStamp, content: bool) -> Session | NotASession:
    values, numbers, skipped = parsed.values, parsed.lines, parsed.skipped
    if not values:
        return NotASession(path, "no readable JSON line" if content else "empty file")
    title_slot = None
    slot_bytes = 0
    first = 0
    if values[0].get("type") == dialects.TITLE_SLOT_TYPE:
        title_slot = values[0]
        slot_bytes = (parsed.first_end or 0) + 1
        first = 1
    if first >= len(values):
        return NotASession(path, "only a title line, no session header")
    head = values[first]
    if not _is_header(head) or not isinstance(head.get("id"), str):
        return NotASession(path, f"line {numbers[first]} is not a session header")
    snake = dialects.is_snake_dialect(head, values[first + 1 : first + 21])
    header = dialects.normalise_header(head, snake)
    disk_version = header_version(header)
    entries: list[dict[str, Any]] = []
    lines = array("q")
    header_types = dialects.HEADER_TYPES
    normalise = dialects.normalise_entry
    for position in range(first + 1, len(values)):  # the hot loop: millions of entries
        entry = values[position]
        kind = entry.get("type")
        if snake or kind == "model_change":  # the only entries `normalise_entry` changes
            entry = normalise(entry, snake)
            kind = entry.get("type")
        if kind.__class__ is str and kind in header_types:
            skipped.append(Skipped(numbers[position], "a second session header"))
            continue
        entries.append(entry)
        lines.append(numbers[position])
    del values[:]  # the entries hold what is needed
    has_ids = any(isinstance(entry.get("id"), str) for entry in entries)
    # The Python port has its own format and versioning: never re-shape it into pi's.
    migrations = [] if snake else migrate(header, entries, has_ids=has_ids)
    entries, tree_index = _valid_entries(entries, lines, skipped)
    dialect = "operator" if snake else ("omp" if title_slot is not None or _omp_markers(entries) else "pi")
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


def _is_header(value: dict[str, Any]) -> bool:
    """A session header line (its `type` checked as a string first: a list is unhashable)."""
    kind = value.get("type")
    return isinstance(kind, str) and kind in dialects.HEADER_TYPES


_OMP_TYPES = frozenset({"ttsr_injection", "session_init", "mode_change", "title_change", "service_tier_change"})


def _omp_markers(entries: list[dict[str, Any]]) -> bool:
    return any(entry.get("type") in _OMP_TYPES for entry in entries[:200])


def _names_later(entry: dict[str, Any], by_id: dict[str, dict[str, Any]]) -> bool:
    parent = entry["parentId"]
    return parent != entry["id"] and parent in by_id


def _valid_entries(
    entries: list[dict[str, Any]], lines: array, skipped: list[Skipped]
) -> tuple[list[dict[str, Any]], tuple[dict[str, dict[str, Any]], bool] | None]:
    """Drop entries that cannot be placed (no id, no type); keep the last of duplicate ids.

    Millions of entries may pass here: a `parentId` becomes the parent's own id string, so
    the entry does not hold a copy (50-odd bytes an entry).  Without duplicate ids the
    id → entry map built on the way is the tree's `by_id` (returned with whether a parent
    comes after its child); with them the tree builds its own.
    """
    kept: list[dict[str, Any]] = []
    kept_lines = array("q")
    latest: dict[str, dict[str, Any]] = {}  # id -> the entry that has it last
    duplicated: set[str] = set()
    unseen: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):  # one pass: millions of entries
        entry_id = entry.get("id")
        if entry.get("type").__class__ is not str:
            skipped.append(Skipped(lines[index], "entry without a string type"))
            continue
        if entry_id.__class__ is not str or not entry_id:
            skipped.append(Skipped(lines[index], "entry without a string id"))
            continue
        parent = entry.get("parentId")
        if parent is not None:
            if parent.__class__ is not str:
                skipped.append(Skipped(lines[index], f"parentId of entry {entry_id} is not a string; shown as a root"))
                entry["parentId"] = None
            else:
                parent_entry = latest.get(parent)
                if parent_entry is not None:  # share the parent's id string instead of a copy
                    entry["parentId"] = parent_entry["id"]
                else:  # a parent after its child, or a missing one
                    unseen.append(entry)
        if entry_id in latest:
            duplicated.add(entry_id)
        latest[entry_id] = entry
        kept.append(entry)
        kept_lines.append(lines[index])
    if not duplicated:
        return kept, (latest, any(_names_later(entry, latest) for entry in unseen))
    out = []
    for index, entry in enumerate(kept):
        entry_id = entry["id"]
        if entry_id in duplicated and latest[entry_id] is not entry:
            skipped.append(Skipped(kept_lines[index], f"duplicate id {entry_id} (the later entry is used)"))
        else:
            out.append(entry)
    return out, None


def read_session(path: str | os.PathLike[str]) -> Session | NotASession:
    """Read a session file.  Never raises for bad content or a vanished/unreadable file."""
    file_path = Path(path).expanduser().absolute()
    try:
        descriptor, stat = open_regular(file_path)  # a FIFO or device never blocks us
        try:
            with gc_paused():
                parsed, stamp, content = _read_records(descriptor, stat)
        finally:
            os.close(descriptor)
    except FileNotFoundError:
        return NotASession(file_path, "no such file")
    except PermissionError:
        return NotASession(file_path, "permission denied")
    except OSError as error:
        return NotASession(file_path, error.strerror or str(error))
    with gc_paused():
        return _build(file_path, parsed, stamp, content)


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
