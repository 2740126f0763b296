"""The rows a warm `ls --query` ranks from, stored whole for the files they were made from.

`indexquery.rank` needs, for every session found, its file id, path, `modified`, cwd, stored
folded title and row salt, each checked (every row's CRC, every title's): at 10,000 sessions
that is most of a warm query's own work (every row read, 10,000 values repr'd and CRC'd),
repeated by every query on a store that has not changed.  So once they are checked they are
kept as one blob (`pack`: by column, with where each title and path starts) in a file of the
cache directory, named by an entry of the index's `listings` table as every session's
objects are (`queryobjects`; an index in memory keeps the blob in the entry itself), and a
later query on the same files and the same full-text index maps them back, checked:

- **valid for**: the exact files found (`index.files_key`: every path, size and mtime) and
  the exact full-text index (`ftscheck.fts_state`: FTS5's structure record, renewed with a
  counter by every change, and the stored signature).  A file appended to, a new or gone
  file, or any write to the full-text index makes another key: the rows are then updated
  (`indexquery._updated_rows`: a kept row is used while its file id, row check and title
  check, kept with it, are the index's; the others are read and checked and, when every
  file found is one the index has as it is, spliced in where `fresh_sessions` would put
  them: `core.rowsplice`, `KeptRows.spliced`) and stored again at once for the new key.  A
  rebuild empties `listings`.
- **checked**: the entry carries the listing's CRC (`Index.listing`), and names the file by
  a random tag, its size and its CRC (a note beside it vouches for it once it passed, while
  its identity is the one checked: `keptfile.checked_file`): a damaged or replaced
  one is never used.  The payloads (`ls --json` objects) are not in it: they are read and
  checked against each row's salt as they are printed (`Index.checked_payloads`), as before.

- **kept when the store holds still**: without rows to update, the first query on a set of
  files keeps only their key (an empty blob), the second keeps the rows, the later ones use
  them.

`pack` returns None for rows it cannot hold exactly (a NUL in a cwd, a value not an int):
those queries just read the rows each time.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Sequence
from itertools import accumulate, count, repeat
from operator import add
from typing import TYPE_CHECKING, Any, NamedTuple, overload

if TYPE_CHECKING:
    from pathlib import Path

# the columns of `Index.query_rows()` kept here (see `indexquery`)
_FILE_ID, _PATH, _MODIFIED, _CWD, _TITLE, _TITLE_CHECK, _SALT, _CHECK = 0, 1, 6, 7, 8, 9, 12, 14
_NUMBERS = (_FILE_ID, _MODIFIED, _SALT, _CHECK, _TITLE_CHECK)  # the number columns, in the blob's order
# A blob's header: this mark (an earlier layout's header starts with the count: a seance that
# reads that one refuses this one, as this one refuses it), the sessions, then the byte length
# of each section: the file ids, `modified`, salts, row checks and title checks (a column each:
# -3 added the last two, `indexquery._updated_rows` compares them with the index's), the paths, cwds, titles
# (each joined by NULs), the skipped files, and where each title and path starts (+ the end).
_LAYOUT = -3
_HEADER_FIELDS = 2 + 7
_SCOPE_TAG = b"query-rows\0"
ROWS_KIND = "query-rows"  # their file's kind (`written`)
_FILE_MAGIC = b"\0rows-file\0"  # a `listings` entry that names the file (no blob starts so)


def stored_scope(scope: bytes) -> bytes:
    """The `listings` scope of a query's rows for the roots' scope (`index.scope_key`, all
    projects): one per roots, replaced by the next one stored.  (Its key, the `files` of
    `Index.listing`, is the files' `files_key` and the full-text index's `fts_state`.)"""
    return _SCOPE_TAG + scope


def pack(sessions: Sequence[tuple], skipped: Sequence[tuple[str, str]]) -> bytes | None:
    """`sessions` (checked `Index.query_rows()` rows, newest first, each ending with its
    stored `json_check`, as `query_rows` and `indexquery._updated_rows` make them) and the files that are
    not sessions (path, reason) as one blob; None when they cannot be held exactly.  Where
    each title and path starts is kept too: every query searches the joined titles by
    offset, and splitting 25 MB of them to find those was ~35 ms of each at 100,000 sessions."""
    if not _texts_hold(sessions, skipped):
        return None
    numbers = tuple([row[column] for row in sessions] for column in _NUMBERS)
    paths, titles = [row[_PATH] for row in sessions], [row[_TITLE] for row in sessions]
    starts = (starts_of(titles), starts_of(paths))
    cwds = [row[_CWD] or "" for row in sessions]
    try:  # (the numbers are checked as `packed` puts them in its array: not made twice)
        return KeptRows(numbers, "\0".join(paths), cwds, b"\0".join(titles), starts).packed(skipped)  # type: ignore[arg-type]
    except (TypeError, OverflowError):  # a NULL `modified`, a value not an int
        return None


def holdable(sessions: Sequence[tuple], skipped: Sequence[tuple[str, str]]) -> bool:
    """Whether `pack` can hold `sessions` and `skipped` exactly: every number an int of 64
    bits (not a NULL `modified`), no NUL in a path, cwd or title, every title bytes."""
    try:
        array("q", [row[column] for column in _NUMBERS for row in sessions])
    except (TypeError, OverflowError):  # a NULL `modified`, a value not an int
        return False
    return _texts_hold(sessions, skipped)


def _texts_hold(sessions: Sequence[tuple], skipped: Sequence[tuple[str, str]]) -> bool:
    """`holdable`'s part for the texts: no NUL in a path, cwd or title, every title bytes."""
    titles = [row[_TITLE] for row in sessions]
    texts = [*(row[_PATH] for row in sessions), *(row[_CWD] or "" for row in sessions)]
    texts += [part for pair in skipped for part in pair]
    return not any("\0" in text for text in texts) and all(type(title) is bytes and 0 not in title for title in titles)


def unpack(blob: bytes) -> tuple[list[tuple], list[tuple[str, str]]] | None:
    """`pack`'s sessions, as `Index.query_rows()` rows (the columns `indexquery.rank` and
    the printing use; the others 0, the payload None: read when printed), and skipped files;
    None for a blob that is not one."""
    columns = unpack_columns(blob)
    if columns is None:
        return None
    rows, skipped = columns
    return rows.rows(), skipped


class KeptRows(Sequence[tuple]):
    """`pack`'s sessions by column, as they are stored: each row (an `Index.query_rows()`
    tuple, as `unpack` makes it) is made only when it is asked for.  A query ranks every
    session's title and path from the joined columns (`titles`, `paths`, NUL-separated, as
    `indexquery` searches them) and needs the rows of its hits only: at 100,000 sessions
    the 100,000 tuples, and the split and join of 30 MB of titles, were most of its work."""

    def __init__(
        self,
        numbers: tuple[list[int], list[int], list[int], list[int], list[int]],
        paths: str,
        cwds: list[str],
        titles: bytes,
        starts: tuple[list[int], list[int]],
    ) -> None:
        """`numbers`: the file ids, `modified`, salts, row checks (`json_check`) and title
        checks, as the index stored them when the rows were kept; `starts`: where each title and path
        starts (`title_starts`, `path_starts`), as `pack` kept them."""
        self.file_ids, self.modified, self.salts, self.checks, self.title_checks = numbers
        self.paths, self.cwds, self.titles = paths, cwds, titles
        self._title_starts, self._path_starts = starts
        self._rows: list[tuple] | None = None  # every row, once most are asked for (`rows`)
        self._made = 0  # rows made one at a time

    def __len__(self) -> int:
        return len(self.file_ids)

    @overload
    def __getitem__(self, position: int) -> tuple: ...

    @overload
    def __getitem__(self, position: slice) -> list[tuple]: ...

    def __getitem__(self, position: int | slice) -> tuple | list[tuple]:
        if isinstance(position, slice):
            return [self[index] for index in range(len(self))[position]]
        if self._rows is not None:
            return self._rows[position]
        self._made += 1
        if self._made > len(self) // 8:  # most rows wanted (a word in most sessions): all made at once
            return self.rows()[position]
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(position)
        paths, titles = self.path_starts(), self.title_starts()
        path = self.paths[paths[position] : paths[position + 1] - 1]
        title = self.titles[titles[position] : titles[position + 1] - 1]
        modified, cwd, salt = self.modified[position], self.cwds[position], self.salts[position]
        return (self.file_ids[position], path, 0, 0, 1, 0, modified, cwd, title, 0, 1, None, salt, None)

    def take(self, positions: list[int]) -> list[tuple]:
        """The rows at `positions`, as `[self[p] for p in positions]` (most of them: every
        row made at once, then each picked in C, not one `__getitem__` call each)."""
        if self._rows is None and self._made + len(positions) <= len(self) // 8:
            return [self[position] for position in positions]
        every = self.rows()
        return [every[position] for position in positions]

    def rows(self) -> list[tuple]:
        """Every row, made at once (the tuples made by `zip` in C; the constant columns are
        endless `repeat`s, not strict, the others all as long: `pack` refuses a path or title
        holding a NUL, and the blob passed its CRC, so the split parts are the rows)."""
        if self._rows is None:
            paths, titles = self.split_columns()
            zero, one, none = repeat(0), repeat(1), repeat(None)
            columns = (self.file_ids, paths, zero, zero, one, zero, self.modified, self.cwds, titles, zero, one, none)
            self._rows = list(zip(*columns, self.salts, none, strict=False))
        return self._rows

    def split_columns(self) -> tuple[list[str], list[bytes]]:
        """Every path and every title, split out of the joined columns (in row order)."""
        return (self.paths.split("\0"), self.titles.split(b"\0")) if self.file_ids else ([], [])

    def packed(self, skipped: Sequence[tuple[str, str]]) -> bytes:
        """These rows and the files that are not sessions (path, reason) as `pack`'s blob,
        from the columns as they are (checked by `holdable`: in `pack`, or in
        `indexquery._updated_rows` for spliced rows)."""
        numbers = array("q")
        for column in (self.file_ids, self.modified, self.salts, self.checks, self.title_checks):
            numbers.fromlist(column)
        titles, paths = self.title_starts(), self.path_starts()
        sections = [
            numbers.tobytes(),
            _text(self.paths),
            _text("\0".join(self.cwds)),
            self.titles,
            _text("\0".join(part for pair in skipped for part in pair)),
            array("q", titles).tobytes(),
            array("q", paths).tobytes(),
        ]
        header = array("q", [_LAYOUT, len(self), *map(len, sections)])
        return b"".join([header.tobytes(), *sections])  # (one copy of the 48 MB at 100,000 sessions, not two)

    def spliced(self, pieces: Sequence[Run | tuple]) -> KeptRows:
        """The rows `pieces` name, in their order: runs of these rows (`Run`: first, past the
        last position) and `Index.query_rows()` rows, each ending with its `json_check` (read
        again: `holdable`, titles checked by the caller).  A few files changed among 100,000
        (an agent's append): the kept columns copied by runs, never made into rows."""
        numbers: tuple[list[int], ...] = ([], [], [], [], [])
        mine = (self.file_ids, self.modified, self.salts, self.checks, self.title_checks)
        cwds: list[str] = []
        paths: list[str] = []
        titles: list[bytes] = []
        path_starts: list[int] = []
        title_starts: list[int] = []
        at_path = at_title = 0
        old_paths, old_titles = self.path_starts(), self.title_starts()
        for piece in pieces:
            if isinstance(piece, Run):
                low, high = piece
                for into, column in zip(numbers, mine, strict=True):
                    into += column[low:high]
                cwds += self.cwds[low:high]
                paths.append(self.paths[old_paths[low] : old_paths[high] - 1])
                titles.append(self.titles[old_titles[low] : old_titles[high] - 1])
                path_starts += map(add, old_paths[low:high], repeat(at_path - old_paths[low]))
                title_starts += map(add, old_titles[low:high], repeat(at_title - old_titles[low]))
                at_path += old_paths[high] - old_paths[low]
                at_title += old_titles[high] - old_titles[low]
                continue
            for into, at in zip(numbers, _NUMBERS, strict=True):
                into.append(piece[at])
            cwds.append(piece[_CWD] or "")
            paths.append(piece[_PATH])
            titles.append(piece[_TITLE])
            path_starts.append(at_path)
            title_starts.append(at_title)
            at_path += len(piece[_PATH]) + 1
            at_title += len(piece[_TITLE]) + 1
        path_starts.append(at_path)
        title_starts.append(at_title)
        file_ids, modified, salts, checks, title_checks = numbers
        return KeptRows(
            (file_ids, modified, salts, checks, title_checks),
            "\0".join(paths),
            cwds,
            b"\0".join(titles),
            (title_starts, path_starts),
        )

    def path_starts(self) -> list[int]:
        """Where each path starts in `paths`, and one past the end (+1)."""
        return self._path_starts

    def title_starts(self) -> list[int]:
        """Where each title starts in `titles` (bytes), and one past the end (+1)."""
        return self._title_starts


class Run(NamedTuple):
    """A run of kept rows (`KeptRows.spliced`): from `first` to before `past`."""

    first: int
    past: int


def starts_of(parts: list[Any]) -> list[int]:
    """Where each of `parts` starts once they are joined by one separator, and one past the
    end (+1): the running sum of the lengths plus one per part before (C iterators only)."""
    return list(map(add, accumulate(map(len, parts), initial=0), count()))


def unpack_columns(blob: bytes | memoryview) -> tuple[KeptRows, list[tuple[str, str]]] | None:
    """`unpack`, its rows by column (`KeptRows`); None for a blob that is not one.  Each
    section is decoded from a view of the blob (only the titles, searched as bytes, are
    copied); the offsets are `pack`'s, whose ends are checked (the blob passed its CRC)."""
    header = array("q")
    size = header.itemsize * _HEADER_FIELDS
    if len(blob) < size:
        return None
    header.frombytes(blob[:size])
    layout, count, *lengths = header.tolist()
    column = count * header.itemsize
    if layout != _LAYOUT or count < 0 or min(lengths) < 0 or size + sum(lengths) != len(blob):
        return None
    if lengths[0] != 5 * column or lengths[5] != column + header.itemsize or lengths[6] != lengths[5]:
        return None
    view = memoryview(blob)
    sections = []
    for length in lengths:
        sections.append(view[size : size + length])
        size += length
    numbers = sections[0].cast("q")
    paths = _untext(sections[1])
    cwds = _untext(sections[2]).split("\0") if count else []
    skipped_text = _untext(sections[4])
    skipped_parts = skipped_text.split("\0") if skipped_text else []
    titles = bytes(sections[3])
    title_starts, path_starts = sections[5].cast("q").tolist(), sections[6].cast("q").tolist()
    ends = (title_starts[0], title_starts[-1], path_starts[0], path_starts[-1])
    expected = (0, len(titles) + 1, 0, len(paths) + 1) if count else (0, 0, 0, 0)
    if ends != expected or len(cwds) != count or len(skipped_parts) % 2:
        return None
    pairs = iter(skipped_parts)
    columns = [numbers[at * count : (at + 1) * count].tolist() for at in range(5)]
    file_ids, modified, salts, checks, title_checks = columns
    kept = KeptRows((file_ids, modified, salts, checks, title_checks), paths, cwds, titles, (title_starts, path_starts))
    return kept, list(zip(pairs, pairs, strict=True))


def written(cache_dir: Path, scope: bytes, blob: bytes) -> bytes | None:
    """`pack`'s `blob` kept in a file of the cache directory (`keptfile.kept_file` of
    `ROWS_KIND`), mapped when read: through SQLite's pages its 45 MB (100,000 sessions) took
    ~45 ms of each new word's query; mapped, its sections are decoded from views of the
    file, without a copy of the whole blob first.  Its `listings`
    entry, which names the file by a tag, its size and its CRC (`in_file`); None when it
    cannot be written (the caller keeps the blob itself)."""
    from .keptfile import kept_file, write_tagged

    made = write_tagged(kept_file(cache_dir, scope, ROWS_KIND), [blob])
    if made is None:
        return None
    tag, crc, size = made
    return _FILE_MAGIC + tag + array("q", [size, crc]).tobytes()


def in_file(cache_dir: Path, scope: bytes, payload: bytes) -> tuple[KeptRows, list[tuple[str, str]]] | None:
    """`unpack_columns` of the rows kept under `scope`: of the `listings` entry's `payload`
    itself, or of the file it names (`written`) when that is the file it was written as
    (its tag, size and CRC, or a note that vouches for it: `keptfile.checked_file`)."""
    if not payload.startswith(_FILE_MAGIC):
        return unpack_columns(payload)
    from .keptfile import TAG_BYTES, checked_file, kept_file

    numbers = array("q")
    head = len(_FILE_MAGIC) + TAG_BYTES
    if len(payload) != head + 2 * numbers.itemsize:
        return None
    numbers.frombytes(payload[head:])
    size, crc = numbers
    opened = checked_file(kept_file(cache_dir, scope, ROWS_KIND), payload[len(_FILE_MAGIC) : head], size, crc)
    if opened is None:
        return None
    handle, mapped = opened
    try:
        with memoryview(mapped) as view:
            return unpack_columns(view[TAG_BYTES:])  # (what it keeps is copied or decoded)
    finally:
        handle.close()
        # (a view still held by an exception's traceback in flight: the map goes with it,
        # and that exception, not a BufferError, is what the caller sees)
        with contextlib.suppress(BufferError):
            mapped.close()


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _untext(data: bytes | memoryview) -> str:
    return str(data, "utf-8", "surrogatepass")
