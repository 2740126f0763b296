"""Every line the CLI writes leaves through one of these.

`say` (stderr), `put_line`, `put_path` and `write_json` / `write_json_bytes` (stdout): ids,
names, paths and tool arguments are session text, and a terminal must print them, never obey
them (`seance.core.text`'s sanitisers).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from seance.core.text import json_bytes, json_safe, shell_path, visible


def say(message: str) -> None:
    """A message on stderr, on one line: each control in it (a path's, an id's) as an escape."""
    print(visible(message), file=sys.stderr)


def ask(question: str) -> bool | None:
    """A yes/no question on the terminal (stderr, then a line of stdin): True only for y/yes;
    None when there is no terminal to ask on (the caller wants an explicit flag then)."""
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return None
    print(visible(question) + " [y/N] ", end="", file=sys.stderr, flush=True)
    return sys.stdin.readline().strip().casefold() in ("y", "yes")


class ProgressBar:
    """`label [#####.....] 120/3000` on one stderr line while a long run reads files (only on
    a terminal; redrawn at most every 50 ms), erased by `finish`."""

    WIDTH = 30

    def __init__(self, label: str) -> None:
        self.label = label
        self.enabled = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if not self.enabled or (now - self.last < 0.05 and done < total):
            return
        self.last = now
        filled = int(self.WIDTH * done / total) if total else self.WIDTH
        sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total}")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def put_line(text: str) -> None:
    """A line of plain output on stdout, each control in it shown as an escape."""
    sys.stdout.write(visible(text) + "\n")


def put_lines(texts: Iterable[str]) -> None:
    """`put_line` of each, in one write."""
    sys.stdout.write("".join([visible(text) + "\n" for text in texts]))


def put_path(path: object) -> None:
    """A path on stdout, alone on its line: as is, or `$'...'`-quoted if it holds a control."""
    sys.stdout.write(shell_path(path) + "\n")


def write_json_bytes(data: bytes) -> None:
    """JSON on stdout, with what JSON leaves raw but a terminal obeys (C1, bidi) escaped."""
    write_json_pieces((data,))


def write_json_pieces(pieces: Iterable[bytes]) -> None:
    """`write_json_bytes` of the pieces joined, without joining them (a big answer is not
    copied whole); each piece must end where a character ends."""
    out = sys.stdout.buffer
    for piece in pieces:
        out.write(json_safe(piece))
    out.write(b"\n")
    sys.stdout.flush()


_IOV_MAX = 1024  # buffers per writev (Linux's IOV_MAX)


def write_json_views(
    views: list[bytes | memoryview], spliced: tuple[Any, list[bytes | tuple[int, int]]] | None = None
) -> None:
    """`write_json_pieces` of bytes `json_safe` leaves as they are (checked by the caller
    when it kept them: `core.queryobjects.Objects.safe`), written from where they lie in
    batches of `_IOV_MAX` (an answer of 100,000 sessions, 71 MB, is neither joined nor
    copied in this process).  Where stdout is no file (a test's capture), joined.
    `spliced`: the same views as spans of an open file (`core.queryobjects.Objects.spans`):
    into a pipe they are spliced (Linux: the file's cached pages, never copied here)."""
    out = sys.stdout.buffer
    try:
        descriptor = out.fileno()
        if not hasattr(os, "writev"):
            raise OSError("no writev here")
    except (AttributeError, OSError, ValueError):
        out.write(b"".join(views) + b"\n")
        sys.stdout.flush()
        return
    sys.stdout.flush()
    pipe = _widen_pipe(descriptor, sum(map(len, views)))
    if pipe and spliced is not None and hasattr(os, "splice"):
        _write_spliced(descriptor, views, *spliced)
    else:
        _write_views(descriptor, views)
    os.write(descriptor, b"\n")


def _write_views(descriptor: int, views: list[bytes | memoryview]) -> None:
    """`views` written in order, `_IOV_MAX` at a time."""
    for start in range(0, len(views), _IOV_MAX):
        batch = views[start : start + _IOV_MAX]
        written = os.writev(descriptor, batch)
        if written < sum(map(len, batch)):  # a short write (a signal): the rest one at a time
            rest = memoryview(b"".join(batch))[written:]
            while rest:
                rest = rest[os.write(descriptor, rest) :]


_SPLICE_FROM = 256 << 10  # a shorter run is written from its view: a splice each costs more than the copy


def _write_spliced(
    descriptor: int, views: list[bytes | memoryview], source: Any, spans: list[bytes | tuple[int, int]]
) -> None:
    """`views` written into the pipe `descriptor`, each long one spliced from where its span
    lies in the open file `source` (the same bytes: `Objects.spans`), the rest from their
    views in batches between; all from the views once the system will not splice."""
    import errno

    batch: list[bytes | memoryview] = []
    splicing = True
    for view, span in zip(views, spans, strict=True):
        if not splicing or isinstance(span, bytes) or span[1] < _SPLICE_FROM:
            batch.append(view)
            continue
        _write_views(descriptor, batch)
        batch = []
        offset, left = span
        while left:
            try:
                moved = os.splice(source.fileno(), descriptor, left, offset_src=offset)
            except OSError as error:
                if error.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP) or left != span[1]:
                    raise
                splicing = False  # this file system does not splice: its view
                batch.append(view)
                break
            if not moved:  # (the file is shorter than it was checked to be: never)
                raise OSError(errno.EIO, "the stored objects ended early")
            offset, left = offset + moved, left - moved
    _write_views(descriptor, batch)


def _widen_pipe(descriptor: int, size: int) -> bool:
    """A pipe's buffer raised towards 1 MB (Linux: `/proc/sys/fs/pipe-max-size`) before
    `size` bytes go through it: 71 MB through the default 64 KB is a thousand turns of
    writer and reader, each a wait for the other on a busy machine.  Best effort.
    Returns whether `descriptor` is a pipe."""
    import stat

    wanted = min(size, 1 << 20)
    try:
        if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            return False
    except OSError:
        return False
    try:
        import fcntl

        if wanted > (64 << 10):
            fcntl.fcntl(descriptor, fcntl.F_SETPIPE_SZ, wanted)
    except (ImportError, OSError, AttributeError):  # another system, or a limit set lower
        pass
    return True


def write_json(payload: Any) -> None:
    """Indented JSON on stdout (the `--json` of show, tree, resolve and continue)."""
    write_json_bytes(json_bytes(payload, indent=True))  # a path that is not UTF-8 too


__all__ = [
    "ProgressBar",
    "ask",
    "put_line",
    "put_path",
    "say",
    "write_json",
    "write_json_bytes",
    "write_json_pieces",
    "write_json_views",
]
