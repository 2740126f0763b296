"""The session list's lines made directly (app/widgets/list_line.py) are the segments Textual's
`Content` makes of the same parts: texts, cuts between segments, styles, cell lengths."""

from __future__ import annotations

import itertools

from textual.color import Color
from textual.content import Content, Span
from textual.style import Style

from seance.app.widgets.list_line import CONTENT_DROPS, LineStyles, assembled, segments, truncated

BASE = Style(background=Color.parse("#121212"), foreground=Color.parse("#e0e0e0"))
COMPONENTS = {
    "pointer": Style(foreground=Color.parse("#ffa62b"), bold=True),
    "named": Style(foreground=Color.parse("#fea62b")),
    "match": Style(foreground=Color.parse("#ffffff"), background=Color.parse("#23395b"), bold=True),
    "meta": Style(foreground=Color.parse("#a0a0a0")),
    "snippet": Style(foreground=Color.parse("#a0a0a0"), italic=True),
    "nothing": Style(),  # a component class without a style: no span, as `Content.styled` gives none
}
TEXTS = [
    "fix the flaky test",
    "…ends with a match late in the title",
    "an ellipsis… in the middle, and text after it to be cut…",
    "宽字符的标题 wide",
    "emoji 👩‍💻 and e\u0301 combining",
    "bell\x07 and\r return",  # what `Content` drops
    "",
]


def styles_for(base: Style) -> LineStyles:
    return LineStyles(base, COMPONENTS.__getitem__)


def as_content(parts: list[tuple[str, str | list[tuple[int, int, str]]]]) -> Content:
    """The same parts through `Content`, as the list drew them before."""
    pieces: list[Content | str] = []
    for text, style in parts:
        if isinstance(style, str):
            pieces.append(Content.styled(text, COMPONENTS[style]) if style else text)
        else:
            pieces.append(Content(text).add_spans([Span(start, end, COMPONENTS[name]) for start, end, name in style]))
    return Content.assemble(*pieces)


def check(parts: list, width: int, base: Style = BASE) -> None:
    # a part with its own spans is given its text as `Content(text)` keeps it (the widget drops
    # the same control codes before it places and cuts the title's spans)
    parts = [(text if isinstance(style, str) else text.translate(CONTENT_DROPS), style) for text, style in parts]
    styles = styles_for(base)
    text, spans, cells = assembled(parts, styles)
    content = as_content(parts)
    assert (text, cells) == (content.plain, content.cell_length)
    assert segments(text, spans, styles) == content.render_segments(base)
    cut_text, cut_spans, cut_cells = truncated(text, spans, width)
    cut = content.truncate(width, ellipsis=True)
    assert (cut_text, cut_cells) == (cut.plain, cut.cell_length)
    assert segments(cut_text, cut_spans, styles) == cut.render_segments(base)


def test_lines_are_the_segments_content_makes_of_the_same_parts() -> None:
    for text, width in itertools.product(TEXTS, (-1, 0, 1, 2, 5, 12, 40)):
        end = len(text)
        title = [(0, end, "named"), (min(2, end), min(6, end), "match"), (min(8, end), end, "match")]
        check([("› ", "pointer"), (text, title), ("  ", ""), ("   12 3d", "meta")], width)
        check([("  ", ""), (text, [(0, min(3, end), "match")]), (" ", ""), ("#tag", "nothing")], width)
        check([("    ", ""), (text, [(0, end, "snippet"), (min(1, end), min(4, end), "match")])], width)
        check([(text, "")], width, Style())  # a base without a style: segments without one


def test_spans_that_meet_or_nest_cut_segments_where_content_cuts_them() -> None:
    text = "abcdefghij"
    spans = [(0, 10, "named"), (2, 4, "match"), (4, 6, "match"), (5, 9, "meta"), (9, 9, "match")]
    check([("› ", "pointer"), (text, spans)], 8)
    check([("› ", "pointer"), (text, spans)], 40)
