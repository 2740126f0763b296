"""The only code that writes session files.  Every write is explicit, atomic and race-safe.

* Full rewrites (persisting a migration): temp file in the same directory, fsync, rename.
* Appends (labels, names): one `write()` of one line on an O_APPEND descriptor.
* oh-my-pi renames: the fixed 256-byte title slot rewritten in place (size unchanged).

Each refuses, writing nothing, when the file on disk is no longer the one that was read
(an agent may be appending to it right now): `FileChangedError`.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

import orjson

from . import dialects
from .session import FileStamp, Session, SessionError, load_session, read_session
from .timefmt import now_iso

TITLE_SLOT_SIZE = 256


class FileChangedError(SessionError):
    """The file changed on disk since it was read; nothing was written."""


def _check_unchanged(path: Path, stamp: FileStamp, *, verify_content: bool = True) -> None:
    try:
        stat = os.stat(path)
    except FileNotFoundError as error:
        raise FileChangedError(f"{path}: the file is gone; nothing was written") from error
    if stat.st_size != stamp.size or stat.st_mtime_ns != stamp.mtime_ns:
        raise FileChangedError(f"{path}: the file changed on disk since it was read; nothing was written")
    if verify_content:
        with open(path, "rb") as handle:
            current = FileStamp.of_bytes(handle.read(), stat)
        if current.digest != stamp.digest:
            raise FileChangedError(f"{path}: the file changed on disk since it was read; nothing was written")


def atomic_write(path: Path, data: bytes, expected: FileStamp | None) -> None:
    """Replace `path` with `data`: temp + fsync + rename, refused if the file changed.

    A symlinked session is replaced at its target: the link stays a link.
    """
    path = Path(os.path.realpath(path))
    directory = path.parent
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temp_name, os.stat(path).st_mode & 0o7777)
        if expected is not None:
            _check_unchanged(path, expected)
        os.replace(temp_name, path)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError:
        pass


def dumps_line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def persist_migration(session: Session) -> bool:
    """Write a session's in-memory migration to disk.  Returns False if none was pending.

    The rewritten file keeps oh-my-pi's title slot as it was and drops lines that could
    not be parsed (pi and omp do the same on their rewrite).
    """
    if not session.needs_migration:
        return False
    parts: list[bytes] = []
    if session.title_slot is not None:
        with open(session.path, "rb") as handle:
            parts.append(handle.read(session.title_slot_bytes))
    parts.append(dumps_line(session.header))
    parts.extend(dumps_line(entry) for entry in session.entries)
    atomic_write(session.path, b"".join(parts), session.stamp)
    session.migrations = []
    return True


def append_entry(session: Session, entry: dict[str, Any]) -> None:
    """Append one entry as a single write, refused if the file changed since it was read."""
    if session.needs_migration:
        raise SessionError(f"{session.path}: is an old (v{session.disk_version}) session; persist its migration first")
    _check_unchanged(session.path, session.stamp)
    line = dumps_line(dialects.denormalise_entry(entry, session.dialect))
    fd = os.open(session.path, os.O_WRONLY | os.O_APPEND)
    try:
        if session.stamp.size and not _ends_with_newline(session.path):
            line = b"\n" + line  # never glue onto a torn last line
        written = os.write(fd, line)
        if written != len(line):
            raise SessionError(f"{session.path}: short write ({written} of {len(line)} bytes)")
        os.fsync(fd)
    finally:
        os.close(fd)


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


def new_entry_id(session: Session) -> str:
    """An 8-hex id not used in the session (pi's rule)."""
    while True:
        candidate = secrets.token_hex(4)
        if candidate not in session.tree.by_id:
            return candidate


def _has_assistant(session: Session) -> bool:
    return any(
        entry.get("type") == "message"
        and isinstance(entry.get("message"), dict)
        and entry["message"].get("role") == "assistant"
        for entry in session.entries
    )


def load_for_write(path: str | os.PathLike[str]) -> Session:
    """Load a session about to receive an explicit write, persisting a pending migration first.

    pi migrates an old (v1/v2) file on open and rewrites it before appending; an append in
    the new shape onto an old file would be unreadable, so the user's explicit write is also
    the moment the migration is persisted (atomically, refused if the file changed).
    """
    session = load_session(path)
    if session.needs_migration:
        persist_migration(session)
        session = load_session(path)
    return session


def set_label(path: str | os.PathLike[str], target_id: str, label: str | None) -> dict[str, Any]:
    """Set (or clear, with an empty label) the label of an entry, the way pi writes it.

    One `label` entry is appended as a child of the session's current leaf.
    """
    session = load_for_write(path)
    if target_id not in session.tree.by_id:
        raise SessionError(f"{session.path}: no entry {target_id}")
    text = (label or "").strip()
    entry: dict[str, Any] = {
        "type": "label",
        "id": new_entry_id(session),
        "parentId": session.leaf_id,
        "timestamp": now_iso(),
        "targetId": target_id,
    }
    if text:
        entry["label"] = text
    append_entry(session, entry)
    return entry


def rename_session(path: str | os.PathLike[str], name: str) -> str:
    """Give a session a display name.  Returns how it was stored: "session_info" or "title-slot".

    pi dialect: append a `session_info` entry (pi persists nothing before the first
    assistant message, so neither do we).  oh-my-pi: rewrite the 256-byte title slot in place.
    """
    text = name.strip()
    if not text:
        raise SessionError("a name cannot be empty")
    session = load_session(path)
    if session.title_slot is not None:
        write_title_slot(session, text)
        return "title-slot"
    if not _has_assistant(session):
        raise SessionError(f"{session.path}: has no assistant reply yet; pi does not persist a name before one")
    if session.needs_migration:
        session = load_for_write(path)
    entry = {
        "type": "session_info",
        "id": new_entry_id(session),
        "parentId": session.leaf_id,
        "timestamp": now_iso(),
        "name": text,
    }
    append_entry(session, entry)
    return "session_info"


def title_slot_bytes(title: str, updated_at: str, source: str = "user") -> bytes:
    """oh-my-pi's fixed-width title line: exactly 256 bytes including the newline."""
    chars = list(title)
    while True:
        slot = {"type": "title", "v": 1, "title": "".join(chars), "source": source, "updatedAt": updated_at, "pad": ""}
        size = len(orjson.dumps(slot)) + 1
        if size <= TITLE_SLOT_SIZE:
            slot["pad"] = " " * (TITLE_SLOT_SIZE - size)
            line = orjson.dumps(slot) + b"\n"
            assert len(line) == TITLE_SLOT_SIZE
            return line
        chars.pop()


def write_title_slot(session: Session, title: str) -> None:
    """Rewrite the title slot in place (r+ at offset 0), refused if the file changed."""
    if session.title_slot_bytes != TITLE_SLOT_SIZE:
        raise SessionError(f"{session.path}: title line is not the 256-byte slot; refusing to rewrite it")
    line = title_slot_bytes(title, now_iso())
    _check_unchanged(session.path, session.stamp)
    with open(session.path, "r+b") as handle:
        handle.seek(0)
        handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())


def reload(session: Session) -> Session:
    """Read the session again from disk (after a write)."""
    return load_session(session.path)


__all__ = [
    "FileChangedError",
    "append_entry",
    "atomic_write",
    "persist_migration",
    "read_session",
    "rename_session",
    "set_label",
    "title_slot_bytes",
    "write_title_slot",
]
