"""Following the session roots live: watchfiles' notifier, polled from seance's own thread,
turned into the picker's messages.

`RootWatcher(source, post).start()` watches the roots for `.jsonl` changes in one thread of
its own ("seance-watcher"), posts `Watching` once the watch is set up (every change from then
on is seen), then one coalesced `SessionsChanged` per batch: the changed files' exact
summaries and the paths that are gone (also dropped from the index).  It touches no widget:
`post` is the screen's `post_message`, which Textual makes safe to call from another thread,
and the screen applies the messages.

No recursive OS watch: watchfiles sets one up by walking every entry under the roots while
holding the GIL (0.3 s of a frozen UI at 100,000 sessions).  Each directory that can hold
sessions is watched on its own instead (app/watchdirs.py), in shards of `SHARD_DIRS`
directories per `RustNotify` (a shard's setup holds the GIL for a few milliseconds); a
directory that appears later (a new project, an oh-my-pi session folder) is added to the watch
at once and the sessions already in it reported, so none is missed.

A root that is not there (a new user's `~/.pi/agent/sessions`, an oh-my-pi root made later),
or that was deleted while watched, is waited for at its nearest existing ancestor, watched
alone (non-recursively: never all of a `$HOME`): once the root is made, at any depth below
that ancestor, it is watched as the others and the sessions already in it reported.

The thread is seance's, not a pool's: watchfiles' `awatch` would wait in an AnyIO worker
thread that AnyIO keeps idle after the watch ends, so a host app that pushed and popped the
picker would be left with a thread it never started.  `stop()` sets the stop event, which
the thread checks every `STEP_MS`, and joins the thread (a bounded wait); the screen calls it
on unmount, so nothing outlives the screen.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from seance.core.model import SessionSummary

from .messages import SessionsChanged, Watching
from .watchdirs import DirWalker, sessions_in

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

    from seance.core.catalog import SessionSource

DEBOUNCE_MS = 200  # the longest a batch of changes is held back while more keep coming
STEP_MS = 50  # how often the watcher looks at its watches (and at the stop event)
STOP_WAIT_S = 0.5  # the longest `stop()` waits for the thread (it usually takes one step)
# Setting up an OS watch holds the GIL: ~1 ms, then 20-100 µs a directory (the kernel marks
# each directory's cached entries; longer on a busy machine), so a watch takes few directories.
# Each is an inotify instance (and a thread): at most MAX_SHARDS, the user's limit is often 128.
SHARD_DIRS = 32
MAX_SHARDS = 16
ADDED = 1  # watchfiles' Change.added
DELETED = 3  # watchfiles' Change.deleted (a watched folder moved away, too)


class _Shard:
    """One watchfiles `RustNotify` over a few directories, non-recursive (see app/watchdirs.py)."""

    def __init__(self, dirs: list[str], notify: RustNotify) -> None:
        self.dirs = dirs
        self.notify = notify
        self.carry: set[tuple[int, str]] = set()  # changes a replaced shard had not handed over

    @classmethod
    def open(cls, dirs: list[str]) -> _Shard:
        """Watch `dirs`; one that vanished since it was listed is left out (watchfiles skips it
        when told to ignore unreadable paths; an older one that raises gets the rest again)."""
        from watchfiles._rust_notify import RustNotify

        try:
            return cls(dirs, RustNotify(dirs, False, False, 0, False, True))
        except FileNotFoundError:
            dirs = [path for path in dirs if os.path.isdir(path)]
            return cls(dirs, RustNotify(dirs, False, False, 0, False, True))

    def take(self) -> set[tuple[int, str]]:
        """The changes seen since the last call, at once (a 1 ms look when there are none)."""
        result = self.notify.watch(0, 1, 1, None)
        changes, self.carry = self.carry, set()
        if isinstance(result, set):
            changes |= result
        return changes

    def close(self) -> None:
        self.notify.close()


class RootWatcher:
    """One watch over `source.roots`, in a thread of its own, that posts what it sees through `post`."""

    def __init__(self, source: SessionSource, post: Callable[[Message], object]) -> None:
        self.source = source
        self.post = post
        self.running = False  # inside the watch loop (the OS watch is open)
        self._stop = threading.Event()
        self.thread: threading.Thread | None = None
        self._shards: list[_Shard] = []  # the OS watches (only the watcher's thread touches them)
        self._shard_size = SHARD_DIRS
        self._missing: list[str] = []  # roots not there (yet), waited for through `_above`
        self._above: _Shard | None = None  # the nearest existing folder above each missing root

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
        walker = DirWalker([str(root) for root in self.source.roots])
        if not walker.roots or self._stop.is_set():
            return
        self.running = True
        try:
            self._missing = [root for root in walker.roots if not os.path.isdir(root)]
            roots = [root for root in walker.roots if root not in self._missing]
            dirs = [path for root in roots for path in walker.dirs(root)]
            self._shard_size = max(SHARD_DIRS, -(-len(dirs) // MAX_SHARDS))
            self._open_shards(dirs)
            made = self._watch_missing(walker)  # (a root made since it was found missing: its sessions)
            if self._stop.is_set():
                return
            self._post(Watching([Path(root) for root in roots]))
            if made:
                self._report(sorted(made))
            self._follow(walker)
        except Exception:  # the watch itself failed: live updates end, the list stays as it is
            pass
        finally:
            self.running = False
            for shard in [*self._shards, *([self._above] if self._above is not None else [])]:
                shard.close()
            self._shards, self._above = [], None

    def _open_shards(self, dirs: list[str]) -> None:
        """Watch `dirs` in shards of `_shard_size`, letting the UI thread run between them."""
        for start in range(0, len(dirs), self._shard_size):
            if self._stop.is_set():
                return
            self._shards.append(_Shard.open(dirs[start : start + self._shard_size]))
            time.sleep(0.0005)  # gives the GIL back at once (not after the 5 ms switch interval)

    def _follow(self, walker: DirWalker) -> None:
        """Poll the shards every `STEP_MS` until stopped; a batch is posted once a step brings
        nothing new (or `DEBOUNCE_MS` after its first change).  New directories are watched
        (and the sessions already in them reported) before the batch that saw them is posted."""
        batch: set[str] = set()
        gone: set[str] = set()  # folders moved away or deleted
        first_at = 0.0
        while not self._stop.wait(STEP_MS / 1000):
            changes: set[tuple[int, str]] = set()
            for shard in self._shards:
                changes |= shard.take()
            above = self._above.take() if self._above is not None else set()
            if changes or above:
                if not batch and not gone:
                    first_at = time.monotonic()
                batch |= self._sessions_of(changes, walker)
                gone |= self._gone_dirs(changes)
                lost = self._roots_lost(changes, walker)  # (always looked at: not only when nothing else came)
                if above or lost:
                    batch |= self._watch_missing(walker)
                if time.monotonic() - first_at < DEBOUNCE_MS / 1000:
                    continue
            if batch or gone:
                self._report(sorted(batch), sorted(gone))
                batch, gone = set(), set()

    def _sessions_of(self, changes: set[tuple[int, str]], walker: DirWalker) -> set[str]:
        """The session files a set of changes touched; a directory that appeared is watched
        from now on, and the `.jsonl` files already inside it count as touched."""
        sessions = {path for _, path in changes if path.endswith(".jsonl")}
        new_dirs = [
            path for change, path in changes if change == ADDED and not path.endswith(".jsonl") and os.path.isdir(path)
        ]
        added = [found for path in sorted(new_dirs) for found in walker.under(path)]
        if added:
            self._watch_more(added)
            sessions.update(sessions_in(added))  # written before its watch was set up
        return sessions

    def _roots_lost(self, changes: set[tuple[int, str]], walker: DirWalker) -> bool:
        """Whether a watched root went (deleted or moved away: its watch went with it), even if
        made again since; it joins the missing roots, to be watched again once it is there."""
        lost = [root for root in walker.roots if root not in self._missing and (DELETED, root) in changes]
        self._missing += lost
        for root in lost:
            self._unwatch_under(root)
        return bool(lost)

    def _unwatch_under(self, root: str) -> None:
        """Drop the watches of a root gone and its folders (dead now): a root deleted and made
        again is watched anew, and its old shards would pile up (an OS watch and a thread each)."""
        prefix = root.rstrip(os.sep) + os.sep
        shards: list[_Shard] = []
        for shard in self._shards:
            remaining = [path for path in shard.dirs if path != root and not path.startswith(prefix)]
            if len(remaining) == len(shard.dirs):
                shards.append(shard)
                continue
            if remaining:  # (set up before the old one is drained: no change falls between)
                shards.append(replacement := _Shard.open(remaining))
                replacement.carry |= shard.take()
            shard.close()
        self._shards = shards

    def _watch_missing(self, walker: DirWalker) -> set[str]:
        """Watch the missing roots that are there now (the `.jsonl` files already in them are
        returned: written before their watch), and wait for the others at the nearest existing
        folder above each.  Looked at again once a new watch is set up, so a folder made
        meanwhile is not missed."""
        sessions: set[str] = set()
        while self._missing and not self._stop.is_set():
            made = [root for root in self._missing if os.path.isdir(root)]
            if made:
                self._missing = [root for root in self._missing if root not in made]
                dirs = [path for root in made for path in walker.dirs(root)]
                self._watch_more(dirs)
                sessions.update(sessions_in(dirs))
            above = sorted({_nearest_existing(root) for root in self._missing})
            if above == (self._above.dirs if self._above is not None else []):
                if not made:
                    break
                continue
            if self._above is not None:
                self._above.close()  # (its last changes: nothing more than what is looked at again)
                self._above = None
            if above:
                self._above = _Shard.open(above)
        if not self._missing and self._above is not None:
            self._above.close()
            self._above = None
        return sessions

    def _gone_dirs(self, changes: set[tuple[int, str]]) -> set[str]:
        """The watched folders among `changes` that are no longer there: moved away or deleted
        (a stray file that went, an editor's swap file, names no folder: nothing to report)."""
        gone = {path for _change, path in changes if not path.endswith(".jsonl") and not os.path.lexists(path)}
        if not gone:
            return gone
        return gone & {folder for shard in self._shards for folder in shard.dirs}

    def _watch_more(self, dirs: list[str]) -> None:
        """Add `dirs` to the last shard (while it has room) or to new ones: the replacement
        watch is set up before the old one is drained and closed, so no change falls between."""
        full = self._shards and len(self._shards[-1].dirs) >= self._shard_size
        last = self._shards.pop() if self._shards and (not full or len(self._shards) >= MAX_SHARDS) else None
        self._open_shards((last.dirs if last is not None else []) + dirs)
        if last is not None:
            leftover = last.take()
            last.close()
            if leftover:  # seen by the old watch just before the new one took over
                self._shards[-1].carry |= leftover

    def _report(self, paths: list[str], gone_dirs: Sequence[str] = ()) -> None:
        """Read the changed files' summaries, forget the gone ones, post one `SessionsChanged`
        (with the folders that went: the screen drops the sessions it lists in them)."""
        summaries = self._summaries_of(paths)
        if summaries is None:  # stopped on the way
            return
        changed = [summary for summary in summaries if summary is not None]
        removed = [path for path, summary in zip(paths, summaries, strict=True) if summary is None]
        if removed:  # gone files leave the index too (the next refresh would prune them anyway)
            self._forget_gone(removed)
        gone = [folder for folder in gone_dirs if not os.path.lexists(folder)]  # (moved back since: not gone)
        if changed or removed or gone:
            self._post(SessionsChanged(changed=changed, removed=removed, gone_dirs=gone))

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


def _nearest_existing(path: str) -> str:
    """The deepest folder at or above `path` that is there (at worst the file system's root)."""
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path
