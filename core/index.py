"""The persistent session index: exact metadata and full text, in SQLite, never the truth.

One SQLite file (WAL) in the user cache dir (`$SEANCE_CACHE_DIR` overrides).  A row per
file, keyed by `(path, size, mtime_ns)`, holds the exact summary and the saved scan state;
an FTS5 table holds the searchable text in chunks.  The session files are always the
truth: a corrupt, foreign or older-schema index is deleted and rebuilt, a locked one is
replaced by a private one, and deleting the cache loses nothing.

FTS rows use rowid `file_id << 20 | seq`: seq 0-3 are the file's metadata rows (name,
labels, cwd), replaced on every update; seq >= 4 are text chunks, appended as the file
grows.  Deleting a file's rows is one rowid range.

Threads: every thread gets its own connection (`threading.local`); writers take a lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sqlite3
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from .model import SessionSummary

SCHEMA_VERSION = 1
_APPLICATION_ID = 0x5345414E  # "SEAN"
DB_NAME = "index.sqlite"
CHUNK_CHARS = 8192
_SEQ_BITS = 20
_META_SEQS = 4  # 0 name, 1 labels, 2 cwd, 3 id
_META_FIELDS = ("name", "label", "cwd", "id")

_SCHEMA = f"""
PRAGMA application_id = {_APPLICATION_ID};
CREATE TABLE files (
    file_id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    session INTEGER NOT NULL,
    reason TEXT,
    summary BLOB,
    state BLOB,
    text_seq INTEGER NOT NULL DEFAULT -1
);
CREATE VIRTUAL TABLE fts USING fts5(body, field UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
PRAGMA user_version = {SCHEMA_VERSION};
"""

_SUMMARY_FIELDS = tuple(f.name for f in dataclasses.fields(SessionSummary) if f.name not in ("extra", "prefix_text"))


def encode_summary(summary: SessionSummary) -> bytes:
    return orjson.dumps([getattr(summary, name) for name in _SUMMARY_FIELDS])


def decode_summary(data: bytes) -> SessionSummary:
    values = dict(zip(_SUMMARY_FIELDS, orjson.loads(data), strict=True))
    values["labels"] = tuple(values["labels"])
    values["models"] = tuple(values["models"])
    return SessionSummary(**values)


def default_cache_dir() -> Path:
    override = os.environ.get("SEANCE_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("seance", appauthor=False))


@dataclass(frozen=True, slots=True)
class Row:
    """What the stat check needs of an indexed file."""

    file_id: int
    size: int
    mtime_ns: int
    session: bool
    text_seq: int  # -1: no text indexed; else the next free chunk seq
    summary: bytes | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class TextHit:
    """A full-text match: the session file, a snippet with highlight spans, and the field it is in."""

    path: str
    snippet: str
    field: str  # user | assistant | tool | bash | name | label | cwd | id
    spans: tuple[tuple[int, int], ...] = ()
    rank: float = 0.0


_OPEN, _CLOSE = "\ue000", "\ue001"


def _spans(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Strip the private-use highlight markers from a snippet and return their spans."""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    start = 0
    for index, part in enumerate(marked.split(_OPEN)):
        if index == 0:
            out.append(part)
            length += len(part)
            continue
        hit, _, rest = part.partition(_CLOSE)
        start = length
        out.append(hit)
        length += len(hit)
        spans.append((start, length))
        out.append(rest)
        length += len(rest)
    return "".join(out), tuple(spans)


def fts_quote(term: str) -> str:
    """One user term as an FTS5 string token (a phrase), safe whatever it contains."""
    return '"' + term.replace('"', '""') + '"'


class IndexUnavailable(Exception):
    """The index could not be opened at all (the caller lists without it)."""


class Index:
    """The SQLite index file; safe to use from several threads."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self.path = self.cache_dir / DB_NAME
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._generation = 0
        self._connections: list[sqlite3.Connection] = []
        self.rebuilt_reason: str | None = None
        self._open()

    # -- opening, validating, rebuilding -----------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, timeout=5.0, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA temp_store = MEMORY")
        connection.execute("PRAGMA cache_size = -16000")
        return connection

    def _open(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise IndexUnavailable(f"cannot create the cache dir {self.cache_dir}: {error}") from error
        try:
            self._validate_or_create()
        except sqlite3.OperationalError as error:
            if "locked" in str(error) or "busy" in str(error):
                # Another process holds it: use a private index rather than wait or trust it.
                self.path = self.cache_dir / f"index-{os.getpid()}.sqlite"
                self._delete_files()
                self.rebuilt_reason = "the index was locked; using a private one"
                self._validate_or_create()
            else:
                self._rebuild(f"unusable index ({error})")
        except sqlite3.DatabaseError as error:
            self._rebuild(f"corrupt index ({error})")

    def _validate_or_create(self) -> None:
        connection = self._connect()
        try:
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            application = connection.execute("PRAGMA application_id").fetchone()[0]
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        finally:
            connection.close()
        if not tables and version == 0:
            self._create()
        elif version != SCHEMA_VERSION or application != _APPLICATION_ID or not {"files", "fts"} <= tables:
            self._rebuild(f"index schema {version} is not {SCHEMA_VERSION}")

    def _create(self) -> None:
        connection = self._connect()
        try:
            connection.executescript(_SCHEMA)
        finally:
            connection.close()

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}{suffix}")

    def _rebuild(self, reason: str) -> None:
        self.rebuilt_reason = reason
        self._close_connections()
        self._delete_files()
        self._create()

    def reset(self, reason: str = "rebuild requested") -> None:
        """Throw the index away and start empty (corruption found in use, or `index --rebuild`)."""
        with self._write_lock:
            self._rebuild(reason)

    def _close_connections(self) -> None:
        self._generation += 1
        for connection in self._connections:
            with contextlib.suppress(sqlite3.Error):
                connection.close()
        self._connections.clear()

    def close(self) -> None:
        self._close_connections()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection."""
        local = self._local
        if getattr(local, "generation", None) != self._generation or local.connection is None:
            local.connection = self._connect()
            local.generation = self._generation
            self._connections.append(local.connection)
        return local.connection

    # -- reading -------------------------------------------------------------------------------

    def rows(self) -> dict[str, Row]:
        """Every indexed file: one SELECT, used for the stat check."""
        return {
            path: Row(file_id, size, mtime_ns, bool(session), text_seq, summary, reason)
            for path, file_id, size, mtime_ns, session, text_seq, summary, reason in self.db.execute(
                "SELECT path, file_id, size, mtime_ns, session, text_seq, summary, reason FROM files"
            )
        }

    def row(self, path: str) -> Row | None:
        found = self.db.execute(
            "SELECT file_id, size, mtime_ns, session, text_seq, summary, reason FROM files WHERE path = ?", (path,)
        ).fetchone()
        if found is None:
            return None
        file_id, size, mtime_ns, session, text_seq, summary, reason = found
        return Row(file_id, size, mtime_ns, bool(session), text_seq, summary, reason)

    def state(self, file_id: int) -> bytes | None:
        found = self.db.execute("SELECT state FROM files WHERE file_id = ?", (file_id,)).fetchone()
        return found[0] if found else None

    def search(self, match: str, limit: int = 500) -> list[TextHit]:
        """The best hit per file for an FTS5 MATCH expression, best first.

        Raises `sqlite3.OperationalError` for a malformed MATCH expression.
        """
        db = self.db
        best: dict[int, tuple[float, int, str]] = {}
        for rowid, field, rank in db.execute(
            "SELECT rowid, field, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?", (match, limit * 8)
        ):
            file_id = rowid >> _SEQ_BITS
            if file_id not in best:
                best[file_id] = (rank, rowid, field)
                if len(best) >= limit:
                    break
        if not best:
            return []
        rowids = [rowid for _rank, rowid, _field in best.values()]
        marks = ",".join("?" * len(rowids))
        snippets = dict(
            db.execute(
                f"SELECT rowid, snippet(fts, 0, '{_OPEN}', '{_CLOSE}', '…', 16) FROM fts "
                f"WHERE fts MATCH ? AND rowid IN ({marks})",
                (match, *rowids),
            )
        )
        ids = ",".join(str(file_id) for file_id in best)
        paths = dict(db.execute(f"SELECT file_id, path FROM files WHERE file_id IN ({ids})"))
        hits = []
        for file_id, (rank, rowid, field) in sorted(best.items(), key=lambda item: item[1][0]):
            if file_id not in paths:
                continue
            text, spans = _spans(snippets.get(rowid, ""))
            hits.append(TextHit(paths[file_id], text, field, spans, rank))
        return hits

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[Writer]:
        """A write transaction (serialised across threads); commits on success."""
        with self._write_lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield Writer(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")


class Writer:
    """Row updates inside one transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def _file_id(self, path: str) -> int:
        found = self.db.execute("SELECT file_id FROM files WHERE path = ?", (path,)).fetchone()
        if found:
            return found[0]
        cursor = self.db.execute(
            "INSERT INTO files (path, size, mtime_ns, session) VALUES (?, 0, 0, 0)", (path,)
        )
        return int(cursor.lastrowid or 0)

    def _drop_text(self, file_id: int, meta_only: bool = False) -> None:
        low = file_id << _SEQ_BITS
        high = low + (_META_SEQS - 1 if meta_only else (1 << _SEQ_BITS) - 1)
        self.db.execute("DELETE FROM fts WHERE rowid BETWEEN ? AND ?", (low, high))

    def put_session(self, summary: SessionSummary, state: bytes, texts: list[tuple[str, str]] | None,
                    *, continued: bool, text_seq: int) -> None:
        """Store a session's summary and state; append (continued) or replace its text chunks.

        `texts` None means the text is not indexed (and any stale text is dropped).
        """
        file_id = self._file_id(summary.path)
        if texts is None or not continued or text_seq < 0:
            self._drop_text(file_id)
            text_seq = -1
        else:
            self._drop_text(file_id, meta_only=True)
        if texts is not None:
            text_seq = max(text_seq, _META_SEQS)
            text_seq = self._insert_texts(file_id, text_seq, texts)
            self._insert_meta(file_id, summary)
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, session = 1, reason = NULL, summary = ?, state = ?, "
            "text_seq = ? WHERE file_id = ?",
            (summary.size, summary.mtime_ns, encode_summary(summary), state, text_seq, file_id),
        )

    def _insert_meta(self, file_id: int, summary: SessionSummary) -> None:
        base = file_id << _SEQ_BITS
        values = (summary.name or "", " ".join(summary.labels), summary.cwd, summary.id)
        self.db.executemany(
            "INSERT INTO fts (rowid, body, field) VALUES (?, ?, ?)",
            [(base + seq, value, _META_FIELDS[seq]) for seq, value in enumerate(values) if value],
        )

    def _insert_texts(self, file_id: int, seq: int, texts: list[tuple[str, str]]) -> int:
        base = file_id << _SEQ_BITS
        rows: list[tuple[int, str, str]] = []
        pending: dict[str, list[str]] = {}
        sizes: dict[str, int] = {}
        limit = (1 << _SEQ_BITS) - 1
        for field, text in texts:
            parts = pending.setdefault(field, [])
            parts.append(text)
            sizes[field] = sizes.get(field, 0) + len(text) + 1
            if sizes[field] >= CHUNK_CHARS and seq < limit:
                rows.append((base + seq, "\n".join(parts), field))
                seq += 1
                pending[field] = []
                sizes[field] = 0
        for field, parts in pending.items():
            if parts and seq < limit:
                rows.append((base + seq, "\n".join(parts), field))
                seq += 1
        self.db.executemany("INSERT INTO fts (rowid, body, field) VALUES (?, ?, ?)", rows)
        return seq

    def put_not_session(self, path: str, size: int, mtime_ns: int, reason: str) -> None:
        """Remember that a file is not a session, so it is not re-read until it changes."""
        file_id = self._file_id(path)
        self._drop_text(file_id)
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, session = 0, reason = ?, summary = NULL, state = NULL, "
            "text_seq = -1 WHERE file_id = ?",
            (size, mtime_ns, reason, file_id),
        )

    def forget(self, path: str) -> None:
        found = self.db.execute("SELECT file_id FROM files WHERE path = ?", (path,)).fetchone()
        if found:
            self._drop_text(found[0])
            self.db.execute("DELETE FROM files WHERE file_id = ?", (found[0],))
