"""The persistent session index: exact metadata and full text, in SQLite, never the truth.

One SQLite file (WAL) in the user cache dir (`$SEANCE_CACHE_DIR` overrides).  A row per
file, keyed by `(path, size, mtime_ns)`, holds the exact summary and the ready `ls --json`
object; `states` keeps each session's saved scan state (read only to continue an appended
file); `listings` keeps the last few whole `ls --json` answers with a digest of the exact
stats they were made from; an FTS5 table holds the searchable text in chunks.  Writing
many files at once (`bulk`) keeps memory at the page cache's size, whatever the index's.
The session files are always the truth: an index SQLite cannot read is deleted and rebuilt,
a foreign or older-schema one has its tables dropped and recreated (in one transaction), a
locked one is replaced by a private one, and deleting the cache loses nothing.

Nothing read back is trusted blindly: every `files` row, scan state and stored listing
carries a CRC-32 of its values, and a row whose check fails is treated as stale (its file
is read again), so a damaged page gives a slower answer, never a wrong one.  Errors of the
index itself (SQLite's, or values of the wrong type) are classified by `index_fault`, in
one place, for `Catalog`'s guard: busy, cannot be written (disk full, read-only), or damaged.

FTS rows use rowid `file_id << 24 | field << 20 | seq`: `field` is the row's field as its rank
(`fulltext.FIELD_RANK`), `seq` its number in the file (seq 0-3 are the file's metadata rows: name,
labels, cwd, id, replaced on every update; seq >= 4 are text chunks: user and assistant text,
tool calls and output..., appended as the file grows).  FTS5 yields a query's rows in rowid
order, so a file's rows come best field first, and its first matching row is its best hit: a
search narrows to fields and picks each file's best row from rowids alone, never reading a
chunk's stored text (that read, 8 KB a row, was 90% of a common word's search), and without
sorting them (`_files_matching`).  Deleting a file's rows is one rowid range.

`files.title` holds the folded id, name and first message search matches titles against
(`search.haystack.folded_title`), so a query over every session (`Catalog.matching`) finds its
candidates without decoding every summary.  What to MATCH and what to highlight come parsed from `core.search`
(`Query.full_text()`), which also makes the hits' snippets: this module is storage and SQL.

Threads: every thread gets its own connection (`threading.local`), closed as the thread ends;
writers take a lock.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import os
import re
import sqlite3
import sys
import threading
import zlib
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from functools import partial
from itertools import repeat
from operator import and_, itemgetter, methodcaller, rshift
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, cast

from .fileskey import files_key as files_key  # (its home: the discovery child makes it too)
from .ftscheck import DB_NAME as DB_NAME
from .ftscheck import OLDER_DB_NAMES, Verdict, fts_state
from .ftscheck import SCHEMA_VERSION as SCHEMA_VERSION
from .ftscheck import blob_check as _blob_check
from .ftscheck import fts_signature as _fts_signature
from .fulltext import FIELD_RANK, META_FIELDS, OPT_IN, TEXT_RULES
from .holders import process_alive
from .model import SessionSummary
from .safeopen import open_regular
from .text import is_utf8
from .userdirs import user_dir

if TYPE_CHECKING:  # core.search is imported when searching: a plain `seance ls` never needs it
    from .search import FullText, TextHit
    from .search.query import FieldMatch

# The schema's history (`SCHEMA_VERSION` lives in ftscheck): 4: CRC-32 checks on files, states
# and listings; 5: every field the preview shows; 6: the field in the FTS rowid (no `field`
# column), folded titles in `files`; 7: a listing's payload last, files digested, FTS5 automerge
# 16; 8: the field above the seq in the FTS rowid (a file's first row is its best)
_APPLICATION_ID = 0x5345414E  # "SEAN"
CHUNK_CHARS = 8192
_FILE_SHIFT = 24  # rowid >> _FILE_SHIFT is the file id
_FIELD_SHIFT = 20  # (rowid >> _FIELD_SHIFT) & _FIELD_MASK is the row's field rank (0-12; 13 would be "text")
_FIELD_BITS = _FILE_SHIFT - _FIELD_SHIFT
_FIELD_MASK = (1 << _FIELD_BITS) - 1
_SEQ_LIMIT = (1 << _FIELD_SHIFT) - 1  # the low bits: the row's seq in its file
_META_SEQS = 4  # 0 name, 1 labels, 2 cwd, 3 id
_META_FIELDS = META_FIELDS
_RANKED_FIELDS = [*sorted(FIELD_RANK, key=FIELD_RANK.__getitem__), "text"]  # rank -> field name
assert len(_RANKED_FIELDS) <= _FIELD_MASK + 1


def _fts_rowid(file_id: int, seq: int, field: str) -> int:
    """The FTS rowid of a file's row `seq` in `field`: ordered by file, then field rank, then seq."""
    return (file_id << _FILE_SHIFT) | (FIELD_RANK[field] << _FIELD_SHIFT) | seq


def _holds(body: bytes, mark: bytes | None) -> bool:
    """Whether a chunk holds `mark` (None: never; b"": always)."""
    return mark is not None and mark in body


def _field_of(rowid: int) -> str:
    """The field an FTS row (by its rowid) holds."""
    return _RANKED_FIELDS[(rowid >> _FIELD_SHIFT) & _FIELD_MASK]


def _fields_of(rowids: Iterable[int]) -> Iterator[str]:
    """`_field_of` of each of `rowids`, in C-level maps (a common word is in every file)."""
    ranks = map(and_, map(rshift, rowids, repeat(_FIELD_SHIFT)), repeat(_FIELD_MASK))
    return map(_RANKED_FIELDS.__getitem__, ranks)


def text_chunks(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A session's `(field, text)` pieces as the FTS rows they are stored in: `(field, body)`,
    each field's pieces joined by newlines into chunks of about `CHUNK_CHARS` (a row per
    piece would be ten times the rows).  Pure, so a scanning worker can do it."""
    chunks: list[tuple[str, str]] = []
    pending: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for field, text in texts:
        parts = pending.get(field)
        if parts is None:
            parts = pending[field] = []
            sizes[field] = 0
        parts.append(text)
        size = sizes[field] = sizes[field] + len(text) + 1
        if size >= CHUNK_CHARS:
            chunks.append((field, "\n".join(parts)))
            pending[field] = []
            sizes[field] = 0
    chunks += [(field, "\n".join(parts)) for field, parts in pending.items() if parts]
    return chunks


_FTS_TABLE = "CREATE VIRTUAL TABLE fts USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')"
# FTS5 merges a level's segments once there are this many (default 4): each merge rewrites
# them, and a build of 100,000 sessions rewrote its terms once per level of four.  16 levels
# out fewer times (a fifth less writing); queries read a few more, smaller segments (no slower
# measured at 30,000 sessions).  Stored in `fts_config`, so it holds for every later write.
_FTS_AUTOMERGE = "INSERT INTO fts (fts, rank) VALUES ('automerge', 16)"
# FTS5 writes its pending terms out as a level-0 segment whenever their hash table passes
# this size (default 1 MB), and every such segment is merged again later: with 8 MB a bulk
# write makes an eighth of them (re-inserting a 10,000-session index: 2.1 s -> 1.5 s).  The
# hash is per writing connection and bounded by this; queries are unchanged.
_FTS_HASHSIZE = "INSERT INTO fts (fts, rank) VALUES ('hashsize', 8388608)"
_FTS_CONFIG = (_FTS_AUTOMERGE, _FTS_HASHSIZE)
_SCHEMA = (
    f"PRAGMA application_id = {_APPLICATION_ID}",
    """CREATE TABLE files (
        file_id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        session INTEGER NOT NULL,
        reason TEXT,
        modified_ms INTEGER,
        cwd TEXT,
        summary BLOB,
        pi_json BLOB,
        text_seq INTEGER NOT NULL DEFAULT -1,
        json_check INTEGER NOT NULL DEFAULT 0,
        summary_check INTEGER NOT NULL DEFAULT 0,
        title TEXT,
        title_check INTEGER NOT NULL DEFAULT 0
    )""",
    # The scan state (~1 KB a session) is only read to continue an appended file: kept out of
    # `files`, whose every row a warm listing reads.
    "CREATE TABLE states (file_id INTEGER PRIMARY KEY, state BLOB NOT NULL, checksum INTEGER NOT NULL)",
    # Whole `ls --json` answers, each valid only for the exact files (paths and stats) it was
    # made from: an unchanged store is listed with one stat per file and one lookup.
    # `payload` last: a zeroblob in the last column is not built in memory (see `put_listing`).
    "CREATE TABLE listings (scope BLOB PRIMARY KEY, files BLOB NOT NULL, reused INTEGER NOT NULL, "
    "skipped BLOB NOT NULL, checksum INTEGER NOT NULL, payload BLOB NOT NULL)",
    _FTS_TABLE,
    *_FTS_CONFIG,
    # `fts` is the full-text index's signature (see `_fts_signature`), renewed by every write.
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    # `text_rules`: the extraction rules every stored text chunk was made under (`Index.text_rules`).
    f"INSERT INTO meta (key, value) VALUES ('text_rules', {TEXT_RULES})",
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)

_TABLES = {"files", "states", "listings", "fts", "meta"}


def _is_seance_index(path: Path) -> bool:
    """Whether `path` is a SQLite database stamped with seance's application id: only such a
    file is deleted as an older seance's index (a cache directory set by the user may hold
    another program's `index.sqlite`).  The stamp is read from the file's header; while a WAL
    beside it may still hold the stamp, through SQLite, read-only (the WAL files exist then,
    so the probe leaves nothing behind).  Anything unreadable is left alone."""
    try:
        descriptor, _info = open_regular(path)  # (a FIFO there never blocks)
        try:
            header = os.pread(descriptor, 100, 0)
        finally:
            os.close(descriptor)
    except OSError:
        return False
    if len(header) < 100 or not header.startswith(b"SQLite format 3\x00"):
        return False
    if int.from_bytes(header[68:72], "big") == _APPLICATION_ID:
        return True
    if not os.path.exists(f"{path}-wal"):
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as probe:
            return probe.execute("PRAGMA application_id").fetchone()[0] == _APPLICATION_ID
    except (sqlite3.Error, OSError, ValueError):
        return False


def _store_fts_signature(db: sqlite3.Connection) -> None:
    # FTS5 keeps new terms in memory until commit; a savepoint makes it write them out first.
    db.execute("SAVEPOINT fts_flush")
    db.execute("RELEASE fts_flush")
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fts', ?)", (_fts_signature(db),))


_SUMMARY_FIELDS = tuple(f.name for f in dataclasses.fields(SessionSummary) if f.name not in ("extra", "prefix_text"))


def encode_summary(summary: SessionSummary) -> bytes:
    import orjson  # here and below, not at the top: a warm `seance ls --json` never needs it

    return orjson.dumps([getattr(summary, name) for name in _SUMMARY_FIELDS])


_LABELS, _MODELS = _SUMMARY_FIELDS.index("labels"), _SUMMARY_FIELDS.index("models")
assert tuple(f.name for f in dataclasses.fields(SessionSummary))[: len(_SUMMARY_FIELDS)] == _SUMMARY_FIELDS, (
    "decode_summary builds SessionSummary positionally: prefix_text and extra must be its last fields"
)


def encode_pi_json(summary: SessionSummary) -> bytes:
    """The stored `ls --json` object of a summary (what a warm listing writes out as is); a
    file name that is not UTF-8 shows U+FFFD for its odd bytes, as Node's readdir gives it to pi."""
    from .text import json_bytes

    return json_bytes(summary.to_pi_json())


def decode_summary(data: bytes) -> SessionSummary:
    import orjson

    values = orjson.loads(data)
    values[_LABELS] = tuple(values[_LABELS])
    values[_MODELS] = tuple(values[_MODELS])
    return SessionSummary(*values)


def encode_title(summary: SessionSummary) -> bytes:
    """The folded id, name and first message a query matches titles against, as stored."""
    from .search.haystack import folded_title

    return "\n".join(folded_title(summary)).encode("utf-8", "surrogatepass")


def stored_title(row: tuple) -> tuple[str, str, str] | None:
    """The folded title (id, name, first message) of a `rows(titles=True)` tuple, or None
    when none is stored or it fails its check (the caller folds it from the summary)."""
    return checked_title(row[10], row[11], row[0])


def checked_title(title: object, check: object, path: str) -> tuple[str, str, str] | None:
    """A stored folded title (id, name, first message), or None when there is none or it
    fails its check against `check` and the file's `path`."""
    if type(title) is not bytes or _blob_check(title, path) != check:
        return None
    return split_title(title)


def _same_title(summary: bytes, title: object) -> bool:
    """Whether a stored title is what the current fold makes of its stored summary (False
    when the summary cannot be decoded: the file is read again, which mends it)."""
    try:
        return encode_title(decode_summary(summary)) == title
    except INDEX_ERRORS:
        return False


def split_title(title: bytes) -> tuple[str, str, str] | None:
    """A stored folded title's three parts (id, name, first message), unchecked."""
    parts = title.decode("utf-8", "surrogatepass").split("\n")
    return (parts[0], parts[1], parts[2]) if len(parts) == 3 else None


def titles_pass(titles: list[bytes], paths: list[str], checks: list[object]) -> bool:
    """Whether every stored title passes its check (`checked_title`'s, over a whole
    listing in C-level maps: a query over 100,000 sessions checks them all)."""
    salts = map(zlib.crc32, map(_ENCODE_SURROGATES, map("(%r,)".__mod__, paths)))  # repr((path,)): `_blob_check`
    return list(map(zlib.crc32, titles, salts)) == checks


_ENCODE_SURROGATES = methodcaller("encode", "utf-8", "surrogatepass")
# Of a `query_rows()` tuple, the values `_row_check` covers, in its order.
_QUERY_META = itemgetter(1, 2, 3, 4, 11, 6, 7, 5)
_PAYLOADS = {"pi_json": ("pi_json", "json_check"), "summary": ("summary", "summary_check")}  # column, its check


def default_cache_dir() -> Path:
    """`$SEANCE_CACHE_DIR`, else the platform's user cache dir for "seance" (`core.userdirs`)."""
    return user_dir("cache")


_STAT_KEY = itemgetter(0, 1, 2)  # (path, size, mtime_ns) of a `rows()` tuple
# What a `files` row's check covers besides its payload: every column a listing uses, as
# repr()s, so a value of the wrong type (a text '1' for the int 1, a float) fails it too.
_ROW_META = "\0".join(["%r"] * 8)
_META_OF_ROW = itemgetter(0, 1, 2, 3, 4, 5, 6, 8)  # of a `rows()` tuple, the order `_row_check` takes


def _row_check(meta: tuple, payload: object) -> int:
    """CRC-32 of a `files` row: `meta` is (path, size, mtime_ns, session, reason, modified_ms,
    cwd, text_seq); `payload` the summary or ls-json blob (None: a file that is not a session).
    -1 (never a stored check) when the payload is not bytes at all."""
    if payload is None:
        payload = b""
    elif type(payload) is not bytes:
        return -1
    return zlib.crc32(payload, zlib.crc32((_ROW_META % meta).encode("utf-8", "surrogatepass")))


_BLOB_PIECE = 1 << 20
_MMAP_BYTES = 256 << 20
_TEMP_STORE = "MEMORY"
LISTINGS_KEPT = 8  # stored answers of each kind (`put_listing`): `ls --json` ones are one per roots and scope


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")  # a file name need not be UTF-8


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def scope_key(roots: list[str], cwd: str | None) -> bytes:
    """A stored listing's scope: the roots listed, and all projects (None) or one project
    directory (so `--root A` and `--root B` runs do not replace each other's answer)."""
    return _encode("\0".join([*roots, "" if cwd is None else f"cwd:{cwd}"]))


def root_ranges(roots: Iterable[str]) -> list[tuple[str, str]]:
    """The ranges `[low, high)` of `files.path` that hold the files under `roots` (each
    spelled as discovery spells it, `discovery.root_path`), sorted, disjoint (a root inside
    another is the other's range).  A root's files are the paths that start with the root
    and a separator: from `root + "/"` up to, not including, `root + "0"` ("0" follows "/"),
    so `/x/sessions2/...` and `/x/sessions-old/...` are not under `/x/sessions`.  SQLite
    compares text as UTF-8 bytes, Python as code points: the same order (paths that are
    not UTF-8 are never stored: a root whose name is not has no rows and no range)."""
    bounds = []
    for root in roots:
        try:
            root.encode("utf-8")
        except UnicodeEncodeError:  # SQLite could not even be asked about it
            continue
        low = root if root.endswith(os.sep) else root + os.sep
        bounds.append((low, low[:-1] + chr(ord(os.sep) + 1)))
    merged: list[tuple[str, str]] = []
    for low, high in sorted(bounds):
        if merged and low < merged[-1][1]:  # inside the previous root (ranges nest or are apart)
            merged[-1] = (merged[-1][0], max(high, merged[-1][1]))
        else:
            merged.append((low, high))
    return merged


def _pieces(parts: list[bytes]) -> Iterator[bytes | memoryview]:
    """`parts` concatenated, as pieces of about `_BLOB_PIECE` bytes (never the whole)."""
    group: list[bytes] = []
    size = 0
    for part in parts:
        if len(part) >= _BLOB_PIECE:
            if group:
                yield b"".join(group)
                group, size = [], 0
            view = memoryview(part)
            yield from (view[start : start + _BLOB_PIECE] for start in range(0, len(part), _BLOB_PIECE))
            continue
        group.append(part)
        size += len(part)
        if size >= _BLOB_PIECE:
            yield b"".join(group)
            group, size = [], 0
    if group:
        yield b"".join(group)


class Listing(NamedTuple):
    """A stored `ls --json` answer: the array, how many sessions it reused, what it skipped."""

    payload: bytes
    reused: int
    skipped: list[tuple[str, str]]  # (path, reason) of the indexed files that are not sessions


class Row(NamedTuple):
    """What the stat check needs of an indexed file (a tuple: ten thousand per refresh)."""

    file_id: int
    size: int
    mtime_ns: int
    session: int  # 1 a session, 0 not
    text_seq: int  # -1: no text indexed; else the next free chunk seq
    reason: str | None
    modified_ms: int | None
    cwd: str | None
    payload: bytes | None  # the encoded summary, or the `ls --json` object (see `rows`)


def is_lock_error(error: BaseException) -> bool:
    """SQLite's "database is locked/busy": another writer, not a broken index."""
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and ("locked" in message or "busy" in message)


# Everything reading or writing the index can raise when the index (not the caller) is at
# fault: SQLite's own errors, and what a damaged value of the wrong type or shape raises
# when used (orjson.JSONDecodeError and UnicodeDecodeError are ValueErrors).
INDEX_ERRORS: tuple[type[BaseException], ...] = (sqlite3.Error, ValueError, TypeError, KeyError, IndexError)

LOCKED, UNWRITABLE, DAMAGED = "locked", "unwritable", "damaged"
# SQLite primary result codes: the index cannot be written (or opened) here, through no fault of its own.
_UNWRITABLE_CODES = frozenset({3, 7, 8, 10, 13, 14})  # PERM, NOMEM, READONLY, IOERR, FULL, CANTOPEN
_SHORT_READ = 10 | (2 << 8)  # SQLITE_IOERR_SHORT_READ: a truncated file, i.e. damaged


def _delete_db_files(path: Path | str, ignore: type[OSError] = OSError) -> bool:
    """Unlink a database file and its -wal, -shm and -journal (errors of kind `ignore` passed
    over); whether the database file itself was there to unlink."""
    deleted = False
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(ignore):
            os.unlink(f"{path}{suffix}")
            deleted = deleted or not suffix
    return deleted


def _file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file at `path`, or None when there is none."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def index_fault(error: BaseException) -> str:
    """What an index error means, for the one guard that handles them (`Catalog`).

    LOCKED: another writer holds it (list from the files this time, keep it);
    UNWRITABLE: the disk is full, read-only or failing (list from the files, keep it);
    DAMAGED: anything else, undecodable or wrongly typed values included (rebuild it).
    """
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        if primary in (5, 6) or is_lock_error(error):  # BUSY, LOCKED
            return LOCKED
        if (primary in _UNWRITABLE_CODES and code != _SHORT_READ) or "disk is full" in str(error):
            return UNWRITABLE
    return DAMAGED


def ranged_select(
    db: sqlite3.Connection,
    table: str,
    columns: str,
    ranges: list[tuple[str, str]] | None,
    where: str = "",
    values: tuple = (),
) -> Iterator[sqlite3.Cursor]:
    """`SELECT columns FROM table [WHERE where]` over the paths in `ranges` (`root_ranges`;
    None: every row): one cursor, or one per range (each a range of the `path` index)."""
    if ranges is None:
        yield db.execute(f"SELECT {columns} FROM {table}{f' WHERE {where}' if where else ''}", values)
        return
    for low, high in ranges:
        condition = f"path >= ? AND path < ?{f' AND {where}' if where else ''}"
        yield db.execute(f"SELECT {columns} FROM {table} WHERE {condition}", (low, high, *values))


def _checked_listing(found: tuple) -> Listing | None:
    """A `listings` row's (payload, reused, skipped, checksum) as a `Listing`, if it passes
    its check (it is printed as is: a damaged one is never the answer)."""
    payload, reused, skipped, check = found
    if type(reused) is not int or type(skipped) is not bytes or _blob_check(payload, reused, skipped) != check:
        return None
    parts = _decode(skipped).split("\0") if skipped else []
    if len(parts) % 2:
        return None
    return Listing(payload, reused, list(zip(parts[::2], parts[1::2], strict=True)))


class FullTextQueryError(ValueError):
    """A MATCH expression FTS5 cannot parse: the query is at fault, not the index."""


_QUERY_MISTAKES = ("fts5: syntax error", "unterminated string", "no such column", "unknown special query")


def _is_query_mistake(error: sqlite3.Error) -> bool:
    message = str(error)
    return getattr(error, "sqlite_errorcode", 1) == 1 and any(mistake in message for mistake in _QUERY_MISTAKES)


_RUNS_MAX = 8  # rowid ranges a scoped search reads at most (one FTS5 query each)
# A search's scratch table (`_files_matching`): each matching file's first row, under a
# tag per term query (`_TAGS`), in the connection's temp database (memory: `_TEMP_STORE`),
# never in the index file.  Its rows live as long as the read transaction they were
# written in: the rollback that ends it empties the table, with no statement of its own.
_BEST = "temp.seance_best"
_BEST_TABLE = (
    f"CREATE TABLE IF NOT EXISTS {_BEST} (tag INTEGER NOT NULL, file INTEGER NOT NULL, row INTEGER NOT NULL, "
    "PRIMARY KEY (tag, file)) WITHOUT ROWID"
)
_TAGS = itertools.count(1)  # (`next` on it is atomic under the GIL: safe from any thread)


def _fetched(cursor: sqlite3.Cursor) -> dict[int, int]:
    """A `(file_id, value)` query's rows as a dict."""
    return dict(cursor.fetchall())


_ORJSON_FROM = 256 << 10  # ~18,000 rowids: where orjson's reading pays for its import


def _unpacked(cursor: sqlite3.Cursor) -> dict[int, int]:
    """The same from its one packed row: the rowids, "rowid,rowid..." (or NULL: none), read
    as a JSON array by orjson and keyed by their file ids (the rowids' high bits) in C-level
    maps (`int` over the split text was ~7× slower, on the index thread in every keystroke's
    query).  The rowids alone, not "file,rowid" pairs: a third less text for SQLite to join
    and orjson to read (~4 ms less for a common prefix in one project at 100,000 sessions)."""
    text = cursor.fetchone()[0]
    if not text:
        return {}
    if len(text) < _ORJSON_FROM and "orjson" not in sys.modules:
        rowids = list(map(int, text.split(",")))  # (a few: cheaper than importing orjson, ~3 ms)
    else:
        import orjson  # (here: a warm `seance ls --json` never needs it)

        rowids = orjson.loads(f"[{text}]")
    return dict(zip(map(rshift, rowids, repeat(_FILE_SHIFT)), rowids, strict=True))


def _chunks(cursors: Iterable[sqlite3.Cursor], size: int = 4096) -> Iterator[list[tuple]]:
    """The rows of `cursors`, one after the other, `size` at a time."""
    for cursor in cursors:
        while chunk := cursor.fetchmany(size):
            yield chunk


def _unindexed(paths: Collection[str], ids: Mapping[str, int], found: int) -> list[str]:
    """The paths of `paths` without a row in `ids` (path -> file_id), given that `found` of
    them have one: none looked up when all do.  A path that is not UTF-8 is never stored
    (`_write_batch`): not counted, its session was never searchable by its text."""
    if found >= len(paths):
        return []
    return [path for path in paths if path not in ids and is_utf8(path)]


def _id_runs(file_ids: list[int], known: int) -> list[tuple[int, int]] | None:
    """A few (first, last) runs of file ids covering `file_ids` (-1: not indexed, skipped),
    split at the widest gaps; None when they span most of the `known` files anyway (one
    unranged query is as cheap).  Files are numbered as they are first indexed, folder by
    folder, so one project's sessions are mostly one run."""
    ordered = sorted(file_id for file_id in file_ids if file_id >= 0)
    if not ordered:
        return []
    if ordered[-1] - ordered[0] + 1 > known * 0.8:
        return None
    gaps = [at for at in range(1, len(ordered)) if ordered[at] - ordered[at - 1] > 64]
    if len(gaps) >= _RUNS_MAX:
        gaps = sorted(sorted(gaps, key=lambda at: ordered[at] - ordered[at - 1])[1 - _RUNS_MAX :])
    cuts = gaps
    starts = [0, *cuts]
    ends = [*cuts, len(ordered)]
    return [(ordered[start], ordered[end - 1]) for start, end in zip(starts, ends, strict=True)]


class IndexHits(Mapping[str, "TextHit"]):
    """An index search's hits by session path, each `TextHit` made on first access
    (`Index.search_by_path`); `field`/`fields` answer without making one, and `fields_at`
    by position in the list of paths the search was asked about."""

    __slots__ = (
        "_at",
        "_best",
        "_chunk",
        "_fields",
        "_highlight",
        "_ids",
        "_len",
        "_made",
        "_paths",
        "_places",
        "_text_hit",
        "_values",
        "_within",
        "unindexed",
    )

    def __init__(
        self,
        best: dict[int, int],
        paths: dict[int, str],
        chunk: Callable[[int], str],
        highlight: re.Pattern[str] | None,
        within: Sequence[str] | None = None,
        places: list[int | None] | None = None,
        ids: Mapping[str, int] | None = None,
        unindexed: Sequence[str] = (),
    ) -> None:
        from .search import TextHit

        self._best = best  # file_id -> its best row's rowid (its field in the rowid's bits)
        self._paths = paths  # file_id -> path, of every indexed file
        self._chunk = chunk
        self._highlight = highlight
        self._text_hit = TextHit
        self._made: dict[str, TextHit] = {}
        self._values: dict[str, int] | None = None
        self._fields: dict[str, str] | None = None  # path -> its best field, made on the first `fields`
        self._within = within  # the paths the search was asked about, in the caller's order
        self._places = places  # [file_id] -> its path's position in `within` (None: not one of `paths`' files)
        self._at: list[str | None] | None = None  # `fields_at`'s answer
        self._ids = ids  # path -> file_id of every indexed file (`_value`)
        self._len: int | None = None
        # the paths the search was asked about that the index holds no file of: sessions it
        # cannot find by their text (another process emptied the index: `seance index --rebuild`)
        self.unindexed = unindexed

    @classmethod
    def of_fields(
        cls,
        fields: dict[int, tuple[str, int]],
        paths: dict[int, str],
        chunk: Callable[[int], str],
        highlight: re.Pattern[str] | None,
    ) -> IndexHits:
        """The hits `Index.best_fields` answered (file_id -> (field, rowid)) of the files in
        `paths` (file_id -> path): a row's field is in its rowid's bits."""
        best = {file_id: rowid for file_id, (_field, rowid) in fields.items()}
        return cls(best, paths, chunk, highlight)

    def fields_at(self, within: Sequence[str]) -> list[str | None] | None:
        """The field of each path of `within` by position (None: not a hit), when `within` is
        the very list the search was asked about (else None: look the paths up, `fields`).
        Made once, from file ids to positions: a ranking that asks about 40,000 paths per
        keystroke by their strings spent ~25 ms of CPU (two tables of 40,000 path keys made,
        then a lookup each, every one a cache miss) before the count could be shown."""
        if within is not self._within or self._places is None:
            return None
        at = self._at
        if at is None:
            best = self._best
            named = _fields_of(best.values())
            places, top = self._places, len(self._places)
            if max(best, default=-1) >= top:  # (a file indexed since `places` was made: not one of `within`)
                places = places + [None] * (max(best) + 1 - top)
            positions = list(map(places.__getitem__, best))  # (a list, not a dict: no hashing)
            at = [None] * len(within)
            if None in positions:  # a file of another project, in the runs read
                pairs = [(place, field) for place, field in zip(positions, named, strict=True) if place is not None]
                deque(itertools.starmap(at.__setitem__, pairs), maxlen=0)
            else:
                deque(map(at.__setitem__, cast("list[int]", positions), named), maxlen=0)
            self._at = at
        return at

    def _by_path(self) -> dict[str, int]:
        """path -> its best row's rowid, made once (then one lookup per session ranked)."""
        if self._values is None:
            best = self._best
            found = list(map(self._paths.get, best))  # (C-level maps: 40,000 files per keystroke)
            if None in found:  # a file of another root, in the runs read
                self._values = {path: value for path, value in zip(found, best.values(), strict=True) if path}
            else:
                self._values = dict(zip(cast("list[str]", found), best.values(), strict=True))
        return self._values

    def _value(self, path: str) -> int | None:
        """`path`'s best row's rowid (None: not a hit), without the table of every hit's path
        when the index's path -> file_id table was given: the rows on screen ask for their
        snippets, and that table (~9 ms at 100,000 sessions) is no longer made to rank."""
        ids = self._ids
        if self._values is not None or ids is None:
            return self._by_path().get(path)
        file_id = ids.get(path)
        if file_id is None or file_id not in self._paths:  # (not one of the files asked about)
            return None
        return self._best.get(file_id)

    def field(self, path: str) -> str | None:
        """The field of `path`'s best hit (None: not a hit)."""
        value = self._value(path)
        return None if value is None else _field_of(value)

    def fields(self, paths: Iterable[str]) -> list[str | None]:
        """`field` of each of `paths`, in one pass (a ranking asks about 40,000 paths twice
        per keystroke: a table of the fields, made once, answers in a C-level loop)."""
        fields = self._fields
        if fields is None:
            by_path = self._by_path()
            fields = self._fields = dict(zip(by_path, _fields_of(by_path.values()), strict=True))
        return list(map(fields.get, paths))

    def get(self, path: str, default: TextHit | None = None) -> TextHit | None:  # type: ignore[override]
        made = self._made.get(path)
        if made is not None:
            return made
        value = self._value(path)
        if value is None:
            return default
        made = self._made[path] = self._text_hit(path, _field_of(value), partial(self._chunk, value), self._highlight)
        return made

    def __getitem__(self, path: str) -> TextHit:
        found = self.get(path)
        if found is None:
            raise KeyError(path)
        return found

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._value(path) is not None

    def __len__(self) -> int:
        if self._len is None:
            if self._values is None and self._places is not None and self._within is not None:
                at = self.fields_at(self._within)  # (no table of 40,000 paths made only to count them)
                assert at is not None
                self._len = len(at) - at.count(None)
            else:
                self._len = len(self._by_path())
        return self._len

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_path())


class _ThreadConnection:
    """One thread's connection to the index, closed when the thread ends: CPython drops a
    thread's `threading.local` values in that thread as it exits, so the close runs where
    the connection was used, once nothing there can be stepping a statement.  A picker's
    search thread ends with the picker; kept open after it (each connection holds two
    descriptors, up to a 16 MB page cache and a 256 MB map), every picker a host pushed on its
    one Catalog left one behind."""

    __slots__ = ("connection", "generation", "verified")

    def __init__(self, connection: sqlite3.Connection, generation: int, verified: dict[int, tuple[int, int]]) -> None:
        self.connection: sqlite3.Connection | None = connection
        self.generation = generation
        self.verified = verified  # the index's `_verified`: the closed connection's mark goes

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            self.verified.pop(id(connection), None)
            with contextlib.suppress(sqlite3.Error):
                connection.close()

    def __del__(self) -> None:
        self.close()


class IndexUnavailable(Exception):
    """The index could not be opened at all (the caller lists without it)."""


class Index:
    """The SQLite index file; safe to use from several threads."""

    busy_timeout = 5.0  # seconds to wait for another writer (batches commit every 0.5 s)

    def __init__(
        self,
        cache_dir: Path | None = None,
        *,
        in_memory: bool = False,
        roots: Iterable[str] | None = None,
        heal: bool = True,
    ) -> None:
        """The index in `cache_dir`; `in_memory`: a private one that lives as long as this
        object (for a run whose cache cannot be written: a full disk, a read-only home).

        `roots` (spelled as `discovery.root_path` spells them): the sessions roots this
        object lists.  One cache serves every root seance is pointed at (pi's, oh-my-pi's,
        `--root` dirs, one dir reached under two spellings), so each read of every file
        (`rows`, `query_rows`, `sessions_in`, the path table, a search's file ids) is
        narrowed to the files under them (`_ranges`): a root does not pay for the others'
        rows.  None: every file (one row's `row(path)` and the writes are never narrowed).

        Without `heal` (the resident watcher's background refresh) an index that cannot be
        opened as it is (damaged, another schema, locked) raises `IndexUnavailable` instead
        of being deleted, rebuilt or replaced by a private one: healing the shared index is
        left to a foreground command."""
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()
        self.roots = None if roots is None else list(roots)
        self._root_ranges = None if self.roots is None else root_ranges(self.roots)
        self.path = self.cache_dir / DB_NAME
        self.in_memory = in_memory
        self.heal = heal
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._generation = 0
        self.rebuilt_reason: str | None = None
        self._path_cache: tuple[tuple, dict[str, int], dict[int, str]] | None = None  # `_path_ids`
        self._runs_under: tuple[tuple, tuple[frozenset[int], list[tuple[int, int]] | None]] | None = None
        self._runs_cache: (
            tuple[
                object, dict[str, int], list[tuple[int, int]] | None, dict[int, str], list[int | None] | None, list[str]
            ]
            | None
        ) = None
        self._verified: dict[int, tuple[int, int]] = {}  # id(connection) -> its last good `_check_signature`
        self._terms: dict[tuple, tuple[object, dict[int, int]]] = {}  # `_files_matching` answers: `_term_files`
        self._terms_lock = threading.Lock()
        self._file: tuple[int, int] | None = None  # the index file's identity (`replaced`)
        if in_memory:
            self._uri = f"file:seance-index-{id(self)}?mode=memory&cache=shared"
            self._anchor = self._connect()  # the memory database lives while one connection does
            self._validate_or_create()
        else:
            self._open()

    # -- opening, validating, rebuilding -----------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        target, uri = (self._uri, True) if self.in_memory else (self.path, False)
        connection = sqlite3.connect(
            target, timeout=self.busy_timeout, check_same_thread=False, isolation_level=None, uri=uri
        )
        # Before WAL creates the file (no effect on an existing one): a warm listing reads
        # every `files` row, and big pages make that fewer, larger reads.
        connection.execute("PRAGMA page_size = 16384")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA temp_store = {_TEMP_STORE}")
        connection.execute("PRAGMA cache_size = -16000")
        # Reads straight from the page cache: a warm listing scans the whole files table once.
        connection.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        # A search's scratch table, made once: made inside a search's read transaction, the
        # rollback that ends it would drop it again (a schema change) every time.
        connection.execute(_BEST_TABLE)
        return connection

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """This thread's connection set up for writing many files (a cold listing, `seance
        index`, a rebuild), so memory is bounded by the page cache, not by the index's size:
        no mmap (every page an FTS5 merge or the signature's count reads would stay resident:
        up to 256 MB), and statement journals in a temp file, not memory (emptying a 250 MB
        full-text table journalled 250 MB in memory).

        And deleted content is zeroed only where that costs no extra writing (`secure_delete =
        FAST`; SQLite builds such as Debian's default to ON): a bulk write deletes what it
        writes again at once (FTS5's merged segments, a rebuild's old rows), and zeroing every
        page it freed wrote each one once more (a tenth of `index --rebuild`'s CPU, most of
        its reset).  Deleting a session (`forget`, outside bulk mode) still zeroes it."""
        db = self.db
        secure = db.execute("PRAGMA secure_delete").fetchone()[0]
        db.execute("PRAGMA mmap_size = 0")
        db.execute("PRAGMA temp_store = DEFAULT")
        if secure == 1:
            db.execute("PRAGMA secure_delete = FAST")
        try:
            yield
        finally:
            with contextlib.suppress(sqlite3.Error):  # a closed or replaced connection: nothing to restore
                db.execute(f"PRAGMA secure_delete = {secure}")
                db.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
                db.execute(f"PRAGMA temp_store = {_TEMP_STORE}")
                db.execute(_BEST_TABLE)  # (a change of temp_store drops the temp tables)

    def _open(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise IndexUnavailable(f"cannot create the cache dir {self.cache_dir}: {error}") from error
        try:
            self._validate_or_create()
            if self.heal:
                self._delete_older()
        except sqlite3.DatabaseError as error:  # ("not a database" too; an OperationalError is one)
            if not self.heal:
                raise IndexUnavailable(f"the index cannot be used as it is ({error}); left as it is") from error
            if isinstance(error, sqlite3.OperationalError) and is_lock_error(error):
                # Another process holds it: use a private index rather than wait or trust it.
                self.path = self.cache_dir / f"index-{os.getpid()}.sqlite"
                self._delete_files()
                self.rebuilt_reason = "the index was locked; using a private one"
                self._validate_or_create()
            elif isinstance(error, sqlite3.OperationalError):
                self._rebuild(f"unusable index ({error})")
            else:
                self._rebuild(f"corrupt index ({error})")

    def _validate_or_create(self) -> None:
        """Check the schema, or (re)create it — inside one write transaction, so two seance
        processes (or threads) opening a fresh cache at once cannot both create it."""
        connection = self._connect()
        # Set up as `bulk` does: dropping an older schema's tables walks every page of them
        # (mapped: counted in resident memory) and journals them (in memory with temp_store
        # MEMORY): 490 MB for a 250 MB index at 10,000 sessions, gigabytes at 100,000.
        connection.execute("PRAGMA mmap_size = 0")
        connection.execute("PRAGMA temp_store = DEFAULT")
        try:
            connection.execute("BEGIN IMMEDIATE")
            version = connection.execute("PRAGMA user_version").fetchone()[0]
            application = connection.execute("PRAGMA application_id").fetchone()[0]
            tables = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
            names = {name for name, _sql in tables}
            if version == SCHEMA_VERSION and application == _APPLICATION_ID and names >= _TABLES:
                connection.execute("COMMIT")
                return
            if (tables or version) and not self.heal:
                raise IndexUnavailable("the index is not this seance's; left as it is")
            if tables or version:
                if version != SCHEMA_VERSION:
                    reason = f"index schema {version} is not {SCHEMA_VERSION}"
                elif application != _APPLICATION_ID:
                    reason = "not a seance index"
                else:
                    reason = f"index tables missing ({', '.join(sorted(_TABLES - names))})"
                self.rebuilt_reason = f"{reason}; rebuilt"
                virtual_first = sorted(tables, key=lambda item: "VIRTUAL" not in (item[1] or "").upper())
                for name, _sql in virtual_first:  # a virtual table takes its shadow tables with it
                    connection.execute(f'DROP TABLE IF EXISTS "{name.replace(chr(34), chr(34) * 2)}"')
            for statement in _SCHEMA:
                connection.execute(statement)
            _store_fts_signature(connection)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()
            self._file = None if self.in_memory else _file_identity(self.path)

    def replaced(self) -> bool:
        """Whether the file this index made or opened is no longer at its path: deleted, or
        replaced by another process's heal (a resident process would write on into the
        deleted file, its open descriptors keeping it, for as long as it runs)."""
        return not self.in_memory and _file_identity(self.path) != self._file

    def _delete_older(self) -> None:
        """Delete an older seance's index beside this one (`ftscheck.OLDER_DB_NAMES`): it is a
        cache of the session files, and unlinking it is instant where dropping its tables
        walked every page.  A process of that seance still using it keeps its open files: it
        reads on, and what it writes goes to the deleted files, never into this index."""
        if self.in_memory or self.path.name != DB_NAME:  # (a private index: the shared one is in use)
            return
        found = False
        for name in OLDER_DB_NAMES:
            if not _is_seance_index(self.cache_dir / name):
                continue
            found = _delete_db_files(self.cache_dir / name) or found
        if found and self.rebuilt_reason is None:
            self.rebuilt_reason = "an older seance's index was deleted; rebuilt"
        self._delete_dead_private()

    def _delete_dead_private(self) -> None:
        """Delete the private indexes (`index-PID.sqlite`, made while the shared one was
        locked) whose process is gone: each is deleted when its command ends, but not by a
        command that was killed, and nothing else ever would."""
        for path in self.cache_dir.glob("index-*.sqlite"):
            pid = path.name[len("index-") : -len(".sqlite")]
            if pid.isdigit() and not process_alive(int(pid)):
                _delete_db_files(path)

    def shared_free(self) -> bool:
        """Whether the shared index in this cache dir can be written now (not locked by another
        process): asked without waiting, by a process that has a private one instead."""
        try:
            probe = sqlite3.connect(self.cache_dir / DB_NAME, timeout=0, isolation_level=None)
        except sqlite3.Error:
            return False
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return True
        except sqlite3.Error:
            return False
        finally:
            probe.close()

    @property
    def private(self) -> bool:
        """A private index on disk, made because the shared one was locked (deleted at `close`)."""
        return not self.in_memory and self.path.name != DB_NAME

    def _delete_files(self) -> None:
        if not self.in_memory:
            _delete_db_files(self.path, FileNotFoundError)

    def _rebuild(self, reason: str) -> None:
        """Delete the files and start empty: for an index SQLite itself cannot read."""
        self.rebuilt_reason = reason
        self._close_connections()
        self._delete_files()
        self._validate_or_create()

    def reset(self, reason: str | None = None) -> None:
        """Start empty.  With a `reason` (corruption found in use) the files are deleted; without
        one (`seance index --rebuild`) the tables are emptied in a transaction other readers
        survive, or, when the cache also holds other roots' files, only the rows of the files
        under this object's roots: `seance index --rebuild --root X` rebuilds X, not every root
        the shared cache serves (each would be read again in full at its next listing).  The
        full-text index of the rows kept is then made again from their stored text (FTS5's
        'rebuild': ~1.7 s of CPU per 10,000 sessions, no file read), so a rebuild still clears
        a fault no check sees (a byte changed in the posting lists, see the README)."""
        with self._write_lock:
            if reason is not None:
                self._rebuild(reason)
                return
            with self.bulk(), self.writing() as writer:
                ranges = self._ranges(writer.db)  # in the transaction: no other root's rows added meanwhile
                if ranges is not None:
                    for statement in _FTS_CONFIG:  # (an index made before a setting was added gets it)
                        writer.db.execute(statement)
                    writer.forget_under(ranges)
                    writer.db.execute("INSERT INTO fts (fts) VALUES ('rebuild')")
                    return
                writer.db.execute("DROP TABLE fts")
                writer.db.execute(_FTS_TABLE)
                for statement in _FTS_CONFIG:
                    writer.db.execute(statement)
                writer.db.execute("DELETE FROM files")
                writer.db.execute("DELETE FROM states")
                writer.db.execute("DELETE FROM listings")
                writer.put_text_rules(TEXT_RULES)  # (no text left from older rules)

    def _close_connections(self) -> None:
        """Close this thread's connection; every other thread's is left to that thread: it
        may be in the middle of a statement (a search worker as the picker exits), and closing
        it under that thread finalized the statement it was stepping (its next row: "Cannot
        operate on a closed database", or a segmentation fault).  The new generation makes
        each thread connect again at its next `db`, which drops its old connection; the
        thread's end closes its connection, in that thread (`_ThreadConnection`)."""
        self._generation += 1
        self._verified = {}  # a new connection may get an old one's id
        self._terms = {}
        mine = getattr(self._local, "held", None)
        if mine is not None:
            self._local.held = None
            mine.close()

    def close(self) -> None:
        self._close_connections()
        if self.in_memory:
            self._anchor.close()
        elif self.path.name != DB_NAME:  # a private index (the shared one was locked) is not kept
            self._delete_files()

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection (closed as the thread ends: `_ThreadConnection`)."""
        held: _ThreadConnection | None = getattr(self._local, "held", None)
        if held is not None and held.generation == self._generation and held.connection is not None:
            return held.connection
        if held is not None:  # of an older generation: dropped, not closed (a cursor may still be on it)
            held.connection = None
        connection = self._connect()
        self._verified.pop(id(connection), None)  # a connection gone since may have had its id
        self._local.held = _ThreadConnection(connection, self._generation, self._verified)
        return connection

    # -- reading -------------------------------------------------------------------------------

    def rows(self, payload: str = "summary", *, titles: bool = False) -> dict[tuple[str, int, int], tuple]:
        """Every indexed file whose row passes its check, keyed by the stat the index trusts:
        one SELECT, for the stat check (a row that fails is left out: its file is read again).

        Keys are `(path, size, mtime_ns)`, which hash and compare like a `FileInfo`, so an
        unchanged file's row is a C-level dict lookup.  Values are `(path, size, mtime_ns,
        session, reason, modified_ms, cwd, payload, text_seq, check)`: only what a listing
        needs (`row(path)` has the rest, for the few files read again).  `payload` is the
        column carried along: "summary" (for `decode_summary`) or "pi_json" (the ready
        `ls --json` object, so a warm listing decodes nothing).  `titles`: each tuple also
        carries the stored folded title and its check, for `stored_title` (one scan of
        `files` for both: at 100k sessions a second one costs a third of a second).
        """
        column, check = _PAYLOADS[payload]
        extra = ", title, title_check" if titles else ""
        columns = f"path, size, mtime_ns, session, reason, modified_ms, cwd, {column}, text_seq, {check}{extra}"
        found = [row for cursor in self._scan(self.db, columns) for row in cursor.fetchall()]
        good = [row for row in found if _row_check(_META_OF_ROW(row), row[7]) == row[9]]
        return dict(zip(map(_STAT_KEY, good), good, strict=True))

    def sessions_in(self, cwds: list[str] | None) -> list[tuple[int, str, int]]:
        """(file_id, path, modified_ms) of every indexed session whose header cwd is one of
        `cwds` (None: every session), unchecked (no blob is read): a project's last known
        listing, for a first paint that then reads only the rows it shows (`summaries`)."""
        where = "session = 1" if cwds is None else f"session = 1 AND cwd IN ({','.join('?' * len(cwds))})"
        scans = self._scan(self.db, "file_id, path, modified_ms", where, tuple(cwds or ()))
        return [row for cursor in scans for row in cursor.fetchall()]

    def files_bound(self) -> int:
        """At least as many as the files the index holds (its highest file id): how big it
        is, without a scan."""
        found = self.db.execute("SELECT max(file_id) FROM files").fetchone()
        return found[0] if found is not None and type(found[0]) is int else 0

    def summaries(self, *, file_ids: list[int] | None = None, paths: list[str] | None = None) -> list[bytes]:
        """The summary blobs of the sessions with these file ids (or paths) whose rows pass
        their check (a row that fails is left out)."""
        return [blob for _path, _check, blob in self.checked_summaries(file_ids=file_ids, paths=paths)]

    def checked_summaries(
        self, *, file_ids: list[int] | None = None, paths: list[str] | None = None
    ) -> list[tuple[str, tuple[int, int, int], bytes]]:
        """`summaries` as (path, (size, mtime_ns, check), blob): what `rows()` gives the same
        row, so a summary decoded from it can stand for that row's (`Catalog.keep_decoded`)."""
        column, values = ("file_id", file_ids) if file_ids is not None else ("path", paths or [])
        found: list[tuple] = []
        for start in range(0, len(values), 500):  # SQLite's variable limit, with room to spare
            part = values[start : start + 500]
            found += self.db.execute(
                "SELECT path, size, mtime_ns, session, reason, modified_ms, cwd, summary, text_seq, summary_check "
                f"FROM files WHERE session = 1 AND {column} IN ({','.join('?' * len(part))})",
                part,
            ).fetchall()
        return [
            (row[0], (row[1], row[2], row[9]), row[7])
            for row in found
            if row[7] and _row_check(_META_OF_ROW(row), row[7]) == row[9]
        ]

    def any_session(self, under: list[str], limit: int = 64) -> list[tuple[str, int, int]]:
        """(path, size, mtime_ns) of up to `limit` indexed sessions whose path starts with one
        of `under` (directory prefixes ending in a separator), without reading the others."""
        found: list[tuple[str, int, int]] = []
        for low, high in root_ranges(under):  # on the path index: other roots' rows are not read
            found += self.db.execute(
                "SELECT path, size, mtime_ns FROM files WHERE path >= ? AND path < ? AND session = 1 LIMIT ?",
                (low, high, limit - len(found)),
            ).fetchall()
            if len(found) >= limit:
                break
        return found

    def row(self, path: str) -> Row | None:
        """The row of one file, or None when there is none or it fails its check."""
        found = self.db.execute(
            "SELECT file_id, size, mtime_ns, session, text_seq, reason, modified_ms, cwd, summary, summary_check "
            "FROM files WHERE path = ?",
            (path,),
        ).fetchone()
        if found is None:
            return None
        file_id, size, mtime_ns, session, text_seq, reason, modified_ms, cwd, summary, check = found
        meta = (path, size, mtime_ns, session, reason, modified_ms, cwd, text_seq)
        if type(file_id) is not int or _row_check(meta, summary) != check:
            return None
        return Row._make(found[:9])

    def text_rules(self) -> int:
        """The version of the extraction rules (`fulltext.TEXT_RULES`) the stored full text is
        under: 0 for an index made before it was recorded (or a value of the wrong type)."""
        found = self.db.execute("SELECT value FROM meta WHERE key = 'text_rules'").fetchone()
        return found[0] if found is not None and type(found[0]) is int else 0

    def sessions_under(self, roots: Iterable[str]) -> list[tuple[int, str]]:
        """The (file id, path) of the sessions stored under `roots` (each spelled as discovery
        spells it, `root_ranges`)."""
        return [
            (file_id, path)
            for low, high in root_ranges(roots)
            for file_id, path in self.db.execute(
                "SELECT file_id, path FROM files WHERE session = 1 AND path >= ? AND path < ?", (low, high)
            )
        ]

    def heal_progress(self, rules: int) -> tuple[int, frozenset[int]]:
        """Where a heal to text rules `rules` left off (`put_heal_progress`): every file of a
        smaller id than the first number was read again under them but those of the second
        (they could not be read); (0, none) when no such heal began."""
        rows = self.db.execute("SELECT key, value FROM meta WHERE key LIKE ?", (f"heal {rules} %",)).fetchall()
        found = {key: value for key, value in rows if type(value) is int}
        retry = frozenset(value for key, value in found.items() if key.startswith(f"heal {rules} retry "))
        return found.get(f"heal {rules} from", 0), retry

    def put_heal_progress(self, rules: int, since: int, retry: Iterable[int]) -> None:
        """Record how far a heal to text rules `rules` went (`heal_progress`), so the next one
        goes on from there (the picker left, a file it could not read) rather than reading
        every stale session again."""
        with self.writing(full_text=False) as writer:
            writer.drop_heal_progress()
            rows = [(f"heal {rules} from", since), *((f"heal {rules} retry {file_id}", file_id) for file_id in retry)]
            writer.db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", rows)

    def stale_text_files(
        self,
        stale: Callable[[bytes], bool],
        cancel: Callable[[], bool] | None = None,
        fields: Mapping[str, bytes] | None = None,
    ) -> list[str] | None:
        """`stale_text_ids`' paths."""
        found = self.stale_text_ids(stale, cancel, fields)
        return None if found is None else [path for _file_id, path in found]

    def stale_text_ids(
        self,
        stale: Callable[[bytes], bool],
        cancel: Callable[[], bool] | None = None,
        fields: Mapping[str, bytes] | None = None,
    ) -> list[tuple[int, str]] | None:
        """The (file id, path) of the files, by id, whose stored text (a text chunk, not a
        metadata row; a chunk of one of `fields` holding its bytes, `fulltext.stale_fields`, too) or
        stored folded title (`files.title`: search's fold changed with the text rules) `stale`
        says an extraction change touches (`fulltext.stale_under`): one pass over every
        chunk's UTF-8 bytes, in one read transaction, through SQLite's bounded cache (the
        chunks are most of the index: 1.4 GB at 100,000 sessions, never mapped), then one over
        the stored summaries (only one whose name or first message holds an introducer has its
        title folded again, to compare).  ~1 s of CPU at 100,000 sessions, once per index
        (`Catalog.heal_text`).  None when `cancel()` turns true (asked between batches): the
        picker is left."""
        db = self.db
        file_ids: set[int] = set()
        marks: list[bytes | None] = [None] * (_FIELD_MASK + 1)  # by field rank: what makes its chunk stale
        for field, mark in (fields or {}).items():
            marks[FIELD_RANK[field]] = mark
        db.execute("PRAGMA mmap_size = 0")
        try:
            with self.snapshot():
                cursor = db.execute("SELECT rowid, CAST(body AS BLOB) FROM fts")
                while rows := cursor.fetchmany(256):  # (2 MB of chunks at a time)
                    if cancel is not None and cancel():
                        return None
                    file_ids.update(
                        rowid >> _FILE_SHIFT
                        for rowid, body in rows
                        if rowid & _SEQ_LIMIT >= _META_SEQS
                        and type(body) is bytes
                        and (stale(body) or _holds(body, marks[(rowid >> _FIELD_SHIFT) & _FIELD_MASK]))
                    )
                escaped = stale(b"\x1b")  # (a stored summary is JSON: its ESC is spelt \u001b)
                summaries = db.execute("SELECT file_id, summary, title FROM files WHERE session = 1")
                while rows := summaries.fetchmany(1024):
                    file_ids.update(
                        file_id
                        for file_id, summary, title in rows
                        if type(summary) is bytes
                        and (stale(summary) or (escaped and b"\\u001b" in summary))
                        and not _same_title(summary, title)
                    )
                ids = sorted(file_ids)
                paths: list[tuple[int, str]] = []
                for start in range(0, len(ids), 500):  # SQLite's variable limit, with room to spare
                    part = ids[start : start + 500]
                    query = f"SELECT file_id, path FROM files WHERE file_id IN ({','.join('?' * len(part))})"
                    paths += sorted(row for row in db.execute(query, part).fetchall() if type(row[1]) is str)
        finally:
            db.execute(f"PRAGMA mmap_size = {_MMAP_BYTES}")
        return paths

    def put_text_rules(self, rules: int) -> None:
        """Record that the stored full text is under extraction rules `rules` (`text_rules`)."""
        with self.writing(full_text=False) as writer:
            writer.put_text_rules(rules)

    def state(self, file_id: int) -> bytes | None:
        """A session's saved scan state, or None (read the file whole) when it fails its check."""
        found = self.db.execute("SELECT state, checksum FROM states WHERE file_id = ?", (file_id,)).fetchone()
        if found is None or _blob_check(found[0], file_id) != found[1]:
            return None
        return found[0]

    def listing(self, scope: bytes, files: bytes) -> Listing | None:
        """The stored answer for `scope` if it was made from exactly `files` (`files_key`) and
        passes its check (it is printed as is: a damaged one is never the answer)."""
        found = self.db.execute(
            "SELECT payload, reused, skipped, checksum FROM listings WHERE scope = ? AND files = ?", (scope, files)
        ).fetchone()
        return _checked_listing(found) if found is not None else None

    def stored_listing(self, scope: bytes) -> tuple[bytes, Listing] | None:
        """The answer stored for `scope`, whatever files it was made from: (its `files` key,
        the checked `Listing`), for a caller that checks the key itself later."""
        found = self.db.execute(
            "SELECT files, payload, reused, skipped, checksum FROM listings WHERE scope = ?", (scope,)
        ).fetchone()
        if found is None or type(found[0]) is not bytes:
            return None
        listing = _checked_listing(found[1:])
        return (found[0], listing) if listing is not None else None

    def listing_scopes(self, kind: bytes) -> list[bytes]:
        """The scopes of the stored answers of one kind (a scope's text up to its first NUL,
        with it), the newest stored first."""
        query = "SELECT scope FROM listings WHERE substr(scope, 1, ?) = ? ORDER BY rowid DESC"
        return [scope for (scope,) in self.db.execute(query, (len(kind), kind)).fetchall()]

    def put_listing(
        self,
        scope: bytes,
        files: bytes,
        parts: list[bytes],
        reused: int,
        not_sessions: list[tuple[str, str]],
        kept: int = LISTINGS_KEPT,
    ) -> None:
        """Store an answer for `scope` (replacing the one before): the `Listing` whose payload
        is `parts` concatenated (never joined in memory: 70 MB at 100,000 sessions); the
        newest `kept` scopes of its kind (what its scope says before the first NUL: `ls
        --json` answers, a query's rows, a query's answers) are kept, so many queries never
        push the listing out."""
        skipped = _encode("\0".join(part for pair in not_sessions for part in pair))
        check = zlib.crc32(repr((reused, skipped)).encode("utf-8", "surrogatepass"))
        for part in parts:  # `_blob_check` of the whole, a part at a time
            check = zlib.crc32(part, check)
        size = sum(map(len, parts))
        with self.writing(full_text=False) as writer:
            # The payload goes in through blob I/O, in pieces: bound as a value, SQLite copies
            # it whole, twice (70 MB at 100,000 sessions each, on top of the answer itself).
            # The zeroblob reserving its place is the row's last column, so not built either.
            cursor = writer.db.execute(
                "INSERT OR REPLACE INTO listings (scope, files, reused, skipped, checksum, payload) "
                "VALUES (?, ?, ?, ?, ?, zeroblob(?))",
                (scope, files, reused, skipped, check, size),
            )
            if size:
                with writer.db.blobopen("listings", "payload", cursor.lastrowid or 0) as blob:
                    for piece in _pieces(parts):
                        blob.write(piece)
            kind = scope.partition(b"\0")[0] + b"\0"
            writer.db.execute(
                "DELETE FROM listings WHERE substr(scope, 1, ?1) = ?2 AND rowid NOT IN "
                "(SELECT rowid FROM listings WHERE substr(scope, 1, ?1) = ?2 ORDER BY rowid DESC LIMIT ?3)",
                (len(kind), kind, kept),
            )

    def search(self, query: FullText, limit: int | None = None, *, include_cwd: bool = True) -> list[TextHit]:
        """One hit per file for a full-text query (`Query.full_text()`): every file in which
        each of its terms matches in some row (of the term's fields) and none of its
        exclusions does; `limit` caps how many (None: all of them).

        Not ranked (bm25 over every match costs too much per keystroke; callers rank by their
        own tiers and recency).  A file's reported hit is its best field (`fulltext.FIELD_RANK`:
        name, label, id, then user and assistant text, then tools' output), the first such
        row of the first term that has one.  Without `include_cwd` the cwd rows are not
        searched at all (in one project's scope the cwd does not count, and a cwd hit must not
        stand in for the session's text hit).  Raises `FullTextQueryError` for a malformed
        MATCH expression (any other error is the index's).
        """
        db = self.db
        db.execute("BEGIN")  # one snapshot for the signature check and the search
        try:
            return self._search(db, query, limit, include_cwd)
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def _search(self, db: sqlite3.Connection, query: FullText, limit: int | None, include_cwd: bool) -> list[TextHit]:
        from .search import TextHit

        under = self._root_ids(db)
        best = self._best_rows(db, query, include_cwd, None if under is None else under[1])
        if under is not None:  # the runs may hold a few other roots' files: not hits here
            best = {file_id: value for file_id, value in best.items() if file_id in under[0]}
        if not best:
            return []
        if limit is not None and len(best) > limit:
            best = dict(list(best.items())[:limit])
        if len(best) > 512:  # most files: one scan beats a long IN list
            paths = dict(row for cursor in self._scan(db, "file_id, path") for row in cursor.fetchall())
        else:
            ids = ",".join(str(int(file_id)) for file_id in best)
            paths = dict(db.execute(f"SELECT file_id, path FROM files WHERE file_id IN ({ids})").fetchall())
        # (the pattern made on the first snippet asked for, once: the CLI's listings ask for
        # none, and its word syntax is a pass over Unicode, ~60 ms; the picker's searches,
        # `search_by_path`, make it in their worker)
        chunk, highlight = self.chunk, functools.cache(lambda: query.highlight)
        return [
            TextHit(paths[file_id], _field_of(rowid), partial(chunk, rowid), highlight)
            for file_id, rowid in best.items()
            if file_id in paths
        ]

    def _best_rows(
        self,
        db: sqlite3.Connection,
        query: FullText,
        include_cwd: bool,
        ranges: list[tuple[int, int]] | None = None,
        *,
        packed: bool = False,
        checked: bool = True,
        state: tuple | None = None,
    ) -> dict[int, int]:
        """file_id -> the rowid of its best row (its best field's first: the lowest rowid,
        `_fts_rowid`), for every file the query matches (after checking the full-text index's signature, unless not
        `checked`: the caller checks it before it uses the answer).  `packed`: each SQL
        answer comes as one text (`_files_matching`).  `state`: which index this is (the
        `_path_ids` key, renewed by every write): each term's answer is kept for it
        (`_term_files`).  The answer may be a kept one: not to be changed."""
        from .search.query import FieldMatch

        if checked:
            self._check_signature(db)
        best: dict[int, int] | None = None
        for term in query.terms or (FieldMatch(query.match, None),):
            found = self._term_files(db, term, include_cwd, ranges, packed, state)
            if best is not None:  # (no `min` call: its call per file was half of this, ~9 ms for two
                # words in one project at 100,000 sessions, on the index thread every key of the second)
                found = {
                    key: value if value < other else other
                    for key, value in best.items()
                    if (other := found.get(key)) is not None
                }
            best = found
            if not best:
                return {}
        assert best is not None
        if query.exclude and best:
            excluded: set[int] = set()
            for term in query.exclude:
                excluded.update(self._term_files(db, term, include_cwd, ranges, packed, state))
            best = {file_id: value for file_id, value in best.items() if file_id not in excluded}
        return best

    TERMS_KEPT = 8  # the last few terms' answers (`_term_files`)

    def _term_files(
        self,
        db: sqlite3.Connection,
        term: FieldMatch,
        include_cwd: bool,
        ranges: list[tuple[int, int]] | None,
        packed: bool,
        state: tuple | None,
    ) -> dict[int, int]:
        """`_files_matching`, answered from the last few answers of the same index state:
        typing a query's second word asks the first one's again on every key (120 ms of
        SQLite at 100,000 sessions), and a space or a repeated key asks the same query.
        `ranges` is one of `_runs_of`'s lists, kept with the answer (its identity is the key)."""
        if state is None:
            return self._matching(db, term, include_cwd, ranges, packed)
        key = (state, term.phrase, term.fields, include_cwd, packed, id(ranges))
        kept = self._terms.get(key)
        if kept is not None and kept[0] is ranges:
            return kept[1]
        found = self._matching(db, term, include_cwd, ranges, packed)
        with self._terms_lock:
            terms = self._terms
            if len(terms) >= self.TERMS_KEPT:
                terms.pop(next(iter(terms)))  # the oldest
            terms[key] = (ranges, found)
        return found

    def _matching(
        self,
        db: sqlite3.Connection,
        term: FieldMatch,
        include_cwd: bool,
        ranges: list[tuple[int, int]] | None,
        packed: bool,
    ) -> dict[int, int]:
        """`_files_matching`, whose writes to its scratch table (temp, not the index) do not
        count as a change `_check_signature` must check again for (57 ms at 100,000 sessions)."""
        before = db.total_changes
        try:
            return self._files_matching(db, term, include_cwd, ranges, packed=packed)
        finally:
            verified = self._verified.get(id(db))
            if verified is not None and verified[1] == before:
                self._verified[id(db)] = (verified[0], db.total_changes)

    def _check_signature(self, db: sqlite3.Connection) -> None:
        """Raise if the full-text index does not match the signature its last write stored.
        Computing it counts FTS5's pages (57 ms at 100,000 sessions), so a connection checks
        again only after a commit (its own or another's: `data_version`, `total_changes`)."""
        mark = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes)
        if self._verified.get(id(db)) == mark:
            return
        stored = db.execute("SELECT value FROM meta WHERE key = 'fts'").fetchone()
        if stored is None or stored[0] != _fts_signature(db):
            raise sqlite3.DatabaseError("the full-text index does not match its signature")
        self._verified[id(db)] = mark

    def check_full_text(self) -> None:
        """Raise if the full-text index does not match its signature (as a search does first):
        for an answer searched with `best_fields(checked=False)`, in the same transaction."""
        self._check_signature(self.db)

    def adopt_fts_verdict(self, verdict: Verdict | None) -> None:
        """Take another process's signature check (`ftscheck.fts_verdict`) as this read transaction's
        own when it was of this index file, it matched, and this transaction sees the same
        FTS5 structure record (renewed, with a counter, by every change of the full-text
        index) and stored signature: the same full-text index.  Otherwise nothing changes
        (the search counts it here).  Call it inside `snapshot()`."""
        if verdict is None or self.in_memory:
            return
        path, structure, stored, matched = verdict
        db = self.db
        if not matched or path != str(self.path) or not db.in_transaction:
            return
        if fts_state(db) != (structure, stored):
            return
        self._verified[id(db)] = (db.execute("PRAGMA data_version").fetchone()[0], db.total_changes)

    def search_by_path(
        self, query: FullText, *, include_cwd: bool = True, within: Collection[str] | None = None
    ) -> IndexHits:
        """`search` without a cap, as a lazy mapping: session path -> its `TextHit`, each made
        when first asked for.  For the picker, which asks for a keystroke's every hit but shows
        a screenful: a common word at 100,000 sessions must not build 100,000 hit objects, nor
        read every file's path again (the path table is kept while the index is unchanged).
        `within`: the paths the caller will look up (one project's sessions, or every session
        it lists); the hits are of those files only, keyed by those very strings: a lookup with
        the caller's own path string is a pointer comparison, where an equal string read from
        the index is compared character by character (40,000 lookups: ~7 ms against ~45 ms).
        The index reads only the runs of file ids they span."""
        db = self.db
        db.execute("BEGIN")  # one snapshot for the signature check, the search and the paths
        try:
            state, ids, paths = self._path_ids(db)  # (the state of this snapshot: another thread may renew the cache)
            unindexed: Sequence[str] = ()
            if within is not None:
                ranges, keys, places, unindexed = self._runs_of(within, ids, state)
            else:
                ranges, keys, places = self._root_runs(db), paths, None
            best = self._best_rows(db, query, include_cwd, ranges, packed=True, state=state)
            ordered = within if places is not None and isinstance(within, Sequence) else None
            return IndexHits(best, keys, self.chunk, query.highlight, ordered, places, ids, unindexed)
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def unindexed(self, paths: Collection[str]) -> list[str]:
        """The paths of `paths` (under this index's roots) the index holds no file of, in one
        snapshot: what `Catalog.index_again` reads, and what it could not index."""
        with self.snapshot():
            _state, ids, _paths = self._path_ids(self.db)
            return _unindexed(paths, ids, 0)

    def _runs_of(
        self, within: Collection[str], ids: dict[str, int], state: tuple
    ) -> tuple[list[tuple[int, int]] | None, dict[int, str], list[int | None] | None, list[str]]:
        """`_id_runs` of the paths `within`, file_id -> its path string of `within`, (a
        sequence without a path twice) [file_id] -> its path's position in `within` (None:
        not a sequence, or a path twice), and the paths of `within` the index holds no file
        of (`_unindexed`), kept for the same `within` object and path table: the picker asks
        each keystroke about the same project's 40,000 paths (~20 ms)."""
        kept = self._runs_cache
        if kept is not None and kept[0] is within and kept[1] is ids:
            return kept[2], kept[3], kept[4], kept[5]
        places: list[int | None] | None = None
        if isinstance(within, Sequence):
            found = {file_id: place for place, path in enumerate(within) if (file_id := ids.get(path)) is not None}
            keys = dict(zip(found, map(within.__getitem__, found.values()), strict=True))
            if len(set(within)) == len(within):  # (a position per file would miss a path's other places)
                places = [None] * (max(found, default=-1) + 1)
                deque(map(places.__setitem__, found, found.values()), maxlen=0)
        else:
            keys = {file_id: path for path in within if (file_id := ids.get(path)) is not None}
        ranges = _id_runs(list(keys), self._known_files(state))  # (`state`: `ids`' own, `_path_ids`)
        unindexed = _unindexed(within, ids, len(keys))
        self._runs_cache = (within, ids, ranges, keys, places, unindexed)  # holds `within`: its id is not reused
        return ranges, keys, places, unindexed

    # -- answering a query from the index (`core.indexquery`) -------------------------------------

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction: everything read inside sees the same index."""
        db = self.db
        db.execute("BEGIN")
        try:
            yield
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def read_through_cache(self) -> None:
        """Read this connection's pages into SQLite's bounded cache instead of mapping the
        file: a query that scans every row would otherwise count up to `mmap_size` of
        mapped pages in its resident memory."""
        self.db.execute("PRAGMA mmap_size = 0")

    def query_rows(
        self, column: str = "pi_json", keep: Collection[int] = (), budget: int = 0, paths: Sequence[str] | None = None
    ) -> list[tuple] | None:
        """Every file as `(file_id, path, size, mtime_ns, session, text_seq, modified_ms, cwd,
        title, title_check, has_payload, reason, salt, payload, check)`: what a query ranks from and
        checks freshness against.  Every row is checked as `rows` checks it (its CRC over its
        values and its `column` payload, "pi_json" or "summary"), in C-level maps a chunk at a
        time; the payloads of the files in `keep` are kept while they total at most `budget`
        bytes (the others' `payload` is None: `checked_payloads` reads them again, and checks
        them against `salt`, the CRC of the row's values; `check` is the row's stored CRC, which
        `row_checks` reads alone).  None when a row fails its check
        (the caller takes the refreshing path, which reads that file again).  `paths`: only
        the rows of these files (`indexquery`'s update of kept rows after a few files changed)."""
        payload, check = _PAYLOADS[column]
        columns = (
            "file_id, path, size, mtime_ns, session, text_seq, modified_ms, cwd, title, title_check, "
            f"{payload} IS NOT NULL, reason, coalesce({payload}, x''), {check}"
        )
        crc32, meta_text, found = zlib.crc32, _ROW_META.__mod__, []
        where = f"path IN ({','.join('?' * len(paths))})" if paths is not None else ""
        for chunk in _chunks(self._scan(self.db, columns, where, tuple(paths or ()))):
            salts = list(map(crc32, map(_ENCODE_SURROGATES, map(meta_text, map(_QUERY_META, chunk)))))
            try:
                sums = list(map(crc32, map(itemgetter(12), chunk), salts))
            except TypeError:  # a payload that is not a blob
                return None
            if sums != list(map(itemgetter(13), chunk)):
                return None
            if keep and budget > 0:
                kept = [row[12] if row[0] in keep else None for row in chunk]
                budget -= sum(map(len, filter(None, kept)))
                found += [
                    (*row[:12], salt, payload, row[13]) for row, salt, payload in zip(chunk, salts, kept, strict=True)
                ]
            else:
                found += [(*row[:12], salt, None, row[13]) for row, salt in zip(chunk, salts, strict=True)]
        return found

    def row_checks(self) -> list[tuple[int, str, int, int, int, int]]:
        """Every file's `(file_id, path, size, mtime_ns, json_check, title_check)`: its row's
        stored CRCs (of every value and its object, and of its title) without the values, to
        tell which rows differ from those `query_rows` read before (`indexquery._updated_rows`)."""
        found: list[tuple[int, str, int, int, int, int]] = []
        for cursor in self._scan(self.db, "file_id, path, size, mtime_ns, json_check, title_check"):
            found += cursor.fetchall()
        return found

    def best_fields(self, query: FullText, *, include_cwd: bool, checked: bool = True) -> dict[int, tuple[str, int]]:
        """file_id -> (its best field, that row's rowid) for every file the query matches
        (`search` without building a `TextHit` per file: a common word matches them all);
        with `roots`, of the runs of file ids that hold theirs (a few others' may be among
        them: callers look their own files up).
        `checked=False`: the full-text signature is not checked first; the caller calls
        `check_full_text()` in the same read transaction before it uses the answer."""
        db = self.db
        # packed: 100,000 files' rowids as one text read by orjson, not 100,000 row tuples (~30 ms less)
        best = self._best_rows(db, query, include_cwd, self._root_runs(db), packed=True, checked=checked)
        return dict(zip(best, zip(_fields_of(best.values()), best.values(), strict=True), strict=True))

    def checked_payloads(self, rows: list[tuple], column: str = "pi_json") -> dict[int, bytes | None]:
        """file_id -> its stored `ls --json` object (`column` "pi_json") or summary blob
        ("summary", for `decode_summary`), for `query_rows()` rows, or None when it fails the
        row's check with the values that row holds (the caller reads that file again): what
        is used is never a damaged or mismatched row."""
        if not rows:
            return {}
        payload_column, check_column = _PAYLOADS[column]
        ids = ",".join(str(int(row[0])) for row in rows)
        found = {
            file_id: (payload, check)
            for file_id, payload, check in self.db.execute(
                f"SELECT file_id, {payload_column}, {check_column} FROM files WHERE file_id IN ({ids})"
            ).fetchall()
        }
        crc32 = zlib.crc32
        checked: dict[int, bytes | None] = {}
        for row in rows:
            payload, check = found.get(row[0], (None, None))
            checked[row[0]] = payload if type(payload) is bytes and crc32(payload, row[12]) == check else None
        return checked

    def scanned_payloads(
        self, salts: Mapping[int, int], budget: int, column: str = "pi_json", checks: Mapping[int, int] | None = None
    ) -> dict[int, bytes]:
        """`checked_payloads` for many files at once: file_id -> its stored object for the
        files in `salts` (file_id -> its row's salt), read in one scan of every row (a lookup
        each costs more once most files are wanted), up to `budget` bytes; one that fails its
        check, or over the budget, is left out (`checked_payloads` reads it again).  `checks`:
        file_id -> the row check the object must also have (rows kept earlier: the object
        is theirs, `queryobjects.rows_check`)."""
        payload_column, check_column = _PAYLOADS[column]
        crc32, found = zlib.crc32, {}
        for chunk in _chunks(self._scan(self.db, f"file_id, {payload_column}, {check_column}")):
            if budget <= 0:
                break
            for file_id, payload, check in chunk:
                salt = salts.get(file_id)
                if checks is not None and checks.get(file_id) != check:
                    continue
                if salt is not None and type(payload) is bytes and crc32(payload, salt) == check:
                    found[file_id] = payload
                    budget -= len(payload)
        return found

    # -- narrowing to the roots (see `__init__`) ------------------------------------------------

    def _ranges(self, db: sqlite3.Connection) -> list[tuple[str, str]] | None:
        """The path ranges a read of every file is narrowed to (`root_ranges`): None when it
        need not be, because no roots were given or no row lies outside them (a probe of the
        path index per gap between the ranges): then one plain scan of the table reads the
        same rows, in the same order, as before (a walk of the path index also looks each
        row up in the table)."""
        ranges = self._root_ranges
        if ranges is None or not ranges:
            return ranges
        gaps = [("", ranges[0][0]), *((ranges[at - 1][1], ranges[at][0]) for at in range(1, len(ranges)))]
        probe = "SELECT 1 FROM files WHERE path >= ? AND path < ? LIMIT 1"
        if any(db.execute(probe, gap).fetchone() for gap in gaps):
            return ranges
        if db.execute("SELECT 1 FROM files WHERE path >= ? LIMIT 1", (ranges[-1][1],)).fetchone():
            return ranges
        return None

    def _scan(
        self, db: sqlite3.Connection, columns: str, where: str = "", values: tuple = ()
    ) -> Iterator[sqlite3.Cursor]:
        """`SELECT columns FROM files [WHERE where]` over the files under the roots (`ranged_select`)."""
        return ranged_select(db, "files", columns, self._ranges(db), where, values)

    def _state(self, db: sqlite3.Connection) -> tuple:
        """Which index this is, for what is kept between reads: the full-text signature
        (renewed by every write) and the highest file id."""
        # One statement (each waits for the GIL on its return: see `_files_matching`).
        stored, highest = db.execute(
            "SELECT (SELECT value FROM meta WHERE key = 'fts'), (SELECT max(file_id) FROM files)"
        ).fetchone()
        return (None if stored is None else (stored,), (highest,))

    def _known_files(self, state: tuple) -> int:
        """How many files the index numbers (its highest file id, in `state`): what
        `_id_runs` weighs a set of runs against."""
        highest = state[1][0] if state[1] is not None else None
        return highest if type(highest) is int else 0

    def _root_ids(self, db: sqlite3.Connection) -> tuple[frozenset[int], list[tuple[int, int]] | None] | None:
        """The file ids under the roots, and the runs of them (`_id_runs`) FTS5 reads a rowid
        range each of, instead of every root's matches (None: they span most ids anyway);
        None when no read is narrowed (`_ranges`).  Kept for the index's `_state`."""
        if self._ranges(db) is None:
            return None
        state = self._state(db)
        kept = self._runs_under
        if kept is not None and kept[0] == state:
            return kept[1]
        paths = self._path_cache
        if paths is not None and paths[0] == state:
            ids = frozenset(paths[2])
        else:  # the file ids alone: the path index covers them, no table row is read; one text a range
            joined = [cursor.fetchone()[0] for cursor in self._scan(db, "group_concat(file_id)")]
            ids = frozenset(map(int, ",".join(filter(None, joined)).split(","))) if any(joined) else frozenset()
        found = (ids, _id_runs(list(ids), self._known_files(state)))
        self._runs_under = (state, found)
        return found

    def _root_runs(self, db: sqlite3.Connection) -> list[tuple[int, int]] | None:
        """`_root_ids`' runs: the rowid ranges a search reads (None: every file)."""
        under = self._root_ids(db)
        return None if under is None else under[1]

    def _path_ids(self, db: sqlite3.Connection) -> tuple[tuple, dict[str, int], dict[int, str]]:
        """The index's state in `db`'s snapshot, and path -> file_id of every indexed file
        under the roots and back, read again only after a write: keyed by that state (the
        full-text signature, renewed by every write, and the highest file id)."""
        key = self._state(db)
        kept = self._path_cache
        if kept is not None and kept[0] == key:
            return key, kept[1], kept[2]
        paths: dict[int, str] = dict(row for cursor in self._scan(db, "file_id, path") for row in cursor.fetchall())
        ids = {path: file_id for file_id, path in paths.items()}
        self._path_cache = (key, ids, paths)
        return key, ids, paths

    @staticmethod
    def _files_matching(
        db: sqlite3.Connection,
        term: FieldMatch,
        include_cwd: bool,
        ranges: list[tuple[int, int]] | None = None,
        *,
        packed: bool = False,
    ) -> dict[int, int]:
        """file_id -> the rowid of its best row for one term (its best field's first row).
        FTS5 yields the matching rows in rowid order, a file's best field first, so a file's
        first row is its best: SQLite keeps each file's first row in a scratch table keyed
        by file id (`INSERT OR IGNORE`: an append at the table's end for each new file, a
        lookup for each other row), in C and without the GIL.  (`GROUP BY rowid >> 24` sorted
        every matching row first: 350,000 for a common prefix at 100,000 sessions, two thirds
        of the query.)  `ranges`: only files whose id is in one of these (first, last) runs:
        FTS5 reads a rowid range instead of every match (one query a run).  `packed`: SQLite
        joins the answer into one text, so the query runs start to end without the GIL (a
        row at a time, each of 40,000 rows waits for it while the picker's other threads run
        Python).  Few statements: each one's return waits for the GIL, up to the 5 ms switch
        interval while a term scan runs Python, so the rows are tagged (no DELETE between two
        terms) and left to the read transaction's rollback; outside one, this opens its own.
        The scratch table's writes count in `total_changes`: see `_matching`."""
        if term.fields is None:
            skipped = [*OPT_IN, *(() if include_cwd else ("cwd",))]
            codes = [str(FIELD_RANK[name]) for name in skipped]
            where = f"((rowid >> {_FIELD_SHIFT}) & {_FIELD_MASK}) NOT IN ({','.join(codes)})"
        else:
            codes = [str(FIELD_RANK[name]) for name in term.fields if name in FIELD_RANK]
            where = f"((rowid >> {_FIELD_SHIFT}) & {_FIELD_MASK}) IN ({','.join(codes)})"
        tag = next(_TAGS)
        # ORDER BY rowid: FTS5's own order (no sort), and what makes the first row kept the best
        insert = (
            f"INSERT OR IGNORE INTO {_BEST} (tag, file, row) SELECT {tag}, rowid >> {_FILE_SHIFT}, rowid "
            f"FROM fts WHERE fts MATCH ? AND {where}{{}} ORDER BY rowid"
        )
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")
        try:
            try:
                Index._insert_best(db, insert, term.phrase, ranges)
            except sqlite3.OperationalError as error:
                if "no such table" not in str(error):
                    raise
                db.execute(_BEST_TABLE)  # (dropped by a change of temp_store: `bulk`)
                Index._insert_best(db, insert, term.phrase, ranges)
            if packed:
                return _unpacked(db.execute(f"SELECT group_concat(row) FROM {_BEST} WHERE tag = {tag}"))
            return _fetched(db.execute(f"SELECT file, row FROM {_BEST} WHERE tag = {tag}"))
        except sqlite3.OperationalError as error:
            if _is_query_mistake(error):
                raise FullTextQueryError(str(error)) from error
            raise
        finally:
            if own and db.in_transaction:
                db.execute("ROLLBACK")

    @staticmethod
    def _insert_best(db: sqlite3.Connection, insert: str, phrase: str, ranges: list[tuple[int, int]] | None) -> None:
        """Run `_files_matching`'s INSERT: over every file, or once per run of file ids."""
        if ranges is None:
            db.execute(insert.format(""), (phrase,))
            return
        ranged = insert.format(" AND rowid BETWEEN ? AND ?")
        for first, last in ranges:
            db.execute(ranged, (phrase, first << _FILE_SHIFT, ((last + 1) << _FILE_SHIFT) - 1))

    def chunk(self, rowid: int) -> str:
        """The text of one FTS row ("" when it is gone): a rowid lookup, no MATCH."""
        try:
            found = self.db.execute("SELECT body FROM fts WHERE rowid = ?", (rowid,)).fetchone()
        except sqlite3.Error:
            return ""
        return found[0] if found else ""

    # -- writing -------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self, *, full_text: bool = True) -> Iterator[Writer]:
        """A write transaction (serialised across threads); commits on success.  `full_text`
        False: it writes no full-text row (a stored answer), so the full-text signature it
        would store again (counting FTS5's pages: 20-60 ms at 10,000 sessions) is unchanged."""
        with self._write_lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield Writer(db)
                if full_text:
                    _store_fts_signature(db)
            except BaseException:
                if db.in_transaction:
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
        cursor = self.db.execute("INSERT INTO files (path, size, mtime_ns, session) VALUES (?, 0, 0, 0)", (path,))
        return int(cursor.lastrowid or 0)

    def _drop_text(self, file_id: int, meta_only: bool = False) -> None:
        if meta_only:  # one row per metadata field, each at its own seq
            rowids = [(_fts_rowid(file_id, seq, field),) for seq, field in enumerate(_META_FIELDS)]
            self.db.executemany("DELETE FROM fts WHERE rowid = ?", rowids)
            return
        low = file_id << _FILE_SHIFT
        self.db.execute("DELETE FROM fts WHERE rowid BETWEEN ? AND ?", (low, low + (1 << _FILE_SHIFT) - 1))

    def put_session(
        self,
        summary: SessionSummary,
        state: bytes,
        texts: list[tuple[str, str]] | None,
        *,
        continued: bool,
        text_seq: int,
        known: bool = True,
        since: tuple[int, int] | None = None,
    ) -> bool:
        """Store a session's summary and state; append (continued) or replace its text chunks.
        Whether it was written.

        `texts` (its `text_chunks`) None means the text is not indexed (and any stale text is dropped).  `known`
        False promises the path has no row yet: one INSERT instead of a lookup, a delete and
        an update (the cold-index case, ten thousand times).  A continued scan's `since` is
        the (size, mtime_ns) of the row it continued from (`text_seq` its next chunk seq):
        when the row is no longer that one (another thread or process wrote the file's row
        since it was read, and its chunks may sit at those seqs) nothing is written, so the
        row stays the other writer's, whole: the file differs from it, so it is read again
        next time (from the other writer's state), stale, not damaged.
        """
        modified_ms = int(summary.modified_ms)
        encoded, pi_json = encode_summary(summary), encode_pi_json(summary)
        title = encode_title(summary)
        title_check = _blob_check(title, summary.path)

        def columns(text_seq: int) -> tuple:
            meta = (summary.path, summary.size, summary.mtime_ns, 1, None, modified_ms, summary.cwd, text_seq)
            checks = (_row_check(meta, pi_json), _row_check(meta, encoded))
            return (
                summary.size,
                summary.mtime_ns,
                modified_ms,
                summary.cwd,
                encoded,
                pi_json,
                text_seq,
                *checks,
                title,
                title_check,
            )

        if not known:
            # The row goes in whole, with the text_seq its chunks will leave (no UPDATE after).
            new_seq = -1 if texts is None else _META_SEQS + min(len(texts), _SEQ_LIMIT - _META_SEQS)
            try:
                cursor = self.db.execute(
                    "INSERT INTO files (path, size, mtime_ns, session, modified_ms, cwd, summary, pi_json, "
                    "text_seq, json_check, summary_check, title, title_check) "
                    "VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (summary.path, *columns(new_seq)),
                )
            except sqlite3.IntegrityError:  # another thread or process indexed it meanwhile
                pass
            else:
                file_id = int(cursor.lastrowid or 0)
                if texts is not None:
                    self._insert_text(file_id, summary, _META_SEQS, texts)
                self._put_state(file_id, state)
                return True
        file_id = self._file_id(summary.path)
        if continued and since is not None:
            now = self.db.execute("SELECT size, mtime_ns, text_seq FROM files WHERE file_id = ?", (file_id,)).fetchone()
            if now != (*since, text_seq):
                return False
        if texts is None or not continued or text_seq < 0:
            self._drop_text(file_id)
            text_seq = -1
        else:
            self._drop_text(file_id, meta_only=True)
        if texts is not None:
            text_seq = self._insert_text(file_id, summary, max(text_seq, _META_SEQS), texts)
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, session = 1, reason = NULL, modified_ms = ?, cwd = ?, "
            "summary = ?, pi_json = ?, text_seq = ?, json_check = ?, summary_check = ?, title = ?, title_check = ? "
            "WHERE file_id = ?",
            (*columns(text_seq), file_id),
        )
        self._put_state(file_id, state)
        return True

    def _put_state(self, file_id: int, state: bytes) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO states (file_id, state, checksum) VALUES (?, ?, ?)",
            (file_id, state, _blob_check(state, file_id)),
        )

    def _insert_text(self, file_id: int, summary: SessionSummary, seq: int, chunks: list[tuple[str, str]]) -> int:
        """Insert a file's metadata rows and its text `chunks` from `seq` on; the next seq.
        In ascending rowid order: FTS5 writes its pending terms out as a new segment whenever
        a rowid is not above the last one, which, rows out of order, was a segment per session
        (a fifth of `index --rebuild`).  (The field ranks sit above the seq: the metadata
        rows are among the text's.)"""
        values = (summary.name or "", " ".join(summary.labels), summary.cwd, summary.id)
        rows = [(_fts_rowid(file_id, at, _META_FIELDS[at]), value) for at, value in enumerate(values) if value]
        chunks = chunks[: max(0, _SEQ_LIMIT - seq)]
        base, shift, codes = file_id << _FILE_SHIFT, _FIELD_SHIFT, FIELD_RANK
        rows += [(base | (codes[field] << shift) | (seq + number), body) for number, (field, body) in enumerate(chunks)]
        rows.sort(key=itemgetter(0))
        self.db.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", rows)
        return seq + len(chunks)

    def put_text_rules(self, rules: int) -> None:
        """Record the extraction rules the stored full text is under (`Index.text_rules`):
        no heal is under way then."""
        self.drop_heal_progress()
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('text_rules', ?)", (rules,))

    def drop_heal_progress(self) -> None:
        """Forget how far any heal went (`Index.heal_progress`)."""
        self.db.execute("DELETE FROM meta WHERE key LIKE 'heal %'")

    def put_not_session(self, path: str, size: int, mtime_ns: int, reason: str) -> None:
        """Remember that a file is not a session, so it is not re-read until it changes."""
        file_id = self._file_id(path)
        self._drop_text(file_id)
        check = _row_check((path, size, mtime_ns, 0, reason, None, None, -1), None)
        self.db.execute(
            "UPDATE files SET size = ?, mtime_ns = ?, session = 0, reason = ?, modified_ms = NULL, cwd = NULL, "
            "summary = NULL, pi_json = NULL, text_seq = -1, json_check = ?, summary_check = ?, title = NULL "
            "WHERE file_id = ?",
            (size, mtime_ns, reason, check, check, file_id),
        )
        self.db.execute("DELETE FROM states WHERE file_id = ?", (file_id,))

    def forget_under(self, ranges: list[tuple[str, str]]) -> None:
        """Forget every file in the path `ranges` (`root_ranges`), and every stored listing
        (an answer may have listed them)."""
        for cursor in ranged_select(self.db, "files", "file_id", ranges):
            for (file_id,) in cursor.fetchall():
                self._drop_text(file_id)
        for low, high in ranges:
            under = "SELECT file_id FROM files WHERE path >= ? AND path < ?"
            self.db.execute(f"DELETE FROM states WHERE file_id IN ({under})", (low, high))
            self.db.execute("DELETE FROM files WHERE path >= ? AND path < ?", (low, high))
        self.db.execute("DELETE FROM listings")

    def forget(self, path: str) -> None:
        found = self.db.execute("SELECT file_id FROM files WHERE path = ?", (path,)).fetchone()
        if found:
            self._drop_text(found[0])
            self.db.execute("DELETE FROM files WHERE file_id = ?", (found[0],))
            self.db.execute("DELETE FROM states WHERE file_id = ?", (found[0],))
