"""SeanceFooter: Textual's Footer that drops its least important keys when the terminal is narrow.

Textual's footer lays every shown binding out in one row and cuts what does not fit, so at 80
columns the last keys (the F1 help hint among them) fall off the edge.  This footer keeps
Textual's look and order, and hides keys by `priority` (most important first; a key not in
the list counts as least important) until the rest fit beside the command-palette key.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.widgets import Footer
from textual.widgets._footer import FooterKey  # the key widgets Footer composes (no public name)


def key_width(key: FooterKey) -> int:
    """The cells a footer key takes (non-compact): ` key ` then `description ` (FooterKey's padding)."""
    width = cell_len(key.key_display) + 2
    return width + cell_len(key.description) + 1 if key.description else width


def keys_to_hide(widths: Sequence[tuple[str, int]], priority: Sequence[str], room: int) -> set[str]:
    """The actions to hide so the rest fit in `room` cells: least important first."""
    rank = {action: index for index, action in enumerate(priority)}
    total = sum(width for _, width in widths)
    hidden: set[str] = set()
    for action, width in sorted(widths, key=lambda item: -rank.get(item[0], len(priority))):
        if total <= room:
            break
        hidden.add(action)
        total -= width
    return hidden


class SeanceFooter(Footer):
    """A `Footer` whose keys give way by priority at narrow widths (the first ones stay longest)."""

    def __init__(self, priority: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.priority = tuple(priority)

    def on_resize(self) -> None:
        self.fit_keys()

    def on_mount(self) -> None:  # (Textual runs Footer's own on_mount too: handlers run down the MRO)
        self.call_after_refresh(self.fit_keys)

    async def recompose(self) -> None:
        """Textual recomposes the footer whenever the bindings change: fit the new keys again."""
        await super().recompose()
        self.fit_keys()

    def fit_keys(self) -> None:
        """Show the most important keys that fit beside the command-palette key, hide the rest."""
        keys = [key for key in self.query(FooterKey) if not key.has_class("-command-palette")]
        palette = sum(key_width(key) for key in self.query(FooterKey) if key.has_class("-command-palette"))
        widths = [(key.action, key_width(key)) for key in keys]
        hidden = keys_to_hide(widths, self.priority, self.size.width - palette)
        for key in keys:
            key.display = key.action not in hidden
