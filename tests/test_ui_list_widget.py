"""The virtual session list on its own: 100,000 rows, identity-kept cursor, two-line rows."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta

from textual.app import App, ComposeResult
from textual.content import Content
from textual.strip import Strip
from ui_sessions import NOW, clock

from seance.app.widgets.session_list import SessionList, SessionRow
from seance.app.widgets.status_bar import StatusBar
from seance.core.model import SessionSummary

NOW_MS = NOW.timestamp() * 1000


def summary(number: int) -> SessionSummary:
    return SessionSummary(
        path=f"/sessions/{number:06d}.jsonl",
        id=f"id{number}",
        cwd="/p",
        name=None,
        parent_session=None,
        created=None,
        modified="",
        modified_ms=NOW_MS - number * 60_000,
        message_count=number % 50,
        first_message=f"session number {number}",
        exact=True,
    )


class ListApp(App[None]):
    def compose(self) -> ComposeResult:
        yield SessionList(clock=clock)


class FakeHit:
    """Stands in for a search Hit: a full-text tier with a snippet."""

    tier = "full-text"

    def __init__(self, text: str) -> None:
        self.text = text

    def title_spans(self) -> list[tuple[int, int]]:
        return [(0, 7)]

    def snippet(self):
        class Snippet:
            text = self.text
            spans = ((0, 3),)

        return Snippet()


async def test_hundred_thousand_rows_render_and_navigate() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        widget.set_rows([SessionRow(summary(number)) for number in range(100_000)], top=True)
        await pilot.pause()
        assert widget.virtual_size.height == 100_000
        assert widget.render_line(0).text.startswith("› session number 0")
        widget.set_cursor(99_999)
        await pilot.pause()
        assert widget.highlighted.summary.id == "id99999"
        assert widget.render_line(widget.size.height - 1).text.startswith("› session number 99999")
        widget.page(-1)
        assert widget.cursor == 99_999 - widget.size.height


async def test_cursor_follows_identity_across_replacements() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        rows = [SessionRow(summary(number)) for number in range(100)]
        widget.set_rows(rows, top=True)
        await pilot.pause()
        widget.set_cursor(50)
        await pilot.pause()
        screen_y = widget.cursor - widget.scroll_offset.y
        widget.set_rows([SessionRow(summary(number)) for number in range(-10, 100)])
        await pilot.pause()
        assert widget.highlighted.summary.id == "id50" and widget.cursor == 60
        assert widget.cursor - widget.scroll_offset.y == screen_y
        widget.set_rows([row for row in rows if row.summary.id != "id50"])  # the selected one vanished
        await pilot.pause()
        assert widget.highlighted is not None
        widget.set_rows([], top=True)
        assert widget.highlighted is None


async def test_snippet_rows_take_two_lines() -> None:
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        rows = [
            SessionRow(summary(0)),
            SessionRow(summary(1), hit=FakeHit("zebra \x1b[31m crossing")),
            SessionRow(summary(2)),
        ]
        widget.set_rows(rows, top=True)
        await pilot.pause()
        lines = [widget.render_line(y).text for y in range(4)]
        assert lines[1].startswith("  session number 1")
        assert lines[2].strip().startswith("zebra") and "\x1b" not in lines[2]
        assert lines[3].startswith("  session number 2")
        widget.move_cursor(2)
        assert widget.highlighted.summary.id == "id2"


async def test_a_new_row_count_updates_the_scrollbar_without_a_layout_unless_it_comes_or_goes() -> None:
    """Each keystroke's rows have a new count: while the scrollbar stays, it is updated in place
    (no layout of the whole screen); when it comes or goes, the layout makes room for it."""
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        layouts: list[int] = []
        screen_layout = app.screen._refresh_layout

        def counted(*args, **kwargs):
            if not kwargs.get("scroll"):  # a layout of the screen, not the scroll's reflow of what shows
                layouts.append(len(widget.rows))
            return screen_layout(*args, **kwargs)

        app.screen._refresh_layout = counted  # type: ignore[method-assign]
        for count, scrollbar in ((500, True), (400, True), (80, True), (300, True), (5, False), (200, True)):
            layouts.clear()
            widget.set_rows([SessionRow(summary(number)) for number in range(count)], top=True)
            await pilot.pause()
            await pilot.pause()
            assert widget.virtual_size.height == count
            assert widget.show_vertical_scrollbar == scrollbar
            assert widget.vertical_scrollbar.window_virtual_size == count
            assert widget.max_scroll_y == max(count - widget.scrollable_content_region.height, 0)
            assert (not layouts) == (count in (80, 300)), (count, layouts)  # kept the scrollbar: no layout
            widget.scroll_to(y=widget.max_scroll_y, animate=False, immediate=True)
            await pilot.pause()
            assert widget.scroll_offset.y == widget.max_scroll_y


def test_hit_rows_make_their_path_table_later_and_find_a_row_without_it() -> None:
    """A keystroke's hits leave the path -> index table for later (the search thread makes it
    after posting them): a path among the first rows is found without it, any other makes it."""
    from seance.app.rows import RowSet, SessionRow

    sessions = [summary(number) for number in range(2000)]
    rows = RowSet(sessions, SessionRow, lambda item: item.path, index_later=True)
    assert rows._index_of is None
    assert rows.position(sessions[7].path) == 7 and rows._index_of is None  # looked at the first rows
    assert rows.position("/nowhere") is None and rows._index_of is not None  # made for a row further down
    assert rows.position(sessions[1999].path) == 1999 and rows.index_of[sessions[3].path] == 3
    short = RowSet(sessions[:10], SessionRow, lambda item: item.path, index_later=True)
    assert short.position("/nowhere") is None and short._index_of is None  # all looked at: no table needed


async def test_rows_may_keep_a_taller_scrollable_height_whose_extra_lines_are_blank() -> None:
    """A search's first page keeps the scrollbar of the list before it (`lines_at_least`)."""
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        widget.set_rows([SessionRow(summary(number)) for number in range(300)], top=True)
        await pilot.pause()
        widget.set_rows([SessionRow(summary(number)) for number in range(30)], top=True, lines_at_least=300)
        await pilot.pause()
        assert widget.virtual_size.height == 300 and len(widget.rows) == 30
        widget.scroll_to(y=widget.max_scroll_y, animate=False, immediate=True)
        await pilot.pause()
        lines = [widget.render_line(y).text for y in range(widget.scrollable_content_region.height)]
        assert all(not line.strip() for line in lines)  # past the rows: blank, no error
        widget.move_cursor(1000)
        assert widget.cursor == 29


class SpanHit(FakeHit):
    """A full-text hit whose title spans and snippet the test chooses."""

    def __init__(self, text: str, spans: list[tuple[int, int]]) -> None:
        super().__init__(text)
        self.spans = spans

    def title_spans(self) -> list[tuple[int, int]]:
        return self.spans


async def test_new_rows_that_show_a_session_alike_reuse_its_lines_and_any_difference_redraws() -> None:
    """A keystroke's new rows are new objects: a line is kept by what it shows (the session,
    its spans or snippet, cursor, selection, age), so rows drawn alike are not drawn again,
    and anything that would look different is."""
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        sessions = [summary(number) for number in range(30)]

        def rows(spans: list[tuple[int, int]], text: str = "found it here") -> list[SessionRow]:
            return [SessionRow(item, hit=SpanHit(text, spans)) for item in sessions]

        widget.set_rows(rows([(0, 7)]), top=True)
        await pilot.pause()
        first = [widget.render_line(y) for y in range(6)]
        widget.set_rows(rows([(0, 7)]), top=True)  # new row objects, drawn alike
        await pilot.pause()
        assert all(widget.render_line(y) is strip for y, strip in enumerate(first))
        widget.set_rows(rows([(0, 8)]), top=True)  # a longer match in every title
        await pilot.pause()
        again = [widget.render_line(y) for y in range(6)]
        assert all(again[y] is not first[y] for y in (0, 2, 4))  # the titles
        assert all(again[y] is first[y] for y in (1, 3, 5))  # the snippets did not change
        widget.set_rows(rows([(0, 8)], text="found elsewhere"), top=True)
        await pilot.pause()
        assert widget.render_line(1) is not again[1]
        assert "found elsewhere" in widget.render_line(1).text
        widget.set_selected(frozenset({sessions[0].path}))
        await pilot.pause()
        assert "●" in widget.render_line(0).text and widget.render_line(0) is not again[0]
        renamed = dataclasses.replace(sessions[1], name="renamed one")
        sessions[1] = renamed  # a changed session is a new summary: never another's line
        widget.set_rows(rows([(0, 8)]), top=True)
        await pilot.pause()
        assert "renamed one" in widget.render_line(2).text


async def test_a_kept_line_shows_the_age_as_of_the_latest_rows() -> None:
    moments = [NOW]

    class AgingApp(App[None]):
        def compose(self) -> ComposeResult:
            yield SessionList(clock=lambda: moments[-1])

    app = AgingApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        sessions = [summary(number) for number in range(3)]
        widget.set_rows([SessionRow(item) for item in sessions], top=True)
        await pilot.pause()
        assert widget.render_line(0).text.rstrip().endswith("now")
        moments.append(NOW + timedelta(hours=2))
        widget.set_rows([SessionRow(item) for item in sessions], top=True)
        await pilot.pause()
        assert widget.render_line(0).text.rstrip().endswith("2h")


class CountingList(SessionList):
    """Keeps the text of each line as it was last drawn for a frame."""

    def __init__(self, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.drawn: dict[int, str] = {}

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        self.drawn[y] = strip.text
        return strip


class CountingStatus(StatusBar):
    """Counts the times it was drawn."""

    frames = 0

    def render(self) -> Content:
        self.frames += 1
        return super().render()


class ListAndStatusApp(App[None]):
    def compose(self) -> ComposeResult:
        yield CountingList(clock=clock)
        yield CountingStatus()


async def test_new_rows_and_the_status_set_with_them_are_painted_at_once_not_on_the_next_frame_tick() -> None:
    """Rows set just after a frame (a search's answer after the key's echo) are drawn behind
    the handler that set them, with the status line it changed, in one frame: before, they
    waited for Textual's 60 fps timer's next tick (up to 16 ms with nothing to do)."""
    app = ListAndStatusApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget, status = app.query_one(CountingList), app.query_one(CountingStatus)
        widget.set_rows([SessionRow(summary(number)) for number in range(100)], top=True)
        await pilot.pause()
        widget.set_rows([SessionRow(summary(number)) for number in range(60)], top=True)  # (its scrollbar came)
        await pilot.pause()
        judged = 0
        for trial in range(5):
            status.message = f"trial {trial}"  # a frame painted by the timer: its next tick is ~16 ms away
            before = status.frames
            for _ in range(2000):
                await asyncio.sleep(0.001)
                if status.frames > before:
                    break
            status_frames = status.frames
            rows = [SessionRow(summary(number)) for number in range(trial + 1, trial + 60)]

            def search_done(rows: list[SessionRow] = rows, count: int = len(rows) + trial) -> None:  # as the picker's
                widget.set_rows(rows, top=True)
                status.shown = count  # (the rows, then the count: a new one each time)

            app.screen.call_later(search_done)
            started = time.perf_counter()
            for _ in range(20):  # a few turns of the event loop, no waiting
                await asyncio.sleep(0)
            if time.perf_counter() - started > 0.012:
                continue  # (a stalled machine: the tick may have come anyway, the trial says nothing)
            assert widget.drawn[0].startswith(f"› session number {trial + 1} "), trial
            assert status.frames == status_frames + 1, trial
            judged += 1
        assert judged


async def test_a_new_row_count_redraws_the_scrollbar_only_when_its_thumb_moves() -> None:
    """Thousands of rows draw a one-cell thumb at the top whatever their count: a keystroke's
    new count leaves the bar's lines as they were (drawing them cost 1-1.5 ms a key); a count
    that moves or grows the thumb draws it again, as it now is."""
    app = ListApp()
    async with app.run_test(size=(100, 20)) as pilot:
        widget = app.query_one(SessionList)
        for _ in range(2):  # (the scrollbar comes: a layout, the next rows' width is the narrower one)
            widget.set_rows([SessionRow(summary(number)) for number in range(6000)], top=True)
            await pilot.pause()
        bar = widget.vertical_scrollbar
        drawn: list[str] = []
        render = bar.render

        def counted():  # type: ignore[no-untyped-def]
            drawn.append("bar")
            return render()

        bar.render = counted  # type: ignore[method-assign]
        for count, redrawn in ((5000, False), (3000, False), (90, True), (80, True), (4000, True), (4500, False)):
            drawn.clear()
            widget.set_rows([SessionRow(summary(number)) for number in range(count)], top=True)
            await pilot.pause()
            await pilot.pause()
            assert bool(drawn) == redrawn, count
            assert bar.window_virtual_size == count
            assert widget.max_scroll_y == count - widget.scrollable_content_region.height
            shown = [list(strip) for strip in bar.render_lines(bar.size.region)]  # (its kept lines)
            bar.refresh()
            assert shown == [list(strip) for strip in bar.render_lines(bar.size.region)], count  # drawn afresh
