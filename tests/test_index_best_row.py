"""A search's per-file best row (`Index._files_matching`: each file's first matching row, kept
by SQLite in rowid order) is the old definition's: the file's best field, and that field's
first row.  Differential against a plain Python reference over FTS5's ungrouped matching rows,
on a real index of a generated corpus, before and after appends (rows of a better field
appended after a file's tool output) and renames (the metadata rows written again)."""

from __future__ import annotations

import json
import random
import re
import sqlite3
from pathlib import Path

import pytest

from seance.core.catalog import Catalog
from seance.core.fulltext import FIELD_RANK, OPT_IN
from seance.core.generate import generate_corpus
from seance.core.index import Index, _fts_rowid
from seance.core.search import parse_query
from seance.core.search.query import FieldMatch

RANKS = sorted(FIELD_RANK, key=FIELD_RANK.__getitem__)


def decoded(rowid: int) -> tuple[int, int, int]:
    """(file id, field rank, seq) of an FTS rowid, as the layout documents it."""
    return rowid >> 24, (rowid >> 20) & 15, rowid & ((1 << 20) - 1)


def term_best(db: sqlite3.Connection, term: FieldMatch, include_cwd: bool) -> dict[int, tuple[int, int]]:
    """file id -> (rank, seq) of its best row for one term: every matching row read, the
    fields filtered and the minimum taken in Python."""
    if term.fields is None:
        allowed = {FIELD_RANK[name] for name in FIELD_RANK if name not in OPT_IN and (include_cwd or name != "cwd")}
    else:
        allowed = {FIELD_RANK[name] for name in term.fields if name in FIELD_RANK}
    best: dict[int, tuple[int, int]] = {}
    for (rowid,) in db.execute("SELECT rowid FROM fts WHERE fts MATCH ?", (term.phrase,)):
        file_id, rank, seq = decoded(rowid)
        if rank in allowed and (file_id not in best or (rank, seq) < best[file_id]):
            best[file_id] = (rank, seq)
    return best


def reference(db: sqlite3.Connection, text: str, include_cwd: bool) -> dict[int, tuple[str, int]]:
    """file id -> (best field, its rowid) by the definition: the best (rank, seq) over the
    query's terms, of the files every term matches, less those an excluded term matches."""
    full_text = parse_query(text).full_text()
    assert full_text is not None
    terms = full_text.terms or (FieldMatch(full_text.match, None),)
    found: dict[int, tuple[int, int]] | None = None
    for term in terms:
        mine = term_best(db, term, include_cwd)
        found = mine if found is None else {key: min(value, mine[key]) for key, value in found.items() if key in mine}
    assert found is not None
    for term in full_text.exclude:
        for file_id in term_best(db, term, include_cwd):
            found.pop(file_id, None)
    return {file_id: (RANKS[rank], (file_id << 24) | (rank << 20) | seq) for file_id, (rank, seq) in found.items()}


def words_of(db: sqlite3.Connection, rng: random.Random) -> list[str]:
    bodies = [body for (body,) in db.execute("SELECT body FROM fts ORDER BY random() LIMIT 200")]
    words = sorted({word.lower() for body in bodies for word in re.findall(r"[A-Za-z]{3,12}", body)})
    rng.shuffle(words)
    return words[:300]


def queries(words: list[str], rng: random.Random, count: int) -> list[str]:
    fields = ("user", "assistant", "tool", "bash", "result", "error", "name", "cwd", "id", "label", "thinking")
    made = []
    for _ in range(count):
        shape = rng.randrange(6)
        word = rng.choice(words)
        if shape == 0:
            made.append(word)
        elif shape == 1:
            made.append(word[: rng.randint(1, len(word))])  # a prefix, as typed
        elif shape == 2:
            made.append(f"{rng.choice(fields)}:{word}")
        elif shape == 3:
            made.append(f"{word} {rng.choice(words)[:4]}")
        elif shape == 4:
            made.append(f"{word} !{rng.choice(words)}")
        else:
            made.append(f'"{word} {rng.choice(words)}"')
    return made


def check(index: Index, rng: random.Random, trials: int) -> int:
    """`best_fields` of `trials` random queries equals the reference; the files compared."""
    db = index.db
    words = words_of(db, rng)
    compared = 0
    for text in queries(words, rng, trials):
        full_text = parse_query(text).full_text()
        if full_text is None:
            continue
        include_cwd = rng.random() < 0.5
        with index.snapshot():
            expected = reference(db, text, include_cwd)
            got = index.best_fields(full_text, include_cwd=include_cwd)
        assert got == expected, text
        compared += len(expected)
    return compared


@pytest.mark.slow
def test_each_files_best_row_is_its_best_fields_first_row_300_trials(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=120, projects=4, seed=14, mean_bytes=6_000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        index = catalog.index
        assert index is not None
        rng = random.Random(14)
        assert check(index, rng, 150) > 1000  # (not vacuous: many files compared)
        # Appends: a user line (a better field than the tool output already indexed) and a
        # new name (the metadata rows written again), to a third of the files.
        paths = sorted(str(path) for path in root.rglob("*.jsonl"))
        for number, path in enumerate(rng.sample(paths, len(paths) // 3)):
            entries = [
                {
                    "type": "message",
                    "id": f"fe{number:06x}",
                    "parentId": None,
                    "timestamp": "2026-01-02T03:05:00.000Z",
                    "message": {"role": "user", "content": f"appended {rng.choice(['npm', 'cursor', 'the'])} words"},
                },
                {"type": "session_info", "id": f"fd{number:06x}", "parentId": f"fe{number:06x}", "name": "renamed"},
            ]
            with open(path, "a") as handle:
                handle.writelines(json.dumps(entry) + "\n" for entry in entries)
        catalog.refresh()
        assert catalog.last_stats.appended == len(paths) // 3
        assert check(index, rng, 150) > 1000
        renamed = index.best_fields(parse_query('"renamed"').full_text(), include_cwd=False)  # type: ignore[arg-type]
        assert len(renamed) == len(paths) // 3
        assert all(best == ("name", _fts_rowid(file_id, 0, "name")) for file_id, best in renamed.items())
    finally:
        catalog.close()


def test_rowids_order_by_file_then_field_rank_then_seq_200_trials() -> None:
    """The layout's promise the search relies on: rowid order is (file, field rank, seq)."""
    rng = random.Random(7)
    fields = list(FIELD_RANK)
    rows = [(rng.randrange(1, 1 << 20), rng.randrange(0, (1 << 20) - 1), rng.choice(fields)) for _ in range(200)]
    by_rowid = sorted(rows, key=lambda row: _fts_rowid(*row))
    assert by_rowid == sorted(rows, key=lambda row: (row[0], FIELD_RANK[row[2]], row[1]))
    assert all(decoded(_fts_rowid(*row)) == (row[0], FIELD_RANK[row[2]], row[1]) for row in rows)


def test_a_search_does_not_make_the_next_one_check_the_signature_again(tmp_path: Path) -> None:
    """The search's scratch table (temp) counts in `total_changes`, which marks a checked
    signature: the next search on the connection must not count FTS5's pages again."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=10, projects=2, seed=5, mean_bytes=4_000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    try:
        catalog.refresh()
        index = catalog.index
        assert index is not None
        full_text = parse_query("the").full_text()
        assert full_text is not None
        assert index.search_by_path(full_text, within=None)
        db = index.db
        mark = index._verified[id(db)]
        assert index.search_by_path(parse_query("fix").full_text(), within=None) is not None  # type: ignore[arg-type]
        assert index._verified[id(db)][1] == db.total_changes  # moved with the scratch writes
        assert index._verified[id(db)][0] == mark[0]
    finally:
        catalog.close()
