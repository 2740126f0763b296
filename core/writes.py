"""The only code that writes session files.  Every write is explicit and cannot lose an agent's line.

* Full rewrites (persisting a migration): `core.safefile.atomic_write` — refused while the
  file is busy (recently written, or held open by another process), the old inode kept
  open over the rename and whatever reached it late carried over, owner/group/mode kept,
  free space checked, seance's stale temp files cleaned.  Its docstring has the design.
* Appends (labels, names): `core.appendline.append_child` — one `write()` of one whole line
  whose parent is the file's last entry at the moment of writing (a lock-free re-check
  loop, verified after the write), no blank lines, no torn line left on a full disk.
* oh-my-pi renames: the fixed 256-byte title slot rewritten in place with `pwrite` (size
  unchanged, so lines appended meanwhile are untouched), refused unless the slot on disk
  is still the one that was read; a file from before omp's slot: its header line's `title`,
  by a full rewrite.

A refusal is a one-line `FileChangedError` (a `SessionError`): nothing was written.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import orjson

from . import dialects
from .appendline import append_child
from .errors import FileChangedError
from .jsonl import LineError, loads_line
from .safefile import atomic_write, create_new
from .session import Session, SessionError, load_session, new_digest, read_session, session_name
from .text import is_utf8
from .timefmt import now_iso

TITLE_SLOT_SIZE = 256
_BOM = b"\xef\xbb\xbf"


def dumps_line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def persist_migration(session: Session, *, quiet: float | None = None) -> bool:
    """Write a session's in-memory migration to disk.  Returns False if none was pending.

    The rewritten file keeps oh-my-pi's title slot as it was and drops lines that could
    not be parsed (pi and omp do the same on their rewrite).  `quiet` overrides how long
    the file must have been unchanged (see `core.safefile.quiet_seconds`).
    """
    if not session.needs_migration:
        return False
    _refuse_dropping_lines(session)
    parts: list[bytes] = []
    if session.title_slot is not None:
        with open(session.path, "rb") as handle:
            parts.append(handle.read(session.title_slot_bytes))
    parts.append(dumps_line(session.header))
    parts.extend(dumps_line(entry) for entry in session.entries)
    atomic_write(session.path, b"".join(parts), session.stamp, quiet=quiet)
    session.migrations = []
    return True


def _refuse_dropping_lines(session: Session) -> None:
    """Refuse a migration's rewrite that would lose lines pi keeps on its own rewrite.

    pi rewrites every line `JSON.parse` reads (it drops only the ones it cannot parse); the
    rewrite here writes the entries seance placed in the tree, so a duplicate id, an entry
    without an id or type, a second header, a JSON value that is no object or a line over the
    reader's size limit would be gone from the file.  Counted, not guessed from the reasons.
    """
    with open(session.path, "rb") as handle:
        data = handle.read(session.stamp.size)  # what was read (an agent may have appended since)
    if new_digest(data).hexdigest() != session.stamp.digest:
        return  # rewritten underneath: the rewrite itself refuses it
    readable = 0
    for line in data.removeprefix(b"\xef\xbb\xbf").split(b"\n"):
        if line.strip():
            try:
                loads_line(line)
            except LineError:
                continue
            readable += 1
    written = 1 + (session.title_slot is not None) + len(session.entries)
    if readable > written:
        why = "; ".join(str(item) for item in session.skipped[:3]) + ("; …" if len(session.skipped) > 3 else "")
        raise SessionError(
            f"{session.path}: is an old (v{session.disk_version}) session; writing it in the current format "
            f"would drop {readable - written} line(s) pi keeps" + (f" ({why})" if why else "") + "; nothing was written"
        )


def append_entry(session: Session, entry: dict[str, Any]) -> None:
    """Append one entry as a single write, as a child of the file's last entry at that moment.

    `entry["parentId"]` is set to the parent actually used (lines an agent appended since
    the session was read are taken into account); refused if the file was rewritten.
    """
    if session.needs_migration:
        raise SessionError(f"{session.path}: is an old (v{session.disk_version}) session; persist its migration first")

    def line_for(parent: str | None) -> bytes:
        return dumps_line(dialects.denormalise_entry({**entry, "parentId": parent}, session.dialect))

    entry["parentId"] = append_child(Path(session.path), session.stamp, entry.get("parentId"), line_for)


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


def load_for_write(path: str | os.PathLike[str], *, quiet: float | None = None) -> Session:
    """Load a session about to receive an explicit write, persisting a pending migration first.

    pi migrates an old (v1/v2) file on open and rewrites it before appending; an append in
    the new shape onto an old file would be unreadable, so the user's explicit write is also
    the moment the migration is persisted (atomically, refused if the file changed).
    """
    session = load_session(path)
    if session.needs_migration:
        persist_migration(session, quiet=quiet)
        session = load_session(path)
    return session


def set_label(
    path: str | os.PathLike[str], target_id: str, label: str | None, *, quiet: float | None = None
) -> dict[str, Any]:
    """Set (or clear, with an empty label) the label of an entry, the way pi writes it.

    One `label` entry is appended as a child of the session's current leaf (its last line).
    """
    text = _utf8((label or "").strip(), "label")
    session = load_for_write(path, quiet=quiet)
    if target_id not in session.tree.by_id:
        raise SessionError(f"{session.path}: no entry {target_id}")
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


def _utf8(text: str, what: str) -> str:
    """`text` to write, refused (before anything is read) when it is not valid UTF-8: a byte
    from a terminal that is not UTF-8 in argv, which no JSON line can hold as pi reads it."""
    if not is_utf8(text):
        raise SessionError(f"the {what} is not valid UTF-8 (a byte from a terminal that is not UTF-8?)")
    return text


def rename_session(path: str | os.PathLike[str], name: str, *, quiet: float | None = None) -> str:
    """Give a session a display name, or clear it with an empty one.  Returns how it was
    stored: "session_info" or "title-slot".

    pi dialect: append a `session_info` entry (pi persists nothing before the first
    assistant message, so neither do we); an empty name is what pi's `appendSessionInfo`
    writes for a blank name, and pi reads the latest one, so it clears the name.  oh-my-pi:
    rewrite the 256-byte title slot in place (an empty title clears it); a file from before
    omp's slot ("header-title"): the header's `title`, which omp reads when there is no slot
    (it knows no `session_info`).  Clearing a session that has no name is refused: there is
    nothing to write.
    """
    text = _utf8(name.strip(), "name")
    session = load_session(path)
    if not text and session_name(session) is None:
        raise SessionError(f"{session.path}: has no name to clear")
    if session.title_slot is not None:
        write_title_slot(session, text)
        return "title-slot"
    if session.dialect == "omp":
        write_header_title(session, text, quiet=quiet)
        return "header-title"
    if not _has_assistant(session):
        raise SessionError(f"{session.path}: has no assistant reply yet; pi does not persist a name before one")
    if session.needs_migration:
        session = load_for_write(path, quiet=quiet)
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
    return _title_slot(title, updated_at, source)[0]


def stored_title(title: str, source: str = "user") -> str:
    """The part of `title` the 256-byte slot holds (a long title is cut to fit): what a
    rename of an oh-my-pi file really stores, to tell the user."""
    return _title_slot(title, now_iso(), source)[1]


def _title_slot(title: str, updated_at: str, source: str) -> tuple[bytes, str]:
    """(the slot line, the title it holds): the title's characters, as many as fit."""
    chars = list(title)
    while True:
        kept = "".join(chars)
        slot = {"type": "title", "v": 1, "title": kept, "source": source, "updatedAt": updated_at, "pad": ""}
        size = len(orjson.dumps(slot)) + 1
        if size <= TITLE_SLOT_SIZE:
            slot["pad"] = " " * (TITLE_SLOT_SIZE - size)
            line = orjson.dumps(slot) + b"\n"
            assert len(line) == TITLE_SLOT_SIZE
            return line, kept
        chars.pop()


def write_header_title(session: Session, title: str, *, quiet: float | None = None) -> None:
    """Set (empty: clear) the header's `title` of an oh-my-pi file without a title slot,
    as omp did before its slot: the header line rewritten, every other byte kept, atomically
    (`core.safefile.atomic_write`), refused if the file changed since it was read, or if the
    header is not JSON that writes back the same (`_header_object`)."""
    with open(session.path, "rb") as handle:
        data = handle.read(session.stamp.size)
    if new_digest(data).hexdigest() != session.stamp.digest:
        raise FileChangedError(f"{session.path}: the file changed on disk since it was read; nothing was written")
    start = len(_BOM) if data.startswith(_BOM) else 0
    end = data.find(b"\n", start)
    end = len(data) if end < 0 else end
    header = _header_object(session, data[start:end])
    header["title"], header["titleSource"] = title, "user"  # ("": no title, still omp's header)
    rest = data[end:] or b"\n"
    atomic_write(session.path, data[:start] + orjson.dumps(header) + rest, session.stamp, quiet=quiet)


def _header_object(session: Session, line: bytes) -> dict[str, Any]:
    """The header line `line` of `session` as an object to write back: refused unless it is
    the session's header, and plain JSON (no lone surrogate's escape or byte that is not
    UTF-8: what the reader normalises would be written back changed)."""
    plain = True
    try:
        header = orjson.loads(line)
    except orjson.JSONDecodeError:
        plain = False
        try:
            header = loads_line(line)[0]
        except LineError:
            header = None
    if not isinstance(header, dict) or header.get("type") != "session" or header.get("id") != session.id:
        raise SessionError(f"{session.path}: the session header is not the first line; refusing to rewrite it")
    if not plain:
        raise SessionError(
            f"{session.path}: the session header holds text seance would not write back the same; "
            "refusing to rewrite it"
        )
    return header


def write_title_slot(session: Session, title: str) -> None:
    """Rewrite the 256-byte title slot in place (`pwrite` at offset 0, the size unchanged).

    Lines appended after it meanwhile are untouched; refused unless the slot on disk is
    still the one that was read.
    """
    if session.title_slot_bytes != TITLE_SLOT_SIZE:
        raise SessionError(f"{session.path}: title line is not the 256-byte slot; refusing to rewrite it")
    line = title_slot_bytes(title, now_iso())
    fd = os.open(session.path, os.O_RDWR)
    try:
        on_disk = os.pread(fd, TITLE_SLOT_SIZE, 0)
        try:
            slot = orjson.loads(on_disk) if on_disk.endswith(b"\n") else None
        except orjson.JSONDecodeError:
            slot = None
        if slot != session.title_slot:
            raise FileChangedError(f"{session.path}: the title line changed since it was read; nothing was written")
        os.pwrite(fd, line, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = [
    "FileChangedError",
    "append_entry",
    "atomic_write",
    "create_new",
    "persist_migration",
    "read_session",
    "rename_session",
    "set_label",
    "stored_title",
    "title_slot_bytes",
    "write_header_title",
    "write_title_slot",
]
