"""Pilot tests of the session list: every key, the mouse, search, scopes, sorts and messages."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from conftest import unfinished_folder_move
from textual import events
from textual.widgets import Input
from ui_harness import SIZE, cursor_title, picker_app, screen_of, settle, titles, visible_text
from ui_sessions import NOW, OTHER, PROJECT, Spec, make_root, session_path, write_session

from seance.app.results import PickResult
from seance.app.rows import threaded
from seance.app.screens.confirm import ConfirmScreen
from seance.app.screens.help import HelpScreen
from seance.app.screens.prompt import PromptScreen
from seance.app.screens.session_list import EMPTY, PickerOptions
from seance.app.widgets.session_list import scroll_to_match
from seance.core.catalog import Catalog
from seance.core.session import load_session
from seance.core.text import relative_age


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


# -- first paint, rows, status -------------------------------------------------------------------


async def test_current_folder_threaded_rows(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert titles(pilot) == [
            "fix the auth bug in login",  # s-auth, and its fork right under it
            "fix the auth bug in login",
            "Release 1.0",
            "update the README",
            "ancient history",
        ]
        rows = screen.session_list.rows
        assert rows[1].prefix == "└─ " and rows[1].summary.id == "s-fork"
        assert rows[0].summary.exact, "the exact index refresh replaced the quick listing"
        lines = visible_text(pilot)
        assert lines[0].startswith("› fix the auth bug in login")
        assert lines[1].startswith("  └─ fix the auth bug in login")
        assert lines[0].split()[-2:] == ["4", "5m"]  # message count and age from the fixed clock
        assert lines[0].endswith("5m ") and lines[4].endswith("1y "), "a gutter keeps ages off the divider"
        assert lines[4].split()[-1] == "1y"
        status = screen.status.render().plain
        assert "◉ Current Folder" in status and "Sort: Threaded" in status and "5 sessions" in status


def test_relative_age_steps() -> None:
    ms = NOW.timestamp() * 1000
    minute = 60_000
    expected = {0: "now", 5: "5m", 120: "2h", 3 * 1440: "3d", 15 * 1440: "2w", 45 * 1440: "1mo", 800 * 1440: "2y"}
    for minutes, text in expected.items():
        assert relative_age(ms - minutes * minute, ms) == text


def test_threaded_breaks_parent_cycles(tmp_path: Path) -> None:
    root = make_root(
        tmp_path, [Spec("a", PROJECT, parent="b"), Spec("b", PROJECT, parent="a"), Spec("c", PROJECT, parent="missing")]
    )
    rows = threaded(Catalog([root]).exact(None))
    assert sorted(row.summary.id for row in rows) == ["a", "b", "c"]


# -- navigation keys -------------------------------------------------------------------------------


async def test_arrow_page_home_end_keys_move_the_cursor(tmp_path: Path) -> None:
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt number {number:02d}",), age=_minutes(number)) for number in range(60)
    ]
    async with picker_app(make_root(tmp_path, specs)).run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.press("down", "down")
        assert cursor_title(pilot) == "prompt number 02"
        await pilot.press("up")
        assert widget.cursor == 1
        await pilot.press("up", "up")
        assert widget.cursor == 0, "clamped at the top, no wrap"
        await pilot.press("pagedown")
        page = widget.cursor
        assert page >= 10
        await pilot.press("pageup")
        assert widget.cursor == 0
        await pilot.press("end")
        assert cursor_title(pilot) == "prompt number 59"
        assert widget.scroll_offset.y > 0, "the cursor row was scrolled into view"
        await pilot.press("down")
        assert widget.cursor == 59
        await pilot.press("home")
        assert widget.cursor == 0 and widget.scroll_offset.y == 0
        assert screen_of(pilot).search_input.value == "", "navigation keys never edit the query"


async def test_enter_resumes_the_selected_session(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "enter")
    assert app.return_value == PickResult(
        "resume", session_path(root, Spec("s-named", PROJECT)), None, session_id="s-named", cwd=PROJECT
    )


async def test_ctrl_f_picks_a_fork(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
    assert app.return_value == PickResult(
        "fork", session_path(root, Spec("s-auth", PROJECT)), None, session_id="s-auth", cwd=PROJECT
    )


async def test_escape_clears_the_query_then_cancels(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"zebra")
        await settle(pilot)
        assert len(titles(pilot)) == 1
        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(pilot).search_input.value == ""
        assert len(titles(pilot)) == 5
        await pilot.press("escape")
        await pilot.pause()
    assert app.return_value is None


async def test_clearing_the_query_keeps_the_selected_session(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"readme")
        await settle(pilot)
        assert cursor_title(pilot) == "update the README"
        selected = screen_of(pilot).session_list.highlighted.path
        await pilot.press("escape")  # Esc clears the query: the full list, same session selected
        await settle(pilot)
        assert len(titles(pilot)) == 5
        assert screen_of(pilot).session_list.highlighted.path == selected
        await pilot.press(*"e")
        await settle(pilot)
        await pilot.press("down")
        selected = screen_of(pilot).session_list.highlighted.path
        assert selected != screen_of(pilot).session_list.rows[0].path
        await pilot.press("backspace")  # clearing by hand does the same
        await settle(pilot)
        assert len(titles(pilot)) == 5
        assert screen_of(pilot).session_list.highlighted.path == selected
        await pilot.press(*"e")
        await settle(pilot)
        await pilot.press("down")
        selected = screen_of(pilot).session_list.highlighted.path
        await pilot.press("ctrl+u")  # and so does the input's Ctrl+U (delete to the start)
        await settle(pilot)
        assert len(titles(pilot)) == 5
        assert screen_of(pilot).session_list.highlighted.path == selected


async def test_ctrl_c_cancels_even_with_a_query(root: Path) -> None:
    app = picker_app(root, query="auth")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value is None and app.return_code == 0


# -- scope, sort, filters -------------------------------------------------------------------------


async def test_tab_toggles_current_folder_and_all(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        await pilot.press("tab")
        await settle(pilot)
        assert screen.scope == "all" and len(titles(pilot)) == 8
        assert "◉ All" in screen.status.render().plain
        assert any("demo/other" in line for line in visible_text(pilot)), "all scope shows the cwd"
        assert screen.search_input.has_focus, "tab did not move the focus"
        await pilot.press("tab")
        await settle(pilot)
        assert screen.scope == "project" and len(titles(pilot)) == 5


async def test_ctrl_s_cycles_sort_orders(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        await pilot.press("down")  # the fork
        await pilot.press("ctrl+s")
        assert screen.sort == "recent" and "Sort: Recent" in screen.status.render().plain
        rows = screen.session_list.rows
        assert all(row.prefix == "" for row in rows)
        assert [row.summary.id for row in rows] == ["s-auth", "s-fork", "s-named", "s-docs", "s-old"]
        assert screen.session_list.highlighted.summary.id == "s-fork", "the cursor follows the session"
        await pilot.press("ctrl+s")
        assert screen.sort == "created"
        await pilot.press("ctrl+s")
        assert screen.sort == "relevance"
        await pilot.press("ctrl+s")
        assert screen.sort == "threaded"


async def test_ctrl_n_shows_named_sessions_only(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert titles(pilot) == ["Release 1.0"]
        assert "Name: Named" in screen_of(pilot).status.render().plain
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert len(titles(pilot)) == 5


async def test_ctrl_p_shows_file_paths(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not any(".jsonl" in line for line in visible_text(pilot))
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert ".jsonl" in visible_text(pilot)[0]
        assert screen_of(pilot).search_input.value == ""


# -- search -------------------------------------------------------------------------------------


async def test_typing_filters_and_highlights(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"release")
        await settle(pilot)
        rows = screen_of(pilot).session_list.rows
        assert rows[0].summary.title == "Release 1.0"
        assert rows[0].title_spans() == [(0, 7)]
        assert f"{len(rows)} of 5 sessions" in screen_of(pilot).status.render().plain


async def test_a_match_beyond_the_visible_title_scrolls_into_view(tmp_path: Path) -> None:
    long_prompt = " ".join(["padding words before it"] * 12) + " the needle here and more words after the needle"
    root = make_root(tmp_path, [Spec("long", PROJECT, (long_prompt,)), Spec("short", PROJECT, ("a needle early",))])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"needle")
        await settle(pilot)
        lines = visible_text(pilot)
        long_line = next(line for line in lines if "the needle here" in line)
        assert long_line[2] == "…" and "the needle here" in long_line, lines
        assert any(line.startswith("  a needle early") for line in lines)  # an early match stays put
        row = next(row for row in screen_of(pilot).session_list.rows if row.summary.id == "long")
        assert len(row.title_spans()) == 2  # both occurrences are highlighted


def test_scroll_to_match_keeps_the_first_match_visible() -> None:
    title = "x" * 100 + " match"
    text, spans = scroll_to_match(title, [(101, 106)], 40)
    assert text.startswith("…") and len(text[: spans[0][1]]) < 40
    assert [text[a:b] for a, b in spans] == ["match"]
    assert scroll_to_match("match early", [(0, 5)], 40) == ("match early", [(0, 5)])


async def test_full_text_hit_shows_a_snippet_line(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"zebra")
        await settle(pilot)
        rows = screen_of(pilot).session_list.rows
        assert [row.summary.id for row in rows] == ["s-docs"]
        assert rows[0].height == 2
        lines = visible_text(pilot)
        assert lines[0].startswith("› update the README")
        assert "zebra crossing" in lines[1]


async def test_invalid_regex_is_a_status_message_and_keeps_the_last_results(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"readme")
        await settle(pilot)
        assert titles(pilot) == ["update the README"]
        await pilot.press(*" re:(unclosed")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.status.message_is_error and screen.status.message.startswith("invalid query: re:")
        assert titles(pilot) == ["update the README"]  # the last valid query's rows stay
        await pilot.press("escape")
        await settle(pilot)
        assert len(titles(pilot)) == 5 and not screen.status.message


async def test_an_invalid_query_with_no_last_results_lists_the_sessions_and_says_why(root: Path) -> None:
    """`seance pick --query 're:('` (pi's `/seance re:(`), or Tab / Ctrl+N after typing one:
    no valid query had listed these sessions, yet nothing was listed for them — "0 sessions"
    and "No sessions in current folder" on an initial one, the other scope's or unnamed rows
    under "All" / "Named" after a key.  The listing stands in, the status says why."""
    async with picker_app(root, query="re:(").run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert len(titles(pilot)) == 5 and "5 sessions" in screen.status.render().plain
        assert screen.status.message.startswith("invalid query: re:")
        await pilot.press("tab")
        await settle(pilot)
        assert len(titles(pilot)) == 8 and screen.scope == "all", "the All scope's sessions"
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert titles(pilot) == ["Release 1.0"] and screen.status.message.startswith("invalid query: re:")
        await pilot.press("backspace", "backspace")
        await settle(pilot)
        assert titles(pilot) == ["Release 1.0"] and not screen.status.message


async def test_initial_query_is_applied(root: Path) -> None:
    async with picker_app(root, query="parser", scope="all").run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert titles(pilot) == ["refactor the parser"]
        assert screen_of(pilot).search_input.value == "parser"


# -- empty states -----------------------------------------------------------------------------------


async def test_empty_current_folder_message(tmp_path: Path) -> None:
    root = make_root(tmp_path, [Spec("only", OTHER)])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _joined(visible_text(pilot)) == EMPTY[("project", False)]
        await pilot.press("enter")  # nothing to resume: stays open
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert _joined(visible_text(pilot)) == EMPTY[("project", True)]
        await pilot.press("tab")
        await settle(pilot)
        assert _joined(visible_text(pilot)) == EMPTY[("all", True)]
        await pilot.press("ctrl+n")
        await settle(pilot)
        assert titles(pilot) == ["hello"]


async def test_unreadable_root_is_reported_not_raised(tmp_path: Path) -> None:
    async with picker_app(tmp_path / "missing").run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert titles(pilot) == []
        assert _joined(visible_text(pilot)) == EMPTY[("project", False)]
        assert screen.status.message_is_error and "no such directory" in screen.status.message
        assert screen.is_current


async def test_a_load_failure_stays_on_the_status_line(root: Path, monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("index is on fire")

    monkeypatch.setattr(Catalog, "refresh", broken)
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = screen_of(pilot).status
        assert status.message_is_error and "index is on fire" in status.message
        await pilot.press(*"auth", "escape")  # a query and its clearing leave the load's error alone
        await settle(pilot)
        assert "index is on fire" in status.message
        await pilot.press(*"re:(")  # a query error replaces it and goes with the query
        await settle(pilot)
        assert status.message_is_error and "index is on fire" not in status.message
        await pilot.press("escape")
        await settle(pilot)
        assert not status.message


# -- delete, undo, rename ----------------------------------------------------------------------------


async def test_ctrl_d_confirm_trash_and_undo(root: Path, tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("seance.core.trash")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = session_path(root, Spec("s-named", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down")
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("x")  # swallowed
        assert isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert path.exists() and len(titles(pilot)) == 5
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not path.exists()
        assert "Release 1.0" not in titles(pilot)
        assert "ctrl+z" in screen_of(pilot).status.message
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert path.exists()
        assert "Release 1.0" in titles(pilot)


async def test_undo_puts_the_session_back_with_the_cursor_on_it(root: Path, tmp_path: Path, monkeypatch) -> None:
    """Ctrl+D moved the cursor to the next row; Ctrl+Z brought the row back above it and the
    cursor stayed on the neighbour, one line lower than before: the list was not as it was
    before the delete, and a second Ctrl+D meant for the restored session took the neighbour."""
    pytest.importorskip("seance.core.trash")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.press("down", "down")
        before, cursor = titles(pilot), widget.cursor
        assert cursor_title(pilot) == "Release 1.0"
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert cursor_title(pilot) == "update the README"
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert titles(pilot) == before and widget.cursor == cursor and cursor_title(pilot) == "Release 1.0"


async def test_undo_after_the_wheel_scrolled_away_shows_the_restored_session(tmp_path: Path, monkeypatch) -> None:
    """Ctrl+Z put the cursor on the restored session, but when the wheel had scrolled the list
    since the delete, the view stayed on the rows scrolled to (as for a live change): the
    cursor, and the session just restored, were off screen.  A key that moves the cursor shows it."""
    pytest.importorskip("seance.core.trash")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt {number:02d}",), timedelta(hours=number + 1)) for number in range(60)
    ]
    async with picker_app(make_root(tmp_path, specs)).run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.press("down", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert cursor_title(pilot) == "prompt 02"
        for _ in range(12):
            await pilot._post_mouse_events([events.MouseScrollDown], widget, offset=(5, 3))
        await settle(pilot)
        assert widget.cursor < widget.scroll_offset.y, "the cursor is out of view"
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert cursor_title(pilot) == "prompt 01"
        assert 0 <= widget.cursor - widget.scroll_offset.y < widget.size.height, "the restored session is in view"


async def test_an_undo_under_an_invalid_query_does_not_take_the_cursor_later(
    root: Path, tmp_path: Path, monkeypatch
) -> None:
    """Ctrl+Z while the query does not parse: no rows come for it (the last valid query's
    stay), so the restored session waited to take the cursor from the next rows, whatever
    the user did meanwhile: ↓ to a row, then Esc to clear the query, and the cursor jumped
    from the row chosen to the restored session."""
    pytest.importorskip("seance.core.trash")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press(*"re:(")
        await settle(pilot)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert screen_of(pilot).status.message == "Session restored"
        await pilot.press("down", "down")
        chosen = cursor_title(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert len(titles(pilot)) == 5 and cursor_title(pilot) == chosen == "update the README"


async def test_an_undo_that_cannot_be_done_yet_stays_on_the_undo_stack(root: Path, tmp_path: Path, monkeypatch) -> None:
    """Ctrl+Z when a different file now sits at the deleted session's path: refused (nothing is
    overwritten), but the deletion was already off the stack, so once the path was free the next
    Ctrl+Z restored the delete before it, and this one could never be undone from the picker
    (`seance rm --undo` and a batch keep such a deletion)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        for _ in range(2):
            await pilot.press("ctrl+d")
            await pilot.pause()
            await pilot.press("enter")
            await settle(pilot)
        first, second = (deleted.receipt.session.original for deleted in screen.model.deleted)
        assert not first.exists() and not second.exists()
        second.write_text("another tool's file\n")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert "Undo failed" in screen.status.message and "different file" in screen.status.message
        assert second.read_text() == "another tool's file\n" and not first.exists()
        second.unlink()
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert second.exists() and not first.exists(), "the blocked deletion is the one Ctrl+Z retries"
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert first.exists()


async def test_a_failed_write_says_why_where_it_can_be_read(tmp_path: Path) -> None:
    """A rename, delete or undo failure went to the one-line status bar only, as "Rename failed:
    /the/long/session/path.jsonl: why": the path, one long word, wrapped out of sight with the
    reason after it, leaving "Rename failed:" (seen in tmux).  The whole message is a toast too."""
    root = make_root(tmp_path, [Spec("no-reply", PROJECT, ("a question not answered yet",), replies=False)])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.press(*"a name", "enter")
        await settle(pilot)
        assert "Rename failed" in screen_of(pilot).status.message
        notes = [(note.title, note.message) for note in pilot.app._notifications]
        assert any("has no assistant reply yet" in message for _title, message in notes), notes


async def test_a_session_an_agent_is_writing_asks_before_it_is_deleted_anyway(tmp_path: Path, monkeypatch) -> None:
    """As `seance rm` refuses a session written in the last minute unless --force, the dialog says so
    and only its "anyway" button deletes."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = make_root(tmp_path, [])
    path = write_session(root, Spec("live", PROJECT, ("an agent is working here",)), mtime=False)  # written now
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+d")
        await pilot.pause()
        dialog = pilot.app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert "in use" in str(dialog.query_one("#seance-dialog-title").render())
        detail = str(dialog.query_one("#seance-dialog-detail").render())
        assert re.search(r"written \d+ s ago: an agent may be using it", detail)
        assert "anyway" in str(dialog.query_one("#seance-yes").label)
        await pilot.press("escape")
        await settle(pilot)
        assert path.exists()
        await pilot.press("ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not path.exists() and "ctrl+z" in screen_of(pilot).status.message


async def test_delete_and_rename_dialogs_show_two_lines_of_a_long_first_message(tmp_path: Path) -> None:
    long_prompt = "\n".join(f"line {number} of a very long first message with many words" for number in range(40))
    root = make_root(tmp_path, [Spec("long", PROJECT, (long_prompt,))])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, kind in (("ctrl+d", ConfirmScreen), ("ctrl+r", PromptScreen)):
            await pilot.press(key)
            await pilot.pause()
            dialog = pilot.app.screen
            assert isinstance(dialog, kind)
            detail = dialog.query_one("#seance-dialog-detail")
            assert 1 <= detail.size.height <= 2
            assert str(detail.render()).startswith("line 0 of a very long")
            hint = str(dialog.query_one("#seance-dialog-hint").render())
            assert hint.startswith("Enter ") and hint.endswith(" · Esc cancel")
            await pilot.press("escape")
            await pilot.pause()


async def test_ctrl_z_undoes_typing_when_there_is_no_delete_to_undo(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"auth", "space", *"bug")
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert screen_of(pilot).search_input.value == "auth bu", "the input's own undo ran"
        assert not screen_of(pilot).status.message
        await pilot.press("escape", "ctrl+z")  # clearing the query can be undone too
        assert screen_of(pilot).search_input.value == "auth bu"


async def test_the_open_session_cannot_be_deleted(root: Path) -> None:
    open_path = str(session_path(root, Spec("s-auth", PROJECT)))
    async with picker_app(root, options=PickerOptions(watch=False, open_session=open_path)).run_test(
        size=SIZE
    ) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+d")
        await pilot.pause()
        screen = screen_of(pilot)
        assert screen.status.message == "Cannot delete the currently active session"
        assert Path(open_path).exists()


async def test_ctrl_r_renames_the_session(root: Path) -> None:
    path = session_path(root, Spec("s-docs", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "down")
        assert cursor_title(pilot) == "update the README"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, PromptScreen)
        await pilot.press(*"Docs pass", "enter")
        await settle(pilot)
        assert cursor_title(pilot) == "Docs pass"
        assert screen_of(pilot).session_list.highlighted.summary.name == "Docs pass"
        assert '"name": "Docs pass"' in path.read_text().replace('"name":"', '"name": "')


async def test_rename_cancel_and_blank_name(root: Path) -> None:
    path = session_path(root, Spec("s-auth", PROJECT))
    before = path.read_bytes()
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        rename = pilot.app.screen
        rename.query_one(Input).value = "   "
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen is rename, "a blank name is refused and the dialog stays"
        await pilot.press("escape")
        await pilot.pause()
        assert screen_of(pilot).is_current
    assert path.read_bytes() == before


# -- tree, help, preview, palette ----------------------------------------------------------------------


async def test_ctrl_t_opens_the_tree_and_resumes_at_its_choice(root: Path) -> None:
    from seance.app.screens.session_tree import SessionTreeScreen

    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(pilot).is_current
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
    result = app.return_value
    assert isinstance(result, PickResult) and result.action == "resume"
    assert result.path == session_path(root, Spec("s-auth", PROJECT))
    assert result.session_id == "s-auth"
    session = load_session(result.path)
    assert result.leaf_id == session.leaf_id and not result.reset


async def test_tree_choice_of_the_first_prompt_resumes_from_the_start(root: Path) -> None:
    """pi's /tree: a root user message resumes before the first entry, its text offered back."""
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.press("home", "enter")
        await settle(pilot)
    result = app.return_value
    session = load_session(result.path)
    first = session.tree.by_id[session.tree.roots[0]]
    assert first["message"]["role"] == "user"
    assert (result.leaf_id, result.reset, result.prefill) == (None, True, "fix the auth bug in login")
    assert result.to_json()["reset"] is True


async def test_browse_mode_enter_opens_the_tree(root: Path) -> None:
    from seance.app.screens.session_tree import SessionTreeScreen

    app = picker_app(root, options=PickerOptions(watch=False, enter="tree"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)


@pytest.mark.parametrize(("enter", "expected"), [("resume", "resume the selected"), ("tree", "open the selected")])
async def test_help_lists_the_screens_bindings(root: Path, enter: str, expected: str) -> None:
    async with picker_app(root, options=PickerOptions(watch=False, enter=enter)).run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = dict(screen_of(pilot).help_rows())
        assert rows["Enter"].startswith(expected) and rows["double-click"] == rows["Enter"]
        assert rows["↑ ↓ PgUp PgDn Home End"] == "move the cursor"
        assert "Ctrl+O / F3" in rows and "F1 / ?" in rows and rows["F2"] == "command palette"
        assert rows["Alt+E"].startswith("export")
        assert rows["Alt+S"] == "the files that were skipped, and why"
        assert rows["Space / Ctrl+Space"].startswith("select / deselect the row") and "Alt+A" in rows
        assert set(rows) == {
            *("type", "↑ ↓ PgUp PgDn Home End", "Enter", "Esc", "Ctrl+C", "Tab", "Ctrl+S", "Ctrl+N", "Alt+C"),
            *("F4 / Ctrl+P", "Ctrl+D", "Space / Ctrl+Space", "Alt+A", "Ctrl+Z", "Ctrl+R", "Ctrl+T", "Ctrl+Y"),
            *("Ctrl+F", "Ctrl+O / F3", "Alt+I", "F1 / ?", "Alt+E", "Alt+S", "Alt+P", "Alt+T", "double-click", "F2"),
        }, sorted(rows)
        await pilot.press("f1")
        await pilot.pause()
        text = " ".join(str(cell.render()) for cell in pilot.app.screen.query(".seance-help-row Static"))
        assert expected in text and "Ctrl+T" in text


async def test_f1_and_question_mark_open_help(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("a", "question_mark")
        await pilot.pause()
        assert screen_of(pilot).search_input.value == "a?", "after the first character ? is part of the query"


async def test_preview_toggle_and_narrow_terminal(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        preview = screen.query_one("#seance-preview")
        assert preview.display and preview.document is not None
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert screen.has_class("-no-preview") and not preview.display
        await pilot.press("f3")
        await pilot.pause()
        assert preview.display
    async with picker_app(root).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not screen_of(pilot).query_one("#seance-preview").display


async def test_command_palette_runs_picker_actions(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await pilot.pause()
        await pilot.press(*"cycle sort")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot)
        assert screen_of(pilot).sort == "recent"


async def test_the_palette_offers_every_action_of_the_list_with_its_live_keys(root: Path) -> None:
    """Every action a key runs on the list is in the palette (F2 is "every action"), and each
    command's help names the keys read from the live bindings, not a copy that can drift."""
    from seance.app.commands import PICKER_COMMANDS, PickerCommands

    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        moves = {"cursor(-1)", "cursor(1)", "page(-1)", "page(1)", "first", "last", "quit", "undo", "command_palette"}
        moves |= {"key_or_type(' ', 'toggle_select')", "key_or_type('?', 'help')"}  # typed on a query
        bound = {active.binding.action for active in screen.active_bindings.values() if active.binding.tooltip}
        offered = {action for action, _, _ in PICKER_COMMANDS} | {"select", "open"}
        assert bound - moves <= offered, sorted(bound - moves - offered)
        helps = {title: help_text for title, help_text, _ in PickerCommands(screen)._commands()}
        assert helps["Delete session"].endswith("(Ctrl+D)") and helps["Export session"].endswith("(Alt+E)")
        assert helps["Resume session"].endswith("(Enter)")


# -- mouse ---------------------------------------------------------------------------------------------


async def test_click_selects_double_click_resumes_wheel_scrolls(tmp_path: Path) -> None:
    specs = [
        Spec(f"s{number:02d}", PROJECT, (f"prompt number {number:02d}",), age=_minutes(number)) for number in range(60)
    ]
    app = picker_app(make_root(tmp_path, specs))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.click(widget, offset=(5, 3))
        assert widget.cursor == 3
        assert screen_of(pilot).search_input.has_focus
        await pilot._post_mouse_events([events.MouseScrollDown], widget, offset=(5, 3))
        await pilot.pause()
        assert widget.scroll_offset.y > 0 and widget.cursor == 3, "the wheel scrolls, the cursor stays"
        await pilot._post_mouse_events([events.MouseScrollUp], widget, offset=(5, 3))
        await pilot.pause()
        await pilot.double_click(widget, offset=(5, 4))
        await pilot.pause()
    assert app.return_value is not None and app.return_value.session_id == "s04"


# -- safety -----------------------------------------------------------------------------------------------


async def test_session_text_is_never_markup(root: Path) -> None:
    app = picker_app(root, scope="all")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        line = next(line for line in visible_text(pilot) if "[bold]" in line)
        assert "[bold]x[/] and [@click=app.quit]quit[/" in line  # shown literally (the row may cut the end)
        assert "\x1b" not in line and "\u202e" not in line
        await pilot.press(*"click")
        await settle(pilot)
        widget = screen_of(pilot).session_list
        await pilot.click(widget, offset=(30, 0))
        await pilot.pause()
        assert app.is_running, "clicking a title with [@click=...] ran nothing"


def _joined(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines if line.strip())


def _minutes(number: int):
    from datetime import timedelta

    return timedelta(minutes=10 * (number + 1))


async def test_write_session_helper_roundtrip(tmp_path: Path) -> None:
    """The fixture writer produces files the catalog reads exactly."""
    root = tmp_path / "r"
    write_session(root, Spec("x", PROJECT, ("one", "two"), name="Named"))
    [summary] = Catalog([root]).exact(None)
    assert summary.name == "Named" and summary.message_count == 4 and summary.cwd == PROJECT


async def test_cold_index_paints_the_newest_files_first(root: Path, monkeypatch) -> None:
    """A cold index stops its refresh at once, shows the newest prefixes, then the quick and exact lists."""
    from seance.app.screens import session_list as module

    monkeypatch.setattr(module, "QUICK_FIRST_FILES", 1)
    monkeypatch.setattr(module, "FIRST_SCREEN_FILES", 3)
    first_screens: list[int] = []
    original = Catalog.first_screen

    def spy(self, cwd, count):
        first = original(self, cwd, count)
        first_screens.append(len(first))
        return first

    monkeypatch.setattr(Catalog, "first_screen", spy)
    async with picker_app(root, scope="all").run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = screen_of(pilot).session_list.rows
        assert first_screens == [3]
        assert len(rows) == 8 and all(row.summary.exact for row in rows)
        status = screen_of(pilot).status.render().plain
        assert "8 sessions" in status and "Loading" not in status and "indexing" not in status


async def test_own_app_freezes_the_loaded_list_out_of_the_collector(root: Path) -> None:
    """seance's own app freezes the loaded list and the haystacks of its first search, and
    leaves the collector as it found it on exit (a host's picker: tests/test_host_app.py)."""
    import gc

    before = gc.get_freeze_count()
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        after_load = gc.get_freeze_count()
        await pilot.press(*"fix")
        await settle(pilot)
        assert titles(pilot)[0] == "fix the auth bug in login"
        assert after_load > before
        assert gc.get_freeze_count() > after_load, "the haystacks built by the search too"
    assert gc.get_freeze_count() == before and gc.isenabled()


async def test_a_big_tree_freezes_and_unfreezes_then_the_list_freezes_again(tmp_path: Path) -> None:
    """The tree of a huge session leaves the collector as it found it, and the list, back on
    top, goes out of its reach again after its next search."""
    import gc

    from seance.app.screens.session_tree import GC_FREEZE_ENTRIES, SessionTreeScreen

    big = Spec("big", PROJECT, prompts=tuple(f"step {index}" for index in range(GC_FREEZE_ENTRIES // 2 + 1)))
    root = make_root(tmp_path, [big, Spec("small", PROJECT, prompts=("fix the bug",))])
    before = gc.get_freeze_count()
    async with picker_app(root, options=PickerOptions(watch=False, enter="tree")).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert gc.get_freeze_count() > before
        await pilot.press(*"step")
        await settle(pilot)
        assert cursor_title(pilot).startswith("step 0")
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, SessionTreeScreen)
        assert pilot.app.screen in pilot.app._frozen_for, "the big tree asked to be frozen"
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert not isinstance(pilot.app.screen, SessionTreeScreen)
        assert gc.get_freeze_count() == 0, "the tree gave its objects back to the collector"
        await pilot.press("s")
        await settle(pilot)
        assert gc.get_freeze_count() > 0, "the list froze again after its next search"
    assert gc.get_freeze_count() == 0


async def test_an_empty_name_clears_it_after_a_confirm(root: Path) -> None:
    path = session_path(root, Spec("s-docs", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "down", "ctrl+r")
        await pilot.pause()
        await pilot.press(*"Docs pass", "enter")
        await settle(pilot)
        assert cursor_title(pilot) == "Docs pass"
        for confirm_key, expected in (("escape", "Docs pass"), ("enter", "update the README")):
            await pilot.press("ctrl+r")
            await pilot.pause()
            pilot.app.screen.query_one(Input).value = ""
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(pilot.app.screen, ConfirmScreen), "clearing a name asks first"
            await pilot.press(confirm_key)
            await settle(pilot)
            assert cursor_title(pilot) == expected
        assert screen_of(pilot).status.message == "Session name cleared"
    assert orjson.loads(path.read_bytes().splitlines()[-1]) | {"id": "", "parentId": "", "timestamp": ""} == {
        "type": "session_info",
        "id": "",
        "parentId": "",
        "timestamp": "",
        "name": "",
    }


@pytest.mark.parametrize("size", [(10, 3), (12, 4), (6, 2)])
async def test_the_dialogs_open_in_a_terminal_a_few_columns_wide(root: Path, size: tuple[int, int]) -> None:
    """Ctrl+Y's list of choices got no width in a 10x3 terminal and Rich's wrap raised: the app
    died with a traceback (the sweep).  Every dialog of the list opens and closes there."""
    app = picker_app(root)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for key in ("ctrl+y", "ctrl+r", "ctrl+d", "f1"):
            await pilot.press(key)
            await settle(pilot)
            assert app._exception is None, key
            await pilot.press("escape")
            await settle(pilot)
        assert app._exception is None and screen_of(pilot).is_current


async def test_ctrl_y_copies_the_resume_command_the_id_or_the_path(root: Path) -> None:
    from seance.app.screens.copy import CopyScreen
    from seance.core.resume import resume_command

    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        summary = screen_of(pilot).session_list.highlighted.summary
        for key, expected in (("c", resume_command(summary)), ("i", summary.id), ("p", summary.path)):
            await pilot.press("ctrl+y")
            await pilot.pause()
            assert isinstance(pilot.app.screen, CopyScreen)
            await pilot.press(key)
            await pilot.pause()
            assert pilot.app.clipboard == expected
            assert screen_of(pilot).status.message.startswith("Copied the ")
        assert resume_command(summary).startswith(f"cd {PROJECT} && pi --session ")
        await pilot.press("ctrl+y")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert screen_of(pilot).is_current and pilot.app.clipboard == summary.path


async def test_a_delete_says_what_an_earlier_unfinished_one_left_where(root: Path, tmp_path: Path, monkeypatch) -> None:
    """An earlier delete across filesystems was killed after its folder reached the Trash, and
    the Trash's disk is full now: recovery, run before each delete, raised ("Failed to delete:
    No space left on device") and no session could be deleted from the picker.  The delete
    goes on; a warning names what that earlier one left beside its path."""
    from seance.core import trash as trash_module

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    aside, _journal = unfinished_folder_move(trash_module.trash_dir(), tmp_path / "elsewhere" / "old-session")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trash_module.shutil, "copy2", disk_full)
    path = session_path(root, Spec("s-named", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not path.exists()
        (warning,) = [note for note in pilot.app._notifications if note.title == "Not finished"]
        assert aside.name in warning.message and "No space left on device" in warning.message
    assert (aside / "late.jsonl").exists()


async def test_an_undo_says_what_an_earlier_unfinished_delete_left_where(
    root: Path, tmp_path: Path, monkeypatch
) -> None:
    """Ctrl+Z first finishes a delete an earlier process left half-done; one that cannot be
    finished now (the Trash's disk full) no longer stops the undo, and a warning says what it
    left where (the picker said nothing: the aside folder stayed unsaid)."""
    from seance.core import trash as trash_module

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = session_path(root, Spec("s-named", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "ctrl+d")
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        assert not path.exists()
        aside, _journal = unfinished_folder_move(trash_module.trash_dir(), tmp_path / "elsewhere" / "old-session")

        def disk_full(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(trash_module.shutil, "copy2", disk_full)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert path.exists()
        (warning,) = [note for note in pilot.app._notifications if note.title == "Not finished"]
        assert aside.name in warning.message and "No space left on device" in warning.message
