"""seance as a good guest in a host Textual app (an agent's own TUI pushing seance's screens).

The host has its own theme, its own CSS with generic ids (`#search`, `#dialog`, `#tree-status`),
its own `ConfirmScreen` and Textual's default bindings (Ctrl+P: the command palette).  After
seance's screens come and go, the host must look and behave as before, and seance must look
as it does standalone.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.command import CommandPalette
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static
from ui_harness import settle
from ui_sessions import PROJECT, Spec, clock, make_root, session_path

from seance.app import PickerOptions, SessionPickerScreen, SessionTreeScreen
from seance.app.screens.help import HelpScreen
from seance.app.widgets.session_list import SessionList
from seance.core import gcpause
from seance.core.catalog import Catalog


@pytest.fixture(autouse=True)
def host_process():
    """A host's process: nobody called `own_collector()` (an earlier in-process `seance` CLI
    test may have, as the real command does at its entry point)."""
    owned = gcpause.owns_collector()
    gcpause.own_collector(False)
    yield
    gcpause.own_collector(owned)


class ConfirmScreen(ModalScreen[bool]):
    """The host's own dialog, with the ids a host would pick."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static("host question", id="dialog-title")


class Host(App[None]):
    CSS = """
    #search { dock: bottom; }
    #dialog { border: round green; width: 30; height: 5; }
    #tree-status { height: 3; }
    """

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.catalog = Catalog([root])
        self.theme = "nord"

    def compose(self) -> ComposeResult:
        yield Input(id="search")  # the host's own query box
        yield Static("host status", id="tree-status")


def _threads() -> int:
    """Live threads, less the idle default-executor pool of the test's own event loop."""
    return sum(1 for thread in threading.enumerate() if not thread.name.startswith("asyncio_"))


def host_look(app: Host) -> tuple:
    return (
        app.query_one("#tree-status").styles.height,
        app.query_one("#tree-status").region.height,
        app.query_one("#search").styles.dock,
    )


async def host_dialog_border(app: Host, pilot) -> tuple:
    app.push_screen(ConfirmScreen())
    await pilot.pause()
    border = app.screen.query_one("#dialog").styles.border
    app.pop_screen()
    await pilot.pause()
    return tuple(border)


@pytest.mark.parametrize("watch", [False, True])
async def test_host_app_and_seance_leave_each_other_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watch: bool
) -> None:
    root = make_root(tmp_path)
    disables: list[int] = []
    real_disable = gc.disable
    monkeypatch.setattr(gc, "disable", lambda: (disables.append(1), real_disable())[1])
    # Seance must neither freeze the host's objects nor give them back to the collector: its
    # calls are counted (the freeze count itself drops whenever a frozen object of an earlier
    # test in this process dies, refcounting frees it: a flake, after test_cli_exit.py).
    moves: list[str] = []
    for name in ("freeze", "unfreeze"):
        real = getattr(gc, name)
        monkeypatch.setattr(gc, name, lambda name=name, real=real: (moves.append(name), real())[1])
    gc_before = (gc.isenabled(), gc.get_freeze_count())
    threads_before = _threads()
    app = Host(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        look_before = host_look(app)
        border_before = await host_dialog_border(app, pilot)

        picker = SessionPickerScreen(app.catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=watch))
        results: list = []
        app.push_screen(picker, results.append)
        await settle(pilot)
        if watch:  # the watcher really runs, in a thread of its own, while the picker is up
            for _ in range(80):
                if picker.watching:
                    break
                await pilot.pause(0.1)
            assert picker.watching and _threads() > threads_before
        search = picker.query_one("#seance-search")
        assert search.styles.dock != "bottom" and search.region.y == 0, "the host's #search rule reached seance"
        assert picker.query_one("#seance-status").region.height == 1

        # Ctrl+P is the host's command palette; the picker's paths live on F4
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is picker
        help_keys = dict(picker.help_rows())
        assert "F4" in help_keys and help_keys["F4"] == "show file paths"
        assert help_keys["Ctrl+P"] == "command palette", "help gives Ctrl+P the meaning it has here"
        await pilot.press("f4")
        assert picker.show_paths
        for key in ("down", "up", "end", "home", "pagedown", "pageup", "tab", "tab", "ctrl+s", "ctrl+n", "ctrl+n"):
            await pilot.press(key)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()

        # switching the host's theme repaints every row and the preview
        rows = picker.query_one(SessionList)
        cursor_line = rows.render_line(0)
        app.theme = "textual-light"
        await settle(pilot)
        repainted = rows.render_line(0)
        rows.redraw()  # drops every cached row: what a fresh paint gives
        assert repainted == rows.render_line(0) and repainted != cursor_line, "rows kept the old theme's colours"

        # the tree, pushed by the picker: F1 help, its status line is seance's, not the host's
        await pilot.press("ctrl+t")
        await settle(pilot)
        tree = app.screen
        assert isinstance(tree, SessionTreeScreen)
        assert tree.query_one("#seance-tree-status").region.height == 1
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert any("filter" in what for _key, what in tree.help_rows())
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert app.screen is picker
        await pilot.press("escape")
        await pilot.pause()
        assert results == [None]
        await app.workers.wait_for_complete()
        # nothing of seance's left running after the pop: its watcher thread was joined on unmount
        assert _threads() <= threads_before, [thread.name for thread in threading.enumerate()]

        assert host_look(app) == look_before, "seance's CSS changed the host's widgets"
        assert await host_dialog_border(app, pilot) == border_before, "seance's CSS reached the host's ConfirmScreen"
    assert _threads() <= threads_before, [thread.name for thread in threading.enumerate()]
    assert gc.isenabled() == gc_before[0] and gc.get_freeze_count() <= gc_before[1]
    assert moves == [], "seance froze or unfroze the host's objects"
    assert disables == [], "seance paused the host's garbage collector"


async def test_the_picker_inside_a_host_resumes_a_session(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = Host(root)
    async with app.run_test(size=(120, 30)) as pilot:
        chosen: list = []
        app.push_screen(
            SessionPickerScreen(
                app.catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=False, confirm_missing_cwd=False)
            ),
            chosen.append,
        )
        await settle(pilot)
        await pilot.press("down", "enter")
        await pilot.pause()
    assert chosen[0].path == session_path(root, Spec("s-fork", PROJECT))


def _open_index_files() -> int:
    """This process's open descriptors on this test's index file (the database, its WAL): two
    for each SQLite connection to it.  (The test's own cache dir only: a worker process that ran
    other tests before may hold their files.)"""
    cache = os.path.realpath(os.environ["SEANCE_CACHE_DIR"]) + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            count += target.startswith(cache) and os.path.basename(target).startswith("index")
    return count


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_pushing_the_picker_often_on_one_catalog_leaves_no_index_connections_behind(tmp_path: Path) -> None:
    """A host keeps one Catalog and pushes the picker again and again (as the README advises):
    each picker's search thread (and watcher thread, every other time) ends with it, and its
    SQLite connection (two descriptors, a 16 MB page cache, a 256 MB map) must go with it."""
    app = Host(make_root(tmp_path))
    counts: list[tuple[int, int]] = []
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        for push in range(20):
            watch = push % 2 == 1
            picker = SessionPickerScreen(
                app.catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=watch, confirm_missing_cwd=False)
            )
            app.push_screen(picker)
            await settle(pilot)
            for _ in range(80 if watch else 0):
                if picker.watching:
                    break
                await pilot.pause(0.05)
            await pilot.press(*"fork")
            await settle(pilot)
            await pilot.press("escape", "escape")
            await app.workers.wait_for_complete()
            await pilot.pause(0.1)
            counts.append((_open_index_files(), threading.active_count()))
    # A live thread (of the host's event-loop worker pool, reused by the next picker) may keep
    # its one connection: two descriptors each (the database, its WAL), plus the WAL's shared
    # memory and a few SQLite holds back from a closed connection while others hold locks.
    # Kept past their threads' end, they grew by two with every picker: 49 after 20.
    assert all(files <= 2 * threads + 4 for files, threads in counts), counts
