"""Linux inotify through ctypes: one file descriptor, read by its owner, in the kernel's order.

The resident watcher (`core.watchd`) needs two things watchfiles' `RustNotify` does not give:

* **lost events reported**: when an inotify queue overflows, the kernel drops events and
  queues one `IN_Q_OVERFLOW`; notify (the crate under watchfiles) turns it into a "rescan"
  event without a path, and watchfiles drops every event without a path (watchfiles 1.3,
  `src/lib.rs`: "no paths found"), so a caller never learns that changes were lost;
* **the order of one descriptor's events, read by the caller**: an inotify fd's events come
  out in the order they were queued (each queued inside the syscall that caused it), so a
  file the daemon creates itself (a sentinel) marks the point up to which every earlier
  change has been read.  `RustNotify` keeps that order too (one thread reads the fd and
  inserts each event into a set in turn), but into an unordered set the caller drains.

This module is only the system calls: no policy.  Linux only (`available()`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import struct
import sys
from typing import NamedTuple

IN_ACCESS = 0x001
IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_UNMOUNT = 0x2000
IN_Q_OVERFLOW = 0x4000
IN_IGNORED = 0x8000
IN_ONLYDIR = 0x01000000
IN_ISDIR = 0x40000000
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000

_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len


class Event(NamedTuple):
    """One inotify event: the watch it came from, what happened, and the entry's name ("" for
    the watched directory itself or an overflow)."""

    wd: int
    mask: int
    cookie: int
    name: str


def available() -> bool:
    return sys.platform.startswith("linux") and _libc() is not None


_LIBC: ctypes.CDLL | None = None


def _libc() -> ctypes.CDLL | None:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            _LIBC.inotify_init1.argtypes = [ctypes.c_int]
            _LIBC.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            _LIBC.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        except (OSError, AttributeError):
            return None
    return _LIBC


class Inotify:
    """One inotify instance: `add(path, mask)` → a watch descriptor; `read(timeout)` → events in
    the kernel's order (an `IN_Q_OVERFLOW` event among them when some were lost)."""

    def __init__(self) -> None:
        libc = _libc()
        if libc is None or not sys.platform.startswith("linux"):
            raise OSError(errno.ENOSYS, "inotify is not available on this system")
        self._libc = libc
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise _os_error("inotify_init1")
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def add(self, path: str, mask: int) -> int:
        """Watch `path` (a directory, non-recursively); raises OSError (ENOENT, ENOTDIR, ENOSPC
        when the user's watch limit is reached...)."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask)
        if wd < 0:
            raise _os_error(path)
        return int(wd)

    def remove(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self.fd, wd)  # gone already (IN_IGNORED sent): nothing to do

    def read(self, timeout: float | None) -> list[Event]:
        """Every event queued now, waiting up to `timeout` seconds for the first (None: forever)."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        events: list[Event] = []
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                return events
            offset = 0
            while offset < len(data):
                wd, mask, cookie, length = _HEADER.unpack_from(data, offset)
                offset += _HEADER.size
                name = data[offset : offset + length].rstrip(b"\0")
                offset += length
                events.append(Event(wd, mask, cookie, os.fsdecode(name)))

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def _os_error(what: str) -> OSError:
    code = ctypes.get_errno()
    return OSError(code, os.strerror(code), what)


__all__ = ["Event", "Inotify", "available"]
