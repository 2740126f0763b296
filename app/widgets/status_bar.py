"""The one-line status under the session list: scope, sort, filters, counts, progress, errors.

It renders state the screen owns; the screen sets the reactives.  A message (an error such as
an invalid regex or an unreadable root, or a notice) replaces nothing: it is appended in its
own colour so the counts stay visible.  A line wider than the terminal drops the parts needed
least (`KEEP`) rather than its end, where the message is.
"""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

from seance.app.paths import stylesheet
from seance.app.rows import sort_label
from seance.core.text import display_text


class StatusBar(Widget):
    """Scope · sort · filters · N sessions · indexing n/m · N selected · N new · message."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status-bar--scope",
        "status-bar--dim",
        "status-bar--error",
        "status-bar--notice",
        "status-bar--new",
    }

    DEFAULT_CSS = stylesheet("status_bar.tcss")

    scope: reactive[str] = reactive("project")
    sort: reactive[str] = reactive("threaded")
    searching: reactive[bool] = reactive(False)  # a query ranks the rows: the sort in effect may differ
    skipped: reactive[int] = reactive(0)  # files the refresh did not list (`skipped_hint` says how to see them)
    skipped_hint: str = "alt+s"
    named_only: reactive[bool] = reactive(False)
    shown: reactive[int] = reactive(0)
    total: reactive[int] = reactive(0)
    progress: reactive[tuple[int, int] | None] = reactive(None)
    listing: reactive[bool] = reactive(False)  # (not `loading`: that is Widget's spinner overlay)
    new_count: reactive[int] = reactive(0)
    selected: reactive[int] = reactive(0)  # rows selected for a bulk delete
    message: reactive[str] = reactive("")
    message_is_error: reactive[bool] = reactive(False)

    def show_message(self, text: str, *, error: bool = False) -> None:
        """Show a one-line message (errors in the error colour) until the next one; it often
        names a path or a title, so it is sanitised here, the bar's one way in."""
        self.message_is_error = error
        self.message = display_text(text)

    def render(self) -> Content:
        parts = self._parts()
        room = self.size.width
        while room and len(parts) > 1 and _width(parts) > room:  # the least needed part gives way
            parts.remove(min(parts, key=lambda part: part[0]))
        separator = Content.styled(" · ", self.get_visual_style("status-bar--dim"))
        return separator.join(content for _, content in parts)

    def _parts(self) -> list[tuple[int, Content]]:
        """The line's parts in their order, each with how much it is needed (`KEEP`): a narrow
        terminal (80 columns, a query ranking the rows) cut the line's end, and with it the
        message that says why ("invalid query: …", "Cannot delete the currently active session")."""
        dim = self.get_visual_style("status-bar--dim")
        scope_style = self.get_visual_style("status-bar--scope")
        parts: list[tuple[int, Content]] = []
        current, other = ("◉", "○") if self.scope == "project" else ("○", "◉")
        parts.append(
            (
                KEEP["scope"],
                Content.assemble(
                    (f"{current} Current Folder", scope_style if self.scope == "project" else dim),
                    (" | ", dim),
                    (f"{other} All", scope_style if self.scope == "all" else dim),
                ),
            )
        )
        parts.append((KEEP["sort"], Content.styled(f"Sort: {sort_label(self.sort, self.searching)}", dim)))
        name = ("named", "Named") if self.named_only else ("name", "All")  # (Named: the only sign of Ctrl+N)
        parts.append((KEEP[name[0]], Content.styled(f"Name: {name[1]}", dim)))
        if self.listing:
            parts.append((KEEP["count"], Content.styled("Loading…", dim)))
        else:
            count = f"{self.shown:,}" if self.shown == self.total else f"{self.shown:,} of {self.total:,}"
            sessions = f"{count} session{'' if self.total == 1 and self.shown == 1 else 's'}"
            parts.append((KEEP["count"], Content.styled(sessions, dim)))
        if self.skipped:
            parts.append((KEEP["skipped"], Content.styled(f"{self.skipped:,} skipped ({self.skipped_hint})", dim)))
        if self.progress is not None:
            done, total = self.progress
            parts.append((KEEP["progress"], Content.styled(f"indexing {done:,}/{total:,}", dim)))
        new_style = self.get_visual_style("status-bar--new")
        if self.selected:
            parts.append((KEEP["selected"], Content.styled(f"{self.selected:,} selected", new_style)))
        if self.new_count:
            parts.append((KEEP["new"], Content.styled(f"↑ {self.new_count} new", new_style)))
        if self.message:
            error = self.message_is_error
            style = self.get_visual_style("status-bar--error" if error else "status-bar--notice")
            parts.append((KEEP["error" if error else "notice"], Content.styled(self.message, style)))
        return parts


KEEP = {
    "error": 10,
    "count": 9,
    "scope": 8,
    "notice": 7,
    "selected": 6,
    "new": 5,
    "named": 4,
    "progress": 3,
    "sort": 2,
    "skipped": 1,
    "name": 0,
}
"""How much each part of the status line is needed: the lowest gives way first when the line
is wider than the terminal.  An error goes last (it says why a key did nothing); a notice
("Pinned …", "Copied …", which stays until the next message) before the scope.  "Name: Named"
(Ctrl+N hides the unnamed sessions, and nothing else says so) stays longer than the sort;
"Name: All" says nothing the user did."""

SEPARATOR_CELLS = 3  # " · "


def _width(parts: list[tuple[int, Content]]) -> int:
    return sum(content.cell_length for _, content in parts) + SEPARATOR_CELLS * (len(parts) - 1)
