"""Thread workers that keep nothing alive once they are done.

Textual runs a thread worker on the event loop's default executor and, in the pool thread,
sets its `active_worker` context variable there and then: in that thread's own context, which
lives as long as the thread.  So each pool thread held the last worker it ran, and through the
worker's work (a screen's bound method and its arguments) the screen and what it read: a tree
screen closed with Esc kept its 200,000-entry session alive until that thread ran another
worker.  In a picker, four Ctrl+T / Esc on a 100 MB session grew its resident memory from
460 to 985 MB.  Run in a fresh copy of the caller's context for each call (as
`asyncio.to_thread` does), a worker's variables go with the call.

`use_fresh_contexts()` makes the running loop's default executor such a pool: seance's own
app does so as it mounts; a host app that pushes seance's screens may do the same.  No Textual
here.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class FreshContextExecutor(ThreadPoolExecutor):
    """A thread pool whose every call runs in a copy of the submitting thread's context."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


def use_fresh_contexts(loop: asyncio.AbstractEventLoop | None = None) -> None:
    """Make `loop` (default: the running one) run `run_in_executor(None, ...)` calls, Textual's
    thread workers among them, each in a fresh context (`FreshContextExecutor`)."""
    (loop or asyncio.get_running_loop()).set_default_executor(FreshContextExecutor(thread_name_prefix="seance-worker"))
