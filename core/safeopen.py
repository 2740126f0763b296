"""Open a session file for reading without ever blocking on something that is not a file.

A FIFO named `x.jsonl` blocks a plain `open()` until a writer appears (forever, usually); a
unix socket cannot be opened at all; a device may never end.  `open_regular` is the one way
seance opens a session file to read it: it checks the path is a regular file, opens it with
`O_NONBLOCK` (so a FIFO swapped in after that check opens at once instead of blocking) and
checks the opened descriptor again with `fstat`.  Anything else raises `NotRegularFile`, an
`OSError` whose `strerror` is "not a regular file", so callers that report `OSError`s by
their `strerror` say the right thing without knowing about this module.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module

NOT_REGULAR = "not a regular file"


class NotRegularFile(OSError):
    """The path is a FIFO, socket, device or directory, not a regular file."""

    def __init__(self, path: str | os.PathLike[str], reason: str = NOT_REGULAR) -> None:
        super().__init__(errno.EINVAL, reason, os.fspath(path))


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at `path`, and its `fstat`; the caller closes it.

    Never blocks in `open()`.  Raises `NotRegularFile` for anything but a regular file
    ("is a directory" for a directory), and the usual `OSError`s (missing, permission).
    """
    before = os.stat(path)  # a device is never opened at all: opening one can have effects
    if not stat_module.S_ISREG(before.st_mode):
        raise NotRegularFile(path, "is a directory" if stat_module.S_ISDIR(before.st_mode) else NOT_REGULAR)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ENXIO:  # a socket swapped in after the stat
            raise NotRegularFile(path) from error
        raise
    try:
        info = os.fstat(descriptor)
        if not stat_module.S_ISREG(info.st_mode):  # swapped in between the stat and the open
            raise NotRegularFile(path)
        os.set_blocking(descriptor, True)  # no effect on a regular file's reads; plain from here on
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, info


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The whole of a small regular file (settings, marks) read with `open_regular`: a FIFO
    there never blocks the command, a device is never read (`/dev/zero` never ends).  Raises
    its `OSError`s, and one with `errno.EFBIG` when the file holds more than `limit` bytes."""
    descriptor, _info = open_regular(path)
    with os.fdopen(descriptor, "rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit >> 20} MB", os.fspath(path))
    return data


__all__ = ["NOT_REGULAR", "NotRegularFile", "open_regular", "read_regular"]
