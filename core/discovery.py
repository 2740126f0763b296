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
pair in `Discovery.skipped`.  `discover_ahead` runs it in a forked process (the CLI: its
stats overlap the reading of the index) and hands back the same `Discovery`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple

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
        """The hot path (one call per project): regular files not seen before, in bulk.

        The directory is scanned through a descriptor, so each stat resolves one name in it
        (`fstatat`), not the whole path again: a third of discovery's time at 10,000 files."""
        folders: list[str] = []
        try:
            descriptor = os.open(bucket.path, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            self.result.skipped.append((Path(bucket.path), _reason(error, bucket.is_symlink())))
            return
        try:
            with os.scandir(descriptor) as scan:
                entries = []
                for entry in scan:
                    if entry.name.endswith(SESSION_SUFFIX):
                        entries.append(entry)
                    elif entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
            self.result.dirs.append(bucket.path)
            entries.sort(key=_NAME)  # pi's order (libuv sorts readdir by name): ties in `modified` keep it
            if not self._bucket_files(entries, bucket.path + os.sep):
                self._careful(bucket.path)
        except OSError as error:
            self.result.skipped.append((Path(bucket.path), _reason(error, bucket.is_symlink())))
            return
        finally:
            os.close(descriptor)
        if folders:  # sessions' own folders (oh-my-pi's artifacts): their child sessions
            names = {entry.name for entry in entries}
            for name in sorted(folders):
                if name + SESSION_SUFFIX in names:
                    self.folder(os.path.join(bucket.path, name), 1)

    def _bucket_files(self, entries: list[os.DirEntry[str]], prefix: str) -> bool:
        """Every entry a regular file not seen before (the usual), added in bulk; False when
        one is not (nothing added: the caller takes the careful path)."""
        try:
            stats = [entry.stat() for entry in entries]
        except OSError:  # a dangling link, a file that vanished: the careful loop says which
            return False
        keys = [(info.st_dev, info.st_ino) for info in stats]
        seen = self._seen
        if (
            any(info.st_mode & 0o170000 != stat_module.S_IFREG for info in stats)
            or not seen.isdisjoint(keys)
            or len(set(keys)) != len(keys)
        ):
            return False  # not a regular file, or a link to one seen already
        seen.update(keys)
        self.result.infos += [
            _new_info(FileInfo, (prefix + entry.name, info.st_size, info.st_mtime_ns))
            for entry, info in zip(entries, stats, strict=True)
        ]
        return True

    def _careful(self, path: str) -> None:
        """A bucket with something other than new regular files: each file on its own (by
        path), with the reason for each one skipped."""
        with os.scandir(path) as scan:
            entries = sorted((entry for entry in scan if entry.name.endswith(SESSION_SUFFIX)), key=_NAME)
        self._one_by_one(entries)

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


def root_path(root: str | os.PathLike[str]) -> str:
    """`root` as discovery spells it, and so every file found under it: `~` expanded, made
    absolute, normalised, never resolved (a root reached through a symbolic link keeps its
    own spelling).  The index narrows its reads to these prefixes (`index.root_ranges`)."""
    return str(Path(os.path.abspath(Path(root).expanduser())))


def discover(roots: list[Path] | None = None, *, given: bool | None = None) -> Discovery:
    """Scan `roots` (default: `default_roots()`, silently skipping missing ones).  A missing
    root given is said to be; `given` False: `roots` are default roots computed before."""
    explicit = roots is not None if given is None else given
    scanner = _Scanner()
    for root in roots if roots is not None else default_roots():
        scanner.root(Path(root_path(root)), explicit)
    return scanner.result


class Head(NamedTuple):
    """What a stored answer is checked against, without the files themselves: the files'
    `fileskey.files_key`, how many there are, and what discovery skipped (with the reason)."""

    key: bytes
    files: int
    skipped: list[tuple[Path, str]]


class Pending:
    """`discover(roots)` started ahead: calling it waits for the answer (once; then kept).

    With `fork`, the scan runs in a forked child and comes back over a pipe, so it overlaps
    whatever this process does meanwhile (reading the index: 100,000 stats are 0.7 s of a
    core a query does not use).  The child writes three messages, each marshalled behind
    its length: the `Head` (the files' key, made in the child right after the scan), then
    the files (paths, sizes, mtimes) and directories, then what `also()` answered.  A query
    whose answer is stored for exactly these files reads the head alone (`head`): 100,000
    files' stats are never decoded nor hashed here, and the child is stopped (`close`).
    Only for a single-threaded caller on Linux (a fork copies one thread; the CLI says so
    through `Catalog(workers=...)`).  A child that fails in any way is not trusted: a
    message cut short or unreadable makes the scan happen here instead, so the answer is
    always `discover(roots)`'s."""

    def __init__(self, roots: list[Path] | None, *, fork: bool, also: Callable[[], Any] | None = None) -> None:
        self._roots = roots
        self._result: Discovery | None = None
        self._head: Head | None = None
        self._child: tuple[int, int, int] | None = None  # (pid, read end of its pipe, write end of ours)
        self._read = 0  # the child's messages read so far
        self._also: Any = None
        self._also_wanted = also is not None
        self._decode: Callable[[], Discovery] | None = None
        self._fetch: Callable[[], tuple[Discovery, bytes]] | None = None
        self._files_data: bytes | None = None  # the child's files, read and not yet decoded
        # The child's head was read but its files were not (it failed): they were found here
        # again, the head made from them, and they are not the files that head described.
        # An answer made from them is not stored under either key (`Catalog`).
        self.moved = False
        if fork:
            self._child = _fork_discovery(roots, also)

    @classmethod
    def of(cls, found: Discovery) -> Pending:
        """A discovery already made (here, or a resident watcher's), as a `Pending`."""
        pending = cls(None, fork=False)
        pending._result = found
        return pending

    @classmethod
    def decoded_later(cls, head: Head, decode: Callable[[], Discovery]) -> Pending:
        """A discovery received whole (a resident watcher's) with its head, decoded only if
        its files are asked for: `decode()` must give the files `head` describes."""
        pending = cls(None, fork=False)
        pending._head, pending._decode = head, decode
        return pending

    @classmethod
    def fetched_later(cls, head: Head, fetch: Callable[[], tuple[Discovery, bytes]]) -> Pending:
        """A discovery of which only the head was received (a resident watcher's `SYNC
        HEAD`): `fetch()` gives the files when they are asked for, and their key; when that
        is not `head`'s (they changed in between), the head becomes theirs and the discovery
        `moved`, as when a child's files were found here again."""
        pending = cls(None, fork=False)
        pending._head, pending._fetch = head, fetch
        return pending

    def head(self) -> Head:
        """The files' key, their number and discovery's skips: from the child, its first
        message alone (the files are not decoded); else from `self()`."""
        if self._head is None:
            if self._child is not None and self._result is None and self._read == 0:
                self._head = self._head_message()
            if self._head is None:
                from .fileskey import files_key

                found = self()
                self._head = Head(files_key(found.infos), len(found.infos), found.skipped)
        return self._head

    def known(self) -> Discovery | None:
        """The discovery if it was read already (`self()`), else None (only the head was)."""
        return self._result

    @property
    def makes_also(self) -> bool:
        """Whether a child makes `also()`'s answer (else `also()` is None)."""
        return self._child is not None and self._also_wanted

    def also(self) -> Any:
        """What `also()` answered in the child (None: no child, or it failed).  The files'
        message before it is read, not decoded, unless they were asked for."""
        if self._child is not None and self._also_wanted:
            if self._result is None:
                self._files_bytes()
            data = self._message() if self._read == 2 else None
            self._also = _unmarshalled(data) if data else None
            self._stop()
        return self._also

    def __call__(self) -> Discovery:
        if self._result is None:
            if self._decode is not None:
                self._result = self._decode()
                return self._result
            if self._fetch is not None:
                fetched, key = self._fetch()
                if self._head is not None and key != self._head.key:  # changed since the head
                    self.moved = True
                    self._head = Head(key, len(fetched.infos), fetched.skipped)
                self._result = fetched
                return fetched
            data = self._files_data if self._files_data is not None else self._files_bytes()
            found = self._files(data) if data is not None else None
            self._files_data = None
            if found is None:  # no child, or one that failed: scanned here
                self._stop()
                found = discover(self._roots)
                if self._head is not None:  # the child's head was read, its files were not
                    from .fileskey import files_key

                    head = Head(files_key(found.infos), len(found.infos), found.skipped)
                    self.moved = head.key != self._head.key
                    self._head = head
            elif not self._also_wanted:
                self._stop()  # nothing more to come: reaped now
            self._result = found
        return self._result

    def close(self) -> None:
        """Stop a child whose answer (or the rest of it) is not wanted: it is killed and reaped."""
        self._stop()

    def _head_message(self) -> Head | None:
        data = self._message()
        decoded = _unmarshalled(data) if data is not None else None
        try:
            key, files, skipped = decoded  # type: ignore[misc]
            if type(key) is not bytes or type(files) is not int:
                raise TypeError(key)
            return Head(key, files, [(Path(path), reason) for path, reason in skipped])
        except (TypeError, ValueError):
            self._stop()  # not trusted: the scan is done here
            return None

    def _files_bytes(self) -> bytes | None:
        """The child's files message, read (kept undecoded until asked for), or None."""
        if self._child is None:
            return None
        if self._read == 0:
            self._head = self._head_message()
        if self._read == 1 and self._head is not None:
            with contextlib.suppress(OSError):
                os.write(self._child[2], b"\1")  # (the child sends its files only when asked)
            self._files_data = self._message()
        return self._files_data

    def _files(self, data: bytes) -> Discovery | None:
        """The child's files message decoded, or None when it is not what the head says."""
        try:
            paths, sizes, mtimes, dirs = _unmarshalled(data)
            infos = list(map(_new_info, [FileInfo] * len(paths), zip(paths, sizes, mtimes, strict=True)))
        except (TypeError, ValueError):
            return None
        if self._head is None or len(infos) != self._head.files:
            return None
        return Discovery(infos, self._head.skipped, dirs)

    def _message(self) -> bytes | None:
        """The child's next message, or None when it is cut short (the child failed)."""
        if self._child is None:
            return None
        read_end = self._child[1]
        try:
            head = _read_exactly(read_end, 8)
            size = int.from_bytes(head, "little") if len(head) == 8 else -1
            data = _read_exactly(read_end, size) if size >= 0 else b""
        except OSError:
            return None
        if size < 0 or len(data) != size:
            return None
        self._read += 1
        return data

    def _stop(self) -> None:
        if self._child is not None:
            import signal

            pid, read_end, ask_end = self._child
            self._child = None
            os.close(read_end)
            os.close(ask_end)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)  # (exited already: it is a zombie, still ours to reap)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _unmarshalled(data: bytes) -> Any:
    import marshal

    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None


def _read_exactly(descriptor: int, size: int) -> bytes:
    pieces, left = [], size
    while left and (piece := os.read(descriptor, min(left, 1 << 20))):
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def _fork_discovery(roots: list[Path] | None, also: Callable[[], Any] | None = None) -> tuple[int, int, int] | None:
    """A child scanning `roots` and writing its messages to a pipe (`Pending`), its files and
    what follows only once asked for on a pipe of ours (a stored answer needs the head
    alone: nothing more is made): (its pid, the read end of its pipe, the write end of
    ours), or None when it cannot be started (the caller scans itself)."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    try:
        asked, ask_end = os.pipe()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    from .gcpause import freeze_long_lived

    # What is here now only lives on: out of the collector's reach, whose passes would write
    # to (and so copy) every page this process shares with the child while it runs.
    freeze_long_lived()
    try:
        pid = os.fork()
    except OSError:
        for end in (read_end, write_end, asked, ask_end):
            os.close(end)
        return None
    if pid == 0:  # the child: scan, write, and leave without running the parent's cleanup
        code = 1
        try:
            import gc
            import marshal

            from .fileskey import files_key

            gc.disable()  # (a child that lives for one scan: nothing to collect, pages not to copy)
            os.close(read_end)
            os.close(ask_end)
            found = discover(roots)
            infos = found.infos
            skipped = [(os.fspath(path), reason) for path, reason in found.skipped]
            _write_message(write_end, marshal.dumps((files_key(infos), len(infos), skipped)))
            if os.read(asked, 1):  # (end of file instead: the parent closed its end, nothing more wanted)
                paths = [info[0] for info in infos]
                sizes = [info[1] for info in infos]
                _write_message(write_end, marshal.dumps((paths, sizes, [info[2] for info in infos], found.dirs)))
                if also is not None:  # (after the files: a stored answer needs only the head, never waits for it)
                    try:
                        answer = marshal.dumps(also())
                    except Exception:  # no answer: the caller does that work itself
                        answer = b""
                    _write_message(write_end, answer)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    os.close(asked)
    return pid, read_end, ask_end


def _write_message(descriptor: int, data: bytes) -> None:
    """`data` behind its length (8 bytes, little-endian)."""
    for piece in (len(data).to_bytes(8, "little"), data):
        view = memoryview(piece)
        while view:
            view = view[os.write(descriptor, view) :]


def discover_ahead(
    roots: list[Path] | None = None, *, fork: bool = False, also: Callable[[], Any] | None = None
) -> Pending:
    """`discover(roots)`, started now (in a forked child with `fork`: see `Pending`) and
    answered when the returned `Pending` is called; `also`: other work for the child, done
    after the scan, whose marshallable answer `Pending.also()` gives (None without a child)."""
    return Pending(roots, fork=fork, also=also)


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
