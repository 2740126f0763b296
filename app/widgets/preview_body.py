"""The context preview's messages, drawn a line at a time.

The preview held the whole context it shows (up to `TAIL_MESSAGES` messages, each up to
`BODY_LIMIT` characters) in one `Static` in a scrolling container: every update wrapped all
of it to measure its height, then rendered every line of it, though a pane shows ~40.  In
the tree view that was 55–160 ms of the UI thread per cursor move, on any session.  This
scroll view takes the lines wrapped by the preview's worker (`wrapped_lines`; it wraps them
itself only when its width changed meanwhile) and renders only the lines in view, each the
way `Static` renders it, so it looks the same.
"""

from __future__ import annotations

from textual.content import Content
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual


def wrapped_lines(content: Content, width: int, height: int, scrollbar: int) -> list[Content]:
    """`content`'s lines wrapped to `width`, or to `width - scrollbar` when they overflow
    `height` (`overflow-y: auto` shows the scrollbar then).  Pure: a worker can make them."""
    lines = content.wrap(width)
    if len(lines) > height and scrollbar and width > scrollbar:
        lines = content.wrap(width - scrollbar)
    return lines


class PreviewBody(ScrollView, can_focus=False):
    """Scrollable text of any length; only what is in view is rendered.  The text keeps one
    blank cell before the scrollbar (`MARGIN`): a scroll view's padding would go outside it."""

    MARGIN = 1

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Content("")
        self._lines: list[Content] = []
        self._wrapped: tuple[Content, tuple[int, int, int]] | None = None  # the content and geometry of `_lines`
        self._strips: dict[int, Strip] = {}

    @property
    def content(self) -> Content:
        """The text shown (all of it, not only the lines in view)."""
        return self._content

    def update(self, content: Content, wrapped: tuple[tuple[int, int, int], list[Content]] | None = None) -> None:
        """Show `content`; `wrapped`: its lines as `wrapped_lines` made them for a geometry
        (a worker's, used if the body still has that geometry)."""
        self._content = content
        self._wrap(wrapped)

    def on_resize(self) -> None:
        self._wrap()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()  # the lines' colours come from the styles

    def geometry(self) -> tuple[int, int, int] | None:
        """(width, height, scrollbar size) the text is wrapped for (None: not laid out yet)."""
        gutter = self.styles.gutter
        width, height = self.size.width - gutter.width - self.MARGIN, self.size.height - gutter.height
        if width <= 0:
            return None
        scrollbar = self.styles.scrollbar_size_vertical if self.styles.overflow_y == "auto" else 0
        return width, height, scrollbar

    def _wrap(self, wrapped: tuple[tuple[int, int, int], list[Content]] | None = None) -> None:
        geometry = self.geometry()
        if geometry is None:
            return  # not laid out yet: `on_resize` comes
        done = self._wrapped
        if done is not None and done[0] is self._content and done[1] == geometry:
            return
        if wrapped is not None and wrapped[0] == geometry:
            lines = wrapped[1]
        else:
            lines = wrapped_lines(self._content, *geometry)
        self._lines, self._wrapped = lines, (self._content, geometry)
        self._strips.clear()
        # The body's own size does not depend on its text: no layout (a reactive `virtual_size`
        # would ask for one), only its scrollbars updated, as Textual does for a size that
        # changes without one (`Widget._size_updated`); a scrollbar shown or hidden lays out.
        virtual_size = Size(max((line.cell_length for line in lines), default=0), len(lines))
        self.set_reactive(PreviewBody.virtual_size, virtual_size)
        self._scroll_update(virtual_size)
        self.refresh()

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        style = self.rich_style
        if not 0 <= index < len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(index)
        if strip is None:
            line = self._lines[index]
            rendered = Visual.to_strips(self, line, max(line.cell_length, 1), 1, self.visual_style)
            strip = self._strips[index] = rendered[0] if rendered else Strip.blank(0, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)


__all__ = ["PreviewBody", "wrapped_lines"]
