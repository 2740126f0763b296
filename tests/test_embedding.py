"""A host Textual app embeds the picker: push_screen with a callback, and push_screen_wait."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App, ComposeResult
from textual.widgets import Static
from ui_harness import settle
from ui_sessions import PROJECT, Spec, clock, make_root, session_path

from seance.app import PickerOptions, PickResult, SessionPickerScreen
from seance.core.catalog import Catalog


class HostApp(App[None]):
    """Stands in for an agent's own Textual app: its own screen, its own bindings."""

    BINDINGS: ClassVar[list] = [("f5", "resume_picker", "Resume")]

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.catalog = Catalog([root])
        self.results: list[PickResult | None] = []

    def compose(self) -> ComposeResult:
        yield Static("host editor", id="editor")

    def picker(self) -> SessionPickerScreen:
        return SessionPickerScreen(
            self.catalog, cwd=PROJECT, clock=clock, options=PickerOptions(watch=False, confirm_missing_cwd=False)
        )

    def action_resume_picker(self) -> None:
        self.push_screen(self.picker(), self.results.append)

    @work
    async def pick_and_wait(self) -> None:
        self.results.append(await self.push_screen_wait(self.picker()))


async def test_host_pushes_the_picker_with_a_callback(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    app = HostApp(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("f5")
        await settle(pilot)
        assert isinstance(app.screen, SessionPickerScreen)
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, SessionPickerScreen), "the picker dismissed itself"
        assert app.query_one("#editor", Static).is_attached
    assert app.results == [
        PickResult("resume", session_path(root, Spec("s-fork", PROJECT)), None, session_id="s-fork", cwd=PROJECT)
    ]


async def settle_picker(pilot) -> None:
    """Wait for the picker's workers only: the host's worker is blocked on the picker itself."""
    for _ in range(3):
        await pilot.pause(0.05)
        for worker in list(pilot.app.workers):
            if worker.node is not pilot.app and not worker.is_finished:
                await worker.wait()


async def test_host_awaits_the_picker_and_gets_none_on_cancel(tmp_path: Path) -> None:
    app = HostApp(make_root(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        app.pick_and_wait()
        await settle_picker(pilot)
        assert isinstance(app.screen, SessionPickerScreen)
        await pilot.press(*"zebra")
        await settle_picker(pilot)
        assert len(app.screen.session_list.rows) == 1
        await pilot.press("escape", "escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, SessionPickerScreen)
        await app.workers.wait_for_complete()
    assert app.results == [None]


async def test_picker_css_travels_with_the_screen(tmp_path: Path) -> None:
    """The host app has no seance CSS of its own; the screen's CSS_PATH styles the list."""
    app = HostApp(make_root(tmp_path))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("f5")
        await settle(pilot)
        status = app.screen.query_one("StatusBar")
        assert status.styles.background != app.screen.styles.background
        assert SessionPickerScreen.CSS and not SessionPickerScreen.CSS_PATH, "scoped CSS, never an app-wide file"


def test_the_styles_path_has_one_home() -> None:
    import seance.app
    from seance.app.paths import STYLES

    package = Path(seance.app.__file__).parent
    others = [path for path in package.rglob("*.py") if path.name != "paths.py" and '"styles"' in path.read_text()]
    assert others == [], "compute the styles/ path only in app/paths.py"
    assert all(
        (STYLES / name).is_file()
        for name in (
            "app.tcss",
            "modal.tcss",
            "picker.tcss",
            "preview.tcss",
            "session_list.tcss",
            "status_bar.tcss",
            "tree.tcss",
            "tree_view.tcss",
        )
    )
