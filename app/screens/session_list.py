"""SessionPickerScreen: pi's `/resume` picker, made instant, searchable, live and embeddable.

The screen is wiring.  Its state (scope, sort, filters, query, the loaded summaries, the
live merge, the undo stack) is a `PickerModel` (app/picker_model.py, no Textual); the
screen applies to it what its workers post (app/messages.py): the catalog's quick 4 KB
listing first (rows appear at once), then the exact index refresh with progress, full-text
search merged into the ranking, live changes from the `RootWatcher` (app/watcher.py, a thread
of its own, joined on unmount), and the outcome of a delete, undo or rename (`Catalog.trash` /
`restore` / `rename`).  Workers and the watcher never touch a widget.  The model's scope,
sort, filter and "new" count are published as reactives the status bar is bound to.  It
dismisses with a `PickResult` (resume / fork) or None.

Everything it needs comes in through `__init__`, so a host agent's Textual app can
`push_screen(SessionPickerScreen(catalog, cwd=...), callback)` or
`await push_screen_wait(...)`; CSS travels with the screen (its `CSS`, scoped by Textual) and uses theme
variables only.  Keys the picker needs from the input (Tab, Enter, Home/End, Ctrl+D, Ctrl+C,
Esc) are priority bindings of the screen; a host's own priority bindings still win.  Those
that act on the list decide after the characters typed before them and on the rows of that
query (app/screens/key_order.py): "zebra" then Enter in one burst resumes zebra's hit.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.geometry import Size
from textual.reactive import Reactive, var
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import get_current_worker

from seance.core.catalog import Cancelled, SessionSource, in_project
from seance.core.listing import SORTS, ChildMode
from seance.core.marks import MarkStore
from seance.core.model import SessionSummary
from seance.core.search import QueryError, SearchCache, parse_query
from seance.core.session import SessionError
from seance.core.text import display_text

from ..commands import PickerCommands
from ..export_flow import EXPORT_HELP, ExportDone, ask_and_export, show_export_notice
from ..line_caches import ReleasesLines
from ..messages import (
    IndexedAgain,
    LoadFailed,
    LoadProgress,
    LongLivedDataLoaded,
    Renamed,
    SearchDone,
    SessionsChanged,
    SessionsLoaded,
    Skipped,
    TextHealed,
    TextUnindexed,
    Watching,
    WriteFailed,
)
from ..paths import stylesheet
from ..picker_model import EMPTY, PickerModel, RowsView, Scope
from ..results import PickResult
from ..rows import RowSet, SessionRow
from ..watcher import RootWatcher
from ..widgets.footer import SeanceFooter
from ..widgets.ordered_input import OrderedInput, one_line
from ..widgets.session_list import SessionList, utc_now
from ..widgets.status_bar import StatusBar
from .confirm import ConfirmScreen
from .copy import CopyChoice, CopyScreen
from .deleting import DeleteActions, notify_failure
from .first_paint import FirstPaint
from .help import HelpScreen, help_rows, key_label
from .key_order import KeyOrder, in_key_order
from .marks import MARK_BINDINGS, MarkActions
from .missing_cwd import resume_checked
from .prompt import rename_prompt
from .row_flow import RowMaking
from .search_flow import FREEZE_HITS, SearchFlow
from .skipped import SKIPPED_KEY, SkippedScreen

if TYPE_CHECKING:
    pass

NARROW = 100  # below this many columns the preview hides itself
SEARCH_DEBOUNCE = 0.03  # a search waits this long for the next key while keys come fast
TYPING_BURST = 0.15  # a key within this long of the previous one is part of a burst
QUICK_FIRST_FILES = 300  # more files than this to index: paint the quick listing first
ROWS_AHEAD_DELAY = 0.3  # after an exact listing, the other scope's rows are made this much later
FIRST_SCREEN_FILES = 200  # on a cold index, the newest files are shown before the full quick listing
UNINDEXED_RETRY_S = 15.0  # sessions the index lost and that could not be indexed again are tried again after this

CHILDREN_HELP = "child sessions (forks, subagents): hidden → threaded → flat"
SEARCH_HELP = 'search: words, "a phrase", re:regex, !not, label:x, tag:x, is:pinned'

FOOTER_PRIORITY = ("help", "select", "open", "tree", "toggle_scope", "cycle_sort", "delete", "toggle_preview")
"""The footer's keys, most important first: at narrow widths the others (and the rest) give way."""

RESUME_HELP = "resume the selected session"
HELP_HELP = "this help (? when the query is empty)"
OPEN_HELP = "open the selected session's tree (resume from there)"
SELECT_HELP = "select / deselect the row for ctrl+d (Space: empty query)"
SELECT_ALL_HELP = "select every row matching the query (again: deselect them)"

__all__ = ["EMPTY", "PickerOptions", "SessionPickerScreen"]  # EMPTY: the model's, re-exported for tests


@dataclass(frozen=True)
class PickerOptions:
    """How the picker behaves in its host.

    `enter`: what Enter does — "resume" dismisses with the session (the `/resume` contract),
    "tree" opens the tree view first (the standalone browser).  `open_session`: the session
    the host has open (protected from deletion).  `watch`: follow the roots live.
    `children`: how child sessions (forks, subagents) are listed at first — "threaded" (under
    their parent: pi's picker), "hidden" or "flat"; Alt+C cycles.  `save_children`: called
    (in a worker) with the mode Alt+C chose, to remember it (the `seance` command saves it in
    its settings file; None: a host's choice is not saved).
    """

    watch: bool = True
    show_preview: bool = True
    open_session: str | None = None
    enter: Literal["resume", "tree"] = "resume"
    rename: bool = True
    children: ChildMode = "threaded"
    save_children: Callable[[ChildMode], object] | None = None
    confirm_missing_cwd: bool = True  # ask, as pi does, before resuming a session whose cwd is gone


def children_notice(mode: ChildMode, count: int) -> str:
    """What Alt+C says: the mode, and how many child sessions it concerns."""
    sessions = f"{count} child session{'' if count == 1 else 's'}"
    if mode == "hidden":
        return f"Hidden: {sessions} (a parent's row says how many it has) · alt+c: threaded"
    if mode == "threaded":
        return f"Threaded: {sessions} under their parent · alt+c: flat"
    return f"Flat: {sessions} listed as ordinary rows · alt+c: hidden"


def _first_listed(rows: RowSet[SessionRow], paths: frozenset[str]) -> str | None:
    """Of `paths`, the one `rows` list first; None when they list none."""
    listed = [(position, path) for path in paths if (position := rows.position(path)) is not None]
    return min(listed)[1] if listed else None


class SearchInput(OrderedInput):
    """The query input: Ctrl+Z undoes edits (one step per change, clearing with Esc included);
    "?" and Space go through to the help and select bindings while the query is empty.  Its
    editing keys act in the order typed, however fast (`OrderedInput`)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+z", "undo", "Undo typing", show=False)]
    UNDO_STEPS = 200
    # Input sets its virtual size (the text's width) on every key; Textual's `virtual_size`
    # asks for a layout of the whole screen when it changes (~10 ms at 160x45: the echo's
    # frame).  The input is one line of fixed size: a repaint is all a longer text needs.
    virtual_size: Reactive[Size] = Reactive(Size(0, 0), repaint=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._history: list[str] = []
        self._undoing = True  # the initial query is no edit
        super().__init__(*args, **kwargs)
        self._undoing = False

    def watch_value(self, old: str, new: str) -> None:
        if old != new and not self._undoing:
            self._history = [*self._history[-self.UNDO_STEPS + 1 :], old]

    def action_undo(self) -> None:
        if not self._history:
            return
        self._undoing = True
        try:
            self.value = self._history.pop()
        finally:
            self._undoing = False
        self.cursor_position = len(self.value)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        if character in ("?", " ") and not self.value:  # help; select the row
            return False
        return super().check_consume_key(key, character)

    async def _on_key(self, event: events.Key) -> None:
        screen = self.screen
        if isinstance(screen, KeyOrder) and self._held_or_handed_on(screen, event):
            event.stop()  # typed once the keys waiting before it have run (key_order.py)
            event.prevent_default()
            return
        await super()._on_key(event)

    def _held_or_handed_on(self, screen: KeyOrder, event: events.Key | events.Paste) -> bool:
        """Whether the picker holds `event` behind waiting keys, or takes it from the query
        because a key typed before it covered the picker: handed on to the tree it opened
        (key_order.py), else typed nowhere (a dialog takes no key pressed before it showed,
        and the covered query is not the user's to change unseen).  False: the input takes it."""
        if not screen.is_active:  # (a new event: this one is stopped on its way back)
            pressed = ("paste", event.text) if isinstance(event, events.Paste) else (event.key, event.character)
            screen._hand_on(*pressed)
            return True
        return self.app.focused is self and screen._holds_typed_key(event)

    def _on_paste(self, event: events.Paste) -> None:
        """Hold a paste behind waiting keys; otherwise `Input._on_paste` pastes it.  Not called
        from here: Textual calls each class's own handler in turn, up the MRO, until one
        prevents the default, and Input's stops the paste without preventing it — calling it
        here too pasted every paste twice ("zebrazebra")."""
        screen = self.screen
        if isinstance(screen, KeyOrder) and self._held_or_handed_on(screen, event):
            event.stop()  # pasted once the keys waiting before it have run, as a typed key
            event.prevent_default()


class SessionPickerScreen(
    ReleasesLines,
    KeyOrder,
    DeleteActions,
    MarkActions,
    RowMaking,
    SearchFlow,
    FirstPaint,
    Screen[PickResult | None],
):
    """Search, browse and pick a session; dismisses with a `PickResult` or None on cancel."""

    CSS: ClassVar[str] = stylesheet("picker.tcss")  # scoped by Textual to this screen
    AUTO_FOCUS = "#seance-search"
    COMMANDS: ClassVar[set] = {PickerCommands}

    # The model's state as the status bar shows it (bound in `compose`, set by `_publish`).
    scope: var[str] = var("project")
    sort: var[str] = var(SORTS[0])
    searching: var[bool] = var(False)
    named_only: var[bool] = var(False)
    new_count: var[int] = var(0)

    BINDINGS: ClassVar[list[BindingType]] = [  # `tooltip` is the help text; see `help_rows`
        Binding("up", "cursor(-1)", "Up", show=False, priority=True, tooltip="move the cursor"),
        Binding("down", "cursor(1)", "Down", show=False, priority=True, tooltip="move the cursor"),
        Binding("pageup", "page(-1)", "Page up", show=False, priority=True, tooltip="move the cursor"),
        Binding("pagedown", "page(1)", "Page down", show=False, priority=True, tooltip="move the cursor"),
        Binding("home", "first", "First", show=False, priority=True, tooltip="move the cursor"),
        Binding("end", "last", "Last", show=False, priority=True, tooltip="move the cursor"),
        # Enter resumes in the picker and opens the tree in the browser: `check_action` keeps the one
        # binding of the screen's mode (footer and help show it; the other one never runs).
        Binding("enter", "select", "Resume", priority=True, tooltip=RESUME_HELP),
        Binding("enter", "open", "Open", priority=True, tooltip=OPEN_HELP),
        Binding("escape", "cancel", "Clear/cancel", show=False, priority=True, tooltip="clear the query, then cancel"),
        Binding("ctrl+c", "quit", "Cancel", show=False, priority=True, tooltip="cancel"),
        Binding("tab", "toggle_scope", "Scope", priority=True, tooltip="current folder ↔ all projects"),
        Binding("ctrl+s", "cycle_sort", "Sort", priority=True, tooltip="sort: threaded, recent, created, relevance"),
        Binding("ctrl+n", "toggle_named", "Named", priority=True, tooltip="named sessions only"),
        Binding("alt+c", "cycle_children", "Children", show=False, priority=True, tooltip=CHILDREN_HELP),
        # Not Ctrl+P (pi's key): every Textual App owns it (the command palette).  seance's own app
        # gives it back through its keymap (`SeanceApp`, id "seance.picker.paths").
        Binding("f4", "toggle_paths", "Paths", priority=True, tooltip="show file paths", id="seance.picker.paths"),
        Binding(
            "ctrl+d", "delete", "Delete", priority=True, tooltip="move the session (or the selected ones) to the Trash"
        ),
        # Space and ? act only on an empty query: priority bindings outrun the Input in a real
        # terminal, so `key_or_type` types the character itself once the query has text.
        Binding("space", "key_or_type(' ', 'toggle_select')", "Select", show=False, priority=True, tooltip=SELECT_HELP),
        Binding("ctrl+space", "toggle_select", "Select", show=False, priority=True, tooltip=SELECT_HELP),
        Binding("ctrl+@", "toggle_select", "", show=False, priority=True),  # ctrl+space as a terminal sends it (NUL)
        Binding("alt+a", "select_all", "Select all", show=False, priority=True, tooltip=SELECT_ALL_HELP),
        Binding(
            "ctrl+z",
            "undo_delete",
            "Undo",
            show=False,
            priority=True,
            tooltip="undo the last delete (else undo typing)",
        ),
        Binding("ctrl+r", "rename", "Rename", priority=True, tooltip="rename the session"),
        Binding("ctrl+t", "tree", "Tree", priority=True, tooltip="tree of the session (resume at any entry)"),
        Binding(
            "ctrl+y", "copy", "Copy", show=False, priority=True, tooltip="copy the resume command, the id or the path"
        ),
        Binding("ctrl+f", "fork", "Fork", show=False, priority=True, tooltip="fork the session (pick it as a fork)"),
        Binding("ctrl+o,f3", "toggle_preview", "Preview", priority=True, tooltip="show or hide the preview"),
        Binding("alt+i", "toggle_stats", "Stats", show=False, priority=True, tooltip="show or hide session stats"),
        Binding("f1", "help", "Help", priority=True, tooltip=HELP_HELP),
        Binding("question_mark", "key_or_type('?', 'help')", "Help", show=False, priority=True, tooltip=HELP_HELP),
        Binding("alt+e", "export", "Export", show=False, priority=True, tooltip=EXPORT_HELP),
        Binding(
            SKIPPED_KEY,
            "show_skipped",
            "Skipped",
            show=False,
            priority=True,
            tooltip="the files that were skipped, and why",
        ),
        *MARK_BINDINGS,  # alt+p, alt+t (screens/marks.py)
    ]

    def __init__(
        self,
        catalog: SessionSource,
        *,
        cwd: str | os.PathLike[str] | None = None,
        scope: Scope = "project",
        query: str = "",
        clock: Callable[[], datetime] = utc_now,
        options: PickerOptions | None = None,
        marks: MarkStore | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.catalog = catalog
        self.cwd = str(Path(cwd or os.getcwd()).resolve())
        self.options = options or PickerOptions()
        self.marks_store = marks if marks is not None else MarkStore()  # pins and tags (the user data dir)
        self.clock = clock
        query = one_line(query)  # (the search box holds no control: its text is the query)
        self.model = PickerModel(self.cwd, scope=scope, query=query, children=self.options.children)
        self.show_paths = False
        self.preview_wanted = (
            self.options.show_preview
        )  # the setting (this screen's lifetime; nothing is saved to disk)
        self._preview_here: tuple[int, bool] | None = None  # Ctrl+O below NARROW: (width, shown), that width only
        self._initial_query = query
        self._loading: set[str] = set()
        self._generation = 0
        self._search_cache = SearchCache()  # the folded sessions, kept from keystroke to keystroke
        self._last_query_change = -math.inf  # monotonic time of the last change of the query
        self._debounce = 0.0  # how long the next search waits for another key
        self._freeze_after_search = False
        self._preview_key: tuple | None = None  # what the preview shows: path, file stamp and query
        self.watcher: RootWatcher | None = None  # follows the roots while the screen is mounted
        self.watching = False  # the file watcher is set up: changes from now on are seen
        self._query_error: str | None = None  # the status error the query caused (not a load's)
        self.skipped_files: list[tuple[Path, str]] = []  # what the last refresh did not list, and why
        self._indexing_again: frozenset[str] | None = None  # the sessions `_index_again_worker` indexes
        self._not_indexable: set[str] = set()  # those it could not index (not tried again: `_text_unindexed`)
        self._not_indexable_at = 0.0  # when it last could not (tried again `UNINDEXED_RETRY_S` later)
        self._gone_unindexed: set[str] = set()  # listed, but their files are gone: no search misses them
        self._unindexed_note: str | None = None  # the status message that says the search is incomplete
        self._unindexed_said: str | None = None  # what was last said of it (status line or notice)
        self._rows_listing: tuple[str, bool, str] | None = None  # `_listing_key` of the rows shown
        self._rows_plain = False  # they are the plain listing (no query's hits): an invalid query keeps it live
        self._publish()

    # -- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield SearchInput(
            self._initial_query,
            placeholder='Search sessions… (words, "phrase", re:regex, label:x)',
            id="seance-search",
            select_on_focus=False,
        )
        with Horizontal(id="seance-body"):
            yield SessionList(clock=self.clock, id="seance-sessions")
            yield from self._compose_preview()
        status = StatusBar(id="seance-status").data_bind(
            SessionPickerScreen.scope,
            SessionPickerScreen.sort,
            SessionPickerScreen.searching,
            SessionPickerScreen.named_only,
            SessionPickerScreen.new_count,
        )
        status.skipped_hint = key_label(SKIPPED_KEY)
        yield status
        yield SeanceFooter(FOOTER_PRIORITY)

    def _compose_preview(self) -> ComposeResult:
        from ..widgets.context_preview import ContextPreview

        yield ContextPreview(stats=True, id="seance-preview")

    @property
    def session_list(self) -> SessionList:
        return self.query_one(SessionList)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def search_input(self) -> Input:
        return self.query_one("#seance-search", Input)

    def on_mount(self) -> None:
        self._update_preview_visibility()
        self.load_marks()
        self._paint_prefetched()  # first_paint.py: the first frame has rows
        self._load(self.model.scope)
        if self.options.watch:
            self._watch_after_first_frame()  # first_paint.py

    def on_unmount(self) -> None:
        self._stop_waiting()  # first_paint.py
        self._close_search_thread()  # search_flow.py
        if self.watcher is not None:  # ends the OS watch and joins seance's watcher thread
            self.watcher.stop()

    def _publish(self) -> None:
        """The model's scope, sort, filter and "new" count, to the reactives the status bar shows."""
        self.scope = self.model.scope
        self.sort = self.model.sort
        self.searching = self.model.searching
        self.named_only = self.model.named_only
        self.new_count = self.model.new_count

    def on_resize(self) -> None:
        self._update_preview_visibility()

    # -- loading -------------------------------------------------------------------------

    def _load(self, scope: str) -> None:
        """Start listing `scope`: the quick listing, then the exact refresh."""
        self._generation += 1
        self._loading.add(scope)
        if self.status.message_is_error and self.status.message != self._query_error:
            self.status.show_message("")  # a new load: the last one's failure no longer stands
        self.status.listing = scope not in self.model.summaries
        self._load_worker(scope, self._generation, self._listed_exactly(scope))

    @work(thread=True, exclusive=True, group="load", exit_on_error=False, description="list sessions")
    def _load_worker(self, scope: str, generation: int, listed: bool) -> None:
        """First rows as fast as possible, then the exact refresh of both scopes.

        A warm index paints the project from its stored rows first (first_paint.py), then the
        exact refresh replaces them; if the refresh finds many files to read (a cold index), it
        is stopped at once, the quick 4 KB listing paints the rows, and the refresh resumes (it
        keeps what it indexed).  `listed`: the scope has rows already (a reload).
        """
        worker = get_current_worker()
        last = [0.0]
        painted = [listed]
        stop_early = [False]

        def progress(done: int, total: int) -> None:
            if not painted[0] and total - done > QUICK_FIRST_FILES:
                stop_early[0] = True
            now = time.monotonic()
            if now - last[0] > 0.1 or done == total:
                last[0] = now
                self.post_message(LoadProgress(done, total, generation))

        def cancel() -> bool:
            return worker.is_cancelled or stop_early[0]

        try:
            if not listed:
                self._post_stored(scope, generation)  # first_paint.py
            try:
                everything = self.catalog.refresh(progress, cancel)
            except Cancelled:
                if worker.is_cancelled:
                    return
                first = self.catalog.first_screen(self._scope_cwd(scope), FIRST_SCREEN_FILES)
                if first:  # a cold index: the newest files' prefixes first, before the full quick listing
                    self.post_message(SessionsLoaded(scope, first, False, generation, partial=True))
                self.post_message(SessionsLoaded(scope, self.catalog.quick(self._scope_cwd(scope)), False, generation))
                painted[0], stop_early[0] = True, False
                everything = self.catalog.refresh(progress, cancel)
            if not worker.is_cancelled:  # nothing changed since the stored listings: theirs stay (rows made)
                everything = self.model.as_listed("all", everything)
                project = self.model.as_listed("project", in_project(everything, self.cwd))
                self.post_message(SessionsLoaded("all", everything, True, generation))
                self.post_message(SessionsLoaded("project", project, True, generation))
                self._report_skipped()
                self._heal_text(lambda: worker.is_cancelled)
        except Cancelled:
            return
        except Exception as error:  # an unreadable root, a broken index: say so, keep going
            self.post_message(LoadFailed(f"Failed to load sessions: {display_text(error)}", generation))

    def _heal_text(self, cancel: Callable[[], bool]) -> None:
        """The index's stored text brought up to the current extraction rules, once per index
        (`Catalog.heal_text`: ~1 s at 100,000 sessions, then one lookup): after the exact rows
        are posted, never before them.  `cancel`: the load worker's, so leaving the picker
        stops it between files (Textual waits for its thread workers at exit; pi's extension
        waits for `seance pick`); it then runs again next time.  A host's `SessionSource`
        need not have it."""
        heal = getattr(self.catalog, "heal_text", None)
        if heal is not None and (count := heal(cancel)) and not cancel():
            self.post_message(TextHealed(count))

    @on(TextHealed)
    def _text_healed(self, message: TextHealed) -> None:
        """The index's text was healed (`Catalog.heal_text`): a query's full-text hits may
        differ now (a coloured session's phrase is found), so an active search is asked
        again, its cursor kept (not a new query's jump to the top)."""
        if self.model.searching:  # its full-text hits are asked for again (the index changed)
            self._search(self.model.query, False)

    @on(TextUnindexed)
    def _text_unindexed(self, message: TextUnindexed) -> None:
        """A search found sessions this picker lists that the index holds no file of, so their
        text is not found: another process emptied the index in place (`seance index
        --rebuild`, killed or not done yet) since the listing's refresh indexed them.  They are
        indexed again in a worker (`Catalog.index_again`) and the query asked again; meanwhile,
        and for any it could not index, the status line says the search is incomplete.  One
        it could not index is tried again once the index has held it since, or a while later
        (`UNINDEXED_RETRY_S`: a lock another seance held is gone by then), never on every
        search.  Not while a listing's refresh runs: that one indexes them, then searches again."""
        if message.generation != self._rows_generation or self._loading:
            return
        gone = self._gone_unindexed
        paths = [path for path in message.paths if path not in gone] if gone else message.paths
        if not paths:
            self._show_unindexed(None)
            return
        if self._not_indexable and time.monotonic() - self._not_indexable_at > UNINDEXED_RETRY_S:
            self._not_indexable.clear()
        if self._indexing_again is None:
            missing = set(paths)
            self._not_indexable &= missing  # (indexed since by another seance: tried again if lost again)
            todo = missing - self._not_indexable
            if todo:
                self._indexing_again = frozenset(todo)
                self._index_again_worker(self._indexing_again)
        sessions = f"{len(paths)} session{'' if len(paths) == 1 else 's'}"
        if self._indexing_again is not None:
            self._show_unindexed(f"Search incomplete: {sessions} missing from the full-text index; indexing them…")
        else:
            self._show_unindexed(f"Search incomplete: {sessions} not in the full-text index", error=True)

    def _show_unindexed(self, text: str | None, *, error: bool = False) -> None:
        """Say that the search misses sessions the index lost (None: no longer say it), on
        the status line unless another message holds it (a delete's undo hint): the lasting
        one, that some could not be indexed, is then said once as a notice."""
        if text is not None:
            if self.status.message and self.status.message != self._unindexed_note:
                if error and text != self._unindexed_said:
                    self.notify(text, title="Full-text search", severity="error", markup=False)
                self._unindexed_said = text
                return
            self.status.show_message(text, error=error)
            self._unindexed_note, self._unindexed_said = self.status.message, text
        elif self._unindexed_note is not None:
            if self.status.message == self._unindexed_note:
                self.status.show_message("")
            self._unindexed_note = None

    @work(thread=True, exclusive=True, group="index-again", exit_on_error=False, description="index again")
    def _index_again_worker(self, paths: frozenset[str]) -> None:
        """`Catalog.index_again` off the UI thread, stopped between files when the picker is
        left (a host's `SessionSource` need not have it: nothing is indexed then)."""
        worker = get_current_worker()
        index_again = getattr(self.catalog, "index_again", None)
        try:
            missing = paths if index_again is None else frozenset(index_again(paths, lambda: worker.is_cancelled))
        except Exception:  # an index that failed beyond healing: they stay out, and it is said
            missing = paths
        gone = frozenset(path for path in missing if not os.path.lexists(path))  # (deleted, still listed)
        if not worker.is_cancelled:
            self.post_message(IndexedAgain(missing - gone, gone))

    @on(IndexedAgain)
    def _indexed_again(self, message: IndexedAgain) -> None:
        """The query asked again, its cursor kept: its search finds the sessions indexed, and
        says what is still missing (`_text_unindexed`)."""
        self._indexing_again = None
        if message.missing:
            self._not_indexable |= message.missing
            self._not_indexable_at = time.monotonic()
        self._gone_unindexed |= message.gone
        if self.model.searching:
            self._search(self.model.query, False)
        else:
            self._show_unindexed(None)

    def _report_skipped(self) -> None:
        """Never hide silently: say how many files or roots the refresh skipped, and why, and
        what happened to the index (rebuilt, locked, could not be written)."""
        problem = self.catalog.index_problem
        if problem:
            self.post_message(Skipped(display_text(problem), False))
        skipped = list(self.catalog.last_stats.skipped)
        roots = {str(root) for root in self.catalog.roots}
        root_problems = [(path, reason) for path, reason in skipped if str(path) in roots]
        text = ""
        if root_problems:  # a whole root unreadable is an error, named; files are counted (Alt+S lists them)
            path, reason = root_problems[0]
            text = f"skipped {display_text(path)}: {display_text(reason)}"
        self.post_message(Skipped(text, bool(root_problems), skipped))

    @on(Skipped)
    def _skipped(self, message: Skipped) -> None:
        if message.files is not None:
            self.skipped_files = message.files
            self.status.skipped = len(message.files)
        if message.text and not self.status.message:
            self.status.show_message(message.text, error=message.root_problem)

    def action_show_skipped(self) -> None:
        """Alt+S: the files the last refresh skipped, each with the reason."""
        self.app.push_screen(SkippedScreen(self.skipped_files))

    def _scope_cwd(self, scope: str) -> str | None:
        return self.cwd if scope == "project" else None

    @on(SessionsLoaded)
    def _sessions_loaded(self, message: SessionsLoaded) -> None:
        first = self.model.loaded(message.scope, message.summaries, exact=message.exact)
        if message.exact:
            self._loading.discard(message.scope)
            self.status.progress = None
            self._freeze_long_lived()
            self._freeze_after_search = True  # the first search builds the haystacks
            if not self._loading:  # both scopes listed: the other one's rows, once these are made
                self.set_timer(ROWS_AHEAD_DELAY, lambda: self._make_rows_ahead(self.model.other_view()))
        if message.scope == self.model.scope:
            if message.exact:  # search_flow.py: the first key finds the sessions folded
                self._warm_search(self.model.view(), message.scope == "all")
            self.status.listing = message.partial
            # Until the user moves, the exact listing replaces the quick one from the top.
            self._rebuild(top=first or not self.session_list.touched)

    @on(LoadProgress)
    def _load_progress(self, message: LoadProgress) -> None:
        if message.generation == self._generation:
            self.status.progress = (message.done, message.total) if message.done < message.total else None

    @on(LoadFailed)
    def _load_failed(self, message: LoadFailed) -> None:
        self.status.listing = False
        self.status.progress = None
        self._loading.clear()
        self.status.show_message(message.text, error=True)
        if not self.model.loaded_scope:
            self.model.loaded(self.model.scope, [], exact=False)
            self._rebuild(top=True)

    # -- rows ----------------------------------------------------------------------------

    def _rebuild(self, *, top: bool = False) -> None:
        """Recompute the rows for the current scope, filters, sort and query."""
        model = self.model
        self._publish()
        self.session_list.set_display(
            show_cwd=model.scope == "all", show_path=self.show_paths, empty_text=model.empty_text
        )
        if not model.searching:
            self._clear_query_error()
            self._show_unindexed(None)  # (no search: none is incomplete)
            self._rows_plain = True
            self._make_rows(model.view(plain=True), top)  # row_flow.py: off the UI thread when long
            return
        self._search(model.query, top)

    def _show_query_error(self, text: str) -> None:
        self.status.show_message(text, error=True)
        self._query_error = text

    def _clear_query_error(self) -> None:
        """Clear the status error if the query caused it; a load or skip error stays until the next load."""
        if self._query_error is not None and self.status.message == self._query_error:
            self.status.show_message("")
        self._query_error = None

    def _listing_key(self) -> tuple[str, bool, str]:
        """Which sessions rows are made from (scope, Named, child mode), whatever the query."""
        return (self.model.scope, self.model.named_only, self.model.children)

    def _set_rows(self, rows: Sequence[SessionRow], *, top: bool) -> None:
        self._rows_listing = self._listing_key()
        self._show_selection()
        rows = RowSet.of(rows)
        wanted, self._cursor_to = self._cursor_to, frozenset()  # (deleting.py: an undone delete's sessions)
        self.session_list.set_rows(rows, keep=_first_listed(rows, wanted), top=top)
        self.status.shown = len(rows)
        self.status.total = self.session_list.rows.total
        self._rows_shown(rows)  # first_paint.py
        self._release_preview()  # search_flow.py: a first page's preview waited for these
        # (the same session found by another query: its preview shows that query's match)
        self._show_preview(self.session_list.highlighted if rows else None)

    def _search(self, text: str, top: bool) -> None:
        try:
            query = parse_query(text)
        except QueryError as error:  # the rows of the last valid query stay, the status says why
            self._show_query_error(f"invalid query: {error}")
            self._release_preview()  # (search_flow.py: no count comes for a first page's rows now)
            self._query_unparsed(text)  # key_order.py: no rows will come for it
            other = self._rows_listing != self._listing_key()  # none were made of these sessions
            if other or self._rows_plain:  # (an initial query, Tab, Ctrl+N; or a live change to them)
                self._rows_plain = True
                self._make_rows(self.model.view(plain=True), top and other)  # (the same: the cursor stays)
            else:  # the last valid query's rows stay; an undone delete's session is not to take the cursor later
                self._cursor_to = frozenset()
            return
        self._query_unparsed(None)
        self._clear_query_error()
        self._rows_plain = False
        view = self.model.search_view()  # (without the previous hits: the worker keeps its arguments)
        debounce, self._debounce = self._debounce, 0.0
        paths, generation = self.model.scope == "all", self._next_rows_generation()
        self._newest_search = generation
        if debounce:  # within a burst of keys: the worker waits for the next one anyway
            self._search_worker(text, query, view, paths, top, generation, debounce)
        else:  # after a pause: the typed character is drawn first, then the search takes the GIL
            self.call_after_refresh(self._search_after_frame, text, query, view, paths, top, generation)

    def _search_after_frame(
        self, text: str, query: Any, view: RowsView, paths: bool, top: bool, generation: int
    ) -> None:
        """Start a search deferred to the next frame, unless a newer query came meanwhile (keys
        in a burst start theirs at once: this one, exclusive, would cancel the newest)."""
        if text == self.model.query:
            self._start_index_query(query, view, paths, generation)  # search_flow.py: its SQL at once
            self._search_worker(text, query, view, paths, top, generation, 0.0)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False, description="search")
    def _search_worker(
        self, text: str, query: Any, view: RowsView, paths: bool, top: bool, generation: int, debounce: float
    ) -> None:
        """The first page, then every hit ranked and its rows made (search_flow.py)."""
        self._run_search(get_current_worker(), text, query, view, paths, top, generation, debounce)

    @on(SearchDone)
    def _search_done(self, message: SearchDone) -> None:
        if message.error:
            self._show_query_error(message.error)
            if not message.hits:
                if message.generation == self._rows_generation:  # the search failed: no count comes
                    self._release_preview()  # (search_flow.py) for a first page's rows
                    self._rows_failed(message.generation)  # key_order.py: no rows will come
                return
        if message.generation < self._searched_generation:  # an older search's, after a newer one's hits
            return  # (a big search's rows are posted from its worker thread: they may land out of order)
        if message.generation < self._newest_search:  # the listing or the scope changed and a newer
            self._idle_after_search(None)  # search runs: its hits come (these, laid over the new
            return  # listing, were taken for its rows by a waiting Enter: "No session matches")
        if not self.model.accept_hits(message.query_text, message.hits):
            self._idle_after_search(None)  # (a newer query is running; its search, if any, restarts the timer)
            return
        self._searched_generation = message.generation
        searched_rows = message.rows if message.generation == self._rows_generation else None
        if searched_rows is not None:
            self._set_rows(searched_rows, top=self._final_top(message.generation, message.top))
        else:  # the sort, the filters or the listing changed while it ran: the hits again, in the new order
            self._make_rows(self.model.view(), self._final_top(message.generation, message.top))
        if self._freeze_after_search or len(message.hits) >= FREEZE_HITS:
            # (a search of many hits froze them itself, search_flow.py: the app is told too, so
            # it gives them back to the collector once this screen is gone)
            self._freeze_after_search = False
            self._freeze_long_lived()
        self._idle_after_search(searched_rows)  # search_flow.py
        if searched_rows is not None:
            self._rows_landed(message.generation)  # key_order.py: the keys waiting for them run

    def on_screen_resume(self) -> None:
        # back from a screen (the app may have given every frozen object back to the collector
        # when it closed): say again, after the next search, that the list is long-lived
        self._freeze_after_search = bool(self.model.summaries)
        self._rebuild_held_back()  # key_order.py

    def _freeze_long_lived(self) -> None:
        """Ten thousand summaries and their search haystacks live as long as the picker: say
        so to the app (`SeanceApp` freezes them out of the collector; a host ignores it)."""
        self.post_message(LongLivedDataLoaded(self))

    @on(Input.Changed, "#seance-search")
    def _query_changed(self, event: Input.Changed) -> None:
        if event.value == self.model.query:
            return
        self.model.query = event.value
        # a key after a pause is searched at once; one in a burst waits a moment for the next
        now = time.monotonic()
        self._debounce = SEARCH_DEBOUNCE if now - self._last_query_change < TYPING_BURST else 0.0
        self._last_query_change = now
        # A new query shows its best hit first; clearing it goes back to the full list with the
        # cursor still on the session the user was looking at (found by path).
        self._rebuild(top=bool(event.value.strip()))
        self._run_waiting_keys()  # key_order.py: a key waiting for the query before this one is dropped

    # -- cursor and preview ----------------------------------------------------------------

    @on(SessionList.Highlighted)
    def _highlighted(self, event: SessionList.Highlighted) -> None:
        self._show_preview(event.row)
        if event.row is not None and self.session_list.cursor == 0:
            self._clear_new()

    @on(SessionList.Selected)
    def _selected(self, event: SessionList.Selected) -> None:
        self._pick_highlighted()  # (a double-click: the row clicked, at once)

    def _preview(self) -> Any | None:
        try:
            return self.query_one("#seance-preview")
        except Exception:
            return None

    def _preview_visible(self) -> bool:
        """The setting (`preview_wanted`) decides from NARROW columns up; below, the preview hides
        itself unless Ctrl+O asked otherwise at exactly this width (`_preview_here`)."""
        if self._preview() is None:
            return False
        width = self.size.width
        if self._preview_here is not None and self._preview_here[0] == width:
            return self._preview_here[1]
        return self.preview_wanted and width >= NARROW

    def _update_preview_visibility(self) -> None:
        visible = self._preview_visible()
        self.set_class(not visible, "-no-preview")
        if visible:
            row = self.session_list.highlighted
            self._show_preview(row)

    def _show_preview(self, row: SessionRow | None) -> None:
        """Preview the row's session; again only if it is another session or its file changed."""
        preview = self._preview()
        if preview is None or not self._preview_visible() or self._preview_waits():  # (search_flow.py)
            return
        query = row.query if row is not None else None
        marked = query.positive if query is not None else ()  # (what the preview marks: a filter changes nothing)
        key = (row.path, row.summary.size, row.summary.mtime_ns, marked) if row is not None else None
        if key == self._preview_key and key is not None:
            return
        self._preview_key = key
        preview.show(Path(row.path) if row is not None else None, query=query)

    @in_key_order(moves=True)
    def action_cursor(self, delta: int) -> None:
        self.session_list.move_cursor(delta)

    @in_key_order(moves=True)
    def action_page(self, direction: int) -> None:
        self.session_list.page(direction)

    @in_key_order(moves=True)
    def action_first(self) -> None:
        self.session_list.set_cursor(0)
        self._clear_new()

    @in_key_order(moves=True)
    def action_last(self) -> None:
        self.session_list.set_cursor(len(self.session_list.rows) - 1)

    # -- results -------------------------------------------------------------------------

    def _result(
        self, row: SessionRow, action: Literal["resume", "fork"] = "resume", leaf_id: str | None = None
    ) -> PickResult:
        summary = row.summary
        return PickResult(action, Path(summary.path), leaf_id, session_id=summary.id or None, cwd=summary.cwd or None)

    @in_key_order()
    def action_select(self) -> None:
        """Enter: resume the highlighted session (the tree first in the browser), once the list
        shows the query as typed (key_order.py); nothing, said, if that query matches none."""
        if self.session_list.highlighted is None:
            self._no_row_here()
            return
        self._pick_highlighted()

    def _pick_highlighted(self) -> None:
        row = self.session_list.highlighted
        if row is None or self._gone(row):
            return
        if self.options.enter == "tree":
            self.action_tree()
        elif self.options.confirm_missing_cwd:
            result = self._result(row)
            resume_checked(self.app, result.cwd, self.cwd, lambda: self.dismiss(result))
        else:
            self.dismiss(self._result(row))

    def _gone(self, row: SessionRow) -> bool:
        """Whether the row's file is gone (moved or deleted, and the watcher has not said so
        yet, or is off): said, and the row dropped, rather than a path the agent cannot open."""
        if os.path.lexists(row.path):
            return False
        self._apply_changes([], [row.path])
        self.status.show_message("That session is gone (moved or deleted)", error=True)
        return True

    def action_open(self) -> None:
        """Enter in the browser: the selected session's tree first."""
        self.action_select()

    @in_key_order()
    def action_fork(self) -> None:
        """Dismiss with a fork of the selected session at its leaf (the host writes the new file)."""
        row = self.session_list.highlighted
        if row is not None and not self._gone(row):
            self.dismiss(self._result(row, "fork"))

    def action_cancel(self) -> None:
        """Esc: clear the query first, then cancel — decided after the keys typed before it
        (`_after_typed_keys`): "xy" then Esc in one burst clears "xy", it does not close the picker."""
        search = self.search_input

        def decide() -> None:
            if not self.is_active:  # a priority key after it (Esc, Enter, F1) already left
                self._hand_on("escape", "\x1b")  # (to the tree a key before it opened)
                return
            if self._cancel_waiting_keys():  # key_order.py: keys waiting for the search's rows
                return
            if search.value:
                search.value = ""
            else:
                self.dismiss(None)

        self._after_typed_keys(decide)

    def action_quit(self) -> None:
        self.dismiss(None)

    # -- scope, sort, filters ----------------------------------------------------------------

    @in_key_order(rows=False)
    def action_toggle_scope(self) -> None:
        scope = self.model.toggle_scope()
        self._publish()
        if self.model.loaded_scope:
            self._rebuild(top=True)
        else:
            self.status.listing = True
            self._next_rows_generation()  # rows still being made for the other scope are not shown
            self.session_list.set_rows([], top=True)
            self.session_list.set_display(empty_text="Loading…")
            self.status.shown = self.status.total = 0
            if not self._loading:
                self._load(scope)
            elif scope not in self._loading:  # the refresh under way lists every scope
                self._paint_stored_meanwhile(scope)  # first_paint.py

    @in_key_order(rows=False)
    def action_cycle_sort(self) -> None:
        self.model.cycle_sort()
        self._publish()
        if self.model.hits_current:
            self._make_rows(self.model.view(), top=False)  # the same hits, re-ordered
        else:
            self._rebuild()

    @in_key_order(rows=False)
    def action_cycle_children(self) -> None:
        """Alt+C: child sessions hidden → threaded under their parent → flat; say so, remember it."""
        mode = self.model.cycle_children()
        if self.model.hits_current:
            self._make_rows(self.model.view(), top=False)
        else:
            self._rebuild()
        self._count_children(self.model.view(), mode)  # row_flow.py: a worker for a long list
        if self.options.save_children is not None:
            self._save_children_worker(mode)

    def _children_notice(self, mode: ChildMode, count: int) -> None:
        self.notify(children_notice(mode, count), title="Child sessions", markup=False)

    @work(thread=True, group="settings", exclusive=True, exit_on_error=False, description="save setting")
    def _save_children_worker(self, mode: ChildMode) -> None:
        save = self.options.save_children
        try:
            if save is not None:
                save(mode)
        except (OSError, ValueError) as error:
            self.post_message(WriteFailed(f"Could not save the setting: {display_text(error)}"))

    @in_key_order(rows=False)
    def action_toggle_named(self) -> None:
        self.model.toggle_named()
        self._rebuild(top=True)

    def action_toggle_paths(self) -> None:
        self.show_paths = not self.show_paths
        self.session_list.set_display(show_path=self.show_paths)

    def action_toggle_stats(self) -> None:
        """Alt+I: the stats block in the preview (the preview comes back first if it was hidden)."""
        preview = self._preview()
        if preview is None:
            return
        if not self._preview_visible():
            self.action_toggle_preview()
            preview.stats_choice = True
        else:
            preview.toggle_stats()

    def action_toggle_preview(self) -> None:
        """Ctrl+O: from NARROW columns up, flip the setting; below, show or hide the preview at this
        width only (the setting stays, so a wider terminal shows what it says again)."""
        width = self.size.width
        if width >= NARROW:
            self._preview_here = None
            self.preview_wanted = not self.preview_wanted
        else:
            visible = not self._preview_visible()
            self._preview_here = (width, visible)
            self.status.show_message(f"Preview {'shown' if visible else 'hidden'} at {width} columns only")
        self._preview_key = None
        self._update_preview_visibility()

    def action_key_or_type(self, character: str, action: str) -> None:
        """`action` on an empty query (Space selects, ? opens help), else `character` typed into it,
        decided after the keys typed before it (`_after_typed_keys`)."""
        search = self.search_input

        def decide() -> None:
            if search.value:
                search.insert_text_at_cursor(character)
            else:  # (next, in this key's place: keys typed after it wait for it)
                self._run_next(getattr(self, f"action_{action}"))

        # key_order.py: behind keys waiting for their rows (and handed on, as typed, to a tree
        # a key before it opened)
        pressed = ("space" if character == " " else "question_mark", character)
        self._in_key_order(decide, rows=False, pressed=pressed)

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.help_rows()))

    def help_rows(self) -> list[tuple[str, str]]:
        """The help lines: the query syntax, then the keys live on this screen now (`help_rows`)."""
        enter = OPEN_HELP if self.options.enter == "tree" else RESUME_HELP
        return help_rows(self, before=[("type", SEARCH_HELP)], after=[("double-click", enter)])

    # -- delete / undo, the selection: app/screens/deleting.py ------------------------------

    @on(WriteFailed)
    def _write_failed(self, message: WriteFailed) -> None:
        self.status.show_message(message.text, error=True)
        notify_failure(self, message.text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Ctrl+Z is the picker's only while a delete can be undone; otherwise the query input
        undoes typing (None: listed in help, not run).  Enter runs the action of the screen's mode."""
        if action == "undo_delete":
            return True if self.model.can_undo else None
        if action in ("select", "open"):
            return (action == "open") == (self.options.enter == "tree")
        return True

    # -- rename --------------------------------------------------------------------------

    @in_key_order()
    def action_rename(self) -> None:
        row = self.session_list.highlighted
        if row is None or not self.options.rename:
            return
        summary = row.summary

        def answered(name: str | None) -> None:
            if name:
                self._rename_worker(summary, name)
            elif name == "":  # pi's empty session_info: clears the name, after a confirm

                def confirmed(yes: bool | None) -> None:
                    if yes:
                        self._rename_worker(summary, "")

                question = ConfirmScreen("Clear the session's name?", summary.title, confirm_label="Clear")
                self.app.push_screen(question, confirmed)

        self.app.push_screen(rename_prompt(summary.name, summary.title), answered)

    @work(thread=True, group="writes", exit_on_error=False, description="rename")
    def _rename_worker(self, summary: SessionSummary, name: str) -> None:
        try:
            updated = self.catalog.rename(summary.path, name)
        except (SessionError, OSError) as error:
            self.post_message(WriteFailed(f"Rename failed: {display_text(error)}"))
            return
        self.post_message(Renamed(name, updated))

    @on(Renamed)
    def _renamed(self, message: Renamed) -> None:
        name = message.name
        if message.summary is not None:
            self._apply_changes([message.summary])
            name = message.summary.name or name  # what was stored (oh-my-pi's slot holds 256 bytes)
        if message.name:
            self.status.show_message(f"Session renamed to {display_text(name, 60)}")
        else:
            self.status.show_message("Session name cleared")

    # -- copy ----------------------------------------------------------------------------

    @in_key_order()
    def action_copy(self) -> None:
        row = self.session_list.highlighted
        if row is None:
            return

        def chosen(choice: CopyChoice | None) -> None:
            if choice is not None:
                self.app.copy_to_clipboard(choice.text)  # OSC 52: the terminal puts it on the clipboard
                self.status.show_message(f"Copied the {choice.what}: {display_text(choice.text, 60)}")

        self.app.push_screen(CopyScreen(row.summary), chosen)

    # -- export (app/export_flow.py) ------------------------------------------------------

    @in_key_order()
    def action_export(self) -> None:
        row = self.session_list.highlighted
        if row is not None:
            summary = row.summary
            what = f"{summary.title} · the context it resumes with"
            ask_and_export(self, Path(row.path), name=summary.name, session_id=summary.id, what=what)

    @on(ExportDone)
    def _exported(self, message: ExportDone) -> None:
        show_export_notice(self, message)

    # -- tree ----------------------------------------------------------------------------

    @in_key_order()
    def action_tree(self) -> None:
        row = self.session_list.highlighted
        if row is None:
            return
        from .session_tree import SessionTreeScreen

        def chosen(result: Any) -> None:
            if result is None or getattr(result, "action", None) not in ("resume", "fork"):
                return
            summary = row.summary
            self.dismiss(
                PickResult.from_tree(
                    result, path=Path(row.path), session_id=summary.id or None, cwd=summary.cwd or None
                )
            )

        tree = SessionTreeScreen(
            Path(row.path),
            clock=self.clock,
            cwd=self.cwd,
            confirm_missing_cwd=self.options.confirm_missing_cwd,
            query=row.query,  # (opens at the match the preview shows)
        )
        self.app.push_screen(tree, chosen)

    # -- live updates --------------------------------------------------------------------

    def _watch(self) -> None:
        """Follow the roots (app/watcher.py) for as long as the screen is mounted."""
        self.watcher = RootWatcher(self.catalog, self.post_message)
        self.watcher.start()  # its own thread, joined on unmount (no pooled thread outlives the screen)

    @on(Watching)
    def _watching(self, message: Watching) -> None:
        self.watching = True

    @on(SessionsChanged)
    def _sessions_changed(self, message: SessionsChanged) -> None:
        back = {summary.path for summary in message.changed}  # (a folder gone and back within the batch)
        gone = [path for path in self.model.paths_under(message.gone_dirs) if path not in back]
        removed = [*message.removed, *gone]
        if message.changed or removed:
            self._apply_changes(message.changed, removed, restored=message.restored, watcher=True)

    def _apply_changes(
        self,
        changed: Sequence[SessionSummary],
        removed: Sequence[str] = (),
        *,
        restored: bool = False,
        watcher: bool = False,
    ) -> None:
        """Merge `changed` and `removed` into the model and show them.  The `watcher`'s are
        shown after the keys waiting for the search under way (key_order.py): a new search for
        every batch would cancel it, and keep them waiting for as long as agents write."""
        widget = self.session_list
        at_top = widget.scroll_offset.y == 0  # the list stays at its top (set_rows): arrivals are in view
        self.model.changed(changed, removed, restored=restored, at_top=at_top)
        if watcher and self._waiting_keys:
            self._rebuild_after_keys = True
        else:
            self._rebuild()

    def _clear_new(self) -> None:
        self.model.clear_new()
        self._publish()
