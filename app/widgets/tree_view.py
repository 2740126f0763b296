"""TreeView: a virtual (Line API) view of a `TreeModel` — only the visible lines are rendered.

The model (pure, in `seance.app.tree_model`) decides which entries are visible and how their
prefixes look; this widget draws the lines in view, moves the cursor and posts
`Highlighted` / `Selected`.  Opening or scrolling a 20,000-entry session costs the rows on
screen, not the session's size.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.content import Content
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.style import Style

from seance.app.paths import stylesheet
from seance.app.tree_model import Row, TreeModel
from seance.core.text import display_text

# Summary kind -> (component class of its prefix, component class of its text).
_KIND_STYLES: dict[str, tuple[str | None, str | None]] = {
    "user": ("tree-view--user", None),
    "assistant": ("tree-view--assistant", None),
    "error": ("tree-view--assistant", "tree-view--error"),
    "tool": (None, "tree-view--dim"),
    "bash": (None, "tree-view--dim"),
    "custom": ("tree-view--custom", None),
    "compaction": (None, "tree-view--compaction"),
    "branch": ("tree-view--branch", None),
    "dim": (None, "tree-view--dim"),
    "other": (None, "tree-view--dim"),
}
_MUTED_TEXTS = frozenset({"(aborted)", "(no content)"})


def _cap_depth(prefix: str, fold: str, width: int) -> tuple[str, str]:
    """Keep room for the text in deep trees: older levels fold into a leading `…` (as omp does).

    At least max(24, width / 2) columns stay for the entry; the prefix is cut at whole levels
    (3 columns each) so the remaining connectors and gutters still line up.
    """
    room = width - 2 - len(fold) - max(24, width // 2)
    if len(prefix) <= room:
        return prefix, fold
    levels = max(0, room // 3 - 1)
    return "…  " + (prefix[-levels * 3 :] if levels else ""), fold


class TreeView(ScrollView, can_focus=True):
    """Scrollable, virtual list of the visible rows of a session tree."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False, tooltip="move (wraps)"),
        Binding("down", "cursor_down", "Down", show=False, tooltip="move (wraps)"),
        # pi 0.73.1: ←/→ page (its editor's cursorLeft/Right, so Ctrl+B/Ctrl+F too), Ctrl+←/→ and Alt+←/→ fold.
        Binding("pageup,left,ctrl+b", "page_up", "Page up", show=False, tooltip="page up"),
        Binding("pagedown,right,ctrl+f", "page_down", "Page down", show=False, tooltip="page down"),
        Binding("home", "first", "First", show=False, tooltip="first / last entry"),
        Binding("end", "last", "Last", show=False, tooltip="first / last entry"),
        Binding(
            "ctrl+left,alt+left",
            "fold_or_up",
            "Fold/branch ↑",
            key_display="^←",
            tooltip="fold, or jump up to the branch start",
        ),
        Binding(
            "ctrl+right,alt+right",
            "unfold_or_down",
            "Unfold/branch ↓",
            key_display="^→",
            tooltip="unfold, or jump down to the next branch point",
        ),
        Binding("enter", "select", "Resume here", tooltip="resume at this entry"),
    ]

    DEFAULT_CSS = stylesheet("tree_view.tcss")

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "tree-view--cursor",
        "tree-view--cursor-marker",
        "tree-view--guide",
        "tree-view--fold",
        "tree-view--active",
        "tree-view--label",
        "tree-view--user",
        "tree-view--assistant",
        "tree-view--error",
        "tree-view--custom",
        "tree-view--compaction",
        "tree-view--branch",
        "tree-view--dim",
        "tree-view--empty",
    }

    class TreeViewMessage(Message):
        """A message from the tree view; `control` is the view."""

        def __init__(self, tree_view: TreeView) -> None:
            super().__init__()
            self.tree_view = tree_view

        @property
        def control(self) -> TreeView:
            return self.tree_view

    class Changed(TreeViewMessage):
        """The rows or the cursor position changed (a status line may want to say so)."""

    class EntryMessage(TreeViewMessage):
        """Something happened to one entry (as Textual's `OptionList.OptionMessage`)."""

        def __init__(self, tree_view: TreeView, entry_id: str | None) -> None:
            super().__init__(tree_view)
            self.entry_id = entry_id

    class Highlighted(EntryMessage):
        """The cursor moved to another entry."""

    class Selected(EntryMessage):
        """Enter (or a double click) on an entry."""

    class RowsDrawn(TreeViewMessage):
        """A model's first lines were drawn (once per `set_model`): work that would slow the
        first frame down (a worker holding the GIL) can start now."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`clock`: "now" for label times (today's show only the time, as in pi)."""
        super().__init__(name=name, id=id, classes=classes)
        self.clock = clock or (lambda: datetime.now(UTC))
        self.model: TreeModel | None = None
        self._generation = 0
        self._lines: LRUCache[tuple[int, bool, int, int], Strip] = LRUCache(512)
        self._highlighted: str | None = None
        self._seen_version = -1
        self._drawn_told = False  # (whether RowsDrawn was posted for the model)

    # -- model ----------------------------------------------------------------------------

    def set_model(self, model: TreeModel) -> None:
        """Show `model` (cursor where the model has it, normally on the session's leaf)."""
        self.model = model
        self._drawn_told = False
        self.rows_changed()

    def sync(self) -> None:
        """Catch up with the model after any change (rows, labels or only the cursor)."""
        if self.model is not None and self.model.version != self._seen_version:
            self.rows_changed()
        else:
            self._cursor_moved()

    def on_unmount(self) -> None:
        """Let go of the model as the view goes (see `SessionTreeScreen.on_unmount`)."""
        self.model = None
        self._lines.clear()

    def redraw(self) -> None:
        """Draw the rows in view again, where they are (a provisional summary has its call)."""
        self._lines.clear()
        self.refresh()

    def rows_changed(self) -> None:
        """The model's rows or labels changed: drop cached lines and redraw."""
        self._seen_version = self.model.version if self.model else -1
        self._generation += 1
        self._lines.clear()
        rows = len(self.model.rows) if self.model else 0
        self.virtual_size = Size(self.scrollable_content_region.width, max(rows, 2))
        self._cursor_moved(center=True)
        self.refresh()

    def _cursor_moved(self, center: bool = False) -> None:
        model = self.model
        if model is None:
            return
        if model.rows:
            self.scroll_to_region(
                Region(0, model.cursor, 1, 1), animate=False, immediate=True, center=center, force=True
            )
        self.refresh()
        self.post_message(self.Changed(self))
        if model.selected_id != self._highlighted:
            self._highlighted = model.selected_id
            self.post_message(self.Highlighted(self, self._highlighted))

    @property
    def page_height(self) -> int:
        return max(1, self.scrollable_content_region.height)

    # -- actions --------------------------------------------------------------------------

    def _act(self, operation: Callable[[TreeModel], object]) -> None:
        if self.model is not None:
            operation(self.model)
            self.sync()

    def action_cursor_up(self) -> None:
        self._act(lambda model: model.move(-1))

    def action_cursor_down(self) -> None:
        self._act(lambda model: model.move(1))

    def action_page_up(self) -> None:
        self._act(lambda model: model.page(-1, self.page_height))

    def action_page_down(self) -> None:
        self._act(lambda model: model.page(1, self.page_height))

    def action_first(self) -> None:
        self._act(TreeModel.home)

    def action_last(self) -> None:
        self._act(TreeModel.end)

    def action_fold_or_up(self) -> None:
        self._act(TreeModel.fold_or_up)

    def action_unfold_or_down(self) -> None:
        self._act(TreeModel.unfold_or_down)

    def action_select(self) -> None:
        if self.model is not None and self.model.selected_id is not None:
            self.post_message(self.Selected(self, self.model.selected_id))

    def on_click(self, event: events.Click) -> None:
        if self.model is None or not self.model.rows:
            return
        index = self.scroll_offset.y + event.y
        if 0 <= index < len(self.model.rows):
            self.model._select(index)
            self._cursor_moved()
            if event.chain >= 2:
                self.action_select()

    # -- rendering ------------------------------------------------------------------------

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()
        self.refresh()

    def on_resize(self) -> None:
        self._lines.clear()
        if self.model is not None:
            self.virtual_size = Size(self.scrollable_content_region.width, max(len(self.model.rows), 2))

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        model = self.model
        index = self.scroll_offset.y + y
        base = self.get_visual_style()
        if model is None:
            return Strip.blank(width, base.rich_style)
        if not self._drawn_told:  # (posted now, handled after this frame is composed)
            self._drawn_told = True
            self.post_message(self.RowsDrawn(self))
        if not model.rows:
            return self._empty_line(index, width, base)
        if index >= len(model.rows):
            return Strip.blank(width, base.rich_style)
        selected = index == model.cursor
        key = (index, selected, width, self._generation)
        strip = self._lines.get(key)
        if strip is None:
            style = self.get_visual_style("tree-view--cursor") if selected else base
            content = self.row_content(model.rows[index], selected).truncate(width, ellipsis=True)
            strip = Strip(content.render_segments(style)).extend_cell_length(width, style.rich_style).crop(0, width)
            self._lines[key] = strip
        return strip

    def _part(self, component: str) -> Style:
        return self.get_visual_style(component, partial=True)

    def row_content(self, row: Row, selected: bool) -> Content:
        """One row as Content: cursor, tree prefix, fold marker, active dot, label, summary."""
        model = self.model
        assert model is not None
        prefix, fold = _cap_depth(*model.prefix(row), width=self.scrollable_content_region.width)
        parts: list[tuple[str, Style] | str] = [
            ("› ", self._part("tree-view--cursor-marker")) if selected else "  ",
            (prefix, self._part("tree-view--guide")),
        ]
        if fold:
            parts.append((fold, self._part("tree-view--fold")))
        if row.active:
            parts.append(("• ", self._part("tree-view--active")))
        label = model.tree.labels.get(row.id)
        if label:
            parts.append((f"[{display_text(label)}] ", self._part("tree-view--label")))
            if when := model.label_time(row.id, self.clock()):
                parts.append((when, self._part("tree-view--dim")))
        summary = model.summary(row.id, waits=False)  # (never a long read back here: `calls_coming`)
        prefix_class, text_class = _KIND_STYLES.get(summary.kind, (None, None))
        if summary.prefix:
            parts.append((summary.prefix, self._part(prefix_class)) if prefix_class else summary.prefix)
        if summary.text in _MUTED_TEXTS:
            text_class = "tree-view--dim"
        parts.append((summary.text, self._part(text_class)) if text_class else summary.text)
        return Content.assemble(*parts)

    def _empty_line(self, index: int, width: int, base: Style) -> Strip:
        model = self.model
        assert model is not None
        if model.query:
            lines = [
                f'No entries match search "{display_text(model.query)}"',
                "Press Backspace or Esc to clear the search",
            ]
        elif model.tree.by_id and model.filter_mode != "all":
            lines = [
                f"{len(model.tree.by_id):,} entries hidden by the current filter ({model.filter_mode})",
                "Press Ctrl+A to show all, Ctrl+D for default",
            ]
        else:
            lines = ["No entries found"]
        text = lines[index] if index < len(lines) else ""
        content = Content.styled(f"  {text}", self._part("tree-view--empty")).truncate(width, ellipsis=True)
        return Strip(content.render_segments(base)).extend_cell_length(width, base.rich_style).crop(0, width)
