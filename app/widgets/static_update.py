"""Updating a `Static` without a layout of the whole screen when its size cannot change.

`Static.update` lays the screen out again by default, and a layout repaints every widget
whose region it touches: in the tree view each cursor move updated the status line and the
preview's header and stats, three layouts per move, though their heights rarely change.
"""

from __future__ import annotations

from typing import Any

from textual.visual import VisualType
from textual.widgets import Static


def update_static(widget: Static, content: VisualType) -> None:
    """`widget.update(content)`, with a layout only when the content's height at the widget's
    width differs from the old content's, or the widget is shown but not laid out yet (a
    hidden one is laid out when shown), or its width follows its content."""
    width_rule = widget.styles.width
    if width_rule is not None and width_rule.is_auto:
        widget.update(content)
        return
    if not widget.display:
        widget.update(content, layout=False)
        widget.clear_cached_dimensions()
        return
    width = widget.content_region.width
    rules: Any = widget.styles  # (what Textual's own `get_content_height` passes)
    before = widget.visual.get_height(rules, width) if width > 0 else None
    widget.update(content, layout=False)
    if before is None or widget.visual.get_height(rules, width) != before:
        widget.clear_cached_dimensions()
        widget.refresh(layout=True)


__all__ = ["update_static"]
