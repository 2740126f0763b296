"""The tree view when its file changes or has nothing to show (sweep of 0.7.14).

Enter resumes from the tree as it was read.  An agent's newer turns, a truncation or a
delete since then made Enter hand pi an entry that took the session back (pi moves its leaf
to the entry handed over), one the file no longer has, or a path that is gone.  Also: the
preview with no row to show, the label prompt on a short terminal, the tree's F2 palette.
"""

from __future__ import annotations

from pathlib import Path

import orjson
from test_ui_tree import SIZE, TreeApp, model_of, settle, status, write_session
from textual.command import CommandList, CommandPalette

from seance.app.app import SeanceApp
from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.widgets.context_preview import ContextPreview
from seance.app.widgets.preview_body import PreviewBody
from seance.app.widgets.tree_view import TreeView

HEADER = {"type": "session", "version": 3, "id": "live", "timestamp": "2025-02-20T10:00:00.000Z", "cwd": "/x"}


def _message(entry_id: str, parent: str | None, role: str, text: str) -> dict:
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    stamp = f"2025-02-20T10:00:{len(entry_id):02d}.000Z"
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": stamp,
        "message": {"role": role, "content": content},
    }


def _lines(*entries: dict) -> bytes:
    return b"".join(orjson.dumps(entry) + b"\n" for entry in entries)


def _live_session(path: Path) -> Path:
    path.write_bytes(_lines(HEADER, _message("u1", None, "user", "first"), _message("a1", "u1", "assistant", "one")))
    return path


def _pi_appends_a_turn(path: Path) -> None:
    with path.open("ab") as handle:  # (pi appends a line at a time)
        handle.write(_lines(_message("u2", "a1", "user", "second"), _message("a2", "u2", "assistant", "two")))


def pane_text(app: TreeApp) -> str:
    body = app.screen.query_one(ContextPreview).query_one(PreviewBody)
    return "\n".join(body.render_line(y).text.rstrip() for y in range(body.size.height)).strip()


async def test_enter_on_the_leaf_after_an_agent_appended_reads_again_and_resumes_at_the_new_end(
    tmp_path: Path,
) -> None:
    """Enter on the leaf the tree shows ("resume where it ended") handed pi the old leaf: its
    `/seance` then moved the session back there, the agent's newer turn left as a branch."""
    path = _live_session(tmp_path / "live.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert model_of(app).selected_id == "a1"
        _pi_appends_a_turn(path)
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == [], "resumed from the tree read before the agent's turn"
        assert model_of(app).selected_id == "a2"  # read again, on its new end
        await pilot.press("enter")
        await settle(pilot)
    assert [(result.entry_id, result.leaf_id) for result in app.results] == [("a2", "a2")]


async def test_enter_on_an_earlier_entry_after_an_agent_appended_keeps_the_cursor_there(tmp_path: Path) -> None:
    path = _live_session(tmp_path / "live.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("up")
        assert model_of(app).selected_id == "u1"
        _pi_appends_a_turn(path)
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == []
        assert model_of(app).selected_id == "u1" and "u2" in model_of(app).tree.by_id
        assert any("changed on disk" in message for _, message in app.notes)


async def test_enter_on_a_session_deleted_while_the_tree_is_open_resumes_nothing(tmp_path: Path) -> None:
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        path.unlink()
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == []
        assert ("error", "That session is gone (moved or deleted): nothing to resume") in app.notes


async def test_enter_on_an_entry_the_file_no_longer_has_resumes_nothing(tmp_path: Path) -> None:
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:4]))  # the leaf cut off
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == []
        assert model_of(app).selected_id in model_of(app).tree.by_id  # read again: a row the file has


async def test_a_label_written_here_is_no_change_underneath_enter_resumes_at_once(tmp_path: Path) -> None:
    """The tree's own label write changes the file too: it is read again after it, so Enter
    does not take it for an agent's write."""
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end", "L")
        await pilot.pause()
        await pilot.press(*"plan b", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    assert [result.entry_id for result in app.results] == ["aB"]


async def test_the_preview_of_a_tree_without_rows_says_so_not_loading(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(_lines(HEADER))
    settings_only = tmp_path / "settings.jsonl"
    change = {"type": "model_change", "id": "m1", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z"}
    settings_only.write_bytes(_lines(HEADER, {**change, "provider": "anthropic", "modelId": "claude"}))
    for path in (empty, settings_only):
        app = TreeApp(path)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert "Loading" not in pane_text(app)
            assert "No entry to preview" in pane_text(app)


async def test_the_preview_is_cleared_when_a_search_leaves_no_row(tmp_path: Path) -> None:
    app = TreeApp(write_session(tmp_path / "s.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Tests added." in pane_text(app)
        await pilot.press("z", "z", "q")
        await settle(pilot)
        assert status(app).startswith("(0/0)")
        assert "Tests added." not in pane_text(app)
        first = app.screen.query_one(TreeView).render_line(0).text
        assert "No entries match" in first


async def test_the_label_prompt_shows_what_is_typed_on_a_short_terminal(tmp_path: Path) -> None:
    app = TreeApp(write_session(tmp_path / "s.jsonl"))
    async with app.run_test(size=(60, 8)) as pilot:
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        await pilot.press("a", "b", "c")
        await settle(pilot)
        shown = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "abc" in shown


async def test_f2_in_the_tree_offers_its_commands(tmp_path: Path) -> None:
    path = write_session(tmp_path / "s.jsonl")
    app = SeanceApp(lambda: SessionTreeScreen(path, standalone=True), theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        await pilot.pause(0.3)
        assert isinstance(app.screen, CommandPalette)
        options = app.screen.query_one(CommandList)
        titles = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any(title.startswith("Resume here") for title in titles), titles
        assert any(title.startswith("Filter: user messages only") for title in titles), titles
        await pilot.press(*"user messages", "enter")
        await settle(pilot)
        tree = app.screen
        assert isinstance(tree, SessionTreeScreen) and tree.model is not None
        assert tree.model.filter_mode == "user-only"
