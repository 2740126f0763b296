"""Pilot tests of the session list's selection: Space / ctrl+space / alt+a, and ctrl+d on the selected
set as one batch that one ctrl+z restores."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_harness import SIZE, cursor_title, picker_app, screen_of, settle, titles, visible_text
from ui_sessions import PROJECT, Spec, make_root, session_path, write_session

from seance.app.screens.confirm import ConfirmScreen
from seance.app.selection import Selection
from seance.core.clean import human_size
from seance.core.model import SessionSummary


@pytest.fixture
def root(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # the Trash, in the test's temp dir
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return make_root(tmp_path)


def selected_titles(pilot: Pilot) -> set[str]:
    return {summary.title for summary in screen_of(pilot).model.selection.summaries}


def selected_lines(pilot: Pilot) -> list[str]:
    return [line for line in visible_text(pilot) if line[1:2] == "●"]


def status_text(pilot: Pilot) -> str:
    return str(screen_of(pilot).status.render())


async def test_space_marks_while_the_query_is_empty_and_ctrl_space_always(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        await pilot.press("space")
        await pilot.pause()
        assert screen.search_input.value == "" and len(screen.model.selection) == 1
        assert selected_lines(pilot) == [line for line in visible_text(pilot) if line.startswith("›●")]
        assert "1 selected" in status_text(pilot)
        await pilot.press("down", "down", "ctrl+space")
        await pilot.pause()
        assert selected_titles(pilot) == {"fix the auth bug in login", "Release 1.0"}
        assert len(selected_lines(pilot)) == 2 and "2 selected" in status_text(pilot)
        await pilot.press("space")  # again on the same row: deselected
        await pilot.pause()
        assert selected_titles(pilot) == {"fix the auth bug in login"}
        await pilot.press(*"rel", "space")  # with a query, Space types
        await settle(pilot)
        assert screen.search_input.value == "rel " and len(screen.model.selection) == 1
        await pilot.press("ctrl+space")  # ctrl+space selection whatever the query
        await pilot.pause()
        assert selected_titles(pilot) == {"fix the auth bug in login", "Release 1.0"}
        assert "2 selected" in status_text(pilot)
        await pilot.press("ctrl+@")  # ctrl+space as a terminal sends it (NUL)
        await pilot.pause()
        assert selected_titles(pilot) == {"fix the auth bug in login"} and screen.search_input.value == "rel "


async def test_alt_a_marks_every_row_matching_the_query_and_again_unmarks_them(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        await pilot.press(*"auth")
        await settle(pilot)
        matching = set(titles(pilot))
        assert matching and len(titles(pilot)) < 5
        await pilot.press("alt+a")
        await pilot.pause()
        assert {summary.path for summary in screen.model.selection.summaries} == {
            row.path for row in screen.session_list.rows
        }
        assert f"{len(screen.session_list.rows)} selected" in status_text(pilot)
        await pilot.press("alt+a")
        await pilot.pause()
        assert len(screen.model.selection) == 0 and "selected" not in status_text(pilot)


async def test_ctrl_d_moves_the_marked_set_with_one_confirm_and_ctrl_z_restores_all(root: Path) -> None:
    named = session_path(root, Spec("s-named", PROJECT))
    old = session_path(root, Spec("s-old", PROJECT))
    contents = {named: named.read_bytes(), old: old.read_bytes()}
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "space", "end", "space")  # Release 1.0 and ancient history
        await pilot.pause()
        assert selected_titles(pilot) == {"Release 1.0", "ancient history"}
        await pilot.press("ctrl+d")
        await pilot.pause()
        dialog = pilot.app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert "Move 2 selected sessions" in str(dialog.query_one("#seance-dialog-title").render())
        size = sum(len(data) for data in contents.values())
        assert f"2 sessions, {human_size(size)}" in str(dialog.query_one("#seance-dialog-detail").render())
        await pilot.press("escape")
        await settle(pilot)
        assert all(path.exists() for path in contents) and len(screen_of(pilot).model.selection) == 2
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not any(path.exists() for path in contents)
        assert set(titles(pilot)).isdisjoint({"Release 1.0", "ancient history"})
        assert len(screen_of(pilot).model.selection) == 0 and "selected" not in status_text(pilot)
        assert "2 sessions moved to trash" in screen_of(pilot).status.message
        await pilot.press("ctrl+z")  # one undo: the whole batch
        await settle(pilot)
        assert all(path.read_bytes() == data for path, data in contents.items())
        assert {"Release 1.0", "ancient history"} <= set(titles(pilot))
        assert "2 sessions restored" in screen_of(pilot).status.message
        assert not screen_of(pilot).model.can_undo


async def test_ctrl_z_of_a_batch_puts_the_cursor_on_the_first_restored_session_in_view(
    tmp_path: Path, monkeypatch
) -> None:
    """A single Ctrl+Z puts the cursor back on the restored session; a batch's Ctrl+Z left it
    where it was (here at the list's end, the restored sessions out of sight).  Now the cursor
    goes to the first restored session in list order, scrolled into view."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt {number:02d}",), timedelta(hours=number + 1)) for number in range(60)
    ]
    async with picker_app(make_root(tmp_path, specs)).run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.press("down", "down", "down", "space", "up", "up", "space")  # prompt 03, then prompt 01
        await pilot.pause()
        assert selected_titles(pilot) == {"prompt 01", "prompt 03"}
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert "2 sessions moved to trash" in screen_of(pilot).status.message
        await pilot.press("end")
        await settle(pilot)
        assert cursor_title(pilot) == "prompt 59" and widget.scroll_offset.y > 10
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert "2 sessions restored" in screen_of(pilot).status.message
        assert cursor_title(pilot) == "prompt 01"
        assert 0 <= widget.cursor - widget.scroll_offset.y < widget.size.height, "the restored session is in view"


async def test_a_marked_session_an_agent_is_writing_is_refused_in_one_notice_and_the_others_go(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = make_root(tmp_path, [Spec("idle", PROJECT, ("nobody here",), timedelta(days=3))])
    live = write_session(root, Spec("live", PROJECT, ("an agent is working here",)), mtime=False)  # written now
    idle = session_path(root, Spec("idle", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+a", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert live.exists() and not idle.exists()
        notices = [notification.message for notification in pilot.app._notifications]
        assert any("1 not moved" in notice and "an agent may be using it" in notice for notice in notices)
        assert selected_titles(pilot) == {"an agent is working here"}  # still selected: it is still there


def test_marks_toggle_select_all_and_drop() -> None:
    def summary(name: str, size: int) -> SessionSummary:
        return SessionSummary(f"/s/{name}", name, "/p", None, None, None, "", 0.0, 1, "hi", size=size)

    a, b, c = summary("a", 1), summary("b", 2), summary("c", 4)
    selection = Selection()
    assert selection.toggle(a) and not selection.toggle(a) and len(selection) == 0
    assert selection.toggle(a) and selection.select_all([a, b]) == 1 and selection.total_bytes == 3
    assert selection.select_all([a, b]) == -2 and len(selection) == 0  # all selected already: deselected
    selection.select_all([a, b, c])
    selection.drop(["/s/b"])
    assert selection.paths == {"/s/a", "/s/c"} and [s.id for s in selection.summaries] == ["a", "c"]


def test_snapshot_selected_rows_and_the_status_count(snap_compare, root: Path) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("space", "down", "down", "space", "down")
        await settle(pilot)

    assert snap_compare(picker_app(root), terminal_size=(120, 24), run_before=run_before)


async def test_the_refusals_notice_keeps_one_line_per_refused_session(tmp_path: Path, monkeypatch) -> None:
    """The notice lists each refused session on a line of its own under "N not moved to the
    Trash:"; the app's notify, which sanitises every toast, folded it into one run-on line.
    Each line is still sanitised: a raw escape or markup in a toast stays inert."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = make_root(tmp_path, [Spec("idle", PROJECT, ("nobody here",), timedelta(days=3))])
    for sid in ("live-1", "live-2"):
        write_session(root, Spec(sid, PROJECT, (f"an agent is working in {sid}",)), mtime=False)  # written now
    async with picker_app(root).run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("alt+a", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        [notice] = [notification.message for notification in pilot.app._notifications]
        lines = notice.split("\n")
        assert lines[0] == "2 not moved to the Trash:" and len(lines) == 3, notice
        assert all("an agent may be using it" in line for line in lines[1:]), notice
        pilot.app.notify("first \x1b]2;TITLE\x07[bold]x[/]\r\nsecond\x1b[2J\u202e")
        await pilot.pause()
        shown = [notification.message for notification in pilot.app._notifications if notification.message != notice]
        assert [message.split("\n") for message in shown] == [["first [bold]x[/]", "second"]]


async def test_marked_sessions_go_and_one_warning_names_what_an_unfinished_delete_left(
    root: Path, tmp_path: Path, monkeypatch
) -> None:
    """An earlier delete that cannot be finished now (the Trash's disk full) made each marked
    session fail with "No space left on device"; now they all go and one warning says what
    that earlier delete left where."""
    import errno

    from conftest import unfinished_folder_move

    from seance.core import trash as trash_module

    aside, _journal = unfinished_folder_move(trash_module.trash_dir(), tmp_path / "elsewhere" / "old-session")

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(trash_module.shutil, "copy2", disk_full)
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+a", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert titles(pilot) == []
        warnings = [note.message for note in pilot.app._notifications if aside.name in note.message]
        assert len(warnings) == 1 and warnings[0].count(aside.name) == 1
