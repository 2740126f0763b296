"""RowSet.make_index: the path -> row table a search thread makes after posting its rows, a
step at a time (the GIL given up between steps), is the table `index_of` makes in one go."""

from __future__ import annotations

from pathlib import Path

from ui_sessions import make_root

from seance.app.rows import RowSet, SessionRow
from seance.core.catalog import Catalog


def test_the_table_made_in_steps_is_the_table_made_at_once(tmp_path: Path) -> None:
    summaries = Catalog([make_root(tmp_path)], cache_dir=tmp_path / "cache").refresh()
    assert len(summaries) > 7
    rows = [SessionRow(summary) for summary in summaries]
    for step in (1, 3, len(rows) - 1, len(rows), 4096):
        stepped = RowSet(rows, lambda row: row, lambda row: row.path, index_later=True)
        stepped.make_index(step)
        at_once = RowSet(rows, lambda row: row, lambda row: row.path)
        assert stepped.index_of == at_once.index_of
        assert [stepped.position(row.path) for row in rows] == list(range(len(rows)))
