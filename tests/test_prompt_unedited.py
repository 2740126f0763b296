"""The rename and label prompts write nothing on Enter before an edit (the value is pre-filled as
drawn), yet a value drawn as nothing can still be cleared with an empty answer, and an edit
undone by hand back to the drawn form is an answer (Pilot, real session files)."""

import os
import time
from pathlib import Path

import orjson
import pytest
from textual.app import App
from textual.widgets import Input
from ui_harness import picker_app, settle

from seance.app.screens.confirm import ConfirmScreen
from seance.app.screens.prompt import PromptScreen
from seance.app.screens.session_list import PickerOptions, SessionPickerScreen
from seance.app.screens.session_tree import SessionTreeScreen

STAMP = "2026-01-01T00:00:00.000Z"


def write_session(root: Path, *, name: str | None = None, label: str | None = None) -> Path:
    session_id = "0a1b2c3d-1111-4000-8000-000000000001"
    hello = {"role": "user", "content": "hello"}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "hi there"}]}
    entries: list[dict] = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": STAMP, "cwd": "/work/demo/p"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": STAMP, "message": hello},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": STAMP, "message": reply},
    ]
    parent = "a1"
    if label is not None:
        entries.append(
            {"type": "label", "id": "l1", "parentId": parent, "timestamp": STAMP, "targetId": "u1", "label": label}
        )
        parent = "l1"
    if name is not None:
        entries.append({"type": "session_info", "id": "n1", "parentId": parent, "timestamp": STAMP, "name": name})
    bucket = root / "--work-demo-p--"
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / "2026-01-01T00-00-00-000Z_0a1b2c3d-1111-4000-8000-000000000001.jsonl"
    path.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in entries))
    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def env(tmp_path, monkeypatch) -> Path:
    for name in ("home", "data", "agent", "sessions", "cache"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return tmp_path


@pytest.mark.parametrize("label", ["\x1b[0m", "\x07", "   "])
async def test_a_label_drawn_empty_can_still_be_removed_with_an_empty_answer(env, label) -> None:
    """`Label (empty to remove):` pre-filled with "" (the label as drawn), Enter: it is removed."""
    path = write_session(env / "sessions", label=label)
    before = path.read_bytes()
    app = App()
    async with app.run_test(size=(160, 40)) as pilot:
        screen = SessionTreeScreen(path)
        app.push_screen(screen)
        await settle(pilot, 5)
        await pilot.press("ctrl+l")  # labelled only: the cursor is on the labelled entry
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == ""
        await pilot.press("enter")
        await settle(pilot, 5)
        after = path.read_bytes()
        assert after != before, "the label was not removed: nothing written"
        last = orjson.loads(after.splitlines()[-1])
        assert last["type"] == "label" and not last.get("label")


@pytest.mark.parametrize("name", ["\x1b[0m", "\x07\x08"])
async def test_a_name_drawn_empty_can_still_be_cleared(env, name) -> None:
    """'Rename Session (empty to clear the name)', input empty: Enter asks to clear it."""
    root = env / "sessions"
    write_session(root, name=name)
    app = picker_app(root, scope="all", cache_dir=env / "cache", options=PickerOptions(watch=False, enter="tree"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, 5)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == ""
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen), f"no 'Clear the name?': on {type(app.screen).__name__}"


async def test_a_name_edited_and_edited_back_to_its_clean_form_is_written(env) -> None:
    """Stored "fix\\nbug", drawn "fix bug": the user deletes the "g" and types it again to
    store the clean name.  An edit was made: the clean name is written."""
    root = env / "sessions"
    path = write_session(root, name="fix\nbug")
    app = picker_app(root, scope="all", cache_dir=env / "cache", options=PickerOptions(watch=False, enter="tree"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, 5)
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert app.screen.query_one(Input).value == "fix bug"
        await pilot.press("end", "backspace", "g", "enter")
        await settle(pilot, 5)
        assert isinstance(app.screen, SessionPickerScreen)
        last = orjson.loads(path.read_bytes().splitlines()[-1])
        assert last["type"] == "session_info" and last["name"] == "fix bug", last
