"""One thread for the picker's searches: each keystroke's index query reuses one connection.

The index gives every thread its own SQLite connection (`core.index`), and a new connection
checks the full-text index's signature before its first search (it counts FTS5's pages:
~20 ms at 10,000 sessions, ~60 ms at 100,000) and starts with a cold page cache.  Textual
starts a new thread for every thread worker, so a search worker per keystroke paid that on
every key.  `SearchThread` runs the searches, one after the other, on one thread of its own
that lives as long as the picker: the worker that asked waits for its answer (and can still
be cancelled: the work checks its worker).  Running them in order also keeps the "one search
at a time" contract of the `SearchCache` they share, which a cancelled search still inside
its index query used to break.  Warm-ups (`soon`) queue behind the searches asked for first.
No Textual here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


class SearchThread:
    """A single thread that runs what it is given in order; made when first used."""

    def __init__(self, name: str = "seance-search") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False

    def _submit(self, work: Callable[[], T]) -> Future[T] | None:
        with self._lock:
            if self._closed:
                return None
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            return self._pool.submit(work)

    def run(self, work: Callable[[], T]) -> T:
        """`work()` on the search thread, after what was queued before it; the caller waits.
        Once closed (the picker went away), it runs in the caller's thread."""
        future = self._submit(work)
        return work() if future is None else future.result()

    def submit(self, work: Callable[[], T]) -> Future[T]:
        """`work()` on the thread, queued; its future (done already once closed)."""
        future = self._submit(work)
        if future is None:
            future = Future()
            try:
                future.set_result(work())
            except Exception as error:
                future.set_exception(error)
        return future

    def soon(self, work: Callable[[], object]) -> None:
        """Queue `work()` (a warm-up) without waiting for it; nothing once closed."""
        self._submit(work)

    def close(self) -> None:
        """Drop what is queued; the work under way finishes on its own (no join: the UI
        thread does not wait for an index query)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["SearchThread"]
