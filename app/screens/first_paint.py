"""The picker's first rows on a warm start, from what the index already knows (issue 14).

`FirstPaint` is mixed into `SessionPickerScreen`.  A warm launch used to wait for the exact
refresh (every file discovered, every index row checked and decoded) before its first row.
Now the scope (the project, or every project) is painted first from the index's stored rows
(`Catalog.stored`, `core.firstpaint`: the newest few screens' worth): files gone since are
left out, new ones read from their first 4 KB, changed ones shown as last indexed.  The
exact refresh follows and replaces the listing (the picker keeps its cursor on the same
session once the user has moved it).

* `seance pick` makes that listing before it imports Textual
  (`Catalog.prefetch_stored`); `_paint_prefetched` (on mount) takes it, so the first frame
  already has rows.
* Otherwise (a host's catalog) the load worker asks for it (`_post_stored`).
* Once the first rows are drawn, the load worker lists the other scope from the index, its
  first screens then the whole of it (`_post_other_stored`; launched in a big project, the
  project whole is picked from every project's: `_post_project_of`), before the exact
  refresh (only for an index of at most `STORED_AHEAD_MOST` files), the whole from the
  first screens' read of the index (`core.firstpaint.StoredRead`), with its rows, made
  in the load worker before the listing is posted (`_make_rows_here`): a Tab while the
  refresh runs finds every session of that scope listed and its rows made, rather than its
  first screens ("300 of 10,000") and then the refresh's rows made after it lands (0.15-0.6
  s after the Tab at 10,000 sessions on a busy machine); a Tab before the whole listing
  shows the first screens, then every row in the handler that takes the whole listing.
  The refresh (which reuses the summaries decoded for it: `Catalog.keep_decoded`) lists
  both scopes and replaces them when it lands (the cursor stays on its session), or, when
  it found nothing changed, keeps them and their rows (`PickerModel.as_listed`): the screen
  does not change.  No second refresh starts.  A Tab before they are made (or on a bigger
  index) asks for them then (`_paint_stored_meanwhile`).  A Tab just
  after the refresh landed, while that scope's rows (100 ms and more at 10,000 sessions) are
  made in a worker, shows them as a stand-in meanwhile (`_show_stand_in`).
* Either way the exact refresh waits until the first rows are drawn (at most
  `FIRST_ROWS_WAIT`): it would hold the GIL while the UI thread draws them.  So does the
  file watcher (`_watch_after_first_frame`): watchfiles holds the GIL while it sets up.

A host's `SessionSource` need not have `stored` / `prefetched`: then nothing changes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from seance.core.catalog import in_project
from seance.core.gcpause import gc_paused
from seance.core.model import SessionSummary

from ..messages import SessionsLoaded
from ..rows import plain_rows

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from seance.core.catalog import SessionSource

    from ..picker_model import PickerModel, RowsView
    from ..rows import SessionRow
    from ..widgets.session_list import SessionList
    from ..widgets.status_bar import StatusBar


@dataclass
class StoredReady(Message):
    """A scope's stored first screens, made while the exact refresh runs (Tab meanwhile)."""

    scope: str
    summaries: list[SessionSummary]
    total: int
    whole: bool = False  # every session of the scope, after its first screens


FIRST_ROWS_WAIT = 1.0
"""Seconds the exact refresh and the watcher wait for the stored rows to be drawn."""
STORED_AHEAD_MOST = 30_000
"""The other scope's stored first screens are made ahead (in case of a Tab) only for an
index of at most this many files: every project's stored listing costs ~35 ms of CPU at
10,000 sessions, 0.35 s at 100,000, beside the exact refresh."""
STAND_IN_ROWS = 300
"""A Tab before the other scope's rows are made shows its newest this many sessions meanwhile."""
SETTLE_REFRESHES = 3
"""Screen refreshes after the first rows before that work starts: the status line and the
footer come a refresh or two after the rows (a worker holding the GIL would delay them)."""


class FirstPaint:
    """The stored first rows of a scope, and the wait for them to be drawn."""

    _stored_scope: str | None = None  # the scope painted from the store before its first load
    _first_rows: threading.Event | None = None  # set once rows have been drawn
    _closed = False  # unmounted
    _drawing = False  # the first rows are being drawn
    _watch_wanted = False  # the watcher starts with the first rows
    _totals: dict[str, int] | None = None  # see `_stored_totals`
    _stand_in_lists: dict[str, list[SessionSummary]] | None = None  # see `_stand_ins`
    _making_ahead: str | None = None  # the scope the load worker makes stored rows of (`_post_other_stored`)

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        catalog: SessionSource
        cwd: str
        model: PickerModel
        _loading: set[str]  # scopes whose exact listing has not come in yet

        def post_message(self, message: Message) -> bool: ...

        def _rebuild(self, *, top: bool = False) -> None: ...

        def _set_rows(self, rows: Sequence[SessionRow], *, top: bool) -> None: ...

        def _watch(self) -> None: ...

        def _inline(self, view: RowsView) -> bool: ...

        def _rows_ahead_worker(self, view: RowsView) -> object: ...

        def call_after_refresh(self, callback: Callable[..., object], *args: object) -> bool: ...

        @property
        def status(self) -> StatusBar: ...

        @property
        def session_list(self) -> SessionList: ...

    @property
    def _stored_totals(self) -> dict[str, int]:
        """scope -> how many sessions it has, while it shows the stored first screens."""
        if self._totals is None:
            self._totals = {}
        return self._totals

    @property
    def _rows_drawn(self) -> threading.Event:
        if self._first_rows is None:
            self._first_rows = threading.Event()
        return self._first_rows

    def _paint_prefetched(self) -> None:
        """On mount: the project as `Catalog.prefetch_stored` read it before Textual was imported
        (or, a thread's, waited for if not quite done), listed before the first frame."""
        prefetched, scope = getattr(self.catalog, "prefetched", None), self.model.scope
        if prefetched is None or not prefetched(self._stored_cwd(scope)):
            return
        first = self.catalog.stored(self._stored_cwd(scope))  # type: ignore[attr-defined]  # it has `prefetched`
        if not first:
            return
        self._stored_scope = scope
        self._stored_totals[scope] = getattr(first, "total", len(first))
        self._loading.add(scope)  # (`_load` follows at once)
        self.model.loaded(scope, first, exact=False)
        self._rebuild(top=True)  # a few screens' worth: made here (row_flow.py), in the first frame

    def _stored_cwd(self, scope: str) -> str | None:
        return self.cwd if scope == "project" else None

    def _stored_now(self, scope: str, *, ahead: bool = False, whole: bool = False) -> list[SessionSummary] | None:
        """`catalog.stored` for `scope` (in a worker), or None: a host's source may not have it,
        and a first paint that fails is only a first paint (the exact refresh follows).
        `ahead`: made in case of a Tab, only for an index of at most `STORED_AHEAD_MOST` files;
        `whole`: every session of the scope, not its first screens (None from a host's source
        that lists first screens only)."""
        stored = getattr(self.catalog, "stored", None)
        try:
            if stored is None:
                return None
            if not ahead:
                return stored(self._stored_cwd(scope))
            if not whole:
                return stored(self._stored_cwd(scope), most=STORED_AHEAD_MOST)
            try:
                return stored(self._stored_cwd(scope), most=STORED_AHEAD_MOST, whole=True)
            except TypeError:
                return None
        except Exception:
            return None

    def _listed_exactly(self, scope: str) -> bool:
        """The scope has rows that are not only the stored first paint (a reload)."""
        return scope in self.model.summaries and scope != self._stored_scope

    def _post_stored(self, scope: str, generation: int) -> None:
        """In the load worker, before the exact refresh: the stored rows, unless painted on mount
        already; then wait (bounded) until rows are drawn."""
        if scope != self._stored_scope:
            first = self._stored_now(scope)
            if not first or get_current_worker().is_cancelled:
                return
            self._stored_totals[scope] = getattr(first, "total", len(first))
            self.post_message(SessionsLoaded(scope, first, False, generation))
        self._rows_drawn.wait(FIRST_ROWS_WAIT)
        if not get_current_worker().is_cancelled:
            self._post_other_stored(scope, generation)

    def _post_other_stored(self, scope: str, generation: int) -> None:
        """In the load worker, once the first rows are drawn and before the exact refresh: the
        other scope's stored first screens (`StoredReady`), so that a Tab while the refresh runs
        finds them listed, then that scope whole (a Tab then finds every session listed, its
        rows made ahead).  Made before the refresh rather than beside it: beside it they took
        the GIL in turns with it (270 ms instead of 35 at 10,000 sessions on a busy machine).
        The first screens come first (~35 ms of CPU at 10,000 sessions, the whole from the
        same read ~130, its rows ~30): a Tab just after the launch waits for them."""
        other = "all" if scope == "project" else "project"
        self._making_ahead = other  # a Tab meanwhile waits for these
        try:
            with gc_paused():  # 10,000 summaries, then their rows: no collection walks them mid-build (-20%)
                self._post_other_listings(other, generation)
        finally:
            self._making_ahead = None

    def _post_other_listings(self, other: str, generation: int) -> None:
        """`_post_other_stored`'s listings of the scope `other`, and the rows of the whole one."""
        first = self._stored_now(other, ahead=True) or []
        if get_current_worker().is_cancelled:
            return
        total = getattr(first, "total", len(first))
        self.post_message(StoredReady(other, first, total))  # (none: a Tab meanwhile asks for them)
        if not first or len(first) >= total:
            return
        whole = self._stored_now(other, ahead=True, whole=True)
        if whole and len(whole) > len(first) and not get_current_worker().is_cancelled:
            self._make_rows_here(whole)
            self.post_message(StoredReady(other, whole, getattr(whole, "total", len(whole)), whole=True))
            if other == "all":
                self._post_project_of(whole, generation)

    def _make_rows_here(self, summaries: list[SessionSummary]) -> None:
        """In the load worker: the rows of a whole listing, made before it is posted (the
        model's `RowsMemo` keeps them): the handler that takes it, or a Tab that waited for
        it, shows every row at once.  Made in a worker after it was posted, they came
        ~0.1-0.2 s later at 10,000 sessions: the worker started once the UI thread had
        handled the listing, beside the exact refresh, which had started meanwhile and held
        the GIL."""
        self.model.listing_view(summaries).plain_rows()  # (the collector paused by the caller)

    def _post_project_of(self, every: list[SessionSummary], generation: int) -> None:
        """In the load worker: the project whole, picked from every project's whole listing
        (no summary decoded again), when its first paint had only its first screens ("300 of
        4,001"): the refresh then finds it listed as it would list it and keeps it with its
        rows (`PickerModel.as_listed`), instead of changing the screen when it lands."""
        listed, total = self.model.summaries.get("project"), self._stored_totals.get("project")
        if listed is None or total is None or len(listed) >= total:
            return
        project = in_project(every, self.cwd)
        if len(project) > len(listed) and not get_current_worker().is_cancelled:
            self._stored_totals["project"] = len(project)
            self.post_message(SessionsLoaded("project", project, False, generation))

    def _paint_stored_meanwhile(self, scope: str) -> None:
        """Tab to a scope not listed yet while the exact refresh (which lists every scope) is
        under way: its stored first screens now (`StoredReady`), the refresh's answer when it
        comes, rather than a second refresh."""
        self._loading.add(scope)
        if self._making_ahead != scope:  # (else the load worker is making them: `StoredReady` follows)
            self._stored_worker(scope)

    @work(thread=True, exclusive=True, group="stored", exit_on_error=False, description="stored rows")
    def _stored_worker(self, scope: str) -> None:
        first = self._stored_now(scope)
        if first and not get_current_worker().is_cancelled:
            self.post_message(StoredReady(scope, first, getattr(first, "total", len(first))))

    def on_stored_ready(self, message: StoredReady) -> None:
        scope = message.scope
        if not message.summaries:  # none made ahead (a big index): a Tab that waited for them asks
            if scope == self.model.scope and scope in self._loading and scope not in self.model.summaries:
                self._stored_worker(scope)
            return
        # (made moments ago, whichever came first; a whole listing's first screens, shown while its rows are made)
        self._stand_ins[scope] = message.summaries[:STAND_IN_ROWS]
        listed = scope in self.model.summaries
        if listed and not (message.whole and scope in self._loading):  # the exact listing came first, or made twice
            return
        self._loading.add(scope)  # the exact refresh under way lists it
        self._stored_totals[scope] = message.total
        self.model.loaded(scope, message.summaries, exact=False)
        if scope == self.model.scope:
            self.status.listing = False
            self._rebuild(top=not listed or not self.session_list.touched)
        else:  # a Tab while the refresh runs finds these rows made; the refresh, if nothing changed, keeps them
            self._rows_ahead_of(scope)

    def _rows_ahead_of(self, scope: str) -> None:
        """Make the rows of `scope` (the other one, listed whole from the store) in a worker,
        for a Tab to find made (row_flow.py's `RowsMemo`): a whole listing's rows were made
        with it (`_make_rows_here`), unless the sort, the filters or the marks changed since,
        and the worker finds them; it says that they live as long as the picker."""
        view = self.model.other_view()
        if view is not None and scope != self.model.scope and not self._inline(view):
            self._rows_ahead_worker(view)

    @property
    def _stand_ins(self) -> dict[str, list[SessionSummary]]:
        """scope -> its stored first screens, made ahead (`_post_other_stored`)."""
        if self._stand_in_lists is None:
            self._stand_in_lists = {}
        return self._stand_in_lists

    def _show_stand_in(self, view: RowsView, top: bool) -> bool:
        """A long listing's rows are being made in a worker (a Tab just after the exact refresh
        landed, before the other scope's rows were made ahead): show that scope's stored first
        screens meanwhile, once, rather than the other scope's rows under this scope's status.
        Sessions gone since (deleted, or not in the exact listing) are left out; the worker's
        rows replace them with the cursor on its session.  False when there are none."""
        stand_in = self._stand_ins.pop(self.model.scope, None) if self._stand_in_lists else None
        if stand_in is None or view.hits is not None or view.summaries is stand_in:
            return False
        known = self.model.known  # every listed path, a deleted one forgotten
        named = view.named_only
        shown = [s for s in stand_in if s.path in known and (not named or (s.name and s.name.strip()))]
        if not shown:
            return False
        self._set_rows(plain_rows(shown, view.sort, view.marks, view.children), top=top)
        self.status.total = max(self.status.total, len(view.visible()))  # "300 of 10,000 sessions"
        return True

    def _drop_stand_ins(self) -> None:
        """The rows of both exact listings are made (or being made, `_make_rows_ahead`): the
        stored first screens, older by the minute from now on, are shown no more."""
        self._stand_in_lists = None

    def _rows_shown(self, rows: Sequence[SessionRow]) -> None:
        """Rows were handed to the list: once drawn, a waiting refresh may go on.  While they
        are a big project's stored first screens, the status counts the whole project
        ("300 of 39,623 sessions") until the exact refresh lists them all."""
        if rows and not self._drawing:
            self._drawing = True
            self._after_refreshes(SETTLE_REFRESHES, self._first_rows_drawn)
        scope = self.model.scope
        total = self._stored_totals.get(scope)
        if total is None:
            return
        if scope not in self._loading:  # the exact listing is in
            del self._stored_totals[scope]
        elif not (self.model.searching or self.model.named_only):
            self.status.total = max(self.status.total, total)

    def _after_refreshes(self, count: int, callback: Callable[[], object]) -> None:
        """`callback()` after `count` more refreshes of the screen."""
        if count <= 0:
            callback()
        else:
            self.call_after_refresh(self._after_refreshes, count - 1, callback)

    def _first_rows_drawn(self) -> None:
        """The first rows and what comes with them (status line, footer) are on screen: the
        GIL-heavy work may start, the exact refresh and the file watcher (setting up the OS
        watch holds the GIL for as long as it walks the roots: 0.4 s at 100,000 sessions)."""
        self._rows_drawn.set()
        if self._watch_wanted and not self._closed:
            self._watch_wanted = False
            self._watch()

    def _watch_after_first_frame(self) -> None:
        """Follow the roots once the first rows are drawn (at the latest after `FIRST_ROWS_WAIT`:
        an empty scope has none)."""
        self._watch_wanted = True
        self.set_timer(FIRST_ROWS_WAIT, self._first_rows_drawn)  # type: ignore[attr-defined]  # the Screen's

    def _stop_waiting(self) -> None:
        """Unmounting: a worker waiting for the first rows goes on (and sees it is cancelled);
        a watch not started yet is not started."""
        self._closed = True
        self._rows_drawn.set()


__all__ = ["FIRST_ROWS_WAIT", "STORED_AHEAD_MOST", "FirstPaint", "StoredReady"]
