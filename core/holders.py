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

PROC = "/proc"


def can_see_holders() -> bool:
    """True where open descriptors can be listed (Linux with /proc)."""
    return os.path.isdir(os.path.join(PROC, "self", "fd"))


def holders(dev: int, ino: int) -> list[int] | None:
    """Pids other than this one with (dev, ino) open; None where that cannot be known."""
    if not can_see_holders():
        return None
    me = os.getpid()
    found: list[int] = []
    try:
        processes = os.scandir(PROC)
    except OSError:
        return None
    with processes:
        for process in processes:
            if not process.name.isdigit() or int(process.name) == me:
                continue
            if _holds(os.path.join(PROC, process.name, "fd"), dev, ino):
                found.append(int(process.name))
    return found


def _holds(fd_dir: str, dev: int, ino: int) -> bool:
    try:
        descriptors = os.scandir(fd_dir)
    except OSError:  # exited meanwhile, or not ours to look at
        return False
    with descriptors:
        for descriptor in descriptors:
            try:
                stat = os.stat(descriptor.path)
            except OSError:
                continue
            if stat.st_ino == ino and stat.st_dev == dev:
                return True
    return False


__all__ = ["can_see_holders", "holders"]
