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
import time
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
    release_hold()  # (a search's hold ends with the app that took it, whoever owns the collector after)
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


HOLD_SECONDS = 2.0  # longest a pause is held past its end (`hold_until_idle`): keys without a break between them
_held_since: float | None = None  # when the pause held by `hold_until_idle` began (None: none is)


def hold_until_idle() -> None:
    """Inside a `gc_paused` block: keep the collector stopped past the block's end, until the
    UI is idle (`collect_idle`, or `release_hold`).  A keystroke's search builds its hits and
    rows in a pause; as it ended, the collector walked them all (a young collection on the
    search thread, then an older one in the middle of the list's frame: 2-7 ms of the
    slowest keys at 10,000 sessions) while the user waited for that frame.  A hold already
    `HOLD_SECONDS` old (keys typed without a break) is let go instead, so the collector runs
    as this pause ends: the garbage kept meanwhile stays bounded.  A no-op unless
    `own_collector()` was called, or outside a pause."""
    global _depth, _held_since
    if not _owner:
        return
    with _lock:
        if not _depth:
            return
        now = time.monotonic()
        if _held_since is None:
            _held_since = now
            _depth += 1
        elif now - _held_since >= HOLD_SECONDS:
            _held_since = None
            _depth -= 1  # (the block this is called in still pauses: the collector runs as it ends)


def release_hold() -> None:
    """End `hold_until_idle`'s hold: the collector runs again (after the pauses in progress)."""
    global _depth, _held_since
    with _lock:
        if _held_since is None:
            return
        _held_since = None
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


def pause_to_the_end() -> None:
    """Stop the collector for the rest of this process (a no-op unless `own_collector()` was
    called), for a command that pauses it for all its work anyway and whose process ends as
    it returns (`seance ls` as the `seance` command itself: `cli.main`; `ls --skipped`, which
    `run_ls` does not pause, refreshes the index as a listing does).  Everything such a
    command imports and builds lives to its end: a collection while it imports its modules
    walks them all for nothing (a middle one ~0.7 ms), and the one as its pause ended walked
    every object it had built (~0.9 ms of a 45 ms warm `ls --query`)."""
    if _owner:
        gc.disable()


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
    Textual caches, which refer to themselves).  A search's hold (`hold_until_idle`) ends
    here.  True if it ran."""
    if not _owner:
        return False
    release_hold()
    with _lock:
        if _depth:
            return False
    gc.collect(2 if gc.get_count()[2] >= FULL_AFTER else 1)
    return True


def release_frozen() -> None:
    """Give every frozen object back to the collector (a screen holding many of them has gone)."""
    if _owner:
        gc.unfreeze()
