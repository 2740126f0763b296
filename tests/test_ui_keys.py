"""Pi-parity keys and sizes in the session list, through Pilot (issue 13).

Ctrl+P shows pi's `~/…` paths; the question pi asks before resuming a session whose cwd is
gone; the command palette says what Enter does and lists no Textual system commands; the
footer keeps F1 at 80 columns; Ctrl+O below 100 columns acts for that width only; help fits,
scrolls and wraps in its column at 60×20.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.containers import VerticalScroll
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from ui_harness import picker_app, screen_of, settle
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.app.screens.confirm import ConfirmScreen
from seance.app.screens.help import HelpScreen
from seance.app.screens.session_list import PickerOptions
from seance.app.widgets.session_list import short_path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


# -- Ctrl+P: paths as pi shows them -------------------------------------------------------------


def test_short_path_keeps_home_bucket_and_file(monkeypatch) -> None:
    monkeypatch.setenv("HOME", "/home/me")
    path = "/home/me/.pi/agent/sessions/--work-demo-project--/2026-05-11T05-28-32-443Z_019e1582-29bb.jsonl"
    assert short_path(path, 200) == path.replace("/home/me", "~")
    assert short_path(path, 80) == "~/…/sessions/--work-demo-project--/2026-05-11T05-28-32-443Z_019e1582-29bb.jsonl"
    assert short_path(path, 70) == "~/…/--work-demo-project--/2026-05-11T05-28-32-443Z_019e1582-29bb.jsonl"
    assert short_path(path, 20).startswith("…") and len(short_path(path, 20)) == 20
    assert short_path("/home/meat/x", 80) == "/home/meat/x"  # only at a path boundary


async def test_ctrl_p_shows_the_home_relative_path_with_bucket_like_pi(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    root = make_root(tmp_path)
    async with picker_app(root).run_test(size=(160, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        widget = screen_of(pilot).session_list
        line = widget.render_line(0).text
        assert "~/sessions/--work-demo-project--/s-auth.jsonl" in line, line


# -- pi's question before resuming a session whose cwd is gone ---------------------------------


async def test_enter_on_a_session_whose_cwd_is_gone_asks_like_pi(root: Path) -> None:
    app = picker_app(root, confirm_missing_cwd=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        text = " ".join(str(label.render()) for label in dialog.query("Label"))
        assert "Session cwd not found" in text and "cwd from session file does not exist" in text
        assert PROJECT in text and "continue in current cwd" in text
        await pilot.press("escape")  # Cancel: back in the list, nothing chosen
        await pilot.pause()
        assert screen_of(pilot) is not None and app.return_value is None
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("enter")  # Continue
        await pilot.pause()
    result = app.return_value
    assert result.path == session_path(root, Spec("s-auth", PROJECT)) and result.to_json()["cwdMissing"] is True


async def test_a_session_whose_cwd_exists_resumes_without_a_question(tmp_path: Path) -> None:
    here = str(tmp_path)
    root = make_root(tmp_path, [Spec("s-here", here)])
    app = picker_app(root, cwd=here, confirm_missing_cwd=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value.to_json()["cwdMissing"] is False


async def test_the_tree_asks_too_before_resuming_at_an_entry(root: Path) -> None:
    app = picker_app(root, confirm_missing_cwd=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("enter")
        await settle(pilot)
    assert app.return_value.entry_id is not None and app.return_value.cwd_missing


async def test_fork_never_asks(root: Path) -> None:
    app = picker_app(root, confirm_missing_cwd=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
    assert app.return_value.action == "fork"


# -- the command palette ------------------------------------------------------------------------


async def _palette_titles(pilot) -> list[str]:
    await pilot.press("f2")
    await settle(pilot)
    palette = pilot.app.screen
    assert isinstance(palette, CommandPalette)
    options = palette.query_one("CommandList").options
    return [str(option.prompt).split("\n")[0] for option in options]


@pytest.mark.parametrize(("enter", "first"), [("tree", "Open session"), ("resume", "Resume session")])
async def test_the_palette_says_what_enter_does_and_has_no_textual_commands(root: Path, enter: str, first: str) -> None:
    async with picker_app(root, options=PickerOptions(watch=False, enter=enter)).run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        titles = await _palette_titles(pilot)
        assert first in titles and ({"Open session", "Resume session"} - {first}).isdisjoint(titles)
        assert not {"Theme", "Screenshot", "Maximize", "Keys", "Minimize"} & set(titles), titles
        assert "Quit" in titles and "Toggle scope" in titles


# -- sizes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("enter", ["tree", "resume"])
async def test_the_footer_keeps_f1_visible_at_80_columns(root: Path, enter: str) -> None:
    async with picker_app(root, options=PickerOptions(watch=False, enter=enter)).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        keys = {key.key: key for key in pilot.app.screen.query(FooterKey) if key.display}
        assert "f1" in keys and keys["f1"].region.right <= 80 - 12  # left of the F2 palette key
        assert "enter" in keys and "ctrl+t" in keys
        assert "ctrl+r" not in keys, "the least important keys give way"
        await pilot.resize_terminal(160, 24)
        await settle(pilot)
        shown = {key.key for key in pilot.app.screen.query(FooterKey) if key.display}
        assert {"ctrl+r", "ctrl+n", "ctrl+o", "f1"} <= shown


async def test_ctrl_o_below_100_columns_is_for_that_width_only(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        preview = screen.query_one("#seance-preview")
        assert not preview.display and screen.preview_wanted
        await pilot.press("ctrl+o")  # show it here, at 80 columns
        await settle(pilot)
        assert preview.display and screen.preview_wanted
        assert "shown at 80 columns only" in screen.status.message
        await pilot.press("ctrl+o")  # and hide it again: the setting never flips
        await settle(pilot)
        assert not preview.display and screen.preview_wanted
        await pilot.resize_terminal(220, 60)
        await settle(pilot)
        assert preview.display, "wider, the setting (shown) decides again"
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert not preview.display
        await pilot.resize_terminal(220, 60)
        await pilot.press("ctrl+o")  # from 100 columns up Ctrl+O is the setting itself
        await settle(pilot)
        assert not preview.display and not screen.preview_wanted


async def test_help_at_60x20_shows_every_row_scrolls_and_wraps_in_its_column(root: Path) -> None:
    async with picker_app(root).run_test(size=(60, 20)) as pilot:
        await settle(pilot)
        expected = screen_of(pilot).help_rows()
        await pilot.press("f1")
        await pilot.pause()
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        body = help_screen.query_one("#seance-help-body", VerticalScroll)
        dialog = help_screen.query_one("#seance-dialog")
        assert dialog.region.bottom <= 20 and body.region.bottom < dialog.region.bottom
        rows = list(help_screen.query(".seance-help-row"))
        assert len(rows) == len(expected) and body.max_scroll_y > 0
        texts = help_screen.query(".seance-help-what")
        keys = help_screen.query(".seance-help-key")
        column = texts.first().region.x
        assert all(cell.region.x == column for cell in texts), "every description starts in its own column"
        wrapped = [cell for cell in texts if cell.region.height > 1]
        assert wrapped and all(cell.region.x > keys.first().region.x for cell in wrapped)
        assert all(cell.region.right <= body.region.right - 1 for cell in texts), "the scrollbar has its own column"
        await pilot.press("end")
        await pilot.pause()
        last = rows[-1]
        assert body.scroll_y == body.max_scroll_y
        assert body.region.contains_region(last.region), "the last row can be scrolled into view"
        assert str(last.query_one(".seance-help-what", Static).render()) == expected[-1][1]


async def test_help_at_40_columns_keeps_the_help_texts_readable(root: Path) -> None:
    """The keys column gives way at a narrow terminal: its widest row ("↑ ↓ PgUp PgDn Home End")
    took 24 of a 40-column terminal's ~29 and left each help text 4 cells, a letter or
    two a line ("resum" / "e the" / "selec")."""
    async with picker_app(root).run_test(size=(40, 12)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        body = help_screen.query_one("#seance-help-body", VerticalScroll)
        texts = list(help_screen.query(".seance-help-what"))
        keys = list(help_screen.query(".seance-help-key"))
        assert all(cell.region.width >= body.content_region.width // 2 - 1 for cell in texts)
        assert all(key.region.right <= text.region.x for key, text in zip(keys, texts, strict=True))
        movement = next(key for key in keys if "PgUp" in str(key.render()))
        assert movement.region.height > 1, "a long key list wraps in its own column"


async def test_at_80_columns_the_status_line_still_says_why_a_query_is_invalid(root: Path) -> None:
    """A query ranking the rows makes the status line ~75 cells before its message: at 80
    columns "invalid query: …" (and "Cannot delete the currently active session") was cut
    off the line's end, so nothing said why the rows did not change.  The parts needed least
    (Name, Sort) give way first; the counts and the message stay."""
    async with picker_app(root).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        status = screen.status
        assert "Name: All" in status.render().plain, "everything fits without a message"
        await pilot.press(*"auth re:(")
        await settle(pilot)
        line = status.render()
        assert line.cell_length <= status.size.width
        assert "invalid query: re: missing )" in line.plain and "2 of 5 sessions" in line.plain
        await pilot.resize_terminal(200, 24)
        await settle(pilot)
        assert "Name: All" in status.render().plain, "a wider terminal has room for every part again"
        await pilot.resize_terminal(80, 24)
        status.show_message(f"Copied the path: /home/me/.pi/agent/sessions/--work--/{'0' * 40}.jsonl")
        await settle(pilot)
        line = status.render()
        assert line.cell_length <= status.size.width and "◉ Current Folder" in line.plain, "a notice yields the scope"


async def test_at_70_columns_the_status_line_still_says_only_named_sessions_are_listed(root: Path) -> None:
    """Ctrl+N and a query at 70 columns: "Name: Named" was the first part to give way, and
    nothing else on screen said the unnamed sessions were hidden ("1 session")."""
    async with picker_app(root).run_test(size=(70, 24)) as pilot:
        await settle(pilot)
        status = screen_of(pilot).status
        await pilot.press("ctrl+n", *"release")
        await settle(pilot)
        line = status.render()
        assert line.cell_length <= status.size.width and "Name: Named" in line.plain, line.plain
        assert "1 session" in line.plain and "Current Folder" in line.plain


@pytest.mark.parametrize("size", [(40, 8), (60, 9), (80, 12)])
async def test_on_a_short_terminal_a_dialog_still_shows_its_title_text_and_keys(root: Path, size) -> None:
    """Ctrl+D at 8-12 rows: the box's padding, margins and buttons took the room of its hint
    ("Enter confirm · Esc cancel"), and Ctrl+R's prompt scrolled its "Rename Session" title
    out of sight.  A short terminal's box drops them (the keys still answer)."""
    async with picker_app(root).run_test(size=size) as pilot:
        await settle(pilot)
        for key, title, hint in (("ctrl+d", "Delete session?", "Enter confirm"), ("ctrl+r", "Rename Session", "Esc")):
            await pilot.press(key)
            await settle(pilot)
            dialog = pilot.app.screen.query_one("#seance-dialog")
            shown = dialog.region.intersection(pilot.app.screen.region)
            for part, text in (("#seance-dialog-title", title), ("#seance-dialog-hint", hint)):
                label = pilot.app.screen.query_one(part, Static)
                assert text in str(label.render()), (key, part)
                assert label.region.height and shown.contains_region(label.region), (key, size, part)
            await pilot.press("escape")
            await settle(pilot)


@pytest.mark.parametrize("size", [(80, 16), (80, 17), (80, 18)])
async def test_a_dialog_taller_than_the_terminal_leaves_it_keeps_its_hint(root: Path, size) -> None:
    """Ctrl+Y at 16-18 rows is not a short terminal (<16), yet the copy dialog's choices
    (up to 6 rows of a wrapped resume command and path) with the full box's padding and
    margins took the room of "c / i / p or Enter copy · Esc cancel": nothing said how to
    leave it.  A box the terminal cuts drops them too."""
    async with picker_app(root).run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+y")
        await settle(pilot)
        screen = pilot.app.screen
        dialog = screen.query_one("#seance-dialog")
        hint = screen.query_one("#seance-dialog-hint", Static)
        assert "Esc cancel" in str(hint.render())
        assert dialog.scrollable_content_region.contains_region(hint.region), (size, hint.region)
        assert screen.query_one("#seance-dialog-title", Static).region.height == 1
