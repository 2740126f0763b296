"""The picker's first screen from what the index already knows, before the exact refresh (issue 14).

A warm picker used to discover every file, check every index row and decode every summary
before its first row: 0.9 s at 10,000 sessions, 4.9 s at 100,000.  What the first screen of
one project needs is that project's sessions, and the index has them: its rows carry each
session's header cwd, so

* `stored_listing(catalog, cwd)`: the project's (cwd None: every project's) newest sessions
  as the index last saw them
  (`FIRST_SESSIONS` of them, a few screens' worth, and the sessions they are child sessions
  of, decoded; the rest only counted: one scan of the index without reading a blob), checked
  against a listing of the directories they live in: a file that is gone is left out, a file
  the index has not seen yet (a session started since) is read from its 4 KB prefix, as the
  quick listing does.  A file that changed since it was indexed shows its indexed state
  until the exact refresh, which follows at once, replaces the listing (the picker keeps its
  cursor on the same session).  None when the index cannot say (none, damaged, locked,
  nothing stored for that project): the caller lists as before.
* `known_session(catalog)`: whether some session the index holds under the roots is still
  there, unchanged (a stat per file, at most a few): `seance pick`'s "any sessions at all?"
  check without discovering every file first.

Nothing here writes: the index is read, session files are listed, stat-ed and (new ones)
read 4 KB.  Any error of the index or the file system is "cannot say", never an exception:
the exact refresh is the truth, and it handles them.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterable
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from .discovery import SESSION_SUFFIX, FileInfo, stat_file
from .index import decode_summary
from .listing import MAX_FOLDER_DEPTH, folder_parent

if TYPE_CHECKING:
    from .catalog import Catalog
    from .model import SessionSummary

FIRST_SESSIONS = 300
"""The newest sessions of a project a first paint reads (with their parents): a few screens'
worth, whatever the project's size; the exact refresh brings the rest."""
NEW_FILES_READ = 256
"""At most this many files the index has not seen are read for the first screen (more: the
index is far behind, and the exact refresh's quick listing handles it)."""

KNOWN_CHECKED = 64


def _root_prefixes(catalog: Catalog) -> list[str]:
    return [os.path.join(os.path.abspath(root), "") for root in catalog.roots]


class StoredSessions(list):  # type: ignore[type-arg]  # list[SessionSummary]
    """The sessions of a first paint, newest first; `total`: how many the project has (the
    newest `FIRST_SESSIONS` and their parents are read, the rest are only counted)."""

    total: int = 0


def stored_listing(
    catalog: Catalog, cwd: str | None, limit: int | None = None, *, most: int | None = None
) -> StoredSessions | None:
    """The project in `cwd` (None: every project) as the index knows it, newest first: its
    newest `limit` sessions (`FIRST_SESSIONS`), the sessions they are child sessions of, and
    the files the index has not seen yet (see the module); None when the index cannot say,
    or (`most`) may hold more than `most` files: every project's listing costs CPU in
    proportion (0.35 s at 100,000 sessions), too much for one made only in case."""
    read = StoredRead.of(catalog, cwd, most=most)
    return None if read is None else read.listing(limit)


class StoredRead:
    """One read of a scope's index rows (`Index.sessions_in`) for its stored listings: the
    first screens (`listing()`), then the whole of it (`listing(sys.maxsize)`, the picker's
    other scope, made in case of a Tab) without reading the index rows again, listing the
    directories again (a stat each: one whose entries changed is listed again) or decoding
    the first screens' summaries again.  The index rows stay as read: a file indexed between
    the two listings shows as new (read from its 4 KB prefix), as one indexed after them;
    the exact refresh follows and has the last word."""

    def __init__(self, catalog: Catalog, cwd: str | None, index: Any, rows: list[tuple[int, str, int]]) -> None:
        self.catalog, self.cwd, self.index = catalog, cwd, index
        self.rows = rows  # (file_id, path, modified_ms), newest first
        self.scope = {row[1] for row in rows}
        self.names: dict[str, set[str]] = {}  # directory -> the *.jsonl names in it, listed once
        self.stamps: dict[str, int] = {}  # directory -> its mtime before it was listed (`_list`)
        self.decoded: dict[str, tuple[tuple[int, int, int], SessionSummary]] = {}  # path -> (its row's check, summary)

    @classmethod
    def of(cls, catalog: Catalog, cwd: str | None, *, most: int | None = None) -> StoredRead | None:
        """The rows of `cwd`'s project (None: every project) under the catalog's roots, or None
        when the index cannot say (or, `most`, may hold more than `most` files)."""
        index = catalog.index
        if index is None:
            return None
        roots = tuple(_root_prefixes(catalog))
        try:
            if most is not None and index.files_bound() > most:
                return None
            found = index.sessions_in(None if cwd is None else _spellings(cwd))
            rows = [row for row in found if row[1].startswith(roots)]
        except (sqlite3.Error, TypeError, ValueError):
            return None
        if not rows:
            return None
        rows.sort(key=itemgetter(2), reverse=True)
        return cls(catalog, cwd, index, rows)

    def listing(self, limit: int | None = None) -> StoredSessions | None:
        """The newest `limit` sessions (`FIRST_SESSIONS`; `sys.maxsize`: all of them) with
        their parents and the files the index has not seen (see `stored_listing`)."""
        limit = FIRST_SESSIONS if limit is None else limit
        rows, index = self.rows, self.index
        head = rows[: 2 * limit]  # the first screens, with room for files gone since
        if not self._list({row[1].rpartition(os.sep)[0] for row in head}):  # where the first screens live
            return None
        names, scope = self.names, self.scope
        listed = {folder + os.sep + name for folder, found in names.items() for name in found}
        shown = [row for row in head if row[1] in listed or row[1].rpartition(os.sep)[0] not in names]
        arrived = listed - scope  # sessions the index has not seen (or other projects' files)
        try:
            checked = index.checked_summaries(file_ids=[row[0] for row in shown[:limit]])
            first = self._decode(checked)
            self.catalog.keep_decoded(self.decoded)  # (a dict's update: ~1 ms for 10,000, not ~25 by pairs)
            if len(head) < len(rows) or len(shown) > limit:  # (a whole listing has every parent there is)
                first += _parents_of(first, scope, list(names), index)
        except (sqlite3.Error, ValueError, TypeError):  # a blob that passed its check but does not decode
            return None
        new: list[SessionSummary] = []
        if len(arrived) <= NEW_FILES_READ:
            from .catalog import in_project
            from .prefix import quick_summaries

            new = quick_summaries(_stat(arrived), text=False)
            new = new if self.cwd is None else in_project(new, self.cwd)
            first += new
        listing = StoredSessions(sorted(first, key=attrgetter("modified_ms"), reverse=True))
        listing.total = len(rows) - (len(head) - len(shown)) + len(new)  # files gone further down: not counted
        return listing

    def _list(self, directories: set[str]) -> bool:
        """List the directories not listed yet, and those listed whose entries changed since
        (their mtime: a session created or deleted between the two listings); False: one
        cannot be listed."""
        stamps = self.stamps
        try:
            known = directories & stamps.keys()
            changed = {folder for folder in known if os.stat(folder).st_mtime_ns != stamps[folder]}
            wanted = (directories - stamps.keys()) | changed
            stamped = {folder: os.stat(folder).st_mtime_ns for folder in wanted}  # (before the listing)
        except OSError:
            return False
        more = _listed(wanted)
        if more is None:
            return False
        self.names.update(more)
        stamps.update(stamped)
        return True

    def _decode(self, checked: list[tuple[str, tuple[int, int, int], bytes]]) -> list[SessionSummary]:
        """The summaries of `checked` rows, each decoded once per read (a row seen by an earlier
        listing, unchanged, gives the same object)."""
        decoded = self.decoded
        summaries: list[SessionSummary] = []
        for path, check, blob in checked:
            kept = decoded.get(path)
            if kept is None or kept[0] != check:
                kept = decoded[path] = (check, decode_summary(blob))
            summaries.append(kept[1])
        return summaries


def _spellings(cwd: str) -> list[str]:
    """The header cwds that name the project in `cwd` as it is usually written (the exact
    refresh compares resolved paths and finds any other spelling)."""
    from .catalog import _resolved

    spellings = {cwd, _resolved(cwd)}
    return sorted(spellings | {spelling.rstrip(os.sep) + os.sep for spelling in spellings})


def _parents_of(
    summaries: list[SessionSummary], scope: set[str], directories: list[str], index: Any
) -> list[SessionSummary]:
    """The sessions (in `scope`, by path) that `summaries` are child sessions of and that are
    not among them, and theirs in turn: so the first screen hides or threads a child as the
    full listing will.  By folder, and by `parentSession` as a path (here, or the same
    bucket and file name in one of `directories`) or an id in pi's file names."""
    have = {summary.path for summary in summaries}
    by_id: dict[str, str] | None = None
    found: list[SessionSummary] = []
    wave = summaries
    for _depth in range(MAX_FOLDER_DEPTH):
        wanted: set[str] = set()
        for summary in wave:
            parent = folder_parent(summary.path, scope) or _moved(summary.parent_session or "", scope, directories)
            if parent is None and summary.parent_session and not summary.parent_session.endswith(SESSION_SUFFIX):
                if by_id is None:  # pi's `<timestamp>_<id>.jsonl`: the id after the last "_"
                    by_id = {path[path.rfind("_") + 1 : -len(SESSION_SUFFIX)]: path for path in scope}
                parent = by_id.get(summary.parent_session)
            if parent is not None and parent not in have:
                wanted.add(parent)
        if not wanted:
            break
        wave = [decode_summary(blob) for blob in index.summaries(paths=sorted(wanted))]
        have |= wanted
        found += wave
    return found


def _moved(reference: str, scope: set[str], directories: list[str]) -> str | None:
    """The session a `parentSession` path names: itself, or (written on another machine, or
    under an older home) the file of the same bucket and name in one of `directories`."""
    if not reference.endswith(SESSION_SUFFIX):
        return None
    if reference in scope:
        return reference
    bucket, _, name = reference.replace("\\", "/").rstrip("/").rpartition("/")
    bucket = bucket.rpartition("/")[2]
    for directory in directories:
        if directory.rpartition(os.sep)[2] == bucket:
            candidate = os.path.join(directory, name)
            if candidate in scope:
                return candidate
    return None


def _listed(directories: set[str]) -> dict[str, set[str]] | None:
    """The `*.jsonl` names directly in each directory (no stat), or None when one cannot be listed."""
    names: dict[str, set[str]] = {}
    for directory in directories:
        try:
            names[directory] = {name for name in os.listdir(directory) if name.endswith(SESSION_SUFFIX)}
        except OSError:
            return None
    return names


def _stat(paths: Iterable[str]) -> list[FileInfo]:
    """`FileInfo`s of the regular files among `paths` (the others are left out)."""
    return [info for path in paths if isinstance(info := stat_file(path), FileInfo)]


class Prefetch:
    """`make()` run in a daemon thread of its own from now on (or, not `background`, at once);
    `result()` waits for it (None if it failed: the caller lists as if nothing were stored)."""

    def __init__(
        self, cwd: str | None, make: Callable[[], list[SessionSummary] | None], *, background: bool = True
    ) -> None:
        self.cwd = cwd
        self._make = make
        self._result: list[SessionSummary] | None = None
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._run, name="seance-first-paint", daemon=True)
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        try:
            self._result = self._make()
        except Exception:  # cannot say: the exact refresh lists the files
            self._result = None

    def result(self) -> list[SessionSummary] | None:
        if self._thread is not None:
            self._thread.join()
        return self._result


def known_session(catalog: Catalog) -> bool:
    """True when a session the index holds under the roots is still there as indexed (so the
    roots hold at least one session); False when that cannot be told this way."""
    index = catalog.index
    if index is None:
        return False
    try:
        candidates = index.any_session(_root_prefixes(catalog), KNOWN_CHECKED)
    except (sqlite3.Error, TypeError, ValueError):
        return False
    for path, size, mtime_ns in candidates:
        try:
            info = os.stat(path)
        except (OSError, TypeError, ValueError):
            continue
        if info.st_size == size and info.st_mtime_ns == mtime_ns and stat.S_ISREG(info.st_mode):
            return True
    return False


__all__ = [
    "FIRST_SESSIONS",
    "NEW_FILES_READ",
    "Prefetch",
    "StoredRead",
    "StoredSessions",
    "known_session",
    "stored_listing",
]
