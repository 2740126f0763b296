"""Screens that leave no painted lines behind once they are gone.

Textual memoises `StylesCache.get_inner_outer` with `functools.lru_cache` on the method
(textual 8.2; Textual issue #6665): its keys hold the `StylesCache` of each of the last 1024
widgets that painted, and with it the lines that widget last painted, long after the widget
has gone.  A host pushing the picker again and again on one Catalog grew by 1.4 MB resident
per push (some twenty widgets' lines each time) until about fifty pushes had filled the cache:
+70 MB on a 120×30 terminal, more on a bigger one; seance's own app the same with every tree,
help or dialog it opened and closed.  As a seance screen is pruned (dismissed, popped,
removed), `ReleasesLines` empties its widgets' line caches: what Textual's cache keeps of
them is then an empty shell each.  Nothing of the host's is touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from textual.messages import Prune
from textual.widget import Widget


def release_lines(widgets: Iterable[Widget]) -> None:
    """Empty the painted-line caches of `widgets`, which are going (painted again if not)."""
    for widget in widgets:
        widget._styles_cache.clear()


class ReleasesLines:
    """A screen mixin: as the screen is pruned, its widgets' painted lines go with it."""

    async def on_prune(self, event: Prune) -> None:
        """Before the screen's widgets close: Textual calls each class's handler in turn, and
        `Widget.on_prune` (its own) then closes the screen."""
        release_lines(cast(Widget, self).walk_children(Widget, with_self=True))
