"""Making the session list's rows without making the UI thread wait (issue 14).

`RowMaking` is mixed into `SessionPickerScreen`.  Every change of what the list shows (a
listing arrived, a live merge, Tab, Ctrl+S, Alt+C, Ctrl+N, pins) asks `_make_rows` for rows
from a frozen `RowsView` of the model.  A short list (up to `rows_inline_max` sessions, a
fraction of a frame) is ordered on the spot; a longer one in a worker thread, which posts
`RowsReady`: ordering, the fork tree, the hidden children and the line/index tables of
100,000 sessions happen there, and the UI thread only swaps in the finished `RowSet`, whose
rows are made as they are drawn (meanwhile a Tab shows the scope's stored first screens if it
has them: first_paint.py's stand-in).  Each request has a generation: rows made for a state that
has changed since are dropped (the newer request's rows follow); the landing of the newest
request's rows lets the keys waiting for them run (key_order.py).  The search worker makes its
hits' rows in its own thread the same way (`RowsView.hit_rows`).  Alt+C's "N child sessions" is counted off the UI
thread too (`ChildrenCounted`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message
from textual.worker import get_current_worker

from seance.core.gcpause import gc_paused
from seance.core.listing import ChildMode

from ..messages import LongLivedDataLoaded
from ..rows import RowSet

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..picker_model import PickerModel, RowsView
    from ..rows import SessionRow
    from ..widgets.session_list import SessionList

ROWS_INLINE_MAX = 2000
"""Up to this many sessions, rows are made on the UI thread (a few ms: no thread hop, no
intermediate frame); above, in a worker."""


@dataclass
class RowsReady(Message):
    """A worker made the rows of request `generation`."""

    rows: RowSet
    generation: int
    top: bool


@dataclass
class ChildrenCounted(Message):
    """How many child sessions the listing has, for Alt+C's notice."""

    mode: ChildMode
    count: int


class RowMaking:
    """Rows from the model, on the UI thread for a short list and in a worker for a long one."""

    rows_inline_max: int = ROWS_INLINE_MAX  # tests lower it to see the worker path
    _rows_generation: int = 0  # the latest request; rows made for an older one are dropped
    _stand_in_generation: int = 0  # the request whose stand-in rows are on screen (`_show_stand_in`)

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        model: PickerModel

        def post_message(self, message: Message) -> bool: ...

        def _set_rows(self, rows: Sequence[SessionRow], *, top: bool) -> None: ...

        def _children_notice(self, mode: ChildMode, count: int) -> None: ...

        def _show_stand_in(self, view: RowsView, top: bool) -> bool: ...

        def _drop_stand_ins(self) -> None: ...

        def _rows_landed(self, generation: int) -> None: ...

        @property
        def session_list(self) -> SessionList: ...

    def _next_rows_generation(self) -> int:
        """A new request: whatever rows an earlier one is still making will not be shown."""
        self._rows_generation += 1
        return self._rows_generation

    def _make_rows(self, view: RowsView, top: bool) -> None:
        """Show the rows of `view` (its hits' if it has hits, else the plain listing)."""
        generation = self._next_rows_generation()
        remembered = view.remembered_rows()  # made before (Tab back, made ahead): no worker round trip
        if remembered is not None:
            self._set_rows(remembered, top=top)
            self._rows_landed(generation)
        elif self._inline(view):
            self._set_rows(view.rows(), top=top)
            self._rows_landed(generation)
        else:
            stand_in = self._show_stand_in(view, top)  # first_paint.py: a Tab's rows meanwhile
            if stand_in:
                self._stand_in_generation = generation
            self._rows_worker(view, generation, top)
            if stand_in:  # (the scope's sessions, no query: the keys waiting act on them; after the
                self._rows_landed(generation)  # worker started: one of them may ask for newer rows)

    def _inline(self, view: RowsView) -> bool:
        return len(view.summaries) <= self.rows_inline_max

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False, description="make rows")
    def _rows_worker(self, view: RowsView, generation: int, top: bool) -> None:
        with gc_paused():  # 100,000 rows' tree and tables: no collection walks them mid-build
            rows = view.rows()
        if not get_current_worker().is_cancelled:
            self.post_message(RowsReady(rows, generation, top))

    def _make_rows_ahead(self, view: RowsView | None) -> None:
        """Make `view`'s rows in the background, for the model to remember (`RowsMemo`): the
        other scope's listing, so that Tab finds its rows made (0.1-0.7 s of CPU otherwise).
        From now on a Tab finds them made or waits for these: no stand-in is shown any more."""
        self._drop_stand_ins()  # first_paint.py
        if view is not None and not self._inline(view):
            self._rows_ahead_worker(view)

    @work(thread=True, exclusive=True, group="rows-ahead", exit_on_error=False, description="make rows ahead")
    def _rows_ahead_worker(self, view: RowsView) -> None:
        with gc_paused():
            view.plain_rows()
        if not get_current_worker().is_cancelled:  # rows kept as long as the picker, made after the
            # listing's objects were frozen: out of the collector's reach too (every full
            # collection walked 13,000 unfrozen rows at 10,000 sessions)
            self.post_message(LongLivedDataLoaded(self))  # type: ignore[arg-type]

    def on_rows_ready(self, message: RowsReady) -> None:
        if message.generation == self._rows_generation:
            moved = message.generation == self._stand_in_generation and self.session_list.touched
            self._set_rows(message.rows, top=message.top and not moved)  # moved on the stand-in: it stays
            self._rows_landed(message.generation)

    def _count_children(self, view: RowsView, mode: ChildMode) -> None:
        """Alt+C's notice: counted here for a short list, by a worker for a long one."""
        if self._inline(view):
            self._children_notice(mode, view.child_count())
        else:
            self._children_worker(view, mode)

    @work(thread=True, exclusive=True, group="children", exit_on_error=False, description="count children")
    def _children_worker(self, view: RowsView, mode: ChildMode) -> None:
        self.post_message(ChildrenCounted(mode, view.child_count()))

    def on_children_counted(self, message: ChildrenCounted) -> None:
        self._children_notice(message.mode, message.count)


__all__ = ["ROWS_INLINE_MAX", "ChildrenCounted", "RowMaking", "RowsReady"]
