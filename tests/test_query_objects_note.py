"""The objects file's CRC is checked once; after it, a note beside the file vouches for it by
the file's identity (device, inode, size, mtime, ctime: `core.queryobjects.vouch`), and any
write to the file or any other file in its place is checked by its CRC again (real files)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from test_query_objects import _corpus, _fresh, _ls

from seance.core import catalog as catalog_module
from seance.core.keptfile import NOTE_SUFFIX, PRUNE_GRACE_S, prune, vouched
from seance.core.queryobjects import OBJECTS_KIND, Objects, objects_file, runs, write

OBJECTS = [b'{"pinned":false,"a":1}', b'{"pinned":false,"b":[2]}', b'{"pinned":false,"c":"x,y"}']
SETTLE_S = 0.15  # longer than `_SETTLED_NS`: a file changed this long ago gets a note when checked


def _stored(tmp_path: Path, scope: bytes = b"one") -> tuple[bytes, Path]:
    path = objects_file(tmp_path, scope)
    made = write(path, OBJECTS, 7, [0, 1, 2])
    assert made is not None
    return b"".join(made.entry), path


def _note(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".bin") + NOTE_SUFFIX)


def _answer(store: Objects | None) -> bytes | None:
    return None if store is None else b"".join(store.parts(runs([0, 1, 2])))


def _is_vouched(entry: bytes, path: Path) -> bool:
    store = Objects.load(entry, path)
    assert store is not None
    return vouched(path, store.tag, int.from_bytes(entry[16 + 24 : 16 + 32], "little", signed=True), os.stat(path))


def test_a_checked_file_is_vouched_for_by_a_note_and_a_write_to_it_is_checked_again(tmp_path: Path) -> None:
    entry, path = _stored(tmp_path)
    whole = b"[" + b",".join(OBJECTS) + b"]"
    assert _answer(Objects.load(entry, path)) == whole
    assert not _note(path).exists()  # changed just now: a change in the same clock tick would keep its ctime
    time.sleep(SETTLE_S)
    assert _answer(Objects.load(entry, path)) == whole  # checked, and noted
    assert _note(path).exists() and _is_vouched(entry, path)
    # damaged in place, the same size, its mtime put back: the ctime says it was written
    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"x,y", b"x;y"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert Objects.load(entry, path) is None


def test_a_byte_identical_copy_in_its_place_is_checked_and_noted_again(tmp_path: Path) -> None:
    entry, path = _stored(tmp_path)
    time.sleep(SETTLE_S)
    assert Objects.load(entry, path) is not None and _note(path).exists()
    noted = _note(path).read_bytes()
    shutil.copy2(path, tmp_path / "copy")
    os.replace(tmp_path / "copy", path)  # another inode, the same bytes and mtime
    store = Objects.load(entry, path)
    assert store is not None and _answer(store) == b"[" + b",".join(OBJECTS) + b"]"
    assert not _is_vouched_by(noted, path)  # the old note was not this file's
    time.sleep(SETTLE_S)
    assert Objects.load(entry, path) is not None and _note(path).read_bytes() != noted and _is_vouched(entry, path)


def _is_vouched_by(note: bytes, path: Path) -> bool:
    saved = _note(path).read_bytes()
    try:
        _note(path).write_bytes(note)
        tag, crc = note[:16], int.from_bytes(note[16:24], "little", signed=True)
        return vouched(path, tag, crc, os.stat(path))
    finally:
        _note(path).write_bytes(saved)


def test_a_note_of_other_objects_or_a_damaged_note_vouches_for_nothing(tmp_path: Path) -> None:
    entry, path = _stored(tmp_path)
    time.sleep(SETTLE_S)
    assert Objects.load(entry, path) is not None and _is_vouched(entry, path)
    good = _note(path).read_bytes()
    for bad in (good[:-1] + bytes([good[-1] ^ 1]), good[:20], b"", good + b"x"):
        _note(path).write_bytes(bad)
        store = Objects.load(entry, path)
        assert store is not None and not vouched(path, store.tag, 0, os.stat(path))
    # objects stored again at the same path (another tag): the old note is not theirs
    _note(path).write_bytes(good)
    other_entry, _ = _stored(tmp_path)
    assert Objects.load(entry, path) is None  # the old entry's tag is not the file's
    assert Objects.load(other_entry, path) is not None
    assert _note(path).read_bytes() != good or not _is_vouched(other_entry, path)


def test_prune_takes_the_notes_of_the_files_it_deletes(tmp_path: Path) -> None:
    entries = {scope: _stored(tmp_path, scope) for scope in (b"one", b"two")}
    time.sleep(SETTLE_S)
    for entry, path in entries.values():
        assert Objects.load(entry, path) is not None and _note(path).exists()
    prune(tmp_path, [b"one"], OBJECTS_KIND, grace_s=0)
    assert _note(entries[b"one"][1]).exists() and entries[b"one"][1].exists()
    assert not _note(entries[b"two"][1]).exists() and not entries[b"two"][1].exists()


def test_prune_leaves_a_file_just_written_that_no_entry_names_yet(tmp_path: Path) -> None:
    """Another process writes its file, then stores the entry that names it: a prune in
    between must not take the file (its query would find it gone), only an older one."""
    entries = {scope: _stored(tmp_path, scope) for scope in (b"one", b"two")}
    prune(tmp_path, [b"one"], OBJECTS_KIND)  # "two" was just written, its entry not stored yet
    assert entries[b"two"][1].exists()
    old = time.time() - 2 * PRUNE_GRACE_S
    os.utime(entries[b"two"][1], (old, old))
    prune(tmp_path, [b"one"], OBJECTS_KIND)
    assert not entries[b"two"][1].exists() and entries[b"one"][1].exists()


def test_ls_query_printed_from_noted_objects_is_never_a_damaged_answer(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "ANSWER_BUDGET", 100)  # kept as runs of the objects
    _root, roots = _corpus(tmp_path)
    reference = _fresh(capsysbinary, monkeypatch, tmp_path, roots, "the")
    for _ in range(3):
        assert _ls(capsysbinary, roots, "the") == reference
    time.sleep(SETTLE_S)
    assert _ls(capsysbinary, roots, "the") == reference  # checked, and noted
    (objects,) = Path(os.environ["SEANCE_CACHE_DIR"]).glob("query-objects-*.bin")
    assert _note(objects).exists()
    assert _ls(capsysbinary, roots, "the") == reference  # printed on the note's word
    stat = objects.stat()
    data = objects.read_bytes()
    objects.write_bytes(data.replace(b'"pinned":false', b'"pinned":fals3', 1))
    os.utime(objects, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert _ls(capsysbinary, roots, "the") == reference  # ranked again, not the damaged bytes
