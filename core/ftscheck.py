"""The full-text index's signature check, light enough to run before the index is imported.

FTS5 does not notice every damage (rows missing from `fts_idx` just lose hits), so every
write stores a signature of the full-text index (`fts_signature`: a CRC of its structure
record and the sizes of its shadow tables) and a search first compares it (`Index.
_check_signature`).  Counting the pages is 20 ms at 10,000 sessions and 100 ms at 100,000:
the CLI's `ls --query` has its discovery child do it ahead (`fts_verdict`, with only
SQLite and zlib imported), and the query takes that check as its own when its read
transaction sees the same index (`Index.adopt_fts_verdict`).  With no such child (a
resident watcher lists the files), a query that ranks has a thread of its own do it
(`VerdictAhead`) while it ranks: SQLite counts without Python's lock, on the other core.
"""

from __future__ import annotations

import threading
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

SCHEMA_VERSION = 8  # the index's schema (its history: `index.py`)
# The index file is named by its schema: a new schema starts a new file, and an older one is
# deleted (`Index._delete_older`), not emptied in place: dropping the tables of 2.5 GB of
# index walked every page of them, ~23 s at 100,000 sessions before the picker's first frame.
DB_NAME = f"index.v{SCHEMA_VERSION}.sqlite"
OLDER_DB_NAMES = ("index.sqlite", *(f"index.v{version}.sqlite" for version in range(8, SCHEMA_VERSION)))

Verdict = tuple[str, object, object, bool]


def blob_check(data: object, *salt: object) -> int:
    """CRC-32 of a stored blob and the values stored beside it (-1 when it is not a blob)."""
    if type(data) is not bytes:
        return -1
    return zlib.crc32(data, zlib.crc32(repr(salt).encode("utf-8", "surrogatepass")))


def fts_signature(db: sqlite3.Connection) -> int:
    """A CRC of FTS5's structure record and the sizes of its shadow tables: compared with the
    one the last write stored, cheap, and a mismatch means rebuild."""
    structure = db.execute("SELECT block FROM fts_data WHERE id = 10").fetchone()
    counts = [
        db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("fts_data", "fts_idx", "fts_docsize")
    ]
    return blob_check(structure[0] if structure else b"", *counts)


def fts_state(db: sqlite3.Connection) -> tuple[Any, Any]:
    """The rows that say which full-text index this is: FTS5's structure record (renewed,
    with a counter, by every change) and the signature its last write stored."""
    structure = db.execute("SELECT block FROM fts_data WHERE id = 10").fetchone()
    return structure, db.execute("SELECT value FROM meta WHERE key = 'fts'").fetchone()


def fts_verdict(cache_dir: Path | None = None) -> Verdict | None:
    """The signature check of the index in `cache_dir` (None: the default), done by another
    process: (the index file, the FTS5 structure record and the stored signature as it read
    them, whether the signature matched), for `Index.adopt_fts_verdict`; None when there is
    no index file.  Opened read-only: never creates or writes anything."""
    import sqlite3
    from urllib.parse import quote

    if cache_dir is None:
        from .userdirs import user_dir

        cache_dir = user_dir("cache")
    path = cache_dir / DB_NAME
    if not path.is_file():
        return None
    db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
    try:
        db.execute("BEGIN")
        structure, stored = fts_state(db)
        return str(path), structure, stored, stored is not None and stored[0] == fts_signature(db)
    finally:
        db.close()


class VerdictAhead:
    """`fts_verdict(cache_dir)` made in a thread of its own from `start()` (a query that
    ranks, as it begins: the counts, 60 ms at 100,000 sessions, overlap its ranking) and
    waited for when called: None when it was never started or failed (the search then
    counts it itself).  For a query whose files come from no discovery child (a resident
    watcher's listing): that child makes it otherwise.  The thread is a daemon with its own
    read-only connection: a process that exits first never waits for it."""

    def __init__(self, cache_dir: Path | None) -> None:
        self._cache_dir = cache_dir
        self._thread: threading.Thread | None = None
        self._verdict: Verdict | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._check, name="seance-fts-verdict", daemon=True)
            self._thread.start()

    def _check(self) -> None:
        import sqlite3

        try:
            self._verdict = fts_verdict(self._cache_dir)
        except (sqlite3.Error, OSError):
            self._verdict = None  # (the search counts it itself)

    def __call__(self) -> Verdict | None:
        if self._thread is None:
            return None
        self._thread.join()
        return self._verdict
