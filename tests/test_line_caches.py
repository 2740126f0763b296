"""A closed seance screen leaves none of its painted lines behind (app/line_caches.py).

Textual's `StylesCache.get_inner_outer` is an `lru_cache` on a method: it kept the line cache
of each of the last 1024 widgets that painted, after the widget had gone.  A host pushing the
picker on one Catalog grew by 1.4 MB resident per push, until ~50 pushes (+70 MB at 120×30);
seance's own picker the same with each tree, help or dialog it closed.  Checked through weak
references to the closed screen's line caches: each is either freed or empty.  No memory
figure is asserted.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

from test_embedding import HostApp
from textual._styles_cache import StylesCache
from textual.screen import Screen
from ui_harness import SIZE, picker_app, settle, wait_until
from ui_sessions import make_root

from seance.app import SessionPickerScreen, SessionTreeScreen
from seance.app.screens.help import HelpScreen
from seance.app.screens.prompt import PromptScreen


def _line_caches(screen: Screen) -> list[weakref.ref[StylesCache]]:
    """The line caches of `screen` and every widget on it, weakly."""
    return [weakref.ref(widget._styles_cache) for widget in screen.walk_children(with_self=True)]


def _lines_kept(caches: list[weakref.ref[StylesCache]]) -> int:
    """Painted lines still held by those line caches that are still alive."""
    gc.collect()
    return sum(len(cache._cache) for ref in caches if (cache := ref()) is not None)


async def test_a_host_pushing_the_picker_often_keeps_no_lines_of_the_closed_ones(tmp_path: Path) -> None:
    app = HostApp(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        kept: list[int] = []
        for _ in range(3):
            app.action_resume_picker()
            await settle(pilot)
            await pilot.press(*"fork")
            await settle(pilot)
            caches = _line_caches(app.screen)
            assert isinstance(app.screen, SessionPickerScreen) and _lines_kept(caches) > 0  # (it painted)
            await pilot.press("escape", "escape")
            await wait_until(pilot, lambda: len(app.results) == len(kept) + 1)
            await app.workers.wait_for_complete()
            await pilot.pause()
            kept.append(_lines_kept(caches))
    assert app.results == [None, None, None]
    assert kept == [0, 0, 0], "closed pickers' painted lines are kept"


async def _lines_after_closing(pilot, key: str, screen_type: type[Screen]) -> int:
    """Open a screen over the picker with `key`, close it with Esc: the lines it still holds."""
    app = pilot.app
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, screen_type))
    await settle(pilot)
    caches = _line_caches(app.screen)
    assert isinstance(app.screen, screen_type) and _lines_kept(caches) > 0  # (it painted)
    await pilot.press("escape")
    await wait_until(pilot, lambda: isinstance(app.screen, SessionPickerScreen))
    await settle(pilot)
    return _lines_kept(caches)


async def test_the_tree_help_and_dialogs_closed_in_the_picker_keep_no_lines(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        kept = [
            await _lines_after_closing(pilot, key, screen_type)
            for key, screen_type in (("ctrl+t", SessionTreeScreen), ("f1", HelpScreen), ("ctrl+r", PromptScreen))
        ]
    assert kept == [0, 0, 0], "closed screens' painted lines are kept (tree, help, rename)"
