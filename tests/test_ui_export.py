"""Alt+E in the session list and in the tree view: a path prompt, the export written by a
worker, a notice; existing files are never replaced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from export_fixtures import check_page
from test_ui_tree import SIZE as TREE_SIZE
from test_ui_tree import TreeApp, model_of, write_session
from test_ui_tree import settle as tree_settle
from textual.widgets import Input
from ui_harness import SIZE, picker_app, screen_of, settle
from ui_sessions import make_root

from seance.app.screens.prompt import PromptScreen


def _record_notices(app: Any) -> list[tuple[str, str]]:
    """What the app notifies, as (severity, message)."""
    notes: list[tuple[str, str]] = []
    original = app.notify

    def notify(message: str, *, severity: str = "information", **kwargs: Any) -> None:
        notes.append((severity, message))
        original(message, severity=severity, **kwargs)

    app.notify = notify
    return notes


async def _answer(pilot: Any, text: str | None = None) -> str:
    """Answer the export prompt (keeping the default when `text` is None); return the default."""
    prompt = pilot.app.screen
    assert isinstance(prompt, PromptScreen), type(prompt)
    field = prompt.query_one(Input)
    default = field.value
    if text is not None:
        field.value = text
    await pilot.press("enter")
    return default


@pytest.fixture
def out_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)  # the default path is ./<name-or-id>.html
    return out


async def test_alt_e_in_the_list_exports_the_highlighted_session(tmp_path: Path, out_dir: Path) -> None:
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        notes = _record_notices(app)
        row = screen_of(pilot).session_list.highlighted
        assert row is not None
        await pilot.press("alt+e")
        default = await _answer(pilot)
        await settle(pilot)
        assert default == f"./{row.summary.id}.html"
        page = (out_dir / f"{row.summary.id}.html").read_text()
        text = "".join(check_page(page).text)
        assert row.summary.first_message in text
        assert notes[-1] == ("information", f"Exported to {out_dir / row.summary.id}.html")

        # the same name again: refused, the file untouched, said in an error notice
        await pilot.press("alt+e")
        await _answer(pilot)
        await settle(pilot)
        assert notes[-1][0] == "error" and "already exists" in notes[-1][1]
        assert (out_dir / f"{row.summary.id}.html").read_text() == page

        # the extension picks the format; an unknown one is refused
        await pilot.press("alt+e")
        await _answer(pilot, "context.json")
        await settle(pilot)
        payload = orjson.loads((out_dir / "context.json").read_bytes())
        assert payload["id"] == row.summary.id and payload["scope"] == "context"
        await pilot.press("alt+e")
        await _answer(pilot, "context.txt")
        await settle(pilot)
        assert notes[-1][0] == "error" and ".md, .html or .json" in notes[-1][1]
        assert not (out_dir / "context.txt").exists()

        # Esc cancels: nothing written
        await pilot.press("alt+e")
        await pilot.press("escape")
        await settle(pilot)
        assert sorted(p.name for p in out_dir.iterdir()) == ["context.json", f"{row.summary.id}.html"]


async def test_alt_e_in_the_list_names_the_file_after_the_session(tmp_path: Path, out_dir: Path) -> None:
    app = picker_app(make_root(tmp_path), query="release notes")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+e")
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == "./Release-1.0.html"
        assert screen_of_prompt_parent(app).search_input.value == "release notes", "alt+e typed nothing"


def screen_of_prompt_parent(app: Any) -> Any:
    return app.screen_stack[-2]


async def test_alt_e_in_the_tree_exports_the_context_at_the_cursor(tmp_path: Path, out_dir: Path) -> None:
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=TREE_SIZE) as pilot:
        await tree_settle(pilot)
        model = model_of(app)
        model.select_id("uB")
        await pilot.press("alt+e")
        assert model.query == "", "alt+e is not typed into the tree's search"
        default = await _answer(pilot, "at-uB.md")
        await tree_settle(pilot)
        assert default == "./tree-ui-session.html"
        text = (out_dir / "at-uB.md").read_text()
        assert "Actually, try approach B" in text and "Approach A done" not in text
        assert "- **leaf:** uB" in text
        assert app.notes[-1] == ("information", f"Exported to {out_dir / 'at-uB.md'}")
        await pilot.press("alt+e")
        await _answer(pilot, "tree.html")
        await tree_settle(pilot)
        page = (out_dir / "tree.html").read_text()
        check_page(page)
        assert "Actually, try approach B" in page
