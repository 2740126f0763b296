"""Big cold reads in bounded memory (issue 14): the same answers from the paths that keep
memory flat — text scanned in worker processes, a listing kept, stored and written in parts,
bulk writes without mmap — and the compact bytes that made a cold listing small."""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from seance.cli import main
from seance.core import index as index_module
from seance.core import marks as marks_module
from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME, Index, files_key
from seance.core.marks import Mark, annotate_pi_json, annotated_pieces, marked_pieces
from seance.core.text import json_bytes


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "many"
    generate_corpus(root, sessions=300, projects=5, seed=21, mean_bytes=3_000)
    (root / "--p--").mkdir(exist_ok=True)
    (root / "--p--" / "junk.jsonl").write_text("no header\n")
    return root


def _fts_rows(cache: Path) -> list[tuple[int, str]]:
    db = sqlite3.connect(cache / DB_NAME)
    try:
        return db.execute("SELECT rowid, body FROM fts ORDER BY rowid").fetchall()
    finally:
        db.close()


def test_full_text_from_workers_is_the_serial_index(store: Path, tmp_path: Path) -> None:
    """`seance index` scans text in worker processes for big stores: the same FTS rows (ids,
    fields, chunks) as the serial scan, the same hits, the same skips."""
    serial = Catalog([store], cache_dir=tmp_path / "serial")
    parallel = Catalog([store], cache_dir=tmp_path / "parallel", workers=2)
    try:
        assert parallel.update_index() == serial.update_index() == 300
        assert [path.name for path, _ in parallel.last_stats.skipped] == ["junk.jsonl"]
        rows = _fts_rows(tmp_path / "serial")
        assert len(rows) > 300 * 4  # every session's metadata rows and text chunks
        assert _fts_rows(tmp_path / "parallel") == rows
        for query in ("sqlite", "tool:grep", '"fork tree"', "error:timeout"):
            hits = sorted((hit.path, hit.field) for hit in serial.search_text(query))
            assert hits and sorted((hit.path, hit.field) for hit in parallel.search_text(query)) == hits, query
    finally:
        serial.close()
        parallel.close()


def test_a_bulk_build_leaves_the_connection_as_it_was(store: Path, tmp_path: Path) -> None:
    """A refresh of many files writes without mmap and with statement journals on disk
    (memory bounded by the page cache), then restores both for the listings that follow."""
    catalog = Catalog([store], cache_dir=tmp_path / "cache")
    try:
        assert catalog.update_index() == 300
        index = catalog.index
        assert index is not None
        assert index.db.execute("PRAGMA mmap_size").fetchone()[0] == 256 << 20
        assert index.db.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY
        catalog.rebuild_index()
        assert index.db.execute("SELECT count(*) FROM files").fetchone()[0] == 0
        # the emptied full-text table keeps merging in sixteens (fewer rewrites while building)
        assert index.db.execute("SELECT v FROM fts_config WHERE k = 'automerge'").fetchone() == (16,)
        assert index.db.execute("PRAGMA mmap_size").fetchone()[0] == 256 << 20
        assert catalog.update_index() == 300
    finally:
        catalog.close()


def _fts_settings(db: sqlite3.Connection) -> dict[str, int]:
    return dict(db.execute("SELECT k, v FROM fts_config WHERE k IN ('automerge', 'hashsize')").fetchall())


def test_the_full_text_settings_hold_after_a_new_schema_and_after_every_reset(store: Path, tmp_path: Path) -> None:
    """FTS5's bulk settings (merge in sixteens; an 8 MB hash of pending terms, so a build
    writes an eighth of the level-0 segments) live in `fts_config`: set by a new schema, by a
    rebuild that empties the table, and by one that keeps another root's rows (an index made
    before a setting existed gets it there)."""
    wanted = {"automerge": 16, "hashsize": 8 << 20}
    cache = tmp_path / "cache"
    catalog = Catalog([store], cache_dir=cache)
    try:
        index = catalog.index
        assert index is not None
        assert _fts_settings(index.db) == wanted
        assert catalog.update_index() == 300
        index.db.execute("DELETE FROM fts_config WHERE k = 'hashsize'")  # (as an older index has it)
        catalog.rebuild_index()
        assert _fts_settings(index.db) == wanted
        assert catalog.update_index() == 300
    finally:
        catalog.close()
    other = tmp_path / "other"
    generate_corpus(other, sessions=3, projects=1, seed=5, mean_bytes=2_000)
    Catalog([other], cache_dir=cache).close()  # (opened, so the cache knows nothing of it yet)
    both = Catalog([store, other], cache_dir=cache)
    try:
        assert both.update_index() == 303
        assert both.index is not None
        both.index.db.execute("DELETE FROM fts_config WHERE k = 'hashsize'")
    finally:
        both.close()
    catalog = Catalog([store], cache_dir=cache)
    try:
        catalog.rebuild_index()  # another root's rows are kept: the table is not made again
        assert catalog.index is not None
        assert catalog.index.db.execute("SELECT count(*) FROM files").fetchone()[0] == 3
        assert _fts_settings(catalog.index.db) == wanted
    finally:
        catalog.close()


def test_a_bulk_write_zeroes_deleted_content_only_where_it_costs_no_writing(tmp_path: Path) -> None:
    """Inside `bulk` deleted content is zeroed only in pages written anyway (`secure_delete =
    FAST`: a rebuild's dropped table and FTS5's merged segments are not written once more just
    to zero them); after it the connection's own setting is back, so deleting a session (not a
    bulk write) zeroes it as the SQLite build does."""
    index = Index(tmp_path / "cache")
    try:
        db = index.db
        for setting in (1, 0):
            db.execute(f"PRAGMA secure_delete = {setting}")
            with index.bulk():
                assert db.execute("PRAGMA secure_delete").fetchone()[0] == (2 if setting else 0)
            assert db.execute("PRAGMA secure_delete").fetchone()[0] == setting
    finally:
        index.close()


def test_a_rebuilt_index_is_a_fresh_one(store: Path, tmp_path: Path) -> None:
    """`seance index --rebuild` over a built cache gives the very index a build into an
    empty cache gives: the same rows, the same full-text rows (ids, fields, chunks) and the
    same answers, ranking included."""
    fresh = Catalog([store], cache_dir=tmp_path / "fresh", workers=2)
    rebuilt = Catalog([store], cache_dir=tmp_path / "rebuilt", workers=2)
    try:
        assert fresh.update_index() == rebuilt.update_index() == 300
        rebuilt.rebuild_index()
        assert rebuilt.update_index() == 300
        assert fresh.index is not None and rebuilt.index is not None
        for select in ("SELECT * FROM files ORDER BY file_id", "SELECT * FROM states ORDER BY file_id"):
            assert rebuilt.index.db.execute(select).fetchall() == fresh.index.db.execute(select).fetchall()
        assert _fts_rows(tmp_path / "rebuilt") == _fts_rows(tmp_path / "fresh")
        for query in ("sqlite", "tool:grep", '"fork tree"', "error:timeout", "the"):
            ranked = [(hit.path, hit.field) for hit in fresh.search_text(query)]
            assert ranked and [(hit.path, hit.field) for hit in rebuilt.search_text(query)] == ranked, query
    finally:
        fresh.close()
        rebuilt.close()


def test_json_bytes_hold_only_their_size() -> None:
    """orjson's output keeps the buffer it grew (4 KB and up); a listing holds one encoded
    object per session, so `json_bytes` hands back bytes of their own size."""
    value = {"path": "/p/session.jsonl", "firstMessage": "x" * 600, "allMessagesText": "y" * 6000}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [json_bytes(value) for _ in range(200)]
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 200 * (len(kept[0]) + 200), held / 200


def test_a_listing_stored_from_parts_reads_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`put_listing` writes its parts through blob I/O a piece at a time (parts bigger than a
    piece, and runs of small ones); `listing` reads back their concatenation, check passed."""
    monkeypatch.setattr(index_module, "_BLOB_PIECE", 1000)
    index = Index(tmp_path / "cache")
    try:
        objects = [json_bytes({"path": f"/p/{number}.jsonl", "n": number}) for number in range(300)]
        parts = [b"[", *(piece for item in objects for piece in (item, b",")), b'{"path":"/big","x":"']
        parts += [b"z" * 2500, b'"}]']
        files = files_key([("/p/0.jsonl", 1, 2)])
        index.put_listing(b"scope", files, parts, 7, [("/p/junk.jsonl", "no header")])
        stored = index.listing(b"scope", files)
        assert stored is not None
        assert stored.payload == b"".join(parts)
        assert json.loads(stored.payload)[-1]["x"] == "z" * 2500
        assert (stored.reused, stored.skipped) == (7, [("/p/junk.jsonl", "no header")])
        assert index.listing(b"scope", files_key([("/p/0.jsonl", 1, 3)])) is None  # another stat: not valid
    finally:
        index.close()


def test_annotated_pieces_join_to_the_annotated_array(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `ls --json` answer is written in pieces: cold (one part per object) and warm (the
    stored array, cut before an object) they join to `annotate_pi_json` of the whole."""
    monkeypatch.setattr(marks_module, "PIECE_BYTES", 4096)
    catalog = Catalog([store], cache_dir=tmp_path / "cache", workers=2)
    try:
        cold = catalog.list_pi_json_parts()
        warm = catalog.list_pi_json_parts()
    finally:
        catalog.close()
    whole = b"".join(cold)
    assert len(cold) > 300 and warm == [whole]  # the stored answer is the cold one
    for parts in (cold, warm):
        pieces = list(annotated_pieces(parts, {}))
        assert len(pieces) > 10 and max(map(len, pieces)) < 3 * 4096
        assert b"".join(pieces) == annotate_pi_json(whole, {})
    first_id = json.loads(whole)[5]["id"]
    marks = {first_id: Mark(pinned=True, tags=("keep",))}
    assert b"".join(annotated_pieces(cold, marks)) == annotate_pi_json(whole, marks)
    assert list(annotated_pieces([b"[]"], {})) == [b"[]"]


def test_the_stored_answer_is_the_printed_one_and_marks_apply_to_it(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ls --json` stores its answer as printed without marks (`Catalog.ls_json_parts`): cold
    and warm, with marks or without, it prints what `annotate_pi_json` makes of pi's array
    (`list_pi_json`, which still gives pi's keys only)."""
    monkeypatch.setattr(marks_module, "PIECE_BYTES", 4096)
    catalog = Catalog([store], cache_dir=tmp_path / "cache", workers=2)
    try:
        cold = catalog.ls_json_parts()
        warm = catalog.ls_json_parts()
        pi = catalog.list_pi_json()
    finally:
        catalog.close()
    assert len(cold) > 300 and warm == [b"".join(cold)]  # the stored answer is the cold one, as printed
    assert b'"pinned"' not in pi and json.loads(pi) == json.loads(catalog_answer(store, tmp_path))
    first_id = json.loads(pi)[5]["id"]
    for marks in ({}, {first_id: Mark(pinned=True, tags=("keep",))}):
        for parts in (cold, warm):
            pieces = list(marked_pieces(parts, marks))
            assert b"".join(pieces) == annotate_pi_json(pi, marks)
            if parts is cold and not marks:  # written a piece at a time, never joined whole
                assert len(pieces) > 10 and max(map(len, pieces)) < 3 * 4096
    assert list(marked_pieces([b"[]"], {})) == [b"[]"]


def catalog_answer(store: Path, tmp_path: Path) -> bytes:
    """pi's array from a catalog of its own (a cold listing of an empty cache)."""
    catalog = Catalog([store], cache_dir=tmp_path / "other-cache")
    try:
        return catalog.list_pi_json()
    finally:
        catalog.close()


def test_cli_ls_json_cold_and_warm(store: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """The CLI's cold and warm `ls --all --json` print the same array (pinned and tags added)."""
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEANCE_DATA_DIR", str(tmp_path / "data"))
    answers = []
    for _run in range(2):
        assert main(["--root", str(store), "ls", "--all", "--json"]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1]
    listed = json.loads(answers[0])
    assert len(listed) == 300 and all(item["pinned"] is False and item["tags"] == [] for item in listed)
    modified = [item["modified"] for item in listed]
    assert modified == sorted(modified, reverse=True)
