"""A warm picker paints its first rows from the index (app/screens/first_paint.py), before the
exact refresh, which then replaces them: a session changed before the launch shows its new
state after the refresh, and the cursor stays on the session the user moved it to."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from ui_harness import SIZE, screen_of, settle, wait_until
from ui_sessions import OTHER, PROJECT, Spec, clock, make_root, standard_specs, write_session

from seance.app import picker_model
from seance.app.app import SeanceApp
from seance.app.screens import first_paint, session_list
from seance.app.screens.session_list import PickerOptions, SessionPickerScreen
from seance.core import firstpaint
from seance.core.catalog import Catalog


class GatedCatalog(Catalog):
    """A real catalog whose exact refresh waits for the test to open `gate`: what is on
    screen before is the first paint alone."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()
        self.refreshes = 0
        self.stored_gate = threading.Event()  # cleared: a stored listing waits (a slow index)
        self.stored_gate.set()
        self.whole_gate = threading.Event()  # cleared: a whole stored listing waits
        self.whole_gate.set()

    def refresh(self, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        assert self.gate.wait(20), "the test never opened the gate"
        self.refreshes += 1
        return super().refresh(*args, **kwargs)

    def stored(self, cwd: str | None, **kwargs: Any):  # type: ignore[no-untyped-def]
        assert self.stored_gate.wait(20), "the test never opened the stored gate"
        if kwargs.get("whole"):
            assert self.whole_gate.wait(20), "the test never opened the whole gate"
        return super().stored(cwd, **kwargs)


def gated_app(root: Path, *, prefetch: bool, watch: bool = False) -> tuple[SeanceApp, GatedCatalog]:
    catalog = GatedCatalog([root])
    if prefetch:  # as `seance pick` does while it imports Textual (app/run.py)
        catalog.prefetch_stored(PROJECT)

    def make_screen() -> SessionPickerScreen:
        return SessionPickerScreen(
            catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=watch, confirm_missing_cwd=False)
        )

    app = SeanceApp(make_screen, theme="textual-dark")
    app.animation_level = "none"
    return app, catalog


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(path): (path.read_bytes(), path.stat().st_mtime_ns) for path in sorted(root.rglob("*.jsonl"))}


def by_id(screen: SessionPickerScreen) -> dict[str, Any]:
    return {row.summary.id: row.summary for row in screen.session_list.rows}


async def first_paint_then_exact(tmp_path: Path, *, prefetch: bool) -> None:
    root = make_root(tmp_path)
    Catalog([root]).refresh()  # a warm index, as the last run left it
    docs = write_session(  # appended to (and named) after the index was made, before the launch
        root, Spec("s-docs", PROJECT, ("update the README", "more", "and more"), timedelta(days=2), name="Docs 2")
    )
    before = snapshot(root)
    app, catalog = gated_app(root, prefetch=prefetch)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        for _ in range(50):
            if screen.session_list.rows:
                break
            await pilot.pause(0.02)
        rows = by_id(screen)
        assert catalog.refreshes == 0, "the exact refresh has not run"
        assert set(rows) == {"s-auth", "s-fork", "s-named", "s-docs", "s-old"}, "the stored project"
        assert rows["s-docs"].message_count == 4 and rows["s-docs"].name is None, "as the index last saw it"
        assert "5 sessions" in screen.status.render().plain

        await pilot.press("down", "down", "down")  # the user moves before the refresh lands
        chosen = screen.session_list.highlighted.path
        assert chosen == str(docs)
        catalog.gate.set()
        await settle(pilot)
        assert catalog.refreshes == 1
        rows = by_id(screen)
        assert rows["s-docs"].message_count == 6 and rows["s-docs"].name == "Docs 2", "the exact answer replaced it"
        assert screen.session_list.highlighted.path == chosen, "the cursor stayed on the session"
    assert snapshot(root) == before, "browsing wrote no session file"


async def test_prefetched_first_paint_then_the_exact_refresh(tmp_path: Path) -> None:
    await first_paint_then_exact(tmp_path, prefetch=True)


async def test_stored_first_paint_from_the_load_worker_then_the_exact_refresh(tmp_path: Path) -> None:
    """A host's picker (no prefetch): the load worker paints the stored rows first."""
    await first_paint_then_exact(tmp_path, prefetch=False)


async def test_a_cold_index_lists_as_before(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app, catalog = gated_app(root, prefetch=True)
    catalog.gate.set()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        listed = {row.summary.id for row in screen_of(pilot).session_list.rows}
        assert listed == {"s-auth", "s-fork", "s-named", "s-docs", "s-old"}
        assert catalog.refreshes == 1


async def test_a_big_projects_first_screens_count_the_whole_project(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 10)
    specs = [Spec(f"s-{number:03d}", PROJECT, (f"task {number}",), timedelta(hours=number)) for number in range(40)]
    root = make_root(tmp_path, specs)
    Catalog([root]).refresh()
    app, catalog = gated_app(root, prefetch=True, watch=True)
    catalog.whole_gate.clear()  # the project's every stored session: not yet
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await pilot.pause()
        assert [row.summary.id for row in screen.session_list.rows] == [f"s-{number:03d}" for number in range(10)]
        assert "10 of 40 sessions" in screen.status.render().plain
        await wait_until(pilot, lambda: screen.watching, 0.05)  # the watcher starts once the rows are drawn
        write_session(root, Spec("s-live", PROJECT, ("started while the first screens show",), timedelta(0)))
        await wait_until(pilot, lambda: any(row.summary.id == "s-live" for row in screen.session_list.rows), 0.05)
        assert any(row.summary.id == "s-live" for row in screen.session_list.rows)
        assert "11 of 40 sessions" in screen.status.render().plain, "a live merge keeps the project's count"
        catalog.whole_gate.set()  # then the project whole (from every project, new file too), before the refresh
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 41, 0.05)
        assert len(screen.session_list.rows) == 41 and catalog.refreshes == 0
        assert "41 sessions" in screen.status.render().plain and " of " not in screen.status.render().plain
        catalog.gate.set()
        await settle(pilot)
        assert len(screen.session_list.rows) == 41 and catalog.refreshes == 1
        assert "41 sessions" in screen.status.render().plain and " of " not in screen.status.render().plain


async def test_tab_before_the_refresh_paints_the_stored_scope_and_waits_for_that_refresh(tmp_path: Path) -> None:
    """The refresh under way lists both scopes: Tab meanwhile shows the other scope's stored
    rows and starts no second refresh."""
    root = make_root(tmp_path)
    Catalog([root]).refresh()
    app, catalog = gated_app(root, prefetch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await pilot.pause()
        assert len(screen.session_list.rows) == 5
        await pilot.press("tab")
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 8)
        assert len(screen.session_list.rows) == 8 and catalog.refreshes == 0, "every project, as stored"
        assert "8 sessions" in screen.status.render().plain
        catalog.gate.set()
        await settle(pilot)
        assert catalog.refreshes == 1, "one refresh lists both scopes"
        assert len(screen.session_list.rows) == 8
        await pilot.press("tab")
        await settle(pilot)
        assert len(screen.session_list.rows) == 5 and catalog.refreshes == 1


@pytest.mark.parametrize("launched", ["project", "all"])
async def test_tab_while_the_refresh_runs_shows_the_stored_rows_at_once_then_the_exact_ones(
    tmp_path: Path, monkeypatch, launched: str
) -> None:
    """The other scope's stored listing is made whole before the launch's exact refresh: a Tab
    while that refresh runs shows every session of that scope as stored (no worker to wait
    for), only sessions of that scope; the refresh's answer replaces them (a session changed
    since, as it is now) with the cursor still on the session the user moved to."""
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 4)  # the first screens: less than a scope
    root = make_root(tmp_path)
    Catalog([root]).refresh()
    write_session(root, Spec("s-other1", OTHER, ("refactor the parser",), timedelta(hours=2), name="Parser"))
    catalog = GatedCatalog([root])
    catalog.prefetch_stored(PROJECT if launched == "project" else None)
    scope = "all" if launched == "project" else "project"
    screen = SessionPickerScreen(
        catalog, cwd=PROJECT, scope=launched, clock=clock, options=PickerOptions(watch=False)
    )  # fmt: skip
    app = SeanceApp(lambda: screen, theme="textual-dark")
    app.animation_level = "none"
    every = {spec.sid: spec.cwd for spec in standard_specs()}
    async with app.run_test(size=SIZE) as pilot:
        # the first rows drawn, the other scope's stored rows made meanwhile, whole
        count = sum(scope == "all" or cwd == PROJECT for cwd in every.values())
        await wait_until(pilot, lambda: len(screen.model.summaries.get(scope, ())) == count)
        catalog.stored_gate.clear()  # from now on the index is slow: the Tab must not wait for it
        await pilot.press("tab")
        rows = by_id(screen)
        catalog.stored_gate.set()
        assert catalog.refreshes == 0, "the exact refresh has not run"
        assert screen.model.scope == scope and rows, "the other scope's rows, with the Tab"
        assert all(scope == "all" or every[sid] == PROJECT for sid in rows), "no other project's session"
        assert set(rows) == {sid for sid, cwd in every.items() if scope == "all" or cwd == PROJECT}, "all of them"
        status = screen.status.render().plain
        assert f"{8 if scope == 'all' else 5} sessions" in status and " of " not in status
        if scope == "all":
            assert rows["s-other1"].name is None, "as the index last saw it"
        await pilot.press("down")
        chosen = screen.session_list.highlighted.path

        catalog.gate.set()
        await settle(pilot)
        rows = by_id(screen)
        assert catalog.refreshes == 1, "one refresh lists both scopes"
        assert set(rows) == {sid for sid, cwd in every.items() if scope == "all" or cwd == PROJECT}
        if scope == "all":
            assert rows["s-other1"].name == "Parser", "the exact answer replaced it"
        assert screen.session_list.highlighted.path == chosen, "the cursor stayed on the session"


async def test_tab_while_the_exact_rows_are_made_shows_the_stored_rows_meanwhile(tmp_path: Path, monkeypatch) -> None:
    """The refresh has landed, the other scope's rows are long (made in a worker) and not made
    yet: a Tab shows that scope's stored listing at once (without a session gone since), not
    this scope's rows under the other's status; the worker's rows replace them with the
    cursor on its session."""
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 4)
    monkeypatch.setattr(session_list, "ROWS_AHEAD_DELAY", 60.0)  # not made ahead during the test
    rows_gate = threading.Event()
    make_rows = picker_model.plain_rows
    armed = threading.Event()  # set once the refresh landed (the whole stored listing's rows are made before)

    def slow_in_a_worker(*args: Any, **kwargs: Any) -> Any:  # the rows worker's 100,000 rows, made slow
        if threading.current_thread() is not threading.main_thread() and armed.is_set():
            assert rows_gate.wait(20), "the test never opened the rows gate"
        return make_rows(*args, **kwargs)

    monkeypatch.setattr(picker_model, "plain_rows", slow_in_a_worker)
    root = make_root(tmp_path)
    Catalog([root]).refresh()
    write_session(root, Spec("s-other1", OTHER, ("refactor the parser",), timedelta(hours=2), name="Parser"))
    app, catalog = gated_app(root, prefetch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        screen.rows_inline_max = 6  # the project's 5 rows on the UI thread, every project's 8 in a worker
        # every project's stored rows, made before the refresh
        await wait_until(pilot, lambda: "all" in screen.model.summaries)
        catalog.gate.set()
        await wait_until(pilot, lambda: "all" in screen.model.summaries and not screen._loading)
        assert catalog.refreshes == 1 and len(screen.model.summaries["all"]) == 8, "the exact listing is in"
        armed.set()
        await pilot.press("tab")
        rows = by_id(screen)
        assert "s-other1" in rows and rows["s-other1"].name is None, "every project as stored, meanwhile"
        assert "8 sessions" in screen.status.render().plain
        await pilot.press("down")
        chosen = screen.session_list.highlighted.path

        rows_gate.set()
        await settle(pilot)
        rows = by_id(screen)
        assert len(rows) == 8 and rows["s-other1"].name == "Parser", "the exact rows replaced them"
        assert screen.session_list.highlighted.path == chosen, "the cursor stayed on the session"
        assert catalog.refreshes == 1


async def test_on_a_big_index_nothing_is_made_ahead_and_a_tab_asks_for_the_stored_rows(
    tmp_path: Path, monkeypatch
) -> None:
    """Above `STORED_AHEAD_MOST` files the other scope's stored rows are not made in case of a
    Tab; a Tab while the refresh runs asks for them then (and gets them before the refresh)."""
    monkeypatch.setattr(first_paint, "STORED_AHEAD_MOST", 3)  # the 8 files are "many"
    root = make_root(tmp_path)
    Catalog([root]).refresh()
    app, catalog = gated_app(root, prefetch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        for _ in range(50):  # the first rows drawn, the load worker's answer for the other scope in
            await pilot.pause(0.02)
        assert "all" not in screen.model.summaries and catalog.refreshes == 0, "nothing made ahead"
        await pilot.press("tab")
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 8)
        assert len(screen.session_list.rows) == 8 and catalog.refreshes == 0, "asked for with the Tab"
        catalog.gate.set()
        await settle(pilot)
        assert len(screen.session_list.rows) == 8 and catalog.refreshes == 1


@pytest.mark.parametrize("launched", ["project", "all"])
async def test_tab_while_the_refresh_runs_finds_the_other_scope_whole_and_its_rows_made(
    tmp_path: Path, monkeypatch, launched: str
) -> None:
    """While the launch's refresh runs (held here), the other scope is listed whole from the
    index and its rows are made ahead in a worker: a Tab shows every session of that scope in
    its own handling (on the old code: its first screens, "4 of 8", then a worker's rows after
    the refresh).  The refresh finds nothing changed: the listings and their rows stay (the
    same rows object, nothing made again, the screen unchanged)."""
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 4)  # the first screens: less than a scope
    monkeypatch.setattr(SessionPickerScreen, "rows_inline_max", 3)  # both scopes' rows made in workers
    root = make_root(tmp_path)
    Catalog([root]).refresh()  # nothing changes after: the refresh will find what the index holds
    catalog = GatedCatalog([root])
    catalog.prefetch_stored(PROJECT if launched == "project" else None)
    scope = "all" if launched == "project" else "project"
    screen = SessionPickerScreen(catalog, cwd=PROJECT, scope=launched, clock=clock, options=PickerOptions(watch=False))
    app = SeanceApp(lambda: screen, theme="textual-dark")
    app.animation_level = "none"
    every = {spec.sid for spec in standard_specs() if scope == "all" or spec.cwd == PROJECT}
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: (view := screen.model.other_view()) is not None and view.remembered_rows())
        await pilot.press("tab")
        assert catalog.refreshes == 0, "the exact refresh has not run"
        assert screen.model.scope == scope and set(by_id(screen)) == every, "every session, with the Tab"
        status = screen.status.render().plain
        assert f"{len(every)} sessions" in status and " of " not in status
        shown, listed = screen.session_list.rows, screen.model.summaries[scope]
        launched_listing = screen.model.summaries[launched]
        if launched == "project":  # its first paint had 4 of 5: made whole from every project's listing
            assert len(launched_listing) == 5 and catalog.refreshes == 0
        await pilot.press("down")
        chosen = screen.session_list.highlighted.path

        catalog.gate.set()
        await wait_until(pilot, lambda: not screen._loading)
        await settle(pilot)
        assert catalog.refreshes == 1
        assert screen.model.summaries[scope] is listed, "nothing changed: the stored listing stays"
        if launched == "project":
            assert screen.model.summaries[launched] is launched_listing, "and the project's"
        assert screen.session_list.rows is shown, "and its rows: none made again"
        assert screen.session_list.highlighted.path == chosen


async def test_tab_before_the_other_scope_is_listed_whole_shows_its_first_screens_then_all(
    tmp_path: Path, monkeypatch
) -> None:
    """The other scope's first screens are listed before the whole of it (a Tab just after the
    launch waits for those only): a Tab between them shows the first screens at once, then
    every session replaces them, the cursor on the session the user moved to."""
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 4)
    root = make_root(tmp_path)
    Catalog([root]).refresh()
    app, catalog = gated_app(root, prefetch=True)
    catalog.whole_gate.clear()
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await wait_until(pilot, lambda: "all" in screen.model.summaries)
        await pilot.press("tab")
        assert len(screen.session_list.rows) < 8 and "of 8 sessions" in screen.status.render().plain
        await pilot.press("down")
        chosen = screen.session_list.highlighted.path
        catalog.whole_gate.set()
        await wait_until(pilot, lambda: len(screen.session_list.rows) == 8)
        assert len(screen.session_list.rows) == 8 and catalog.refreshes == 0, "every project, as stored"
        assert " of " not in screen.status.render().plain
        assert screen.session_list.highlighted.path == chosen, "the cursor stayed on the session"
        catalog.gate.set()
        await settle(pilot)
        assert len(screen.session_list.rows) == 8 and catalog.refreshes == 1
        assert screen.session_list.highlighted.path == chosen


async def test_tab_before_the_other_scope_is_listed_whole_shows_every_row_with_that_listing(
    tmp_path: Path, monkeypatch
) -> None:
    """A Tab before the other scope's whole listing is made (just after the launch) shows its
    first screens, then, in the very handler that takes the whole listing, every row of it:
    the rows are made with the listing, in the load worker, before it is posted and before
    the exact refresh (on the old code the handler showed the first screens again as a
    stand-in and started a rows worker, which ran beside the refresh that had started
    meanwhile: the rows came 0.1-0.3 s later at 10,000 sessions).  The refresh then finds
    nothing changed and the rows stay."""
    monkeypatch.setattr(firstpaint, "FIRST_SESSIONS", 4)  # the first screens: less than a scope
    monkeypatch.setattr(SessionPickerScreen, "rows_inline_max", 3)  # every scope's rows made off the UI thread
    monkeypatch.setattr(first_paint, "STAND_IN_ROWS", 4)  # a stand-in shows less than the scope
    shown_with_whole: list[int] = []
    take = first_paint.FirstPaint.on_stored_ready

    def taking(self: SessionPickerScreen, message: first_paint.StoredReady) -> None:
        take(self, message)
        if message.whole:
            shown_with_whole.append(len(self.session_list.rows))

    monkeypatch.setattr(first_paint.FirstPaint, "on_stored_ready", taking)
    root = make_root(tmp_path)
    Catalog([root]).refresh()  # nothing changes after: the refresh will find what the index holds
    app, catalog = gated_app(root, prefetch=True)
    catalog.whole_gate.clear()
    async with app.run_test(size=SIZE) as pilot:
        screen = screen_of(pilot)
        await wait_until(pilot, lambda: "all" in screen.model.summaries)
        await pilot.press("tab")
        assert len(screen.session_list.rows) < 8 and "of 8 sessions" in screen.status.render().plain
        catalog.whole_gate.set()
        await wait_until(pilot, lambda: bool(shown_with_whole))
        assert shown_with_whole == [8], "every row, in the handler that took the whole listing"
        assert " of " not in screen.status.render().plain
        rows = screen.session_list.rows
        catalog.gate.set()
        await wait_until(pilot, lambda: not screen._loading)
        await settle(pilot)
        assert catalog.refreshes == 1
        assert screen.session_list.rows is rows, "the refresh found nothing changed: the rows stay"
