"""Every session's `ls --json` object, stored by position, and big query answers as positions.

A word in nearly every session (`sqlite` at 100,000 sessions) makes a 71 MB answer: over
the `ANSWER_BUDGET` a printed answer may keep, so every such query ranked 100,000 hits and
read their objects from the index again (1.7 s of CPU).  Here the objects are kept once,
and such an answer as the order of their positions (a few hundred KB):

- **the objects** (`write`, scope `objects_scope(roots' scope)`): every session's object of
  a `queryrows.KeptRows` (all projects), each as printed without marks
  (`core.marks.unmarked_objects`), joined by commas in a file of the cache directory
  (`objects_file`: mapped when read, 5x faster than a 70 MB blob through SQLite), in the
  order of the answer that made them, then the others newest first (that answer is one
  run); after them in the file, where each starts and each kept row's slot among them
  (1.6 MB at 100,000: read through SQLite, that blob was 2 ms of every answer printed
  from them; mapped, nothing is read or copied); in the `listings` entry, their number
  and bytes, the file's size and CRC, and whether `text.json_safe` leaves them as they
  are.  Kept
  under the same key as those rows (`index.files_key` of the files and the full-text
  index's `ftscheck.fts_state`) and tied to them (`rows_check`): made from exactly the
  files the rows were, each object checked against its row when it was read.  After a few
  files changed (an agent's append; the rows spliced, `core.rowsplice`), a store is made
  from the one before (`write_spliced`): each object whose row's file id, salt and check
  are still the index's copied as it is, only the others read and checked.  A tag of 16
  random bytes, in the entry and the file, names this store; a file that is not the
  entry's (replaced, damaged) is not used.  Its CRC is checked once: a note beside it then
  vouches for it while its identity (inode, size, mtime, ctime) is the one checked
  (`keptfile`, as for the kept rows).
- **an answer** (`compact`, under `runs_scope` of the query's own scope, beside its key
  kept as a printed answer's is): the objects' tag and the runs of consecutive slots it
  prints, in its order.  It is printed (`Objects.views`) only when its key is the files'
  and the full-text index's now and the objects under the same key carry its tag: the
  same bytes as the answer it was made from, which was printed from these very objects.

`Objects.load` and `runs_of` return None for what is not theirs: the caller ranks again.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from operator import sub
from pathlib import Path
from typing import Any, NamedTuple

from .keptfile import TAG_BYTES, checked_file, kept_file, mapped_file, write_tagged

_SCOPE_TAG = b"query-objects\0"
_RUNS_TAG = b"query-runs\0"
COMPACT_MAGIC = b"\0runs\0"  # an answer's payload that is runs
OBJECTS_KIND = "query-objects"  # its files' kind (`keptfile.kept_file`)


def objects_scope(scope: bytes) -> bytes:
    """The `listings` scope of the objects for the roots' scope (`index.scope_key`, all projects)."""
    return _SCOPE_TAG + scope


def rows_check(file_ids: Sequence[int], salts: Sequence[int], checks: Sequence[int]) -> int:
    """What ties stored objects to the rows they are in the order of: a CRC of their file
    ids, row salts and row checks (`json_check`, over the values and the object: each
    object stored was checked against its row's, so an object is reused after a few files
    changed only for a row whose check is still the index's: `write_spliced`)."""
    crc = zlib.crc32(array("q", salts).tobytes(), zlib.crc32(array("q", file_ids).tobytes()))
    return zlib.crc32(array("q", checks).tobytes(), crc)


def runs_scope(answered_as: bytes) -> bytes:
    """The `listings` scope of a query's runs (`compact`) for the scope its printed answer
    is kept under (`query-json` and the rest): a kind of its own, which a seance that does
    not know it never reads as a printed answer."""
    return _RUNS_TAG + answered_as.partition(b"\0")[2]


class Made(NamedTuple):
    """Objects just read and written (`write`): the `listings` entry to keep, and the
    objects to print from now (mapped from their file)."""

    entry: list[bytes]
    objects: Objects


def write(path: Path, objects: Sequence[bytes], check: int, slots: Sequence[int]) -> Made | None:
    """`objects` (stored `ls --json` objects, in the order to keep them) written at `path`,
    unmarked (`core.marks.unmarked_sized`) and joined by commas after a fresh tag (replaced
    whole: a reader that has the old file mapped keeps it, one that opens it now finds
    another tag and ranks again), a chunk at a time (never a second copy of them all), then
    (from a multiple of 8 bytes) where each starts, n + 1 offsets, each one past its
    object's comma, and `slots`: for each `KeptRows` position, where its object is among
    these; and the entry that names the file (the tag, the count, the rows' `rows_check`,
    the file's size and CRC, whether `text.json_safe` leaves the objects as they are, their
    bytes).  None when it cannot be written."""
    from .marks import unmarked_sized

    lengths: list[int] = []
    joined: list[int] = [0]  # the bytes of the objects and the commas between them

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(objects), _CHUNK):
            some, sizes = unmarked_sized(list(objects[start : start + _CHUNK]))
            if start:
                some = b"," + some
            lengths.extend(sizes)
            joined[0] += len(some)
            yield some
        yield _trailer(joined[0], (length + 1 for length in lengths), slots)

    written = write_tagged(path, chunks())  # (fills `lengths` and `joined`)
    return _made(path, written, len(lengths), joined[0], check)


def write_spliced(
    path: Path, old: Objects, sources: Sequence[int | bytes], check: int, slots: Sequence[int]
) -> Made | None:
    """`write`'s file and entry for objects in the order of `sources`: each the slot of an
    object `old` holds, or a stored `ls --json` object (unmarked here).  After a few files
    changed (an agent's append) the other sessions' objects are copied from the old file as
    they are (views of runs of consecutive slots: no object read from the index, checked or
    unmarked again), in the order `write` would keep them (the answer that made them first:
    one run).  `slots` as `write`'s.  None when it cannot be written."""
    from .marks import unmarked_sized

    offsets, data = old.offsets, old.data
    parts: list[bytes | memoryview] = []
    lengths: list[int] = []  # each object's bytes and its comma
    first = past = -1  # the run of old slots being gathered
    for source in [*sources, None]:
        if type(source) is int and source == past:
            past += 1
            continue
        if past > first:
            parts.append(data[offsets[first] : offsets[past] - 1])
            lengths += map(sub, offsets[first + 1 : past + 1], offsets[first:past])
        if type(source) is int:
            first, past = source, source + 1
        else:
            first = past = -1
            if source is not None:
                some, sizes = unmarked_sized([source])  # type: ignore[list-item]
                parts.append(some)
                lengths.append(sizes[0] + 1)
    joined = sum(lengths) - 1 if lengths else 0

    def chunks() -> Iterator[bytes | memoryview]:
        # a long run of the old store is written from its map as it is (71 MB at 100,000
        # sessions, one run after an append: joined first, it was copied once more); the
        # short parts (new objects, the runs of a store kept in another answer's order) joined
        batch: list[bytes | memoryview] = []
        for number, part in enumerate(parts):
            if number:
                batch.append(b",")
            if len(part) < _DIRECT_BYTES:
                batch.append(part)
                if len(batch) >= 2 * _CHUNK:
                    yield b"".join(batch)
                    batch = []
                continue
            if batch:
                yield b"".join(batch)
                batch = []
            yield part
        if batch:
            yield b"".join(batch)
        yield _trailer(joined, lengths, slots)

    return _made(path, write_tagged(path, chunks()), len(lengths), joined, check)


def _made(path: Path, written: tuple[bytes, int, int] | None, count: int, joined_bytes: int, check: int) -> Made | None:
    """The entry and the mapped objects of a file `write` or `write_spliced` just wrote
    (`written`: its tag, CRC and size; `count` objects, `joined_bytes` of them)."""
    from .text import json_safe_as_is

    if written is None:
        return None
    tag, crc, size = written
    try:
        mapped = mapped_file(path)
    except OSError:
        return None
    if mapped is None:
        return None
    if len(mapped) != size or mapped[:TAG_BYTES] != tag:  # (opened again by name: another
        mapped.close()  # process may have put its own store in place since, same count and bytes)
        return None
    safe = json_safe_as_is(mapped, TAG_BYTES, TAG_BYTES + joined_bytes)  # (the objects: the tag is random bytes)
    header = array("q", [count, check, len(mapped), crc, safe, joined_bytes])
    stored = Objects.of_file(tag, mapped, count, joined_bytes, safe=safe)
    if stored is None:
        return None
    return Made([tag, header.tobytes()], stored)


def _trailer(joined_bytes: int, spans: Iterable[int], slots: Sequence[int]) -> bytes:
    """What follows the objects in their file: padding to `_index_start`, where each object
    starts (`spans`: each object's bytes and its comma; n + 1 offsets), then `slots`."""
    padding = bytes(_index_start(joined_bytes) - TAG_BYTES - joined_bytes)
    return padding + array("q", accumulate(spans, initial=0)).tobytes() + array("q", slots).tobytes()


def _index_start(joined_bytes: int) -> int:
    """Where the offsets start in an objects file: after the tag and the objects, aligned."""
    return -(-(TAG_BYTES + joined_bytes) // 8) * 8


_CHUNK = 1024  # objects unmarked and written at a time
_DIRECT_BYTES = 1 << 20  # a run of an old store this long is written from its map, not joined (`write_spliced`)
_HEADER_FIELDS = 6  # an entry's numbers after its tag (`write`)


def objects_file(cache_dir: Path, scope: bytes) -> Path:
    """The file holding every session's objects stored under `scope` (`keptfile.kept_file`)."""
    return kept_file(cache_dir, scope, OBJECTS_KIND)


class Objects:
    """Stored objects, read: `tag`, and the printed bytes of runs of positions."""

    def __init__(
        self,
        tag: bytes,
        offsets: Sequence[int],
        data: bytes | memoryview,
        *,
        safe: bool,
        slots: bytes | memoryview,
        source: Any = None,
    ) -> None:
        self.tag, self.offsets, self.data = tag, offsets, data
        self.safe = safe  # `text.json_safe` leaves the objects as they are: printed as they are stored
        self._slots = slots
        # the file they were read from, open (`load`): its bytes can be spliced into a pipe
        self.source = source

    def slots(self) -> list[int] | None:
        """For each `KeptRows` position, where its object is among these; None when that is
        not a permutation (not theirs)."""
        slots = array("q")
        slots.frombytes(self._slots)
        found = slots.tolist()
        if len(found) != len(self) or (found and (min(found) < 0 or max(found) >= len(found))):
            return None
        return found if len(set(found)) == len(found) else None  # (n distinct of range(n): one set, not two)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def load(cls, entry: bytes, path: Path, check: int | None = None) -> Objects | None:
        """The objects of `write`'s `entry` (made for rows of `rows_check` `check`, if given),
        mapped from their file at `path`; None when either is not theirs or is damaged."""
        header = array("q")
        start = TAG_BYTES + _HEADER_FIELDS * header.itemsize
        if len(entry) != start:
            return None
        header.frombytes(entry[TAG_BYTES:start])
        count, made_for, size, crc, safe, joined_bytes = header
        if count < 0 or joined_bytes < 0 or (check is not None and made_for != check):
            return None
        if size != _index_start(joined_bytes) + (2 * count + 1) * header.itemsize:
            return None
        tag = entry[:TAG_BYTES]
        opened = checked_file(path, tag, size, crc)
        if opened is None:
            return None
        handle, mapped = opened
        found = cls.of_file(tag, mapped, count, joined_bytes, safe=safe == 1, source=handle)
        if found is None:
            handle.close()
        return found

    @classmethod
    def of_file(
        cls, tag: bytes, mapped: Any, count: int, joined_bytes: int, *, safe: bool, source: Any = None
    ) -> Objects | None:
        """The objects of a file `write` wrote, `mapped` (its size and bytes checked): views of
        its objects, offsets and slots, nothing copied; None when its offsets' ends are not
        its objects' (the file passed its CRC: its offsets are `write`'s, rising)."""
        view = memoryview(mapped)
        at = _index_start(joined_bytes)
        ends = at + (count + 1) * 8
        offsets = view[at:ends].cast("q")
        if offsets[0] != 0 or offsets[-1] != (joined_bytes + 1 if count else 0):
            return None
        data = view[TAG_BYTES : TAG_BYTES + joined_bytes]
        return cls(tag, offsets, data, safe=safe, slots=view[ends:], source=source)

    def parts(self, runs: list[int]) -> list[bytes]:
        """The answer's array: `[`, the objects of each run (first, last position) joined by
        commas, `]`, as parts that concatenate to it (no run: `[]`)."""
        if not runs:
            return [b"[]"]
        return [b"[", b",".join(self.views(runs)[1:-1:2]), b"]"]

    def spans(self, runs: list[int]) -> list[bytes | tuple[int, int]]:
        """`views(runs)` as where each run lies in the `source` file: (offset, length) in
        place of each run's view, the same bytes between them (to splice: `cli.output`)."""
        if not runs:
            return [b"[]"]
        offsets = self.offsets
        pairs = zip(runs[0::2], runs[1::2], strict=True)
        spans: list[bytes | tuple[int, int]] = [b","] * (len(runs) + 1)
        spans[1::2] = [(TAG_BYTES + offsets[first], offsets[last + 1] - 1 - offsets[first]) for first, last in pairs]
        spans[0], spans[-1] = b"[", b"]"
        return spans

    def views(self, runs: list[int]) -> list[bytes | memoryview]:
        """`parts(runs)` as views of the objects, never copied: `[`, each run, a comma
        between them, `]` (written as they are when `safe`)."""
        if not runs:
            return [b"[]"]
        offsets, data = self.offsets, self.data
        pairs = zip(runs[0::2], runs[1::2], strict=True)
        views: list[bytes | memoryview] = [b","] * (len(runs) + 1)
        views[1::2] = [data[offsets[first] : offsets[last + 1] - 1] for first, last in pairs]
        views[0], views[-1] = b"[", b"]"
        return views


def runs(positions: Sequence[int]) -> list[int]:
    """`positions` as runs of consecutive ones: first, last, first, last..."""
    found: list[int] = []
    previous = -2
    for position in positions:
        if position == previous + 1:
            found[-1] = position
        else:
            found += (position, position)
        previous = position
    return found


def compact(tag: bytes, found: list[int]) -> bytes:
    """An answer's payload: the objects' `tag` and its `runs`."""
    return COMPACT_MAGIC + tag + array("q", found).tobytes()


def runs_of(payload: bytes, objects: Objects) -> list[int] | None:
    """The runs of `compact`'s payload if it was made from `objects` (its tag), each within
    them; None otherwise."""
    head = len(COMPACT_MAGIC) + TAG_BYTES
    if not payload.startswith(COMPACT_MAGIC) or payload[len(COMPACT_MAGIC) : head] != objects.tag:
        return None
    numbers = array("q")
    if (len(payload) - head) % numbers.itemsize:
        return None
    numbers.frombytes(payload[head:])
    found = numbers.tolist()
    firsts, lasts = found[0::2], found[1::2]
    if len(firsts) != len(lasts) or not all(map(int.__le__, firsts, lasts)):
        return None
    if found and (min(firsts) < 0 or max(lasts) >= len(objects)):
        return None
    return found
