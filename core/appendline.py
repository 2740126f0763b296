"""Appending one entry line to a session an agent may be appending to at the same moment.

There is no lock to share with pi (it appends with `appendFileSync`), so the append is a
lock-free re-check loop on one O_APPEND descriptor:

1. The file must still begin with the snapshot the caller read (digest once; then the
   bytes just before the known end, on every round): a rewrite underneath is refused.
2. Whatever was appended since is read and parsed; the new entry's parent becomes the id
   of the last entry line (pi's leaf is the last line of the file).
3. The end must be a whole line.  A last line without its newline may be an agent's
   write in progress: wait until it stops changing for `TORN_GRACE` seconds; only then is
   it torn, and our line starts with a newline so it is never glued onto it.  Never
   guessing from one look is what keeps blank lines out.
4. Right before the write, one `fstat`: the size must be exactly the end we parsed up to,
   else go back to 2.  Then one `write()` of the whole line (`safefile.append_whole`: free
   space checked first, a short write truncated back, so no torn line of ours).
5. After the write, the offset it landed at is compared with the expected one.  Only an
   agent line that landed in the microseconds between the `fstat` and the `write` can move
   it; then our line (and only our line) is repaired in place with `pwrite`: its parent
   becomes the line now before it, with the same byte length (spaces before the final `}`
   make up a shorter id; a stray leading newline becomes a space).  If that cannot be done
   (a longer id) the entry stays, counted in `STATS["stale"]`.

`STATS` counts what happened (appended, re-parented before the write, repaired after it,
stale) so tests can measure how often each path is taken.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from . import dialects
from .errors import FileChangedError, SessionError
from .jsonl import LineError, js_blank, js_trim_end, loads_line
from .safefile import append_whole, clean_stale_temps, refuse_undigested
from .session import FileStamp, new_digest

TORN_GRACE = 0.25
GIVE_UP_AFTER = 10.0
_ANCHOR = 64

STATS: Counter[str] = Counter()


def last_entry_id(chunk: bytes, default: str | None) -> str | None:
    """The id of the last entry line in `chunk` (headers and unreadable lines skipped)."""
    found = default
    for line in chunk.split(b"\n"):
        found = _entry_id(line) or found
    return found


def _entry_id(line: bytes) -> str | None:
    """The id of the entry on `line`, or None for a header, a blank or unreadable line
    (read as `JSON.parse` reads it: a lone surrogate's escape, bytes that are not UTF-8)."""
    if not line.strip():
        return None
    try:
        value, _ = loads_line(line)
    except LineError:
        return None
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if isinstance(kind, str) and (kind in dialects.HEADER_TYPES or kind == dialects.TITLE_SLOT_TYPE):
        return None
    entry_id = value.get("id")
    return entry_id if isinstance(entry_id, str) and entry_id else None


def _lines_backward(data: bytes) -> Iterator[bytes]:
    """The lines of `data`, last first (a final newline gives an empty line first)."""
    end = len(data)
    while end >= 0:
        start = data.rfind(b"\n", 0, end) + 1
        yield data[start:end]
        end = start - 1


def _refuse_after_a_trimmed_last_line(path: Path, prefix: bytes) -> None:
    """Refuse to append after a last line read only because pi trims the file's end
    (`content.trim()`: `}` then a no-break space, U+3000...): once a line follows it,
    `JSON.parse` refuses that line and pi (seance too) loses its entry for good.  Whatever the
    new line hung from, the append itself would lose the entry; nothing is written."""
    lines = _lines_backward(prefix)
    last = next((line for line in lines if not js_blank(line)), b"")
    trimmed = _entry_id(js_trim_end(last))
    if trimmed is not None and _entry_id(last) is None:
        raise SessionError(
            f"{path}: its last entry is followed by whitespace pi reads only at the end of a file; "
            "a line written after it would make pi lose that entry; nothing was written"
        )


def append_child(
    path: Path, snapshot: FileStamp, parent: str | None, make_line: Callable[[str | None], bytes]
) -> str | None:
    """Append `make_line(parent)` as a child of the file's last entry; returns the parent used."""
    refuse_undigested(path, snapshot)
    clean_stale_temps(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        return _append_loop(path, fd, snapshot, parent, make_line)
    finally:
        os.close(fd)


def _append_loop(
    path: Path, fd: int, snapshot: FileStamp, parent: str | None, make_line: Callable[[str | None], bytes]
) -> str | None:
    prefix = _snapshot_prefix(path, fd, snapshot)
    _refuse_after_a_trimmed_last_line(path, prefix)
    known = prefix.rfind(b"\n") + 1  # the end of the last whole line
    anchor = prefix[max(0, known - _ANCHOR) : known]
    waiting: tuple[float, int] | None = None  # (since, size) of an unfinished last line
    deadline = time.monotonic() + GIVE_UP_AFTER
    while True:
        if time.monotonic() > deadline:
            raise FileChangedError(f"{path}: keeps changing; nothing was written")
        size = os.fstat(fd).st_size
        if size < known or (anchor and os.pread(fd, len(anchor), known - len(anchor)) != anchor):
            raise FileChangedError(f"{path}: the file was rewritten since it was read; nothing was written")
        unfinished = b""
        if size > known:
            tail = os.pread(fd, size - known, known)
            whole = tail[: tail.rfind(b"\n") + 1]
            if whole:
                parent = last_entry_id(whole, parent)
                STATS["reparented_before_write"] += 1
                known += len(whole)
                anchor = (anchor + whole)[-_ANCHOR:]
                continue
            unfinished = tail
        if unfinished:  # an agent's write in progress, or a torn line: wait until it is still
            now = time.monotonic()
            if waiting is None or waiting[1] != size:
                waiting = (now, size)
            if now - waiting[0] < TORN_GRACE:
                time.sleep(0.002)
                continue
            STATS["after_torn_line"] += 1
        payload = (b"\n" if unfinished else b"") + make_line(parent)
        if os.fstat(fd).st_size != size:
            continue  # something landed while the line was built: look again
        start = append_whole(path, fd, payload, expected_size=size)
        if start == size:
            STATS["appended"] += 1
            return parent
        return _repair_in_place(path, fd, start, size, payload, parent, make_line)


def _snapshot_prefix(path: Path, fd: int, snapshot: FileStamp) -> bytes:
    """The bytes the caller read, still at the start of the file, or `FileChangedError`.

    The reader takes its size from `fstat` just before `read()`; a line appended in between
    is in the digest but not in the size, so the line ends after it are tried too.
    """
    info = os.fstat(fd)
    current = os.pread(fd, info.st_size, 0)
    if snapshot.size > len(current):
        raise FileChangedError(f"{path}: the file was rewritten since it was read; nothing was written")
    digest = new_digest(current[: snapshot.size])  # then extended line by line: one pass, not one per end
    end = snapshot.size
    for _ in range(64):
        if digest.hexdigest() == snapshot.digest:
            return current[:end]
        newline = current.find(b"\n", end)
        if newline < 0:
            break
        digest.update(current[end : newline + 1])
        end = newline + 1
    digest.update(current[end:])
    if digest.hexdigest() == snapshot.digest:
        return current
    raise FileChangedError(f"{path}: the file was rewritten since it was read; nothing was written")


def _repair_in_place(
    path: Path,
    fd: int,
    start: int,
    known: int,
    payload: bytes,
    parent: str | None,
    make_line: Callable[[str | None], bytes],
) -> str | None:
    """Our line landed after an agent's: point it at the line now before it, same length."""
    between = os.pread(fd, start - known, known)
    real_parent = last_entry_id(between, parent)
    needs_newline = not between.endswith(b"\n")
    fixed = (b"\n" if needs_newline else b"") + make_line(real_parent)
    shortfall = len(payload) - len(fixed)
    if shortfall < 0 or not fixed.endswith(b"}\n"):
        STATS["stale"] += 1
        return parent
    fixed = fixed[:-2] + b" " * shortfall + b"}\n"
    write_fd = os.open(path, os.O_WRONLY)  # no O_APPEND: pwrite must hit our own bytes
    try:
        os.pwrite(write_fd, fixed, start)
        os.fsync(write_fd)
    finally:
        os.close(write_fd)
    STATS["repaired_in_place"] += 1
    return real_parent


__all__ = ["STATS", "TORN_GRACE", "append_child", "last_entry_id"]
