"""What the picker does ahead of the first key, off the UI thread, so the first keys of a
search cost what later ones do (app/screens/search_flow.py `_warm_search`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from ui_harness import SIZE, picker_app, screen_of, settle, wait_until
from ui_sessions import make_root

from seance.app.screens import search_flow
from seance.core import listing
from seance.core.model import SessionSummary
from seance.core.search.fuzzy import fuzzy_scorer


async def test_the_fuzzy_scorer_is_loaded_on_the_search_thread_before_the_first_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rapidfuzz's import (~15 ms of CPU) was paid by the first key with a fuzzy hit (the first
    three-letter word: 100-150 ms from a terminal against ~50 for the next keys)."""
    loaded: list[str] = []

    def recorded() -> Callable[[str, str], float]:
        loaded.append(threading.current_thread().name)
        return fuzzy_scorer()

    monkeypatch.setattr(search_flow, "fuzzy_scorer", recorded)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: loaded)
        assert screen_of(pilot).model.query == ""  # before any key
        assert loaded and all(name.startswith("seance-search") for name in loaded), loaded


async def test_the_fork_tree_the_hits_rows_need_is_made_on_the_search_thread_before_the_first_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every search's rows ask for the listed sessions' fork tree (`RowsMemo.parents`, ~6 ms
    at 10,000 sessions): made ahead, the first key's rows do not wait for it."""
    made: list[str] = []
    parents = listing.parents

    def recorded(summaries: Sequence[SessionSummary]) -> dict[str, str]:
        made.append(threading.current_thread().name)
        return parents(summaries)

    monkeypatch.setattr(listing, "parents", recorded)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await wait_until(pilot, lambda: any(name.startswith("seance-search") for name in made))
        screen = screen_of(pilot)
        assert screen.model.query == ""
        assert any(name.startswith("seance-search") for name in made), made
        before = len(made)
        screen.search_input.value = "fix"
        await settle(pilot)
        assert screen.model.hits  # (not vacuous)
        assert len(made) == before  # the search's rows used the tree made ahead
