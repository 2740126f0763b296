"""Where each stored object starts, and each kept row's slot among them, lie in the objects
file after the objects (`core.queryobjects.write`), mapped when read: the `listings` entry
is a header alone whatever the number of objects (at 100,000 sessions a 1.6 MB blob read
through SQLite was 2 ms of every answer printed from them).  The file's CRC covers them, so
damage there is never read, and an entry of the older layout (offsets and slots in it) is
not read as one of this layout (real files)."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest

from seance.core.queryobjects import Objects, objects_file, runs, write

HEADER = 16 + 6 * 8  # the tag, then count, rows' check, file size, CRC, safe, the objects' bytes


def _objects(count: int) -> list[bytes]:
    return [b'{"pinned":false,"n":%d,"s":"%s"}' % (n, b"x," * (n % 5)) for n in range(count)]


def _written(tmp_path: Path, objects: list[bytes], slots: list[int]) -> tuple[bytes, Path]:
    path = objects_file(tmp_path, b"scope-%d" % len(objects))
    made = write(path, objects, 7, slots)
    assert made is not None
    entry = b"".join(made.entry)
    assert b"".join(made.objects.parts(runs(range(len(objects))))) == b"[" + b",".join(objects) + b"]"
    return entry, path


@pytest.mark.parametrize("count", [0, 1, 2, 3, 1025, 3000])  # (written 1024 at a time)
def test_the_entry_is_a_header_and_the_file_holds_the_offsets_and_slots(tmp_path: Path, count: int) -> None:
    objects = _objects(count)
    slots = list(range(count))[::-1]
    entry, path = _written(tmp_path, objects, slots)
    assert len(entry) == HEADER
    store = Objects.load(entry, path, 7)
    assert store is not None and len(store) == count and store.slots() == slots
    assert store.offsets[0] == 0 and len(store.offsets) == count + 1
    order = [*range(count // 2, count), *range(count // 3)]
    found = runs(order)
    expected = b"[" + b",".join(objects[position] for position in order) + b"]"
    assert b"".join(store.parts(found)) == expected
    data = path.read_bytes()
    pieces = [data[span[0] : span[0] + span[1]] if isinstance(span, tuple) else span for span in store.spans(found)]
    assert b"".join(pieces) == expected  # (where each run lies in the file: spliced from there)


def test_damaged_offsets_or_slots_in_the_file_are_never_read(tmp_path: Path) -> None:
    entry, path = _written(tmp_path, _objects(5), [4, 2, 0, 1, 3])
    data = path.read_bytes()
    for at in (len(data) - 8, len(data) - 5 * 8 - 8):  # a slot; the last offset
        damaged = bytearray(data)
        damaged[at] ^= 1
        path.write_bytes(bytes(damaged))
        assert Objects.load(entry, path) is None, at
    path.write_bytes(data)
    assert Objects.load(entry, path) is not None


def test_an_entry_of_the_older_layout_is_not_read(tmp_path: Path) -> None:
    """The older entry: the tag, five numbers (no objects' bytes), the offsets, the slots."""
    count = 4
    entry, path = _written(tmp_path, _objects(count), [0, 1, 2, 3])
    store = Objects.load(entry, path)
    assert store is not None
    older = entry[: 16 + 5 * 8] + array("q", store.offsets).tobytes() + array("q", [0, 1, 2, 3]).tobytes()
    assert Objects.load(older, path) is None
    assert Objects.load(entry[:-8], path) is None and Objects.load(entry + bytes(8), path) is None


def test_a_store_another_process_put_in_place_just_after_ours_is_never_taken_for_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write` maps the file it wrote by its name again: when another process's store of the
    same objects in another order (same count, same bytes) took its place in between, the
    objects mapped are not the entry's, so none are returned (the caller prints from the
    index) rather than the other store's objects under this store's slots."""
    from seance.core import queryobjects

    objects = _objects(4)
    path = objects_file(tmp_path, b"race")
    mapped_file = queryobjects.mapped_file

    def replaced_first(where: Path) -> object:
        monkeypatch.setattr(queryobjects, "mapped_file", mapped_file)
        assert write(where, objects[::-1], 7, [3, 2, 1, 0]) is not None  # (the other process)
        return mapped_file(where)

    monkeypatch.setattr(queryobjects, "mapped_file", replaced_first)
    assert write(path, objects, 7, [0, 1, 2, 3]) is None
    made = write(path, objects, 7, [0, 1, 2, 3])  # (no other writer: taken as written)
    assert made is not None
    assert b"".join(made.objects.parts(runs(range(4)))) == b"[" + b",".join(objects) + b"]"
