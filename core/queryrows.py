"""The rows a warm `ls --query` ranks from, stored whole for the files they were made from.

`indexquery.rank` needs, for every session found, its file id, path, `modified`, cwd, stored
folded title and row salt, each checked (every row's CRC, every title's): at 10,000 sessions
that is most of a warm query's own work (every row read, 10,000 values repr'd and CRC'd),
repeated by every query on a store that has not changed.  So once they are checked they are
kept as one blob in the index's `listings` table, as the `ls --json` answer is, and a later
query on the same files and the same full-text index takes them back with one CRC:

- **valid for**: the exact files found (`index.files_key`: every path, size and mtime) and
  the exact full-text index (`ftscheck.fts_state`: FTS5's structure record, renewed with a
  counter by every change, and the stored signature).  A file appended to, a new or gone
  file, or any write to the full-text index makes another key: the rows are read and
  checked again (and stored again).  A rebuild empties `listings`.
- **checked**: the blob carries the listing's CRC (`Index.listing`): a damaged one is
  never used.  The payloads (`ls --json` objects) are not in it: they are read and checked
  against each row's salt as they are printed (`Index.checked_payloads`), as before.

- **kept when the store holds still**: the first query on a set of files keeps only their
  key (an empty blob), the second keeps the rows, the later ones use them.  A store that
  changes under every query (an agent appending) is not written 4.6 MB (10,000 sessions)
  per query for rows never used again.

`pack` returns None for rows it cannot hold exactly (a NUL in a cwd, a value not an int):
those queries just read the rows each time.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import repeat

# the columns of `Index.query_rows()` kept here (see `indexquery`)
_FILE_ID, _PATH, _MODIFIED, _CWD, _TITLE, _SALT = 0, 1, 6, 7, 8, 12
_HEADER_FIELDS = 6  # sessions, then the byte length of each of the five sections
_SCOPE_TAG = b"query-rows\0"


def stored_scope(scope: bytes) -> bytes:
    """The `listings` scope of a query's rows for the roots' scope (`index.scope_key`, all
    projects): one per roots, replaced by the next one stored.  (Its key, the `files` of
    `Index.listing`, is the files' `files_key` and the full-text index's `fts_state`.)"""
    return _SCOPE_TAG + scope


def pack(sessions: Sequence[tuple], skipped: Sequence[tuple[str, str]]) -> bytes | None:
    """`sessions` (checked `Index.query_rows()` rows, newest first) and the files that are
    not sessions (path, reason) as one blob; None when they cannot be held exactly."""
    try:
        numbers = array("q", [value for row in sessions for value in (row[_FILE_ID], row[_MODIFIED], row[_SALT])])
    except (TypeError, OverflowError):  # a NULL `modified`, a value not an int
        return None
    cwds = [row[_CWD] or "" for row in sessions]
    titles = [row[_TITLE] for row in sessions]
    texts = [*(row[_PATH] for row in sessions), *cwds, *(part for pair in skipped for part in pair)]
    if any("\0" in text for text in texts) or any(type(title) is not bytes or 0 in title for title in titles):
        return None
    sections = [
        numbers.tobytes(),
        _text("\0".join(row[_PATH] for row in sessions)),
        _text("\0".join(cwds)),
        b"\0".join(titles),
        _text("\0".join(part for pair in skipped for part in pair)),
    ]
    header = array("q", [len(sessions), *map(len, sections)])
    return header.tobytes() + b"".join(sections)


def unpack(blob: bytes) -> tuple[list[tuple], list[tuple[str, str]]] | None:
    """`pack`'s sessions, as `Index.query_rows()` rows (the columns `indexquery.rank` and
    the printing use; the others 0, the payload None: read when printed), and skipped files;
    None for a blob that is not one."""
    header = array("q")
    size = header.itemsize * _HEADER_FIELDS
    if len(blob) < size:
        return None
    header.frombytes(blob[:size])
    count, *lengths = header.tolist()
    if count < 0 or min(lengths) < 0 or size + sum(lengths) != len(blob) or lengths[0] != 3 * count * header.itemsize:
        return None
    sections = []
    for length in lengths:
        sections.append(blob[size : size + length])
        size += length
    numbers = array("q")
    numbers.frombytes(sections[0])
    values = numbers.tolist()
    paths, cwds = (_untext(section).split("\0") if count else [] for section in (sections[1], sections[2]))
    skipped_text = _untext(sections[4])
    skipped_parts = skipped_text.split("\0") if skipped_text else []
    titles = sections[3].split(b"\0") if count else []
    if len(paths) != count or len(cwds) != count or len(titles) != count or len(skipped_parts) % 2:
        return None
    # the tuples made by `zip` in C, not a tuple display each; the constant columns are endless
    # `repeat`s (not strict), the others all `count` long (checked above)
    zero, one, none = repeat(0), repeat(1), repeat(None)
    file_ids, modified, salts = values[0::3], values[1::3], values[2::3]
    columns = (file_ids, paths, zero, zero, one, zero, modified, cwds, titles, zero, one, none, salts, none)
    rows = list(zip(*columns, strict=False))
    pairs = iter(skipped_parts)
    return rows, list(zip(pairs, pairs, strict=True))


def _text(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _untext(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")
