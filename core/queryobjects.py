"""Every session's `ls --json` object, stored by position, and big query answers as positions.

A word in nearly every session (`sqlite` at 100,000 sessions) makes a 71 MB answer: over
the `ANSWER_BUDGET` a printed answer may keep, so every such query ranked 100,000 hits and
read their objects from the index again (1.7 s of CPU).  Here the objects are kept once,
and such an answer as the order of their positions (a few hundred KB):

- **the objects** (`pack`, scope `objects_scope(roots' scope)`): every session's object of
  a `queryrows.KeptRows` (all projects, newest first), each as printed without marks
  (`core.marks.unmarked_objects`) and followed by a comma, with where each starts.  Kept
  under the same key as those rows (`index.files_key` of the files and the full-text
  index's `ftscheck.fts_state`): made from exactly the files the rows were, each object
  checked against its row when it was read.  A tag of 16 random bytes names this store.
- **an answer** (`compact`, under `runs_scope` of the query's own scope, beside its key
  kept as a printed answer's is): the objects' tag and the runs of consecutive positions
  it prints, in its order.  It is printed (`Objects.parts`) only when its key is the
  files' and the full-text index's now and the objects under the same key carry its tag:
  the same bytes as the answer it was made from, which was printed from these very objects.

`Objects.of` and `runs_of` return None for a blob that is not theirs: the caller ranks again.
"""

from __future__ import annotations

import os
import zlib
from array import array
from collections.abc import Sequence
from itertools import accumulate

_SCOPE_TAG = b"query-objects\0"
_RUNS_TAG = b"query-runs\0"
COMPACT_MAGIC = b"\0runs\0"  # an answer's payload that is runs
_TAG_BYTES = 16


def objects_scope(scope: bytes) -> bytes:
    """The `listings` scope of the objects for the roots' scope (`index.scope_key`, all projects)."""
    return _SCOPE_TAG + scope


def rows_check(file_ids: Sequence[int], salts: Sequence[int]) -> int:
    """What ties stored objects to the rows they are in the order of: a CRC of their file
    ids and row salts."""
    return zlib.crc32(array("q", salts).tobytes(), zlib.crc32(array("q", file_ids).tobytes()))


def runs_scope(answered_as: bytes) -> bytes:
    """The `listings` scope of a query's runs (`compact`) for the scope its printed answer
    is kept under (`query-json` and the rest): a kind of its own, which a seance that does
    not know it never reads as a printed answer."""
    return _RUNS_TAG + answered_as.partition(b"\0")[2]


def pack(joined: bytes, lengths: Sequence[int], check: int) -> list[bytes]:
    """Objects (unmarked, in `KeptRows` order; `joined` by commas, each `lengths` long) as
    the parts of one stored blob: a fresh tag, the count and the rows' `rows_check`, where
    each object starts (n + 1 offsets into the objects' section), then each object and a
    comma."""
    ends = array("q", accumulate((length + 1 for length in lengths), initial=0))
    header = array("q", [len(lengths), check])
    parts = [os.urandom(_TAG_BYTES), header.tobytes(), ends.tobytes()]
    if lengths:
        parts += [joined, b","]
    return parts


class Objects:
    """A stored objects blob, read: `tag`, and the printed bytes of runs of positions."""

    def __init__(self, tag: bytes, offsets: list[int], data: bytes | memoryview) -> None:
        self.tag, self.offsets, self.data = tag, offsets, data

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @classmethod
    def of(cls, blob: bytes, check: int | None = None) -> Objects | None:
        """`pack`'s blob (made for rows of `rows_check` `check`, if given); None when it is not one."""
        header = array("q")
        start = _TAG_BYTES + 2 * header.itemsize
        if len(blob) < start:
            return None
        header.frombytes(blob[_TAG_BYTES:start])
        count, made_for = header
        end = start + (count + 1) * header.itemsize
        if count < 0 or len(blob) < end or (check is not None and made_for != check):
            return None
        offsets = array("q")
        offsets.frombytes(blob[start:end])
        data = memoryview(blob)[end:]
        if offsets[0] != 0 or offsets[-1] != len(data) or any(map(int.__gt__, offsets[:-1], offsets[1:])):
            return None
        return cls(blob[:_TAG_BYTES], offsets.tolist(), data)

    def parts(self, runs: list[int]) -> list[bytes]:
        """The answer's array: `[`, the objects of each run (first, last position) joined by
        commas, `]`, as parts that concatenate to it (no run: `[]`)."""
        if not runs:
            return [b"[]"]
        offsets, data = self.offsets, self.data
        # (one copy of the objects, by the join: a run's slice is a view)
        pairs = zip(runs[0::2], runs[1::2], strict=True)
        views = [data[offsets[first] : offsets[last + 1] - 1] for first, last in pairs]
        return [b"[", b",".join(views), b"]"]


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
    head = len(COMPACT_MAGIC) + _TAG_BYTES
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
