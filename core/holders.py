"""Which other processes hold a file open — so a rewrite never orphans an agent's descriptor.

A rename over a file that a process keeps open (an agent appending through one descriptor)
sends every later line of that process to the replaced inode: gone.  On Linux the answer is
in `/proc/<pid>/fd/*`: each link resolves (`stat`) to the open inode.

Limits, said plainly: only processes this user may inspect are seen (as root: all); on a
system without `/proc` (macOS, Windows) the answer is "unknown" (`None`) and callers rely
on their other guards (the quiet period and the carry-over in `core.safefile`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

PROC = "/proc"


def process_alive(pid: int) -> bool:
    """Does process `pid` exist (on this host)?  One owned by another user counts as alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def can_see_holders() -> bool:
    """True where open descriptors can be listed (Linux with /proc)."""
    return os.path.isdir(os.path.join(PROC, "self", "fd"))


def holders(dev: int, ino: int) -> list[int] | None:
    """Pids other than this one with (dev, ino) open; None where that cannot be known."""
    pids = _other_pids()
    if pids is None:
        return None
    return [pid for pid in pids if _holds(os.path.join(PROC, str(pid), "fd"), dev, ino)]


def open_files() -> dict[tuple[int, int], list[int]] | None:
    """Every (dev, ino) other processes hold open, with their pids, from ONE pass over /proc
    (for many files at once: `seance clean` checks thousands); None where that cannot be known."""
    pids = _other_pids()
    if pids is None:
        return None
    found: dict[tuple[int, int], list[int]] = {}
    for pid in pids:
        for key in set(_open_inodes(os.path.join(PROC, str(pid), "fd"))):
            found.setdefault(key, []).append(pid)
    return found


def _other_pids() -> list[int] | None:
    if not can_see_holders():
        return None
    me = os.getpid()
    try:
        processes = os.scandir(PROC)
    except OSError:
        return None
    with processes:
        return [int(entry.name) for entry in processes if entry.name.isdigit() and int(entry.name) != me]


def _holds(fd_dir: str, dev: int, ino: int) -> bool:
    return any(key == (dev, ino) for key in _open_inodes(fd_dir))


def _open_inodes(fd_dir: str) -> Iterator[tuple[int, int]]:
    """(dev, ino) of each descriptor a process has open (nothing if it exited or is not ours to see)."""
    try:
        descriptors = os.scandir(fd_dir)
    except OSError:
        return
    with descriptors:
        for descriptor in descriptors:
            try:
                stat = os.stat(descriptor.path)
            except OSError:
                continue
            yield stat.st_dev, stat.st_ino


__all__ = ["can_see_holders", "holders", "open_files"]
