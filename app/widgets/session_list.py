"""A virtual session list: Line API over any number of rows, drawing only what is visible.

`SessionList` holds a sequence of `SessionRow`s (a summary plus how to show it: fork prefix,
match spans, full-text snippet) and renders each visible line on demand, so 100,000 rows cost
no more than 40.  The cursor is tracked by *identity* (the session path): when rows are
replaced — a live update, an exact refresh, a new sort — the selected session keeps the cursor
and stays where it was on screen, so rows arriving above do not move what the user is reading.

Everything shown comes from session files and is treated as data: it goes through
`display_text` and is drawn as plain text in segments (app/widgets/list_line.py), never through markup.
"""

from __future__ import annotations

import bisect
import textwrap
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from math import ceil
from typing import ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from textual import events
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip
from textual.widget import Widget

from seance.app.paths import stylesheet
from seance.core.listing import children_label
from seance.core.model import SessionSummary
from seance.core.text import blank_controls, display_text, home_short, relative_age

from ..rows import RowSet, SessionRow
from .list_line import CONTENT_DROPS, LineSpan, LineStyles, assembled, cells, segments, truncated

Clock = Callable[[], datetime]
PIN_MARK = "★ "  # before the title of a pinned session
PATH_TITLE_ROOM = 28  # with file paths shown: the cells left for the cursor, the title (~16), count and age


def short_path(path: str, width: int) -> str:
    """A path as pi shows it (`~` for the home directory), fitted to `width` cells: the middle
    folders give way to `…` first (`~/…/sessions/--project--/file.jsonl`), so the root, the
    bucket and the file name stay readable; only a file name longer than `width` is cut."""
    text = display_text(home_short(path))
    if len(text) <= width:
        return text
    head, *middle, tail = text.split("/") if "/" in text else ("", text)
    kept: list[str] = [tail]
    budget = width - len(head) - len("/…/") - len(tail)
    for part in reversed(middle):  # keep as many trailing folders as fit
        if len(part) + 1 > budget:
            break
        kept.insert(0, part)
        budget -= len(part) + 1
    fitted = f"{head}/…/{'/'.join(kept)}"
    if len(fitted) <= width:
        return fitted
    return "…" + text[len(text) - width + 1 :]


def scroll_to_match(title: str, spans: Sequence[tuple[int, int]], room: int) -> tuple[str, list[tuple[int, int]]]:
    """Cut the start of `title` ("…" instead) when its first match lies beyond `room` cells.

    A search hit must show why it matched: a long first message whose matching words come
    late would otherwise be truncated before them.  Returns the text to draw and its spans.
    """
    if not spans or cell_len(title[: spans[0][1]]) < room:
        return title, list(spans)
    first_start, first_end = spans[0]
    lead = max(room // 3, 1)  # some words before the match, for context
    start = first_start
    while start > 0 and cell_len(title[start - 1 : first_start]) <= lead:
        start -= 1
    while start < first_start and cell_len(title[start:first_end]) >= room - 1:
        start += 1
    shift = 1 - start  # "…" takes the place of title[:start]
    shifted = [(max(a + shift, 1), b + shift) for a, b in spans if b > start]
    return "…" + title[start:], shifted


def line_key(
    row: SessionRow, subline: int, drawn: tuple, is_cursor: bool, width: int, inner: int, selected: bool, age: str
) -> tuple:
    """What one line of `row` is drawn from (the session's summary by its id: the cache keeps the
    summary with the line and checks it).  `drawn`: the title's match spans (line 0) or the
    snippet's text and spans (line 1).  Rows of successive keystrokes that show a session
    alike share the line: redrawing 40 rows costs a frame 5-30 ms at 160 columns."""
    return (id(row.summary), subline, drawn, row.prefix, row.mark, row.children, is_cursor, width, inner, selected, age)


def paint_now(screen: Screen, changed: Widget | None = None) -> bool:
    """Paint `screen`'s changed widgets at once, as its update timer's next tick would.

    A refreshed widget reaches the screen through two message hops (its own idle handler posts
    an `Update`, the screen's marks it dirty and resumes the 60 fps timer, which paints on
    its grid); here the widgets waiting to be repainted or scrolled are handed over directly
    and the screen's own update runs (`Screen._on_timer_update`, which also does a pending
    scroll reflow).  Textual's private state, read with care: anything not as expected
    (another version), or a widget waiting for a layout or new styles, leaves the frame to
    the timer.  `changed`: a widget known to need the frame (its own idle handler may have
    passed its `Update` on already, still in the screen's queue).  Returns whether it painted."""
    update = getattr(screen, "_on_timer_update", None)
    dirty = getattr(screen, "_dirty_widgets", None)
    if update is None or not isinstance(dirty, set) or not (screen.is_current and screen.is_attached):
        return False
    repaint: list[Widget] = []
    scroll: list[Widget] = []
    virtual = getattr(Widget, "_get_virtual_dom", None)  # a widget's scrollbars (not DOM children)
    widgets = list(screen.walk_children(Widget))
    if virtual is not None:
        widgets += [bar for widget in widgets for bar in virtual(widget)]
    for widget in widgets:
        if getattr(widget, "_layout_required", True) or getattr(widget, "_refresh_styles_required", True):
            return False
        if getattr(widget, "_repaint_required", False) and widget.display:
            repaint.append(widget)
        if getattr(widget, "_scroll_required", False):
            scroll.append(widget)
    if not repaint and not scroll and not dirty:  # (widgets whose `Update` the screen had already)
        return False
    if changed is not None and changed.display:
        repaint.append(changed)
    for widget in repaint:
        widget._repaint_required = False
        dirty.add(widget)
    for widget in scroll:
        widget._scroll_required = False
    if scroll:
        screen._scroll_required = True
    update()
    return True


def thumb_cells(bar: ScrollBar, rows: int) -> tuple[int, int] | None:
    """Where a vertical scrollbar's thumb is drawn over `rows` lines (its first and last
    eighth of a cell, as `ScrollBarRender.render_bar` works them out), or None for no thumb."""
    size, position, eighths = bar.size.height, bar.position, len(ScrollBarRender.VERTICAL_BARS)
    window = bar.window_size if bar.window_size < rows else 0
    if not (window and size and rows and size != rows):
        return None
    thumb = max(1, window / (rows / size))
    start = int((size - thumb) * (position / (rows - window)) * eighths)
    return start, start + ceil(thumb * eighths)


def utc_now() -> datetime:
    return datetime.now(UTC)


class SessionList(ScrollView, can_focus=False):
    """The scrolling list of sessions: cursor, click, double-click, wheel.

    It is not focusable: the search input keeps the focus and the screen forwards the
    navigation keys, so typing always goes to the query.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "session-list--cursor",
        "session-list--pointer",
        "session-list--prefix",
        "session-list--named",
        "session-list--match",
        "session-list--meta",
        "session-list--pin",
        "session-list--tags",
        "session-list--snippet",
        "session-list--empty",
        "session-list--selected",
    }

    DEFAULT_CSS = stylesheet("session_list.tcss")

    class RowMessage(Message):
        """Something happened to a row of the list (as Textual's `OptionList.OptionMessage`)."""

        def __init__(self, session_list: SessionList, row: SessionRow | None) -> None:
            super().__init__()
            self.session_list = session_list
            self.row = row

        @property
        def control(self) -> SessionList:
            return self.session_list

    class Highlighted(RowMessage):
        """The cursor moved to another session (or to none)."""

    class Selected(RowMessage):
        """A row was double-clicked: the user wants this session."""

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._clock = clock
        self._rows: RowSet = RowSet.of([])  # made as they are drawn (`RowSet`)
        self._line_starts: list[int] = []  # first line of each row; empty when every row is one line
        self._line_count = 0
        self._cursor = 0
        self.touched = False  # the user moved the cursor since the rows were last reset to the top
        self._show_cwd = False
        self._show_path = False
        self._empty_text = ""
        self._now = clock()
        self._cache: LRUCache[tuple, tuple[SessionSummary, Strip]] = LRUCache(1024)  # `line_key` -> line
        self._selected: frozenset[str] = frozenset()  # paths of the selected rows (ctrl+space)
        self._line_styles_kept: dict[bool, LineStyles] = {}  # `_line_styles`: cursor row or not
        self._frame: tuple[int, int, float] | None = None  # `_line_geometry` while a frame's lines are drawn
        self._paint_pending = False  # `_paint_soon` queued a paint that has not run yet

    # -- state -------------------------------------------------------------------------

    @property
    def rows(self) -> RowSet:
        """The rows (a `RowSet`: indexing one makes it; iterating makes every one, unkept)."""
        return self._rows

    @property
    def cursor(self) -> int:
        return self._cursor

    @property
    def highlighted(self) -> SessionRow | None:
        """The row under the cursor, if any."""
        return self._rows[self._cursor] if self._rows else None

    def index_of(self, path: str) -> int | None:
        return self._rows.position(path)

    def set_rows(
        self, rows: Sequence[SessionRow], *, keep: str | None = None, top: bool = False, lines_at_least: int = 0
    ) -> None:
        """Replace every row (a `RowSet` built by a worker costs this no more than the rows drawn).

        The cursor follows the session at path `keep` (default: the current one) and that row
        keeps its position on screen (the rows in view stay instead when the wheel scrolled the
        current one out of view and no `keep` is given), unless the list was scrolled to its very top: then it
        stays there, so rows that arrive above the cursor are seen, not slipped in above the
        viewport.  With `top`, the cursor goes to the first row instead.  `lines_at_least`: the
        scrollable height stays at least this (the lines past the rows are blank): the first
        page of a search keeps the scrollbar the list had until the whole ranking comes.
        """
        old_row = self.highlighted
        old_screen_y = self._line_of(self._cursor) - self.scroll_offset.y if old_row else 0
        room = self.scrollable_content_region.height
        # the wheel scrolled the cursor out of view: the rows read there stay (not the cursor's),
        # unless the cursor is sent to a session (`keep`: Ctrl+Z's restored one), which is shown
        away = keep is None and old_row is not None and not top and not 0 <= old_screen_y < room
        keep = keep if keep is not None else (old_row.path if old_row else None)
        anchor = self._view_anchor() if away else []
        self._rows = rows = RowSet.of(rows)
        self._line_starts, self._line_count = rows.line_starts, rows.line_count
        self._now = self._clock()  # (the cached lines stay: each is keyed by what it shows, its age included)
        self._set_line_count(max(self._line_count, lines_at_least))
        found = None if top or keep is None else rows.position(keep)
        if top:
            self.touched = False
        if found is None:
            self._cursor = 0 if top else min(self._cursor, max(len(rows) - 1, 0))
            if top:
                self.scroll_to(y=0, animate=False, immediate=True)
        else:
            self._cursor = found
            at_top = self.scroll_offset.y == 0
            if old_row is not None and not at_top and not away:
                self.scroll_to(y=max(self._line_of(found) - old_screen_y, 0), animate=False, immediate=True)
        if away:
            self._scroll_to_anchor(anchor)
        else:
            self._scroll_cursor_into_view()
        self.refresh()
        self._paint_soon()
        new_row = self.highlighted
        if (new_row is None) != (old_row is None) or (new_row and old_row and new_row.summary is not old_row.summary):
            self.post_message(self.Highlighted(self, new_row))

    def _view_anchor(self) -> list[tuple[str, int]]:
        """The sessions drawn in the view, each with the line it starts on, counted from the
        view's top (the first one's may be above it), to find them again in new rows."""
        top, room = self.scroll_offset.y, self.scrollable_content_region.height
        located = self._row_at_line(top)
        if located is None:
            return []
        anchor = []
        for index in range(located[0], len(self._rows)):
            start = self._line_of(index)
            if start >= top + room:
                break
            anchor.append((self._rows[index].path, start - top))
        return anchor

    def _scroll_to_anchor(self, anchor: list[tuple[str, int]]) -> None:
        """Scroll the new rows so the first session of the view that is still listed, with the
        next one still after it, is on the line it was on: live changes while the user reads
        rows away from the cursor must not snap the view back to it, nor follow a session an
        agent's write moved to the top.  A list at its top stays there."""
        if not anchor or self.scroll_offset.y == 0:
            return
        found = [(self._rows.position(path), offset) for path, offset in anchor]
        after = [index for index, _offset in found[1:]] + [None]
        listed = [(index, offset) for index, offset in found if index is not None]
        steady = [
            (index, offset)
            for (index, offset), following in zip(found, after, strict=True)
            if index is not None and following in (None, index + 1)
        ]
        if steady or listed:
            index, offset = (steady or listed)[0]
            self.scroll_to(y=max(self._line_of(index) - offset, 0), animate=False, immediate=True)

    def expect_lines(self, lines: int) -> None:
        """The scrollable height the whole list will have (a search's count, known before
        its rows come to replace the first page shown now): the scrollbar is right at once."""
        self._set_line_count(max(self._line_count, lines))
        self._paint_soon()

    def _paint_soon(self) -> None:
        """Have the new rows painted as soon as the handler that set them returns.

        Textual paints a screen at most 60 times a second, on a fixed 16.7 ms grid: rows that
        came a few ms after a frame (the search's answer, after the frame that echoed the key)
        waited for the next tick, 0-16 ms with the UI thread idle — a third of a keystroke's
        time to a settled list.  `paint_now` runs behind the screen's current message instead,
        so what that handler changed after the rows (the status line's counts) is in the frame."""
        if self._paint_pending or not self.is_attached:
            return
        screen = self.screen

        def paint() -> None:
            self._paint_pending = False
            paint_now(screen, self)

        self._paint_pending = True
        screen.call_later(paint)

    def _set_line_count(self, lines: int) -> None:
        """The scrollable height.  A new height asks Textual for a layout of the whole screen
        (every keystroke's rows have a new count: a frame's work); only a scrollbar that comes
        or goes needs one, else the scrollbar is updated in place, as a resize does it."""
        size = Size(self.scrollable_content_region.width, lines)
        room = self.scrollable_content_region.height
        before = self.virtual_size
        scroll_update = getattr(self, "_scroll_update", None)  # (Textual's own, as a resize uses it)
        if scroll_update and before.width == size.width and before.height > room and lines > room:
            self.set_reactive(SessionList.virtual_size, size)
            bar = self.vertical_scrollbar
            thumb = thumb_cells(bar, before.height)
            if thumb is not None and thumb_cells(bar, lines) == thumb:
                # the bar looks the same (thousands of rows: a one-cell thumb at the top): its
                # 40 lines are not drawn again, as `_scroll_update` would (1-1.5 ms a keystroke)
                bar.set_reactive(ScrollBar.window_virtual_size, lines)
                self.scroll_y = self.validate_scroll_y(self.scroll_y)
            else:
                scroll_update(size)
            self.refresh()
        else:
            self.virtual_size = size

    def set_selected(self, paths: frozenset[str]) -> None:
        """The selected rows (drawn with a ●); repaints only when they changed."""
        if paths != self._selected:
            self._selected = paths
            self.refresh()

    def set_display(
        self, *, show_cwd: bool | None = None, show_path: bool | None = None, empty_text: str | None = None
    ) -> None:
        """Change what the rows show; repaints without touching the rows or the cursor, and only
        if something changed (the screen says it on every keystroke: a repaint of every
        visible row would cost the keystroke's echo a frame)."""
        before = (self._show_cwd, self._show_path, self._empty_text)
        if show_cwd is not None:
            self._show_cwd = show_cwd
        if show_path is not None:
            self._show_path = show_path
        if empty_text is not None:
            self._empty_text = empty_text
        if (self._show_cwd, self._show_path, self._empty_text) != before:
            self.redraw()

    def redraw(self) -> None:
        """Draw every visible row afresh (the cached lines are dropped)."""
        self._cache.clear()
        self.refresh()

    # -- cursor ------------------------------------------------------------------------

    def move_cursor(self, delta: int) -> None:
        """Move by `delta` rows, clamped (no wrap, as in pi)."""
        self.set_cursor(self._cursor + delta)

    def page(self, direction: int) -> None:
        """Move by one screenful of rows."""
        self.move_cursor(direction * max(self._rows_per_page(), 1))

    def set_cursor(self, index: int) -> None:
        """Put the cursor on row `index` (clamped) and scroll it into view."""
        if not self._rows:
            return
        self.touched = True
        index = max(0, min(index, len(self._rows) - 1))
        if index == self._cursor:
            self._scroll_cursor_into_view()
            return
        old = self._cursor
        self._cursor = index
        self.refresh_line_of(old)
        self.refresh_line_of(index)
        self._scroll_cursor_into_view()
        self.post_message(self.Highlighted(self, self._rows[index]))

    def _rows_per_page(self) -> int:
        height = self.scrollable_content_region.height
        average = self._line_count / len(self._rows) if self._rows else 1
        return int(height / average) if average else height

    def _scroll_cursor_into_view(self) -> None:
        if not self._rows:
            return
        row = self._rows[self._cursor]
        self.scroll_to_region(
            Region(0, self._line_of(self._cursor), 1, row.height), animate=False, immediate=True, force=True
        )

    # -- lines -------------------------------------------------------------------------

    def _line_of(self, index: int) -> int:
        return self._line_starts[index] if self._line_starts else index

    def _row_at_line(self, line: int) -> tuple[int, int] | None:
        if line < 0 or line >= self._line_count:
            return None
        if not self._line_starts:
            return line, 0
        index = bisect.bisect_right(self._line_starts, line) - 1
        return index, line - self._line_starts[index]

    def refresh_line_of(self, index: int) -> None:
        if 0 <= index < len(self._rows):
            y = self._line_of(index) - self.scroll_offset.y
            for offset in range(self._rows[index].height):
                self.refresh_line(y + offset)

    def notify_style_update(self) -> None:
        """The theme or the CSS changed: the cached rows hold the old colours."""
        super().notify_style_update()
        self._cache.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.scrollable_content_region.width, self._line_count)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual asks for the lines of a frame: what every line of it needs (the width, the
        room inside a gutter, the time ages are counted to) is worked out once for all of them."""
        self._frame = self._line_geometry()
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def _line_geometry(self) -> tuple[int, int, float]:
        """(width, inner width, now in ms): the line's width, the title line's room (a gutter
        before the preview's divider without a scrollbar), and what ages are counted to."""
        width = self.scrollable_content_region.width
        return width, width - (0 if self.show_vertical_scrollbar else 1), self._now.timestamp() * 1000

    def render_line(self, y: int) -> Strip:
        width, inner, now_ms = self._frame or self._line_geometry()
        located = self._row_at_line(self.scroll_offset.y + y)
        if located is None:
            if not self._rows and self._empty_text:
                lines = textwrap.wrap(self._empty_text, max(width - 2, 10)) or [""]
                if y < len(lines):
                    style = self.get_visual_style("session-list--empty")
                    content = Content("  " + lines[y]).truncate(width, pad=True)
                    return Strip(content.render_segments(style), width)
            return Strip.blank(width, self.rich_style)
        index, subline = located
        row = self._rows[index]
        summary = row.summary
        # What the line is drawn from, not which row object: a keystroke's new rows that show a
        # session as the last key's did (same spans, same place) reuse its line (`line_key`).
        drawn: tuple = row.snippet() if subline else tuple(row.title_spans())
        age = relative_age(summary.modified_ms, now_ms)
        key = line_key(row, subline, drawn, index == self._cursor, width, inner, row.path in self._selected, age)
        kept = self._cache.get(key)
        if kept is not None and kept[0] is summary:
            return kept[1]
        strip = self._render_row_line(row, subline, drawn, index == self._cursor, width, inner, age)
        self._cache[key] = (summary, strip)  # (the summary, kept with it: its id is not reused meanwhile)
        return strip

    def _line_styles(self, is_cursor: bool) -> LineStyles:
        """The Rich styles of the cursor row's parts, or the other rows' (`LineStyles`), made
        again when the widget's style is another object (a theme, a pseudo-class, the CSS)."""
        base = self.get_visual_style("session-list--cursor") if is_cursor else self.get_visual_style()
        kept = self._line_styles_kept.get(is_cursor)
        if kept is None or kept.base is not base:
            kept = self._line_styles_kept[is_cursor] = LineStyles(base, self.get_visual_style)
        return kept

    def _render_row_line(
        self, row: SessionRow, subline: int, drawn: tuple, is_cursor: bool, width: int, inner: int, age: str
    ) -> Strip:
        styles = self._line_styles(is_cursor)
        if subline == 0:
            text, spans, length = self._title_line(row, is_cursor, inner, list(drawn), age, styles)
        else:
            text, spans, length = self._snippet_line(row, inner, drawn, styles)
        made = segments(text, spans, styles)
        if length < width:  # (`Strip.extend_cell_length`, without a second strip)
            made.append(Segment(" " * (width - length), styles.base.rich_style))
            length = width
        strip = Strip(made, length)
        return strip if length == width else strip.crop(0, width)

    def _title_line(
        self,
        row: SessionRow,
        is_cursor: bool,
        width: int,
        title_spans: list[tuple[int, int]],
        age: str,
        styles: LineStyles,
    ) -> tuple[str, list[LineSpan], int]:
        """The title line's text, spans (component classes) and cell length: pointer, fork
        prefix and pin, the title (scrolled to its first match, cut to fit), the right part."""
        summary = row.summary
        pointer: list[tuple[str, str]] = [("› ", "session-list--pointer") if is_cursor else ("  ", "")]
        if row.path in self._selected:  # "›●" / " ●": the marker takes the pointer's second cell
            pointer = [(pointer[0][0][:1], pointer[0][1]), ("●", "session-list--selected")]
        prefix: list[tuple[str, str]] = [(row.prefix, "session-list--prefix")] if row.prefix else []
        if row.mark.pinned:
            prefix.append((PIN_MARK, "session-list--pin"))
        right = self._right_part(summary, width, row.mark.tags, row.children, age)
        parts = (pointer, prefix, right)
        pointer_cells, prefix_cells, right_cells = (cells("".join(text for text, _ in part)) for part in parts)
        room = max(width - pointer_cells - prefix_cells - right_cells - 1, 10)
        text, spans = scroll_to_match(summary.title, title_spans, room)
        text = text.translate(CONTENT_DROPS)
        title: list[LineSpan] = []
        if summary.name and text and styles.has("session-list--named"):
            title.append((0, len(text), "session-list--named"))
        title += [(start, end, "session-list--match") for start, end in spans]
        text, title, title_cells = truncated(text, title, room)
        gap = max(width - pointer_cells - prefix_cells - title_cells - right_cells, 1)
        return assembled([*pointer, *prefix, (text, title), (" " * gap, ""), *right], styles)

    def _right_part(
        self, summary: SessionSummary, width: int, tags: Sequence[str] = (), children: int = 0, age: str = ""
    ) -> list[tuple[str, str]]:
        """The right of a title line as (text, component class) parts: tags, then the child
        count, the cwd or path, the message count and age."""
        parts: list[str] = [children_label(children)] if children else []
        cwd = short_path(summary.cwd, max(width // 5, 12)) if self._show_cwd else ""
        if self._show_path:  # like pi, the path takes the room and the title shrinks (to PATH_TITLE_ROOM)
            parts.append(short_path(summary.path, max(width - PATH_TITLE_ROOM - len(cwd), 12)))
        if cwd:
            parts.append(cwd)
        count = f"{summary.message_count}{'' if summary.exact else '+'}"
        age = age or relative_age(summary.modified_ms, self._now.timestamp() * 1000)
        parts.append(f"{count:>5} {age:>3}")
        meta = (" ".join(parts), "session-list--meta")
        if not tags:
            return [meta]
        shown = display_text(" ".join(f"#{tag}" for tag in tags), max(width // 4, 8))
        return [(shown, "session-list--tags"), (" ", ""), meta]

    def _snippet_line(
        self, row: SessionRow, width: int, drawn: tuple, styles: LineStyles
    ) -> tuple[str, list[LineSpan], int]:
        """`drawn`: the row's `snippet()` (text and match spans)."""
        indent = "    " + " " * len(row.prefix)
        text, spans = drawn
        snippet = blank_controls(text).translate(CONTENT_DROPS)
        styled = bool(snippet) and styles.has("session-list--snippet")  # (`Content.styled`: no span without)
        parts: list[LineSpan] = [(0, len(snippet), "session-list--snippet")] if styled else []
        parts += [(start, end, "session-list--match") for start, end in spans]
        text, spans, _cells = assembled([(indent, ""), (snippet, parts)], styles)
        return truncated(text, spans, width)

    # -- mouse -------------------------------------------------------------------------

    def _index_at(self, event: events.MouseEvent) -> int | None:
        located = self._row_at_line(self.scroll_offset.y + event.y)
        return located[0] if located else None

    async def _on_click(self, event: events.Click) -> None:
        index = self._index_at(event)
        if index is None:
            return
        event.stop()
        self.set_cursor(index)
        if event.chain >= 2:
            self.post_message(self.Selected(self, self._rows[index]))
