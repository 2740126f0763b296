"""Hostile session text and failing writes never become markup, escapes, tracebacks or hangs."""

from __future__ import annotations

from pathlib import Path

import orjson
from textual.app import App
from textual.widgets import Input
from ui_harness import settle

from seance.app.screens.prompt import PromptScreen, label_prompt, rename_prompt
from seance.app.screens.session_tree import SessionTreeScreen
from seance.core.session import SessionError

HOSTILE = "[bold]x[/] [@click=app.quit]go[/] \x1b[31mred\x1b]8;;http://e.vil\x07 \u202eevil"


def _session(path: Path, label: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": HOSTILE},
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-01-01T00:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "ok"}],
                "provider": "p",
                "model": "m",
            },
        },
    ]
    if label:
        lines.append(
            {
                "type": "label",
                "id": "a3",
                "parentId": "a2",
                "timestamp": "2026-01-01T00:00:03.000Z",
                "targetId": "a2",
                "label": label,
            }
        )
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


class TreeHost(App[None]):
    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.push_screen(SessionTreeScreen(self.path))


async def test_a_failed_label_write_with_markup_in_its_message_is_shown_literally(tmp_path, monkeypatch) -> None:
    path = _session(tmp_path / "--x[/]y--" / "s.jsonl")

    def refuse(session_path, target_id, label):
        raise SessionError(f"{session_path}: the file changed [@click=app.quit]; nothing was written")

    monkeypatch.setattr("seance.app.screens.session_tree.set_label", refuse)
    app = TreeHost(path)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await pilot.press("k", "enter")
        await settle(pilot)
        messages = [notification.message for notification in app._notifications]
        assert any("[@click=app.quit]" in message and "--x[/]y--" in message for message in messages)
        assert app.is_running, "the markup in the message did nothing"


async def test_modal_inputs_are_prefilled_without_escapes(tmp_path) -> None:
    app = App()
    async with app.run_test(size=(100, 20)) as pilot:
        app.push_screen(rename_prompt(HOSTILE, "title"))
        await pilot.pause()
        value = app.screen.query_one(Input).value
        assert "\x1b" not in value and "\u202e" not in value and "[bold]x[/]" in value
        app.pop_screen()
        app.push_screen(label_prompt(HOSTILE, "summary"))
        await pilot.pause()
        value = app.screen.query_one(Input).value
        assert "\x1b" not in value and "\u202e" not in value and "[@click=app.quit]go[/]" in value


async def test_a_file_that_fails_to_read_is_reported_not_left_loading(tmp_path, monkeypatch) -> None:
    path = _session(tmp_path / "s.jsonl")

    def explode(_path, **_options):
        raise RuntimeError("disk on fire [/]")

    monkeypatch.setattr("seance.app.screens.session_tree.read_session", explode)
    app = TreeHost(path)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen)
        assert screen.load_error and "disk on fire [/]" in screen.load_error
