"""Pause the cyclic garbage collector around bulk building of long-lived objects.

Parsing a session and indexing its tree allocate hundreds of thousands of containers that
all survive; the collector would rescan them over and over (a 20,000-entry session spent
more time in the GC than in parsing).  Nothing built here forms reference cycles that need
collecting, so pausing is safe; the previous state is always restored.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
