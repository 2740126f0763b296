"""What a keystroke's search leaves behind: its hits are freed by reference counting when the
next key's replace them (a Textual worker and its context form a cycle that keeps the worker's
arguments until the collector runs: they must not include the previous hits), and the garbage
a search leaves (Textual's strips cache themselves) is collected once the keys stop, not in
the middle of a later key's search (app/screens/search_flow.py, core/gcpause.py)."""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_harness import SIZE, picker_app, screen_of, searched, settle
from ui_sessions import make_root

from seance.app.screens import search_flow
from seance.core import gcpause


@pytest.fixture
def collector_off() -> Iterator[None]:
    """No automatic collection: what is freed is freed by reference counting alone."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


async def test_a_keys_hits_are_freed_without_the_collector_once_the_next_keys_replace_them(
    tmp_path: Path, collector_off: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_flow, "SEARCH_IDLE", 600.0)  # (the idle collection would hide it)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        screen = await searched(pilot, "fix")
        first = screen.model.hits
        assert first  # (not vacuous)
        screen.search_input.value = "auth"
        await settle(pilot)
        assert screen.model.hits is not first
        holders = [holder for holder in gc.get_referrers(first) if not isinstance(holder, types.FrameType)]
        assert holders == []


def test_an_idle_collection_runs_only_for_the_owner_never_inside_a_pause_and_is_full_now_and_then() -> None:
    owned = gcpause.owns_collector()
    try:
        gcpause.own_collector(False)
        assert not gcpause.collect_idle()
        gcpause.own_collector(True)
        with gcpause.gc_paused():
            assert not gcpause.collect_idle()  # a worker is building: not now
        gc.collect()
        young, full = gc.get_stats()[1]["collections"], gc.get_stats()[2]["collections"]
        assert gcpause.collect_idle()  # the young generations only
        assert (gc.get_stats()[1]["collections"], gc.get_stats()[2]["collections"]) == (young + 1, full)
        for _ in range(gcpause.FULL_AFTER - 1):
            gc.collect(1)
        assert gcpause.collect_idle()  # enough young collections since the last full one: a full one
        assert gc.get_stats()[2]["collections"] == full + 1
    finally:
        gcpause.own_collector(owned)


async def test_the_garbage_of_a_search_is_collected_once_the_keys_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search_flow, "SEARCH_IDLE", 0.05)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        before = [generation["collections"] for generation in gc.get_stats()]
        screen.search_input.value = "fix"
        await settle(pilot)
        for _ in range(gcpause.FULL_AFTER):  # (each key's idle collection: a full one now and then)
            await pilot.pause(0.2)
            screen.search_input.value = screen.search_input.value + " "
            await settle(pilot)
        await pilot.pause(0.2)
        after = [generation["collections"] for generation in gc.get_stats()]
        assert after[1] > before[1] and after[2] > before[2]


async def test_a_search_of_many_hits_freezes_them_before_the_collector_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its hits live until the next key: a collection as the search's pause ends would walk
    them all (40,000 at 100,000 sessions) before the rows are posted."""
    monkeypatch.setattr(search_flow, "FREEZE_HITS", 1)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.search_input.value = "fix"  # (the first search after a listing freezes anyway)
        await settle(pilot)
        screen.search_input.value = "auth"
        await settle(pilot)
        hits = screen.model.hits
        assert hits
        assert not any(tracked is hits for tracked in gc.get_objects())  # frozen: out of every generation
        assert gc.get_freeze_count() > 0


def test_a_hold_keeps_the_collector_stopped_past_its_pause_until_idle_and_lets_go_when_old() -> None:
    owned, enabled = gcpause.owns_collector(), gc.isenabled()
    try:
        gc.enable()
        gcpause.own_collector(False)
        with gcpause.gc_paused():
            gcpause.hold_until_idle()  # not the owner: nothing held
        assert gc.isenabled()
        gcpause.own_collector(True)
        gcpause.hold_until_idle()  # outside a pause: nothing to hold
        assert gc.isenabled()
        with gcpause.gc_paused():
            gcpause.hold_until_idle()
            gcpause.hold_until_idle()  # (one hold, however many searches)
        assert not gc.isenabled()  # the pause ended, the hold did not
        with gcpause.gc_paused():  # another pause meanwhile: still stopped after it
            pass
        assert not gc.isenabled()
        assert gcpause.collect_idle()  # idle: the hold ends, the garbage is collected
        assert gc.isenabled()
        with gcpause.gc_paused():
            gcpause.hold_until_idle()
        gcpause.release_hold()  # (the picker closed)
        assert gc.isenabled()
        gcpause.release_hold()  # (nothing held: nothing changes)
        assert gc.isenabled()
        with gcpause.gc_paused():
            gcpause.hold_until_idle()
            assert gcpause._held_since is not None
            gcpause._held_since -= gcpause.HOLD_SECONDS  # keys without a break for that long
            gcpause.hold_until_idle()  # let go: the collector runs as this pause ends
        assert gc.isenabled()
        with gcpause.gc_paused():
            gcpause.hold_until_idle()
        gcpause.own_collector(False)  # (the app exited: the collector is given back as it was)
        assert gc.isenabled()
        gcpause.own_collector(True)
        with gcpause.gc_paused():
            gcpause.hold_until_idle()
        gcpause.own_collector(True)  # (the app exited under the CLI, which keeps owning it: released too)
        assert gc.isenabled()
    finally:
        gcpause.release_hold()
        gcpause.own_collector(owned)
        if not enabled:
            gc.disable()


async def test_a_keys_hits_and_their_frame_see_no_collection_until_the_keys_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No collection walks a search's hits and rows as its pause ends (on the search thread)
    or in the middle of their frame: the collector waits for the idle after the rows."""
    monkeypatch.setattr(search_flow, "SEARCH_IDLE", 600.0)
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert gc.isenabled()
        screen.search_input.value = "fix"
        await settle(pilot)
        assert screen.model.hits  # (not vacuous)
        young = gc.get_stats()[0]["collections"]
        screen.search_input.value = "fix "
        await settle(pilot)
        assert not gc.isenabled()
        assert gc.get_stats()[0]["collections"] == young  # none since the first key's rows
        assert screen._idle_timer is not None
        screen._idle_timer.stop()
        monkeypatch.setattr(search_flow, "SEARCH_IDLE", 0.05)
        screen.search_input.value = "fix"
        await settle(pilot)
        await pilot.pause(0.2)
        assert gc.isenabled()  # the keys stopped: collected, and the collector runs again
        screen.search_input.value = "auth"
        await settle(pilot)
    assert gc.isenabled()  # (the picker is gone: nothing held)
