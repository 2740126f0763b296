"""Whole-file writes that cannot lose a line an agent appends meanwhile.

An agent (pi, oh-my-pi) appends to its session file while seance may be rewriting it (a
migration).  A rewrite is temp + fsync + rename; the danger is every byte that reaches the
*old* inode after seance took its snapshot.  `atomic_write(path, data, expected)` guards a
rewrite in layers:

1. **Refuse when busy.**  Not if the file changed in the last `quiet_seconds` (default
   `QUIET_SECONDS`, overridable with `$SEANCE_WRITE_QUIET_SECONDS` or per call: the race
   tests turn it down to exercise the path below), nor if another process holds it open
   (Linux: `/proc/*/fd`, see `core.holders`; elsewhere unknown, so only the other layers
   apply).  An agent that keeps one descriptor open would write every later line into the
   replaced inode, so that is always refused.  Nor if the content is not the snapshot the
   caller read (size, mtime, digest, inode), nor if the file has hard links (a rename would
   split them).  Each refusal is a one-line `FileChangedError`/`SessionError`.
2. **Keep the old inode.**  The snapshot is read through a descriptor that stays open over
   the rename.  After the rename, seance waits until no other process holds the old inode
   (an agent that reopens per line, like pi's `appendFileSync`, and opened it just before
   the rename holds it for microseconds), then **carries over** whatever reached it past the
   snapshot: appended right after the new content if nothing else came in, else merged in
   order (new content, late lines, lines appended to the new file) by another guarded
   rewrite; if the file never goes quiet, the late lines are appended anyway (order off,
   nothing lost).  Without /proc the wait is a fixed grace period.
3. **Owner, group and mode** of the old file are put on the temp file before the rename
   (`fchown` works as root, or for a group this user is in); a rewrite that would hand
   another user's file to this user is refused instead.
4. **Free space** is checked (`statvfs`) before the temp file is written; a failed write
   removes the temp file; the session file is untouched.
5. **Stale temp files** of seance's own — `.NAME.seance-<host>-<pid>-<rand>.tmp` — are
   removed before each write in a directory: those of a dead process on this host at once,
   any older than `STALE_TEMP_SECONDS`.  Nothing else is ever removed.

The residual risk, stated: a process that opens the file in the microseconds between the
last `/proc` scan and `rename(2)` *and then keeps it open* for longer than `HOLDER_WAIT`
seconds; the write then fails with a message naming the pid (lines it writes afterwards go
to the replaced inode).  A SIGKILL of seance between the rename and the carry-over loses
the lines of that same microsecond window.

`expected=None` is the plain replace for files no agent appends to (breadcrumbs, receipts);
`create_new` writes a new file without ever replacing one (`link(2)` refuses to).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat as stat_module
import time
from collections import Counter
from pathlib import Path

from .errors import FileChangedError, SessionError
from .holders import can_see_holders, holders, process_alive
from .session import FileStamp

QUIET_SECONDS = 5.0
QUIET_ENV = "SEANCE_WRITE_QUIET_SECONDS"
HOLDER_WAIT = 2.0
GRACE_WITHOUT_PROC = 0.05
STALE_TEMP_SECONDS = 600.0
SPACE_MARGIN = 4096
PLACEHOLDER_SETTLE = 0.05  # an append under way (open, write, close) lands within this
_MERGE_DEPTH = 3

STATS: Counter[str] = Counter()  # what the rewrites did, for measurements (see the tests)

_TEMP_PATTERN = re.compile(r"^\..+\.seance-(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")


def quiet_seconds(override: float | None = None) -> float:
    """How long a file must have been unchanged before it may be rewritten."""
    if override is not None:
        return max(0.0, override)
    raw = os.environ.get(QUIET_ENV, "").strip()
    try:
        return max(0.0, float(raw)) if raw else QUIET_SECONDS
    except ValueError:
        return QUIET_SECONDS


# ---------------------------------------------------------------------------- temp files


def _host_tag() -> str:
    return hashlib.blake2b(socket.gethostname().encode(errors="replace"), digest_size=4).hexdigest()


NAME_MAX = 255  # bytes in a file name (Linux, macOS)


def temp_path_for(path: Path) -> Path:
    """A fresh temp name beside `path` that marks it as seance's, with host and pid; a long
    name is cut so the temp's fits in `NAME_MAX` bytes (a 230-byte session name is legal)."""
    tail = f".seance-{_host_tag()}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    raw = path.name.encode("utf-8", "surrogateescape")[: NAME_MAX - 1 - len(tail)]
    return path.parent / f".{raw.decode('utf-8', 'ignore') or '_'}{tail}"


def clean_stale_temps(directory: Path) -> list[Path]:
    """Remove seance's own temp files left by a killed write; returns what was removed."""
    removed: list[Path] = []
    host, me, now = _host_tag(), os.getpid(), time.time()
    try:
        entries = os.scandir(directory)
    except OSError:
        return removed
    with entries:
        for entry in entries:
            match = _TEMP_PATTERN.match(entry.name)
            if match is None:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            folder = stat_module.S_ISDIR(info.st_mode)  # (an undo's copy of an artifacts folder)
            own_kind = folder or stat_module.S_ISREG(info.st_mode) or stat_module.S_ISLNK(info.st_mode)  # (or link)
            if not own_kind or (os.geteuid() not in (0, info.st_uid)):
                continue
            pid = int(match["pid"])
            dead = match["host"] == host and pid != me and not process_alive(pid)
            # (its change time: an undo's copy on its way back carries the session's old mtime)
            if dead or now - max(info.st_mtime, info.st_ctime) > STALE_TEMP_SECONDS:
                try:
                    shutil.rmtree(entry.path) if folder else os.unlink(entry.path)
                    removed.append(Path(entry.path))
                except OSError:
                    pass
    return removed


# ---------------------------------------------------------------------------- small guards


def ensure_space(path: Path, fd: int, needed: int) -> None:
    """Refuse (nothing written) unless the filesystem has room for `needed` more bytes."""
    try:
        info = os.fstatvfs(fd)
    except OSError:
        return  # cannot tell: the write itself reports ENOSPC
    free = info.f_bavail * info.f_frsize
    if free < needed + max(SPACE_MARGIN, info.f_frsize):
        raise SessionError(f"{path}: the disk is full ({free} bytes free, {needed} needed); nothing was written")


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new entry in `directory` durable (best effort: some filesystems refuse)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _match_owner_and_mode(fd: int, path: Path, like: os.stat_result) -> None:
    """Give the temp file the old file's owner, group and mode, or refuse the rewrite."""
    uid = like.st_uid if like.st_uid != os.geteuid() else -1
    gid = like.st_gid if like.st_gid != os.getegid() else -1
    if uid != -1 or gid != -1:
        try:
            os.fchown(fd, uid, gid)
        except OSError as error:
            raise SessionError(
                f"{path}: belongs to uid {like.st_uid} / gid {like.st_gid}; rewriting it as this user "
                f"would take it over ({error.strerror}); nothing was written"
            ) from error
    os.fchmod(fd, stat_module.S_IMODE(like.st_mode))  # after chown, which clears set-id bits


def _copy_xattrs(fd: int, path: Path) -> None:
    """Give the temp file the old file's extended attributes (a file manager's tags and
    comments, ACLs), as far as this user may set them; best effort (a system without them)."""
    try:
        names = os.listxattr(path)
    except (AttributeError, OSError):  # no xattr support (macOS's os has none; some filesystems)
        return
    for name in names:
        with contextlib.suppress(OSError):  # e.g. a security.* label only root may set
            os.setxattr(fd, name, os.getxattr(path, name))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_temp(path: Path, data: bytes, like: os.stat_result | None) -> Path:
    """Write `data` to a fresh temp file beside `path` (fsynced, owner/mode of `like`)."""
    temp = temp_path_for(path)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as error:  # (a missing or read-only folder): name the file asked for, not the temp
        raise type(error)(error.errno, error.strerror, str(path)) from error
    try:
        try:
            ensure_space(path, fd, len(data))
            if like is not None:
                _copy_xattrs(fd, path)  # (before the mode: an ACL's mask is the group's bits)
                _match_owner_and_mode(fd, path, like)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as error:
        _unlink_quietly(temp)
        if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise SessionError(f"{path}: the disk is full ({error.strerror}); nothing was written") from error
        raise
    except BaseException:
        _unlink_quietly(temp)
        raise
    return temp


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def refuse_undigested(path: str | os.PathLike[str], stamp: FileStamp) -> None:
    """Refuse a write guarded by a read-only load's stamp (no digest: see `FileStamp`): without
    the content digest "unchanged since it was read" cannot be proven."""
    if stamp.digest is None:
        raise SessionError(f"{path}: was read for display only (no content digest); nothing was written")


def _check_unchanged(path: Path, stamp: FileStamp, *, verify_content: bool = True) -> None:
    """Refuse unless `path` is still exactly what was read (size, mtime, digest)."""
    try:
        stat = os.stat(path)
    except FileNotFoundError as error:
        raise FileChangedError(f"{path}: the file is gone; nothing was written") from error
    if not stamp.matches(stat):
        raise FileChangedError(f"{path}: the file changed on disk since it was read; nothing was written")
    if verify_content:
        with open(path, "rb") as handle:
            current = FileStamp.of_bytes(handle.read(), stat)
        if current.digest != stamp.digest:
            raise FileChangedError(f"{path}: the file changed on disk since it was read; nothing was written")


def _refuse_if_held(path: Path, old: os.stat_result) -> None:
    pids = holders(old.st_dev, old.st_ino)
    if pids:
        listed = ", ".join(str(pid) for pid in pids[:5])
        raise FileChangedError(f"{path}: is open in process {listed} (an agent writing to it?); nothing was written")


def _refuse_if_recent(path: Path, old: os.stat_result, quiet: float) -> None:
    age = time.time() - old.st_mtime
    if quiet > 0 and age < quiet:
        raise FileChangedError(
            f"{path}: was written {max(age, 0):.1f} s ago (an agent may be writing to it); "
            "nothing was written, try again when it is idle"
        )


def _refuse_unless_plain_file(path: Path, old: os.stat_result) -> None:
    if not stat_module.S_ISREG(old.st_mode):
        raise SessionError(f"{path}: not a regular file; nothing was written")
    if old.st_nlink > 1:
        raise SessionError(f"{path}: has {old.st_nlink} hard links (a rewrite would split them); nothing was written")


# ---------------------------------------------------------------------------- rewrite


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    expected: FileStamp | None,
    *,
    quiet: float | None = None,
    private: bool = False,
) -> None:
    """Replace `path` with `data` (temp + fsync + rename) without losing a concurrent append.

    `expected` is the snapshot the caller read; None is the unguarded replace for files no
    agent writes to, which keeps the replaced file's owner and mode unless `private` (0600:
    an export of session text over a file anyone could read).  A symlinked session is
    replaced at its target: the link stays a link.
    """
    if expected is not None:
        refuse_undigested(path, expected)
    target = Path(os.path.realpath(path))
    clean_stale_temps(target.parent)
    if expected is None:
        try:
            like: os.stat_result | None = None if private else os.stat(target)
        except FileNotFoundError:
            like = None
        temp = _write_temp(target, data, like)
        _rename(temp, target)
        return
    _guarded_rewrite(target, data, expected, quiet_seconds(quiet), depth=0)


def _rename(temp: Path, target: Path) -> None:
    try:
        os.replace(temp, target)
    except BaseException:
        _unlink_quietly(temp)
        raise
    fsync_dir(target.parent)


def _guarded_rewrite(path: Path, data: bytes, expected: FileStamp, quiet: float, depth: int) -> None:
    try:
        old_fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError as error:
        raise FileChangedError(f"{path}: the file is gone; nothing was written") from error
    try:
        old = os.fstat(old_fd)
        _refuse_unless_plain_file(path, old)
        _refuse_if_recent(path, old, quiet)
        _check_unchanged(path, expected, verify_content=False)  # size and mtime; the content is read once, last
        temp = _write_temp(path, data, old)
        try:
            _refuse_if_held(path, old)
            _check_unchanged(path, expected)  # the last look: nothing between it and the rename
            if os.stat(path).st_ino != old.st_ino:
                raise FileChangedError(f"{path}: the file was replaced since it was read; nothing was written")
        except BaseException:
            _unlink_quietly(temp)
            raise
        _rename(temp, path)
        STATS["rewritten"] += 1
        _carry_over(path, old_fd, old, expected.size, data, depth)
    finally:
        os.close(old_fd)


def _carry_over(path: Path, old_fd: int, old: os.stat_result, snapshot_size: int, data: bytes, depth: int) -> None:
    """Bring what reached the replaced inode after the snapshot into the new file."""
    lingering: list[int] = []
    if can_see_holders():
        deadline = time.monotonic() + HOLDER_WAIT
        while pids := holders(old.st_dev, old.st_ino) or []:
            if time.monotonic() > deadline:
                lingering = pids
                break
            time.sleep(0.001)
    else:
        time.sleep(GRACE_WITHOUT_PROC)
    size = os.fstat(old_fd).st_size
    if size > snapshot_size:
        late = _pread_all(old_fd, snapshot_size, size - snapshot_size)
        STATS["late lines carried over"] += late.count(b"\n")
        _insert_after(path, data, late if late.endswith(b"\n") else late + b"\n", depth)
    if lingering:
        raise SessionError(
            f"{path}: rewritten, but process {lingering[0]} still has the old file open; "
            "lines it writes from now on will not reach this file"
        )


def _pread_all(fd: int, offset: int, length: int) -> bytes:
    parts: list[bytes] = []
    while length > 0:
        chunk = os.pread(fd, length, offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(parts)


def _insert_after(path: Path, data: bytes, late: bytes, depth: int) -> None:
    """Put `late` right after `data` in the file at `path`, keeping later appends after it."""
    for _attempt in range(5):
        fd = os.open(path, os.O_RDWR | os.O_APPEND)
        try:
            info = os.fstat(fd)
            if info.st_size == len(data):
                append_whole(path, fd, late, expected_size=len(data))
                STATS["carried over: appended"] += 1
                return
            current = _pread_all(fd, 0, info.st_size)
        finally:
            os.close(fd)
        if depth >= _MERGE_DEPTH or not current.startswith(data):
            break  # rewritten by someone else, or never quiet: keep the lines, at the end
        merged = data + late + current[len(data) :]
        try:
            _guarded_rewrite(path, merged, FileStamp.of_bytes(current, info), 0.0, depth + 1)
            STATS["carried over: merged"] += 1
            return
        except FileChangedError:
            time.sleep(0.002)
    STATS["carried over: at the end"] += 1
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        append_whole(path, fd, late, expected_size=None)
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- append


def append_whole(path: Path, fd: int, payload: bytes, *, expected_size: int | None) -> int:
    """One `write()` of `payload` on an O_APPEND descriptor; returns the offset it landed at.

    Refused beforehand when the disk is too full; a short write or an error is undone
    (`ftruncate` back to the size before, if nothing else was appended after it), so a
    failed append never leaves a torn line for the agent to glue its next line onto.
    `expected_size` is only used for the message when the line landed elsewhere.
    """
    ensure_space(path, fd, len(payload))
    before = os.fstat(fd)
    try:
        written = os.write(fd, payload)
    except OSError as error:
        raise SessionError(f"{path}: could not append ({error.strerror}); nothing was written") from error
    end = os.lseek(fd, 0, os.SEEK_CUR)
    start = end - written
    if written != len(payload):
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, start)
            if start == before.st_size:  # as it was, its time too (else it reads as just written)
                os.utime(fd, ns=(before.st_atime_ns, before.st_mtime_ns))
                if os.fstat(fd).st_size != start:  # an agent appended meanwhile: its time stands
                    os.utime(fd)
            raise SessionError(f"{path}: could not append (disk full?); nothing was written")
        raise SessionError(f"{path}: a partial line of {written} bytes was left at byte {start} (disk full?)")
    os.fsync(fd)
    return start


# link() errors of a filesystem without hard links (FAT, exFAT, some network and FUSE mounts)
NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS, errno.EXDEV})


def create_new(path: str | os.PathLike[str], data: bytes) -> None:
    """Write a new file at `path` (temp + fsync + link): never replaces an existing one."""
    target = Path(path)
    clean_stale_temps(target.parent)
    temp = _write_temp(target, data, None)
    try:
        link_new(temp, target)
    except FileExistsError as error:
        raise SessionError(f"{target}: already exists") from error
    finally:
        _unlink_quietly(temp)
    fsync_dir(target.parent)


def link_new(source: Path, target: Path) -> None:
    """Give the finished file `source` the name `target` too, never over a file there
    (`FileExistsError`): link(2); on a filesystem without hard links (a USB stick, a network
    share) the name is claimed with O_EXCL and `source` renamed over the empty placeholder,
    so the file appears whole or briefly empty, never half-written (`source` is then gone).
    What was appended at `target` while the placeholder held it (an agent's next line at a
    session's path, freed by a delete that is being undone) is appended after `source`'s."""
    try:
        os.link(source, target, follow_symlinks=False)  # (a link stays a link)
        return
    except OSError as error:
        if error.errno not in NO_HARD_LINKS:  # (EEXIST among them: a file is there)
            raise
    placeholder = os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.replace(source, target)
        except BaseException:
            if _holds(target, placeholder):  # (our own placeholder, not a file published over it)
                _unlink_quietly(target)
            raise
        late = os.read(placeholder, 1 << 30)
        time.sleep(PLACEHOLDER_SETTLE)  # an append that opened the path just before the rename
        late += os.read(placeholder, 1 << 30)
    finally:
        os.close(placeholder)
    if late:
        with open(target, "ab") as writer:
            writer.write(late)
            writer.flush()
            os.fsync(writer.fileno())


def _holds(path: Path, fd: int) -> bool:
    """Whether `path` is still the file open as `fd`."""
    try:
        there, mine = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except OSError:
        return False
    return (there.st_ino, there.st_dev) == (mine.st_ino, mine.st_dev)


__all__ = [
    "NO_HARD_LINKS",
    "QUIET_ENV",
    "QUIET_SECONDS",
    "STATS",
    "append_whole",
    "atomic_write",
    "clean_stale_temps",
    "create_new",
    "ensure_space",
    "link_new",
    "quiet_seconds",
    "temp_path_for",
]
