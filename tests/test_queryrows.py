"""A query's checked rows kept for the next query (`core.queryrows`): exact round trips,
refused when they cannot be held, used only for the same files and full-text index, and
never when damaged; the answers always equal the rows read and checked again."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson
import pytest
from conftest import IndexRowReads

from seance.core import queryrows
from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.index import DB_NAME
from seance.core.search import parse_query


def _row(file_id: int, path: str, modified: object, cwd: object, title: object, salt: int) -> tuple:
    # (the row's stored check after the object, as `Index.query_rows` returns it)
    return (file_id, path, 10, 20, 1, 3, modified, cwd, title, 99 + salt % 7, 1, None, salt, b'{"path":"x"}', salt ^ 5)


def test_rows_round_trip_with_what_paths_and_titles_may_hold() -> None:
    rows = [
        _row(7, "/s/--a--/one.jsonl", 1_700_000_000_000, "/home/dev/a", b"id1\nname\nfirst", 123),
        _row(2**40, "/s/--b--/t\udcff\u00e9.jsonl", -5, None, b"\n\n", 2**31),  # a surrogate-escaped path, no cwd
        _row(3, "/s/--c--/three.jsonl", 0, "", "caf\u00e9 \U0001f600".encode() + b"\nn\nf", 0),
    ]
    skipped = [("/s/--a--/junk.jsonl", "no header"), ("/s/x\udcff.jsonl", "")]
    blob = queryrows.pack(rows, skipped)
    assert blob is not None
    back = queryrows.unpack(blob)
    assert back is not None
    sessions, skipped_back = back
    assert skipped_back == skipped
    assert [(row[0], row[1], row[6], row[7] or "", row[8], row[12]) for row in rows] == [
        (row[0], row[1], row[6], row[7], row[8], row[12]) for row in sessions
    ]
    assert all(row[13] is None for row in sessions)  # objects are read (and checked) when printed
    kept = queryrows.unpack_columns(blob)
    assert kept is not None  # each row's checks, as the index stored them (`indexquery._updated_rows`)
    assert (kept[0].checks, kept[0].title_checks) == ([row[14] for row in rows], [row[9] for row in rows])
    assert queryrows.unpack(queryrows.pack([], []) or b"") == ([], [])


@pytest.mark.parametrize(
    "row",
    [
        _row(1, "/p", None, "/c", b"a\nb\nc", 1),  # no `modified`
        _row(1, "/p", 1.5, "/c", b"a\nb\nc", 1),  # not an int
        _row(1, "/p", 1, "/c\0d", b"a\nb\nc", 1),  # a NUL in a cwd
        _row(1, "/p", 1, "/c", "a\nb\nc", 1),  # a title not stored as bytes
        _row(1, "/p", 1, "/c", b"a\0\nb\nc", 1),  # a NUL in a title
    ],
)
def test_rows_it_cannot_hold_exactly_are_not_kept(row: tuple) -> None:
    assert queryrows.pack([row], []) is None


def test_a_blob_that_is_not_one_is_refused() -> None:
    blob = queryrows.pack([_row(1, "/p", 1, "/c", b"a\nb\nc", 1)], [])
    assert blob is not None
    assert queryrows.unpack(blob[:-1]) is None
    assert queryrows.unpack(blob + b"x") is None
    assert queryrows.unpack(b"") is None
    assert queryrows.unpack(blob[:8]) is None


def test_the_offsets_are_kept_with_the_rows_and_an_earlier_layout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where each title and path starts comes from the blob (a query at 100,000 sessions
    split 25 MB of titles to find them), and a blob of the layout before it (no offsets,
    its header starting with the count) is not read as one of this layout."""
    from array import array

    rows = [
        _row(7, "/s/--a--/caf\u00e9.jsonl", 5, "/home/a", b"id1\nname\nfirst", 1),
        _row(8, "/s/--b--/two.jsonl", 4, "", "\u00e9t\u00e9\nn\nf".encode(), 2),
    ]
    blob = queryrows.pack(rows, [])
    assert blob is not None
    monkeypatch.setattr(queryrows, "starts_of", lambda _parts: pytest.fail("offsets found again"))
    columns = queryrows.unpack_columns(blob)
    assert columns is not None
    kept = columns[0]
    assert kept.title_starts() == [0, 15, 15 + len("\u00e9t\u00e9\nn\nf".encode()) + 1]
    assert kept.path_starts() == [0, 20, 20 + len("/s/--b--/two.jsonl") + 1]
    assert kept[1][1] == "/s/--b--/two.jsonl" and kept[0][8] == b"id1\nname\nfirst"
    # the layout before: count, the five sections' lengths, the numbers interleaved by row
    sections = [
        array("q", [7, 5, 1, 8, 4, 2]).tobytes(),
        "\0".join(row[1] for row in rows).encode(),
        b"/home/a\0",
        b"\0".join(row[8] for row in rows),
        b"",
    ]
    earlier = array("q", [len(rows), *map(len, sections)]).tobytes() + b"".join(sections)
    assert queryrows.unpack_columns(earlier) is None
    # this layout's very blob with another mark in its header's first field is refused too
    assert queryrows.unpack_columns(array("q", [len(rows)]).tobytes() + blob[8:]) is None
    assert queryrows.unpack_columns(blob) is not None


def _printed(catalog: Catalog, query: str, cwd: str | None = None) -> list[dict] | None:
    answer = catalog.ranked(parse_query(query), cwd)
    if answer is None:
        return None
    return [orjson.loads(item) for chunk in catalog.pi_json_chunks(answer) for item in chunk]


def _reference(catalog: Catalog, query: str, cwd: str | None = None) -> list[dict]:
    answer = catalog.matching_pi_json(parse_query(query), cwd)
    assert answer is not None
    return json.loads(answer)


@contextmanager
def _refreshed(tmp_path: Path, sessions: int, projects: int, seed: int) -> Iterator[tuple[Path, Catalog]]:
    """A generated store and a catalog whose index holds it, closed afterwards."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=sessions, projects=projects, seed=seed, mean_bytes=3000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        yield root, catalog
    finally:
        catalog.close()


def _append_note(path: Path, entry_id: str) -> None:
    """An agent appends an entry: the file's stat changes."""
    entry = {"type": "custom", "customType": "note", "data": {}, "id": entry_id, "parentId": None}
    with path.open("ab") as handle:
        handle.write(json.dumps(entry).encode() + b"\n")


def test_the_next_query_on_the_same_files_takes_the_kept_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = IndexRowReads(monkeypatch)
    with _refreshed(tmp_path, 40, 3, 11) as (_root, catalog):
        expected = _reference(catalog, "sqlite")
        assert _printed(catalog, "sqlite") == expected  # rows read; only the files' key kept
        assert _printed(catalog, "sqlite") == expected  # the same files again: rows read and kept
        assert reads.count == 2
        for query in ["sqlite", "sqlt", "fix the", "zzqqxx"]:  # any query on the same files takes them back
            assert (_printed(catalog, query) or []) == _reference(catalog, query)
        assert reads.count == 2
        cwd = _reference(catalog, "sqlite")[0]["cwd"]
        before = reads.count
        assert _printed(catalog, "sqlite", cwd) == _reference(catalog, "sqlite", cwd)  # one project: the same rows
        assert reads.count == before


def test_a_changed_file_or_full_text_index_reads_the_rows_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = IndexRowReads(monkeypatch)
    with _refreshed(tmp_path, 30, 2, 12) as (root, catalog):
        assert _printed(catalog, "sqlite") == _printed(catalog, "sqlite") == _reference(catalog, "sqlite")  # kept
        _append_note(sorted(root.rglob("*.jsonl"))[4], "0badf00d")
        before = reads.count
        _printed(catalog, "sqlite")
        assert reads.count > before  # not the kept rows: they were made from other files
        assert _printed(catalog, "sqlite") == _reference(catalog, "sqlite")
        catalog.rebuild_index()  # file ids renumbered: every kept answer is dropped
        catalog.refresh()
        before = reads.count
        assert _printed(catalog, "sqlite") == _reference(catalog, "sqlite")
        assert reads.count > before


def test_a_store_changing_under_every_query_keeps_no_rows(tmp_path: Path) -> None:
    """An agent appending between queries: each query sees new files, so only their key is
    kept (no rows written that no query would use)."""
    with _refreshed(tmp_path, 20, 2, 14) as (root, catalog):
        target = sorted(root.rglob("*.jsonl"))[3]
        for step in range(3):
            _append_note(target, f"0badf0{step:02d}")
            assert _printed(catalog, "sqlite") == _reference(catalog, "sqlite")
            with sqlite3.connect(tmp_path / "cache" / DB_NAME) as db:
                query = "SELECT length(payload) FROM listings WHERE substr(scope, 1, 11) = CAST(? AS BLOB)"
                kept = db.execute(query, ("query-rows\0",)).fetchall()
            assert kept == [(0,)]


def test_damaged_kept_rows_are_never_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = IndexRowReads(monkeypatch)
    with _refreshed(tmp_path, 30, 2, 13) as (_root, catalog):
        expected = _reference(catalog, "sqlite")
        assert _printed(catalog, "sqlite") == _printed(catalog, "sqlite") == expected  # rows read, checked and kept
        with sqlite3.connect(tmp_path / "cache" / DB_NAME) as db:  # one byte of the kept rows flipped
            db.execute(
                "UPDATE listings SET payload = CAST(substr(payload, 1, 60) || 'X' || substr(payload, 62) AS BLOB) "
                "WHERE substr(scope, 1, 11) = CAST('query-rows' || char(0) AS BLOB)"
            )
        before = reads.count
        assert _printed(catalog, "sqlite") == expected
        assert reads.count == before + 1  # the damaged blob failed its check: the rows were read again


def test_kept_rows_are_read_from_their_file_and_never_when_it_is_damaged_or_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows are kept in a file of the cache directory that their `listings` entry names
    (not as a blob in it: read through SQLite's pages, 45 MB at 100,000 sessions), mapped
    when read; a byte of it changed, or another store's file in its place, is never used:
    the rows are read and checked again, and kept again."""
    reads = IndexRowReads(monkeypatch)
    cache = tmp_path / "cache"
    with _refreshed(tmp_path, 30, 2, 17) as (_root, catalog):
        expected = _reference(catalog, "sqlite")
        assert _printed(catalog, "sqlite") == _printed(catalog, "sqlite") == expected  # rows read, checked and kept
        (kept,) = cache.glob(f"{queryrows.ROWS_KIND}-*.bin")
        with sqlite3.connect(cache / DB_NAME) as db:
            (entry,) = db.execute(
                "SELECT payload FROM listings WHERE substr(scope, 1, 11) = CAST('query-rows' || char(0) AS BLOB)"
            ).fetchone()
        assert len(entry) < 100 and kept.stat().st_size > 30 * 100  # the entry names the file, which holds them
        assert (_printed(catalog, "fix the") or []) == _reference(catalog, "fix the")
        assert reads.count == 2  # taken back from the file
        data = bytearray(kept.read_bytes())
        data[len(data) // 2] ^= 0x20  # a title's letter, say
        kept.write_bytes(bytes(data))
        assert (_printed(catalog, "fix the") or []) == _reference(catalog, "fix the")
        assert reads.count == 3  # damaged: the rows were read again
        assert (_printed(catalog, "fix the") or []) == _reference(catalog, "fix the")
        assert reads.count == 4  # (the files' key kept again, then the rows)
        assert (_printed(catalog, "zzqqxx") or []) == _reference(catalog, "zzqqxx")
        assert reads.count == 4
        other = tmp_path / "other"
        other.write_bytes(kept.read_bytes())
        assert (_printed(catalog, "sqlt") or []) == _reference(catalog, "sqlt")
        before = reads.count
        os.replace(other, kept)  # the same bytes, but not the file checked: its note no longer vouches
        data = bytearray(kept.read_bytes())
        data[:16] = bytes(16)  # another store's tag
        kept.write_bytes(bytes(data))
        assert (_printed(catalog, "sqlt") or []) == _reference(catalog, "sqlt")
        assert reads.count == before + 1


def test_an_error_while_the_kept_rows_file_is_decoded_reaches_the_caller_as_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception raised while the mapped rows file is decoded (Ctrl-C at 100,000 sessions,
    say) holds views of the map in its traceback: closing the map must neither replace it
    with a BufferError nor leave the file open."""
    cache = tmp_path / "cache"
    with _refreshed(tmp_path, 12, 2, 5) as (_root, catalog):
        assert _printed(catalog, "sqlite") == _printed(catalog, "sqlite")  # the rows kept in their file
        (kept,) = cache.glob(f"{queryrows.ROWS_KIND}-*.bin")
        with sqlite3.connect(cache / DB_NAME) as db:
            scope, entry = db.execute(
                "SELECT scope, payload FROM listings WHERE substr(scope, 1, 11) = CAST('query-rows' || char(0) AS BLOB)"
            ).fetchone()
        assert queryrows.in_file(cache, scope, entry) is not None
        opened: list = []
        real_open = open

        def tracked_open(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
            handle = real_open(*args, **kwargs)  # type: ignore[call-overload]
            opened.append(handle)
            return handle

        class Interrupted(KeyboardInterrupt):
            pass

        def interrupted(*_args: object) -> None:
            raise Interrupted

        monkeypatch.setattr("builtins.open", tracked_open)
        monkeypatch.setattr(queryrows, "KeptRows", interrupted)
        with pytest.raises(Interrupted):
            queryrows.in_file(cache, scope, entry)
        assert opened and all(handle.closed for handle in opened)
        assert kept.exists()


def test_kept_rows_are_searched_as_the_rows_they_were_kept_from_300_trials() -> None:
    """`queryrows.KeptRows` (the kept rows by column: a query searches the joined titles and
    paths as stored and makes only its hits' rows) gives, for 300 random stores of ASCII
    and non-ASCII titles and paths, the rows `pack` was given, and `indexquery`'s title and
    path searches built from its joined columns find the rows they find built from the rows
    (`_Joined`, `_Paths`): the same offsets, the same matches, for every needle; and the
    titles a needle is in as the substring tier puts it (`_Joined.rows`' `plain`) are those
    it is in inside the name or first message, starting neither, and not in the id."""
    import random

    from seance.core.indexquery import _Joined, _Paths

    rng = random.Random(300)
    pieces = ["sql", "ite", "caf\u00e9", "\u30c7\u30fc\u30bf", "x", "\U0001f600", "fix the", "Stra\u00dfe", " ", "ab"]

    def text(limit: int) -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, limit)))

    for trial in range(300):
        count = rng.randint(0, 40)
        rows = [
            _row(
                rng.randint(1, 10**6),
                f"/s/--{text(2)}--/{text(3)}.jsonl",
                rng.randint(0, 10**12),
                rng.choice(["", f"/home/{text(2)}"]),
                f"{text(1)}\n{text(2)}\n{text(4)}".encode(),
                rng.randint(0, 2**32 - 1),
            )
            for _ in range(count)
        ]
        blob = queryrows.pack(rows, [])
        assert blob is not None
        columns = queryrows.unpack_columns(blob)
        assert columns is not None
        kept = columns[0]
        assert len(kept) == count
        expected = [(*row[:2], 0, 0, 1, 0, row[6], row[7] or "", row[8], 0, 1, None, row[12], None) for row in rows]
        for position in rng.sample(range(count), min(count, 3)):  # made alone (the first asked of a new one)
            alone = queryrows.unpack_columns(blob)
            assert alone is not None and alone[0][position] == expected[position]
        for size in (1, count // 9, count):  # `take`: a few made alone, or most made at once
            some = queryrows.unpack_columns(blob)
            positions = rng.sample(range(count), size) if count else []
            assert some is not None and some[0].take(positions) == [expected[p] for p in positions]
        assert list(kept) == expected  # (most asked for: made at once)
        titles = [row[8] for row in rows]
        built, stored = _Joined(titles), _Joined.of_joined(kept.titles, kept.title_starts())
        assert (stored.text, stored.starts, stored.valid) == (built.text, built.starts, built.valid), trial
        paths = [row[1] for row in rows]
        cwds = [row[7] or "" for row in rows]
        built_paths, stored_paths = _Paths(paths, cwds), _Paths.of_joined(kept.paths, kept.path_starts, kept.cwds)
        assert (stored_paths.folded, stored_paths.starts) == (built_paths.folded, built_paths.starts), trial
        for needle in [*pieces, text(2), "\n"]:
            folded = needle.casefold()
            if not folded:
                continue  # (a term is never empty)
            assert stored.rows(folded) == built.rows(folded), (trial, needle)
            if "\n" not in folded:  # inside the name or first message, starting neither, not in the id
                plain: set[int] = set()
                assert stored.rows(folded, plain) == built.rows(folded)
                parts = [title.decode().split("\n") for title in titles]
                assert plain == {
                    row
                    for row, (ident, name, first) in enumerate(parts)
                    if folded not in ident
                    and folded in f"{name}\n{first}"
                    and not (name.startswith(folded) or first.startswith(folded))
                }, (trial, needle)
            assert stored_paths.rows(folded) == built_paths.rows(folded), (trial, needle)
            if len(folded) >= 3:
                assert stored.fuzzy_rows(folded) == built.fuzzy_rows(folded), (trial, needle)
