"""Find session files under the sessions roots, and say what was skipped and why.

A root holds project buckets (pi's `--<cwd>--`, oh-my-pi's `-<home-relative>` and `-tmp-…`
spellings); the bucket name is never decoded — the header's `cwd` is the truth.  Files one
level under a root and files directly in a root (a flat custom session dir) are sessions.
Deeper files are sessions only inside a session's own folder, the directory named after its
file (`X.jsonl` → `X/`): oh-my-pi's artifacts folder, where its subagents (`X/Alpha.jsonl`,
nested `X/Alpha/Alpha.Gamma.jsonl`) and advisors (`X/__advisor.jsonl`) keep their
transcripts, and pi subagent extensions' `X/<run>/run-0/session.jsonl`.  Those are child
sessions of `X` (`seance.core.listing` finds the parent from the path); other directories
(`subagent-artifacts/`, `transcripts/`...) are never entered.

Discovery costs one `os.scandir` per directory and one (cached) stat per file, and never
raises for what it finds on disk: a directory named `*.jsonl`, a dangling link, a symlink
loop, an unreadable directory or a file that vanished mid-scan becomes a `(path, reason)`
pair in `Discovery.skipped`.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import NamedTuple

# The default roots (pi's and oh-my-pi's settings, XDG, profiles) have their own module.
from .roots import agent_dir as agent_dir
from .roots import default_roots

SESSION_SUFFIX = ".jsonl"
MAX_NESTING = 8  # directory levels below a session's own folder (oh-my-pi walks up at most 8 too)


class FileInfo(NamedTuple):
    """A session candidate and the stat the index keys on (a tuple: ten thousand per scan)."""

    path: str
    size: int
    mtime_ns: int


@dataclass
class Discovery:
    """What one scan found: candidate files (with their stat) and the things it skipped."""

    infos: list[FileInfo] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)  # every directory listed (the resident watcher watches them)

    @property
    def files(self) -> list[Path]:
        return [Path(info.path) for info in self.infos]


_NAME = attrgetter("name")
_new_info = tuple.__new__  # FileInfo without its Python-level __new__: ten thousand per scan


def _reason(error: OSError, is_link: bool) -> str:
    if error.errno == errno.ELOOP:
        return "symlink loop"
    if isinstance(error, FileNotFoundError):
        return "dangling symlink" if is_link else "vanished during the scan"
    if isinstance(error, PermissionError):
        return "permission denied"
    return error.strerror or str(error)


class _Scanner:
    def __init__(self) -> None:
        self.result = Discovery()
        self._seen: set[tuple[int, int]] = set()

    def root(self, root: Path, explicit: bool) -> None:
        try:
            entries = list(os.scandir(root))
        except FileNotFoundError:
            if explicit:
                self.result.skipped.append((root, "no such directory"))
            return
        except NotADirectoryError:
            self.result.skipped.append((root, "not a directory"))
            return
        except OSError as error:
            self.result.skipped.append((root, _reason(error, False)))
            return
        self.result.dirs.append(str(root))
        sessions = {entry.name for entry in entries if entry.name.endswith(SESSION_SUFFIX)}
        for entry in sorted(entries, key=lambda item: (item.is_symlink(), item.name)):  # real buckets first
            kind = self._kind(entry)
            if kind == "dir":
                if entry.name + SESSION_SUFFIX in sessions:  # a flat root's session folder, not a bucket
                    self.folder(entry.path, 1)
                else:
                    self.bucket(entry)

    def bucket(self, bucket: os.DirEntry[str]) -> None:
        """The hot path (one call per project): regular files not seen before, in bulk."""
        folders: list[str] = []
        try:
            with os.scandir(bucket.path) as scan:
                entries = []
                for entry in scan:
                    if entry.name.endswith(SESSION_SUFFIX):
                        entries.append(entry)
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
        except OSError as error:
            self.result.skipped.append((Path(bucket.path), _reason(error, bucket.is_symlink())))
            return
        self.result.dirs.append(bucket.path)
        entries.sort(key=_NAME)  # pi's order (libuv sorts readdir by name): ties in `modified` keep it
        self._bucket_files(entries)
        if folders:  # sessions' own folders (oh-my-pi's artifacts): their child sessions
            names = {entry.name for entry in entries}
            for name in sorted(folders):
                if name + SESSION_SUFFIX in names:
                    self.folder(os.path.join(bucket.path, name), 1)

    def _bucket_files(self, entries: list[os.DirEntry[str]]) -> None:
        try:
            stats = [entry.stat() for entry in entries]
        except OSError:  # a dangling link, a file that vanished: the careful loop says which
            self._one_by_one(entries)
            return
        keys = [(info.st_dev, info.st_ino) for info in stats]
        seen = self._seen
        if (
            any(info.st_mode & 0o170000 != stat_module.S_IFREG for info in stats)
            or not seen.isdisjoint(keys)
            or len(set(keys)) != len(keys)
        ):
            self._one_by_one(entries)  # not a regular file, or a link to one seen already
            return
        seen.update(keys)
        self.result.infos += [
            _new_info(FileInfo, (entry.path, info.st_size, info.st_mtime_ns))
            for entry, info in zip(entries, stats, strict=True)
        ]

    def folder(self, path: str, depth: int) -> None:
        """A session's own folder (`X/` beside `X.jsonl`): its `*.jsonl` files are child sessions,
        searched down to `MAX_NESTING` levels (oh-my-pi nests a subagent's own subagents)."""
        try:
            with os.scandir(path) as scan:
                entries = sorted(scan, key=_NAME)
        except OSError as error:
            self.result.skipped.append((Path(path), _reason(error, False)))
            return
        self.result.dirs.append(path)
        for entry in entries:
            if entry.name.endswith(SESSION_SUFFIX):
                self._kind(entry)
            elif depth < MAX_NESTING and entry.is_dir(follow_symlinks=False) and self._kind(entry) == "dir":
                self.folder(entry.path, depth + 1)

    def _one_by_one(self, entries: list[os.DirEntry[str]]) -> None:
        seen = self._seen
        append = self.result.infos.append
        for entry in entries:
            try:
                info = entry.stat()  # cached by the DirEntry when it succeeded before
            except OSError:
                self._kind(entry)  # reports why
                continue
            if info.st_mode & 0o170000 != stat_module.S_IFREG:
                self._kind(entry)
                continue
            key = (info.st_dev, info.st_ino)
            if key not in seen:
                seen.add(key)
                append(_new_info(FileInfo, (entry.path, info.st_size, info.st_mtime_ns)))

    def _kind(self, entry: os.DirEntry[str]) -> str | None:
        """Record a session file candidate; return "dir" for a directory worth descending into."""
        is_session_name = entry.name.endswith(SESSION_SUFFIX)
        try:
            info = entry.stat()
        except OSError as error:
            if is_session_name or entry.is_symlink():
                self.result.skipped.append((Path(entry.path), _reason(error, entry.is_symlink())))
            return None
        mode = info.st_mode
        if stat_module.S_ISDIR(mode):
            if is_session_name:
                self.result.skipped.append((Path(entry.path), "a directory named *.jsonl"))
                return None
            key = (info.st_dev, info.st_ino)
            if key in self._seen:  # a symlinked bucket seen already, or a link back up
                return None
            self._seen.add(key)
            return "dir"
        if not is_session_name:
            return None
        if not stat_module.S_ISREG(mode):
            self.result.skipped.append((Path(entry.path), "not a regular file"))
            return None
        key = (info.st_dev, info.st_ino)
        if key in self._seen:
            return None
        self._seen.add(key)
        self.result.infos.append(FileInfo(entry.path, info.st_size, info.st_mtime_ns))
        return "file"


def order_key(root: int, parts: list[str], linked: bool, in_bucket: bool) -> tuple[object, ...]:
    """Where `discover` lists a file, as a key that sorts as its listing does: `root` is the
    index of its root, `parts` its path below the root, `linked` whether `parts[0]` is a
    symbolic link, `in_bucket` whether `parts[0]` is a project bucket (not a flat root's
    session folder, which lists files and folders by name alike).  A root lists its entries
    (symbolic links last) by name; a bucket its files by name, then its sessions' folders; a
    folder its files and folders by name."""
    key: list[object] = [root, int(linked), parts[0]]
    for level, name in enumerate(parts[1:], start=1):
        key += [int(in_bucket and level == 1 and level < len(parts) - 1), name]
    return tuple(key)


def discover_folder(path: str, depth: int) -> Discovery:
    """What `discover` lists in one session's folder `path` (`depth` 1: directly in a bucket),
    in its order: the resident watcher's view of a folder that appeared."""
    scanner = _Scanner()
    scanner.folder(path, depth)
    return scanner.result


def discover(roots: list[Path] | None = None) -> Discovery:
    """Scan `roots` (default: `default_roots()`, silently skipping missing ones)."""
    explicit = roots is not None
    scanner = _Scanner()
    for root in roots if roots is not None else default_roots():
        scanner.root(Path(os.path.abspath(Path(root).expanduser())), explicit)
    return scanner.result


def stat_file(path: str | os.PathLike[str]) -> FileInfo | str:
    """A fresh `FileInfo` for one file, or the reason it is not a readable regular file."""
    text = os.fspath(path)
    try:
        info = os.stat(text)
    except OSError as error:
        return _reason(error, os.path.islink(text))
    if stat_module.S_ISDIR(info.st_mode):
        return "is a directory"
    if not stat_module.S_ISREG(info.st_mode):
        return "not a regular file"
    return FileInfo(text, info.st_size, info.st_mtime_ns)
