"""The tree view when its file changes or has nothing to show (sweep of 0.7.14).

Enter resumes from the tree as it was read.  An agent's newer turns, a truncation or a
delete since then made Enter hand pi an entry that took the session back (pi moves its leaf
to the entry handed over), one the file no longer has, or a path that is gone.  Also: the
preview with no row to show, the label prompt on a short terminal, the tree's F2 palette.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
from test_ui_tree import SIZE, TreeApp, model_of, settle, status, write_session
from textual.command import CommandList, CommandPalette

import seance.app.screens.session_tree as session_tree_module
from seance.app.app import SeanceApp
from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.widgets.context_preview import ContextPreview
from seance.app.widgets.preview_body import PreviewBody
from seance.app.widgets.tree_view import TreeView
from seance.core.session import read_session as real_read_session

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


# -- after review: a reading again keeps what the user did meanwhile --------------------------------


class SlowReads:
    """Make the screen's reads slow on demand: the read is made, then waits on `release`
    before it returns (a big session takes seconds to read)."""

    def __init__(self) -> None:
        self.slow = False
        self.release = threading.Event()
        self.started = threading.Event()

    def __call__(self, *args, **kwargs):
        result = real_read_session(*args, **kwargs)
        if self.slow:
            self.started.set()
            self.release.wait(10)
        return result


async def _wait(pilot, predicate, rounds: int = 200) -> None:
    for _ in range(rounds):
        if predicate():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition not reached")


async def _labelled_at_the_end_while_the_reading_waits(app: TreeApp, pilot: Any, slow: SlowReads, text: str) -> str:
    """The tree shown, its end row labelled `text`, and the reading again after that write held
    (`slow`: read, then waiting): the labelled entry."""
    await _wait(pilot, lambda: isinstance(app.screen, SessionTreeScreen) and app.screen.model is not None)
    await pilot.pause(0.2)
    await pilot.press("end")
    labelled = model_of(app).selected_id
    assert labelled is not None
    slow.slow = True
    await pilot.press("L")
    await pilot.pause(0.1)
    await pilot.press(*text, "enter")
    await _wait(pilot, slow.started.is_set)
    return labelled


async def test_a_cursor_moved_while_the_tree_reads_again_stays_where_it_was_moved(tmp_path: Path, monkeypatch) -> None:
    """The user labels an entry, then moves on (the silent re-read after the label write of
    a big session takes seconds): when the re-read lands, the cursor jumps back to the
    labelled entry (`_read_again(self.model.selected_id, ...)` taken when the write ended)."""
    slow = SlowReads()
    monkeypatch.setattr(session_tree_module, "read_session", slow)
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        labelled = await _labelled_at_the_end_while_the_reading_waits(app, pilot, slow, "mine")
        await pilot.press("home")  # the user moves on meanwhile
        await pilot.pause(0.1)
        moved_to = model_of(app).selected_id
        assert moved_to != labelled
        slow.slow = False
        slow.release.set()
        await _wait(pilot, lambda: app.screen._reading_again is None)
        await pilot.pause(0.1)
        assert model_of(app).selected_id == moved_to, (
            f"the cursor jumped back from {moved_to!r} to {model_of(app).selected_id!r}"
        )


async def test_a_label_written_while_the_tree_reads_again_stays_shown(tmp_path: Path, monkeypatch) -> None:
    """A second label written while the re-read of the first is under way: the re-read had
    read the file before it, and the tree then shows the entry without its label (the label
    is on disk), and no re-read follows."""
    slow = SlowReads()
    monkeypatch.setattr(session_tree_module, "read_session", slow)
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        first = await _labelled_at_the_end_while_the_reading_waits(app, pilot, slow, "one")
        await pilot.press("up")
        second = model_of(app).selected_id
        assert second != first
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"two", "enter")
        await _wait(pilot, lambda: model_of(app).tree.labels.get(second) == "two")  # written and shown
        assert b'"two"' in path.read_bytes()
        slow.slow = False
        slow.release.set()
        await _wait(pilot, lambda: app.screen._reading_again is None)
        await pilot.pause(0.3)
        assert model_of(app).tree.labels.get(second) == "two", "the label written is no longer shown"


async def test_the_palette_filter_command_sets_its_filter_even_when_it_is_on(tmp_path: Path) -> None:
    """F2 "Filter: user messages only" while that filter is on: the palette command is the
    key's toggle (`action_filter` -> `toggle_filter`), so it turns the filter off (default),
    the opposite of its title and help ("Show only what the user typed")."""

    path = write_session(tmp_path / "s.jsonl")
    app = SeanceApp(lambda: SessionTreeScreen(path, standalone=True), theme="textual-dark")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+u")
        await settle(pilot)
        assert app.screen.model.filter_mode == "user-only"
        await pilot.press("f2")
        await settle(pilot)
        await pilot.pause(0.3)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"user messages", "enter")
        await settle(pilot)
        assert app.screen.model.filter_mode == "user-only", app.screen.model.filter_mode


async def test_a_label_written_after_an_agents_turn_still_says_the_file_changed(tmp_path: Path) -> None:
    """The tree is open on the leaf; an agent appends a turn; the user labels the leaf (the
    tree reads the file again after its write: silently, the cursor kept on the old leaf);
    Enter then resumes at the old leaf with no word that the file changed: pi moves the
    session back there and the agent's new turn is left as a branch (the very case 5f27e60
    fixes for plain Enter)."""

    path = _live_session(tmp_path / "live.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert model_of(app).selected_id == "a1"  # the end
        _pi_appends_a_turn(path)
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"done", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    said = [message for _, message in app.notes]
    resumed = [(result.entry_id, result.leaf_id) for result in app.results]
    assert resumed != [("a1", "a1")] or any("changed on disk" in message for message in said), (
        f"resumed at the old end {resumed} with no word of the agent's turn; notes: {said}"
    )


async def test_enter_on_the_end_row_when_the_leaf_is_hidden_goes_to_the_new_end(tmp_path: Path) -> None:
    """The session's last entry is bookkeeping the default filter hides (a model change: the
    user ran /model at the end; or a label: the tree's own Shift+L appends one as the new
    leaf).  The tree opens on the last row (the leaf's nearest visible ancestor, a1): the end
    as shown.  An agent appends a turn; Enter there: `was_leaf` compares the row's entry with
    `tree.leaf_id` (m1), so the cursor stays on a1, and the next Enter resumes at a1: pi moves
    the session back, the agent's turn left as a branch (what 5f27e60 fixes on a visible leaf)."""

    path = tmp_path / "live.jsonl"
    change = {
        "type": "model_change",
        "id": "m1",
        "parentId": "a1",
        "timestamp": "2025-02-20T10:00:05.000Z",
        "provider": "anthropic",
        "modelId": "claude-opus-4",
    }
    path.write_bytes(
        _lines(HEADER, _message("u1", None, "user", "first"), _message("a1", "u1", "assistant", "one"), change)
    )
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert model_of(app).selected_id == "a1"  # the tree opens on its end
        with path.open("ab") as handle:  # the agent's next turn (after the model change)
            handle.write(_lines(_message("u2", "m1", "user", "second"), _message("a2", "u2", "assistant", "two")))
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == []
        assert model_of(app).selected_id == "a2", (
            f"the cursor stayed on {model_of(app).selected_id!r}: Enter now resumes the session back there"
        )


async def test_folds_survive_a_label_written_in_the_tree(tmp_path: Path) -> None:
    """A branch folded (Ctrl+Left), then an entry labelled: the tree's re-read after its own
    label write (`_carry_view`) drops every fold (before 5f27e60 a label kept them: it only
    updated the model).  On a big tree folding is how one gets around: each label unfolds all."""

    app = TreeApp(write_session(tmp_path / "s.jsonl"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+left", "ctrl+left")  # fold branch A (as test_fold_unfold_and_branch_jumps)
        assert model_of(app).folded == {"uA"}
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"later", "enter")
        await settle(pilot)
        assert "later" in model_of(app).tree.labels.get("uA", "")  # (the prompt starts from its label)
        assert model_of(app).folded == {"uA"}, f"folds after the label: {model_of(app).folded}"


async def test_after_a_label_written_in_the_tree_enter_on_the_end_follows_the_new_end(
    tmp_path: Path,
) -> None:
    """The same through the tree's own Shift+L: `set_label` appends the label entry as a child
    of the leaf, so once read again the leaf is that (hidden) label entry, and the end row a1
    is no longer `tree.leaf_id`: an agent's turn after it, Enter on the end keeps the cursor
    on a1 (not the new end), and the next Enter takes the session back to a1."""

    path = _live_session(tmp_path / "live.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert model_of(app).selected_id == "a1"
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"checkpoint", "enter")
        await settle(pilot)
        assert model_of(app).selected_id == "a1"  # still the end row
        _pi_appends_a_turn(path)  # (pi's leaf in memory is a1: its turn is a1's child)
        await pilot.press("enter")
        await settle(pilot)
        assert app.results == []
        assert model_of(app).selected_id == "a2", f"the cursor stayed on {model_of(app).selected_id!r}"


# -- after the second review: the tree's own labels, folds the filter hides ----------------------------


class WaitThenRead:
    """The read waits on `release` first, then reads (a big session: the read starts late)."""

    def __init__(self) -> None:
        self.slow = False
        self.release = threading.Event()
        self.started = threading.Event()

    def __call__(self, *args, **kwargs):
        if self.slow:
            self.started.set()
            self.release.wait(10)
        return real_read_session(*args, **kwargs)


async def test_two_own_labels_in_quick_succession_do_not_say_an_agent_changed_the_file(
    tmp_path: Path, monkeypatch
) -> None:
    slow = WaitThenRead()
    monkeypatch.setattr(session_tree_module, "read_session", slow)
    path = write_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await _wait(pilot, lambda: isinstance(app.screen, SessionTreeScreen) and app.screen.model is not None)
        await pilot.pause(0.2)
        await pilot.press("end")
        slow.slow = True
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"one", "enter")
        await _wait(pilot, slow.started.is_set)  # label one written; the re-read has not read yet
        await pilot.press("up")
        second = model_of(app).selected_id
        await pilot.press("L")
        await pilot.pause(0.1)
        await pilot.press(*"two", "enter")
        await _wait(pilot, lambda: model_of(app).tree.labels.get(second) == "two")
        slow.slow = False
        slow.release.set()  # the re-read now reads the file with both of the tree's own labels
        await _wait(pilot, lambda: app.screen._reading_again is None)
        await pilot.pause(0.5)
        await settle(pilot)
    said = [message for _, message in app.notes]
    assert not any("changed on disk" in message for message in said), said


def _line(**entry) -> bytes:
    return orjson.dumps(entry) + b"\n"


def _with_a_second_label(path: Path) -> Path:
    """The fixed session, with aA2 (below uA, labelled 'milestone') labelled too."""
    write_session(path)
    label = {"id": "l2", "parentId": "leaf", "timestamp": "2024-12-01T09:10:00.000Z", "targetId": "aA2"}
    with path.open("ab") as handle:
        handle.write(_line(type="label", **label, label="tests"))
    return path


async def _labeled_only_with_ua_folded(app: TreeApp, pilot: Any) -> None:
    """Ctrl+L (labeled only: uA and aA2 are rows), then uA folded (Ctrl+Left)."""
    await settle(pilot)
    await pilot.press("ctrl+l")
    await settle(pilot)
    model = model_of(app)
    assert model.filter_mode == "labeled-only"
    assert set(model.rows.ids) >= {"uA", "aA2"}, list(model.rows.ids)
    model.select_id("uA")
    app.screen.query_one(session_tree_module.TreeView).sync()
    await pilot.press("ctrl+left")
    await settle(pilot)
    assert model_of(app).folded == {"uA"}


async def test_a_fold_on_an_entry_the_filter_now_hides_does_not_hide_its_branch(tmp_path: Path) -> None:
    """Filter 'labeled only': uA (label 'milestone') folded, aA2 labelled below it.  Another
    seance/pi removes uA's label and the user presses Enter (file changed: read again)."""
    path = _with_a_second_label(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await _labeled_only_with_ua_folded(app, pilot)
        with path.open("ab") as handle:  # elsewhere: uA's label removed
            handle.write(
                _line(type="label", id="l3", parentId="l2", timestamp="2024-12-01T09:11:00.000Z", targetId="uA")
            )
        await pilot.press("enter")  # changed on disk: read again
        await settle(pilot)
        await pilot.pause(0.3)
        model = model_of(app)
        assert "aA2" in model.tree.labels and "uA" not in model.tree.labels
        assert "aA2" in list(model.rows.ids), (
            f"labelled aA2 is not shown; rows {list(model.rows.ids)}, folded {model.folded}"
        )


async def test_removing_the_label_of_a_folded_entry_in_labeled_only_keeps_its_labelled_branch_shown(
    tmp_path: Path,
) -> None:
    """Filter 'labeled only', uA folded; Shift+L on uA, label emptied (removed): once the tree
    has read the file again, the labelled aA2 below uA must still be a row."""
    path = _with_a_second_label(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await _labeled_only_with_ua_folded(app, pilot)
        await pilot.press("L")
        await pilot.pause(0.2)
        await pilot.press("ctrl+u")  # (clear the prompt)
        for _ in range(20):
            await pilot.press("backspace")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause(0.5)
        await settle(pilot)
        model = model_of(app)
        assert "uA" not in model.tree.labels, model.tree.labels
        assert "aA2" in list(model.rows.ids), (
            f"labelled aA2 is not shown; rows {list(model.rows.ids)}, folded {model.folded}"
        )
