"""A session file's lines read back by offset, through the descriptor it was read from.

A big session is read once and its lines are not kept (see `core.entries`): each entry's
line is read again from the file when a view asks for it.  The reader hands its open
descriptor to a `LineSource`, so a later read sees the file it parsed even when it was
replaced since (an atomic rename leaves the old file behind the descriptor), and pi's
appends move no byte before the old end.  What a descriptor cannot guard against is a
program rewriting the file in place (truncate, then write: Node's `writeFileSync`, which
pi's migration uses): `core.entries` checks every line it reads back against the columns
recorded when the file was read, and a line that no longer matches raises
`SessionChangedError` instead of handing out another entry.

The descriptor is closed by `close()` or, at the latest, when the source is garbage
collected (a `weakref.finalize`, so a session that is simply dropped leaks nothing).
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path

from .errors import SessionChangedError

# Bytes read per miss in a pass (a search index, the tool calls, a path walked up): a window
# read once and its lines sliced out of it.  A read far from the last one (a view's rows
# here and there, the messages of a long path) reads its line only.
WINDOW_BYTES = 64 << 10


def changed_error(path: Path | str) -> SessionChangedError:
    """The one message for a session file that changed under a reader."""
    return SessionChangedError(f"{path}: the session file changed on disk while it was open; reopen it")


class LineSource:
    """Byte ranges of one open file (see the module docstring); safe to share between threads."""

    __slots__ = ("__weakref__", "_closer", "_descriptor", "_lock", "_window", "path")

    def __init__(self, descriptor: int, path: Path | str) -> None:
        self.path = path
        self._descriptor = descriptor
        self._closer = weakref.finalize(self, os.close, descriptor)
        self._window: tuple[int, bytes] = (0, b"")  # (offset, bytes read there): replaced whole, never edited
        self._lock = threading.Lock()  # (only for close against a read: reads themselves are pread)

    @property
    def closed(self) -> bool:
        return not self._closer.alive

    def read(self, offset: int, length: int) -> memoryview | bytes:
        """The `length` bytes at `offset`; `SessionChangedError` when the file no longer holds
        them (it shrank) or the source was closed."""
        start, data = self._window
        if start <= offset and offset + length <= start + len(data):
            return memoryview(data)[offset - start : offset - start + length]
        with self._lock:
            if not self._closer.alive:
                raise changed_error(self.path)
            end = start + len(data)
            if offset < start and start - offset <= WINDOW_BYTES:  # a pass going backwards (leaf → root)
                start, size = max(0, offset + length - WINDOW_BYTES), WINDOW_BYTES
            elif offset >= end and offset - end <= WINDOW_BYTES:  # a pass going forwards
                start, size = offset, WINDOW_BYTES
            else:  # a jump (the first read, a row here and there): this line only
                start, size = offset, length
            size = max(size, offset + length - start)
            try:
                data = os.pread(self._descriptor, size, start)
            except OSError as error:
                raise changed_error(self.path) from error
        if len(data) < offset - start + length:
            raise changed_error(self.path)
        self._window = (start, data)
        return memoryview(data)[offset - start : offset - start + length]

    def close(self) -> None:
        """Close the descriptor (again is a no-op); later reads raise `SessionChangedError`."""
        with self._lock:
            self._closer()
            self._window = (0, b"")
