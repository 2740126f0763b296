"""The resident watcher (`seance index --watch`): one process that keeps the index exact, so a
listing need not stat every file to know it is fresh.

An exact answer about the session files otherwise costs one stat per file (an append changes
nothing but the file's own stat): 0.6 s at 100,000 sessions.  This process holds the index's
watch lock (`watchd.lock`, an exclusive `flock` in the index's cache dir: one watcher per
index), brings the index up to date once, then watches, with inotify (`inotify_simple`), every
directory discovery lists (`Discovery.dirs`: exactly the ones whose `.jsonl` files are
sessions) and the directories above each root, and folds what changes into the index through
the catalog's own incremental path (`Catalog.summary` for a new or appended file,
`Catalog.forget` for a gone one: the picker's live watcher uses the same two calls).

It keeps the listing discovery would make now (`known`: every file found, with its stat, in
discovery's order, `discovery.order_key`) and answers a **sync** over a Unix socket in the
cache dir (`watchd.sock`): "every write that completed before I asked is in your answer".
inotify queues an event inside the very syscall that made the change, and one inotify
descriptor's events are read in the order they were queued; so on a sync the watcher creates
a sentinel file in a private directory of its own (watched by the same descriptor) and reads
events until the sentinel's: every change made before the request has then been read.  It
applies them (a new, appended, deleted or renamed file, or a session's new folder, as
`discovery.discover_folder` lists it; anything else, such as a new project, a folder gone or
a symbolic link, by discovering every root again: 3-5 s at 100,000 sessions, during which a
client gives up waiting and discovers itself) and answers with the listing.
A lost event (the kernel's queue overflowed: `IN_Q_OVERFLOW`, or a watch that ended) means
discovering everything again before answering.  (Not watchfiles, which the picker uses: it drops every event
without a path, an overflow among them (watchfiles 1.3, `src/lib.rs`: "no paths found"), and
hands its caller an unordered set, so neither a lost event nor the sentinel's place can be
known.  `inotify_simple` reads the descriptor itself, in the kernel's order.)

Once changes are applied and the files then stay quiet (`REFRESH_QUIET_S`), it also brings
the rows queries keep and every session's objects up to date for the files now
(`Catalog.refresh_kept`, the very update a query makes first after an agent's append) and
the answers of the last queries asked (`Catalog.remake_answers`, `REMAKE_ANSWERS`), in a
process of its own (`core.watchrefresh`: a fresh interpreter, never a fork of this one,
which has the index open; it asks for the listing as any `ls` does), one at a time and at
most a third of the time (`REFRESH_COOLDOWN`, also after one stopped at `REFRESH_LIMIT_S`):
the serve loop keeps answering meanwhile (it reads the refresh's pipe, never waits on it),
and the next `ls --query` finds them made.  They are a cache, tagged and checked: a refresh racing a query
that writes them costs that query its shortcut, never its answer.

The watcher vouches only for what inotify sees: a layout where a session file is a symbolic
or hard link (written through another name, no event reaches the watched directory), or
nested roots, is answered with `exact: false`, and the client then does what it does without
a watcher.  So does a client whose roots differ from the watcher's.  A watcher of the
default roots (no `--root`) follows them as every command computes them when it starts: it
also watches the directories whose entries make some of them (`roots.default_root_sources`:
a new oh-my-pi profile is a new directory in one) and, when one changes, discovers again
with the default roots as they are then (`Catalog.follow_default_roots`).  The client side
is `core.watchclient`; the command, `cli/watch.py`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import math
import os
import select
import signal
import socket
import stat as stat_module
import subprocess
import sys
import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from inotify_simple import Event as Event
from inotify_simple import INotify
from inotify_simple import flags as _flags

from .discovery import MAX_NESTING, SESSION_SUFFIX, Discovery, FileInfo, discover, discover_folder, order_key
from .fileskey import files_key
from .roots import default_root_sources
from .safeopen import NotRegularFile
from .watchproto import (
    PROTOCOL,
    SYNC_HEAD,
    encode_listing,
    lock_path,
    read_line,
    roots_key,
    same_user,
    short_socket_path,
    socket_path,
)

if TYPE_CHECKING:
    from .catalog import Catalog

# inotify's event bits (`inotify_simple.flags`, plain ints here: masks are or-ed and tested)
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = int(_flags.MODIFY), int(_flags.ATTRIB), int(_flags.CLOSE_WRITE)
IN_CREATE, IN_DELETE = int(_flags.CREATE), int(_flags.DELETE)
IN_MOVED_FROM, IN_MOVED_TO = int(_flags.MOVED_FROM), int(_flags.MOVED_TO)
IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT = int(_flags.DELETE_SELF), int(_flags.MOVE_SELF), int(_flags.UNMOUNT)
IN_Q_OVERFLOW, IN_IGNORED = int(_flags.Q_OVERFLOW), int(_flags.IGNORED)
IN_ONLYDIR, IN_ISDIR = int(_flags.ONLYDIR), int(_flags.ISDIR)

PRIVATE_NAME = "watchd"  # the watcher's own directory in the cache dir (sentinels)
DEBOUNCE_S = 0.2  # changes are folded into the index this long after the first (or at a sync)
SENTINEL_WAIT_S = 5.0  # a sentinel not read by then: treated as lost events (never seen in practice)
CLIENT_WAIT_S = 2.0  # the longest a client may take to send its request
LOCK_RETRY_S = 1.0  # clients take the lock shared for a moment: a starting watcher retries this long
# The kept stores are refreshed once no change was applied for this long: an agent's turn
# writes its lines within a few hundred ms, so a refresh does not start mid-turn (each line
# would make its work stale), and a user who reads the answer and types a query takes more.
REFRESH_QUIET_S = 1.0
# ...and a refresh starts no sooner after the last one ended than this many times that one
# took: an agent appending all the time costs the watcher at most a third of one core.
REFRESH_COOLDOWN = 2.0
# the answers of this many queries last kept (all projects) are made again after a refresh,
# each ~0.3 s of CPU at 100,000 sessions: a word asked again after an append is then its answer
REMAKE_ANSWERS = 2
REFRESH_STOP_S = 5.0  # a refresh interrupted (SIGTERM: the watcher stops, or the limit) is killed this long after
REFRESH_LIMIT_S = 120.0  # a refresh running this long (a lock never let go) is stopped: the next may start
# what a session directory's watch reports: entries made, gone, renamed, written, changed
DIR_MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB
DIR_MASK |= IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR
# above a root only its path matters: an entry on it made, gone or renamed
ABOVE_MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF
ABOVE_MASK |= IN_ONLYDIR
_LOST = IN_Q_OVERFLOW | IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF
_MEMBERSHIP = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
_CONTENT = IN_MODIFY | IN_CLOSE_WRITE


class AlreadyWatching(Exception):
    """Another watcher holds this index's lock."""


def take_lock(cache_dir: Path) -> int:
    """The watch lock of the index in `cache_dir`, held until the returned descriptor is closed
    (or the process ends, however it ends); raises `AlreadyWatching` naming the holder's pid."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path(cache_dir), os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    if not stat_module.S_ISREG(os.fstat(fd).st_mode):  # (a FIFO there: "Invalid argument" from ftruncate)
        os.close(fd)
        raise NotRegularFile(lock_path(cache_dir))
    deadline = time.monotonic() + LOCK_RETRY_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                os.close(fd)
                raise AlreadyWatching(holder) from None
            time.sleep(0.02)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held_lock[:] = [fd]
    return fd


def release_lock(fd: int) -> None:
    """Let go of the watch lock `take_lock` returned."""
    _held_lock.clear()
    os.close(fd)


_held_lock: list[int] = []  # the watch lock's descriptor while this process holds it


def _drop_lock_in_child() -> None:
    """A forked child (the scanning workers, the discovery child) closes its copy of the
    watch lock's descriptor at once: an `flock` lasts while any copy is open, so a child still
    scanning after a `kill -9` of the watcher kept the lock, and with it every `ls` asking a
    watcher that was gone and a new watcher waiting for the lock."""
    for fd in _held_lock:
        with contextlib.suppress(OSError):
            os.close(fd)
    _held_lock.clear()


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_drop_lock_in_child)


@dataclass
class _Refresh:
    """A refresh of the kept stores running in a process of its own (`Watcher._start_refresh`)."""

    process: subprocess.Popen[bytes]
    fd: int  # the read end of its stdout (non-blocking): what it made, then end of file when it is done
    started: float  # (time.monotonic)
    said: bytes = b""  # read from `fd` so far
    kill_at: float | None = None  # stopped (SIGTERM sent): killed if still running then


class Watcher:
    """The watch over one catalog's roots and the listing it keeps (see the module docstring).
    `serve()` runs until `stop()` or a STOP request; everything happens on its thread."""

    def __init__(self, catalog: Catalog, cache_dir: Path, log: Callable[[str], None] = lambda _line: None) -> None:
        self.catalog = catalog
        self.cache_dir = cache_dir
        self.log = log
        self._take_roots()
        # with the default roots, the directories whose entries make some of them (`default_root_sources`)
        self.sources = [] if catalog.explicit_roots else [os.path.abspath(path) for path in default_root_sources()]
        self.private = cache_dir / PRIVATE_NAME
        self.inotify = INotify()
        self.dir_of: dict[int, str] = {}  # watch descriptor -> the session directory it watches
        self.wd_of: dict[str, int] = {}
        self.above: dict[int, str] = {}  # watch descriptor -> a directory above a root
        self.sentinel_wd = -1
        self.known: dict[str, FileInfo] = {}
        self.order: list[str] = []  # `known`'s paths in discovery's order
        self.top: dict[str, tuple[bool, bool]] = {}  # a root's entry -> (a symbolic link, a bucket)
        self.skipped: list[tuple[str, str]] = []
        self.exact = False
        self.why_not = ""
        self.generation = 0
        self.pending: set[str] = set()  # session paths with events not yet applied
        self.new_dirs: set[str] = set()  # folders made in a listed directory, not yet looked at
        self.lost = False  # something only a new discovery can settle
        self.first_pending = 0.0
        self.syncs = 0
        self._blob: tuple[int, bytes, str] | None = None  # (generation, listing, its files' key)
        self.changed_at = 0.0  # when a change was last applied (time.monotonic)
        self.refreshed_generation = 0  # the listing's generation the last refresh was started for
        self.refresh: _Refresh | None = None
        self.refresh_after = 0.0  # no refresh starts before (`REFRESH_COOLDOWN`)
        self._stopping = False
        self.server: socket.socket | None = None

    def _take_roots(self) -> None:
        """The catalog's roots (as discovery walks them), each as a path prefix, and their key."""
        self.roots = [os.path.abspath(Path(root).expanduser()) for root in self.catalog.roots]
        self.prefixes = [root.rstrip(os.sep) + os.sep for root in self.roots]
        self.roots_key = roots_key(self.catalog.roots, self.catalog.explicit_roots)

    # -- the listing -------------------------------------------------------------------------

    def rediscover(self) -> None:
        """Discover every root again and index what changed: the watch covers each directory
        discovery lists before the discovery that is kept (so no change falls between).  With
        the default roots, they are first taken up as they are now: every command computes
        them when it starts, and is answered only for the same (the sources of roots are
        watched before they are looked at, so a root that comes later is an event)."""
        started = time.perf_counter()
        # Nothing is vouched for until the new listing is kept (`_keep`): one that fails half
        # way (the inotify watch limit, in a client's sync) leaves no listing served as exact
        # for roots it was not made for, and is tried again (`lost`).
        self.exact, self.why_not = False, "a discovery did not finish"
        self.lost = True
        self._rediscover(started)
        self.lost = False  # (events that came meanwhile are read after: `take`)

    def _rediscover(self, started: float) -> None:
        self.pending.clear()
        self.new_dirs.clear()
        self._watch_above()
        if self.catalog.follow_default_roots():
            before = set(self.roots)
            self._take_roots()
            came, went = len(set(self.roots) - before), len(before - set(self.roots))
            self.log(f"the default roots changed ({came} new, {went} gone): watching them")
            self._watch_above()
        # Every listed directory is watched again at each discovery: the kernel answers the
        # watch an inode has (a folder renamed or moved keeps its watch, under its new path)
        # or a new one (a folder made again, a symlink pointed elsewhere).  A discovery is
        # kept once it found no directory whose watch is new: none changed unseen before it.
        tried: set[str] = set()
        watched_before = set(self.wd_of.values())
        while True:
            found = discover(self.catalog.roots, given=self.catalog.explicit_roots)  # (the roots taken up)
            fresh = [path for path in found.dirs if path not in tried and self._watch_dir(path)]
            tried.update(found.dirs)
            if not fresh:
                break
        listed = set(found.dirs)
        missing = [path for path in found.dirs if path not in self.wd_of]
        for path in [path for path in self.wd_of if path not in listed]:
            del self.wd_of[path]
        # A watch no listed path uses any more (a path gone, or re-pointed: a symlink's old
        # target) ends; one inode under a listed path keeps it, and so do the folders above.
        in_use = set(self.wd_of.values())
        for wd in watched_before - in_use:
            if wd not in self.above and wd != self.sentinel_wd:
                self._unwatch(wd)
        self.dir_of = {wd: path for path, wd in self.wd_of.items()}
        self.catalog.update_index(found=found)
        self._keep(found)
        if missing:  # listed, yet no watch could be set on it: its changes would go unseen
            self.exact, self.why_not = False, f"no watch on {missing[0]!r}"
        _give_back_memory()  # the refresh held every row for a moment: a resident process returns it
        self.log(
            f"watching {len(self.wd_of)} directories, {len(self.known)} files"
            f" ({time.perf_counter() - started:.2f}s){'' if self.exact else '; not vouching: ' + self.why_not}"
        )

    def _keep(self, found: Discovery) -> None:
        self.known = {info.path: info for info in found.infos}
        self.skipped = [(str(path), reason) for path, reason in found.skipped]
        self.top = {}
        self.exact, self.why_not = True, ""
        problem = self._layout_problem(found)
        if problem is None:  # new files are placed by `order_key`: it must give discovery's order
            keys = [self._key(info.path) for info in found.infos]
            if any(key is None for key in keys):
                problem = "a file outside every root"
            elif any(left >= right for left, right in itertools.pairwise(keys)):  # type: ignore[operator]
                problem = "discovery's order could not be followed"
            del keys
        if problem is not None:
            self.exact, self.why_not = False, problem
        self.order = [info.path for info in found.infos]
        self.generation += 1

    def _layout_problem(self, found: Discovery) -> str | None:
        """Why inotify cannot see every change to this layout, or None: a session file that
        is a symbolic or hard link (written through another name), nested roots."""
        roots = self.prefixes
        if any(a != b and b.startswith(a) for a in roots for b in roots) or len(set(roots)) != len(roots):
            return "nested roots"
        kinds = {root: _file_system(root) for root in self.roots}
        remote = [root for root, kind in kinds.items() if kind in _REMOTE or kind.startswith("fuse")]
        if remote:
            kind = kinds[remote[0]]
            return f"a network or FUSE file system ({remote[0]!r}: {kind}): writes from elsewhere send no event"
        if any(reason in ("dangling symlink", "symlink loop") for _path, reason in found.skipped):
            return "a symbolic link among the session files"
        for path in found.dirs:
            try:
                with os.scandir(path) as scan:
                    for entry in scan:
                        if not entry.name.endswith(SESSION_SUFFIX):
                            continue
                        if entry.is_symlink():
                            return f"a symbolic link among the session files ({entry.path!r})"
                        if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_nlink != 1:
                            return f"a session file with another hard link ({entry.path!r})"
            except OSError:
                continue
        return None

    def _key(self, path: str) -> tuple[object, ...] | None:
        relative = self._relative(path)
        if relative is None:
            return None
        number, root, parts = relative
        top = self.top.get(os.path.join(root, parts[0]))
        if top is None:
            entry = os.path.join(root, parts[0])
            top = (os.path.islink(entry), not os.path.lexists(entry + SESSION_SUFFIX))
            self.top[entry] = top
        linked, in_bucket = top
        return order_key(number, parts, linked if len(parts) > 1 else False, in_bucket)

    def _relative(self, path: str) -> tuple[int, str, list[str]] | None:
        """The first root `path` is under (its number, the root) and `path`'s parts below it."""
        for number, prefix in enumerate(self.prefixes):
            if path.startswith(prefix):
                return number, self.roots[number], path[len(prefix) :].split(os.sep)
        return None

    def discovery(self) -> Discovery:
        """The listing kept, as `discover()` would make it now (once `sync` has run)."""
        return Discovery(
            infos=[self.known[path] for path in self.order], skipped=[(Path(p), r) for p, r in self.skipped]
        )

    # -- watching ----------------------------------------------------------------------------

    def _watch_dir(self, path: str) -> bool:
        """Watch session directory `path` (again): True when its watch is new, that is not
        the one it had (a new folder, one renamed here, made again or re-pointed)."""
        mask = DIR_MASK | (ABOVE_MASK if path in self.above.values() else 0)  # (one watch per inode: both)
        try:
            wd = self.inotify.add_watch(path, mask)
        except OSError as error:
            if error.errno == errno.ENOSPC:
                limit = "the inotify watch limit is reached (fs.inotify.max_user_watches)"
                raise OSError(error.errno, limit) from error
            self.wd_of.pop(path, None)  # gone or unreadable: the next discovery says so
            return False
        fresh = self.wd_of.get(path) != wd
        self.wd_of[path] = wd
        self.dir_of[wd] = path
        return fresh

    def _watch_above(self) -> None:
        """Each root's ancestors (and a missing root's nearest existing one), and each source
        of roots (`sources`) with its own: a root that is made, removed or renamed is then
        seen.  The watches wanted are set before the others are removed (a path watched
        already keeps its watch): no event falls between."""
        before, self.above = self.above, {}
        watched = set(self.wd_of)
        for start in [os.path.dirname(root) for root in self.roots] + self.sources:
            path = start
            while True:
                mask = ABOVE_MASK | (DIR_MASK if path in watched else 0)  # (a session dir too: both)
                try:
                    self.above[self.inotify.add_watch(path, mask)] = path
                except OSError:
                    pass
                parent = os.path.dirname(path)
                if parent == path:
                    break
                path = parent
        for wd in before:
            if wd not in self.above and wd not in self.dir_of:
                self._unwatch(wd)

    def _on_path(self, directory: str, name: str) -> bool:
        """Whether `directory/name` is a root or a source of roots, on the way to one, or an
        entry of a source (an omp profile made or gone: roots come or go)."""
        if directory in self.sources:
            return True
        path = os.path.join(directory, name)
        return any(end == path or end.startswith(path.rstrip(os.sep) + os.sep) for end in self.roots + self.sources)

    def take(self, events: list[Event], token: str | None = None) -> bool:
        """Note what `events` changed; True when the sentinel `token` is among them."""
        seen = False
        for event in events:
            wd, mask, name = event.wd, event.mask, event.name
            if mask & IN_Q_OVERFLOW:
                self.lost = True
                continue
            if wd == self.sentinel_wd:
                seen = seen or (token is not None and name == token)
                continue
            above = self.above.get(wd)
            if above is not None:
                if mask & (IN_IGNORED | IN_UNMOUNT | IN_DELETE_SELF | IN_MOVE_SELF) or self._on_path(above, name):
                    self.lost = True
                if wd not in self.dir_of:
                    continue  # (else a session directory too: its sessions' changes are read below)
            directory = self.dir_of.get(wd)
            if directory is None:
                continue  # a watch removed since: its last events
            if mask & _LOST or not name:
                self.lost = True
                continue
            if not name.endswith(SESSION_SUFFIX):
                if directory in self.roots:
                    self.lost = self.lost or not mask & _CONTENT  # a project, or maybe a linked bucket
                elif mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                    if not self.pending and not self.new_dirs:
                        self.first_pending = time.monotonic()
                    self.new_dirs.add(os.path.join(directory, name))  # maybe a session's folder
                elif mask & IN_ISDIR:
                    self.lost = True  # a folder gone or changed: discovery says what is left
                continue
            if mask & IN_ISDIR:
                self.lost = True  # a directory named *.jsonl: discovery says what it is
                continue
            if not self.pending:
                self.first_pending = time.monotonic()
            self.pending.add(os.path.join(directory, name))
        return seen

    def apply(self) -> None:
        """Fold the pending changes into the index and the listing (or discover again)."""
        generation = self.generation
        try:
            self._apply()
        finally:
            if self.generation != generation:
                self.changed_at = time.monotonic()  # (the kept stores are refreshed once quiet again)

    def _apply(self) -> None:
        if self.catalog.reopen_if_replaced():  # (healed by another process, or free again)
            self.log("the index was replaced or is free again: reopened it, and all is listed again")
            self.lost = True
        if not self.lost and self.new_dirs:
            new_dirs, self.new_dirs = sorted(self.new_dirs), set()
            for path in new_dirs:
                if not self._add_folder(path):
                    self.lost = True
                    break
        if self.lost:
            self.new_dirs.clear()
            self.rediscover()
            return
        skipped = {path for path, _reason in self.skipped}
        changed = False
        while self.pending and not self.lost:  # a folder listed on the way adds its files
            changed = self._apply_files(sorted(self.pending), skipped) or changed
        if self.lost:
            self.rediscover()
        elif changed:
            self.generation += 1

    def _apply_files(self, pending: list[str], skipped: set[str]) -> bool:
        """Fold changes to these session paths in; True when the listing changed."""
        self.pending.difference_update(pending)
        changed = False
        for path in pending:
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                info = None
            except OSError:
                self.lost = True
                return changed
            if path in skipped:
                self.lost = True
                return changed
            stem = path[: -len(SESSION_SUFFIX)]
            if os.path.isdir(stem) and (info is None) == (path in self.known):
                # a session beside its folder comes or goes: the folder joins or leaves the listing
                if info is None or os.path.dirname(path) in self.roots:
                    self.lost = True
                    return changed
                if stem not in self.wd_of and not self._add_folder(stem):
                    self.lost = True
                    return changed
            if info is None:
                if path in self.known:
                    self._drop(path)
                    self._forget(path)
                    changed = True
                continue
            if not stat_module.S_ISREG(info.st_mode) or info.st_nlink != 1:
                self.lost = True  # a link, a FIFO...: discovery decides
                return changed
            self._index(path)
            try:
                now = os.stat(path)
            except OSError:
                self.lost = True
                return changed
            new = FileInfo(path, now.st_size, now.st_mtime_ns)
            if self.known.get(path) != new:
                if path not in self.known and not self._insert(path):
                    self.lost = True
                    return changed
                self.known[path] = new
                changed = True
        return changed

    def _folder_depth(self, path: str) -> int | None:
        """The depth `discover` enters folder `path` at (1: a session's folder in a bucket), or
        None when it does not enter it (not a session's folder, too deep)."""
        parent = os.path.dirname(path)
        if parent not in self.wd_of:
            return None
        relative = self._relative(parent)
        if relative is None:
            return None
        _number, root, parts = relative
        top = os.path.join(root, parts[0])
        in_bucket = self.top.get(top, (False, not os.path.lexists(top + SESSION_SUFFIX)))[1]
        if in_bucket and len(parts) == 1:  # a bucket enters only a session's own folder
            return 1 if os.path.lexists(path + SESSION_SUFFIX) else None
        depth = len(parts) if in_bucket else len(parts) + 1
        return depth if depth <= MAX_NESTING else None

    def _add_folder(self, path: str) -> bool:
        """List a folder made in a listed directory as `discover` would (watched first, then
        scanned, so nothing written meanwhile is missed); False when only a new discovery can."""
        try:
            if os.path.islink(path) or not os.path.isdir(path):
                return True  # gone again, or a link discovery does not follow there
        except OSError:
            return False
        depth = self._folder_depth(path)
        if depth is None:
            return True  # not entered: a later `X.jsonl` beside it makes discovery look again
        tried: set[str] = set()
        while True:
            found = discover_folder(path, depth)
            missing = [folder for folder in found.dirs if folder not in self.wd_of]
            if not missing:
                break
            if tried.issuperset(missing):
                return False
            for folder in missing:
                tried.add(folder)
                self._watch_dir(folder)
        if found.skipped:
            return False
        for info in found.infos:
            try:
                link = os.lstat(info.path)
            except OSError:
                return False
            if not stat_module.S_ISREG(link.st_mode) or link.st_nlink != 1:
                return False
            if info.path not in self.known:
                if not self._insert(info.path):
                    return False
                self.known[info.path] = info
                self.pending.add(info.path)  # indexed with the other changes
        self.generation += 1
        return True

    def _insert(self, path: str) -> bool:
        """Add a new file where discovery lists it; False when its place cannot be told."""
        if not self.exact:
            self.order.append(path)
            return True
        key = self._key(path)
        if key is None:
            return False
        self.order.insert(bisect_left(self.order, key, key=self._key), path)  # type: ignore[arg-type]
        return True

    def _drop(self, path: str) -> None:
        del self.known[path]
        key = self._key(path) if self.exact else None
        at = bisect_left(self.order, key, key=self._key) if key is not None else -1  # type: ignore[arg-type]
        if not (0 <= at < len(self.order) and self.order[at] == path):
            at = self.order.index(path)
        del self.order[at]

    def _index(self, path: str) -> None:
        try:
            self.catalog.summary(Path(path))  # the picker watcher's path: re-indexed, text included
        except Exception as error:  # unreadable now: the listing still has its stat; a client reads it
            self.log(f"could not index {path!r}: {error}")

    def _forget(self, path: str) -> None:
        try:
            self.catalog.forget(Path(path))
        except Exception:  # the next refresh prunes it
            pass

    # -- sync --------------------------------------------------------------------------------

    def sync(self) -> None:
        """Read every event queued before now (up to a sentinel of our own), then apply them."""
        self.syncs += 1
        token = f"sync-{os.getpid()}-{self.syncs}"
        sentinel = self.private / token
        try:
            os.close(os.open(sentinel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        except FileNotFoundError:  # the cache was cleared under us: a new private directory
            self._private_dir()
            os.close(os.open(sentinel, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        deadline = time.monotonic() + SENTINEL_WAIT_S
        try:
            while not self.take(self.inotify.read(_ms(deadline - time.monotonic())), token):
                if self.lost:
                    break  # (an overflow may have dropped the sentinel) a discovery from now on settles all
                if time.monotonic() > deadline:
                    self.lost = True
                    break
        finally:
            with contextlib.suppress(OSError):
                os.unlink(sentinel)
        self.apply()

    def answer(self, *, listing: bool = True, head_only: bool = False) -> tuple[bytes, bytes]:
        """The reply to a sync: a JSON header line, and the listing (`encode_listing`, kept
        per generation; sent apart, never copied into one reply).  Without `listing` (a
        STATUS) nothing is encoded and nothing follows the header ("bytes": 0).  With
        `head_only` (a `SYNC HEAD`) the header carries the listing's key and nothing follows
        it: a client whose stored answer is that key's needs no file (16 MB at 100,000)."""
        if listing:
            self._listing()
        blob = self._blob[1] if listing and self._blob is not None else b""  # (set just above)
        header = {
            "protocol": PROTOCOL,
            "exact": self.exact,
            "why_not": self.why_not,
            "generation": self.generation,
            "roots": self.roots_key,
            "pid": os.getpid(),
            "files": len(self.order) if self.exact else 0,
            "skipped": self.skipped,
            "bytes": 0 if head_only else len(blob),
        }
        if listing and self._blob is not None:
            header["key"] = self._blob[2]  # `fileskey.files_key` of the listing (`Pending.head`)
        return json.dumps(header).encode() + b"\n", b"" if head_only else blob

    def _listing(self) -> tuple[int, bytes, str]:
        """The listing as a sync sends it, made once per generation: (the generation, the
        encoded listing, its files' key in hex, so a client whose stored answer is still
        valid decodes none)."""
        if self._blob is None or self._blob[0] != self.generation:
            infos = [self.known[path] for path in self.order] if self.exact else []
            self._blob = (self.generation, encode_listing(infos), files_key(infos).hex())
        return self._blob

    # -- serving -----------------------------------------------------------------------------

    def _private_dir(self) -> None:
        """The watcher's own directory (its sentinels), emptied and watched."""
        self.private.mkdir(mode=0o700, parents=True, exist_ok=True)
        for stale in self.private.iterdir():
            with contextlib.suppress(OSError):
                stale.unlink()
        self.sentinel_wd = self.inotify.add_watch(str(self.private), IN_CREATE | IN_ONLYDIR)

    def _start(self) -> None:
        path = socket_path(self.cache_dir)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a stale one (the lock is ours, so nobody serves it): clients fail fast
        self._private_dir()
        self.rediscover()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            with short_socket_path(path) as short:
                server.bind(short)
        finally:
            os.umask(old_mask)
        server.listen(16)
        server.setblocking(False)
        self.server = server

    def serve(self, ready: Callable[[], None] | None = None) -> None:
        """Watch and answer until stopped (blocking)."""
        self._start()
        assert self.server is not None
        if ready is not None:
            ready()
        try:
            while not self._stopping:
                wait = None
                if self.pending or self.lost or self.new_dirs:
                    wait = max(0.0, self.first_pending + DEBOUNCE_S - time.monotonic())
                refresh_at = self._refresh_at()
                if refresh_at is None and self.refresh is not None:  # (woken to stop it, or to kill it)
                    refresh_at = self.refresh.started + REFRESH_LIMIT_S
                    if self.refresh.kill_at is not None:
                        refresh_at = self.refresh.kill_at if math.isfinite(self.refresh.kill_at) else None
                if refresh_at is not None:
                    wait = max(0.0, min(wait if wait is not None else math.inf, refresh_at - time.monotonic()))
                readers = [self.inotify.fileno(), self.server.fileno()]
                if self.refresh is not None:
                    readers.append(self.refresh.fd)
                readable, _, _ = select.select(readers, [], [], wait)
                if self.inotify.fileno() in readable:
                    self.take(self.inotify.read(0))
                if self.server.fileno() in readable:
                    self._client()
                elif self._due():
                    self.apply()
                if self.refresh is not None and self.refresh.fd in readable:
                    self._read_refresh()
                elif self.refresh is not None and self.refresh.kill_at is not None:
                    self._kill_late_refresh()
                elif self.refresh is not None and time.monotonic() > self.refresh.started + REFRESH_LIMIT_S:
                    self.log("a refresh of the kept rows took too long: stopped")
                    self._stop_refresh()
                    # (its cooldown as for one that took the limit: at most a third of one core)
                    self.refresh_after = time.monotonic() + REFRESH_COOLDOWN * REFRESH_LIMIT_S
                refresh_at = self._refresh_at()
                if refresh_at is not None and time.monotonic() >= refresh_at:
                    self._start_refresh()
        finally:
            self.close()

    # -- the kept stores ---------------------------------------------------------------------

    def _refresh_at(self) -> float | None:
        """When the kept stores are to be refreshed (`Catalog.refresh_kept`): changes were
        applied since the last refresh started, none waits, and the files have been quiet for
        `REFRESH_QUIET_S` (and the last refresh's cooldown is over); None: not now."""
        if self.refresh is not None or not self.exact or self.generation == self.refreshed_generation:
            return None
        if self.pending or self.lost or self.new_dirs:
            return None  # applied first (a new change: quiet from then on)
        return max(self.changed_at + REFRESH_QUIET_S, self.refresh_after)

    def _start_refresh(self) -> None:
        """Refresh the kept stores in a process of its own (`core.watchrefresh`: a fresh
        interpreter, never a fork of this one, which has the index open), which asks this
        watcher for the listing as any `ls` does; its pipe is read when select says so."""
        from . import watchrefresh

        self.refreshed_generation = self.generation
        self._listing()  # (made now, not at its sync: 0.2 s at 100,000 files a client no longer waits for)
        catalog = self.catalog
        argv = watchrefresh.command(
            os.getpid(), self.cache_dir, catalog.cache_dir, catalog.roots, catalog.explicit_roots, REMAKE_ANSWERS
        )
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env=watchrefresh.environment(),
                close_fds=True,
            )
        except OSError as error:  # (out of memory or processes: the watch goes on without it)
            self._not_refreshed(error)
            return
        assert process.stdout is not None
        fd = process.stdout.fileno()
        os.set_blocking(fd, False)
        self.refresh = _Refresh(process, fd, time.monotonic())

    def _not_refreshed(self, error: OSError) -> None:
        """A refresh that could not start: said, and tried again in a while."""
        self.refreshed_generation = -1  # (no generation's)
        self.refresh_after = time.monotonic() + REFRESH_LIMIT_S
        self.log(f"could not start a refresh of the kept rows: {error}")

    def _read_refresh(self) -> None:
        """Read what the refresh process wrote (never blocking); at its end, reap it
        (`_refreshed`)."""
        refresh = self.refresh
        assert refresh is not None
        try:
            while chunk := os.read(refresh.fd, 4096):
                refresh.said = (refresh.said + chunk)[:4096]
        except BlockingIOError:
            return  # (more to come)
        except OSError:
            pass
        self._refreshed()

    def _refreshed(self) -> None:
        """The refresh process is done (its pipe ended): reaped, its work logged, the cooldown set."""
        refresh = self.refresh
        assert refresh is not None
        self.refresh = None
        cpu = math.nan
        try:
            _pid, status, usage = os.wait4(refresh.process.pid, 0)  # (it ended its output: it is exiting)
            refresh.process.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
        except ChildProcessError:  # (reaped already: nothing to wait for)
            refresh.process.returncode = -1
        _close(refresh)
        took = time.monotonic() - refresh.started
        self.refresh_after = max(self.refresh_after, time.monotonic() + REFRESH_COOLDOWN * took)
        if refresh.said and refresh.kill_at is None:
            self.log(f"{refresh.said.decode(errors='replace')} ({took:.2f}s, {cpu:.2f}s of CPU)")

    def _stop_refresh(self) -> None:
        """Interrupt a refresh still running (SIGTERM: it removes its temporary files), killed
        if it has not ended `REFRESH_STOP_S` later (`_kill_late_refresh`); reaped by the loop
        when its pipe ends, never waited for here."""
        refresh = self.refresh
        if refresh is None or refresh.kill_at is not None:
            return
        refresh.kill_at = time.monotonic() + REFRESH_STOP_S
        with contextlib.suppress(OSError):
            refresh.process.send_signal(signal.SIGTERM)

    def _kill_late_refresh(self) -> None:
        """A stopped refresh that did not end in time: killed (its pipe then ends)."""
        refresh = self.refresh
        if refresh is not None and refresh.kill_at is not None and time.monotonic() >= refresh.kill_at:
            refresh.kill_at = math.inf
            with contextlib.suppress(OSError):
                refresh.process.kill()

    def _end_refresh(self) -> None:
        """At the watcher's end: a refresh still running interrupted, waited for up to
        `REFRESH_STOP_S`, then killed and reaped (it would die with this process anyway)."""
        refresh, self.refresh = self.refresh, None
        if refresh is None:
            return
        with contextlib.suppress(OSError):
            refresh.process.send_signal(signal.SIGTERM)
        try:
            refresh.process.wait(REFRESH_STOP_S)
        except subprocess.TimeoutExpired:
            refresh.process.kill()
            refresh.process.wait()
        _close(refresh)

    def _due(self) -> bool:
        """Changes are waiting and the first came `DEBOUNCE_S` ago."""
        waiting = self.pending or self.lost or self.new_dirs
        return bool(waiting) and time.monotonic() >= self.first_pending + DEBOUNCE_S

    def _client(self) -> None:
        assert self.server is not None
        try:
            conn, _ = self.server.accept()
        except (BlockingIOError, InterruptedError):
            return
        with conn:
            try:
                conn.setblocking(True)
                conn.settimeout(CLIENT_WAIT_S)
                if not same_user(conn):
                    return
                request = read_line(conn)
                if request in (b"SYNC", SYNC_HEAD):
                    self.sync()
                    header, blob = self.answer(head_only=request == SYNC_HEAD)
                    conn.sendall(header)
                    if blob:
                        conn.sendall(blob)
                elif request == b"STATUS":
                    conn.sendall(self.answer(listing=False)[0])
                elif request == b"STOP":
                    conn.sendall(b"OK\n")
                    self._stopping = True
            except OSError:
                return  # the client went away (or took too long): it does without us

    def stop(self) -> None:
        self._stopping = True

    def _unwatch(self, wd: int) -> None:
        """Stop a watch; one the kernel already ended (its `IN_IGNORED` was queued) is gone."""
        with contextlib.suppress(OSError):
            self.inotify.rm_watch(wd)

    def close(self) -> None:
        self._end_refresh()
        if self.server is not None:
            with contextlib.suppress(OSError):
                os.unlink(socket_path(self.cache_dir))
            self.server.close()
            self.server = None
        self.inotify.close()


_REMOTE = frozenset(
    {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "afs", "lustre", "gpfs", "virtiofs"}
)


def available() -> bool:
    """Whether this system has inotify (Linux): the watcher needs it."""
    return sys.platform.startswith("linux")


def _close(refresh: _Refresh) -> None:
    """The refresh process's pipe closed (`Popen.stdout`, whose descriptor `fd` is)."""
    assert refresh.process.stdout is not None
    with contextlib.suppress(OSError):
        refresh.process.stdout.close()


def _ms(seconds: float) -> int:
    """A wait for `inotify_simple`'s `read`, in whole milliseconds (never negative)."""
    return max(0, math.ceil(seconds * 1000))


def _file_system(path: str) -> str:
    """The type of the file system `path` is on (Linux's mount table), "" when unknown."""
    try:
        real = os.path.realpath(path)
        best, kind = "", ""
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as table:
            for line in table:
                fields = line.split()
                mount = fields[4].replace("\\040", " ")
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                    best, kind = mount, fields[fields.index("-") + 1]
        return kind
    except (OSError, ValueError, IndexError):
        return ""


def _give_back_memory() -> None:
    """Return the heap's free pages to the system (glibc's `malloc_trim`; elsewhere nothing)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # the process's own symbols: no libc lookup (ldconfig)
        ctypes.CDLL(None).malloc_trim(0)


__all__ = [
    "PROTOCOL",
    "AlreadyWatching",
    "Watcher",
    "lock_path",
    "release_lock",
    "roots_key",
    "socket_path",
    "take_lock",
]
