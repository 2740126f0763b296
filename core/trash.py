"""Delete to the freedesktop Trash, with undo.

A session file and oh-my-pi's artifacts folder (the path without `.jsonl`) are moved to the
home trash (`$XDG_DATA_HOME/Trash`, else `~/.local/share/Trash`): `files/NAME` plus
`info/NAME.trashinfo` with the original `Path=` (URL-quoted) and `DeletionDate=`, so a file
manager can restore them too.  The name is reserved by creating the `.trashinfo` with
O_EXCL, so two deletes never pick the same name.

Only a file that reads as a session is deleted (unless forced), and only a session takes
its artifacts folder along: `notes.jsonl` must never drag a `notes/` folder into the Trash.

On the same filesystem the move is one `rename`.  Across filesystems the item is copied into
the trash, fsynced, and only then is the original removed (a failed copy leaves the
original untouched).  `send2trash` would do the move but does not say which name it chose,
and undo needs that name — hence this module.
"""

from __future__ import annotations

import errno
import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from .session import NotASession, SessionError, read_session


class TrashError(SessionError):
    """A delete or undo that cannot be done; nothing was changed."""


class NotASessionFile(TrashError):
    """`trash_session` was given a file that does not read as a session (and no `force`)."""


@dataclass(frozen=True, slots=True)
class TrashedItem:
    """One file or folder in the trash and where it came from."""

    original: Path
    trashed: Path  # <trash>/files/NAME
    info: Path  # <trash>/info/NAME.trashinfo


@dataclass(frozen=True, slots=True)
class TrashReceipt:
    """What `trash_session` moved (the session file first); `undo` puts it all back."""

    items: tuple[TrashedItem, ...]
    deleted_at: str

    @property
    def session(self) -> TrashedItem:
        return self.items[0]

    def to_json(self) -> dict[str, Any]:
        return {
            "deletedAt": self.deleted_at,
            "items": [
                {"original": str(item.original), "trashed": str(item.trashed), "info": str(item.info)}
                for item in self.items
            ],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TrashReceipt:
        """Rebuild a receipt (e.g. the one `seance rm` saved); raises `TrashError` if malformed."""
        try:
            items = tuple(
                TrashedItem(Path(item["original"]), Path(item["trashed"]), Path(item["info"])) for item in data["items"]
            )
            deleted_at = str(data["deletedAt"])
        except (KeyError, TypeError) as error:
            raise TrashError(f"not a trash receipt ({error})") from None
        if not items:
            raise TrashError("not a trash receipt (no items)")
        return cls(items, deleted_at)


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


def trash_session(
    path: str | os.PathLike[str],
    *,
    open_session: str | os.PathLike[str] | None = None,
    trash: Path | None = None,
    force: bool = False,
) -> TrashReceipt:
    """Move a session file (and its artifacts folder, if any) to the Trash.

    Refuses the session that is open (`open_session`), a path that is not a file, and
    (raising `NotASessionFile`) a file that does not read as a session unless `force`;
    a forced non-session goes alone, without the folder beside it.
    """
    session_path = Path(os.path.abspath(os.path.expanduser(path)))
    if open_session is not None and same_file(session_path, open_session):
        raise TrashError(f"{session_path.name}: is the open session; it cannot be deleted")
    if not os.path.lexists(session_path):
        raise TrashError(f"{session_path}: no such file")
    if os.path.isdir(session_path) and not os.path.islink(session_path):
        raise TrashError(f"{session_path}: is a directory, not a session file")
    verdict = read_session(session_path)
    problem = verdict.reason if isinstance(verdict, NotASession) else None
    del verdict  # only the verdict is needed: let a big session's entries go
    if problem is not None and not force:
        raise NotASessionFile(f"{session_path}: not a session ({problem}); not moved to the Trash")
    target = trash if trash is not None else trash_dir()
    moment = datetime.now().replace(microsecond=0)
    items = [trash_path(session_path, trash=target, when=moment)]
    artifacts = artifacts_dir(session_path) if problem is None else None
    if artifacts is not None and os.path.isdir(artifacts) and not os.path.islink(artifacts):
        try:
            items.append(trash_path(artifacts, trash=target, when=moment))
        except OSError as error:  # keep the two together: put the session file back
            _restore(items[0])
            raise TrashError(f"{artifacts}: could not move the artifacts folder to the Trash ({error})") from error
    return TrashReceipt(tuple(items), moment.isoformat())


def trash_path(path: Path, *, trash: Path | None = None, when: datetime | None = None) -> TrashedItem:
    """Move one file or folder to the Trash under a free name; returns where it went."""
    target = trash if trash is not None else trash_dir()
    files, infos = target / "files", target / "info"
    for folder in (target, files, infos):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    moment = (when or datetime.now()).replace(microsecond=0)
    info_text = f"[Trash Info]\nPath={quote(str(path))}\nDeletionDate={moment.strftime('%Y-%m-%dT%H:%M:%S')}\n"
    name, info = _reserve(files, infos, path.name, info_text)
    trashed = files / name
    try:
        _move(path, trashed)
    except BaseException:
        info.unlink(missing_ok=True)
        raise
    return TrashedItem(path, trashed, info)


def _reserve(files: Path, infos: Path, name: str, info_text: str) -> tuple[str, Path]:
    """Claim a free trash name by creating its `.trashinfo` exclusively (spec-conformant)."""
    stem, suffix = (name[: -len(".jsonl")], ".jsonl") if name.endswith(".jsonl") else (name, "")
    for attempt in range(1, 10_000):
        candidate = name if attempt == 1 else f"{stem}.{attempt}{suffix}"
        info = infos / f"{candidate}.trashinfo"
        if os.path.lexists(files / candidate):
            continue
        try:
            fd = os.open(info, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(info_text)
            handle.flush()
            os.fsync(handle.fileno())
        return candidate, info
    raise TrashError(f"{name}: no free name in the Trash")


def _move(source: Path, destination: Path) -> None:
    """rename, or (across filesystems) copy + fsync + remove the original."""
    try:
        os.rename(source, destination)
        return
    except OSError as error:
        if error.errno != errno.EXDEV:
            raise
    try:
        if os.path.isdir(source) and not os.path.islink(source):
            shutil.copytree(source, destination, symlinks=True)
            for folder, _dirs, names in os.walk(destination):
                for file_name in names:
                    _fsync(Path(folder) / file_name)
        else:
            shutil.copy2(source, destination, follow_symlinks=False)
            _fsync(destination)
    except BaseException:
        _remove(destination)
        raise
    _remove(source)


def _fsync(path: Path) -> None:
    if path.is_symlink():
        return
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


def _restore(item: TrashedItem) -> None:
    item.original.parent.mkdir(parents=True, exist_ok=True)
    _move(item.trashed, item.original)
    item.info.unlink(missing_ok=True)


def undo(receipt: TrashReceipt) -> list[Path]:
    """Put everything a receipt moved back where it was; returns the restored paths.

    Refuses (changing nothing) if something now exists at an original path or an item is
    no longer in the Trash (emptied, or restored by a file manager).
    """
    for item in receipt.items:
        if os.path.lexists(item.original):
            raise TrashError(f"{item.original}: something exists there now; not restored")
        if not os.path.lexists(item.trashed):
            raise TrashError(f"{item.trashed.name}: is no longer in the Trash")
    restored: list[Path] = []
    for item in receipt.items:
        _restore(item)
        restored.append(item.original)
    return restored


def read_trashinfo(info: Path) -> tuple[Path, str]:
    """The original path and deletion date recorded in a `.trashinfo` file."""
    values: dict[str, str] = {}
    for line in info.read_text(encoding="utf-8").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    if "Path" not in values:
        raise TrashError(f"{info}: no Path= line")
    return Path(unquote(values["Path"])), values.get("DeletionDate", "")


__all__ = [
    "NotASessionFile",
    "TrashError",
    "TrashReceipt",
    "TrashedItem",
    "artifacts_dir",
    "read_trashinfo",
    "same_file",
    "trash_dir",
    "trash_path",
    "trash_session",
    "undo",
]
