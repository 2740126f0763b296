"""The catalog: every session under the roots, quick (4 KB prefixes) or exact (the index).

    catalog = Catalog()                   # default roots; Catalog([Path(...)]) for --root
    catalog.quick(cwd)                    # prefix metadata, no index, newest mtime first
    catalog.exact(cwd)                    # exact metadata, index brought up to date first
    catalog.refresh(progress, cancel)     # index everything incl. full text
    catalog.search_text(query)            # full-text hits (FTS5), one per session
    catalog.index_again(paths)            # the listed sessions the index lost (emptied elsewhere), indexed
    catalog.summary(path)                 # one file, exact, re-indexed if it changed
    catalog.first_screen(cwd, count)      # the newest `count` files' prefixes (a cold index's first rows)
    catalog.stored(cwd)                   # a project as the index last saw it (a warm picker's first rows)
    catalog.trash(path) / .restore(receipt) / .rename(path, name)   # the writes, index kept in step

Methods may be called from any thread (a Textual thread worker included): each thread gets
its own SQLite connection and index writes are serialised.  Only `trash`, `restore` and
`rename` write, on an explicit action, through `core.trash` / `core.writes`; the rest never
touches a session file.  When the index cannot be used at all, listing still works from
full reads.  `SessionSource` is what a screen needs of a catalog, as a Protocol.

Every use of the index goes through one guard, `_guarded`: an error of the index (see
`index.index_fault`) rebuilds it and tries again when it is damaged, or lists from the
files this time when it is locked or cannot be written (a full disk), and leaves one
sentence in `index_problem` for the status line or stderr.  Never a traceback, never a
wrong answer: the files are the truth.
"""

from __future__ import annotations

import contextlib
import os
import stat as stat_module
import sys
import threading
import time
from collections.abc import Callable, Collection, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from . import scanpool
from .discovery import Discovery, FileInfo, Pending, default_roots, discover, discover_ahead, root_path, stat_file
from .index import (
    DAMAGED,
    INDEX_ERRORS,
    LISTINGS_KEPT,
    LOCKED,
    FullTextQueryError,
    Index,
    IndexUnavailable,
    Row,
    decode_summary,
    encode_pi_json,
    index_fault,
    scope_key,
    stored_title,
)
from .model import SessionSummary
from .text import is_utf8

if TYPE_CHECKING:  # imported where used: a warm listing reads no file and searches nothing
    from .firstpaint import Prefetch, StoredRead
    from .indexquery import Ranked, Refreshed, Stale
    from .queryobjects import Made
    from .search import Query, TextHit
    from .trash import TrashReceipt

Progress = Callable[[int, int], None]
Cancel = Callable[[], bool]
T = TypeVar("T")

HEAL_STEP = 1024  # files a text heal reads again between two records of how far it went (`Catalog._heal`)
_COMMIT_EVERY_FILES = 256
_FEW_STALE = 64  # changed files a fresh-index answer reads itself before it asks again (`_fresh_answer`)
_COMMIT_EVERY_SECONDS = 0.5
_BULK_FILES = 256  # changed files from which a refresh writes in `Index.bulk` mode
# A bulk refresh commits less often: each commit counts FTS5's shadow tables for the index's
# signature (its cost grows with the index: a fifth of the writing at 100,000 sessions, every
# 256 files) and flushes FTS5's pending terms as a segment to merge later.  Readers see
# progress every few seconds; the text waiting is bounded too.
_BULK_COMMIT_FILES = 2048
_BULK_COMMIT_SECONDS = 2.0
_BULK_COMMIT_CHARS = 16 << 20


class Cancelled(Exception):
    """`refresh` was cancelled; what was indexed so far is kept."""


@dataclass
class RefreshStats:
    """What the last refresh did (for `seance index` and the UI's status line)."""

    files: int = 0
    reused: int = 0
    appended: int = 0
    read: int = 0
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    failed: int = 0  # files that could not be read this time (not remembered: tried again next time)
    seconds: float = 0.0
    healed: int = 0  # sessions read again for the current text rules first (`heal_text`)


def same_dir(left: str, right: str) -> bool:
    """Header cwd comparison: resolved paths, a trailing slash ignored."""
    return _resolved(left) == _resolved(right)


_RESOLVED: dict[str, str] = {}
RESOLVED_KEPT = 4096


def _resolved(path: str) -> str:
    cached = _RESOLVED.get(path)
    if cached is None:
        expanded = os.path.expanduser(path)
        if not os.path.isabs(expanded):  # a Windows or relative header cwd: never joined to ours
            cached = path.rstrip("/\\") or path
        else:
            try:
                cached = os.path.realpath(expanded)
            except (OSError, ValueError):
                cached = os.path.normpath(expanded)
        if len(_RESOLVED) >= RESOLVED_KEPT:  # a long-lived picker sees ever new cwds: stay bounded
            _RESOLVED.clear()
        _RESOLVED[path] = cached
    return cached


def in_project(summaries: list[SessionSummary], cwd: str) -> list[SessionSummary]:
    target = _resolved(cwd)
    return [summary for summary in summaries if summary.cwd and _resolved(summary.cwd) == target]


def _flush(index: Index | None, pending: list[tuple]) -> None:
    # (A writer thread overlapping SQLite with parsing was tried: GIL hand-offs made it slower.)
    if pending and index is not None:
        _write_batch(index, pending)
    pending.clear()


def _stale_rows_under(rules: int) -> list[str]:
    """The roots every stored session under which is read again by a heal from text rules
    `rules` (`Catalog.heal_text`), whatever its stored text: before 2, oh-my-pi's default
    roots (`roots.omp_session_roots`, as discovery spells them and resolved).  Rules 2 came
    with what is read of an oh-my-pi session that its row holds and no chunk shows: its
    dialect without a title slot (the command that resumes it), its name, its Python cells,
    `@file` mentions and developer prompts."""
    if rules >= 2:
        return []
    from .roots import omp_session_roots

    found = omp_session_roots()
    return sorted({spelled for root in found for spelled in (root_path(root), os.path.realpath(root))})


def _gone(path: str) -> bool:
    """Whether nothing is at `path` (or something that is no regular file) now, rather than
    a file that cannot be looked at (EACCES, EIO: it may be read later)."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # (a dangling link too)
        return True
    except OSError:
        return False
    return not stat_module.S_ISREG(info.st_mode)


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 120 else text[:119] + "…"


def _json_array(items: list[bytes]) -> bytes:
    """Encoded JSON values as one JSON array."""
    if len(items) < 2:
        return b"[" + b"".join(items) + b"]"
    # the brackets go on the end items, so the megabytes are copied once, by the join
    items[0] = b"[" + items[0]
    items[-1] += b"]"
    return b",".join(items)


_LS_JSON_SCOPE = b"ls-json\0"  # a stored `ls --json` answer (`ls_json_parts`), as printed without marks
_QUERY_JSON_SCOPE = b"query-json\0"  # a stored `ls --json --query` answer (`query_json_parts`), likewise
ANSWER_BUDGET = 16 << 20  # a query's printed answer is stored only up to this size (7 MB at 10,000 hits)
ANSWERS_KEPT = 4  # stored query answers (of every roots and scope together): at most 64 MB
OBJECTS_KEPT = 2  # stored objects of every session (`core.queryobjects`), one per roots: 71 MB at 100,000


def _decoded_for(row: tuple, decoded: dict[str, tuple[tuple[int, int, int], SessionSummary]]) -> SessionSummary:
    """The summary of index row `row`: the one a stored listing decoded from the same row
    (same path, size, mtime and check) if there is one, else decoded now."""
    kept = decoded.get(row[0])
    return kept[1] if kept is not None and kept[0] == (row[1], row[2], row[9]) else decode_summary(row[7])


def _json_parts(items: list[bytes]) -> list[bytes]:
    """Encoded JSON values as the parts of one JSON array (`b"".join` of them is the array)."""
    if not items:
        return [b"[]"]
    parts = [b","] * (2 * len(items) + 1)
    parts[1::2] = items
    parts[0], parts[-1] = b"[", b"]"
    return parts


def _write_batch(index: Index, batch: list[tuple]) -> None:
    """Write scanned rows in one transaction, so readers see progress while the index builds."""
    with index.writing() as writer:
        for item in batch:
            if not is_utf8(item[1].path if item[0] == "ok" else item[1]):
                continue  # SQLite keeps paths as UTF-8: such a file is read again each run, not a row
            if item[0] == "ok":
                _, summary, state, texts, continued, text_seq, since = item
                writer.put_session(
                    summary, state, texts, continued=continued, text_seq=text_seq, known=since is not None, since=since
                )
            else:
                _, path, size, mtime_ns, reason = item
                writer.put_not_session(path, size, mtime_ns, reason)


def _keep_rows(index: Index, scope: bytes, files: bytes, blob: bytes, sessions: int) -> None:
    """A query's checked rows (`core.queryrows`), for the next query on the same files, after
    the read transaction: in a file the entry names (`queryrows.written`), else the entry
    itself (an index in memory, a file that cannot be written; empty: only the files' key)."""
    from .queryrows import ROWS_KIND, written

    entry = written(index.cache_dir, scope, blob) if blob and not index.in_memory else None
    _keep_entry(index, scope, files, [entry if entry is not None else blob], sessions, ROWS_KIND)


def _keep_objects(index: Index, scope: bytes, files: bytes, made: Made, sessions: int) -> None:
    """Every session's object, read and written for a query (`core.queryobjects`): the
    entry that names its file."""
    from .queryobjects import OBJECTS_KIND

    _keep_entry(index, scope, files, made.entry, sessions, OBJECTS_KIND, OBJECTS_KEPT)


def _keep_entry(
    index: Index, scope: bytes, files: bytes, parts: list[bytes], sessions: int, kind: str, kept: int = LISTINGS_KEPT
) -> None:
    """A query's entry kept in `listings` (`Index.put_listing`), then the files of `kind` that
    no entry names any more deleted (`keptfile.prune`): a shortcut for next time only, so
    a failure to store is no failure."""
    from .keptfile import prune

    with contextlib.suppress(OSError, *INDEX_ERRORS):
        index.put_listing(scope, files, parts, sessions, [], kept)
        if not index.in_memory:
            prune(index.cache_dir, index.listing_scopes(scope.partition(b"\0")[0] + b"\0"), kind)


class Catalog:
    """Discovery, prefix metadata and the persistent index behind one thread-safe object."""

    def __init__(
        self,
        roots: list[Path] | None = None,
        *,
        cache_dir: Path | None = None,
        workers: int = 1,
        trash_dir: Path | None = None,
        watched: bool = False,
        found: Pending | None = None,
        heal: bool = True,
    ) -> None:
        """`workers` > 1 lets big cold reads fork that many scanning processes (Linux only);
        only a single-threaded caller such as the CLI should ask for it.  `trash_dir`: where
        `trash` moves files (None: the user's home Trash; the demo keeps its own).  `watched`:
        take the listing from a resident watcher when one serves this index and these roots
        (`core.watchclient`; the CLI's `ls` and `resolve`), else discover the files.  `found`:
        these roots' discovery, started ahead (`discovery.discover_ahead`): the first one
        this catalog needs is it (unless the watcher answers: then it is stopped).  Without
        `heal` (the resident watcher's background refresh, `core.watchrefresh`) a damaged,
        locked or unwritable index is never rebuilt, replaced or listed around: the fault is
        raised (`_guarded`) and healing is left to a foreground command."""
        self.watched = watched
        self.heal = heal
        self.trash_dir = trash_dir
        self.workers = workers if scanpool.available() else 1
        self.explicit_roots = roots is not None
        self.roots: list[Path] = [Path(root) for root in roots] if roots is not None else default_roots()
        self._cache_dir = cache_dir
        self._prefetch: Prefetch | None = None  # a first screen being made ahead (`prefetch_stored`)
        self._decoded: dict[str, tuple[tuple[int, int, int], SessionSummary]] = {}  # see `keep_decoded`
        self._stored_read: tuple[str | None, StoredRead] | None = None  # see `stored`: for the whole listing
        self._index: Index | None = None
        self._index_error: str | None = None
        self._problem: str | None = None  # the last thing the guard did about the index
        self._dropped: list[Index] = []  # indexes given up on (closed with the catalog)
        self._refresh_lock = threading.Lock()
        self._index_lock = threading.Lock()
        self.last_discovery: Discovery | None = None
        self._found_ahead = found
        self.last_stats = RefreshStats()
        self.lock_waits = 0  # refreshes that listed from the files because another writer held the index

    # -- discovery and the quick path -----------------------------------------------------------

    def discover(self) -> Discovery:
        """The session candidates under the roots, and what was skipped."""
        found = self._found()()
        self.last_discovery = found
        return found

    def _found(self) -> Pending:
        """This listing's files: the resident watcher's (its head first: the stored answer
        may need no file), the discovery started ahead (being found in a child: the caller
        `close`s it), or found here now; never a new child."""
        watched, ahead = self._taken_discovery(head_first=True)
        if watched is not None:
            return watched
        if ahead is not None:
            return ahead
        return Pending.of(discover(self.roots if self.explicit_roots else None))

    def discover_ahead(self, *, head_first: bool = False) -> Pending:
        """`discover()`, started now (or the one the catalog was given, started earlier) and
        waited for when the returned `Pending` is called: with `workers` > 1 (a
        single-threaded caller: the CLI) in a forked process, so the stat of every file
        overlaps the caller's reading of the index; a resident watcher's listing when one
        answers (`watched`; with `head_first`, its files are sent only when they are asked
        for: `watchclient.synced_listing`).  The caller calls it, or `close`s it when the
        answer is not wanted (it reaps the child).  The one place a query learns which files
        exist now."""
        watched, ahead = self._taken_discovery(head_first=head_first)
        if watched is not None:
            return watched
        if ahead is not None:
            return ahead
        roots = self.roots if self.explicit_roots else None
        if self.workers > 1:
            return discover_ahead(roots, fork=True)
        return Pending.of(discover(roots))  # no child to wait for: found here, now

    def _taken_discovery(self, *, head_first: bool = False) -> tuple[Pending | None, Pending | None]:
        """The resident watcher's listing (when `watched` and one answers) or else the
        discovery this catalog was given ahead, taken (each is used once); a discovery
        started ahead is stopped when the watcher answered instead."""
        ahead, self._found_ahead = self._found_ahead, None
        watched = self._watched_discovery(head_first) if self.watched else None
        if watched is not None and ahead is not None:
            ahead.close()
            ahead = None
        return watched, ahead

    def _watched_discovery(self, head_first: bool = False) -> Pending | None:
        """The resident watcher's listing, exact as of now, decoded when its files are asked
        for; None when no watcher answers (the one hook: `core.watchclient.synced_listing`)."""
        from .index import default_cache_dir
        from .watchclient import synced_listing

        cache_dir = self._cache_dir if self._cache_dir is not None else default_cache_dir()
        return synced_listing(cache_dir, self.roots, self.explicit_roots, head_first=head_first)

    def quick(self, cwd: str | None = None, *, text: bool = True) -> list[SessionSummary]:
        """Prefix-only summaries (`exact=False`), newest mtime first; `cwd` None = all projects.

        `text=False` leaves `prefix_text` empty: cheaper, for a listing that is not searched.
        """
        from .prefix import quick_summaries

        found = self.discover()
        skipped: list[tuple[str, str]] = []
        # Serial on purpose: a 4 KB read is cheaper than shipping its summary back from a worker.
        summaries = quick_summaries(found.infos, skipped, text=text)
        found.skipped.extend((Path(path), reason) for path, reason in skipped)
        return in_project(summaries, cwd) if cwd is not None else summaries

    def quick_pi_json(self, cwd: str | None = None) -> bytes:
        """`quick(cwd)` as the `ls --quick --json` array, built without summary objects."""
        from .prefix import quick_pi_json, quick_pi_json_chunk

        found = self.discover()
        skipped: list[tuple[str, str]] = []
        if self.workers > 1 and len(found.infos) >= scanpool.MIN_FILES:  # parsing is the cost: every core
            items: list[tuple[int, str, bytes]] = []
            for _chunk, (chunk_items, chunk_skipped) in scanpool.map_chunks(
                quick_pi_json_chunk, found.infos, self.workers
            ):
                items += chunk_items
                skipped += chunk_skipped
            items.sort(key=itemgetter(0), reverse=True)  # stable: ties keep discovery order, as serially
        else:
            items = quick_pi_json(found.infos, skipped)
        found.skipped.extend((Path(path), reason) for path, reason in skipped)
        return _json_array(self._in_scope(items, cwd))

    # -- the index -------------------------------------------------------------------------------

    @property
    def index(self) -> Index | None:
        """The open index, or None when it cannot be used (listing then reads files directly)."""
        if self._index is None and self._index_error is None:
            with self._index_lock:
                if self._index is None and self._index_error is None:
                    try:
                        self._index = Index(self._cache_dir, roots=self.root_paths(), heal=self.heal)
                    except (IndexUnavailable, OSError, *INDEX_ERRORS) as error:  # type: ignore[misc]
                        self._index_error = (
                            f"the index could not be opened or written ({_one_line(error)}); "
                            "listing from the session files"
                        )
                        self._index = self._memory_index() if self.heal else None
        return self._index

    def _memory_index(self) -> Index | None:
        """An index in memory for this catalog's life, filled from the files (so full-text
        search still works when the cache cannot be written); None if even that fails."""
        try:
            return Index(self._cache_dir, in_memory=True, roots=self.root_paths())
        except INDEX_ERRORS:
            return None

    def root_paths(self) -> list[str]:
        """The roots as discovery spells them (`discovery.root_path`): the index reads only
        the files under them (a cache shared with other roots costs this one nothing)."""
        return [root_path(root) for root in self.roots]

    @property
    def index_unavailable(self) -> bool:
        """True when the index on disk could not be opened or written (a full or read-only
        cache dir): answers come from the files, and nothing this catalog reads is kept."""
        return self._index_error is not None

    def reopen_if_replaced(self) -> bool:
        """For a resident process (the watcher): let go of an index that is no longer the shared
        one, so the next use opens that: its file deleted or replaced by another process's heal,
        or a private one made while the shared one was locked, now free.  True when let go."""
        index = self._index
        if index is None or index.in_memory:
            return False
        if not (index.shared_free() if index.private else index.replaced()):
            return False
        with self._index_lock:
            if self._index is not index:
                return False
            self._index = None
            self._index_error = None
        index.close()
        return True

    def follow_default_roots(self) -> bool:
        """For a resident process of the default roots (the watcher): take up the default
        roots as they are now (a new oh-my-pi profile's, one gone), letting go of the index
        kept for the old ones (the next use opens it for these).  True when they changed."""
        try:
            roots = self.roots if self.explicit_roots else default_roots()
        except OSError:  # (the directory it was started in removed: pi's project setting unknown)
            return False
        if roots == self.roots:
            return False
        with self._index_lock:
            index, self._index, self._index_error = self._index, None, None
            self.roots = roots
        if index is not None:
            index.close()
        return True

    @property
    def index_private(self) -> bool:
        """True when the shared index was locked and a private one, dropped at `close`, is used."""
        index = self._index
        return index is not None and index.private

    @property
    def index_problem(self) -> str | None:
        """Why the index was rebuilt or is not used, as one line for a status line or stderr;
        None when all is well."""
        if self._problem:
            return self._problem
        if self._index_error:
            return self._index_error
        return self._index.rebuilt_reason if self._index is not None else None

    def _guarded(self, work: Callable[[Index | None], T], after_rebuild: Callable[[Index], Any] | None = None) -> T:
        """`work(index)`, healed: the one place that handles the index failing.

        A damaged index (undecodable rows, malformed pages, missing tables, wrong types) is
        rebuilt and `work` runs again on it (after `after_rebuild`, e.g. to re-index text);
        a locked one, one that cannot be written (disk full), or one that fails again is left
        out and `work(None)` answers from the session files.  Each leaves one sentence in
        `index_problem`.  A bad full-text query is the caller's error and is raised as is.
        """
        index = self.index
        if index is None:
            if not self.heal:  # (a background refresh never reads every session file instead)
                raise IndexUnavailable(self._index_error or "no index")
            return work(None)
        try:
            return work(index)
        except FullTextQueryError:
            raise
        except INDEX_ERRORS as error:
            if not self.heal:  # (a background refresh: the index left as it is, for a foreground command)
                self._problem = f"the index failed ({_one_line(error)}); left as it is"
                raise
            failure = error
        fault = index_fault(failure)
        if fault == DAMAGED:
            try:
                index.reset(f"the index was damaged ({_one_line(failure)}); rebuilt it")
                self._problem = index.rebuilt_reason
                if after_rebuild is not None:
                    after_rebuild(index)
                return work(index)
            except FullTextQueryError:
                raise
            except INDEX_ERRORS as error:
                failure, fault = error, index_fault(error)
        if fault == LOCKED:  # another seance is writing for long: the files this time, the index next time
            self.lock_waits += 1
            self._problem = "the index is locked by another seance; listing from the session files"
        else:
            what = "could not be rebuilt" if fault == DAMAGED else "could not be written"
            self._problem = f"the index {what} ({_one_line(failure)}); listing from the session files"
            self._drop_index(index)
            if self._index is not None:  # one in memory instead
                try:
                    if after_rebuild is not None:
                        after_rebuild(self._index)
                    return work(self._index)
                except FullTextQueryError:
                    raise
                except INDEX_ERRORS:
                    self._drop_index(self._index)
        return work(None)

    def _drop_index(self, index: Index) -> None:
        """Stop using an index that cannot be written or rebuilt (for this catalog's life)."""
        with self._index_lock:
            if self._index is index:
                self._index = None if index.in_memory else self._memory_index()
                self._index_error = self._problem
                self._dropped.append(index)

    def rebuild_index(self) -> None:
        """Empty the index of this catalog's roots, to build it again (`seance index --rebuild`;
        see `Index.reset`: other roots' rows are kept)."""
        self._guarded(lambda index: index.reset() if index is not None else None)

    def refresh(
        self, progress: Progress | None = None, cancel: Cancel | None = None, *, full_text: bool = True
    ) -> list[SessionSummary]:
        """Bring the index up to date (only changed files are read; appended ones from the last
        offset) and return every exact summary, newest first.  Raises `Cancelled` on cancel."""
        self._stored_read = None  # (a first paint's read, not needed any more)
        return [payload for _modified, _cwd, payload in self._refreshed(progress, cancel, full_text, False)]

    def update_index(
        self, progress: Progress | None = None, cancel: Cancel | None = None, *, found: Discovery | None = None
    ) -> int:
        """`refresh` for `seance index`: the same index, full text included, but no summary is
        kept (only how many sessions there are), so memory does not grow with the corpus.
        `found`: a discovery just made (the resident watcher's), else one is made now.
        First the stored text is brought up to the current extraction rules (`heal_text`: once
        per index; every later call is one lookup)."""
        healed = self.heal_text(cancel)
        with self._refresh_lock:
            items = self._guarded(lambda index: self._refresh(progress, cancel, True, False, index, found, keep=False))
        self.last_stats.healed = healed
        return len(items)

    def heal_text(self, cancel: Cancel | None = None) -> int:
        """Bring an index's stored full text up to the current extraction rules
        (`fulltext.TEXT_RULES`), once per index, without reading every session again: the
        sessions whose stored text or title the change touches (`Index.stale_text_files` with
        `fulltext.stale_under`: one pass over the stored chunks, ~1 s of CPU at 100,000
        sessions) are read again whole and their rows and text replaced, as a refresh writes
        any file (`_read_changed`); how many were read again.  Of every file the index holds,
        whatever this catalog's roots: the record is the index's.

        The index records the rules (`Index.put_text_rules`) only when every one of them was
        read again, or is gone (its row forgotten: a file that comes back is read as new);
        one that could not be read (EACCES, EIO) keeps the rules unrecorded, so the next call
        scans again and reads those few.  Likewise when `cancel()` turns true (the picker is
        left: checked between batches of the scan and between files).

        Optional upkeep, never a reason to give up the index: when it is locked by another
        seance or cannot be written (disk full), 0 (the next call tries again), the index kept
        and no problem reported; only a damaged one goes through `_guarded` (rebuilt).

        A cache operation only: the session files are read, never written.  No row is
        forgotten or marked meanwhile but a gone file's: each session's old text is replaced
        by its new text in the same transaction as its row, so another process reading the
        index sees the one or the other, each with the row it was written with (a file an
        agent appends to meanwhile is read to where it was, and its next refresh continues
        from there, as always).  Two processes healing at once read the same few files twice,
        harmlessly.  Run by `seance index` and the resident watcher (`update_index`) and by
        the picker once its rows are listed: never on a listing's or a query's way."""
        from .fulltext import TEXT_RULES, stale_fields, stale_under

        def heal(index: Index | None) -> int:
            if index is None:
                return 0
            try:
                rules = index.text_rules()
                if rules >= TEXT_RULES:
                    return 0
                return self._heal(
                    index, (stale_under(rules), stale_fields(rules)), TEXT_RULES, cancel, _stale_rows_under(rules)
                )
            except INDEX_ERRORS as error:  # type: ignore[misc]
                if index_fault(error) == DAMAGED:
                    raise
                return 0  # locked or unwritable: no heal this time, the index as it is

        try:
            return self._guarded(heal)
        except Cancelled:
            return 0

    def _heal(
        self,
        index: Index,
        stale: tuple[Callable[[bytes], bool], dict[str, bytes]],
        rules: int,
        cancel: Cancel | None,
        under: Sequence[str] = (),
    ) -> int:
        """`heal_text`'s work (`stale`: `stale_under`'s test and `stale_fields`' marks; every
        session `under` these roots too): the sessions read again (raises `Cancelled`).  By
        file id, `HEAL_STEP` files at a time, each step's end recorded (`Index.heal_progress`):
        a heal left (the picker closed) or one that could not read a file goes on from there
        next time, not from the first session again (a change of the rules that no stored text
        shows reads almost every session: ~50 s at 100,000)."""
        since, retry = index.heal_progress(rules)
        found = index.stale_text_ids(stale[0], cancel, fields=stale[1])
        if found is None:
            raise Cancelled()
        if under:
            found = sorted({*found, *index.sessions_under(under)})
        todo = [(file_id, path) for file_id, path in found if file_id >= since or file_id in retry]
        failed: set[int] = set()  # (not read this time: read again first by the next heal)
        read = 0
        for start in range(0, len(todo), HEAL_STEP):
            step = todo[start : start + HEAL_STEP]
            read += self._heal_step(index, step, failed, cancel)
            index.put_heal_progress(rules, max(since, step[-1][0] + 1), failed)  # (a retried one: before `since`)
        if not failed:  # every one read again (or now not a session: no text)
            index.put_text_rules(rules)
        return read

    def _heal_step(self, index: Index, step: list[tuple[int, str]], failed: set[int], cancel: Cancel | None) -> int:
        """`_heal`'s read of one step's files again (a gone one's row forgotten: read as new
        if it comes back); the ids of those it could not read added to `failed`."""
        ids = {path: file_id for file_id, path in step}
        infos: list[FileInfo] = []
        gone: list[str] = []
        for path in ids:
            info = stat_file(path)
            if isinstance(info, FileInfo):
                infos.append(info)
            elif _gone(path):  # (its root unmounted, say): its stale row goes, read as new if it comes back
                gone.append(path)
            else:  # there but not to be read now (EACCES, EIO): tried again next time
                failed.add(ids[path])
        if gone:
            with index.writing() as writer:
                for path in gone:
                    writer.forget(path)
        stats = self._read_again(index, infos, whole=True, cancel=cancel)
        if stats.failed:  # (among the skipped: those now no session are no longer stale, so not read again)
            skipped = [ids[name] for path, _reason in stats.skipped if (name := str(path)) in ids]
            failed.update(skipped if len(skipped) >= stats.failed else ids.values())
        return stats.read

    def _read_again(
        self, index: Index, infos: list[FileInfo], *, whole: bool = False, cancel: Cancel | None = None
    ) -> RefreshStats:
        """Read these files (changed, or `whole`: their stored text replaced) and index them,
        as a refresh reads a changed file; what was done (`read`, `appended`, `failed`)."""
        stats = RefreshStats(files=len(infos))
        with self._refresh_lock:
            todo = [(info, index.row(info.path)) for info in infos]
            if whole:  # read from the start, every chunk written anew
                todo = [(info, row._replace(text_seq=-1) if row is not None else None) for info, row in todo]
            for _summary in self._read_changed(todo, stats, None, cancel, True, len(todo), index):
                pass
        return stats

    def index_again(self, paths: Collection[str], cancel: Cancel | None = None) -> list[str]:
        """Index the sessions of `paths` that the index holds no file of, text and all, as a
        refresh indexes a new file; the paths of `paths` it still holds no file of after
        (gone, unreadable, or the index locked or unwritable: nothing is read then from the
        files instead).  For a picker whose search found sessions it lists missing from the
        index: another process emptied it in place (`seance index --rebuild`, its
        `Index.reset`, killed or not done yet: the file is the same, so `Index.replaced`
        does not tell), and the listing's refresh, done before, will not run again.  Only a
        damaged index goes through `_guarded` (rebuilt).  `cancel()` true: stops between
        files (what was read is kept), and every path is answered as missing."""

        def indexed(index: Index | None) -> list[str]:
            if index is None:
                return list(paths)
            try:
                missing = index.unindexed(paths)
                infos = [info for path in missing if isinstance(info := stat_file(path), FileInfo)]
                if infos:
                    self._read_again(index, infos, cancel=cancel)
                return index.unindexed(missing) if missing else []
            except INDEX_ERRORS as error:  # type: ignore[misc]
                if index_fault(error) == DAMAGED:
                    raise
                return list(paths)  # locked or unwritable: the index as it is, said by the caller

        try:
            return self._guarded(indexed)
        except Cancelled:
            return list(paths)

    def exact(self, cwd: str | None = None, *, full_text: bool = False) -> list[SessionSummary]:
        """Exact summaries (refreshing the index as needed), newest first, filtered to `cwd`.
        One project's are the only ones decoded: `seance ls` in a project of 146 sessions
        among 100,000 decoded every one (1.0 s, 470 MB)."""
        target = None if cwd is None else _resolved(cwd)
        only = None if target is None else (lambda item_cwd: bool(item_cwd) and _resolved(item_cwd) == target)
        return self._in_scope(self._refreshed(None, None, full_text, False, only=only), cwd)

    def list_pi_json(self, cwd: str | None = None) -> bytes:
        """`list(cwd)` as the `ls --json` array, straight from the index's stored objects.

        The fast path for scripts: a warm call decodes no summaries at all, and when not one
        file changed since the last call (the same paths, sizes and mtimes) the answer is the
        one stored then: one stat per file and one lookup.
        """
        return b"".join(self.list_pi_json_parts(cwd))

    def list_pi_json_parts(self, cwd: str | None = None) -> list[bytes]:
        """`list_pi_json(cwd)` as parts that concatenate to it: a cold listing's answer is
        never joined in memory (70 MB at 100,000 sessions, beside the objects it is made of)."""
        from .marks import unmarked_json

        return [unmarked_json(part) for part in self.ls_json_parts(cwd)]

    def ls_json_parts(self, cwd: str | None = None) -> list[bytes]:
        """`seance ls --json`'s array without marks (`core.marks.unmarked_json`: every object
        `pinned` false and no `tags`, then pi's keys) as parts that concatenate to it.  It is
        stored as it is printed: a warm call with no file changed is one stat per file, one
        lookup and the bytes written, not 7 MB (at 10,000 sessions) rewritten each time."""
        from .marks import marked_json_parts

        pending = self._found()  # a child's scan overlaps the reading of the stored answer
        scope = _LS_JSON_SCOPE + self._scope(None if cwd is None else _resolved(cwd))

        def listed(index: Index | None) -> tuple[list[bytes], bool]:
            """(the answer's parts, whether it is new and was made with the index)."""
            stored = index.stored_listing(scope) if index is not None else None
            head = pending.head()  # the files' key: their stats need not be decoded to compare it
            if stored is not None and stored[0] == head.key:
                skipped = [*head.skipped, *((Path(path), reason) for path, reason in stored[1].skipped)]
                self.last_stats = RefreshStats(files=head.files, reused=stored[1].reused, skipped=skipped)
                return [stored[1].payload], False
            found = self.last_discovery = pending()
            with self._refresh_lock:
                items = self._refresh(None, None, False, True, index, found)
            return marked_json_parts(_json_parts(self._in_scope(items, cwd))), index is not None

        try:
            parts, storable = self._guarded(listed)
        finally:
            pending.close()
        head = pending.head()
        discovered_skips, files = len(head.skipped), head.key
        stats = self.last_stats
        # a shortcut for next time only: a failure to store is no failure
        if storable and not stats.failed and not pending.moved:
            not_sessions = [(str(path), reason) for path, reason in stats.skipped[discovered_skips:]]
            self._guarded(
                lambda index: (
                    index.put_listing(scope, files, parts, stats.reused, not_sessions) if index is not None else None
                )
            )
        return parts

    def matching(
        self, query: Query, cwd: str | None = None, *, marks: Mapping[str, Any] | None = None
    ) -> list[SessionSummary]:
        """The sessions `query` matches in `cwd`'s project (None: every project, where paths
        and cwds count too), ranked as `search.search` ranks them: `exact(cwd, full_text=True)`
        then `search`, with the same answer, without decoding or folding every summary.

        The index is brought up to date (text included), FTS5 gives the full-text hits, and
        only the sessions the stored titles and those hits leave (`search.prefilter`) are
        decoded and ranked.  `marks`: session id -> `core.marks.Mark`, for `tag:` and `is:`.
        Raises `ValueError` for a query the index cannot use.
        """
        from .search import SearchCache, search
        from .search.haystack import folded_title
        from .search.prefilter import Prefilter

        paths = cwd is None
        scoped = self._in_scope(self._refreshed(None, None, True, False, lazy=True), cwd)
        text_hits = {hit.path: hit for hit in self.search_text(query, include_cwd=paths)}
        excluded = self.text_excluded(query, include_cwd=paths)  # (`!wip` said past the title)
        keep = Prefilter(query, text_hits, paths).keeps
        cache = SearchCache()
        candidates: list[SessionSummary] = []
        for item in scoped:
            summary: SessionSummary | None = None
            if (item[0] if type(item) is tuple else item.path) in excluded:
                continue
            if type(item) is tuple:  # an unchanged session's row: (path, ..., cwd, summary blob, ...)
                title = stored_title(item)
                if title is None:  # not stored, or failed its check: folded from the summary
                    summary = decode_summary(item[7])
                    title = folded_title(summary)
                if not keep(item[0], title, item[6] or ""):
                    continue
            else:  # read just now
                summary = item
                title = folded_title(summary)
                if not keep(summary.path, title, summary.cwd):
                    continue
            summary = summary if summary is not None else decode_summary(item[7])
            cache.haystack(summary, title)  # folded from the stored title, not again
            candidates.append(summary)
        hits = search(candidates, query, text_hits=text_hits, paths=paths, cache=cache, marks=marks)
        return [hit.summary for hit in hits]

    def exact_where(self, keep: Callable[[str, tuple[str, str, str] | None], bool]) -> list[SessionSummary]:
        """`exact()` (every project) narrowed to the sessions `keep(path, folded title)` keeps,
        decoding only those: `keep` sees the index's stored folded id, name and first message
        (`search.haystack.folded_title`), or None when none is stored or it fails its check
        (keep it when unsure: the caller decides on the summaries)."""
        from .search.haystack import folded_title

        pending = self.discover_ahead()  # once (in a child with `workers`: it overlaps the rows' reading)
        try:
            fresh = self._fresh_where(keep, pending)
        finally:
            pending.close()
        if fresh is not None:
            return fresh
        found = self.last_discovery = pending()  # the refresh below lists from the same files
        scoped = self._in_scope(self._refreshed(None, None, False, False, found, lazy=True), None)
        kept: list[SessionSummary] = []
        for item in scoped:
            if type(item) is tuple:  # an unchanged session's row: (path, ..., summary blob, ...)
                if keep(item[0], stored_title(item)):
                    kept.append(decode_summary(item[7]))
            elif keep(item.path, folded_title(item)):  # read just now
                kept.append(item)
        return kept

    def _fresh_where(
        self, keep: Callable[[str, tuple[str, str, str] | None], bool], found: Pending
    ) -> list[SessionSummary] | None:
        """`exact_where(keep)` from a fresh index (`indexquery.kept_sessions`): only the kept
        sessions' summaries are read from it, none of the others'; None when the index is not
        fresh for the files `found()` (the caller refreshes it), asked for once the rows are read."""
        from . import indexquery

        def kept(index: Index | None) -> tuple[list[tuple], list[tuple[str, str]], int] | indexquery.Stale | None:
            if index is None:
                return None
            index.read_through_cache()
            with index.snapshot():
                return indexquery.kept_sessions(index, lambda: found().infos, keep)

        answer = self._fresh_answer(kept, lambda: len(found().infos))
        if answer is None:
            return None
        self.last_discovery = found()
        rows, not_sessions, count = answer
        skipped = [*found().skipped, *((Path(path), reason) for path, reason in not_sessions)]
        self.last_stats = RefreshStats(files=len(found().infos), reused=count, skipped=skipped)
        return self._summaries_of(rows)

    def _summaries_of(self, rows: Sequence[tuple]) -> list[SessionSummary]:
        """The summaries of `Index.query_rows()` rows, in their order: each decoded from its
        stored blob if that passes the row's check, else its file read again (gone: left out)."""
        rows = list(rows)
        stored = self._guarded(lambda index: index.checked_payloads(rows, "summary") if index is not None else {})
        summaries: list[SessionSummary] = []
        for row in rows:
            data = stored.get(row[0])
            summary = decode_summary(data) if data is not None else self.summary(Path(row[1]))  # read again
            if summary is not None:
                summaries.append(summary)
        return summaries

    def _fresh_answer(self, work: Callable[[Index | None], T | Stale | None], files: Callable[[], int]) -> T | None:
        """`work(index)` (one of the fresh-index answers, `core.indexquery`), guarded; when it
        finds a few files the index does not describe as they are now (`Stale`: an agent is
        appending to a session, a new one appeared), those are read and indexed, as a refresh
        would read them, and it runs once more.  None when it still cannot answer, or more
        than `_FEW_STALE` (or 1%) of the `files` found changed: the caller refreshes."""
        from .indexquery import Stale

        answer = self._guarded(work)
        if (
            isinstance(answer, Stale)
            and len(answer.infos) <= max(_FEW_STALE, files() // 100)
            and all(is_utf8(info.path) for info in answer.infos)  # no row can name the others
        ):
            stale = answer.infos

            self._guarded(lambda index: self._read_again(index, stale) if index is not None else None)
            answer = self._guarded(work)
        return None if isinstance(answer, Stale) else answer

    def matching_pi_json(self, query: Query, cwd: str | None = None) -> bytes | None:
        """`matching(query, cwd)` as the `ls --json` array (pi's keys; marks are the caller's),
        ranked from the index's stored titles and made of its stored objects: not one summary
        decoded (`search.stored`).  None when the query needs summaries (field filters, marks)
        or a stored title failed its check: the caller asks `matching`.
        Raises `ValueError` for a query the index cannot use."""
        from .search.haystack import folded_title
        from .search.stored import StoredSession, needs_summaries, rank_stored

        if needs_summaries(query):
            return None
        paths = cwd is None
        scoped = self._in_scope(self._refreshed(None, None, True, True, lazy=True), cwd)
        text_hits = {hit.path: hit for hit in self.search_text(query, include_cwd=paths)}
        excluded = self.text_excluded(query, include_cwd=paths)  # (`!wip` said past the title)
        sessions: list[tuple[StoredSession, tuple[str, str, str]]] = []
        for item in scoped:
            if (item[0] if type(item) is tuple else item.path) in excluded:
                continue
            if type(item) is tuple:  # an unchanged session's row: (path, ..., modified, cwd, ls-json, ...)
                title = stored_title(item)
                if title is None:  # not stored, or failed its check: only its summary can say
                    return None
                sessions.append((StoredSession.of(item[0], item[6] or "", item[5], item[7]), title))
            else:  # read just now
                summary = item
                stored = StoredSession.of(summary.path, summary.cwd, int(summary.modified_ms), encode_pi_json(summary))
                sessions.append((stored, folded_title(summary)))
        hits = rank_stored(sessions, query, text_hits, paths=paths)
        return _json_array([hit.pi_json for hit in hits])

    def ranked(
        self, query: Query, cwd: str | None = None, *, stored_as: str | None = None, whole: bool = False
    ) -> Ranked | None:
        """`matching_pi_json(query, cwd)`'s sessions, ranked from the index without loading
        every row (`core.indexquery`): the files are found and stat-ed as for any listing,
        and the answer is given only if the index is fresh for every one of them.  None when
        it is not (or the query needs more than words and phrases): the caller refreshes.
        The objects come from `pi_json_chunks`.  Raises `ValueError` for a bad query.
        `stored_as`: the query's text, under which its printed answer is kept
        (`query_json_parts`): the same query on the same files is then that answer (with
        `whole`, kept whole the first time: `remake_answers`)."""
        from . import indexquery

        if not indexquery.supported(query):
            return None
        target = None if cwd is None else _resolved(cwd)
        # the files found now: asked for once the index is read (not at all when its answer is kept)
        found = self.discover_ahead(head_first=True)
        answered_as = None
        if stored_as is not None:
            text = stored_as.encode("utf-8", "surrogatepass")
            answered_as = _QUERY_JSON_SCOPE + self._scope(target) + b"\0" + text

        def infos() -> list[FileInfo]:
            return found().infos

        # the full-text signature's check: the discovery child's, else a thread's begun as the query ranks
        checked_ahead: Callable[[], Any] = found.also
        start_check = None
        if not found.makes_also:
            from .ftscheck import VerdictAhead
            from .index import default_cache_dir

            ahead = VerdictAhead(self._cache_dir if self._cache_dir is not None else default_cache_dir())
            checked_ahead, start_check = ahead, ahead.start

        def ranked(index: Index | None) -> indexquery.Ranked | indexquery.Stale | None:
            if index is None:
                return None
            # (a stored answer is read mapped: `rank` reads through the cache when it scans rows)
            with index.snapshot():
                answer = indexquery.rank(
                    index,
                    query,
                    infos,
                    target,
                    _resolved,
                    checked_ahead,
                    self._scope(None),
                    answered_as,
                    infos_key=lambda: found.head().key,
                    start_check=start_check,
                    whole=whole,
                )
            if isinstance(answer, indexquery.Ranked) and answer.keep is not None and not found.moved:
                _keep_rows(index, *answer.keep, answer.sessions)  # the checked rows, for the next query
            if isinstance(answer, indexquery.Ranked) and answer.keep_objects is not None and not found.moved:
                _keep_objects(index, *answer.keep_objects, answer.sessions)  # every session's object, likewise
                answer = answer._replace(keep_objects=None)
            return answer

        try:
            answer = self._fresh_answer(ranked, lambda: len(infos()))
        except FullTextQueryError as error:
            raise ValueError(f"bad full-text query: {error}") from error
        finally:
            found.close()  # a child not waited for (an error): stopped
        if answer is not None and found.moved:
            answer = answer._replace(answer_key=None)  # (made from files found again: not kept)
        if answer is not None:
            # (from the head: an answer stored for these files never decoded them)
            self.last_discovery = found.known() or self.last_discovery
            head = found.head()
            skipped = [*head.skipped, *((Path(path), reason) for path, reason in answer.skipped)]
            self.last_stats = RefreshStats(files=head.files, reused=answer.sessions, skipped=skipped)
        return answer

    def ranked_summaries(self, query: Query, cwd: str | None = None) -> list[SessionSummary] | None:
        """`matching(query, cwd)` from `ranked`: the same sessions in the same order, decoded
        for the hits alone (`ls --query`'s rows), with no row loaded and filtered for the
        others.  None when `ranked` cannot answer (the caller asks `matching`)."""
        answer = self.ranked(query, cwd)
        return None if answer is None else self._summaries_of(answer.rows)

    def _scope(self, target: str | None) -> bytes:
        """These roots' `index.scope_key` for project `target` (None: all projects, the scope
        queries keep their rows and every session's objects under: `core.indexquery`)."""
        roots = [os.fspath(root) for root in self.roots] if self.explicit_roots else []
        return scope_key(roots, target)

    @property
    def cache_dir(self) -> Path | None:
        """The cache dir this catalog was given (None: the default, `index.default_cache_dir`)."""
        return self._cache_dir

    def copy(self, found: Pending | None = None) -> Catalog:
        """A catalog of the same roots and cache with nothing open, given its files `found`
        already (`remake_answers`: each query ranked as a new `ls` would, on these files)."""
        return Catalog(
            self.roots if self.explicit_roots else None, cache_dir=self._cache_dir, found=found, heal=self.heal
        )

    def refresh_kept(self, infos: list[FileInfo], *, key: bytes | None = None, vouch: bool = False) -> Refreshed | None:
        """The rows queries keep and every session's objects, brought up to date for the files
        `infos` (discovery's listing now, in its order) from those kept before a few changed
        (`indexquery.refresh_kept`) and kept, under the key a query on these files computes:
        the resident watcher's work once the files are quiet, so a query after an agent's
        append finds them made.  `key`: `fileskey.files_key(infos)` if made already;
        `vouch`: their files then checked once and noted (`indexquery.vouch_kept`), so the
        query does not.  None when nothing was made."""
        from . import indexquery
        from .fileskey import files_key
        from .keptfile import SETTLED_NS

        index = self.index
        if index is None or index.in_memory or index.rebuilt_reason is not None:
            return None  # (no shared index to keep them in)
        with contextlib.suppress(*INDEX_ERRORS):  # (a cache: what failed is made by the next query)
            with index.snapshot():
                index.read_through_cache()
                files = key if key is not None else files_key(infos)
                refreshed = indexquery.refresh_kept(index, self._scope(None), files, infos)
            if refreshed is not None:
                _keep_rows(index, *refreshed.keep, refreshed.sessions)
                if refreshed.keep_objects is not None:
                    _keep_objects(index, *refreshed.keep_objects, refreshed.sessions)
                    made = refreshed.keep_objects[2].objects
                    if made.source is not None:
                        made.source.close()
                if vouch:  # once their files settled: checked as a query reads them, and noted
                    time.sleep(SETTLED_NS / 1e9 + 0.01)
                    with index.snapshot():
                        indexquery.vouch_kept(index, self._scope(None))
            return refreshed
        return None

    def remake_answers(self, found: Discovery, key: bytes, limit: int) -> list[str]:
        """The answers of the `limit` queries last kept for all projects of these roots, made
        again and kept whole for the files `found` (`key`: their files' key), as the second
        asking of each on them keeps it: a word asked again after an agent's append is then
        that answer (the resident watcher's work once the files are quiet, after
        `refresh_kept`: each ranks on the rows and objects brought up to date).  The texts
        made again."""
        from collections import deque

        from .discovery import Head
        from .search import parse_query

        index = self.index
        if index is None or index.in_memory:
            return []
        prefix = _QUERY_JSON_SCOPE + self._scope(None) + b"\0"
        try:
            scopes = [scope for scope in index.listing_scopes(_QUERY_JSON_SCOPE) if scope.startswith(prefix)]
        except INDEX_ERRORS:
            return []
        made: list[str] = []
        for scope in scopes[:limit]:
            text = scope[len(prefix) :].decode("utf-8", "surrogatepass")
            # (these files, as a query finds them: their key made once, the listing never copied)
            ahead = Pending.decoded_later(Head(key, len(found.infos), found.skipped), lambda: found)
            catalog = self.copy(found=ahead)
            try:
                ranked = catalog.ranked(parse_query(text), None, stored_as=text, whole=True)
                if ranked is not None:
                    deque(catalog.query_json_parts(ranked), maxlen=0)  # (printed nowhere: kept)
                    made.append(text)
            except ValueError:
                continue  # (a query that no longer parses)
            finally:
                catalog.close()
        return made

    def query_json_parts(self, ranked: Ranked) -> Iterator[bytes]:
        """`ranked` as `seance ls --json --query`'s array without marks, in parts that
        concatenate to it (as `ls_json_parts`'s; `core.marks.marked_pieces` marks them), made
        from `pi_json_chunks` as they are written.  An answer asked for with `stored_as` is
        kept once it is all out (`Ranked.answer_key`): the first time only its key, the
        second time on the same files, if no bigger than `ANSWER_BUDGET`, the answer itself:
        a script or picker asking the same query again gets it with one stat per file."""
        from .marks import unmarked_objects
        from .queryobjects import runs

        if ranked.printed is not None:
            yield ranked.printed
            return
        if ranked.parts is not None:
            yield b"".join(ranked.parts)
            return
        key = ranked.answer_key
        if ranked.store is not None and ranked.positions is not None:
            # printed from every session's stored objects: kept as runs of them
            found = runs(ranked.positions)
            parts = ranked.store.parts(found)
            yield from parts
            self.keep_stored_answer(ranked, found)
            return
        kept: list[bytes] | None = [] if key is not None and key[2] else None
        size, opened = 0, False
        for chunk in self.pi_json_chunks(ranked):
            if not chunk:
                continue
            part = (b"," if opened else b"[") + unmarked_objects(chunk)
            opened = True
            if kept is not None:
                size += len(part)
                if size <= ANSWER_BUDGET:
                    kept.append(part)
                else:
                    kept = None  # too big: printed, never stored
            yield part
        closing = b"]" if opened else b"[]"
        yield closing
        index = self.index
        if index is not None and key is not None and (kept is not None or not key[2]):
            # a shortcut for next time only: a failure to store is no failure
            with contextlib.suppress(*INDEX_ERRORS):
                answer = [*kept, closing] if kept is not None else []
                index.put_listing(key[0], key[1], answer, ranked.sessions, ranked.skipped, ANSWERS_KEPT)

    def query_json_views(
        self, ranked: Ranked
    ) -> tuple[list[bytes | memoryview], tuple[Any, list[bytes | tuple[int, int]]] | None, list[int]] | None:
        """`query_json_parts(ranked)` as views of every session's stored objects, when it is
        printed from them (`Ranked.store`) and `text.json_safe` leaves them as they are: the
        views, where they lie in the objects' file (`Ranked.spliced`), and the answer's runs
        of them, for `keep_stored_answer` once they are written.  A word's first asking is
        then written as its kept answer is (`cli.output.write_json_views`): 71 MB at
        100,000 sessions neither joined nor copied.  None: printed from `query_json_parts`."""
        from .queryobjects import runs

        store, positions = ranked.store, ranked.positions
        if store is None or positions is None or not store.safe:
            return None
        found = runs(positions)
        spliced = (store.source, store.spans(found)) if store.source is not None else None
        return store.views(found), spliced, found

    def keep_stored_answer(self, ranked: Ranked, found: list[int]) -> None:
        """An answer printed from every session's stored objects (`Ranked.store`, its runs
        `found` of them) kept under `Ranked.answer_key`: the first time its key alone, the
        second as its runs.  Never as a copy of the objects: they are kept already, and
        copying them (7 MB at 10,000 sessions) made a word's second asking ~30 ms slower
        than its first, while the third is as quick from the runs."""
        from .queryobjects import compact, runs_scope

        index, key, store = self.index, ranked.answer_key, ranked.store
        if index is None or key is None or store is None:
            return
        with contextlib.suppress(*INDEX_ERRORS):  # (the key alone the first time, as `query_json_parts`)
            index.put_listing(key[0], key[1], [], ranked.sessions, ranked.skipped, ANSWERS_KEPT)
            if key[2]:
                made = [compact(store.tag, found)]
                index.put_listing(runs_scope(key[0]), key[1], made, ranked.sessions, ranked.skipped, ANSWERS_KEPT)

    def pi_json_chunks(self, ranked: Ranked, size: int = 1024) -> Iterator[list[bytes]]:
        """The stored `ls --json` objects of `ranked`, in its order, `size` at a time (so an
        answer of 100,000 sessions is never in memory at once); a row that fails its check
        is not printed: its file is read again."""
        read = ranked.objects or {}
        for start in range(0, len(ranked.rows), size):
            rows = ranked.rows[start : start + size]
            # the others' were read (and checked) in the ranking
            unread = [row for row in rows if row[13] is None and row[0] not in read]
            stored = self._guarded(lambda index: index.checked_payloads(unread) if index is not None else {})  # noqa: B023
            objects = []
            for row in rows:
                data = row[13] if row[13] is not None else read.get(row[0]) or stored.get(row[0])
                if data is None:
                    summary = self.summary(Path(row[1]))
                    if summary is None:  # no longer a session
                        continue
                    data = encode_pi_json(summary)
                objects.append(data)
            yield objects

    def _in_scope(self, items: list[tuple[int, str, Any]], cwd: str | None) -> list[Any]:
        if cwd is None:
            return [payload for _modified, _cwd, payload in items]
        target = _resolved(cwd)
        return [payload for _modified, item_cwd, payload in items if item_cwd and _resolved(item_cwd) == target]

    def _refreshed(
        self,
        progress: Progress | None,
        cancel: Cancel | None,
        full_text: bool,
        as_json: bool,
        found: Discovery | None = None,
        *,
        lazy: bool = False,
        only: Callable[[str], bool] | None = None,
    ) -> list[tuple[int, str, Any]]:
        with self._refresh_lock:
            return self._guarded(
                lambda index: self._refresh(progress, cancel, full_text, as_json, index, found, lazy=lazy, only=only)
            )

    def _refresh(
        self,
        progress: Progress | None,
        cancel: Cancel | None,
        full_text: bool,
        as_json: bool,
        index: Index | None,
        found: Discovery | None = None,
        *,
        lazy: bool = False,
        keep: bool = True,
        only: Callable[[str], bool] | None = None,
    ) -> list[tuple[int, str, Any]]:
        """(modified_ms, cwd, summary or ls-json bytes) of every session, newest first
        (`found`: a discovery just made, else one is made now).  `lazy`: an unchanged
        session's payload is its index row, undecoded (its summary blob, or with `as_json`
        its ls-json object, at [7]; its stored title for `stored_title`), a session read
        just now's its summary.  Without `keep` the payload is None: the caller only counts
        (`update_index`).  `only`: the cwds whose unchanged sessions are listed (the others'
        rows are not decoded); the caller still filters those read just now."""
        started = time.perf_counter()
        decoded, self._decoded = self._decoded, {}  # (taken by this refresh, whatever it lists)
        found = found if found is not None else self.discover()
        infos = found.infos
        stats = RefreshStats(files=len(infos), skipped=list(found.skipped))  # a copy: it grows below
        rows = index.rows("pi_json" if as_json else "summary", titles=lazy) if index is not None else {}
        # An unchanged file's row is found by its stat in C (`FileInfo` == its stat key): no
        # per-file Python on a warm listing.  Rows are (path, size, mtime_ns, session, reason,
        # modified_ms, cwd, payload, text_seq, check), each one checked by `rows`.
        matched = list(map(rows.get, infos)) if rows else [None] * len(infos)
        if full_text:  # a session whose text was never indexed is read again
            matched = [row if row is None or row[8] >= 0 or not row[3] else None for row in matched]
        todo = [info for info, row in zip(infos, matched, strict=True) if row is None]
        reused = [row for row in matched if row is not None]
        sessions = [row for row in reused if row[3] and row[7] is not None]
        listed = sessions if only is None else [row for row in sessions if only(row[6])]
        items: list[tuple[int, str, Any]]
        if not keep:
            items = [(row[5], row[6], None) for row in listed]
        elif lazy:
            items = [(row[5], row[6], row) for row in listed]
        elif as_json:
            items = [(row[5], row[6], row[7]) for row in listed]
        elif decoded:  # summaries a stored listing decoded from these very rows: the same objects
            items = [(row[5], row[6], _decoded_for(row, decoded)) for row in listed]
        else:
            items = [(row[5], row[6], decode_summary(row[7])) for row in listed]
        stats.reused = len(sessions)  # unchanged sessions (of every project); unchanged non-sessions count as skipped
        if len(sessions) < len(reused):
            stats.skipped.extend(
                (Path(row[0]), row[4] or "not a session") for row in reused if not (row[3] and row[7] is not None)
            )
        if todo:
            known = {path for path, *_ in rows} if rows else set()
            changed = [
                (info, index.row(info.path) if index is not None and info.path in known else None) for info in todo
            ]
            cwds: dict[str, str] = {}  # one string per project, not one per session read (each is unpickled anew)
            for summary in self._read_changed(changed, stats, progress, cancel, full_text, len(infos), index):
                payload = None if not keep else encode_pi_json(summary) if as_json and not lazy else summary
                items.append((int(summary.modified_ms), cwds.setdefault(summary.cwd, summary.cwd), payload))
        if index is not None and len(reused) < len(rows):  # some indexed file was not seen unchanged
            self._prune(index, rows, found)
        items.sort(key=itemgetter(0), reverse=True)
        stats.seconds = time.perf_counter() - started
        self.last_stats = stats
        return items

    def _read_changed(
        self,
        todo: list[tuple[FileInfo, Row | None]],
        stats: RefreshStats,
        progress: Progress | None,
        cancel: Cancel | None,
        full_text: bool,
        total: int,
        index: Index | None,
    ) -> Iterator[SessionSummary]:
        """Scan the changed files (appended ones from their saved offset), index them and yield
        their summaries as they come (a caller keeps what it needs of each: memory must not
        grow with the corpus)."""
        pending: list[tuple] = []
        last_commit = time.perf_counter()
        done = total - len(todo)
        outcomes = self._outcomes(todo, full_text, index)
        every_files, every_seconds, every_chars = _COMMIT_EVERY_FILES, _COMMIT_EVERY_SECONDS, _BULK_COMMIT_CHARS
        chars = 0  # text characters pending
        with contextlib.ExitStack() as bulk:
            if index is not None and len(todo) >= _BULK_FILES:
                bulk.enter_context(index.bulk())
                every_files, every_seconds = _BULK_COMMIT_FILES, _BULK_COMMIT_SECONDS
            try:
                for info, row, outcome in outcomes:
                    if cancel is not None and cancel():
                        raise Cancelled()
                    if outcome[0] == "ok":
                        _, summary, state, continued, texts = outcome
                        yield summary
                        if continued:
                            stats.appended += 1
                        else:
                            stats.read += 1
                        text_seq, since = (row.text_seq, (row.size, row.mtime_ns)) if row is not None else (-1, None)
                        pending.append(("ok", summary, state, texts, continued, text_seq, since))
                        if texts:
                            chars += sum(len(body) for _field, body in texts)
                    else:
                        if outcome[0] == "not":
                            pending.append(("not", info.path, info.size, info.mtime_ns, outcome[1]))
                        else:
                            stats.failed += 1
                        stats.skipped.append((Path(info.path), outcome[1]))
                    done += 1
                    if progress is not None:
                        progress(done, total)
                    now = time.perf_counter()
                    if len(pending) >= every_files or now - last_commit > every_seconds or chars >= every_chars:
                        _flush(index, pending)
                        last_commit, chars = now, 0
            finally:  # on cancel too: what was read so far is kept
                outcomes.close()
                _flush(index, pending)

    def _outcomes(
        self, todo: list[tuple[FileInfo, Row | None]], full_text: bool, index: Index | None
    ) -> Generator[tuple[FileInfo, Row | None, tuple], None, None]:
        """(file, row, outcome) per changed file (`scanpool.scan_one`'s outcome).  Many files
        are scanned, text and all, in worker processes (see `scanpool`) while this process
        writes the index: parsing and the FTS5 writes each get a core."""
        from .metadata import MetaState

        jobs: list[tuple[FileInfo, Row | None, bytes | None, bool]] = []
        for info, row in todo:
            want_text = index is not None and (full_text or (row is not None and row.text_seq >= 0))
            saved = None
            # Continue from the saved state, unless text is wanted and was never indexed.
            if index is not None and row is not None and row.session and not (want_text and row.text_seq < 0):
                saved = index.state(row.file_id)
            jobs.append((info, row, saved, want_text))
        if self.workers > 1 and len(jobs) >= scanpool.MIN_FILES:
            items = [(info, saved, want_text) for info, _row, saved, want_text in jobs]
            rows = iter(jobs)
            # The window covers a bulk commit: while this process writes one, the workers scan
            # the next one's files (with the default window they sat idle through every commit).
            ahead = max(scanpool.AHEAD, _BULK_COMMIT_FILES // (scanpool.CHUNK * self.workers))
            for chunk, results in scanpool.map_chunks(scanpool.scan_chunk, items, self.workers, ahead):
                for (info, _saved, _want), result in zip(chunk, results, strict=True):
                    yield info, next(rows)[1], result
            return
        for info, row, saved, want_text in jobs:
            state = MetaState.from_json(saved) if saved else None
            yield info, row, scanpool.scan_one(info, state, want_text)

    def _prune(self, index: Index, rows: dict[tuple[str, int, int], tuple], found: Discovery) -> None:
        """Drop rows of files that are gone from the roots just scanned."""
        present = {info.path for info in found.infos}
        roots = [os.path.abspath(root) + os.sep for root in self.roots]
        gone = [path for path, *_ in rows if path not in present and any(path.startswith(root) for root in roots)]
        if gone:
            with index.writing() as writer:
                for path in gone:
                    writer.forget(path)

    # -- single files, search, forgetting ----------------------------------------------------

    def summary(self, path: Path) -> SessionSummary | None:
        """Exact summary of one file, re-indexing it (full text included: the picker's watcher
        calls this for a new or appended session, which must become searchable) if it changed;
        None if not a session or gone."""
        info = stat_file(os.path.abspath(path))
        if isinstance(info, str):
            return None

        def summarised(index: Index | None) -> SessionSummary | None:
            row = index.row(info.path) if index is not None else None
            if row is not None and row.size == info.size and row.mtime_ns == info.mtime_ns:
                return decode_summary(row.payload) if row.session and row.payload else None
            found = list(self._read_changed([(info, row)], RefreshStats(), None, None, True, 1, index))
            return found[0] if found else None

        return self._guarded(summarised)

    def search_text(self, query: Query | str, limit: int | None = None, *, include_cwd: bool = True) -> list[TextHit]:
        """Full-text hits, one per session, for a query in seance's query language (parsed
        here when given as text; its words and phrases are what the index is asked for):
        every session where each word or phrase matches in some indexed field (`limit`: at
        most that many).

        Unranked (callers rank by their own tiers and recency): a session's name, label, cwd
        or id row wins over its text.  `include_cwd=False` leaves the cwd out (one project's
        scope, where the cwd does not count), so the session's text hit is the one reported.
        Searches what `refresh()` indexed (text is indexed by `refresh()`, not by `list()`;
        an index rebuilt here because it was damaged is given its text again first).  Raises
        `ValueError` for a query that cannot be used; without a usable index, finds nothing.
        """
        from .search import parse_query

        full_text = (parse_query(query) if isinstance(query, str) else query).full_text()
        if full_text is None:
            return []  # no word or phrase the index could look for

        return self._full_text(lambda index: index.search(full_text, limit, include_cwd=include_cwd), [])

    def text_hits(
        self, query: Query, *, include_cwd: bool = True, within: Collection[str] | None = None
    ) -> Mapping[str, TextHit]:
        """`search_text`'s every hit as a lazy mapping, session path -> `TextHit` (made when
        asked for): what the picker ranks on each keystroke (`Index.search_by_path`; `within`:
        the paths it will ask about, so the index may skip other projects').  Raises
        `ValueError` for a query that cannot be used; without a usable index, finds nothing."""
        full_text = query.full_text()
        if full_text is None:
            return {}

        def search(index: Index) -> Mapping[str, TextHit]:
            return index.search_by_path(full_text, include_cwd=include_cwd, within=within)

        return self._full_text(search, {})

    def text_excluded(
        self, query: Query, *, include_cwd: bool = True, within: Collection[str] | None = None
    ) -> frozenset[str]:
        """The sessions whose text the index finds a negated word or phrase of `query` in
        (`Query.excluding`): left out of its answer, however their title matches it.  Raises
        `ValueError` for a query that cannot be used; without a usable index, none."""
        excluding = query.excluding()
        if not excluding:
            return frozenset()

        def search(index: Index) -> frozenset[str]:
            found: set[str] = set()
            for asked in excluding:
                found.update(index.search_by_path(asked, include_cwd=include_cwd, within=within))
            return frozenset(found)

        return self._full_text(search, frozenset())

    def _full_text(self, search: Callable[[Index], T], nothing: T) -> T:
        """`search(index)`, guarded (`nothing` without a usable index); an index rebuilt
        because it was damaged is given its text again first.  Raises `ValueError` for a
        query FTS5 cannot use."""

        def searched(index: Index | None) -> T:
            return search(index) if index is not None else nothing

        def reindexed(index: Index) -> None:
            with self._refresh_lock:
                self._refresh(None, None, True, False, index)

        try:
            return self._guarded(searched, after_rebuild=reindexed)
        except FullTextQueryError as error:
            raise ValueError(f"bad full-text query: {error}") from error

    def forget(self, path: Path) -> None:
        """Drop a file from the index (after it was deleted or moved away; the next refresh
        prunes it anyway if this cannot)."""

        def forgotten(index: Index | None) -> None:
            if index is not None:
                with index.writing() as writer:
                    writer.forget(os.path.abspath(path))

        self._guarded(forgotten)

    # -- writes: the explicit actions, with the index kept in step -------------------------------

    def trash(
        self,
        path: str | os.PathLike[str],
        *,
        force: bool = False,
        open_session: str | os.PathLike[str] | None = None,
        active_seconds: float | None = None,
        on_reserved: Callable[[TrashReceipt], None] | None = None,
    ) -> TrashReceipt:
        """Move a session to the Trash (`core.trash.trash_session`, its refusals raised as
        `TrashError`), then drop it from the index.  The one trash-then-forget, for the
        picker's ctrl+d and `seance rm` alike."""
        from .trash import ACTIVE_SECONDS, trash_session

        receipt = trash_session(
            path,
            open_session=open_session,
            trash=self.trash_dir,
            force=force,
            active_seconds=ACTIVE_SECONDS if active_seconds is None else active_seconds,
            on_reserved=on_reserved,
        )
        self._forget_quietly(path)
        return receipt

    def restore(self, receipt: TrashReceipt, notes: list[str] | None = None) -> SessionSummary | None:
        """Undo a `trash` (`core.trash.undo`, `TrashError` when it cannot; `notes` as there) and
        index the restored session again; returns its summary (None if it no longer reads as one)."""
        from .trash import undo

        undo(receipt, notes)
        return self._summary_quietly(receipt.session.original)

    def rename(self, path: str | os.PathLike[str], name: str) -> SessionSummary | None:
        """Name a session (`core.writes.rename_session`; `SessionError` when it cannot) and
        return its summary as re-indexed (None if it could not be read back)."""
        from .writes import rename_session

        rename_session(path, name)
        return self._summary_quietly(path)

    def _forget_quietly(self, path: str | os.PathLike[str]) -> None:
        try:
            self.forget(Path(path))
        except Exception:  # the file has moved already; the next refresh prunes the index anyway
            pass

    def _summary_quietly(self, path: str | os.PathLike[str]) -> SessionSummary | None:
        try:
            return self.summary(Path(path))
        except Exception:  # the write is done; the next refresh reads the file
            return None

    def first_screen(self, cwd: str | None, count: int) -> list[SessionSummary]:
        """On a cold index, the newest `count` files' 4 KB prefixes (in `cwd`; None = all), so
        rows appear before the full listing; [] when there are no more files than that."""
        from .prefix import quick_summaries

        infos = sorted(self.discover().infos, key=lambda info: info.mtime_ns, reverse=True)
        if len(infos) <= count:
            return []
        first = quick_summaries(infos[:count])
        return in_project(first, cwd) if cwd is not None else first

    def stored(self, cwd: str | None, *, most: int | None = None, whole: bool = False) -> list[SessionSummary] | None:
        """The project in `cwd` (None: every project) as the index last saw it, for a first
        screen before `refresh` (`core.firstpaint`); None when the index cannot say (or holds
        more than `most` files).  `whole`: every session, not only the first screens (with
        `most`: the picker's other scope, listed whole while the refresh runs).  The answer
        `prefetch_stored` started for `cwd` is taken (once) rather than made again; with `most`,
        the index rows read for the first screens are kept for the whole listing that follows
        (`firstpaint.StoredRead`), until that listing or the next `refresh` takes them."""
        from .firstpaint import StoredRead, stored_listing

        if not whole:
            prefetched, self._prefetch = self._prefetch, None
            if prefetched is not None and prefetched.cwd == cwd:
                return prefetched.result()
            if most is None:
                return stored_listing(self, cwd)
            read = StoredRead.of(self, cwd, most=most)  # kept: the whole listing may follow (`StoredRead`)
            self._stored_read = None if read is None else (cwd, read)
            return None if read is None else read.listing()
        kept, self._stored_read = self._stored_read, None
        if kept is not None and kept[0] == cwd:
            return kept[1].listing(sys.maxsize)
        return stored_listing(self, cwd, sys.maxsize, most=most)

    def keep_decoded(self, decoded: Mapping[str, tuple[tuple[int, int, int], SessionSummary]]) -> None:
        """Summaries a stored listing decoded, as path -> ((size, mtime_ns, check) of its index
        row, summary): the next `refresh` reuses each for its row if the row is unchanged (the
        same size, mtime and check) instead of decoding it again, so a refresh after the
        picker's whole stored listings returns the same objects (the picker then compares
        them by identity).  Taken, and forgotten, by that refresh."""
        self._decoded.update(decoded)

    def prefetched(self, cwd: str | None) -> bool:
        """Whether `prefetch_stored(cwd)` started the answer `stored(cwd)` will take."""
        return self._prefetch is not None and self._prefetch.cwd == cwd

    def prefetch_stored(self, cwd: str | None, *, background: bool = True) -> None:
        """Start `stored(cwd)` in a thread now (the index read and the directory listing do not
        hold the GIL), or (`background=False`) make it now, for `stored(cwd)` to take."""
        from .firstpaint import Prefetch, stored_listing

        self._prefetch = Prefetch(cwd, lambda: stored_listing(self, cwd), background=background)

    def close(self) -> None:
        ahead, self._found_ahead = self._found_ahead, None
        if ahead is not None:  # a discovery started ahead and never needed: stopped
            ahead.close()
        for index in [*self._dropped, *([self._index] if self._index is not None else [])]:
            index.close()


class SessionSource(Protocol):
    """What the picker screen and its watcher need of a catalog (`Catalog` is the one there is;
    a host may hand in its own).  Every method may be called from a worker thread."""

    roots: list[Path]
    last_stats: RefreshStats

    @property
    def index_problem(self) -> str | None: ...

    def refresh(self, progress: Progress | None = None, cancel: Cancel | None = None) -> list[SessionSummary]: ...

    def quick(self, cwd: str | None = None) -> list[SessionSummary]: ...

    def first_screen(self, cwd: str | None, count: int) -> list[SessionSummary]: ...

    def summary(self, path: Path) -> SessionSummary | None: ...

    def search_text(
        self, query: Query | str, limit: int | None = None, *, include_cwd: bool = True
    ) -> list[TextHit]: ...

    def text_hits(
        self, query: Query, *, include_cwd: bool = True, within: Collection[str] | None = None
    ) -> Mapping[str, TextHit]: ...

    def text_excluded(
        self, query: Query, *, include_cwd: bool = True, within: Collection[str] | None = None
    ) -> frozenset[str]: ...

    def forget(self, path: Path) -> None: ...

    def trash(
        self,
        path: str | os.PathLike[str],
        *,
        force: bool = False,
        open_session: str | os.PathLike[str] | None = None,
        active_seconds: float | None = None,
    ) -> TrashReceipt: ...

    def restore(self, receipt: TrashReceipt, notes: list[str] | None = None) -> SessionSummary | None: ...

    def rename(self, path: str | os.PathLike[str], name: str) -> SessionSummary | None: ...


__all__ = ["Cancelled", "Catalog", "RefreshStats", "SessionSource", "in_project", "same_dir"]
