"""What a launch does before the picker's first rows, and what it no longer does (issue 14:
launch → rows ≤ 0.6 s at 10,000 sessions).

The footer does not remount its keys when the bindings are refreshed with nothing changed
(eight times before the first rows were drawn, each remounting and restyling every key);
the first screen's CSS is not parsed twice (Textual's push re-parses every source of the
app when a screen brings CSS it has not seen); the first rows are made before Textual is
imported, not in a thread beside it; what only a later key needs is imported then; the
collector is stopped until the first frame is drawn (`core.gcpause.pause_launch`).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets._footer import FooterKey  # the key widgets Footer composes (no public name)
from ui_harness import picker_app, settle
from ui_sessions import PROJECT, make_root

from seance.app.widgets.footer import SeanceFooter
from seance.core import gcpause
from seance.core.catalog import Catalog


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


class TwoKeys(Screen[None]):
    """Two keys in a footer; the second is disabled until `armed`."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("a", "one", "One"), Binding("b", "two", "Two")]
    armed = False

    def compose(self) -> ComposeResult:
        yield SeanceFooter(["one", "two"])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return True if action != "two" or self.armed else None  # None: shown, dimmed

    def action_one(self) -> None:
        pass

    def action_two(self) -> None:
        pass


class Host(App[None]):
    def on_mount(self) -> None:
        self.push_screen(TwoKeys())


def footer_keys(app: App[Any]) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


async def test_footer_keeps_its_keys_while_the_bindings_it_shows_are_unchanged() -> None:
    app = Host()
    async with app.run_test(size=(80, 10)) as pilot:
        for _ in range(100):  # (mounted after a few turns of the loop on a busy machine)
            await pilot.pause()
            if footer_keys(app):
                break
        keys = footer_keys(app)
        assert [key.action for key in keys] == ["one", "two", "command_palette"]
        assert keys[1].has_class("-disabled")
        for _ in range(3):  # what a picker does on every change of its state
            app.screen.refresh_bindings()
            await pilot.pause()
        assert footer_keys(app) == keys  # the same widgets: not remounted
        assert all(a is b for a, b in zip(footer_keys(app), keys, strict=True))
        screen = app.screen
        assert isinstance(screen, TwoKeys)
        screen.armed = True  # a real change: the footer shows it
        screen.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        now = footer_keys(app)
        assert [key.action for key in now] == ["one", "two", "command_palette"]
        assert not now[1].has_class("-disabled")


async def test_footer_keys_are_not_compact_and_the_palette_key_stays_as_textual_draws_it() -> None:
    app = Host()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        keys = footer_keys(app)
        assert [key.has_class("-compact") for key in keys] == [False, False, True]


async def test_the_pickers_css_is_parsed_once_at_launch(root: Path) -> None:
    """Textual's push re-parses every CSS source of the app (from an empty parse cache) when
    the pushed screen brings CSS not added yet: seance's app adds it first."""
    app = picker_app(root)
    reparse, reparsed = app.stylesheet.reparse, []

    def counted() -> None:
        reparsed.append(True)
        reparse()

    app.stylesheet.reparse = counted  # type: ignore[method-assign]  # counts, and re-parses all the same
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert reparsed == []
        search = app.screen.query_one("#seance-search")
        assert search.styles.border.top[0] == "tall"  # picker.tcss's rule applies
        body = app.screen.query_one("#seance-body")
        assert body.styles.height is not None and str(body.styles.height) == "1fr"


LATER = (
    "seance.core.export",
    "seance.core.trash",
    "seance.core.resume",
    "seance.core.writes",
    "seance.core.safefile",
    "html",
    "secrets",
)
"""What the picker's first rows do not need: an export (Alt+E), a delete (Ctrl+D), a copy
(Ctrl+Y), a saved setting (Alt+C) import them when asked (~17 ms of a launch's CPU)."""


def test_the_picker_shows_its_first_rows_without_the_export_the_trash_or_the_resume_command(
    tmp_path: Path,
) -> None:
    """In a fresh interpreter: the picker over real files, as `seance pick` runs it, until its
    first rows are drawn; then the modules a launch imported."""
    code = f"""
import asyncio, sys
from pathlib import Path
from ui_harness import picker_app
from ui_sessions import make_root

async def main():
    app = picker_app(make_root(Path({str(tmp_path)!r})))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert app.screen.session_list.highlighted is not None, "no rows yet"
        print(",".join(sorted(sys.modules)))

asyncio.run(main())
"""
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    imported = set(result.stdout.strip().split(","))
    assert "seance.app.screens.session_list" in imported
    assert sorted(name for name in LATER if name in imported) == []


def test_the_launchs_first_rows_are_made_before_the_ui_and_not_in_a_thread(tmp_path: Path) -> None:
    """`run_picker` makes the stored first rows at once (`background=False`): in a thread beside
    Textual's import they waited for the GIL and were not ready when the screen mounted."""
    root = make_root(tmp_path)
    Catalog([root], cache_dir=tmp_path / "cache").refresh()
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    before = set(threading.enumerate())
    catalog.prefetch_stored(PROJECT, background=False)
    assert [thread.name for thread in set(threading.enumerate()) - before] == []
    assert catalog.prefetched(PROJECT)
    first = catalog.stored(PROJECT)
    assert first is not None and len(first) == 5
    assert catalog.stored(PROJECT) == first, "taken once, then made again"


@pytest.fixture
def owned_collector() -> Iterator[None]:
    """seance owns the process for the test (as its CLI does); the collector is left as found."""
    owned, enabled = gcpause.owns_collector(), gc.isenabled()
    gcpause.own_collector(True)
    try:
        yield
    finally:
        gcpause.end_launch()
        gc.unfreeze()
        gcpause.own_collector(owned)
        if enabled:
            gc.enable()
        else:
            gc.disable()


def test_a_launch_stops_the_collector_until_it_is_drawn_then_freezes_what_it_built(owned_collector: None) -> None:
    gc.enable()
    gcpause.pause_launch()
    assert not gc.isenabled()
    built = [[index] for index in range(1000)]  # what a launch builds: it lives on
    with gcpause.gc_paused():  # a worker building meanwhile
        gcpause.end_launch()
        assert gc.get_freeze_count() >= len(built)
        assert not gc.isenabled(), "the worker's pause goes on"
    assert gc.isenabled(), "the last pause out re-enables"
    gcpause.end_launch()  # again: nothing
    assert gc.isenabled()


def test_a_launch_pause_is_for_seances_own_process_only() -> None:
    owned, enabled = gcpause.owns_collector(), gc.isenabled()
    try:
        gcpause.own_collector(False)  # a host app imported seance
        gc.enable()
        gcpause.pause_launch()
        assert gc.isenabled()
    finally:
        gcpause.own_collector(owned)
        if not enabled:
            gc.disable()


async def test_seances_app_ends_the_launch_pause_once_its_first_frame_is_drawn(
    root: Path, owned_collector: None
) -> None:
    gc.enable()
    gcpause.pause_launch()  # as `run_picker` does before importing Textual
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.screen.session_list.highlighted is not None  # type: ignore[attr-defined]
        assert gc.isenabled()


def test_the_ui_command_reads_its_settings_without_the_write_path() -> None:
    """`seance pick` reads the saved child mode; only Alt+C (saving it) needs `core.safefile`."""
    code = "import sys, seance.cli.ui\nprint(','.join(sorted(sys.modules)))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = set(result.stdout.strip().split(","))
    assert "seance.core.settings" in imported
    assert sorted(name for name in LATER if name in imported) == []


async def test_the_first_frame_written_is_the_whole_screen(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual's start-up draws the screen once inside its start-up batch (not written) and
    spends its dirty regions: the first frame written was a partial one, without the status
    line (what the user and the latency bench wait for) until a frame or two later."""
    from textual._compositor import Compositor  # the renderer, to see which update each frame is

    app = picker_app(root)
    frames: list[str] = []
    render_update = Compositor.render_update

    def seen(self: Compositor, *args: Any, **kwargs: Any) -> Any:
        update = render_update(self, *args, **kwargs)
        if update is not None and not app._batch_count and self is getattr(app.screen, "_compositor", None):
            frames.append(type(update).__name__)  # a frame that is written (outside the batch)
        return update

    monkeypatch.setattr(Compositor, "render_update", seen)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert frames, "no frame written"
        assert frames[0] == "LayoutUpdate", frames[:3]  # the whole screen, not ChopsUpdate (some lines)
