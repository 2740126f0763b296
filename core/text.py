"""Text helpers shared by listing, context and display: message text and sanitising.

Session text is data.  `display_text` removes what a terminal would interpret (C0/C1
controls, escape sequences) and bidi overrides that could reorder what the user sees.
"""

from __future__ import annotations

import os
import re
from typing import Any

_CONTROL = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1 (ESC, CSI, OSC ... all land here)
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "]"
)
_SPACES = re.compile(r"\s+")


def as_text(value: object) -> str:
    """`value` as text for display, never raising: a string itself, None empty, anything
    else its `str()` — "[nested too deeply]" for a value too deep for that (pi reads JSON
    nested 10,000 levels deep; Python's `str()` of it raises `RecursionError`)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return str(value)
    except RecursionError:
        return "[nested too deeply]"


def display_text(value: object, limit: int | None = None) -> str:
    """One clean line for a list row: controls become spaces, runs of space fold to one."""
    text = as_text(value)
    if limit is not None and len(text) > limit * 4:
        text = text[: limit * 4]
    text = _SPACES.sub(" ", _CONTROL.sub(" ", text)).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def safe_multiline(value: object) -> str:
    """Multi-line text with controls removed but newlines and tabs kept (for previews)."""
    text = as_text(value)
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    return _CONTROL.sub(lambda m: "\n" if m.group() == "\n" else "", text)


def content_text(content: Any, joiner: str) -> str:
    """Text of a message `content`: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return joiner.join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return ""


def message_text(message: dict[str, Any]) -> str:
    """The contract text of a context message (see `seance show --json`)."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    return content_text(message.get("content"), "\n")


def home_short(path: str) -> str:
    """`/home/me/p` -> `~/p`, as pi shows paths (only at a path boundary)."""
    home = os.environ.get("HOME") or os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip(os.sep) + os.sep)):
        return "~" + path[len(home.rstrip(os.sep)) :]
    return path


_AGE_UNITS = ((365, "y"), (30, "mo"), (7, "w"), (1, "d"))


def relative_age(moment_ms: float, now_ms: float) -> str:
    """pi's compact age of a moment: now, 5m, 2h, 3d, 2w, 1mo, 1y (both in epoch ms)."""
    minutes = int(max(now_ms - moment_ms, 0.0) // 60_000)
    if minutes < 1:
        return "now"
    if minutes < 60:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 24:
        return f"{hours}h"
    days = hours // 24
    for size, unit in _AGE_UNITS:
        if days >= size:
            return f"{days // size}{unit}"
    return f"{hours}h"  # pragma: no cover - days >= 1 always matches above
