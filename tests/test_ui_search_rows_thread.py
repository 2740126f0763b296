"""A key's rows are made on its search's worker thread, not on the search thread the next
key's search runs on (app/screens/search_flow.py, `_run_search`): at 100,000 sessions the
ranking and rows run after the count is shown, and a key typed then waited for the search
thread to finish the previous key's rows (~50 ms of CPU in one piece, not interrupted by a
cancellation): up to ~140 ms, traced in a terminal."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from test_ui_first_page import wait_for
from ui_harness import SIZE, picker_app, screen_of, searched, settle
from ui_sessions import make_root

from seance.app.messages import SearchDone
from seance.app.picker_model import RowsView
from seance.app.screens import search_flow
from seance.app.screens.search_flow import _index_answer


async def test_a_newer_keys_search_does_not_wait_for_the_older_keys_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_flow, "ROWS_ELSEWHERE", 1)  # (10,000 hits: their rows are made off the search thread)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        entered, release = threading.Event(), threading.Event()
        original = RowsView.hit_rows

        def held(self: RowsView, hits: list[Any]) -> Any:
            if hits and hits[0].query.source == "fix":  # the older key's rows: held until released
                entered.set()
                release.wait(10)
            return original(self, hits)

        monkeypatch.setattr(RowsView, "hit_rows", held)
        try:
            screen.search_input.value = "fix"
            await wait_for(pilot, entered.is_set)
            screen.search_input.value = "auth"
            shown = lambda: bool(screen.model.hits) and screen.model.hits[0].query.source == "auth"  # noqa: E731
            await wait_for(pilot, shown)  # the newer key's rows came while the older key's are still made
            assert not release.is_set()
            assert {row.path for row in screen.session_list.rows} == {hit.summary.path for hit in screen.model.hits}
        finally:
            release.set()
        await settle(pilot)
        assert screen.model.query == "auth" and screen.model.hits[0].query.source == "auth"  # (the older's dropped)


async def test_a_superseded_keys_index_query_is_dropped_and_its_search_gives_way(tmp_path: Path) -> None:
    """Keys typed while the index answers an earlier one: the search of a key a newer one
    replaced stops waiting for its index query, which is dropped if it has not started (the
    index thread answered every key's query in turn, and the newest key's search waited
    behind them all: ~0.7 s for the first keys after a launch at 100,000 sessions)."""
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        asked: list[str] = []
        release = threading.Event()
        catalog = screen.catalog
        original = catalog.text_hits

        def gated(query: Any, **kwargs: Any) -> Any:
            asked.append(query.source)
            if query.source == "fix":  # the first key's query: the index thread is busy with it
                release.wait(10)
            return original(query, **kwargs)

        catalog.text_hits = gated
        try:
            for typed in ("fix", "fix t", "fix th"):  # (keys after a pause: each queues its index query)
                screen.search_input.value = typed
                await pilot.pause(0.25)
            assert asked == ["fix"]
        finally:
            release.set()
        await settle(pilot)
        assert asked == ["fix", "fix th"]  # "fix t"'s query was dropped before it started
        assert screen.model.query == "fix th" and screen.model.hits is not None
        assert all(hit.query.source == "fix th" for hit in screen.model.hits)


class _AnsweredAsTheWaitGaveUp(Future):
    """An index query that completes in the instant after `result(timeout)` gave up."""

    def result(self, timeout: float | None = None) -> Any:
        if not self.done():
            self.set_result({"/s/a.jsonl": "hit"})
            raise TimeoutError
        return super().result(timeout)


def test_an_index_answer_that_lands_as_the_wait_gives_up_is_the_answer() -> None:
    """`_index_answer` polls with a timeout: a query done between the timeout and the look at
    it is answered, not taken for its own error (the key would lose every full-text hit)."""
    assert _index_answer(_AnsweredAsTheWaitGaveUp(), lambda: False) == {"/s/a.jsonl": "hit"}
    failed: Future = Future()
    failed.set_exception(ValueError("no index yet"))
    with pytest.raises(ValueError, match="no index yet"):
        _index_answer(failed, lambda: False)


async def test_an_older_searchs_hits_landing_after_a_newer_ones_are_dropped(tmp_path: Path) -> None:
    """Rows of a big search are posted from its worker thread, so two searches of the same
    text (a re-search after a sort or filter change) may land out of order: the older one's
    hits must not replace the newer one's on screen."""
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await searched(pilot, "fix")
        hits = list(screen.model.hits or [])
        assert len(hits) >= 2
        older, newer = screen._next_rows_generation(), screen._next_rows_generation()
        view = screen.model.view()
        screen.post_message(SearchDone("fix", hits, top=True, rows=view.hit_rows(hits), generation=newer))
        stale = hits[-1:]
        screen.post_message(SearchDone("fix", stale, top=True, rows=view.hit_rows(stale), generation=older))
        await settle(pilot)
        assert screen.model.hits == hits
        assert [row.path for row in screen.session_list.rows] == [hit.summary.path for hit in hits]
