"""The picker shows a query's first page (its title hits, which always rank first) while the
index query and the full ranking run, then swaps in the whole ranking: the first page is a
prefix of the final rows, the cursor stays on its session across the swap, and a newer key's
search wins over an older one still under way (app/screens/search_flow.py)."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import PROJECT, Spec, make_root

from seance.app.screens import search_flow
from seance.app.screens.search_flow import FIRST_PAGE_MAX, FIRST_PAGE_MIN
from seance.core.search import parse_query, search

TITLED = 90  # sessions with the word in their first message: more than a screen of title hits


def specs() -> list[Spec]:
    """Title hits and text-only hits interleaved in time, so the two orders differ."""
    made = []
    for index in range(150):
        titled = index % 5 != 4 and len([spec for spec in made if "deploy" in spec.prompts[0]]) < TITLED
        prompts = (f"deploy the service {index}",) if titled else (f"tidy module {index}", "and deploy it later")
        made.append(Spec(f"s{index:03d}", PROJECT, prompts, timedelta(minutes=index + 1)))
    return made


class Recorder:
    """Every `set_rows` the list gets: the query at the time and the rows' sessions."""

    def __init__(self, pilot: Pilot) -> None:
        self.screen = screen_of(pilot)
        self.calls: list[tuple[str, list[str]]] = []
        widget = self.screen.session_list
        original = widget.set_rows

        def recorded(rows: Any, **kwargs: Any) -> None:
            self.calls.append((self.screen.model.query, [row.summary.id for row in rows]))
            original(rows, **kwargs)

        widget.set_rows = recorded  # type: ignore[method-assign]


class Gate:
    """Holds the index query of the search thread until `open()`: the first page is then
    on screen and the final rows are not, for as long as a test needs."""

    def __init__(self, screen: Any) -> None:
        self.event = threading.Event()
        self.entered = threading.Event()
        catalog = screen.catalog
        original = catalog.text_hits

        def gated(*args: Any, **kwargs: Any) -> Any:
            self.entered.set()
            self.event.wait(10)
            return original(*args, **kwargs)

        catalog.text_hits = gated

    def open(self) -> None:
        self.event.set()


async def wait_for(pilot: Pilot, condition: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("timed out")


def expected_ids(screen: Any, text: str) -> list[str]:
    """What a search from scratch ranks for `text` (index hits included)."""
    text_hits = dict(screen.catalog.text_hits(parse_query(text), include_cwd=False))
    return [hit.summary.id for hit in search(screen.model.view().visible(), text, text_hits=text_hits)]


async def test_first_page_is_a_prefix_of_the_final_rows_and_the_cursor_stays_on_its_session(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1  # (150 sessions: the whole search is quick anyway)
        recorder, gate = Recorder(pilot), Gate(screen)
        height_before = screen.session_list.virtual_size.height
        screen.search_input.value = "deploy"
        await wait_for(pilot, lambda: gate.entered.is_set() and recorder.calls)
        await pilot.pause(0.05)
        first = recorder.calls[-1][1]
        assert recorder.calls[-1][0] == "deploy"
        assert FIRST_PAGE_MIN <= len(first) <= FIRST_PAGE_MAX
        assert len(first) == TITLED  # every title hit, none of the text-only ones
        assert screen.status.shown != len(first)  # the count waits for the whole ranking
        assert screen.session_list.virtual_size.height == height_before > len(first)  # so does the scrollbar
        await pilot.press("down", "down", "down")
        chosen = screen.session_list.highlighted.summary.id
        assert chosen == first[3]
        on_screen = screen.session_list.cursor - screen.session_list.scroll_offset.y
        gate.open()
        await settle(pilot)
        final = [row.summary.id for row in screen.session_list.rows]
        assert len(recorder.calls) == 2  # the first page, then the final rows: nothing between
        assert final[: len(first)] == first
        assert len(final) == 150 and final == expected_ids(screen, "deploy")
        assert screen.session_list.highlighted.summary.id == chosen  # the cursor did not move
        assert screen.session_list.cursor - screen.session_list.scroll_offset.y == on_screen
        assert screen.status.shown == 150
        assert screen.session_list.virtual_size.height == screen.session_list.rows.line_count > 150  # snippets


async def test_a_newer_key_wins_over_an_older_search_still_under_way(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        recorder, gate = Recorder(pilot), Gate(screen)
        screen.search_input.value = "dep"
        await wait_for(pilot, lambda: gate.entered.is_set())
        await pilot.pause(0.05)
        screen.search_input.value = "deploy 1"  # "dep" is still in its index query
        await pilot.pause(0.1)
        gate.open()
        await settle(pilot)
        assert screen.model.query == "deploy 1"
        final = [row.summary.id for row in screen.session_list.rows]
        assert final == expected_ids(screen, "deploy 1")
        assert recorder.calls[-1] == ("deploy 1", final)
        shown_after = recorder.calls[[query for query, _ in recorder.calls].index("deploy 1") :]
        assert all(query == "deploy 1" for query, _ in shown_after)  # nothing of "dep" after it
        # "dep"'s final rows were never shown: the only rows shown for it were its first page
        assert [rows for query, rows in recorder.calls if query == "dep"] in ([], [recorder.calls[0][1]])


async def test_no_first_page_when_the_order_is_not_the_ranking(tmp_path: Path) -> None:
    """Sorted by recency a first page of title hits would not be the top of the list."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        await pilot.press("ctrl+s")  # threaded -> recent
        await settle(pilot)
        recorder = Recorder(pilot)
        screen.search_input.value = "deploy"
        await settle(pilot)
        assert len(recorder.calls) == 1
        assert len(recorder.calls[0][1]) == 150


async def test_a_live_change_during_the_first_page_keeps_the_cursor_on_its_session(tmp_path: Path) -> None:
    """A file event while the first page is shown searches again (not from the top): neither the
    older search's rows, re-made in the new state, nor the newer search's move the cursor."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        gate = Gate(screen)
        screen.search_input.value = "deploy"
        await wait_for(pilot, lambda: gate.entered.is_set() and len(screen.session_list.rows) == TITLED)
        await pilot.press("down", "down")
        chosen = screen.session_list.highlighted.summary.id
        screen._rebuild(top=False)  # what a live merge does (`_apply_changes`)
        await pilot.pause(0.05)
        gate.open()
        await settle(pilot)
        assert len(screen.session_list.rows) == 150
        assert screen.session_list.highlighted.summary.id == chosen


async def test_a_key_after_a_pause_queues_its_index_query_before_the_search_and_asks_it_once(tmp_path: Path) -> None:
    """The index query (the longest step of a keystroke's search, its SQL without the GIL) is
    queued once the echo's frame is out, before the search worker and its term scan; the
    search takes that query up instead of asking again."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        events: list[str] = []
        catalog, rank = screen.catalog, screen._rank_and_post
        original = catalog.text_hits

        def asked(query: Any, **kwargs: Any) -> Any:
            events.append(f"index {query.source}")
            return original(query, **kwargs)

        def ranked(worker: Any, text: str, *args: Any) -> Any:
            events.append(f"rank {text}")
            return rank(worker, text, *args)  # (the ranked hits: their rows are made by the worker)

        thread = screen._index_thread
        submit = thread.submit

        def queued(work: Any) -> Any:
            events.append(f"queued {screen.model.query}")
            return submit(work)

        catalog.text_hits = asked
        screen._rank_and_post = ranked  # type: ignore[method-assign]
        thread.submit = queued  # type: ignore[method-assign]
        for text in ("tidy", "tidy mod"):
            await pilot.pause(0.3)  # a pause: the key is no part of a burst
            screen.search_input.value = text
            await wait_for(pilot, lambda text=text: f"rank {text}" in events)
            await settle(pilot)
            mine = [event for event in events if event.split(" ", 1)[1] == text]
            assert mine[0] == f"queued {text}"  # queued before the search ran
            assert sorted(mine) == sorted([f"queued {text}", f"rank {text}", f"index {text}"])  # and asked once
            assert [row.summary.id for row in screen.session_list.rows] == expected_ids(screen, text)


class RankingGate:
    """Holds the search thread's ranking (`rank._ranked` of a full search, after every match
    is known) until `open()`: the first page is on screen, the final rows are not."""

    def __init__(self, monkeypatch: Any) -> None:
        from seance.core.search import rank

        self.event, self.entered = threading.Event(), threading.Event()
        original = rank._ranked

        def gated(buckets: Any, ordered: bool, text_hits: Any, *rest: Any) -> Any:
            if text_hits is not None:  # (`first_hits` ranks its title hits with None)
                self.entered.set()
                self.event.wait(10)
            return original(buckets, ordered, text_hits, *rest)

        monkeypatch.setattr(rank, "_ranked", gated)

    def open(self) -> None:
        self.event.set()


async def test_the_count_and_scrollbar_come_before_the_ranking_and_its_rows_change_nothing_shown(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Under the first page, the status line's count and the scrollbar are the whole
    ranking's as soon as every match is known (`SearchCount`), before the hits are ranked;
    the final rows then change neither, nor the rows on screen."""
    others = [Spec(f"o{index:02d}", PROJECT, (f"unrelated {index}",), timedelta(days=1)) for index in range(20)]
    app = picker_app(make_root(tmp_path, [*specs(), *others]))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        recorder, gate = Recorder(pilot), RankingGate(monkeypatch)
        widget = screen.session_list
        assert screen.status.shown == 170
        screen.search_input.value = "deploy"
        await wait_for(pilot, lambda: gate.entered.is_set() and screen.status.shown == 150)
        await pilot.pause(0.05)
        assert [query for query, _ in recorder.calls] == ["deploy"]  # the first page only
        assert len(widget.rows) == TITLED
        counted = (screen.status.shown, screen.status.total, widget.virtual_size.height)
        on_screen = [row.summary.id for row in widget.rows[: widget.scrollable_content_region.height]]
        gate.open()
        await settle(pilot)
        assert len(recorder.calls) == 2  # the final rows came
        final = [row.summary.id for row in widget.rows]
        assert final == expected_ids(screen, "deploy")
        assert counted == (len(final), 170, widget.rows.line_count)  # exact: what the final rows have
        assert widget.rows.line_count > len(final)  # (snippet lines counted)
        assert [row.summary.id for row in widget.rows[: len(on_screen)]] == on_screen


async def test_without_enough_title_hits_the_final_orders_first_page_and_count_come_before_the_ranking(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Too few title hits for a first page: once every match is known, the final order's
    first page (`Matched.first`) and the whole ranking's count and scrollbar are shown
    before the hits are ranked; the final rows then change none of them (fails on main:
    the previous query's rows and count stayed until the ranking's rows)."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        widget = screen.session_list
        screen.search_input.value = "deploy"
        await settle(pilot)
        monkeypatch.setattr(search_flow, "FIRST_PAGE_MAX", 20)  # (a first page shorter than the 60 hits)
        recorder, gate = Recorder(pilot), RankingGate(monkeypatch)
        screen.search_input.value = "later"  # no title hit: 60 in the text
        await wait_for(pilot, lambda: gate.entered.is_set() and recorder.calls)
        await pilot.pause(0.1)
        assert [query for query, _ in recorder.calls] == ["later"]  # the final order's first page only
        first = recorder.calls[0][1]
        counted = (screen.status.shown, screen.status.total, widget.virtual_size.height)
        gate.open()
        await settle(pilot)
        assert len(recorder.calls) == 2  # the final rows came
        final = [row.summary.id for row in widget.rows]
        assert final == expected_ids(screen, "later") and len(final) == 60
        assert first == final[:20]
        assert counted == (60, 150, widget.rows.line_count)
        assert widget.rows.line_count > len(final)  # (snippet lines counted)


async def test_no_early_count_without_a_first_page(tmp_path: Path, monkeypatch: Any) -> None:
    """Without a first page (sorted by recency: not the ranking) the rows shown are the last
    query's: its count stays with them until the new rows come (a new count over old rows
    would be a wrong one)."""
    app = picker_app(make_root(tmp_path, specs()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        screen.first_page_sessions = 1
        await pilot.press("ctrl+s")  # threaded -> recent
        await settle(pilot)
        screen.search_input.value = "tidy"
        await settle(pilot)
        before = screen.status.shown
        gate = RankingGate(monkeypatch)
        screen.search_input.value = "tidy module 1"
        await wait_for(pilot, lambda: gate.entered.is_set())
        await pilot.pause(0.1)
        assert screen.status.shown == before == len(screen.session_list.rows)
        gate.open()
        await settle(pilot)
        assert screen.status.shown == len(screen.session_list.rows) == len(expected_ids(screen, "tidy module 1"))
