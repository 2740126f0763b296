"""A session's own Markdown, made safe to embed in the Markdown export (CommonMark 0.31).

A renderer that passes raw HTML through must show a session's `<script>` as text, and one
message must not change how the rest of the export renders.  Code keeps its `<` as it is, so
the question "is this character code?" has to be answered exactly as CommonMark answers it:
guessing "code" where CommonMark sees prose lets HTML through, and a fence CommonMark sees
open where we see none swallows the rest of the document.

So the lines are parsed for block structure the way CommonMark does it (block quotes, list
items, lazy continuation lines, fenced and indented code, ATX and setext headings, thematic
breaks, paragraphs), then each paragraph and heading is written with `&` and `<` as entities
outside its code spans.  HTML blocks need no tracking: every `<` that could start one is
written as `&lt;`.  A fence left open is closed at the end, inside the containers that hold
it; a `|` in a fence's info string is written `&#124;` (the same info), so that markdown-it
takes no fence for a table's header.  A lazy continuation line is written with the markers
of the containers it continues (markdown-it ends nested block quotes at one indented four
spaces), while that adds no more than the text's own length to the output.  A link reference
definition is written as text (`\\[a]: /u`): it would give its link to every message, and
markdown-it ends a paragraph after one.  Tabs are already spaces (`safe_multiline`), so a
column is a character.

Where renderers could disagree, the text is written as prose: `&lt;` shown in code is the
price of never guessing wrong.  That is a code span over several lines, or after one or
after a lone backtick run (where a paragraph starts and ends is where renderers part); one
after `](`, `][` or `]:` (a backtick in a link's destination, title or label is no code);
one holding a `|`, or after one, in what could be a GFM table (cells are split at `|`
first: markdown-it's table rule runs before headings and fences, and a table's rows go on to
a blank line, so that is any line from the one above a delimiter row to the next blank line);
and an indented code block (rare in agents' Markdown: markdown-it continues a block quote on a
`>` indented four spaces).

Each line is parsed in time linear in its length (a line of nested list markers is not
rescanned per marker), as an export must not hang on one hostile message.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..text import safe_multiline

_SPACES = re.compile(r" *")
_ATX = re.compile(r"#{1,6}(?: |$)")
_FENCE_OPEN = re.compile(r"(`{3,})[^`]*$|(~{3,})")
_SETEXT = re.compile(r"(?:=+|-+) *$")
_LIST_ITEM = re.compile(r"(?:[-+*]|(\d{1,9})[.)])(?= |$)( *)")
_REFERENCE = re.compile(r"\[(?:[^\\\]]|\\.)*(?:\]:|$)")  # what could start a link reference definition
_BACKTICKS = re.compile(r"`+")
_INLINE_SPECIAL = re.compile(r"[\\`<&\]|]")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ENTITIES = {"<": "&lt;", "&": "&amp;"}


@dataclass
class _Container:
    """An open block quote, or a list item (`width`: its content's column, from its parent's)."""

    quote: bool
    width: int = 0
    empty: bool = True  # a list item holding no block yet: a blank line ends it


@dataclass
class _Leaf:
    """The open paragraph, fence or indented code block (always in the innermost container)."""

    fence: str = ""  # a fence's opening run (``` or ~~~~ ...)
    lines: list[int] | None = None  # a paragraph's lines in the output


def _entities(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


def _thematic_breaks(line: str) -> dict[str, tuple[int, int]]:
    """For each character that makes a thematic break, where one of it can start in `line`:
    from the first index after which only it and spaces follow, up to its third last.  Found
    once per line, as a line of nested list markers (`- - - … a`) asks at each marker."""
    breaks = {}
    for char in "-*_":
        first = len(line.rstrip(char + " "))
        last = len(line)
        for _ in range(3):
            last = line.rfind(char, first, last)
            if last < 0:
                break
        else:
            breaks[char] = (first, last)
    return breaks


def _table_row(text: str) -> bool:
    """Whether `text`, after its block quote markers, could be a GFM table's delimiter row
    (`---|:-:`, or `---` under a one-column header) as markdown-it tests it."""
    row = text.lstrip(" >")
    return len(row) > 1 and row[0] in "|-:" and row[1] in "|-: " and row[:2] != "- " and not row.strip(" :|-")


def _tabular(lines: list[str]) -> list[bool]:
    """Which lines could be in a GFM table: from the line above a delimiter row to the next
    blank line (a table's rows go on over what CommonMark sees as other blocks: a heading over
    the delimiter row, the paragraph under a `---` taken for a setext underline or a break)."""
    tabular = [False] * len(lines)
    table = False
    for number, line in enumerate(lines):
        if _table_row(line):
            table = True
            if number:
                tabular[number - 1] = True
        elif not line.strip(" "):
            table = False
        tabular[number] = table
    return tabular


def _indent(line: str, pos: int) -> tuple[int, int]:
    """The first non-space index from `pos`, and the indentation before it."""
    stop = _SPACES.match(line, pos).end()  # type: ignore[union-attr]
    return stop, stop - pos


class _Blocks:
    """CommonMark's block parse of one message, line by line, into `out`: code lines as they
    are, each paragraph's or heading's lines after their prefix, to be escaped together."""

    def __init__(self, spare: int) -> None:
        self.stack: list[_Container] = []
        self.blank_depth: int | None = None  # how many containers a blank line continues, once known
        self.markers: str | None = None  # what starts a line inside all the open containers, once known
        self.spare = spare  # how many characters lazy lines' markers may add: a bound on the output
        self.leaf: _Leaf | None = None
        self.out: list[str] = []  # a code line, or a paragraph's or heading's line after its prefix
        self.prefixes: dict[int, str] = {}  # a paragraph's or heading's line: its indentation and markers
        self.units: list[list[int]] = []  # each paragraph's or heading's lines, to be escaped together

    def _open(self, depth: int) -> None:
        """A block starts inside `depth` containers: the deeper ones and the open leaf close,
        and the list item holding it is no longer empty."""
        del self.stack[depth:]
        self.leaf = None
        self.blank_depth = self.markers = None
        if depth:
            self.stack[depth - 1].empty = False

    def _continued(self, line: str) -> tuple[int, int]:
        """How many open containers `line` continues, and where its content starts."""
        if not line.strip(" "):  # only the list items holding a block go on: known once, not per line
            if self.blank_depth is None:
                stops = (i for i, container in enumerate(self.stack) if container.quote or container.empty)
                self.blank_depth = next(stops, len(self.stack))
            return self.blank_depth, len(line)
        pos = 0
        for matched, container in enumerate(self.stack):
            start, indent = _indent(line, pos)
            if container.quote:
                if indent > 3 or line[start : start + 1] != ">":
                    return matched, pos
                pos = start + 1 + (line[start + 1 : start + 2] == " ")
            elif indent >= container.width:
                pos += container.width
            else:
                return matched, pos
        return len(self.stack), pos

    def line(self, line: str) -> None:
        """Parse one line (CommonMark's block phase, less HTML blocks: see the module doc)."""
        matched, pos = self._continued(line)
        leaf = self.leaf
        start, indent = _indent(line, pos)
        if matched == len(self.stack) and leaf is not None and leaf.fence:
            opening = leaf.fence
            run = line[start:].rstrip(" ")
            if indent <= 3 and len(run) >= len(opening) and run == opening[0] * len(run):
                self.leaf = None
            self.out.append(line)
            return
        code = matched == len(self.stack) and leaf is not None and leaf.lines is None and not leaf.fence
        if code and (indent >= 4 or start == len(line)):  # indented code goes on: see the module doc
            self.out.append(_entities(line))
            return
        paragraph = leaf.lines if leaf is not None else None  # the open paragraph's lines
        lazy = matched < len(self.stack)  # a paragraph line here continues it lazily, if at all
        breaks = _thematic_breaks(line)
        while indent < 4 and start < len(line):  # the blocks this line starts
            interrupting = paragraph is not None and not lazy
            if line[start] == ">":
                self._open(matched)
                self.stack.append(_Container(quote=True))
                matched, paragraph = len(self.stack), None
                pos = start + 1 + (line[start + 1 : start + 2] == " ")
                lazy = False
                start, indent = _indent(line, pos)
                continue
            fence = _FENCE_OPEN.match(line, start)
            setext = interrupting and _SETEXT.match(line, start)  # before a list item: `-` under a paragraph
            first, last = breaks.get(line[start], (1, 0))
            if fence or setext or _ATX.match(line, start) or first <= start <= last:
                self._open(matched)
                if fence:
                    self.leaf = _Leaf(fence=fence.group(1) or fence.group(2))
                    # no `|` in its info string: markdown-it would take the line for a table's
                    # header above a `---` and the fence's lines for rows (an entity is the same info)
                    end = fence.end(1) if fence.group(1) else fence.end(2)
                    self.out.append(line[:end] + line[end:].replace("|", "&#124;"))
                elif not _ATX.match(line, start):  # a setext underline: its text is above
                    self.out.append(line)
                else:
                    self.units.append([len(self.out)])
                    self._text(line, start)
                return
            item = _LIST_ITEM.match(line, start)
            if not item:
                break
            blank = item.end() == len(line)
            if interrupting and (blank or (item.group(1) is not None and int(item.group(1)) != 1)):
                break  # CommonMark: such an item cannot interrupt a paragraph
            spaces = len(item.group(2))
            width = item.end() - start - (0 if 1 <= spaces <= 4 and not blank else spaces - 1)
            self._open(matched)
            self.stack.append(_Container(quote=False, width=indent + width))
            matched, paragraph = len(self.stack), None
            pos = min(start + width, len(line))
            lazy = False
            start, indent = _indent(line, pos)
        if start == len(line):  # blank: a paragraph ends, the containers it leaves stay open
            if matched < len(self.stack):
                del self.stack[matched:]
                self.blank_depth = self.markers = None
            self.leaf = None
            self.out.append(line)
        elif paragraph is not None:  # continued
            paragraph.append(len(self.out))
            width = len(self._markers()) + indent if lazy else 0  # measured first: built only if it fits
            if width and width <= self.spare and not (indent < 4 and _SETEXT.match(line, start)):
                # written with its containers' markers: renderers differ on lazy lines (an
                # underline stays lazy: with them, it would make a heading)
                self.spare -= width
                self.prefixes[len(self.out)] = self._markers() + " " * indent
                self.out.append(line[start:])
            else:
                self._text(line, start)
        elif indent >= 4:
            self._open(matched)
            self.leaf = _Leaf()
            self.out.append(_entities(line))
        else:
            self._open(matched)
            paragraph = [len(self.out)]
            self.leaf = _Leaf(lines=paragraph)
            self.units.append(paragraph)
            self._text(line, start)
            if _REFERENCE.match(line, start):  # `\[a]: /u` is text: see the module doc
                self.out[-1] = "\\" + self.out[-1]

    def _text(self, line: str, start: int) -> None:
        self.prefixes[len(self.out)] = line[:start]
        self.out.append(line[start:])

    def _markers(self) -> str:
        """What starts a line inside all the open containers."""
        if self.markers is None:
            self.markers = "".join("> " if c.quote else " " * c.width for c in self.stack)
        return self.markers

    def close_fence(self) -> None:
        """Close the fence left open, if one is, with a line inside the containers that hold it
        (a leaf is in the innermost container)."""
        if self.leaf is not None and self.leaf.fence:
            self.out.append(self._markers() + self.leaf.fence[0] * len(self.leaf.fence))
            self.leaf = None


def _inline(text: str, table: bool) -> str:
    """A paragraph's text (its lines joined by newlines) with `&` and `<` as entities outside
    the code spans every renderer sees: on one line, with no span over lines nor lone backtick
    run before them in the paragraph (where a paragraph starts and ends is where renderers
    part), after no `](`, `][` or `]:`, and, in what could be a GFM table (`table`), after no
    `|` and holding none."""
    runs: dict[int, list[int]] = {}
    for run in _BACKTICKS.finditer(text):
        runs.setdefault(len(run.group()), []).append(run.start())
    out: list[str] = []
    doubtful = False  # from here on, a renderer could pair backticks in another way
    pos = 0
    while (special := _INLINE_SPECIAL.search(text, pos)) is not None:
        index = special.start()
        char = text[index]
        out.append(text[pos:index])
        pos = index + 1
        if char == "\\":
            if text[pos : pos + 1] in _PUNCTUATION:
                out.append(text[index : pos + 1])  # `\<` is a literal `<` already
                pos += 1
            else:
                out.append(char)
        elif char == "`":
            end = _BACKTICKS.match(text, index).end()  # type: ignore[union-attr]
            starts = runs.get(end - index, [])
            close = bisect.bisect_left(starts, end)
            if close == len(starts):
                out.append(text[index:end])
                pos, doubtful = end, True
                continue
            stop = starts[close] + end - index
            span = text[index:stop]
            doubtful = doubtful or "\n" in span or (table and "|" in span)
            out.append(_entities(span) if doubtful else span)
            pos = stop
        elif char == "]":
            doubtful = doubtful or text[pos : pos + 1] in ("(", "[", ":")
            out.append(char)
        elif char == "|":
            doubtful = doubtful or table
            out.append(char)
        else:
            out.append(_ENTITIES[char])
    out.append(text[pos:])
    return "".join(out)


def md_prose(*texts: object) -> list[str]:
    """Session Markdown as lines: sanitised, no raw HTML outside code (see the module doc).
    Several texts (one message's text parts) are parsed as one, a blank line apart, as they
    render: a list one leaves open holds the next; a fence one leaves open is closed at its end."""
    sanitised = [safe_multiline(text) for text in texts]
    blocks = _Blocks(spare=sum(map(len, sanitised)))
    for number, text in enumerate(sanitised):
        if number:
            blocks.line("")
        for line in text.split("\n"):
            blocks.line(line)
        blocks.close_fence()
    lines = blocks.out
    tabular = _tabular(lines)  # GFM splits a table's cells at `|`, in code too
    for unit in blocks.units:
        escaped = _inline("\n".join(lines[i] for i in unit), any(tabular[i] for i in unit)).split("\n")
        for i, text in zip(unit, escaped, strict=True):
            lines[i] = blocks.prefixes[i] + text
    return lines
