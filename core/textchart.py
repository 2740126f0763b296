"""Plain-text charts for a terminal: bars and sparklines of Unicode block characters.

No Rich here (core): widths are counted in terminal cells with `unicodedata` (wide East
Asian characters take two, combining marks none), so a label in Chinese lines up with one
in ASCII.  Labels are session text: callers pass them through `text.display_text` first.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

_EIGHTHS = " ▏▎▍▌▋▊▉"
_FULL = "█"
_SPARKS = "▁▂▃▄▅▆▇█"


def cell_width(text: str) -> int:
    """Terminal cells `text` takes."""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def fit(text: str, width: int) -> str:
    """`text` cut to `width` cells (with "…" when cut), then padded with spaces to exactly `width`."""
    if width <= 0:
        return ""
    if cell_width(text) > width:
        out, used = [], 0
        for char in text:
            step = cell_width(char)
            if used + step > width - 1:
                break
            out.append(char)
            used += step
        text = "".join(out) + "…"
    return text + " " * (width - cell_width(text))


def bar(value: float, largest: float, width: int) -> str:
    """A horizontal bar of `width` cells at most, `value / largest` of it filled, in eighths."""
    if width <= 0 or largest <= 0 or value <= 0:
        return ""
    eighths = max(1, round(min(value / largest, 1.0) * width * 8))  # anything above zero shows
    full, rest = divmod(eighths, 8)
    return _FULL * full + (_EIGHTHS[rest] if rest else "")


def sparkline(values: Sequence[float]) -> str:
    """One block character per value, scaled to the largest (zero is the lowest block)."""
    largest = max(values, default=0)
    if largest <= 0:
        return _SPARKS[0] * len(values)
    top = len(_SPARKS) - 1
    return "".join(_SPARKS[min(top, round(value / largest * top))] if value > 0 else _SPARKS[0] for value in values)
