"""seance's one home for the cyclic garbage collector: pausing it around bulk building, and
freezing long-lived objects out of its reach — only when seance owns the process.

Parsing a session and indexing its tree allocate hundreds of thousands of containers that
all survive; the collector would rescan them over and over (a 20,000-entry session spent
more time in the GC than in parsing).  Nothing built here forms reference cycles that need
collecting, so pausing is safe.

The collector is process-wide: `gc.disable()` from a worker thread also stops it for every
other thread, and `gc.freeze()` moves *everything* tracked (a host's objects too) out of
reach.  So none of this happens unless the process's owner said so with `own_collector()`:
seance's own CLI and `SeanceApp` do; a host agent that imports seance (or pushes its screens)
never does, and its collector is left exactly as it set it.  Pauses overlap safely across
threads: the first one in disables the collector, the last one out re-enables it, and only
if it was enabled when the first one came in.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_owner = False
_lock = threading.Lock()
_depth = 0
_reenable = False


def own_collector(owned: bool = True) -> None:
    """Declare that seance runs this process (its CLI, `SeanceApp` while it runs): pausing and
    freezing are allowed.  `owned=False` gives the collector back (an app that has exited)."""
    global _owner
    _owner = owned


def owns_collector() -> bool:
    return _owner


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (a no-op unless `own_collector()` was called)."""
    global _depth, _reenable
    if not _owner:
        yield
        return
    with _lock:
        if _depth == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _reenable:
                gc.enable()


_launching = False  # the collector is stopped for a UI launch (`pause_launch`)


def pause_launch() -> None:
    """Stop the collector until `end_launch` (a no-op unless `own_collector()` was called): a UI
    launch imports Textual and builds its first screen, objects that nearly all live as long as
    the process, and the collector rescanned them over and over (~10% of a launch's CPU)."""
    global _launching
    with _lock:
        if _owner and not _launching and gc.isenabled():
            _launching = True
            gc.disable()


def end_launch() -> None:
    """The launch is drawn: what it built is frozen out of the collector's reach (the imports,
    the first screen) and the collector runs again (after the pauses in progress, if any)."""
    global _launching, _reenable
    with _lock:
        if not _launching:
            return
        _launching = False
        gc.freeze()
        if _depth:  # a `gc_paused` block is running: the last one out re-enables
            _reenable = True
        else:
            gc.enable()


def freeze_long_lived() -> None:
    """Move every object tracked now out of the collector's reach (refcounting still frees them)."""
    if _owner:
        gc.freeze()


FULL_AFTER = 5  # young collections since the last full one after which an idle collection is a full one


def collect_idle() -> bool:
    """A collection now, while the UI is idle (a no-op unless `own_collector()` was called, or
    while a pause is in progress: a worker is building).  Of the young generations, and a full
    one once `FULL_AFTER` young collections have run since the last (half the collector's
    own threshold, 10: the full collections happen here, not in the middle of a keystroke's
    search).  It walks only what is not frozen (a keystroke's hits and rows, the strips
    Textual caches, which refer to themselves).  True if it ran."""
    if not _owner:
        return False
    with _lock:
        if _depth:
            return False
    gc.collect(2 if gc.get_count()[2] >= FULL_AFTER else 1)
    return True


def release_frozen() -> None:
    """Give every frozen object back to the collector (a screen holding many of them has gone)."""
    if _owner:
        gc.unfreeze()
