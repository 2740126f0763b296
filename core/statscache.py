"""Per-file session stats kept between runs, so `seance stats --all` reads only what changed.

A SQLite file of its own, `stats.sqlite` beside the index in the cache dir (never the
truth: deleting it loses nothing).  It is separate from `index.sqlite` on purpose: the
index's schema, healing and FTS content change on their own schedule; this one holds one
row per session file, keyed by `(path, size, mtime_ns)`, with the `SessionStats` as JSON and
a CRC-32 over all of it.  A row whose stamp or check does not match is computed again.
`PRAGMA user_version` is `SCHEMA_VERSION`; a file with another version (or one SQLite
cannot read, or found damaged by a later read or write) is emptied and started again.  If
the cache cannot be opened or written (a read-only home, a full disk) stats are computed
without it, and `problem` says why.

`collect_stats` is the one entry point: look up every file, read the missing ones (in
forked workers when asked, as the index does), store them, return them.  `message_keys`
reads back, for the few sessions forks were made from, the `keys` column (the fingerprints
of their assistant messages, with a CRC-32 of their own so that the common lookup need
not read them).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from . import scanpool
from .discovery import FileInfo
from .index import DAMAGED, default_cache_dir, index_fault, ranged_select, root_ranges
from .stats import SessionStats
from .text import json_bytes, unsurrogate

SCHEMA_VERSION = 3  # bump when `SessionStats` is computed or stored differently (2: keys, forks, sane times;
# 3: oh-my-pi's `model_usage` counted)
DB_NAME = "stats.sqlite"
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS stats (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mtime_ns INTEGER NOT NULL, brief BLOB, data BLOB, reason TEXT, checksum INTEGER NOT NULL, keys BLOB)",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)
_BATCH = 500
BUSY_TIMEOUT = 5.0  # seconds another run's write may hold the file before this run goes without it


# What one file gave: (brief stats JSON, full stats JSON, None, keys) or (None, None, why not
# a session, b"").
Answer = tuple[bytes | None, bytes | None, str | None, bytes]


def _check(path: str, size: int, mtime_ns: int, answer: Answer) -> int:
    brief, data, reason, _keys = answer
    salt = zlib.crc32(f"{path}\0{size}\0{mtime_ns}\0{reason}\0{len(brief or b'')}".encode(errors="replace"))
    return zlib.crc32(data or b"", zlib.crc32(brief or b"", salt))


def _keys_check(path: str, size: int, mtime_ns: int, keys: bytes) -> bytes:
    """The 4-byte CRC-32 stored before a row's keys (their own check: see the module doc)."""
    return zlib.crc32(keys, zlib.crc32(f"{path}\0{size}\0{mtime_ns}".encode(errors="replace"))).to_bytes(4, "little")


class StatsCache:
    """The stats cache file (one connection: use it from one thread)."""

    def __init__(self, cache_dir: Path | None = None, *, roots: Sequence[str] | None = None) -> None:
        """`roots` (spelled as `discovery.root_path` spells them): the sessions roots whose
        files this run looks up and prunes; the file is shared with every other root's runs,
        whose rows are neither read nor forgotten here (None: every row)."""
        self.path = (cache_dir if cache_dir is not None else default_cache_dir()) / DB_NAME
        self._ranges = None if roots is None else root_ranges(roots)
        self.problem: str | None = None
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open()
        except (sqlite3.Error, OSError) as first:
            if isinstance(first, sqlite3.Error) and index_fault(first) != DAMAGED:
                # another run holds it, or the disk is full or read-only: the file is fine (and
                # the other run's), never deleted
                self.problem = f"stats cache unavailable ({first}); computing without it"
                return
            self._delete_files()
            try:
                self._db = self._open()
                self.problem = f"stats cache was unreadable ({first}); started again"
            except (sqlite3.Error, OSError) as error:
                self.problem = f"stats cache unavailable ({error}); computing without it"

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("BEGIN IMMEDIATE")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA_VERSION:
                db.execute("DROP TABLE IF EXISTS stats")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.close()
            raise
        return db

    def _started_again(self, error: sqlite3.Error) -> bool:
        """A damaged file (not a locked one, a full disk or a read-only one) is started again
        at once: else a page damaged after the open failed every later run's writes and
        warned on every run, never healed.  True when a fresh, empty file is open."""
        if index_fault(error) != DAMAGED:
            return False
        self.close()
        self._delete_files()
        try:
            self._db = self._open()
        except (sqlite3.Error, OSError) as again:
            self.problem = f"stats cache unavailable ({again}); computing without it"
            return False
        self.problem = f"stats cache was damaged ({error}); started again"
        return True

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def lookup(self, infos: Sequence[FileInfo], *, full: bool = False) -> dict[str, SessionStats | str]:
        """The cached answer of each file whose stamp still matches: its stats (`full`, else
        the brief part `aggregate` needs: a tenth to decode), or why it is not a session."""
        if self._db is None:
            return {}
        wanted = {info.path: info for info in infos}
        found: dict[str, SessionStats | str] = {}
        try:
            rows = self._rows("path, size, mtime_ns, brief, data, reason, checksum")
        except sqlite3.Error as error:
            if not self._started_again(error):
                self.problem = f"stats cache unreadable ({error}); computing without it"
            return {}
        for path, size, mtime_ns, brief, data, reason, checksum in rows:
            info = wanted.get(path)
            if info is None or info.size != size or info.mtime_ns != mtime_ns:
                continue
            answer = (brief, data, reason, b"")
            blobs = isinstance(brief, bytes | None) and isinstance(data, bytes | None)
            if not blobs or not isinstance(reason, str | None):
                continue  # a value of the wrong type: a damaged row, read the file again
            if _check(path, size, mtime_ns, answer) != checksum:
                continue  # a damaged row: read the file again
            stored = data if full else brief
            try:
                found[path] = SessionStats.from_storage(orjson.loads(stored)) if stored is not None else str(reason)
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                continue
        return found

    def store(self, rows: Sequence[tuple[FileInfo, Answer]]) -> None:
        """Keep what each file gave; failures only set `problem`."""
        if self._db is None or not rows:
            return
        values = [
            (
                info.path,
                info.size,
                info.mtime_ns,
                *answer[:3],
                _check(info.path, info.size, info.mtime_ns, answer),
                _keys_check(info.path, info.size, info.mtime_ns, answer[3]) + answer[3],
            )
            for info, answer in rows
            if info.path == unsurrogate(info.path)  # SQLite text is UTF-8: a non-UTF-8 name is read each time
        ]
        try:
            self._insert(values)
        except sqlite3.Error as error:
            if not self._started_again(error):
                self.problem = f"stats cache not written ({error})"
                return
            try:
                self._insert(values)
            except sqlite3.Error as again:
                self.problem = f"stats cache not written ({again})"

    def _insert(self, values: list[tuple]) -> None:
        assert self._db is not None
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO stats VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)

    def keys(self, infos: Sequence[FileInfo]) -> dict[str, bytes]:
        """The stored `SessionStats.keys` of each file whose stamp and check still match."""
        if self._db is None:
            return {}
        found: dict[str, bytes] = {}
        for start in range(0, len(infos), _BATCH):
            wanted = {info.path: info for info in infos[start : start + _BATCH]}
            marks = ", ".join("?" * len(wanted))
            try:
                rows = self._db.execute(
                    f"SELECT path, size, mtime_ns, keys FROM stats WHERE path IN ({marks})", list(wanted)
                ).fetchall()
            except sqlite3.Error as error:
                if not self._started_again(error):
                    self.problem = f"stats cache unreadable ({error}); computing without it"
                return found
            for path, size, mtime_ns, stored in rows:
                info = wanted.get(path)
                if info is None or (info.size, info.mtime_ns) != (size, mtime_ns) or not isinstance(stored, bytes):
                    continue
                if stored[:4] == _keys_check(path, size, mtime_ns, stored[4:]):
                    found[path] = stored[4:]
        return found

    def prune(self, keep: Sequence[FileInfo]) -> None:
        """Forget files under the roots no longer found (only call with a complete discovery
        of them)."""
        if self._db is None:
            return
        try:
            present = {info.path for info in keep}
            stored = [path for (path,) in self._rows("path")]
            gone = [(path,) for path in stored if path not in present]
            if gone:
                with self._transaction():
                    self._db.executemany("DELETE FROM stats WHERE path = ?", gone)
        except sqlite3.Error as error:
            if not self._started_again(error):  # (a fresh file has nothing to forget)
                self.problem = f"stats cache not written ({error})"

    def _rows(self, columns: str) -> list[tuple]:
        """`columns` of the rows under the roots (path ranges of the primary key's index)."""
        assert self._db is not None
        return [row for cursor in ranged_select(self._db, "stats", columns, self._ranges) for row in cursor.fetchall()]

    @contextlib.contextmanager
    def _transaction(self) -> Any:
        assert self._db is not None
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def stats_chunk(infos: Sequence[FileInfo]) -> list[Answer]:
    """Read each file and compute its stats, encoded brief and full (or why it is not a session)."""
    from .session import NotASession, read_session
    from .stats import session_stats

    out: list[Answer] = []
    for info in infos:
        try:
            session = read_session(info.path, digest=False, decoded=True)  # the stats read every entry
            if isinstance(session, NotASession):
                out.append((None, None, session.reason, b""))
            else:
                stats = session_stats(session)
                out.append((json_bytes(stats.to_storage(brief=True)), json_bytes(stats.to_storage()), None, stats.keys))
        except Exception as error:  # one poisoned file must not fail the run
            out.append((None, None, f"cannot be read ({type(error).__name__}: {error})", b""))
    return out


def message_keys(paths: Sequence[str], infos: Sequence[FileInfo], cache: StatsCache | None) -> dict[str, bytes]:
    """`SessionStats.keys` of these sessions: from the cache, else by reading the file again
    (only the sessions forks were made from are asked for)."""
    wanted = set(paths)
    chosen = [info for info in infos if info.path in wanted]
    found = cache.keys(chosen) if cache is not None else {}
    missing = [info for info in chosen if info.path not in found]
    for info, answer in zip(missing, stats_chunk(missing), strict=True):
        found[info.path] = answer[3]
    return found


@dataclass(slots=True)
class Collected:
    """Stats of many files and what happened getting them."""

    stats: list[SessionStats] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    read: int = 0  # files read this time (the rest came from the cache)


def collect_stats(
    infos: Sequence[FileInfo],
    cache: StatsCache | None,
    *,
    full: bool = False,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> Collected:
    """Stats of every file in `infos`: cached where the stamp matches, else read and stored.
    `full`: every field; else only what `aggregate` needs (faster from the cache)."""
    known = cache.lookup(infos, full=full) if cache is not None else {}
    missing = [info for info in infos if info.path not in known]
    result = Collected(read=len(missing))
    fresh: dict[str, SessionStats | str] = {}
    pending: list[tuple[FileInfo, Answer]] = []
    done = 0

    def consume(chunk: Sequence[FileInfo], answers: list[Answer]) -> None:
        nonlocal done
        for info, answer in zip(chunk, answers, strict=True):
            stored = answer[1] if full else answer[0]
            fresh[info.path] = SessionStats.from_storage(orjson.loads(stored)) if stored is not None else str(answer[2])
            pending.append((info, answer))
        done += len(chunk)
        if cache is not None and len(pending) >= _BATCH:
            cache.store(pending)
            pending.clear()
        if progress is not None:
            progress(done, len(missing))

    if workers > 1 and scanpool.available() and len(missing) >= scanpool.MIN_FILES:
        for chunk, answers in scanpool.map_chunks(stats_chunk, missing, workers):
            consume(chunk, answers)
    else:
        for start in range(0, len(missing), scanpool.CHUNK):
            chunk = missing[start : start + scanpool.CHUNK]
            consume(chunk, stats_chunk(chunk))
    if cache is not None:
        cache.store(pending)
    for info in infos:
        answer = known.get(info.path) or fresh.get(info.path)
        if isinstance(answer, SessionStats):
            result.stats.append(answer)
        elif answer is not None:
            result.skipped.append((info.path, answer))
    return result
