"""`update_static`: a Static updated in place is laid out again only when its height changes
(Pilot, real Textual): the tree view's status line and the preview's header and stats are
updated on every cursor move."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Static

from seance.app.widgets.static_update import update_static


class Lines(App[None]):
    CSS = "#shown { height: auto; width: 30; } #hidden { display: none; height: auto; }"

    def compose(self) -> ComposeResult:
        yield Static("one line", id="shown")
        yield Static("hidden", id="hidden")
        yield Static("below", id="below")


async def test_a_static_is_laid_out_again_only_when_its_height_changes(monkeypatch: Any) -> None:
    async with Lines().run_test(size=(40, 12)) as pilot:
        shown, below = pilot.app.query_one("#shown", Static), pilot.app.query_one("#below", Static)
        layouts: list[bool] = []
        refresh = Static.refresh

        def recorded(widget: Static, *args: Any, layout: bool = False, **kwargs: Any) -> Any:
            if widget is shown:
                layouts.append(layout)
            return refresh(widget, *args, layout=layout, **kwargs)

        monkeypatch.setattr(Static, "refresh", recorded)
        update_static(shown, "another line")
        await pilot.pause()
        assert True not in layouts and shown.size.height == 1 and str(shown.render()) == "another line"
        update_static(shown, "three lines\nof text\nhere")
        await pilot.pause()
        assert True in layouts and shown.size.height == 3 and below.region.y == 3
        layouts.clear()
        update_static(shown, "a line long enough to wrap, and more\nthen")
        await pilot.pause()
        assert True not in layouts and shown.size.height == 3, "three lines again: no layout"
        layouts.clear()
        update_static(shown, "short")
        await pilot.pause()
        assert True in layouts and shown.size.height == 1 and below.region.y == 1
        hidden = pilot.app.query_one("#hidden", Static)
        update_static(hidden, "now\ntwo lines")
        hidden.display = True
        await pilot.pause()
        assert hidden.size.height == 2, "a hidden Static updated in place is measured when shown"
