"""What the resident watcher (`core.watchd`) and its clients (`core.watchclient`) share: the
names in the cache dir, the protocol's version, the roots' key and the listing's wire format.

Kept apart from the watcher itself so that a client (every `ls`) imports no inotify binding.
"""

from __future__ import annotations

import contextlib
import os
import struct
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from .discovery import FileInfo

if TYPE_CHECKING:
    import _socket  # (`socket.socket`'s base: a client's connection is one, `watchclient.request`)

PROTOCOL = 1
# A sync answered with the header alone (its "key": `fileskey.files_key` of the listing), no
# files: what a query whose answer is stored needs.  A watcher that does not know it closes
# the connection unanswered; the client then asks a plain `SYNC`.
SYNC_HEAD = b"SYNC HEAD"
LOCK_NAME = "watchd.lock"
SOCKET_NAME = "watchd.sock"


def lock_path(cache_dir: Path) -> Path:
    return cache_dir / LOCK_NAME


def socket_path(cache_dir: Path) -> Path:
    return cache_dir / SOCKET_NAME


def roots_key(roots: list[Path], explicit: bool) -> list[str]:
    """The roots as discovery walks them (absolute, in order), and whether they were given:
    a client is answered only for the very same."""
    return [("given:" if explicit else "default:") + os.path.abspath(Path(root).expanduser()) for root in roots]


def encode_listing(infos: list[FileInfo]) -> bytes:
    """Files as bytes a client decodes fast (`decode_listing`): the paths joined by NULs (never
    in a path), then every size and every mtime as native 64-bit integers."""
    paths = "\0".join(info.path for info in infos).encode("utf-8", "surrogateescape")
    sizes = array("q", [info.size for info in infos]).tobytes()
    mtimes = array("q", [info.mtime_ns for info in infos]).tobytes()
    return len(paths).to_bytes(8, "little") + paths + sizes + mtimes


def check_listing(blob: bytes, count: int) -> None:
    """Raise ValueError unless `blob` is `count` files as `encode_listing` writes them (then
    `decode_listing` cannot fail), without decoding them."""
    if count == 0:
        return
    length = int.from_bytes(blob[:8], "little")
    if len(blob) < 8 + length or blob.count(b"\0", 8, 8 + length) != count - 1 or len(blob) - 8 - length != 16 * count:
        raise ValueError("a listing of the wrong size")


def decode_listing(blob: bytes, count: int) -> list[FileInfo]:
    """`encode_listing`'s files again; raises ValueError when `blob` is not `count` of them."""
    if count == 0:
        return []
    check_listing(blob, count)
    length = int.from_bytes(blob[:8], "little")
    paths = blob[8 : 8 + length].decode("utf-8", "surrogateescape").split("\0")
    numbers = array("q")
    numbers.frombytes(blob[8 + length :])
    if len(paths) != count or len(numbers) != 2 * count:
        raise ValueError("a listing of the wrong size")
    new = tuple.__new__
    return [new(FileInfo, row) for row in zip(paths, numbers[:count].tolist(), numbers[count:].tolist(), strict=True)]


def read_line(conn: _socket.socket, limit: int = 256) -> bytes:
    data = b""
    while not data.endswith(b"\n") and len(data) < limit:
        chunk = conn.recv(limit - len(data))
        if not chunk:
            break
        data += chunk
    return data.strip()


def same_user(conn: _socket.socket) -> bool:
    """The peer runs as this user (Linux: `SO_PEERCRED`)."""
    try:
        from _socket import SO_PEERCRED, SOL_SOCKET

        creds = conn.getsockopt(SOL_SOCKET, SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


@contextlib.contextmanager
def short_socket_path(path: Path) -> Iterator[str]:
    """`path` as a Unix socket address: through `/proc/self/fd` when it is too long for one."""
    text = os.fspath(path)
    if len(os.fsencode(text)) < 100:
        yield text
        return
    fd = os.open(os.path.dirname(text), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{os.path.basename(text)}"
    finally:
        os.close(fd)
