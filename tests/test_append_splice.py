"""After an agent's append, the kept query rows and every session's stored objects are
spliced, not made again (`core.rowsplice`, `KeptRows.spliced`, `queryobjects.write_spliced`):
the rows still the index's kept in their order, the few read again put where
`fresh_sessions` puts them, the objects of those rows copied from the old store and only
the changed rows' objects read.  Every answer is the bytes of a fresh cache's, and an object
the index changed under an unchanged stat is never taken from the old store."""

from __future__ import annotations

import os
import random
import sqlite3
import zlib
from pathlib import Path

import orjson
import pytest
from query_harness import fresh_answer, kept_cache, ls_json
from write_harness import append_user_message

from seance.core.discovery import FileInfo
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME, Index
from seance.core.indexquery import Stale, fresh_sessions
from seance.core.keptfile import TAG_BYTES
from seance.core.queryobjects import COMPACT_MAGIC
from seance.core.queryrows import KeptRows, Run, pack, unpack_columns
from seance.core.rowsplice import listed_only, pieces, retained_positions

WORDS = ["the", "fix", "sqlite", '"fix the"', "error"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return kept_cache(tmp_path, monkeypatch)


class _Objects:
    """The objects read from the index: `Index.checked_payloads`' rows; every row's scanned
    (`Index.scanned_payloads`) refused."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[str] = []
        self.scans = 0
        checked, scanned = Index.checked_payloads, Index.scanned_payloads

        def counted(index: Index, rows: list[tuple], *args: object) -> object:
            self.read += [row[1] for row in rows]
            return checked(index, rows, *args)  # type: ignore[arg-type]

        def scanning(index: Index, *args: object, **kwargs: object) -> object:
            self.scans += 1
            return scanned(index, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(Index, "checked_payloads", counted)
        monkeypatch.setattr(Index, "scanned_payloads", scanning)


def _spliced_after_append(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch, root: Path, target: Path, text: str
) -> bytes:
    """`text` appended to `target`, then `the` asked: a fresh cache's answer, for which the
    index was asked for `target`'s object alone and no scan of every object (the others
    copied from the store before).  (That answer.)"""
    append_user_message(target, text)
    reference = fresh_answer(capsysbinary, monkeypatch, root, "the")
    with monkeypatch.context() as patched:
        objects = _Objects(patched)
        assert ls_json(capsysbinary, root, "the") == reference, text
    assert objects.read == [str(target)] and objects.scans == 0, (text, objects.read, objects.scans)
    return reference


def test_after_an_append_every_sessions_objects_are_spliced_reading_only_the_appended_ones(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first query after an append to one session reads from the index that session's
    object alone (no scan of every object: the others are the old store's), keeps the
    spliced store, and another word then reads none; every answer is a fresh cache's."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=40, projects=3, seed=21, mean_bytes=3000)
    for _ in range(3):  # the rows kept, then every session's objects
        ls_json(capsysbinary, root, "the")
    assert len(list(cache.glob("query-objects-*.bin"))) == 1
    files = sorted(root.rglob("*.jsonl"))
    for trial, target in enumerate([files[4], files[17], files[4]]):
        reference = _spliced_after_append(capsysbinary, monkeypatch, root, target, f"the quokka{trial}")
        for _ in range(2):  # its key kept, then its runs
            assert ls_json(capsysbinary, root, "the") == reference, trial
        # the spliced store keeps the answer that made it first, as `write` does: one run
        assert _runs_of("the") == 2, trial
        for word in WORDS[1:]:
            reference = fresh_answer(capsysbinary, monkeypatch, root, word)
            with monkeypatch.context() as patched:
                objects = _Objects(patched)
                assert ls_json(capsysbinary, root, word) == reference, (trial, word)
            assert objects.scans == 0, (trial, word)  # (small answers read their few objects; none scans them all)


def test_after_a_file_is_deleted_appends_are_still_spliced_and_every_answer_is_a_fresh_caches(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a watcher the index keeps a deleted session's row until it next reads the
    files; the queries after it, and after appends to other sessions, drop that row as
    `fresh_sessions` does and still splice: only the appended session's object is read."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=5, mean_bytes=3000)
    for _ in range(3):
        ls_json(capsysbinary, root, "the")
    files = sorted(root.rglob("*.jsonl"))
    files[9].unlink()
    assert ls_json(capsysbinary, root, "the") == fresh_answer(capsysbinary, monkeypatch, root, "the")
    for trial, target in enumerate([files[3], files[20]]):
        reference = _spliced_after_append(capsysbinary, monkeypatch, root, target, f"the wombat{trial}")
        assert str(files[9]) not in reference.decode()


def _runs_of(query: str) -> int:
    """How many numbers (first, last of each run) `query`'s kept runs hold (`queryobjects.compact`)."""
    with sqlite3.connect(Path(os.environ["SEANCE_CACHE_DIR"]) / DB_NAME) as db:
        found = [
            payload
            for scope, payload in db.execute("SELECT scope, payload FROM listings")
            if scope.startswith(b"query-runs\0") and scope.endswith(b"\0" + query.encode())
        ]
    (payload,) = found
    return (len(payload) - len(COMPACT_MAGIC) - TAG_BYTES) // 8


def test_an_object_the_index_changed_under_an_unchanged_stat_is_never_spliced_from_the_old_store(
    tmp_path: Path, cache: Path, capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's stored object put again with its row's check while its file's stat did
    not change (another object, checked), then an append to another session: the spliced
    store holds the index's object, not the one the old store kept for that row; the answer
    is the one made with every object read again (the kept rows and objects forgotten)."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=30, projects=2, seed=8, mean_bytes=3000)
    for _ in range(3):
        ls_json(capsysbinary, root, "the")
    files = sorted(root.rglob("*.jsonl"))
    changed = str(files[6])
    index = Index(cache)
    try:
        (row,) = index.query_rows("pi_json", paths=[changed]) or []
    finally:
        index.close()
    payload = orjson.loads(_stored_object(cache, changed))
    payload["firstMessage"] = "the object put again zz"
    other = orjson.dumps(payload)
    with sqlite3.connect(cache / DB_NAME) as db:
        db.execute(
            "UPDATE files SET pi_json = ?, json_check = ? WHERE path = ?", (other, zlib.crc32(other, row[12]), changed)
        )
    append_user_message(files[20], "the quokka")
    objects = _Objects(monkeypatch)
    got = ls_json(capsysbinary, root, "the")
    assert sorted(objects.read) == sorted([changed, str(files[20])]) and objects.scans == 0
    assert b"the object put again zz" in got
    with sqlite3.connect(cache / DB_NAME) as db:
        db.execute("DELETE FROM listings")  # every row and object read again from the index
    assert ls_json(capsysbinary, root, "the") == got


def _stored_object(cache: Path, path: str) -> bytes:
    with sqlite3.connect(cache / DB_NAME) as db:
        (found,) = db.execute("SELECT pi_json FROM files WHERE path = ?", (path,)).fetchone()
    return bytes(found)


def _row(file_id: int, path: str, modified: int, session: bool = True) -> tuple:
    """An `Index.query_rows()` row (with its `json_check` last) for `pieces`."""
    size, mtime = 100 + file_id, 1_000 + modified
    title = f"{file_id:08x}\nname {file_id}\nfirst {modified}".encode()
    salt = zlib.crc32(f"{path}{size}{mtime}{modified}".encode())
    check = zlib.crc32(title, salt)
    if not session:
        return (file_id, path, size, mtime, 0, 0, None, None, None, None, 0, "not a session", salt, None, check)
    return (file_id, path, size, mtime, 1, 0, modified, f"/w/{file_id % 3}", title, check, 1, None, salt, None, check)


def _infos(rows: list[tuple]) -> list[FileInfo]:
    """The files found as the index's `rows` describe them."""
    return [FileInfo(row[1], row[2], row[3]) for row in rows]


def _kept(rows: list[tuple]) -> KeptRows:
    """`rows` (each file found as it is) kept as a query keeps them: `fresh_sessions`'
    sessions, packed, read back."""
    old = fresh_sessions(rows, _infos(rows), text=True)
    assert not isinstance(old, Stale)
    kept = unpack_columns(pack(*old) or b"")
    assert kept is not None
    return kept[0]


def _checks(rows: list[tuple]) -> list[tuple]:
    """`Index.row_checks()` of `rows`: (file_id, path, size, mtime, json_check, title_check)."""
    return [(row[0], row[1], row[2], row[3], row[14], row[9]) for row in rows]


def test_spliced_rows_are_fresh_sessions_order_with_ties_new_removed_and_skipped_files_200_trials() -> None:
    """`rowsplice.pieces` and `KeptRows.spliced` against `fresh_sessions` over every row:
    files changed (a new time, often equal to others': the files' order decides), new files
    anywhere in the files' order, removed files (some still in the index: it forgets a gone
    file only when it next reads the files) and files that are not sessions, the index's
    rows in any order; the same rows in the same order, the same skipped files, and a blob
    `pack` would make."""
    chance = random.Random(12)
    for trial in range(200):
        count = chance.randrange(0, 40)
        paths = sorted(f"/s/{chance.randrange(10**6):07d}.jsonl" for _ in range(count))
        paths = list(dict.fromkeys(paths))
        rows = [_row(number, path, chance.randrange(6)) for number, path in enumerate(paths)]
        kept = _kept(rows)
        # the files now: some changed, some removed, some new, some not sessions
        now = list(rows)
        gone: list[tuple] = []  # (removed, their rows still in the index)
        for _ in range(chance.randrange(1, 6)):
            action = chance.randrange(4)
            if action == 0 and now:
                at = chance.randrange(len(now))
                now[at] = _row(now[at][0], now[at][1], chance.randrange(6) + (chance.random() < 0.3) * 10)
            elif action == 1 and now:
                removed = now.pop(chance.randrange(len(now)))
                if chance.random() < 0.5:
                    gone.append(removed)
            else:
                path = f"/s/{chance.randrange(10**6):07d}n.jsonl"
                if path not in {row[1] for row in now}:
                    now.append(_row(1000 + len(now) + trial, path, chance.randrange(6), session=action == 2))
        now.sort(key=lambda row: row[1])  # (the files' order: by name, as `discover` lists them)
        infos_now = _infos(now)
        index_rows = now + [row for row in gone if row[1] not in {now_row[1] for now_row in now}]
        chance.shuffle(index_rows)  # (`Index.row_checks` and `query_rows` in the index's order)
        stored = _checks(index_rows)
        positions = retained_positions(kept, stored)
        read = [row for row, position in zip(index_rows, positions, strict=True) if position is None]
        chance.shuffle(read)
        listed = listed_only(stored, positions, read, infos_now)
        assert listed is not None, trial
        expected = fresh_sessions(index_rows, infos_now, text=True)
        assert not isinstance(expected, Stale)
        spliced = pieces(kept, *listed, infos_now)
        assert spliced is not None, trial
        order, skipped = spliced
        rows_now = kept.spliced(order)
        columns = (0, 1, 6, 7, 8, 12)
        assert [tuple(row[c] for c in columns) for row in rows_now.rows()] == [
            tuple(row[c] if c != 7 else row[c] or "" for c in columns) for row in expected[0]
        ], trial
        assert skipped == expected[1], trial
        assert rows_now.packed(skipped) == pack(*expected), trial
        assert all(isinstance(piece, Run) or piece in read for piece in order)


def test_a_session_never_indexed_or_a_file_new_or_changed_is_left_to_fresh_sessions_a_gone_one_unlisted() -> None:
    """A session read again whose text was never indexed, or a file found that the index does
    not have as it is, is not spliced (`fresh_sessions` says it is stale); a file the index
    still has but that is gone is neither kept nor read again."""
    rows = [_row(number, f"/s/{number}.jsonl", number) for number in range(5)]
    infos = _infos(rows)
    kept = _kept(rows)
    unindexed = (*rows[2][:5], -1, *rows[2][6:])
    assert pieces(kept, [0, 1, None, 3, 4], [unindexed], infos) is None
    everything = [0, 1, 2, 3, 4]
    assert listed_only(_checks(rows), everything, [], infos) == (everything, [])
    # the index has a file not found now (gone): not listed, not read
    assert listed_only(_checks(rows), everything, [], infos[:-1]) == ([0, 1, 2, 3, None], [])
    assert listed_only(_checks(rows), [0, 1, 2, 3, None], [rows[4]], infos[:-1]) == ([0, 1, 2, 3, None], [])
    assert listed_only(_checks(rows[:-1]), everything[:-1], [], infos) is None  # a file found that the index lacks
    moved = [FileInfo(infos[0].path, infos[0].size, infos[0].mtime_ns + 1), *infos[1:]]
    assert listed_only(_checks(rows), everything, [], moved) is None


def test_retained_positions_keep_a_row_only_with_its_file_id_check_and_title_check_300_trials() -> None:
    """`rowsplice.retained_positions` (matched by file id, the checks compared as columns)
    against its definition, a kept row's (file id, row check, title check) equal to the
    index's row's: rows with a changed check, a changed title check, both, a file id
    forgotten and put back under another, new rows and gone rows, in any order."""
    chance = random.Random(21)
    for _ in range(300):
        count = chance.randrange(0, 30)
        rows = [_row(number, f"/s/{number:04d}.jsonl", chance.randrange(6)) for number in range(count)]
        kept = _kept(rows)
        stored = _checks(rows)
        for _ in range(chance.randrange(0, 6)):
            if not stored:
                break
            at, action = chance.randrange(len(stored)), chance.randrange(5)
            file_id, path, size, mtime, check, title_check = stored[at]
            if action == 0:
                stored[at] = (file_id, path, size, mtime, check ^ 1 << chance.randrange(32), title_check)
            elif action == 1:
                stored[at] = (file_id, path, size, mtime, check, title_check ^ 1 << chance.randrange(32))
            elif action == 2:
                stored[at] = (file_id + 1000, path, size, mtime, check, title_check)  # forgotten, put back
            elif action == 3:
                del stored[at]
            else:
                stored.append((2000 + at, f"/s/new{at}.jsonl", 1, 2, check, title_check))  # a new file, equal checks
        chance.shuffle(stored)
        where = {key: at for at, key in enumerate(zip(kept.file_ids, kept.checks, kept.title_checks, strict=True))}
        assert retained_positions(kept, stored) == [where.get((row[0], row[4], row[5])) for row in stored]
