"""Index.search_by_path asks SQLite for each term's files as one packed text (the query then
runs without the GIL): the same answer as the row-by-row query the other searches use."""

from __future__ import annotations

from pathlib import Path

from ui_sessions import make_root

from seance.core.catalog import Catalog
from seance.core.search import parse_query


def test_packed_and_row_by_row_answers_are_the_same(tmp_path: Path) -> None:
    catalog = Catalog([make_root(tmp_path)], cache_dir=tmp_path / "cache")
    catalog.refresh()
    index = catalog.index
    assert index is not None
    db = index.db
    _state, ids, _paths = index._path_ids(db)
    every = sorted(ids.values())
    for text in ("the", "fix auth", "zebra", '"release notes"', "nothingmatches", "auth !token", "user:fix"):
        full_text = parse_query(text).full_text()
        assert full_text is not None
        for ranges in (None, [(every[0], every[2])], [(every[0], every[0]), (every[3], every[-1])]):
            for include_cwd in (True, False):
                rows = index._best_rows(db, full_text, include_cwd, ranges)
                packed = index._best_rows(db, full_text, include_cwd, ranges, packed=True)
                assert packed == rows and list(packed) == list(rows), (text, ranges)
        assert index._best_rows(db, parse_query("the").full_text(), True)  # (not vacuous)
