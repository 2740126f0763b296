"""Delete to the freedesktop Trash, with undo — safe against an agent writing to the session.

A session file and oh-my-pi's artifacts folder (the path without `.jsonl`) are moved to the
home trash (`$XDG_DATA_HOME/Trash`, else `~/.local/share/Trash`): `files/NAME` plus
`info/NAME.trashinfo` with the original `Path=` (URL-quoted) and `DeletionDate=`, so a file
manager can restore them too.  The name is reserved by creating the `.trashinfo`
exclusively (the receipt comes first, as the spec asks), so two deletes never pick the same
name; it appears whole (written beside the journal, then hard-linked), so a kill never leaves
an empty one that recovery cannot tell is seance's.  A name too long for `NAME.trashinfo`
(255 bytes) is shortened in the Trash; the full original path stays in `Path=`.

Only a file that reads as a session is deleted (unless forced), and only a session takes
its artifacts folder along: `notes.jsonl` must never drag a `notes/` folder into the Trash.

An agent may be using the session.  pi appends with `appendFileSync` (open, write, close per
line), so a delete racing it makes pi re-create a headerless file at the old path.  Hence:

- `trash_session` refuses (unless `force`) a file written in the last `ACTIVE_SECONDS` or
  held open by a process (Linux: `/proc/*/fd`; elsewhere only the write-time check applies).
- Same filesystem: one `rename`.  Across filesystems (a journalled move, one journal per item
  in `$trash/.seance-incoming/`, the way gvfs keeps `expunged/` beside `files/`): copy to
  `.seance-incoming/TOKEN.data`, fsync, and retry the copy if the source changed meanwhile;
  then rename the source aside in its own folder (`.seance-trashing-TOKEN`: the path is free,
  no more appends reach the old file), copy the lines appended in between, fsync, rename the
  copy into `files/` (the commit point), remove the aside file.  A commit that fails puts the
  session back, merged (as undo merges) with the file an agent's next line made at the freed
  path meanwhile; anything else there leaves it aside, named in the error.  A `kill -9` at any point
  leaves a journal whose process is dead; the next trash operation (`recover_interrupted`)
  finishes the move if the source had been put aside (the copy is redone from it), and
  otherwise rolls back: the partial copy is removed, and the `.trashinfo` too — only if it
  still holds exactly the text this journal wrote; one it cannot finish now (a full disk, a
  file it cannot read) stays as it is, said, for the next try: it never stops the delete or
  undo the user asked for.  A half-made entry is never in `files/`;
  a whole one keeps its `.trashinfo` whatever stops the move after the commit (Ctrl+C while
  the aside is removed), its journal left for that recovery to finish.
- `undo` restores only the deletion it made: the `.trashinfo` must still name the original
  path (and hold the text written, so another tool's later entry under the same name is
  never taken nor deleted), and the file must be the session deleted (header id, size,
  mtime).  If the agent re-created the file meanwhile (headerless lines whose first entry
  continues the deleted session), the deleted session and those lines are merged back in
  order: the agent's new lines are never lost.  Anything else at the path: refused, naming both.
  An undo killed part-way is finished by the next one: a session already back at its path
  (the same file or link, or one holding all of the deleted bytes first) only has its Trash
  entry removed, and a copy the killed undo left beside it is cleaned up.

A bulk delete (`seance clean --yes`, the list's selected rows) is a `TrashBatch`: one receipt per
session, undone as one (`trash_each` / `undo_each`: a session refused or not restorable is
reported, the others go or come back).

`send2trash` would do the plain move but does not say which name it chose, and undo needs it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat as stat_module
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar
from urllib.parse import quote, unquote

import orjson

from .holders import holders, process_alive
from .safefile import NO_HARD_LINKS, clean_stale_temps, fsync_dir, link_new, temp_path_for
from .safeopen import read_regular
from .session import NotASession, SessionError, read_session
from .text import is_utf8

# pi writes a line at every message end and tool result; the longest quiet stretch of a
# working agent is one model reply (seconds to a minute).  A session written less than a
# minute ago is most likely in use; an old one you want gone rarely is.  `--force` overrides.
ACTIVE_SECONDS = 60.0
NAME_MAX = 255  # bytes in a file name on Linux, macOS and Windows filesystems
INFO_SUFFIX = ".trashinfo"
INCOMING = ".seance-incoming"
# A `.trashinfo` or a move's journal is a few hundred bytes; anything bigger is not one.  (Read
# with `read_regular`: a FIFO put in the Trash never blocks a delete or an undo.)
_SMALL_FILE_LIMIT = 1 << 20
ASIDE_PREFIX = ".seance-trashing-"
RESTORING_PREFIX = "seance-restoring-"  # (in a `safefile.temp_path_for` name: a killed undo's is cleaned)
COPY_ATTEMPTS = 3
CHUNK = 1 << 20
SETTLE_SECONDS = 0.02  # an append already under way (open, write, close) finishes well within this
LINE_WAITS = 50  # settles waited for an agent's first line to end (~1 s: a line of many MB)
CATCH_UP_PASSES = 1000  # passes (a read and a write each) over an agent's new lines before a merge's fsync
RETRIED = "seance tries again at the next delete or undo"  # (a move it could not finish: `recover_interrupted`)

T = TypeVar("T")
# a folder's files as this move copied them: (size, mtime) by path in the folder (see `_sync_file`)
Stamps = dict[Path, tuple[int, int]]


class TrashError(SessionError):
    """A delete or undo that cannot be done: nothing was changed, or the message says what was."""


class NotASessionFile(TrashError):
    """`trash_session` was given a file that does not read as a session (and no `force`)."""


class SessionInUse(TrashError):
    """`trash_session` was given a session an agent seems to be writing (and no `force`)."""


class NotInTrash(TrashError):
    """The deletion can never be undone: emptied, restored elsewhere, replaced, or never done."""


@dataclass(frozen=True, slots=True)
class Identity:
    """What the deleted file was: its header's session id and, once moved, size and mtime."""

    session_id: str | None = None
    size: int | None = None
    mtime_ns: int | None = None


@dataclass(frozen=True, slots=True)
class TrashedItem:
    """One file or folder in the trash and where it came from."""

    original: Path
    trashed: Path  # <trash>/files/NAME
    info: Path  # <trash>/info/NAME.trashinfo
    info_text: str = ""  # exactly what seance wrote there ("" in receipts of older versions)
    identity: Identity | None = None  # files only


@dataclass(frozen=True, slots=True)
class TrashReceipt:
    """What `trash_session` moved (the session file first); `undo` puts it all back."""

    items: tuple[TrashedItem, ...]
    deleted_at: str
    # what the user is told besides (never saved): a move left unfinished, kept for a later try
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def session(self) -> TrashedItem:
        return self.items[0]

    def to_json(self) -> dict[str, Any]:
        items = []
        for item in self.items:
            data: dict[str, Any] = {
                "original": str(item.original),
                "trashed": str(item.trashed),
                "info": str(item.info),
            }
            if item.info_text:
                data["infoText"] = item.info_text
            if item.identity is not None:
                data["identity"] = {
                    "sessionId": item.identity.session_id,
                    "size": item.identity.size,
                    "mtimeNs": item.identity.mtime_ns,
                }
            items.append(data)
        return {"deletedAt": self.deleted_at, "items": items}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrashReceipt:
        """Rebuild a receipt (e.g. the one `seance rm` saved); raises `TrashError` if malformed."""
        try:
            items = tuple(_item_from_json(item) for item in data["items"])
            deleted_at = str(data["deletedAt"])
        except (KeyError, TypeError, AttributeError) as error:
            raise TrashError(f"not a trash receipt ({error})") from None
        if not items:
            raise TrashError("not a trash receipt (no items)")
        return cls(items, deleted_at)


@dataclass(frozen=True, slots=True)
class TrashBatch:
    """Several deletions undone as one (`seance clean --yes`, the list's ctrl+d on selected rows)."""

    receipts: tuple[TrashReceipt, ...]

    def to_json(self) -> dict[str, Any]:
        return {"batch": [receipt.to_json() for receipt in self.receipts]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrashBatch:
        """Rebuild a saved batch; raises `TrashError` if malformed."""
        saved = data.get("batch") if isinstance(data, dict) else None
        if not isinstance(saved, list):
            raise TrashError("not a trash batch")
        return cls(tuple(TrashReceipt.from_json(receipt) for receipt in saved))


def receipt_notes(receipts: Iterable[TrashReceipt]) -> list[str]:
    """The notes of several deletes, each once (a move left unfinished is met by each of them)."""
    return list(dict.fromkeys(note for receipt in receipts for note in receipt.notes))


def is_batch_json(data: Any) -> bool:
    """True for a saved `TrashBatch` (a saved `TrashReceipt` has no "batch" key)."""
    return isinstance(data, dict) and "batch" in data


@dataclass(frozen=True, slots=True)
class BatchTrashed:
    """What `trash_each` did: the batch moved, and each path refused with the reason."""

    batch: TrashBatch
    refused: tuple[tuple[Path, str], ...]


@dataclass(frozen=True, slots=True)
class BatchRestored(Generic[T]):
    """What `undo_each` did: each receipt's result, and the receipts that could not be undone,
    split into `gone` (never again: emptied, replaced) and `blocked` (may work later: the path is taken)."""

    restored: tuple[T, ...]
    gone: tuple[tuple[TrashReceipt, str], ...]
    blocked: tuple[tuple[TrashReceipt, str], ...]


def trash_each(
    paths: Iterable[str | os.PathLike[str]], trash_one: Callable[[Path], TrashReceipt] | None = None
) -> BatchTrashed:
    """Move every path to the Trash with `trash_one` (default `trash_session`, refusing what an
    agent is using); a refusal skips that path and the others still go."""
    move = trash_one if trash_one is not None else trash_session
    receipts: list[TrashReceipt] = []
    refused: list[tuple[Path, str]] = []
    for path in paths:
        try:
            receipts.append(move(Path(path)))
        except (TrashError, OSError) as error:
            refused.append((Path(path), _one_line(error)))
    return BatchTrashed(TrashBatch(tuple(receipts)), tuple(refused))


def undo_each(batch: TrashBatch, restore_one: Callable[[TrashReceipt], T]) -> BatchRestored[T]:
    """Undo every deletion of a batch with `restore_one` (`undo`, or a catalog's `restore`);
    one that cannot be undone is reported and the others are still restored."""
    restored: list[T] = []
    gone: list[tuple[TrashReceipt, str]] = []
    blocked: list[tuple[TrashReceipt, str]] = []
    for receipt in batch.receipts:
        try:
            restored.append(restore_one(receipt))
        except NotInTrash as error:
            gone.append((receipt, _one_line(error)))
        except (TrashError, OSError) as error:
            blocked.append((receipt, _one_line(error)))
    return BatchRestored(tuple(restored), tuple(gone), tuple(blocked))


def _one_line(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return " ".join(text.split())


def _item_from_json(data: dict[str, Any]) -> TrashedItem:
    saved = data.get("identity")
    identity = None
    if isinstance(saved, dict):
        identity = Identity(saved.get("sessionId"), saved.get("size"), saved.get("mtimeNs"))
    return TrashedItem(
        Path(data["original"]), Path(data["trashed"]), Path(data["info"]), str(data.get("infoText") or ""), identity
    )


def trash_dir() -> Path:
    """The home trash: `$XDG_DATA_HOME/Trash`, else `~/.local/share/Trash`."""
    data_home = os.environ.get("XDG_DATA_HOME")
    base = Path(data_home) if data_home and os.path.isabs(data_home) else Path.home() / ".local" / "share"
    return base / "Trash"


def artifacts_dir(session_path: Path) -> Path | None:
    """oh-my-pi's per-session folder: the session path without `.jsonl` (None for other names)."""
    return session_path.with_suffix("") if session_path.suffix == ".jsonl" else None


def same_file(left: str | os.PathLike[str], right: str | os.PathLike[str]) -> bool:
    """True when two paths name the same file (a symlink or hard link included); if either
    cannot be stat'ed, when their resolved paths are equal."""
    try:
        return os.path.samefile(left, right)
    except OSError:
        return os.path.realpath(left) == os.path.realpath(right)


# -- is an agent using it? ------------------------------------------------------------------------


def holding_processes(path: str | os.PathLike[str]) -> list[tuple[int, str]]:
    """(pid, command name) of other processes with the file open, as far as we can see.

    Linux only (`/proc/PID/fd`, for the processes this user may inspect); elsewhere an empty
    list: macOS and the BSDs have no cheap equivalent short of running `lsof`, so there the
    write-time check of `activity` is the only guard.
    """
    try:
        target = os.stat(path)
    except OSError:
        return []
    return [(pid, _command_name(pid)) for pid in holders(target.st_dev, target.st_ino) or []]


def _command_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return "?"


def activity(
    path: str | os.PathLike[str],
    *,
    active_seconds: float = ACTIVE_SECONDS,
    open_now: dict[tuple[int, int], list[int]] | None = None,
) -> str | None:
    """Why an agent may be using the file ("written 3 s ago", "open in node (pid 42)"), or None.

    `open_now`: `core.holders.open_files()` taken once for many files (else /proc is read per file)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    age = time.time() - info.st_mtime
    if age < active_seconds:
        return f"written {max(age, 0):.0f} s ago"
    if open_now is not None:
        holders = [(pid, _command_name(pid)) for pid in open_now.get((info.st_dev, info.st_ino), [])]
    else:
        holders = holding_processes(path)
    if holders:
        pid, name = holders[0]
        more = f" and {len(holders) - 1} more" if len(holders) > 1 else ""
        return f"open in {name} (pid {pid}){more}"
    return None


def session_activity(
    path: str | os.PathLike[str],
    *,
    active_seconds: float = ACTIVE_SECONDS,
    open_now: dict[tuple[int, int], list[int]] | None = None,
) -> str | None:
    """`activity` of a session file, else of any file in its folder (`artifacts_dir`), which goes
    to the Trash with it: oh-my-pi's subagents write their own sessions there while the
    parent's file stays quiet for minutes ("Alpha.jsonl in its folder: written 3 s ago")."""
    folder = artifacts_dir(Path(path))
    has_folder = folder is not None and os.path.isdir(folder) and not os.path.islink(folder)
    if has_folder and open_now is None:
        from .holders import open_files

        open_now = open_files() or {}  # once for the file and its whole folder
    busy = activity(path, active_seconds=active_seconds, open_now=open_now)
    if busy is not None or folder is None or not has_folder:
        return busy
    for directory, _folders, names in os.walk(folder):
        for name in names:
            inner = Path(directory) / name
            busy = activity(inner, active_seconds=active_seconds, open_now=open_now)
            if busy is not None:
                return f"{inner.relative_to(folder)} in its folder: {busy}"
    return None


# -- delete --------------------------------------------------------------------------------------


def trash_session(
    path: str | os.PathLike[str],
    *,
    open_session: str | os.PathLike[str] | None = None,
    trash: Path | None = None,
    force: bool = False,
    active_seconds: float = ACTIVE_SECONDS,
    on_reserved: Callable[[TrashReceipt], None] | None = None,
) -> TrashReceipt:
    """Move a session file (and its artifacts folder, if any) to the Trash.

    Refuses the session that is open (`open_session`), a path that is not a file, and, unless
    `force`, a file that does not read as a session (`NotASessionFile`) or that an agent seems
    to be using (`SessionInUse`, see `activity`); a forced non-session goes alone, without the
    folder beside it.  `on_reserved` gets the receipt once the Trash names are reserved and
    before anything moves (`seance rm` saves it there, so an interrupted delete is undoable).
    """
    session_path = Path(os.path.abspath(os.path.expanduser(path)))
    if open_session is not None and same_file(session_path, open_session):
        raise TrashError(f"{session_path.name}: is the open session; it cannot be deleted")
    try:
        os.lstat(session_path)
    except (FileNotFoundError, NotADirectoryError):
        raise TrashError(f"{session_path}: no such file") from None
    except OSError as error:  # there, but not to be looked at (a symlink loop, a directory without x)
        raise TrashError(f"{session_path}: {error.strerror or error}; not moved to the Trash") from None
    if os.path.isdir(session_path) and not os.path.islink(session_path):
        raise TrashError(f"{session_path}: is a directory, not a session file")
    if not is_utf8(str(session_path)):  # the receipt (JSON) and the undo could not name it again
        raise TrashError(f"{session_path}: its name is not UTF-8; seance cannot record it for undo, not moved")
    verdict = read_session(session_path)
    problem = verdict.reason if isinstance(verdict, NotASession) else None
    session_id = None if isinstance(verdict, NotASession) else verdict.id
    del verdict  # only the verdict is needed: let a big session's entries go
    if problem is not None and not force:
        raise NotASessionFile(f"{session_path}: not a session ({problem}); not moved to the Trash")
    if not force:
        busy = session_activity(session_path, active_seconds=active_seconds)
        if busy is not None:
            raise SessionInUse(f"{session_path}: {busy}; an agent may be using it, not moved to the Trash")
    if not _writable(session_path.parent):  # before a Trash name is reserved or an undo record saved
        raise _folder_not_writable(session_path)
    target = trash if trash is not None else trash_dir()
    notes: list[str] = []
    recover_interrupted(target, notes)
    moment = datetime.now().replace(microsecond=0)
    artifacts = artifacts_dir(session_path) if problem is None else None
    sources = [session_path]
    if artifacts is not None and os.path.isdir(artifacts) and not os.path.islink(artifacts):
        sources.append(artifacts)
    pending: list[_Pending] = []
    try:
        for source in sources:
            pending.append(_reserve_item(source, target, moment))
    except BaseException:
        for reserved in pending:
            reserved.abandon()
        raise
    pending[0].identity = Identity(session_id)
    if on_reserved is not None:
        try:
            on_reserved(TrashReceipt(tuple(item.item() for item in pending), moment.isoformat()))
        except BaseException:
            for reserved in pending:
                reserved.abandon()
            raise
    try:
        items = [pending[0].commit()]
    except BaseException:
        for reserved in pending[1:]:  # the artifacts folder's reservation: its .trashinfo goes too
            reserved.abandon()
        raise
    if len(pending) > 1:
        try:
            items.append(pending[1].commit())
        except BaseException as error:  # keep the two together: the session file comes back
            if os.path.lexists(pending[1].trashed):  # (unless the folder got there: both are in)
                raise
            not_back = _bring_back(items[0], moment)
            if not isinstance(error, Exception):  # an interrupt stays one, and says where the file is
                if not_back is not None:
                    error.add_note(f"seance: {session_path}: {not_back}")
                raise
            failed = f"{sources[1]}: could not move the artifacts folder to the Trash ({_one_line(error)})"
            raise TrashError(failed if not_back is None else f"{failed}; and {not_back}") from error
    notes += [item.note for item in pending if item.note is not None]
    return TrashReceipt(tuple(items), moment.isoformat(), tuple(notes))


def _bring_back(item: TrashedItem, moment: datetime) -> str | None:
    """Undo the move of a session file whose folder could not follow (merged with what an agent
    wrote at its path since, as undo merges): None once it is back, else where it is and why."""
    try:
        undo(TrashReceipt((item,), moment.isoformat()))
    except (OSError, TrashError) as refused:
        if os.path.lexists(item.trashed):
            return f"the session file stays in the Trash as {item.trashed.name}: {_one_line(refused)}"
        return f"the session file is back, but: {_one_line(refused)}"
    except BaseException:  # a second interrupt: it says where the file is
        return f"the session file may still be in the Trash as {item.trashed.name}"
    return None


def trash_path(path: Path, *, trash: Path | None = None, when: datetime | None = None) -> TrashedItem:
    """Move one file or folder to the Trash under a free name; returns where it went."""
    target = trash if trash is not None else trash_dir()
    recover_interrupted(target)
    return _reserve_item(Path(os.path.abspath(path)), target, when or datetime.now()).commit()


def trash_name(name: str, attempt: int = 1) -> str:
    """The Trash name for `name` (`stem.N.suffix` from the second attempt), shortened so that
    `NAME.trashinfo` fits in a file name; the original's full path lives in the `.trashinfo`."""
    stem, suffix = (name[: -len(".jsonl")], ".jsonl") if name.endswith(".jsonl") else (name, "")
    tail = (f".{attempt}" if attempt > 1 else "") + suffix
    room = NAME_MAX - len(INFO_SUFFIX.encode()) - len(tail.encode())
    raw = stem.encode("utf-8", "surrogateescape")
    if len(raw) > room:
        stem = raw[:room].decode("utf-8", "ignore")
    return stem + tail


class _Pending:
    """One item on its way to the Trash: its name is reserved and a journal says so."""

    def __init__(self, source: Path, target: Path, journal: _Journal, name: str, info_text: str) -> None:
        self.source = source
        self.target = target
        self.journal = journal
        self.name = name
        self.info_text = info_text
        self.identity: Identity | None = None
        self.note: str | None = None  # the move is done, but not all of it (see `_move_in`)

    @property
    def trashed(self) -> Path:
        return self.target / "files" / self.name

    @property
    def info(self) -> Path:
        return self.target / "info" / f"{self.name}{INFO_SUFFIX}"

    def item(self) -> TrashedItem:
        return TrashedItem(self.source, self.trashed, self.info, self.info_text, self.identity)

    def commit(self) -> TrashedItem:
        try:
            self.note = _move_in(self.source, self.trashed, self.journal)
        except BaseException:
            if not os.path.lexists(self.trashed):  # (never reached `files/`: nothing moved)
                self.abandon()
            # else an interrupt after the commit point: the entry stands with its .trashinfo,
            # and the journal is kept for `recover_interrupted` to finish the rest (the aside)
            raise
        if self.note is None:  # (else the journal stays for `recover_interrupted` to finish it)
            self.journal.remove()
        if self.identity is not None:
            with contextlib.suppress(OSError):
                info = os.stat(self.trashed, follow_symlinks=False)  # a symlinked session: the link's own
                self.identity = replace(self.identity, size=info.st_size, mtime_ns=info.st_mtime_ns)
        return self.item()

    def abandon(self) -> None:
        """Undo the reservation (the source was not moved)."""
        _remove_info_if_ours(self.info, self.info_text)
        self.journal.discard_copy()
        self.journal.remove()


def _reserve_item(path: Path, target: Path, when: datetime) -> _Pending:
    files, infos = target / "files", target / "info"
    for folder in (target, files, infos, target / INCOMING):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    moment = when.replace(microsecond=0)
    info_text = f"[Trash Info]\nPath={quote(str(path))}\nDeletionDate={moment.strftime('%Y-%m-%dT%H:%M:%S')}\n"
    journal = _Journal.start(target, path, info_text)
    try:
        name = _reserve(files, infos, path.name, info_text, journal)
    except BaseException:
        journal.remove()
        raise
    return _Pending(path, target, journal, name, info_text)


def _reserve(files: Path, infos: Path, name: str, info_text: str, journal: _Journal) -> str:
    """Claim a free trash name by creating its `.trashinfo` exclusively (spec-conformant).

    The `.trashinfo` appears whole: its text is written and fsynced beside the journal, then
    hard-linked to the candidate name (a link never replaces a file, like O_EXCL).  Created
    empty and then written, a kill in between left an empty `.trashinfo`: not the text the
    journal holds, so recovery kept it, and a file manager showed a Trash entry with no file.
    """
    staged = journal.staged_info
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(info_text)
        handle.flush()
        os.fsync(handle.fileno())
    try:
        for attempt in range(1, 10_000):
            candidate = trash_name(name, attempt)
            if os.path.lexists(files / candidate):
                continue
            journal.update(name=candidate)  # before the info exists: recovery must know its name
            if _create_info(staged, infos / f"{candidate}{INFO_SUFFIX}", info_text, journal):
                fsync_dir(infos)
                return candidate
    finally:
        staged.unlink(missing_ok=True)
    raise TrashError(f"{name}: no free name in the Trash")


def _create_info(staged: Path, info: Path, info_text: str, journal: _Journal) -> bool:
    """Create `info` holding `info_text`, never over an existing file; False if one is there.

    Without hard links: O_EXCL, then the text; the journal says so first, and recovery then
    also removes a `.trashinfo` holding only the start of the text (the kill came in between).
    """
    if not journal.state.get("infoInPlace"):
        try:
            os.link(staged, info)
            return True
        except FileExistsError:
            return False
        except OSError as error:
            if error.errno not in NO_HARD_LINKS:
                raise
        journal.update(infoInPlace=True)
    try:
        fd = os.open(info, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(info_text)
        handle.flush()
        os.fsync(handle.fileno())
    return True


def _remove_info_if_ours(info: Path, info_text: str, *, or_its_start: bool = False) -> None:
    """Remove a `.trashinfo` only if it holds exactly the text seance wrote (never another tool's);
    `or_its_start`: also if it holds the start of it (a write cut short by a kill)."""
    try:
        found = read_regular(info, _SMALL_FILE_LIMIT).decode("utf-8")
        if found == info_text or (or_its_start and info_text.startswith(found)):
            info.unlink()
    except (OSError, UnicodeDecodeError):
        pass


# -- the journalled move -------------------------------------------------------------------------


@dataclass
class _Journal:
    """`$trash/.seance-incoming/TOKEN.json`: one item on its way in, for `recover_interrupted`."""

    path: Path
    state: dict[str, Any]

    @classmethod
    def start(cls, target: Path, source: Path, info_text: str) -> _Journal:
        token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        journal = cls(target / INCOMING / f"{token}.json", {})
        journal.update(pid=os.getpid(), source=str(source), info=info_text, name=None, copied=False, aside=None)
        return journal

    @property
    def token(self) -> str:
        return self.path.name[: -len(".json")]

    def vouched(self) -> bool:
        """Whether the journal names only what `trash_session` would have: an absolute source,
        a plain file name in the Trash, the source's own aside for this token.  Recovery
        removes the aside (a folder: all of it), so a journal naming anything else (damaged,
        or not seance's) is never acted on."""
        state = self.state
        source, name, aside = state.get("source"), state.get("name"), state.get("aside")
        if not isinstance(source, str) or not os.path.isabs(source):
            return False
        if name is not None and (not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name):
            return False
        if aside is not None and aside != str(Path(source).parent / f"{ASIDE_PREFIX}{self.token}"):
            return False
        return isinstance(state.get("info", ""), str)

    @property
    def data(self) -> Path:
        return self.path.with_name(f"{self.token}.data")

    @property
    def staged_info(self) -> Path:
        """The `.trashinfo` text, written here whole before it is linked into `info/`."""
        return self.path.with_name(f"{self.token}.info")

    def update(self, **changes: Any) -> None:
        self.state.update(changes)
        temp = self.path.with_name(f"{self.path.name}.tmp")
        with open(temp, "wb") as handle:
            handle.write(orjson.dumps(self.state))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.path)
        fsync_dir(self.path.parent)

    def left(self) -> None:
        """This process stops working on the move: `recover_interrupted` may finish it now."""
        with contextlib.suppress(OSError):  # (the journal as it was: finished once the process ends)
            self.update(left=True)

    def discard_copy(self) -> None:
        _remove(self.data)

    def remove(self) -> None:
        self.staged_info.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)
        self.path.with_name(f"{self.path.name}.tmp").unlink(missing_ok=True)


def _writable(folder: Path) -> bool:
    """Whether a file can leave `folder` (False: a read-only mount, an immutable folder, no permission)."""
    return os.access(folder, os.W_OK | os.X_OK)


def _folder_not_writable(source: Path) -> TrashError:
    return TrashError(
        f"{source}: cannot be moved to the Trash: its folder {source.parent} is not writable; nothing changed"
    )


def _rename_out(source: Path, destination: Path) -> None:
    """`os.rename` of `source` out of its folder; a folder it cannot leave is said as such
    (not as the rename's two paths, one of them a temporary name seance made up)."""
    try:
        os.rename(source, destination)
    except OSError as error:
        if error.errno in (errno.EROFS, errno.EACCES, errno.EPERM) and not _writable(source.parent):
            raise _folder_not_writable(source) from error
        raise


def _move_in(source: Path, destination: Path, journal: _Journal) -> str | None:
    """rename, or (across filesystems) the journalled copy described in the module docstring.
    Returns what to tell the user of a folder moved whose last writes could not follow (else None)."""
    try:
        _rename_out(source, destination)
        fsync_dir(destination.parent)
        return None
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    data = journal.data
    is_link = os.path.islink(source)  # the link goes, never a copy of what it points to
    is_dir = os.path.isdir(source) and not is_link
    copied: os.stat_result | None = None
    stamps: Stamps = {}
    for _attempt in range(COPY_ATTEMPTS):
        _remove(data)
        if is_link:
            os.symlink(os.readlink(source), data)
            break
        if is_dir:
            _copy_tree(source, data, stamps)
            _fsync_tree(data)
            break
        copied = _copy_file(source, data)
        if copied is not None:
            break
    else:
        _remove(data)
        raise SessionInUse(f"{source}: kept changing while it was copied to the Trash; not moved")
    journal.update(copied=True, aside=str(source.parent / f"{ASIDE_PREFIX}{journal.token}"))
    aside = Path(journal.state["aside"])
    _rename_out(source, aside)  # the path is free: an agent's next line starts a new file there
    try:
        if copied is not None:
            _catch_up(aside, data, copied)
        elif is_dir:
            _catch_up_tree(aside, data, stamps)
        os.rename(data, destination)  # the commit point (`files/` not writable: refused here)
    except BaseException as error:
        try:
            back = _put_back(aside, source)
        except BaseException as second:  # a second interrupt during the put-back: say where it is
            if os.path.lexists(aside):
                second.add_note(f"seance: {source}: not moved to the Trash; it is kept beside its path as {aside.name}")
            raise
        if back:
            raise
        folder = os.path.isdir(aside) and not os.path.islink(aside)
        there, what = ("folder", "folder") if folder else ("file", "session")
        kept = f"another {there} is at its path now: the {what} is kept beside it as {aside.name}"
        if not isinstance(error, Exception):  # (an interrupt stays one: it says where the session is)
            error.add_note(f"seance: {source}: {kept}")
            raise
        raise TrashError(f"{source}: not moved to the Trash ({_one_line(error)}), and {kept}") from error
    fsync_dir(destination.parent)
    if copied is not None:
        _copy_tail(aside, destination)  # a line that was still on its way (see `_catch_up`)
        _keep_stat(aside, destination)  # (last: a read-only session's copy took its lines first)
    elif is_dir:  # (as `_copy_tail`: what came during the last pass)
        try:
            _sync_tree(aside, destination, stamps, prune=True)
        except OSError as error:  # (a full disk): the aside keeps them, its journal finishes it later
            journal.left()
            return _unfinished(source, destination, aside, error)
    _remove(aside)
    return None


def _put_back(aside: Path, source: Path) -> bool:
    """Undo the rename aside of a move that failed; True once the session is at `source`
    again.  A folder or a link goes back as itself, never over a file the agent re-created
    meanwhile (a link refuses to replace one): a re-created file that continues the session
    (pi's next line, after the path was freed) is merged with it, as undo merges; anything
    else there leaves the session aside (False, for the caller to name it)."""
    try:
        if os.path.isdir(aside) and not os.path.islink(aside):
            os.rename(aside, source)  # (a non-empty folder made there meanwhile refuses it)
            return True
        try:
            link_new(aside, source)  # (without hard links: renamed, what pi wrote there meanwhile kept)
        except FileExistsError:
            if not _continued_at(source, aside):
                return False
            _merged_in_place(aside, source)  # (raises while nothing changed at the path)
        with contextlib.suppress(FileNotFoundError):  # (renamed into place)
            os.unlink(aside)
        return True
    except OSError:
        return False


def _continued_at(path: Path, saved: Path) -> bool:
    """Whether the file at `path` is an agent's continuation of the session `saved` (a file,
    or a link read as from `path`'s folder): its lines go after the session's."""
    data = _link_target(saved, path) if os.path.islink(saved) else saved
    return os.path.isfile(path) and not os.path.islink(path) and _continues(path, data)


def _holds_session(path: Path, saved: Path) -> bool:
    """Whether `path` now holds the session `saved` (a merge renamed it in place): the same
    header line, or for a link the same link."""
    if os.path.islink(saved):
        return os.path.islink(path) and os.readlink(path) == os.readlink(saved)
    with contextlib.suppress(OSError), open(path, "rb") as merged, open(saved, "rb") as kept:
        return merged.readline() == kept.readline()
    return False


def _copy_tail(source: Path, destination: Path) -> None:
    """Append to `destination` what `source` has beyond `destination`'s size."""
    have = os.path.getsize(destination)
    with open(source, "rb") as reader:
        if os.fstat(reader.fileno()).st_size > have:
            reader.seek(have)
            _copy_stream(reader, destination, truncate=False)


def _copy_file(source: Path, data: Path) -> os.stat_result | None:
    """Copy `source` to `data` (fsynced, mtime kept); None if the source changed meanwhile."""
    with open(source, "rb") as reader:
        before = os.fstat(reader.fileno())
        size = _copy_stream(reader, data, truncate=True)
        after = os.stat(source)
    if (after.st_ino, after.st_dev) != (before.st_ino, before.st_dev) or after.st_size != size:
        return None
    if after.st_mtime_ns != before.st_mtime_ns:
        return None
    os.utime(data, ns=(after.st_atime_ns, after.st_mtime_ns))
    return after


def _keep_stat(source: Path, copy: Path) -> None:
    """The copy across file systems gets the source's mode and extended attributes: a private
    (0600) session stayed 0644 in the Trash, and came back so on undo (which copies the copy's).
    A file system that keeps neither keeps the copy's own."""
    with contextlib.suppress(OSError):
        shutil.copystat(source, copy)


def _copy_stream(reader: Any, data: Path, *, truncate: bool) -> int:
    """Copy what `reader` has left to the end of `data`; fsync; returns `data`'s size."""
    with open(data, "wb" if truncate else "ab") as writer:
        while chunk := reader.read(CHUNK):
            writer.write(chunk)
        writer.flush()
        os.fsync(writer.fileno())
        return writer.tell()


def _catch_up(aside: Path, data: Path, copied: os.stat_result) -> None:
    """Append to the copy what the agent wrote between the copy and the rename aside.

    An append that opened the file by its path just before the rename still lands in it: wait
    until its size holds still for `SETTLE_SECONDS` (and `_copy_tail` looks once more after the commit).
    """
    with open(aside, "rb") as reader:
        now = os.fstat(reader.fileno())
        if (now.st_ino, now.st_dev) != (copied.st_ino, copied.st_dev) or now.st_size < copied.st_size:
            raise SessionInUse(f"{aside}: was replaced while it was copied to the Trash; not moved")
        have = copied.st_size
        while True:
            if now.st_size > have:
                reader.seek(have)
                have = _copy_stream(reader, data, truncate=False)
            time.sleep(SETTLE_SECONDS)
            now = os.fstat(reader.fileno())
            if now.st_size == have:
                break
    os.utime(data, ns=(now.st_atime_ns, now.st_mtime_ns))


def _copy_tree(source: Path, data: Path, stamps: Stamps) -> None:
    """`copytree`, links as links, each file's stamp noted as it was copied (see `_sync_file`)."""
    stamps.clear()

    def copy(file: str, destination: str) -> Any:
        info = os.lstat(file)
        stamps[Path(file).relative_to(source)] = (info.st_size, info.st_mtime_ns)
        return shutil.copy2(file, destination)

    shutil.copytree(source, data, symlinks=True, copy_function=copy)


def _catch_up_tree(aside: Path, copy: Path, stamps: Stamps) -> None:
    """A folder's `_catch_up`: what was written in it between the copy and the rename aside (a
    subagent's line, a new file) copied again, pass after pass until one finds nothing."""
    for _pass in range(LINE_WAITS):
        if not _sync_tree(aside, copy, stamps, prune=True):
            return
        time.sleep(SETTLE_SECONDS)


def _sync_tree(source: Path, copy: Path, stamps: Stamps | None = None, *, prune: bool = False) -> bool:
    """Copy into `copy` each file of `source` it lacks or holds otherwise (size and mtime:
    `copytree` keeps mtimes), fsynced; links as links.  True if one was copied (or, `prune`,
    removed: what `source` no longer has, a subagent's file deleted or renamed since the copy;
    never while `source` may be half removed, as the aside of a move killed after its commit).
    Never through a link the copy holds where `source` now has a file or folder (a subagent's,
    since the copy): that link's target is outside the Trash; the link goes instead."""
    stamps = {} if stamps is None else stamps
    changed = False
    for folder, dirs, names in os.walk(source):
        here = Path(folder)
        inside = here.relative_to(source)
        there = copy / inside
        if not _real_dir(there):
            _remove(there)  # (a link or a file the copy had at that name)
            os.makedirs(there)
            shutil.copystat(here, there)
            changed = True
        elif prune:
            changed = _prune(there, {*dirs, *names}) or changed
        for name in [*names, *(name for name in dirs if os.path.islink(here / name))]:
            changed = _sync_file(here / name, there / name, stamps, inside / name) or changed
    return changed


def _prune(copy: Path, kept: set[str]) -> bool:
    """Remove from the folder `copy` each entry not in `kept` (links as links); True if one was."""
    gone = [name for name in os.listdir(copy) if name not in kept]
    for name in gone:
        _remove(copy / name)
    return bool(gone)


def _sync_file(source: Path, copy: Path, stamps: Stamps, key: Path) -> bool:
    """`_sync_tree`'s one file.  A file is as copied if its size and mtime are the copy's, or
    those it had when this move copied it (`stamps`, by `key`): a Trash on a filesystem with
    coarser times (FAT's 2 s, ext3's 1 s) keeps the copy's mtime rounded, never equal to the
    source's, and each catch-up pass copied every file again (the whole folder, 50 times)."""
    try:
        info = os.lstat(source)
    except FileNotFoundError:
        return False
    try:
        have: os.stat_result | None = os.lstat(copy)
    except FileNotFoundError:
        have = None
    if stat_module.S_ISLNK(info.st_mode):
        if have is not None:
            return False  # (a link is not followed: the one copytree made stands)
        os.symlink(os.readlink(source), copy)
        return True
    if not stat_module.S_ISREG(info.st_mode):
        return False
    stamp = (info.st_size, info.st_mtime_ns)
    if have is not None and stat_module.S_ISREG(have.st_mode):
        if stamp in ((have.st_size, have.st_mtime_ns), stamps.get(key)):
            return False
    elif have is not None:
        _remove(copy)  # (a link or a folder: copy2 would write through it)
    shutil.copy2(source, copy)
    _fsync_file(copy)
    stamps[key] = stamp
    return True


def recover_interrupted(trash: Path | None = None, notes: list[str] | None = None) -> list[Path]:
    """Finish or roll back moves into the Trash whose process died (kill -9, power loss).

    Source put aside: the move is finished (the copy redone from it).  Otherwise: the partial
    copy and seance's own `.trashinfo` are removed, the original never moved.  Returns the
    original paths that were rolled forward into the Trash.  One that cannot be finished now
    (a full disk, an unreadable file) never stops the delete or undo that called: it stays as
    it is, journal and all, for the next call, and `notes` gets what is left where.
    """
    target = trash if trash is not None else trash_dir()
    incoming = target / INCOMING
    finished: list[Path] = []
    try:
        entries = sorted(incoming.iterdir())
    except OSError:
        return finished
    for entry in entries:
        if entry.suffix != ".json":  # TOKEN.data, .info or .json.tmp whose journal is gone (or never written)
            token = entry.name.split(".", 1)[0]
            if not (incoming / f"{token}.json").exists():
                _remove_if_dead(entry)
            continue
        try:
            state = orjson.loads(read_regular(entry, _SMALL_FILE_LIMIT))
            pid = int(state["pid"])
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        if process_alive(pid) and not state.get("left"):
            continue
        journal = _Journal(entry, state)
        if not journal.vouched():
            continue  # not one seance wrote: nothing it names is moved or removed
        try:
            if _recover(target, journal):
                finished.append(Path(state["source"]))
        except OSError as error:
            if notes is not None:
                notes.append(_recovery_stuck(target, journal, error))
    return finished


def _recovery_stuck(target: Path, journal: _Journal, error: OSError) -> str:
    """What an unfinished move left where, for the user (its journal is kept: tried again later)."""
    state = journal.state
    source = Path(state["source"])
    aside = Path(state["aside"]) if state.get("aside") else None
    destination = target / "files" / state["name"] if state.get("name") else None
    if aside is not None and destination is not None and os.path.lexists(aside):
        if os.path.lexists(destination):
            return _unfinished(source, destination, aside, error)
        kept = f"it is kept beside its path as {aside.name}"
    else:
        kept = f"a partial copy is left in {target / INCOMING}"
    return f"{source}: an earlier delete could not be finished ({_reason(error)}); {kept}; {RETRIED}"


def _unfinished(source: Path, destination: Path, aside: Path, error: OSError) -> str:
    """A move committed whose aside could not be caught up: both named, nothing lost."""
    return (
        f"{source}: moved to the Trash as {destination.name}, but what was written in it during the move"
        f" could not follow ({_reason(error)}): kept beside its path as {aside.name}; {RETRIED}"
    )


def _reason(error: OSError) -> str:
    return error.strerror or _one_line(error)


def _remove_if_dead(data: Path) -> None:
    with contextlib.suppress(ValueError):
        if not process_alive(int(data.name.split("-", 1)[0])):
            _remove(data)


def _recover(target: Path, journal: _Journal) -> bool:
    state = journal.state
    name = state.get("name")
    aside = Path(state["aside"]) if state.get("aside") else None
    destination = target / "files" / name if name else None
    if destination is not None and os.path.lexists(destination):  # committed
        if aside is not None:
            killed_before_tail = os.path.isfile(destination) and os.path.isfile(aside)
            if killed_before_tail and not os.path.islink(aside):
                _copy_tail(aside, destination)
            elif _real_dir(aside) and _real_dir(destination):
                _sync_tree(aside, destination)
            _remove(aside)
        journal.discard_copy()
        journal.remove()
        return False
    if destination is not None and aside is not None and os.path.lexists(aside) and state.get("copied"):
        if os.path.islink(aside):
            _remove(journal.data)
            os.symlink(os.readlink(aside), journal.data)
        elif not os.path.isdir(aside):
            with open(aside, "rb") as reader:
                _copy_stream(reader, journal.data, truncate=True)
            _keep_stat(aside, journal.data)
            aside_stat = os.stat(aside)
            os.utime(journal.data, ns=(aside_stat.st_atime_ns, aside_stat.st_mtime_ns))
        elif _real_dir(journal.data):
            _sync_tree(aside, journal.data, prune=True)  # (written in it after the copy; aside whole)
        os.rename(journal.data, destination)
        fsync_dir(destination.parent)
        _remove(aside)
        journal.remove()
        return True
    journal.discard_copy()
    if name:
        info = target / "info" / f"{name}{INFO_SUFFIX}"
        _remove_info_if_ours(info, state.get("info", ""), or_its_start=bool(state.get("infoInPlace")))
    journal.remove()
    return False


def _real_dir(path: Path) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _fsync_tree(root: Path) -> None:
    for folder, _dirs, names in os.walk(root):
        for file_name in names:
            path = Path(folder) / file_name
            if path.is_symlink():
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def _remove(path: Path) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)


# -- undo ----------------------------------------------------------------------------------------


def undo(receipt: TrashReceipt, notes: list[str] | None = None) -> list[Path]:
    """Put everything a receipt moved back where it was; returns the restored paths.

    Checks every item first and changes nothing if one cannot be restored: `NotInTrash` when
    the deletion is gone for good (emptied, restored by a file manager, its Trash name now
    another deletion's, or the delete never happened), `TrashError` when a different file
    is at an original path now.  An agent's lines written at the session's path since the
    delete are merged after the restored session.  `notes` gets what an earlier move that
    could not be finished left where (`recover_interrupted`).
    """
    recover_interrupted(receipt.session.info.parent.parent, notes)
    for item in receipt.items:
        aside = _left_aside(item)
        if aside is not None:  # (moved back now, the rest could never follow it)
            raise TrashError(
                f"{item.original}: its move to the Trash is not finished: what was written in it meanwhile"
                f" is kept beside its path as {aside.name}; {RETRIED}"
            )
    folder_in_trash = any(os.path.lexists(item.trashed) for item in receipt.items[1:])
    plans = [_plan(item, may_stay=index > 0 or folder_in_trash) for index, item in enumerate(receipt.items)]
    restored: list[Path] = []
    for item, plan in zip(receipt.items, plans, strict=True):
        if plan == "stay":
            pass
        elif plan == "merge":
            _merge_back(item)
        elif plan == "finish":
            _finish(item)
        else:
            _restore(item)
        restored.append(item.original)
    return restored


def _left_aside(item: TrashedItem) -> Path | None:
    """The aside of `item`'s move into the Trash that recovery could not finish (its journal
    kept, its late writes there: a full disk), else None."""
    try:
        journals = list((item.trashed.parent.parent / INCOMING).glob("*.json"))
    except OSError:
        return None
    for entry in journals:
        journal = _Journal(entry, {})
        with contextlib.suppress(OSError, orjson.JSONDecodeError):
            journal.state = orjson.loads(entry.read_bytes())
        if isinstance(journal.state, dict) and journal.state.get("name") == item.trashed.name and journal.vouched():
            aside = journal.state.get("aside")
            if aside and os.path.lexists(aside):
                return Path(aside)
    return None


def _plan(item: TrashedItem, *, may_stay: bool = False) -> str:
    """Check one item can be restored: "move" it back, "merge" it with the agent's re-created
    file, "finish" an undo killed once the session was back (its Trash entry is left), or let
    it "stay" where it is, not in the Trash (if `may_stay`): an artifacts folder whose move an
    interrupt stopped before it began, or the session file an undo stopped part-way had put
    back (its folder, moved to the Trash only after it, is still there)."""
    info_text = _read_text(item.info)
    if not os.path.lexists(item.trashed):
        if _only_info_left(item, info_text):
            return "finish"
        if info_text is None and os.path.lexists(item.original):
            if may_stay and (item.identity is None or header_id(item.original) == item.identity.session_id):
                return "stay"
            raise NotInTrash(f"{item.original}: the delete did not complete; the file is still in place")
        raise NotInTrash(f"{item.trashed.name}: is no longer in the Trash")
    if info_text is None:
        raise NotInTrash(f"{item.trashed.name}: its .trashinfo is gone (restored or emptied elsewhere)")
    recorded = _info_path(info_text)
    if recorded != item.original or (item.info_text and info_text != item.info_text):
        raise NotInTrash(
            f"{item.trashed.name}: is now another deletion in the Trash (of {recorded}); {item.original} not restored"
        )
    if item.identity is not None:
        problem = _identity_problem(item.trashed, item.identity, item.original)
        if problem is not None:
            raise NotInTrash(f"{item.trashed}: is not the session deleted from {item.original} ({problem})")
    if not os.path.lexists(item.original):
        return "move"
    if item.identity is not None and _back_already(item):
        return "finish"
    if item.identity is not None and os.path.isfile(item.original):
        data = _session_data(item)
        try:
            if _continues(item.original, data):
                return "merge"
        except OSError as error:  # (a link's target moved or gone)
            raise TrashError(
                f"{item.original}: the session it points to cannot be read ({error.strerror or error}: {data}); "
                f"not restored (the link stays in the Trash at {item.trashed})"
            ) from None
    raise TrashError(
        f"{item.original}: a different file exists there now; not restored "
        f"(the deleted one stays in the Trash at {item.trashed})"
    )


def _back_already(item: TrashedItem) -> bool:
    """Whether the session file is at its path already (an undo killed before it removed the
    Trash entry): the same link, the same file, or a file holding all of the deleted one's
    bytes first (a copy back across filesystems; merged with an agent's lines after them)."""
    trashed, original = item.trashed, item.original
    if os.path.islink(trashed) or os.path.islink(original):
        return os.path.islink(trashed) and os.path.islink(original) and os.readlink(trashed) == os.readlink(original)
    if not (os.path.isfile(trashed) and os.path.isfile(original)):
        return False
    if os.path.samefile(trashed, original):
        return True
    if os.path.getsize(trashed) == 0:  # (a forced empty file: every file begins with it)
        return False
    with open(trashed, "rb") as deleted, open(original, "rb") as there:
        while chunk := deleted.read(CHUNK):
            if there.read(len(chunk)) != chunk:
                return False
    return True


def _only_info_left(item: TrashedItem, info_text: str | None) -> bool:
    """Whether an undo killed at its very end left only its `.trashinfo` (a Trash entry with
    no file, in a file manager): the item is back at its path (a session: its header's id)."""
    if not item.info_text or info_text != item.info_text or not os.path.lexists(item.original):
        return False
    return item.identity is None or header_id(item.original) == item.identity.session_id


def _finish(item: TrashedItem) -> None:
    """The end of an undo killed once the session was back: the Trash entry goes."""
    clean_stale_temps(item.original.parent)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(item.trashed)
    _remove_info_if_ours(item.info, item.info_text)


def _read_text(path: Path) -> str | None:
    try:
        return read_regular(path, _SMALL_FILE_LIMIT).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _info_path(info_text: str) -> Path | None:
    for line in info_text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "Path":
            return Path(unquote(value.strip()))
    return None


def _identity_problem(path: Path, identity: Identity, original: Path | None = None) -> str | None:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError as error:
        return str(error)
    if stat_module.S_ISLNK(info.st_mode):  # a symlinked session went as its link: its own stat is
        # what was recorded (from the Trash a relative link points nowhere, so never through it)
        if (info.st_size, info.st_mtime_ns) == (identity.size, identity.mtime_ns):
            return None
        if identity.size is None and original is not None:  # a receipt written before the move:
            # the header it names, read through the link as from its own folder
            through = _link_target(path, original)
            return None if header_id(through) == identity.session_id else "another session id"
        try:  # a receipt of an older version recorded the target's (an absolute link still reaches it)
            info = os.stat(path)
        except OSError:
            return "modified since"
    # It may have grown: an agent's append that opened the file just before the rename lands in the Trash copy.
    if identity.size is not None and info.st_size < identity.size:
        return f"{info.st_size} bytes, {identity.size} were deleted"
    if identity.size == info.st_size and identity.mtime_ns is not None and info.st_mtime_ns != identity.mtime_ns:
        return "modified since"
    if identity.session_id is not None and header_id(path) != identity.session_id:
        return "another session id"
    return None


def header_id(path: Path) -> str | None:
    """The session id in the file's header (within its first lines), or None."""
    try:
        with open(path, "rb") as handle:
            for _ in range(3):  # omp may put a title slot line before the header
                line = handle.readline(1 << 20)
                if not line:
                    return None
                value = _json_object(line)
                if value is not None and value.get("type") == "session":
                    found = value.get("id")
                    return found if isinstance(found, str) else None
    except OSError:
        return None
    return None


def _json_object(line: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _link_target(link: Path, original: Path) -> Path:
    """Where a session's link moved to the Trash points, read as from its own folder (a
    relative link points nowhere from the Trash)."""
    return original.parent / os.readlink(link)  # (an absolute target stays itself)


def _session_data(item: TrashedItem) -> Path:
    """The file that holds the deleted session's lines: the Trash's copy, or a link's target."""
    return _link_target(item.trashed, item.original) if os.path.islink(item.trashed) else item.trashed


def _continues(recreated: Path, trashed: Path) -> bool:
    """True if `recreated` holds only entries an agent appended after `trashed` (no header;
    its first entry's parent is an entry of the deleted session).  A first line still being
    written (no newline yet: a long tool result in one write) is waited for a while."""
    try:
        for _wait in range(LINE_WAITS):
            with open(recreated, "rb") as handle:
                first = handle.readline(1 << 24)
            if not first or first.endswith(b"\n"):
                break
            time.sleep(SETTLE_SECONDS)
    except OSError:
        return False
    if not first:
        return True  # created and still empty
    entry = _json_object(first)
    if entry is None or entry.get("type") == "session" or not isinstance(entry.get("parentId"), str):
        return False
    return entry["parentId"] in _entry_ids(trashed)


def _entry_ids(path: Path) -> set[str]:
    ids: set[str] = set()
    with open(path, "rb") as handle:
        for line in handle:
            value = _json_object(line)
            if value is not None and isinstance(value.get("id"), str):
                ids.add(value["id"])
    return ids


def _restoring_temp(destination: Path) -> Path:
    """A temp name beside `destination` for a copy (a file, a link, a folder) on its way back;
    one a killed undo left there is removed by the next write in the folder
    (`safefile.clean_stale_temps`)."""
    return temp_path_for(destination.with_name(f"{RESTORING_PREFIX}{destination.name}"))


def _restore(item: TrashedItem) -> None:
    """Move an item back, never over a file that appeared at the original path meanwhile."""
    item.original.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temps(item.original.parent)
    if os.path.isdir(item.trashed) and not os.path.islink(item.trashed):
        _move_out_dir(item.trashed, item.original)
    else:
        _move_out_file(item)
    if item.info_text:
        _remove_info_if_ours(item.info, item.info_text)
    else:  # a receipt of an older version: its Path= was checked
        item.info.unlink(missing_ok=True)


def _move_out_dir(source: Path, destination: Path) -> None:
    """Move a folder back; across filesystems it is copied beside its path first and renamed
    into place whole (a copy an undo killed part-way is cleaned up, never left at the path)."""
    if os.path.lexists(destination):
        raise TrashError(f"{destination}: something exists there now; not restored")
    try:
        os.rename(source, destination)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    temp = _restoring_temp(destination)
    try:
        shutil.copytree(source, temp, symlinks=True)
        _fsync_tree(temp)
        if os.path.lexists(destination):  # (a folder made there meanwhile: an empty one is not replaced)
            raise TrashError(f"{destination}: something exists there now; not restored")
        os.rename(temp, destination)
    except BaseException:
        _remove(temp)
        raise
    fsync_dir(destination.parent)
    _remove(source)


def _move_out_file(item: TrashedItem) -> None:
    """Hard-link (no clobber) into place, copying first across filesystems; then unlink the Trash copy."""
    source, destination = item.trashed, item.original
    temp: Path | None = None
    try:
        os.link(source, destination, follow_symlinks=False)
    except FileExistsError:
        raise TrashError(f"{destination}: something exists there now; not restored") from None
    except OSError as error:
        if error.errno == errno.EXDEV:
            temp = _restoring_temp(destination)
            try:
                _copy_into(source, temp)  # (a full disk part-way: the partial copy goes too)
                link_new(temp, destination)
            except FileExistsError:
                raise TrashError(f"{destination}: something exists there now; not restored") from None
            finally:
                temp.unlink(missing_ok=True)
        else:  # a filesystem without hard links: claimed, then renamed over (never a check, then a rename)
            try:
                link_new(source, destination)
            except FileExistsError:
                raise TrashError(f"{destination}: something exists there now; not restored") from None
            fsync_dir(destination.parent)
            return
    fsync_dir(destination.parent)
    os.unlink(source)


def _copy_into(source: Path, destination: Path) -> None:
    if os.path.islink(source):
        os.symlink(os.readlink(source), destination)
        return
    with open(source, "rb") as reader:
        _copy_stream(reader, destination, truncate=True)
    shutil.copystat(source, destination)


def _merge_back(item: TrashedItem) -> None:
    """Restore the deleted session with the agent's lines written since appended after it."""
    clean_stale_temps(item.original.parent)
    late_error = _merged_in_place(item.trashed, item.original)  # (raises while still undoable)
    os.unlink(item.trashed)
    _remove_info_if_ours(item.info, item.info_text)
    if late_error is not None:
        raise TrashError(
            f"{item.original}: restored, but lines the agent wrote during the merge could not be added "
            f"({_one_line(late_error)})"
        ) from late_error


def _merged_in_place(saved: Path, destination: Path) -> OSError | None:
    """`_merge_into`, raising only while nothing changed at `destination`; once the merged
    session holds the path, what failed after it (the agent's late lines: a full disk) is
    returned, not raised: the session is in place either way, and `saved` may go."""
    try:
        _merge_into(saved, destination)
    except OSError as error:
        if not _holds_session(destination, saved):
            raise
        return error
    return None


def _merge_into(saved: Path, destination: Path) -> None:
    """Put the session `saved` (a file or a link) back at `destination`, where an agent
    re-created the file since, with the agent's lines after its own; `saved` is left for the
    caller to remove.  The re-created file is kept open: lines the agent appends to it after
    it was read (until the merged file replaces it at the path) are read from that descriptor
    and appended too."""
    if os.path.islink(saved):
        _merge_link_into(saved, destination)
        return
    temp = _restoring_temp(destination)
    with open(destination, "rb") as recreated:
        appended = recreated.read()
        cut = appended.rfind(b"\n") + 1
        try:
            with open(saved, "rb") as reader:
                _copy_stream(reader, temp, truncate=True)
            _append_lines(temp, appended[:cut])
            # What the agent appended meanwhile (the copy takes a while): taken in until nothing
            # more came during the last fsync, so the lines read late are only those of the
            # instant before the rename, and seldom land after a newer line of the agent's.
            cut = _caught_up(recreated, cut, temp)
            shutil.copymode(saved, temp)  # a private (0600) session stays private (last: 0444 too)
            os.rename(temp, destination)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        with contextlib.suppress(OSError):  # (in place: the rename stands whatever this says)
            fsync_dir(destination.parent)
        late = _late_lines(recreated, cut)
    if late:
        _append_lines(destination, late)  # (on a line of its own, fsynced)
    else:
        with contextlib.suppress(OSError):  # (the last pass's lines, see `_caught_up`)
            _fsync_file(destination)


def _merge_link_into(link: Path, destination: Path) -> None:
    """`_merge_into` of a symlinked session: the agent's lines go to the link's target (where
    the session's lines are), and the link takes back the path the agent's file holds."""
    target = _link_target(link, destination)
    temp = _restoring_temp(destination)
    with open(destination, "rb") as recreated:
        appended = recreated.read()
        cut = appended.rfind(b"\n") + 1
        size = os.stat(target).st_size
        written = 0
        try:
            done = _appended_already(target, appended[:cut])  # (by an undo killed right here)
            written = _append_lines(target, appended[done:cut])
            os.symlink(os.readlink(link), temp)
            os.rename(temp, destination)
        except BaseException:
            temp.unlink(missing_ok=True)
            with contextlib.suppress(OSError), open(target, "r+b") as writer:
                if written and os.fstat(writer.fileno()).st_size == size + written:  # (nothing after ours)
                    writer.truncate(size)
            raise
        with contextlib.suppress(OSError):  # (in place: the rename stands whatever this says)
            fsync_dir(destination.parent)
        late = _late_lines(recreated, cut)
    if late:
        _append_lines(target, late)


def _appended_already(path: Path, lines: bytes) -> int:
    """How many bytes of `lines` (entry lines, each with its own id) the file ends with: the
    longest run of their first lines there, which only an earlier append of these very lines
    (an undo killed before it put the link back; the agent may have written more since) puts."""
    with open(path, "rb") as reader:
        size = os.fstat(reader.fileno()).st_size
        reader.seek(max(0, size - len(lines)))
        tail = reader.read()
    end = lines.rfind(b"\n") + 1
    while end:
        if tail.endswith(lines[:end]):
            return end
        end = lines.rfind(b"\n", 0, end - 1) + 1
    return 0


def _caught_up(recreated: BinaryIO, cut: int, copy: Path) -> int:
    """Append to `copy` the whole lines `recreated` holds past `cut`, pass after pass until one
    finds none (at most `CATCH_UP_PASSES`: a pass is a read and a write, microseconds), then
    fsync `copy` and take in what came during the fsync (fsynced after the rename: an fsync
    here would leave its own milliseconds for the agent's next line to come late); returns
    the new cut."""

    def one_pass() -> bool:
        nonlocal cut
        recreated.seek(cut)
        more = recreated.read()
        whole = more.rfind(b"\n") + 1
        if whole:
            _append_lines(copy, more[:whole], sync=False)
            cut += whole
        return bool(whole)

    for _pass in range(CATCH_UP_PASSES):
        if not one_pass():
            break
    _fsync_file(copy)
    one_pass()
    return cut


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _late_lines(recreated: BinaryIO, cut: int) -> bytes:
    """What the agent's file holds after `cut` once the merged file (or the link) took its
    path: an append that opened it just before the rename lands in it now, so look twice."""
    recreated.seek(cut)
    late = recreated.read()
    time.sleep(0.05)
    return late + recreated.read()


def _append_lines(path: Path, lines: bytes, *, sync: bool = True) -> int:
    """Append `lines` to `path` on a line of their own, in one O_APPEND write (fsynced unless
    not `sync`): an agent appending to the same file meanwhile is never overwritten.  Returns
    the bytes written."""
    if not lines:
        return 0
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            lines = b"\n" + lines
        written = 0
        while written < len(lines):
            written += os.write(fd, lines[written:])
        if sync:
            os.fsync(fd)
        return written
    finally:
        os.close(fd)


def read_trashinfo(info: Path) -> tuple[Path, str]:
    """The original path and deletion date recorded in a `.trashinfo` file."""
    values: dict[str, str] = {}
    for line in read_regular(info, _SMALL_FILE_LIMIT).decode("utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    if "Path" not in values:
        raise TrashError(f"{info}: no Path= line")
    return Path(unquote(values["Path"])), values.get("DeletionDate", "")


__all__ = [
    "ACTIVE_SECONDS",
    "BatchRestored",
    "BatchTrashed",
    "Identity",
    "NotASessionFile",
    "NotInTrash",
    "SessionInUse",
    "TrashBatch",
    "TrashError",
    "TrashReceipt",
    "TrashedItem",
    "activity",
    "artifacts_dir",
    "header_id",
    "holding_processes",
    "is_batch_json",
    "read_trashinfo",
    "receipt_notes",
    "recover_interrupted",
    "same_file",
    "session_activity",
    "trash_dir",
    "trash_each",
    "trash_name",
    "trash_path",
    "trash_session",
    "undo",
    "undo_each",
]
