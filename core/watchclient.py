"""Asking the resident watcher (`core.watchd`) for the listing, instead of stat-ing every file.

`synced_discovery(cache_dir, roots, explicit)` is the one entry (`Catalog.discover` calls it
when the catalog is `watched`): None, at once, when no watcher holds the index's watch lock
(one `open` and one `flock` attempt: what every `ls` pays without a watcher); else it sends
a sync and returns the watcher's `Discovery`, exact as of the request (every write that
completed before it is in it).  Anything else — the watcher serves other roots, does not
vouch for this layout, speaks another protocol, is not run by this user, or does not answer
within `SYNC_TIMEOUT_S` (`SEANCE_WATCH_TIMEOUT` overrides: tests) — is None too, and the
caller discovers the files itself: never a wrong answer, never a hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .discovery import Discovery, Head, Pending
from .gcpause import gc_paused
from .watchproto import (
    LOCK_NAME,
    PROTOCOL,
    SOCKET_NAME,
    SYNC_HEAD,
    check_listing,
    decode_listing,
    roots_key,
    same_user,
    short_socket_path,
)

if TYPE_CHECKING:
    import _socket

SYNC_TIMEOUT_S = 1.0  # the whole exchange; a watcher busy discovering everything again is not waited for


def watcher_running(cache_dir: Path) -> bool:
    """Whether a watcher holds the watch lock of the index in `cache_dir`."""
    try:  # (O_NONBLOCK: a FIFO there never blocks `ls`; `flock` tells no watcher holds it)
        fd = os.open(cache_dir / LOCK_NAME, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # also releases the shared lock, if taken
    return False


def will_ask(cache_dir: Path) -> bool:
    """Whether a listing would ask a watcher at all: one holds the lock of the index in
    `cache_dir` and `SEANCE_NO_WATCH` is not set."""
    return not os.environ.get("SEANCE_NO_WATCH") and watcher_running(cache_dir)


def request(cache_dir: Path, line: bytes, timeout: float) -> _socket.socket | None:
    """A connection to the watcher with `line` sent, or None (no watcher, or not this user's).
    The socket is the C module's (`socket.socket`'s base: no `with`, the caller closes it):
    `socket` builds its enums when imported, ~2 ms of every `ls` a watcher serves.  Imported
    once a watcher holds the lock: an `ls` without one needs neither."""
    if not watcher_running(cache_dir):
        return None
    try:
        import _socket as sockets
    except ImportError:  # (not CPython)
        import socket as sockets  # type: ignore[no-redef]

    conn = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        with short_socket_path(cache_dir / SOCKET_NAME) as address:
            conn.connect(address)
        if not same_user(conn):
            conn.close()
            return None
        conn.sendall(line + b"\n")
    except OSError:
        conn.close()
        return None
    return conn


def synced_discovery(cache_dir: Path, roots: list[Path], explicit: bool) -> Discovery | None:
    """The watcher's listing of `roots` after a sync, or None (see the module docstring)."""
    pending = synced_listing(cache_dir, roots, explicit)
    return pending() if pending is not None else None


def synced_listing(cache_dir: Path, roots: list[Path], explicit: bool, *, head_first: bool = False) -> Pending | None:
    """`synced_discovery`, received whole but decoded only when its files are asked for: its
    `Pending.head` (the files' key, their number, the skips) comes from the watcher's header,
    so a listing whose stored answer is still valid never builds 100,000 files' tuples.  A
    watcher that sends no key (an older one) has its files decoded for the key here.

    With `head_first`, only the header is asked for (`SYNC HEAD`: 16 MB of files at 100,000
    never sent); the files, if asked for, come from a second sync (`Pending.fetched_later`):
    when they changed in between, the `Pending` says it `moved` (an answer made from them is
    not kept under either key), and when the watcher is gone by then they are found here."""
    if not will_ask(cache_dir):
        return None
    if head_first:
        head = _synced_head(cache_dir, roots, explicit)
        if head is None:
            return None
        if head is not _NO_HEAD:
            return Pending.fetched_later(head, lambda: _fetched(cache_dir, roots, explicit))
    timeout = _timeout()
    deadline = time.monotonic() + timeout
    conn = request(cache_dir, b"SYNC", timeout)
    if conn is None:
        return None
    import json  # (the standard one: a skipped path's lone surrogates are escaped in it)

    with contextlib.closing(conn):
        try:
            header_line, rest = _read_header(conn, deadline)
            header = json.loads(header_line)
            if not _usable(header, roots, explicit):
                return None
            size = int(header["bytes"])
            chunks = [rest]
            received = len(rest)
            while received < size:
                conn.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = conn.recv(min(1 << 20, size - received))
                if not chunk:
                    return None
                chunks.append(chunk)
                received += len(chunk)
            blob, count = b"".join(chunks), int(header["files"])
            check_listing(blob, count)  # (so decoding it later cannot fail)
            skipped = [(Path(path), reason) for path, reason in header["skipped"]]
            key = header.get("key")
        except (OSError, ValueError, TypeError, KeyError, EOFError, UnicodeDecodeError):
            return None

    def decoded() -> Discovery:
        with gc_paused():  # 100,000 new tuples: nothing for the collector to find
            return Discovery(infos=decode_listing(blob, count), skipped=skipped)

    if type(key) is not str or len(key) != 64:
        return Pending.of(decoded())
    try:
        return Pending.decoded_later(Head(bytes.fromhex(key), count, skipped), decoded)
    except ValueError:
        return Pending.of(decoded())


_NO_HEAD = Head(b"", 0, [])  # a watcher that answers no `SYNC HEAD` (an older one): ask a `SYNC`


def _synced_head(cache_dir: Path, roots: list[Path], explicit: bool) -> Head | None:
    """The watcher's `Head` of the listing after a sync, without its files; `_NO_HEAD` when
    it does not answer that request (or gives no key), None when it cannot serve `roots`."""
    timeout = _timeout()
    deadline = time.monotonic() + timeout
    conn = request(cache_dir, SYNC_HEAD, timeout)
    if conn is None:
        return None
    import json

    with contextlib.closing(conn):
        try:
            header = json.loads(_read_header(conn, deadline)[0])
            if not _usable(header, roots, explicit):
                return None
            key, count = header.get("key"), int(header["files"])
            if type(key) is not str or len(key) != 64 or header["bytes"] != 0:
                return _NO_HEAD
            return Head(bytes.fromhex(key), count, [(Path(path), reason) for path, reason in header["skipped"]])
        except EOFError:  # (closed unanswered: it does not know the request)
            return _NO_HEAD
        except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None


def _fetched(cache_dir: Path, roots: list[Path], explicit: bool) -> tuple[Discovery, bytes]:
    """The files now and their key: the watcher's listing after another sync, or (it is gone
    or no longer answers) found here."""
    pending = synced_listing(cache_dir, roots, explicit)
    if pending is not None:
        return pending(), pending.head().key
    from .discovery import discover
    from .fileskey import files_key

    found = discover(roots, given=explicit)  # (the command's roots: the default roots may have changed since)
    return found, files_key(found.infos)


def _usable(header: dict, roots: list[Path], explicit: bool) -> bool:
    return (
        header.get("protocol") == PROTOCOL
        and header.get("exact") is True
        and header.get("roots") == roots_key(roots, explicit)
    )


def _read_header(conn: _socket.socket, deadline: float) -> tuple[bytes, bytes]:
    data = b""
    while b"\n" not in data:
        conn.settimeout(max(0.001, deadline - time.monotonic()))
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise EOFError("the watcher closed the connection")
        data += chunk
        if len(data) > 64 << 20:
            raise ValueError("header too long")
    line, _, rest = data.partition(b"\n")
    return line, rest


def _timeout() -> float:
    with contextlib.suppress(ValueError):
        return max(0.01, float(os.environ.get("SEANCE_WATCH_TIMEOUT", "")))
    return SYNC_TIMEOUT_S


__all__ = ["SYNC_TIMEOUT_S", "request", "synced_discovery", "synced_listing", "watcher_running"]
