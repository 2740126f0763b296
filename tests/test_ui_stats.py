"""The preview's stats block in the session list: shown when the pane is tall, Alt+I toggles it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from textual.widgets import Static
from ui_harness import picker_app, screen_of, settle
from ui_sessions import PROJECT, make_root, standard_specs

from seance.app.screens.session_list import PickerOptions

TALL = (120, 44)  # a preview pane of 30+ rows: the stats block shows by default
SHORT = (120, 30)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def _stats(pilot) -> Static:
    return screen_of(pilot).query_one("#seance-preview-stats", Static)


def _text(widget: Static) -> str:
    return str(widget.content)


async def test_tall_pane_shows_the_stats_of_the_highlighted_session(root: Path) -> None:
    async with picker_app(root).run_test(size=TALL) as pilot:
        await settle(pilot)
        stats = _stats(pilot)
        assert stats.display
        lines = _text(stats).splitlines()
        # s-auth: two replies of 10 in / 5 out / $0.001 each, the whole tree counted
        assert lines[0] == "tokens ↑20 ↓10 · $0.0020"
        assert lines[1] == "models anthropic/claude-test ×2"
        assert lines[4].startswith("4 messages (2 user) · 1 branch · 0 compactions · ")
        await pilot.press("down")
        await settle(pilot)
        assert _text(_stats(pilot)).splitlines()[1] == "models anthropic/claude-test ×2"  # s-fork
        await pilot.press("alt+i")
        await settle(pilot)
        assert not _stats(pilot).display
        await pilot.press("alt+i")
        await settle(pilot)
        assert _stats(pilot).display


async def test_short_pane_hides_the_stats_until_alt_i(root: Path) -> None:
    async with picker_app(root).run_test(size=SHORT) as pilot:
        await settle(pilot)
        stats = _stats(pilot)
        assert not stats.display
        await pilot.press("alt+i")
        await settle(pilot)
        assert stats.display and _text(stats).startswith("tokens ↑20 ↓10")
        await pilot.press("alt+i")
        await settle(pilot)
        assert not stats.display


async def test_alt_i_brings_a_hidden_preview_back_with_the_stats(root: Path) -> None:
    async with picker_app(root).run_test(size=SHORT) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await settle(pilot)
        preview = screen_of(pilot).query_one("#seance-preview")
        assert not preview.display
        await pilot.press("alt+i")
        await settle(pilot)
        assert preview.display and _stats(pilot).display


async def test_stats_names_are_plain_text(tmp_path: Path) -> None:
    root = make_root(tmp_path, standard_specs()[:1])
    path = next(root.rglob("*.jsonl"))
    hostile = {
        "type": "message",
        "id": "zz",
        "parentId": "a0001",
        "timestamp": "2026-06-01T11:59:00.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "t", "name": "[bold]x[/]\x1b[31m", "arguments": {"path": "a"}}],
            "provider": "[@click=app.quit]p[/]",
            "model": "m\u202e",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}},
        },
    }
    with path.open("a") as handle:
        handle.write(json.dumps(hostile) + "\n")
    async with picker_app(root, options=PickerOptions(watch=False)).run_test(size=TALL) as pilot:
        await settle(pilot)
        text = _text(_stats(pilot))
        assert "[@click=app.quit]p[/]/m ×1" in text and "tools  [bold]x[/] 1" in text and "[31m" not in text
        assert "\x1b" not in text and "\u202e" not in text
        assert screen_of(pilot).is_attached  # the markup was not run (no quit)


async def test_help_lists_alt_i(root: Path) -> None:
    async with picker_app(root).run_test(size=SHORT) as pilot:
        await settle(pilot)
        assert dict(screen_of(pilot).help_rows())["Alt+I"] == "show or hide session stats"


def test_snapshot_stats_block(snap_compare, root: Path) -> None:
    async def settled(pilot) -> None:
        await settle(pilot)

    assert snap_compare(picker_app(root, cwd=PROJECT), terminal_size=TALL, run_before=settled)
