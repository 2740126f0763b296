"""Following the session roots live: watchfiles' loop, turned into the picker's messages.

`RootWatcher(source, post).run()` watches the roots for `.jsonl` changes, posts `Watching`
once the watch is set up (every change from then on is seen), then one coalesced
`SessionsChanged` per batch: the changed files' exact summaries (read in a thread) and the
paths that are gone (also dropped from the index).  It touches no widget: the screen that
started it applies the messages.  `stop()` ends it within one watchfiles step; the screen
calls it on unmount, and Textual cancels the worker too, so nothing outlives the screen.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from seance.core.model import SessionSummary

from .messages import SessionsChanged, Watching

if TYPE_CHECKING:
    from seance.core.catalog import SessionSource

DEBOUNCE_MS = 200
TIMEOUT_MS = 500  # how often the idle watcher wakes (its first wake-up reports it ready)
STEP_MS = 50  # how often watchfiles checks the stop event


class RootWatcher:
    """One watch over `source.roots` that posts what it sees through `post`."""

    def __init__(self, source: SessionSource, post: Callable[[Message], object]) -> None:
        self.source = source
        self.post = post
        self.running = False  # inside the watch loop (the OS watch is open)
        self._stop = asyncio.Event()

    def roots(self) -> list[Path]:
        return [Path(root) for root in self.source.roots if Path(root).is_dir()]

    def stop(self) -> None:
        """End the loop at its next step (the OS watch closes with it)."""
        self._stop.set()

    async def run(self) -> None:
        """Follow the roots until stopped or cancelled: coalesced changes become one
        `SessionsChanged` per batch."""
        from watchfiles import Change, awatch

        roots = self.roots()
        if not roots or self._stop.is_set():
            return

        def jsonl_only(change: Change, path: str) -> bool:
            return path.endswith(".jsonl")

        ready = False
        self.running = True
        try:
            # yield_on_timeout: an empty batch every TIMEOUT_MS, the first one saying the watch is set up.
            async for changes in awatch(
                *roots,
                watch_filter=jsonl_only,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                recursive=True,
                rust_timeout=TIMEOUT_MS,
                yield_on_timeout=True,
                stop_event=self._stop,
            ):
                if not ready:
                    ready = True
                    self.post(Watching(roots))
                if not changes:
                    continue
                paths = sorted({path for _, path in changes})
                summaries = await asyncio.to_thread(self._summaries_of, paths)
                changed = [summary for summary in summaries if summary is not None]
                removed = [path for path, summary in zip(paths, summaries, strict=True) if summary is None]
                if removed:  # gone files leave the index too (the next refresh would prune them anyway)
                    await asyncio.to_thread(self._forget_gone, removed)
                if not self._stop.is_set():
                    self.post(SessionsChanged(changed=changed, removed=removed))
        finally:
            self.running = False

    def _summaries_of(self, paths: list[str]) -> list[SessionSummary | None]:
        return [self._summary_of(path) if os.path.exists(path) else None for path in paths]

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
