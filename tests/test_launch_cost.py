"""What a launch does before the picker's first rows, and what it no longer does (issue 14:
launch → rows ≤ 0.6 s at 10,000 sessions).

The footer does not remount its keys when the bindings are refreshed with nothing changed
(eight times before the first rows were drawn, each remounting and restyling every key);
the first screen's CSS is not parsed twice (Textual's push re-parses every source of the
app when a screen brings CSS it has not seen).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets._footer import FooterKey  # the key widgets Footer composes (no public name)
from ui_harness import picker_app, settle
from ui_sessions import make_root

from seance.app.widgets.footer import SeanceFooter


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
        await pilot.pause()
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
