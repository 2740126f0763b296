"""What the picker does ahead of the first key, off the UI thread, so the first keys of a
search cost what later ones do (app/screens/search_flow.py `_warm_search`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from ui_harness import SIZE, picker_app, screen_of, settle, wait_until
from ui_sessions import make_root

from seance.app.screens import search_flow
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
