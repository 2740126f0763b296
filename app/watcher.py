"""Following the session roots live: watchfiles' loop, in seance's own thread, turned into the
picker's messages.

`RootWatcher(source, post).start()` watches the roots for `.jsonl` changes in one thread of
its own ("seance-watcher"), posts `Watching` once the watch is set up (every change from then
on is seen), then one coalesced `SessionsChanged` per batch: the changed files' exact
summaries and the paths that are gone (also dropped from the index).  It touches no widget:
`post` is the screen's `post_message`, which Textual makes safe to call from another thread,
and the screen applies the messages.

The thread is seance's, not a pool's: watchfiles' `awatch` would wait in an AnyIO worker
thread that AnyIO keeps idle after the watch ends, so a host app that pushed and popped the
picker would be left with a thread it never started.  `stop()` sets the stop event, which
watchfiles checks every `STEP_MS`, and joins the thread (a bounded wait); the screen calls it
on unmount, so nothing outlives the screen.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from seance.core.model import SessionSummary

from .messages import SessionsChanged, Watching

if TYPE_CHECKING:
    from watchfiles import Change

    from seance.core.catalog import SessionSource

DEBOUNCE_MS = 200
TIMEOUT_MS = 500  # how often the idle watcher wakes (its first wake-up reports it ready)
STEP_MS = 50  # how often watchfiles checks the stop event
STOP_WAIT_S = TIMEOUT_MS / 1000  # the longest `stop()` waits for the thread (it usually takes one step)


def _jsonl_only(change: Change, path: str) -> bool:
    return path.endswith(".jsonl")


class RootWatcher:
    """One watch over `source.roots`, in a thread of its own, that posts what it sees through `post`."""

    def __init__(self, source: SessionSource, post: Callable[[Message], object]) -> None:
        self.source = source
        self.post = post
        self.running = False  # inside the watch loop (the OS watch is open)
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None

    def roots(self) -> list[Path]:
        return [Path(root) for root in self.source.roots if Path(root).is_dir()]

    def start(self) -> None:
        """Run the watch loop in seance's own daemon thread (a daemon: a stuck notifier never
        holds up the interpreter's exit)."""
        if self.thread is None:
            self.thread = threading.Thread(target=self.run, name="seance-watcher", daemon=True)
            self.thread.start()

    def stop(self, wait: float = STOP_WAIT_S) -> bool:
        """End the loop at its next step (the OS watch closes with it) and wait up to `wait`
        seconds for the thread; True when it is over."""
        self._stop.set()
        thread = self.thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(wait)
        return not thread.is_alive()

    @property
    def alive(self) -> bool:
        """The watcher's thread is still running."""
        return self.thread is not None and self.thread.is_alive()

    def run(self) -> None:
        """Follow the roots until stopped, blocking (the body of `start`'s thread): coalesced
        changes become one `SessionsChanged` per batch.  Ends quietly if the watch fails (a
        root that vanished or cannot be read): the picker keeps its last list."""
        from watchfiles import watch

        roots = self.roots()
        if not roots or self._stop.is_set():
            return
        ready = False
        self.running = True
        try:
            # yield_on_timeout: an empty batch every TIMEOUT_MS, the first one saying the watch is set up.
            for changes in watch(
                *roots,
                watch_filter=_jsonl_only,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                recursive=True,
                rust_timeout=TIMEOUT_MS,
                yield_on_timeout=True,
                stop_event=self._stop,
                raise_interrupt=False,
            ):
                if self._stop.is_set():
                    break
                if not ready:
                    ready = True
                    self._post(Watching(roots))
                if changes:
                    self._report(sorted({path for _, path in changes}))
        except Exception:  # the watch itself failed: live updates end, the list stays as it is
            pass
        finally:
            self.running = False

    def _report(self, paths: list[str]) -> None:
        """Read the changed files' summaries, forget the gone ones, post one `SessionsChanged`."""
        summaries = self._summaries_of(paths)
        if summaries is None:  # stopped on the way
            return
        changed = [summary for summary in summaries if summary is not None]
        removed = [path for path, summary in zip(paths, summaries, strict=True) if summary is None]
        if removed:  # gone files leave the index too (the next refresh would prune them anyway)
            self._forget_gone(removed)
        self._post(SessionsChanged(changed=changed, removed=removed))

    def _post(self, message: Message) -> None:
        if self._stop.is_set():
            return
        try:
            self.post(message)
        except RuntimeError:  # the app's loop closed under a straggler: nobody is listening
            self._stop.set()

    def _summaries_of(self, paths: list[str]) -> list[SessionSummary | None] | None:
        """Each path's summary (None: gone or unreadable); None as a whole if stopped meanwhile."""
        summaries: list[SessionSummary | None] = []
        for path in paths:
            if self._stop.is_set():
                return None
            summaries.append(self._summary_of(path) if os.path.exists(path) else None)
        return summaries

    def _summary_of(self, path: str) -> SessionSummary | None:
        try:
            return self.source.summary(Path(path))
        except Exception:  # unreadable this time: the next change or refresh tries again
            return None

    def _forget_gone(self, paths: list[str]) -> None:
        for path in paths:
            if not os.path.exists(path):
                try:
                    self.source.forget(Path(path))
                except Exception:  # the index heals on the next refresh
                    pass
