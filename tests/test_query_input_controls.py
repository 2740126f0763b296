"""The search box draws its text as it is: a control in it reached the terminal and was obeyed.

`seance pick --query "$(…)"` (a query from a script, a log line, pi's `/seance` argument) with
`\x1b[31m` turned the rest of the box red, a newline lost the line's end.  The box's value is now
one clean line however it comes in (`--query`, a paste, a program's assignment), and the
picker searches for exactly what the box shows.
"""

from __future__ import annotations

from pathlib import Path

from textual import events
from ui_harness import SIZE, picker_app, settle
from ui_sessions import make_root

from seance.app.screens.session_list import SessionPickerScreen
from seance.app.widgets.ordered_input import OrderedInput, one_line


def _segments_text(box: OrderedInput) -> str:
    """Every character the box draws (its lines' segments), controls included."""
    return "".join(segment.text for y in range(box.size.height) for segment in box.render_line(y))


async def test_a_query_with_escapes_and_newlines_is_one_clean_line(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path), query="\x1b[31mauth\nbug\x07")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionPickerScreen)
        box = screen.query_one("#seance-search", OrderedInput)
        assert box.value == "auth bug " == screen.model.query  # what is searched is what is shown
        assert "\x1b" not in _segments_text(box) and "\n" not in _segments_text(box)
        assert "2 of 5 sessions" in str(screen.query_one("#seance-status").render())  # s-auth and its fork


async def test_a_paste_goes_into_the_box_once(tmp_path: Path) -> None:
    """SearchInput's paste handler called Input's, and Textual then called Input's again
    (each class's handler runs in turn unless one prevents the default): "zebrazebra"."""
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.post_message(events.Paste("zebra"))  # as the driver sends it
        await settle(pilot)
        assert app.screen.query_one("#seance-search", OrderedInput).value == "zebra"


async def test_a_pasted_escape_never_reaches_the_box(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#seance-search", OrderedInput)
        app.post_message(events.Paste("\x1b[31mzebra\u202e"))  # as the driver sends it
        await settle(pilot)
        assert box.value == "zebra "


def test_one_line_keeps_clean_text_as_typed() -> None:
    assert one_line("two  spaces ") == "two  spaces "  # a space being typed is kept
    assert one_line("a\tb\r\nc") == "a b  c"
    assert one_line("\x1b]8;;http://x\x07link\x1b]8;;\x07") == "link"  # an OSC hyperlink dropped whole


async def test_a_paste_in_the_middle_leaves_the_cursor_after_what_went_in(tmp_path: Path) -> None:
    app = picker_app(make_root(tmp_path), query="abcd")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.screen.query_one("#seance-search", OrderedInput)
        box.cursor_position = 2
        app.post_message(events.Paste("\x1b[31mX\nsecond line"))
        await settle(pilot)
        assert (box.value, box.cursor_position) == ("abXcd", 3)
