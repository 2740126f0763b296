"""SeanceFooter: Textual's Footer that drops its least important keys when the terminal is narrow.

Textual's footer lays every shown binding out in one row and cuts what does not fit, so at 80
columns the last keys (the F1 help hint among them) fall off the edge.  This footer keeps
Textual's look and order, and hides keys by `priority` (most important first; a key not in
the list counts as least important) until the rest fit beside the command-palette key.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.screen import Screen
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
        self._recompose_pending = False  # see `bindings_changed`
        self._shown: tuple[object, ...] | None = None  # `_keys_to_show()` when the keys were composed

    def on_resize(self) -> None:
        self.fit_keys()

    def on_mount(self) -> None:  # (Textual runs Footer's own on_mount too: handlers run down the MRO)
        self.call_after_refresh(self.fit_keys)

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Textual's footer recomposes after the next refresh for every change of the bindings
        (eight before the picker's first rows were drawn, each remounting every key): here one
        recompose is pending at a time, and it reads the bindings when it runs, so it shows
        every change made before it."""
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._recompose_pending:
            self._recompose_pending = True
            self.call_after_refresh(self._recompose_now)

    async def _recompose_now(self) -> None:
        """Recompose, unless the keys to show are the ones shown (most changes of the bindings
        change no key: Textual would remount every key all the same)."""
        self._recompose_pending = False
        if not self.is_attached:  # gone meanwhile (Textual's recompose would not run either)
            return
        if self._shown is None or self._shown != self._keys_to_show():
            await self.recompose()

    def _keys_to_show(self) -> tuple[object, ...]:
        """What `compose` makes its keys of: the screen's active bindings (each key's binding,
        whether enabled, its tooltip), and the footer's own switches."""
        bindings = self.screen.active_bindings.items()
        active = tuple((key, binding, enabled, tooltip) for key, (_node, binding, enabled, tooltip) in bindings)
        return (active, self.compact, self.show_command_palette, self.combine_groups)

    def compose(self) -> ComposeResult:
        """Textual's keys, each made with the footer's `compact` already: a `FooterKey` starts
        compact (its own default) and takes the footer's value only once mounted, so each key
        of each composition restyled itself twice (-compact added, then removed: ~30 ms of a
        launch's CPU)."""
        self._shown = self._keys_to_show() if self._bindings_ready else None
        for widget in super().compose():
            # Only the keys bound to the footer's `compact` (`data_bind`): the palette key is not,
            # and stays compact as Textual draws it.
            if isinstance(widget, FooterKey) and "compact" in (getattr(widget, "_reactive_connect", None) or {}):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

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
