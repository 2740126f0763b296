"""Files the cache keeps beside its index, each named by an entry of the index's `listings`
table: every session's `ls --json` objects (`queryobjects`) and a query's kept rows
(`queryrows`), tens of MB at 100,000 sessions, mapped when read (through SQLite's pages they
cost a query 5x more).

- **written whole** (`write_tagged`): a fresh tag of `TAG_BYTES` random bytes, then the
  bytes, into a temporary file put in place by a rename; a reader that has the old file
  mapped keeps it, one that opens it now finds another tag.  The entry names the file by
  its tag, size and CRC.
- **read only when it is the entry's** (`checked_file`): the size, the tag, and the CRC,
  checked once: a note beside the file then vouches for it while its identity is the one
  checked (`vouched`, `vouch`).  A file that is not (gone, replaced, damaged) is not used:
  the caller reads from the index again.
- **pruned** (`prune`) when no entry names it any more, unless it was just written.
"""

from __future__ import annotations

import contextlib
import os
import time
import zlib
from array import array
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

from .safeopen import open_regular, read_regular

TAG_BYTES = 16
FILE_SUFFIX = ".bin"  # (a tag, then the bytes: no file a program would open by its name)


def mapped_file(path: Path) -> Any:
    """`path` mapped read-only (an `mmap.mmap`), or None when it is empty."""
    import mmap

    descriptor, info = open_regular(path)  # (a FIFO there never blocks)
    try:
        return mmap.mmap(descriptor, 0, access=mmap.ACCESS_READ) if info.st_size else None
    finally:
        os.close(descriptor)  # (the map keeps its own reference to the file)


# -- a file checked once: its identity vouches for it after (`vouched`, `vouch`) ------------------
#
# Checking the CRC of 71 MB (every session's objects) is ~30 ms of every query printed from
# them (a third of it at 100,000 sessions).  Once a file passed it, a small note beside it
# (`NOTE_SUFFIX`) keeps its tag, CRC and identity: device, inode, size, mtime and ctime.  Any write to the file, or
# another file put in its place, changes the ctime or the inode (no program can set a ctime
# back), so while they are the note's the bytes are the ones checked.  A change made in the
# same clock tick as the file's last one would keep the ctime: a note is written only for a
# file last changed `SETTLED_NS` before it was opened (file systems stamp with a clock of
# ticks <= 10 ms), and only on a file system with sub-second stamps; else the CRC stays.

NOTE_SUFFIX = ".ok"
SETTLED_NS = 100_000_000


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def _note(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(FILE_SUFFIX) + NOTE_SUFFIX)


def vouched(path: Path, tag: bytes, crc: int, stat: os.stat_result) -> bool:
    """Whether the note beside the kept file at `path` says that this very file (`stat`:
    its identity, taken before it was read) holds the bytes of `tag` whose CRC is `crc`."""
    try:
        note = read_regular(_note(path), 256)
    except OSError:  # (one over 256 bytes, too: no note of ours)
        return False
    expected = tag + array("q", [crc, *_identity(stat)]).tobytes()
    return note == expected


def vouch(path: Path, tag: bytes, crc: int, stat: os.stat_result, fileno: int, stat_at_ns: int) -> None:
    """Note that the kept file at `path` (`stat`, taken at `stat_at_ns` (`time.time_ns`)
    before it was read; `fileno`, open on it) passed its CRC, so that the next reads check
    its identity alone (`vouched`): when it had settled by then and its file system stamps
    finer than a second.  Its bytes are made durable first (a crash never leaves a note for
    bytes not on disk).  A note that cannot be written is no failure: the CRC is checked
    again next time."""
    if not stat.st_ctime_ns % 1_000_000_000 or stat_at_ns - stat.st_ctime_ns < SETTLED_NS:
        return
    note = _note(path)
    temp = note.with_name(f".{note.name}.{os.getpid()}.tmp")
    try:
        os.fsync(fileno)
        with open(temp, "wb") as handle:
            handle.write(tag + array("q", [crc, *_identity(stat)]).tobytes())
        os.replace(temp, note)
    except OSError:
        with contextlib.suppress(OSError):
            temp.unlink()


def checked_file(path: Path, tag: bytes, size: int, crc: int) -> tuple[Any, Any] | None:
    """The file at `path` open and mapped read-only, when it is the one an entry names: its
    `size`, its first bytes `tag`, and its CRC `crc` (or a note that vouches for it: `vouched`,
    written once it passed: `vouch`); None when it is not (gone, replaced, damaged)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115  (kept open: the caller's, the bytes checked)
    except OSError:
        return None
    try:
        stat_at_ns = time.time_ns()
        stat = os.fstat(handle.fileno())  # (before the bytes are read: `vouch`)
        if stat.st_size != size:
            raise ValueError("not the entry's size")
        import mmap

        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if mapped[:TAG_BYTES] != tag:
            raise ValueError("another store's file")
        if not vouched(path, tag, crc, stat):
            if zlib.crc32(mapped) != crc:
                raise ValueError("damaged")
            vouch(path, tag, crc, stat, handle.fileno(), stat_at_ns)
    except (OSError, ValueError):
        handle.close()
        return None
    return handle, mapped


def write_tagged(path: Path, chunks: Iterable[bytes | memoryview]) -> tuple[bytes, int, int] | None:
    """`chunks` written at `path` after a fresh tag of `TAG_BYTES` random bytes, through a
    temporary file put in its place whole (a reader that has the old one mapped keeps it,
    one that opens it now finds another tag): (the tag, the file's CRC, its size), or None
    when it cannot be written."""
    tag = os.urandom(TAG_BYTES)
    crc, size = zlib.crc32(tag), TAG_BYTES
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temp, "wb") as handle:
            handle.write(tag)
            for chunk in chunks:
                handle.write(chunk)
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
        os.replace(temp, path)
    except OSError:
        return None
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    return tag, crc, size


PRUNE_GRACE_S = 60.0  # a file this young is kept though no entry names it yet (`prune`)


def prune(cache_dir: Path, scopes: Collection[bytes], kind: str, *, grace_s: float = PRUNE_GRACE_S) -> None:
    """Delete the files of `kind` (`kept_file`) of every scope but `scopes` (entries
    pushed out, or a rebuilt index): at most a few, each as big as the answer of every session.
    A file written in the last `grace_s` seconds is left: another process may have written
    it and not yet stored the entry that names it (a later prune takes it if none does).
    So is a temporary file (`write_tagged`'s, `vouch`'s) whose writer is gone: one killed
    mid-write (the watcher's refresh stopped) left tens of MB no other name ever leads to."""
    keep = {kept_file(cache_dir, scope, kind).name for scope in scopes}
    keep |= {_note(cache_dir / name).name for name in keep}
    prefix = f"{kind}-"
    settled = time.time() - grace_s
    for path in [*cache_dir.glob(f"{prefix}*{FILE_SUFFIX}"), *cache_dir.glob(f"{prefix}*{NOTE_SUFFIX}")]:
        if path.name not in keep:
            with contextlib.suppress(OSError):
                if path.stat().st_mtime <= settled:
                    path.unlink()
    for path in cache_dir.glob(f".{prefix}*.tmp"):
        with contextlib.suppress(OSError):
            if path.stat().st_mtime <= settled and not _writing(path.name):
                path.unlink()


def _writing(temp_name: str) -> bool:
    """Whether the process that names the temporary file `temp_name` (`.NAME.PID.tmp`) still
    runs (or its pid cannot be read: left alone)."""
    try:
        pid = int(temp_name.rsplit(".", 2)[-2])
        os.kill(pid, 0)
    except (ValueError, IndexError, PermissionError):
        return True
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def kept_file(cache_dir: Path, scope: bytes, kind: str) -> Path:
    """The file of `kind` holding what is stored under `scope` (one per scope and kind,
    replaced whole): `queryobjects.OBJECTS_KIND`, every session's objects, or
    `queryrows.ROWS_KIND`, a query's kept rows)."""
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # (built in: `hashlib` loads OpenSSL, ~4 ms)
    except ImportError:  # (a Python built without it)
        from hashlib import sha1

    return cache_dir / f"{kind}-{sha1(scope).hexdigest()[:20]}{FILE_SUFFIX}"
