"""The session list's lines as Rich segments, made from their parts in one pass (issue 14).

A keystroke's new rows redraw most of the 40 lines on screen, on the UI thread, between the
search's answer and the frame that shows it.  Built through Textual's `Content` (a `Content`
per part, `assemble`, `truncate`, then `render_segments`, which combines the base style with
each span's style again on every line and converts each combination to a Rich style), a line
cost 0.1-0.2 ms at 160 columns: 5-8 ms of a keystroke's frame.  Here a line is the same
thing made directly: its text and spans are put together as `Content.assemble` would, cut as
`Content.truncate` cuts (`set_cell_size`, an ellipsis, spans trimmed), and swept as
`Content.render` sweeps them (a segment between every two span boundaries, a span's style the
base combined with the styles of the spans over it, in their order), with each combination's
Rich style made once per theme (`LineStyles`).  The segments are those `Content` made: the
same texts, cuts and styles (tests/test_ui_list_widget.py compares the two).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.style import Style

# What `Content` drops from the text it is given (Textual's `_STRIP_CONTROL_CODES`), for `str.translate`;
# dropped where `Content` drops it (the spans placed before, as there).  The rows' texts come
# through `display_text` / `blank_controls` and hold none of these.
CONTENT_DROPS = dict.fromkeys((7, 8, 11, 12, 13))

# Characters one cell wide each and a grapheme each, whose cell counts and cuts are plain
# `len` and slicing: printable ASCII, and the ellipsis that snippets and scrolled titles carry
# (outside Rich's own set of such characters, so Rich measured and cut such a line a grapheme
# at a time: a fifth of the lines at 10,000 sessions).  Anything else is left to Rich.
_PLAIN_CELLS = frozenset(map(chr, range(0x20, 0x7F))) | ({"…"} if cell_len("…") == 1 else set())
_plain = _PLAIN_CELLS.issuperset


def cells(text: str) -> int:
    """`rich.cells.cell_len(text)`."""
    return len(text) if _plain(text) else cell_len(text)


LineSpan = tuple[int, int, str]  # (start, end, component class): a part drawn in that component's style


class LineStyles:
    """The Rich style of each combination of component classes over one base style (the
    cursor row's, or the other rows'), made when first used: `Content.render` combines them
    again for every line it draws."""

    def __init__(self, base: Style, component: Callable[[str], Style]) -> None:
        self.base = base
        self.plain: RichStyle | None = base.rich_style if base else None
        self._component = component
        self._combined: dict[tuple[str, ...], RichStyle | None] = {("",): self.plain}
        self._truthy: dict[str, bool] = {}

    def has(self, name: str) -> bool:
        """Whether component `name` has a style (`Content.styled` adds no span for none)."""
        found = self._truthy.get(name)
        if found is None:
            found = self._truthy[name] = bool(self._component(name))
        return found

    def of(self, names: tuple[str, ...]) -> RichStyle | None:
        """The Rich style of the styles `names` combined in that order ("": the base, which
        is under everything in the text; a span past the text's end is over nothing)."""
        try:
            return self._combined[names]
        except KeyError:
            pass
        style = Style.combine([self.base if name == "" else self._component(name) for name in names])
        combined = self._combined[names] = style.rich_style if style else None
        return combined


def truncated(text: str, spans: list[LineSpan], width: int) -> tuple[str, list[LineSpan], int]:
    """`Content.truncate(width, ellipsis=True)` of `text` with `spans`: the text, its spans
    and its cell length."""
    plain = _plain(text)
    length = len(text) if plain else cell_len(text)
    if length <= width:
        return text, spans, length
    if plain and width > 0:
        text = text[: width - 1] + "…"
    else:
        text = set_cell_size(text, width - 1) + "…" if width else set_cell_size(text, width)
    end = len(text)
    return text, [(start, min(stop, end), name) for start, stop, name in spans if start < end], width


Part = tuple[str, "str | list[LineSpan]"]  # text, and its component class ("": none) or its own spans


def assembled(parts: Sequence[Part], styles: LineStyles) -> tuple[str, list[LineSpan], int]:
    """`Content.assemble` of `parts`: the text, the spans (each part's, moved to where the
    part starts; a part in a component class without a style has none, as `Content.styled`
    gives it none) and the cell length."""
    texts: list[str] = []
    spans: list[LineSpan] = []
    position = 0
    for text, style in parts:
        if isinstance(style, str):
            if text and style and styles.has(style):
                spans.append((position, position + len(text), style))
        else:
            spans += [(start + position, end + position, name) for start, end, name in style]
        texts.append(text)
        position += len(text)
    joined = "".join(texts).translate(CONTENT_DROPS)
    return joined, spans, cells(joined)


def segments(text: str, spans: Sequence[LineSpan], styles: LineStyles) -> list[Segment]:
    """`Content(text, spans).render_segments(base)`: a segment between every two span
    boundaries, in the base combined with the spans over it (in the order they were added)."""
    if not spans:
        return [Segment(text, styles.plain)]
    marks = [(0, False, 0)]
    marks += [(start, False, index) for index, (start, _end, _name) in enumerate(spans, 1)]
    marks += [(end, True, index) for index, (_start, end, _name) in enumerate(spans, 1)]
    marks.append((len(text), True, 0))
    marks.sort(key=lambda mark: (mark[0], mark[1]))
    names = ["", *(name for _start, _end, name in spans)]
    stack: list[int] = []
    made: list[Segment] = []
    for (offset, leaving, index), (next_offset, _, _) in pairwise(marks):
        if leaving:
            stack.remove(index)
        else:
            stack.append(index)
        if next_offset > offset:
            made.append(Segment(text[offset:next_offset], styles.of(tuple(names[at] for at in sorted(stack)))))
    return made


__all__ = ["CONTENT_DROPS", "LineSpan", "LineStyles", "Part", "assembled", "cells", "segments", "truncated"]
