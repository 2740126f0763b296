"""SessionTreeScreen: any session's branches, labels and compactions — preview and resume at any node.

pi's `/tree` selector as a Textual screen, for sessions that are not open in an agent: the
tree (a virtual `TreeView` over the pure `TreeModel`), a search line, a status line and the
`ContextPreview` of the highlighted node.  Keys follow pi 0.73.1: ↑/↓ wrap, ←/→ and
PgUp/PgDn page, Home/End, Ctrl+←/→ (or Alt+←/→) fold or jump between branch points,
Ctrl+D/T/U/L/A filters, Ctrl+O / Shift+Ctrl+O cycle them, typing searches, Backspace edits the
search, Esc clears it first, Shift+L edits a label, Shift+T shows label times, F1 help, Enter
resumes.  The screen dismisses with a `TreeResult`, or None on Esc.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar, Literal

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker

from seance.app.commands import TreeCommands
from seance.app.export_flow import EXPORT_HELP, ExportDone, ask_and_export, show_export_notice
from seance.app.line_caches import ReleasesLines
from seance.app.messages import LongLivedDataLoaded
from seance.app.paths import stylesheet
from seance.app.screens.help import HelpScreen, help_rows
from seance.app.screens.missing_cwd import resume_checked
from seance.app.screens.prompt import label_prompt
from seance.app.tree_model import TreeModel, resume_point
from seance.app.widgets.context_preview import ContextPreview, first_matching_entry
from seance.app.widgets.static_update import update_static
from seance.app.widgets.tree_view import TreeView
from seance.core.entries import MESSAGE_USER
from seance.core.errors import SessionChangedError
from seance.core.gcpause import gc_paused
from seance.core.metadata import first_message
from seance.core.model import session_title
from seance.core.search.query import Query
from seance.core.session import NotASession, Session, SessionError, read_session
from seance.core.text import display_text, relative_age
from seance.core.tree import timestamp_ms
from seance.core.writes import set_label

GC_FREEZE_ENTRIES = 5_000
"""Sessions this big are long-lived bulk: the screen posts `LongLivedDataLoaded` (seance's own app
then freezes them out of the cyclic GC while the screen shows them)."""
PREVIEW_MIN_WIDTH = 100
"""Below this terminal width the preview pane is hidden so the tree keeps its room."""


@dataclass(slots=True)
class _ReadAgain:
    """A reading again of the session under way (`SessionTreeScreen._read_again`)."""

    entry_id: str | None  # the entry under the cursor when it was asked for
    on_end: bool  # the cursor was on the row that shows the leaf ("resume where it ended")
    note: str | None  # what to say once read (None: after the tree's own label write)
    own_lines: int = 0  # lines the tree itself wrote since the reading it follows (labels)
    more: int = 0  # labels written while this one read: read again after it


@dataclass(frozen=True, slots=True)
class TreeResult:
    """Resume `path` at `leaf_id` (None: before the first entry); `prefill` is text offered back.

    `entry_id` is the entry the user chose; `leaf_id` and `prefill` are derived from it by
    pi's rule (`resume_point`), so a host that has pi's `navigateTree(entry_id)` passes the
    chosen entry and lets pi derive the rest.
    """

    action: Literal["resume"]
    path: Path
    leaf_id: str | None
    prefill: str | None = None
    entry_id: str | None = None


class SessionTreeScreen(ReleasesLines, Screen["TreeResult | None"]):
    """The tree of one session file, pi's `/tree` keys, a live context preview."""

    CSS: ClassVar[str] = stylesheet("tree.tcss")  # scoped by Textual to this screen
    AUTO_FOCUS = "TreeView"
    # The keys pressed behind the key that opened it (Ctrl+T, Down, Enter in one burst) are its:
    # the picker hands them on (key_order.py), and they wait here while the session loads.
    TAKES_KEYS_AHEAD: ClassVar[bool] = True
    # Act at once while the session loads; every other key (the filters too) waits for the rows.
    KEYS_THAT_LEAVE: ClassVar[frozenset[str]] = frozenset({"escape", "ctrl+c"})

    COMMANDS: ClassVar[set] = {TreeCommands}  # F2 (commands.py)

    BINDINGS: ClassVar[list[BindingType]] = [  # `tooltip` is the help text (F1, `help_rows`)
        Binding("escape", "back", "Back", show=False, tooltip="clear the search, then back"),
        Binding("ctrl+c", "back", "Back", show=False, tooltip="back"),
        Binding("ctrl+d", "filter('default')", "Default filter", show=False, tooltip="filter: default"),
        Binding("ctrl+t", "filter('no-tools')", "No tools", show=False, tooltip="filter: no tool results"),
        Binding("ctrl+u", "filter('user-only')", "User only", show=False, tooltip="filter: user messages only"),
        Binding("ctrl+l", "filter('labeled-only')", "Labeled only", show=False, tooltip="filter: labeled entries only"),
        Binding("ctrl+a", "filter('all')", "All entries", show=False, tooltip="filter: all entries"),
        Binding("ctrl+o", "cycle_filter(1)", "Cycle filter", show=False, tooltip="next filter"),
        Binding("ctrl+shift+o", "cycle_filter(-1)", "Cycle filter back", show=False, tooltip="previous filter"),
        Binding("L,shift+l", "edit_label", "Label", show=False, tooltip="edit the entry's label (empty removes it)"),
        Binding(
            "T,shift+t", "toggle_label_times", "Label times", show=False, tooltip="show / hide when labels were set"
        ),
        Binding("backspace", "backspace", "Edit search", show=False, tooltip="delete the last search character"),
        Binding("f1", "help", "Help", show=False, tooltip="this help"),
        Binding("alt+e", "export", "Export", show=False, priority=True, tooltip=EXPORT_HELP),
    ]

    class Loaded(Message):
        """The worker read the session and built its tree model."""

        def __init__(self, session: Session, model: TreeModel, title: Content) -> None:
            super().__init__()
            self.session = session
            self.model = model
            self.title = title

    class MatchFound(Message):
        """Where the list's query first matches (`_find_match`): `entry_id`, for `model`
        as it was when the look began (`state`: `_cursor_state`)."""

        def __init__(self, model: TreeModel, entry_id: str, state: tuple[object, ...]) -> None:
            super().__init__()
            self.model = model
            self.entry_id = entry_id
            self.state = state

    class SearchReady(Message):
        """The worker built `model`'s search index (`_prepare_search`)."""

        def __init__(self, model: TreeModel) -> None:
            super().__init__()
            self.model = model

    class SearchFailed(Message):
        """The worker could not build `model`'s search index: typed words are looked up here."""

        def __init__(self, model: TreeModel) -> None:
            super().__init__()
            self.model = model

    class LoadFailed(Message):
        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class SourceChanged(Message):
        """An entry read back from the session's file no longer matches it (posted from any thread)."""

        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    class LabelWritten(Message):
        def __init__(self, entry_id: str, label: str, timestamp: str | None = None) -> None:
            super().__init__()
            self.entry_id = entry_id
            self.label = label
            self.timestamp = timestamp

    class LabelFailed(Message):
        def __init__(self, reason: str) -> None:
            super().__init__()
            self.reason = reason

    def __init__(
        self,
        session_path: Path,
        *,
        clock: Callable[[], datetime] | None = None,
        standalone: bool = False,
        session: Session | None = None,
        cwd: str | None = None,
        confirm_missing_cwd: bool = True,
        query: Query | None = None,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        """`session`: the file already read by the caller (skips reading it again).  `cwd`: where
        the agent would continue (default: the current directory) when the session's cwd is gone,
        which the screen asks about before resuming, as pi does (unless `confirm_missing_cwd` is False).
        `query`: the list's search the tree was opened from: once the first rows are drawn the
        cursor moves from the leaf to its first match (`first_matching_entry`, the entry the
        list's preview showed), unless the user moved it first, and the preview marks its
        matches; nothing is filtered (the tree's own search is pi's plain words, not the list's
        language)."""
        super().__init__(name=name, id=id, classes=classes)
        self.list_query = query
        self._match_sought = False
        self._indexing: TreeModel | None = None  # the model whose search index was started
        self.current_cwd = cwd or os.getcwd()
        self.confirm_missing_cwd = confirm_missing_cwd
        self.session_path = Path(session_path)
        self._given_session = session
        self.clock = clock or (lambda: datetime.now(UTC))
        self.standalone = standalone
        self.session: Session | None = None
        self.model: TreeModel | None = None
        self.load_error: str | None = None
        # keys pressed while the session loads (a big one takes seconds): pressed again, in
        # order, once the tree has its rows and the focus (Up Up Enter typed ahead acts)
        self._keys_ahead: list[tuple[str, str | None]] = []
        # read again (the file changed since it was read): (the entry under the cursor, whether
        # it was the leaf then, what to say once read); None when no reading again is under way
        self._reading_again: _ReadAgain | None = None

    # -- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical(id="seance-tree-head"):
            yield Static(
                Content.styled(f"Session Tree  {display_text(self.session_path.name)}"), id="seance-tree-title"
            )
            yield Static(self._help_text(), id="seance-tree-help")
            yield Static(id="seance-tree-search")
        with Horizontal(id="seance-tree-body"):
            with Vertical(id="seance-tree-pane"):
                yield Static(Content("Loading…"), id="seance-tree-message")
                yield TreeView(clock=self.clock, id="seance-tree-view")
            yield ContextPreview(placeholder="Loading session…", id="seance-tree-preview")
        yield Static(id="seance-tree-status")

    def _help_text(self) -> Content:
        back = "quit" if self.standalone else "back"
        return Content(  # the most used first: a narrow terminal cuts the end of the line
            f"F1 keys  ↑↓ move  ←→ page  ^←^→ fold  Enter resume  Esc {back}  "
            "^D^T^U^L^A filter  ^O/⇧^O cycle  ⇧L label  ⇧T label time"
        )

    def on_mount(self) -> None:
        self.query_one(TreeView).display = False
        self._refresh_search()
        self._refresh_status()
        self._load()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one(ContextPreview).display = event.size.width >= PREVIEW_MIN_WIDTH

    def on_unmount(self) -> None:
        """Gone: the session goes at once.  A screen and its widgets are a web of reference
        cycles that only a full collection frees; holding the session, a closed tree of
        200,000 entries stayed in memory until one ran, and that collection walked it all on
        the UI thread (~1 s, some keys after Esc)."""
        if self.model is not None:
            self.model.on_source_changed = None
        self.model = self.session = self._given_session = self._indexing = None

    # -- loading --------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="tree-load", exit_on_error=False, description="load session")
    def _load(self) -> None:
        # One pause from reading to the built model: a collection between them would rescan
        # every young object of a big session.
        with gc_paused():
            self.post_message(self._read_and_build())

    def _read_and_build(self) -> Loaded | LoadFailed:
        try:
            result = self._given_session or read_session(self.session_path, digest=False)  # writes reload
        except Exception as error:  # whatever the file holds, the screen says so instead of hanging
            return self.LoadFailed(f"{self.session_path}: cannot read ({display_text(error)})")
        if isinstance(result, NotASession):
            return self.LoadFailed(f"{result.path}: not a session ({result.reason})")
        try:
            model = TreeModel(result.tree)
            model.defer_search = True  # (the index is `_prepare_search`'s: typed words wait for it)
            _ = model.tool_calls  # (made here; it reads back from the end only what the rows need)
            title = self._title(result)  # (the name is another pass)
            model.on_source_changed = self._source_changed
        except SessionChangedError as error:
            return self.LoadFailed(str(error))
        except Exception as error:  # a session core could read must not crash the screen
            return self.LoadFailed(f"{result.path}: cannot build the tree ({display_text(error)})")
        return self.Loaded(result, model, title)

    @work(thread=True, exclusive=True, group="tree-list-match", exit_on_error=False, description="list match")
    def _find_match(
        self, session_ref: weakref.ref[Session], model_ref: weakref.ref[TreeModel], state: tuple[object, ...]
    ) -> None:
        """The entry the list's query matches first (`first_matching_entry`), looked for once
        the first rows are drawn: on a session of 200,000 entries the look is seconds, and
        the rows must not wait for it; it stops when the worker is cancelled (Esc).  Not
        found, for any reason: the cursor stays where the tree opened (the leaf), as
        without a query.  (The session and model come weakly: `_prepare_search`.)"""
        session, model = session_ref(), model_ref()
        if session is None or model is None:
            return
        worker = get_current_worker()
        try:
            target = first_matching_entry(session, model.order, self.list_query, lambda: worker.is_cancelled)
        except Exception:  # (a search's extra must never break the tree)
            return
        if target is not None and not worker.is_cancelled:
            self.post_message(self.MatchFound(model, target, state))

    @staticmethod
    def _cursor_state(model: TreeModel) -> tuple[object, ...]:
        """What the user changes by moving, searching or folding: the cursor's row and entry,
        and the rows' version."""
        return (model.cursor, model.selected_id, model.version)

    @on(MatchFound)
    def _match_found(self, message: MatchFound) -> None:
        model = self.model
        if model is not message.model or self._cursor_state(model) != message.state:
            return  # the user acted meanwhile (or the tree was read again): the cursor is theirs
        model.select_id(message.entry_id)
        self.query_one(TreeView).sync()

    def on_session_tree_screen_loaded(self, message: Loaded) -> None:
        again, self._reading_again = self._reading_again, None
        note = None
        if again is not None and self.model is not None and self.session is not None:
            note = self._carried(again, self.session, self.model, message)
        self.session, self.model = message.session, message.model
        if len(message.session.entries) >= GC_FREEZE_ENTRIES:
            # A big session is millions of long-lived objects; unless the app freezes them,
            # every full garbage collection walks them all and each keystroke pays for it.
            self.post_message(LongLivedDataLoaded(self))
        tree_view = self.query_one(TreeView)
        self.query_one("#seance-tree-message", Static).display = False
        tree_view.display = True
        title = self.query_one("#seance-tree-title", Static)
        title.update(message.title)
        # (what the pane says while no row is highlighted: none at all, or all filtered out)
        self.query_one(ContextPreview).set_placeholder("No entry to preview")
        tree_view.set_model(message.model)
        tree_view.focus()
        self._refresh_status()
        if again is not None and message.model.selected_id is not None:  # (the same row: no new highlight)
            self._preview_entry(message.model.selected_id)
        if note is not None:
            self.notify(note, title="Read again", timeout=6, markup=False)
        if again is not None and again.more:  # labels written meanwhile: the file as they left it
            self._read_again(None, own_lines=again.more)
        if self._keys_ahead:
            self.call_after_refresh(self._press_keys_ahead)

    def _press_keys_ahead(self) -> None:
        """The keys held while loading, as the terminal would have sent them (the tree shown
        and focused now takes them)."""
        keys, self._keys_ahead = self._keys_ahead, []
        for key, character in keys:
            event = events.Key(key, character)
            event.set_sender(self.app)  # (as a key from the terminal: bubbling back up to the app's bindings)
            self.app.post_message(event)

    @on(TreeView.RowsDrawn)
    def _rows_drawn(self) -> None:
        # After the first rows are drawn (not after the next refresh, which may come before
        # them): the search index is a pass over every entry, and a worker holding the GIL
        # meanwhile would slow the drawing down (every turn of the event loop waits for it).
        if self.model is not None:
            self._start_search_index(self.model)
            if self.list_query is not None and self.session is not None and not self._match_sought:
                self._match_sought = True  # (once: a tree read again after a write keeps its cursor)
                self._find_match(weakref.ref(self.session), weakref.ref(self.model), self._cursor_state(self.model))

    def _start_search_index(self, model: TreeModel) -> None:
        """Start `_prepare_search` once per model: after the first rows are drawn, or at the
        first typed word if none could be drawn (a terminal a few lines high)."""
        if self._indexing is not model:
            self._indexing = model
            model.calls_coming = True  # (the pass finds every call: rows drawn meanwhile need not read back)
            self._prepare_search(weakref.ref(model))

    @work(thread=True, exclusive=True, group="tree-search-index", exit_on_error=False, description="search index")
    def _prepare_search(self, model_ref: weakref.ref[TreeModel]) -> None:
        """Build the whole-text search index in the background, so the first keystroke is
        quick (a word typed before it is built waits for it: `TreeModel.defer_search`).  It
        stops within a few milliseconds once the worker is cancelled (Esc: Textual cancels a
        removed screen's workers), instead of decoding the rest of a huge session.  The
        model comes weakly: Textual's finished worker (its arguments with it) and the task
        that ran it hold each other until a full collection, and must not keep a closed tree
        of 200,000 entries alive until then."""
        model = model_ref()
        if model is None:
            return
        worker = get_current_worker()
        try:
            ready = model.prepare_search(lambda: worker.is_cancelled)
        except Exception:  # (a bug, a file no one foresaw: the words wait no more, `_search_failed`)
            if not worker.is_cancelled:
                self.post_message(self.SearchFailed(model))
            raise
        if ready and not worker.is_cancelled:
            self.post_message(self.SearchReady(model))

    @on(SearchReady)
    def _search_ready(self, message: SearchReady) -> None:
        if message.model is self.model:
            self._calls_here(message.model)
            if message.model.search_prepared():
                self._changed()

    @on(SearchFailed)
    def _search_failed(self, message: SearchFailed) -> None:
        """No index from the worker: a typed word is looked up entry by entry here, as before
        the worker built it, rather than wait for it ("indexing…") for good."""
        if message.model is self.model:
            message.model.defer_search = False
            self._calls_here(message.model)
            self._changed()

    def _calls_here(self, model: TreeModel) -> None:
        """The index pass is over: rows drawn with a tool result's provisional summary (its
        call not read yet) are drawn again, with their calls (found by the pass, or read
        back now if it failed)."""
        model.calls_coming = False
        if model.provisional:
            model.provisional = False
            self.query_one(TreeView).redraw()

    def on_session_tree_screen_load_failed(self, message: LoadFailed) -> None:
        if self._reading_again is not None and self.model is not None:  # (the tree read before stays)
            self._reading_again = None
            self.notify(display_text(message.reason), title="Not read again", severity="error", markup=False)
            return
        self.load_error = message.reason
        self._keys_ahead.clear()
        note = self.query_one("#seance-tree-message", Static)
        note.update(Content(display_text(message.reason)))
        note.add_class("-error")
        self.query_one(ContextPreview).set_placeholder("Nothing to preview")
        self._refresh_status()

    def _source_changed(self, error: SessionChangedError) -> None:
        self.post_message(self.SourceChanged(str(error)))

    def _lost(self, error: SessionChangedError) -> None:
        """An entry the screen itself read no longer matches the file: the model's hook (once)."""
        if self.model is not None:
            self.model.source_lost(error)
        else:
            self._source_changed(error)

    def on_session_tree_screen_source_changed(self, message: SourceChanged) -> None:
        self.notify(display_text(message.reason), severity="error", timeout=10, markup=False)

    def _title(self, session: Session) -> Content:
        # the list row's title (name, else first prompt, else id, else file name): one function for both
        title = session_title(
            session.name, first_message(session.entries.messages(MESSAGE_USER)), session.id, str(self.session_path)
        )
        parts = [f"Session Tree  {title}"]
        entries = len(session.entries)
        parts.append(f"{entries:,} entr{'y' if entries == 1 else 'ies'}")
        started = timestamp_ms(session.header.get("timestamp"))
        if started != float("inf"):
            parts.append(_started(started, self.clock().timestamp() * 1000))
        if session.cwd:
            parts.append(display_text(session.cwd))
        return Content("  ·  ".join(parts))

    # -- status and search lines --------------------------------------------------------

    def _refresh_search(self) -> None:
        query = self.model.query if self.model else ""
        self.query_one("#seance-tree-search", Static).update(
            Content.assemble(("Type to search: ", "dim"), (display_text(query), "bold"))
        )

    def _refresh_status(self) -> None:
        model = self.model
        parts: list[str] = []
        if model is None:
            parts.append("loading…" if self.session is None and self.load_error is None else "")
        else:
            position = model.cursor + 1 if model.rows else 0
            parts.append(f"({position}/{len(model.rows)})")
            parts.append(f"filter: {model.filter_mode}")
            if model.query:
                waiting = " (indexing…)" if model.search_pending else ""
                parts.append(f"search: {display_text(model.query)}{waiting}")
            if self.list_query is not None:
                parts.append(f"list search: {display_text(self.list_query.source)}")
            if model.folded:
                parts.append(f"{len(model.folded)} folded")
            if model.show_label_times:
                parts.append("+label time")
        if self.session is not None and self.session.problems:
            count = len(self.session.problems)
            parts.append(f"{count} problem{'s' if count != 1 else ''} while reading (skipped or repaired)")
        update_static(
            self.query_one("#seance-tree-status", Static), Content("  ·  ".join(part for part in parts if part))
        )

    # -- tree events ----------------------------------------------------------------------

    @on(TreeView.Changed)
    def _tree_changed(self) -> None:
        self._refresh_status()

    @on(TreeView.Highlighted)
    def _highlighted(self, event: TreeView.Highlighted) -> None:
        if self.session is not None and event.entry_id is not None:
            self._preview_entry(event.entry_id)
        elif self.session is not None:  # no row left (a search or filter): no context to show
            self.query_one(ContextPreview).show(None)

    def _preview_entry(self, entry_id: str) -> None:
        """Preview what Enter here really resumes with: for a user message, the context up to
        its parent and the message in the editor (pi's rule, `resume_point`)."""
        assert self.session is not None
        tree = self.session.tree
        try:
            leaf_id, prefill = resume_point(tree.by_id[entry_id], tree.parent_of(entry_id), tree.leaf_id)
        except SessionChangedError as error:
            self._lost(error)
            return
        self.query_one(ContextPreview).show_session(self.session, leaf_id, editor=prefill, query=self.list_query)

    @on(TreeView.Selected)
    def _selected(self, event: TreeView.Selected) -> None:
        if self.session is None or event.entry_id is None:
            return
        if self._reading_again is not None:
            self.notify("The session is being read again: Enter once it is shown", timeout=3, markup=False)
            return
        now = self._file_now(self.session)
        if now == "gone":  # (as the list refuses it: pi would be handed a path it cannot open)
            self.notify("That session is gone (moved or deleted): nothing to resume", severity="error", markup=False)
            return
        if now == "changed":  # an agent wrote to it (or it was rewritten) since it was read
            self._read_again(CHANGED_NOTE)
            return
        try:
            entry = self.session.tree.by_id[event.entry_id]
        except SessionChangedError as error:  # resuming needs the entry: say why not
            self._lost(error)
            return
        leaf_id, prefill = resume_point(entry, self.session.tree.parent_of(event.entry_id), self.session.tree.leaf_id)
        result = TreeResult("resume", self.session.path, leaf_id, prefill, event.entry_id)
        if self.confirm_missing_cwd:
            resume_checked(self.app, self.session.cwd, self.current_cwd, lambda: self.dismiss(result))
        else:
            self.dismiss(result)

    @staticmethod
    def _file_now(session: Session) -> Literal["same", "changed", "gone"]:
        """Whether the session's file is still the one read (its size and modification time):
        resuming from a tree read before an agent's newer turns would take the session back
        (pi moves its leaf to the entry handed over), and from one truncated since, to an
        entry the file no longer has."""
        try:
            now = os.stat(session.path)
        except OSError:
            return "gone"
        return "same" if session.stamp.matches(now) else "changed"

    def _read_again(self, note: str | None, *, own_lines: int = 0) -> None:
        """Read the session again, the view kept (`_carried`).  The tree read before stays
        usable meanwhile; `note` is said once the new one is shown (None: after the tree's own
        `own_lines` label writes, said only if the file changed beyond them)."""
        model = self.model
        entry_id = model.selected_id if model is not None else None
        leaf = model.leaf_id if model is not None and model.rows else None
        on_end = model is not None and leaf is not None and model.cursor == model.nearest_visible_index(leaf)
        self._reading_again = _ReadAgain(entry_id, on_end, note, own_lines)
        self._given_session = None
        self._load()

    @staticmethod
    def _carried(again: _ReadAgain, session: Session, old: TreeModel, message: Loaded) -> str | None:
        """Carry the view of `old` over to the model read again (`_carry_view`), and what to
        say of it: the cursor stays where the user has it now (moved while it read: there); on
        the end row, it follows the end if the file grew by more than the tree's own lines."""
        grew = len(message.session.entries) - len(session.entries) > again.own_lines + again.more
        note = again.note if again.note is not None else CHANGED_NOTE if grew else None
        moved = old.selected_id != again.entry_id
        follow_end = again.on_end and not moved and note is not None
        _carry_view(old, message.model, old.selected_id, follow_end)
        return note

    # -- keys -----------------------------------------------------------------------------

    def _changed(self) -> None:
        self.query_one(TreeView).sync()
        self._refresh_search()
        self._refresh_status()

    def on_key(self, event: events.Key) -> None:
        """Printable text goes to the search, as in pi (no input box to focus first).  A key
        that reaches the screen while the session loads (the tree's own keys: no row to act
        on yet) is held and pressed again once it has loaded (`_keys_ahead`); so is one that
        comes while the held keys wait to be pressed again, behind them (Esc too, then: the
        load is over, and the keys before it are the user's)."""
        if self._holds_key(event.key):
            self._keys_ahead.append((event.key, event.character))
            event.stop()
            event.prevent_default()
            return
        if self.model is None or not event.is_printable or not event.character or event.key in self._letter_keys():
            return
        if not isinstance(self.focused, TreeView):
            return
        event.stop()
        event.prevent_default()
        # Typed where the bound keys act: a bound key (Enter, Up) runs its binding when its event
        # has bubbled up to the app, so a letter typed behind it in one burst went into the
        # search first, and Enter then acted on the rows that search left.
        self.app.call_later(self._type, event.character)

    def _loading(self) -> bool:
        return self.model is None and self.session is None and self.load_error is None

    def _holds_key(self, key: str) -> bool:
        """Whether `key` waits (`_keys_ahead`): while the session loads, all but the keys that
        leave (a slow load can be left at once, whatever was pressed before); once it has
        loaded, every key behind keys held and not pressed again yet."""
        if self._loading():
            return key not in self.KEYS_THAT_LEAVE
        return bool(self._keys_ahead)

    def _type(self, text: str) -> None:
        """Typed text goes to the search (`on_key`), once the keys before it have acted."""
        if self.model is None or not self.is_current:
            return
        self.model.set_query(self.model.query + text)
        self._start_search_index(self.model)
        self._changed()

    @classmethod
    def _letter_keys(cls) -> frozenset[str]:
        """Printable keys the screen binds (Shift+L, Shift+T): they run their action, never type."""
        return frozenset(key for key in cls._screen_keys() if len(key) == 1 or key.startswith("shift+"))

    @classmethod
    @functools.cache
    def _screen_keys(cls) -> frozenset[str]:
        """Every key the screen binds (Esc, Ctrl+C, the filters...)."""
        return frozenset(
            key.strip() for binding in cls.BINDINGS if isinstance(binding, Binding) for key in binding.key.split(",")
        )

    def action_toggle_label_times(self) -> None:
        if self.model is not None:
            self.model.toggle_label_times()
            self._changed()

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self.help_rows()))

    def help_rows(self) -> list[tuple[str, str]]:
        """The help lines: typing searches, then the keys live on this screen now (`help_rows`)."""
        return help_rows(
            self,
            before=[("type", "search (every word must match the entry's whole text)")],
            after=[("double-click", "resume at this entry")],
        )

    def action_backspace(self) -> None:
        if self.model is not None and self.model.query:
            self.model.set_query(self.model.query[:-1])
            self._changed()

    def action_back(self) -> None:
        """Esc: clear the search first (and its folds); otherwise leave the screen."""
        if self.model is not None and self.model.query:
            self.model.set_query("")
            self._changed()
            return
        self.dismiss(None)

    def action_select(self) -> None:
        """Resume at the highlighted entry, as Enter on it (the palette's "Resume here")."""
        self.query_one(TreeView).action_select()

    def action_filter(self, mode: str) -> None:
        if self.model is not None:
            self.model.toggle_filter(mode)
            self._changed()

    def action_set_filter(self, mode: str) -> None:
        """The palette's "Filter: …": that filter, whatever is on (the keys toggle, as pi's)."""
        if self.model is not None:
            self.model.set_filter(mode)
            self._changed()

    def action_cycle_filter(self, step: int) -> None:
        if self.model is not None:
            self.model.cycle_filter(step)
            self._changed()

    # -- export (app/export_flow.py) ----------------------------------------------------

    def action_export(self) -> None:
        """Alt+E: the context at the highlighted entry, as `seance export --leaf ENTRY`."""
        if self._holds_key("alt+e"):  # (a priority key: it never reaches `on_key` to be held)
            self._keys_ahead.append(("alt+e", None))
            return
        session, model = self.session, self.model
        if session is None or model is None or model.selected_id is None:
            return
        entry_id = model.selected_id
        what = f"the context at {display_text(model.summary(entry_id).plain(), 80)}"
        ask_and_export(
            self, session.path, name=session.name, session_id=session.id, session=session, leaf=entry_id, what=what
        )

    @on(ExportDone)
    def _exported(self, message: ExportDone) -> None:
        show_export_notice(self, message)

    # -- labels ---------------------------------------------------------------------------

    def action_edit_label(self) -> None:
        model = self.model
        if model is None or model.selected_id is None:
            return
        entry_id = model.selected_id
        summary = display_text(model.summary(entry_id).plain(), 100)

        def done(label: str | None) -> None:
            if label is not None:
                self._write_label(entry_id, label)

        self.app.push_screen(label_prompt(model.tree.labels.get(entry_id), summary), callback=done)

    @work(thread=True, group="tree-label", exit_on_error=False, description="write label")
    def _write_label(self, entry_id: str, label: str) -> None:
        try:
            written = set_label(self.session_path, entry_id, label)
        except SessionError as error:
            self.post_message(self.LabelFailed(str(error)))
        except OSError as error:
            self.post_message(self.LabelFailed(f"{self.session_path}: {error.strerror or error}"))
        else:
            self.post_message(self.LabelWritten(entry_id, label, written.get("timestamp")))

    def on_session_tree_screen_label_written(self, message: LabelWritten) -> None:
        if self.model is not None:
            self.model.set_label(message.entry_id, message.label, message.timestamp)
            self._changed()
            if self.session is not None and self.model.selected_id is not None:
                self._preview_entry(self.model.selected_id)
            if self._reading_again is None:  # the file as written (the label is the new last line)
                self._read_again(None, own_lines=1)
            else:  # (read after it, once this reading is shown: it may have missed the label)
                self._reading_again.more += 1
        self.notify("Label saved" if message.label else "Label removed", timeout=2, markup=False)

    def on_session_tree_screen_label_failed(self, message: LabelFailed) -> None:
        self.notify(display_text(message.reason), title="Label not saved", severity="error", timeout=6, markup=False)


CHANGED_NOTE = (
    "The session changed on disk since it was read (an agent may be writing to it): it was read "
    "again. Enter resumes at the entry under the cursor once the file holds still."
)


def _carry_view(old: TreeModel, new: TreeModel, entry_id: str | None, follow_end: bool) -> None:
    """The view of the tree read before (`old`) on the one read again (`new`): its filter,
    search, folds and label times, and the cursor on `entry_id` (on the row of the new leaf
    when `follow_end`, or when the entry is no longer in the file)."""
    if new.filter_mode != old.filter_mode:
        new.set_filter(old.filter_mode)
    new.set_query(old.query)
    new.restore_folds(old.folded)
    new.show_label_times = old.show_label_times
    if entry_id is not None and not follow_end and entry_id in new.tree.by_id:
        new.select_id(entry_id)
    elif new.leaf_id is not None:
        new.select_id(new.leaf_id)


def _started(started_ms: float, now_ms: float) -> str:
    """When the session started, in words: a header stamped less than a minute ago is "just
    now", one stamped ahead of this clock (skew, or a hostile header) "in the future"."""
    if started_ms > now_ms + 60_000:
        return "started in the future"
    age = relative_age(started_ms, now_ms)
    return "started just now" if age == "now" else f"started {age} ago"
