"""A search's rows are shown first; their path -> row table (`RowSet.make_index`) is made on the
search thread only once no newer key came for `SEARCH_IDLE` (app/screens/search_flow.py): made
right after the rows went out, it competed with the UI thread drawing them on every key."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import PROJECT, Spec, make_root

from seance.app.rows import RowSet
from seance.app.screens import search_flow


def specs() -> list[Spec]:
    return [
        Spec(f"s{index:03d}", PROJECT, (f"deploy the service {index}",), timedelta(minutes=index + 1))
        for index in range(80)
    ]


async def test_the_rows_path_table_is_made_once_the_keys_stop(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(search_flow, "SEARCH_IDLE", 1.0)
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.search_input.value = "deploy"
        await settle(pilot)
        rows = screen.session_list.rows
        assert isinstance(rows, RowSet) and len(rows) == 80
        assert rows._index_of is None  # shown without it
        screen.search_input.value = "deploy the"  # a newer key before the idle time: the old table is never made
        await settle(pilot)
        newer = screen.session_list.rows
        assert newer is not rows and newer._index_of is None
        for _ in range(250):
            await pilot.pause(0.02)
            if newer._index_of is not None:
                break
        assert newer._index_of is not None and newer.index_of[newer[5].summary.path] == 5
        assert rows._index_of is None
