"""The picker's search on each keystroke: the first screenful first, the whole ranking next (issue 14).

`SearchFlow` is mixed into `SessionPickerScreen`; its search worker (session_list.py) calls
`_run_search`, which ranks on the picker's search thread (app/search_thread.py: one
`SearchCache` user at a time) and sends the index query to its index thread (one SQLite
connection, kept: its signature is checked once), where it runs while the titles are ranked
(a key typed after a pause queues it from the UI thread once the echo's frame is out,
`_start_index_query`: before the worker and the term scan):

1. the title tiers (`core.search.first_hits`: exact, prefix, substring in an id, name or
   first message; no index query), which always rank first.  With at least
   `FIRST_PAGE_SESSIONS` sessions (fewer are ranked whole in ~40 ms, less than the frame a
   first page costs), when they fill a screen (`FIRST_PAGE_MIN` rows) and the order is the
   ranking (relevance, nothing pinned: recent, created and pins re-order what follows them),
   their first `FIRST_PAGE_MAX` rows are posted as `FirstPage`: the list shows them while
   the rest is ranked;
2. while the index query still runs, every term's scan of the sessions (`prescan`, kept
   in the `SearchCache` for the ranking), without the fuzzy tier: that one is looked for
   once the index has answered, only where it did not find the query (a full-text hit
   replaces a fuzzy match: at 100,000 sessions a prefix is in nearly every session's text);
3. the index's answer and every session's match (`search_iter`); under a first page, the
   count of the rows and lines they will make is posted then (`SearchCount`: the status
   line's count and the scrollbar, exact, before the hits are made and ranked: ~70 ms of
   CPU at 100,000 sessions).  Where the title hits were too few for a first page, the final
   order's first page is posted then, before the count (`Matched.first`: the first
   `FIRST_PAGE_MAX` hits of the final ranking, each tier's first chosen among the matches
   without making and ranking ~40,000 hits: a prefix of the final rows).  The index also
   names the sessions it was asked about that it holds no file of (`TextUnindexed`: another
   process emptied it, `seance index --rebuild`): the screen indexes them again and says
   meanwhile that the search is incomplete (session_list.py, `_text_unindexed`);
4. the full ranking and the hits' rows: `SearchDone`, whose rows replace the first page
   without moving the cursor (it stays on its session, which the first page's order put
   where the final order has it: a prefix of it), nor changing what is on screen.

A newer key cancels the worker (it checks between steps and chunks) and its first page and
count are dropped if they arrive late (rows generation, query text).  Without a first page
(a sort that is not the ranking, pins, fewer than `FIRST_PAGE_SESSIONS`, sessions not newest
first), the status line's count waits for the final rows (it would not count the rows shown).
After a listing, `_warm_search` folds the sessions' haystacks on the search
thread, in small steps that a keystroke's search overtakes, imports the fuzzy scorer, makes
the fork tree the hits' rows need, then opens the index thread's connection, so the first
key does not pay for them (~60 ms at 10,000 sessions, ~0.7 s at 100,000; rapidfuzz's
import ~15 ms, which was the first three-letter key's: 100-150 ms from a terminal against
~50 for the next ones; the fork tree ~6 ms, the first key's).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from seance.core import gcpause
from seance.core.gcpause import gc_paused
from seance.core.search import QueryError, SearchCache, first_hits, fuzzy_ahead, parse_query, prescan, search_iter
from seance.core.search.fuzzy import fuzzy_scorer
from seance.core.text import display_text

from ..messages import SearchDone, TextUnindexed
from ..search_thread import SearchThread

if TYPE_CHECKING:
    from textual.timer import Timer, TimerCallback
    from textual.worker import Worker

    from seance.core.catalog import SessionSource
    from seance.core.model import SessionSummary
    from seance.core.search import Matched

    from ..picker_model import PickerModel, RowsView
    from ..rows import RowSet
    from ..widgets.session_list import SessionList
    from ..widgets.status_bar import StatusBar

SEARCH_CHUNK = 1024  # sessions ranked between two checks for a newer key (and the warm-up's step)
FIRST_PAGE_MIN = 60  # title hits that fill a screen: fewer, and the first page is not shown
FIRST_PAGE_MAX = 200  # rows the first page holds (a screen, and a Page Down)
FIRST_PAGE_SESSIONS = 10_000  # below this many sessions the whole search takes ~40 ms: no first page (its frame
# would cost the UI thread more than the wait it saves)
FREEZE_HITS = 5000  # a search with this many hits freezes them (and their rows) out of the collector's reach
# before it lets the collector run again: they live until the next key, and a collection walking them
# (on the search thread as the pause ends, then on the UI thread) delayed the rows and stalled the echo
ROWS_ELSEWHERE = 10_000  # hits whose rows (~10 ms of CPU and more) are made on the search's worker thread, not
# on the search thread, where the next key's search would wait for them (`_run_search`); fewer are made at
# once (a hand-off to the worker thread cost ~1 ms, 3-6 ms at p90, at 10,000 sessions)
SEARCH_IDLE = 0.25  # seconds after a search's rows landed with no newer key: the idle work then (`_idle_after_search`)
_DONE = object()  # (`_fuzzy_ahead`: its steps are over)
NO_HIT_QUERY = "zqxjzqxj"  # what the warm-up asks the index: opens the connection, finds nothing


INDEX_POLL = 0.01  # seconds between two looks at a cancellation while a search waits for its index query


def _index_answer(query: Future[Mapping[str, Any]], cancelled: Callable[[], bool]) -> Mapping[str, Any] | None:
    """The index query's answer, or None once the search is `cancelled` (a newer key): the
    query is then dropped if it has not started.  A search used to wait for its answer
    whatever came meanwhile, and the index thread answered every key's query in turn: the
    first keys after a launch at 100,000 sessions, each queued behind the last (the first
    takes ~0.3 s on a cold connection), held the search thread, and the newest key's search
    behind them, for up to ~0.7 s (traced in a terminal)."""
    while True:
        try:
            return query.result(timeout=INDEX_POLL)
        except TimeoutError:
            if query.done():  # answered (or failed) just after the wait gave up: its answer, or its own error
                return query.result()
            if cancelled():
                query.cancel()
                return None


@dataclass
class FirstPage(Message):
    """The first rows of `query_text`'s ranking (its title hits), for rows request `generation`."""

    query_text: str
    rows: RowSet
    generation: int
    top: bool


@dataclass
class SearchCount(Message):
    """How many rows (`shown`, of `total` sessions) and lines the whole ranking of
    `query_text` will have, for rows request `generation`, known before it is ranked."""

    query_text: str
    shown: int
    total: int
    lines: int
    generation: int


class SearchFlow:
    """The search worker's body, its first page, and the warm-up before the first key."""

    first_page_sessions: int = FIRST_PAGE_SESSIONS  # tests lower it to see the first page
    _first_page_generation: int = -1  # the rows request whose first page the list shows
    _within: tuple[Sequence[SessionSummary], list[str]] | None = None  # `_paths_of`
    _warm_generation: int = 0
    _idle_timer: Timer | None = None  # `_idle_after_search`
    _early_index: tuple[int, Future[Mapping[str, Any]] | None] | None = None  # `_start_index_query`
    _searched_generation: int = 0  # the rows request of the newest search whose hits were taken (`_search_done`)
    _newest_search: int = 0  # the rows request of the newest search started (`_search`)
    _preview_held: int | None = None  # the rows request whose first page holds the preview back (`_preview_waits`)

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        catalog: SessionSource
        model: PickerModel
        _search_cache: SearchCache
        _rows_generation: int

        @property
        def session_list(self) -> SessionList: ...

        @property
        def status(self) -> StatusBar: ...

        def post_message(self, message: Message) -> bool: ...

        def set_timer(
            self, delay: float, callback: TimerCallback | None = None, *, name: str | None = None, pause: bool = False
        ) -> Timer: ...

        def _show_selection(self) -> None: ...

        def _show_preview(self, row: Any) -> None: ...

        def _rows_landed(self, generation: int) -> None: ...

    @property
    def _search_thread(self) -> SearchThread:
        """Where the ranking runs (one `SearchCache` user at a time)."""
        return self._thread_named("seance-search")

    @property
    def _index_thread(self) -> SearchThread:
        """Where the index queries run (one SQLite connection, its signature checked once)."""
        return self._thread_named("seance-index")

    def _thread_named(self, name: str) -> SearchThread:
        threads: dict[str, SearchThread] = self.__dict__.setdefault("_search_threads", {})
        thread = threads.get(name)
        if thread is None:
            thread = threads[name] = SearchThread(name)
        return thread

    def _close_search_thread(self) -> None:
        for thread in self.__dict__.pop("_search_threads", {}).values():
            thread.close()
        gcpause.release_hold()  # (a search's rows held the collector until idle: the screen is gone)

    def _text_excluded(self, query: Any, summaries: Sequence[SessionSummary], paths: bool) -> frozenset[str]:
        """The sessions whose text holds a negated word of `query` (`Catalog.text_excluded`),
        asked for in this worker before anything is ranked: a first page must not show one."""
        if not query.excluding():
            return frozenset()
        return self.catalog.text_excluded(query, include_cwd=paths, within=self._paths_of(summaries))

    def _paths_of(self, summaries: Sequence[SessionSummary]) -> list[str]:
        """The paths of `summaries`, one list per list of summaries (the index remembers the
        file-id runs it made for the same list object: `Index.search_by_path`)."""
        kept = self._within
        if kept is None or kept[0] is not summaries:
            kept = self._within = (summaries, [summary.path for summary in summaries])
        return kept[1]

    def _first_page_wanted(self, view: RowsView) -> bool:
        """The ranking is the order shown (a first page is a prefix of it) and long enough to wait for."""
        return (
            view.sort in ("threaded", "relevance")
            and not any(mark.pinned for mark in view.marks.values())
            and len(view.summaries) >= self.first_page_sessions
        )

    def _run_search(
        self,
        worker: Worker[Any],
        text: str,
        query: Any,
        view: RowsView,
        paths: bool,
        top: bool,
        generation: int,
        debounce: float,
    ) -> None:
        """Rank the hits on the search thread, then (`ROWS_ELSEWHERE` hits or more) make their
        rows here, on the search's worker thread: the UI thread only swaps them in.  The rows
        (~50 ms of CPU at 100,000 hits, in one piece) are not made on the search thread, where the next key's search
        queued behind them: at 100,000 sessions the ranking and rows run after the count is
        shown, and a key typed then waited up to ~140 ms (traced in tmux) for a search thread
        making the previous key's rows, which a cancellation does not interrupt."""
        if debounce:
            time.sleep(debounce)
        if worker.is_cancelled:
            return
        try:
            hits = self._search_thread.run(
                lambda: self._rank_and_post(worker, text, query, view, paths, top, generation)
            )
            if hits is not None and not worker.is_cancelled:
                self._post_rows(worker, text, view, hits, top, generation)
        except QueryError as error:  # a `re:` out of time (`core.search.userregex`): as an invalid query's
            if not worker.is_cancelled:
                self.post_message(SearchDone(text, [], error=f"invalid query: {error}", generation=generation))
        except Exception as error:  # a bug or a vanished cache: said on the status line, the rows stay
            if not worker.is_cancelled:
                failed = f"search failed: {display_text(error)}"
                self.post_message(SearchDone(text, [], error=failed, generation=generation))

    def _post_rows(
        self, worker: Worker[Any], text: str, view: RowsView, hits: list[Any], top: bool, generation: int
    ) -> None:
        """Make the ranked hits' rows and post them (`SearchDone`), unless a newer key came."""
        with gc_paused():  # (the collector is held already: `_rank_and_post`)
            rows = view.hit_rows(hits)
            if len(hits) >= FREEZE_HITS:  # before the collector is back: it would walk them at once
                gcpause.freeze_long_lived()
        if not worker.is_cancelled:
            self.post_message(SearchDone(text, hits, top=top, rows=rows, generation=generation))

    def _rank_and_post(
        self, worker: Worker[Any], text: str, query: Any, view: RowsView, paths: bool, top: bool, generation: int
    ) -> list[Any] | None:
        """The first page, the count, then every hit ranked; the rows of fewer than
        `ROWS_ELSEWHERE` hits are made and posted here (None: those, or cancelled)."""
        if worker.is_cancelled:
            return None
        every = summaries = view.visible()
        excluded = self._text_excluded(query, summaries, paths)
        if excluded:  # (`!wip` said past the title: that session is no row, however its title matches)
            summaries = [summary for summary in summaries if summary.path not in excluded]
        cache, marks = self._search_cache, self.model.marks
        early = self._early_index  # (set by the UI thread for a newer key meanwhile: not this one's)
        started = early is not None and early[0] == generation
        index_query = early[1] if early is not None and started else self._index_query(query, view, paths)
        # what the first page's scan and the scan while the index answers share
        scan: dict[str, Any] = {"paths": paths, "chunk": SEARCH_CHUNK, "cache": cache, "marks": marks}
        scan["cancelled"] = lambda: worker.is_cancelled
        with gc_paused():  # ~100,000 hits and rows at once: no collection walks them mid-build
            counted = None  # the first page is shown: its count is posted once the matches are known
            if self._first_page_wanted(view):
                first = first_hits(summaries, query, **scan, limit=FIRST_PAGE_MAX)
                if first is None:
                    return None
                if len(first) >= FIRST_PAGE_MIN:
                    self.post_message(FirstPage(text, view.hit_rows(first), generation, top))
                    counted = self._count_poster(worker, text, view, generation)
                else:  # too few title hits: the final order's first page, with the count, once every match is known
                    counted = self._count_poster(worker, text, view, generation, first_page_top=top)
            if index_query is not None and not index_query.done():  # scan the terms meanwhile
                scanned = prescan(summaries, query, **scan)
                if not scanned:
                    return None
            text_hits: Mapping[str, Any] = {}
            if index_query is not None:
                try:
                    answer = _index_answer(index_query, lambda: worker.is_cancelled)
                    if answer is None:
                        return None
                    text_hits = answer
                    # the listed sessions the index lost (session_list.py indexes them again)
                    self.post_message(TextUnindexed(getattr(answer, "unindexed", ()), generation))
                except Exception as error:  # no index yet, or FTS unavailable: rank without it
                    self.post_message(
                        SearchDone(text, [], error=f"full-text search unavailable: {display_text(error)}")
                    )
            hits: list[Any] = []
            for step in search_iter(
                summaries,
                query,
                text_hits=text_hits,
                paths=paths,
                chunk=SEARCH_CHUNK,
                cache=cache,
                marks=marks,
                on_matched=counted,
                # (the index's `within`: its hits by position; sessions left out, by path)
                summary_paths=self._paths_of(summaries) if summaries is every else None,
            ):
                if worker.is_cancelled:
                    return None
                if step.hits is not None:
                    hits = step.hits
                else:
                    time.sleep(0)  # let the UI thread take the GIL between chunks
            if worker.is_cancelled:
                return None
            # no collection until the keys stop (`_idle_after_search`): not of these hits as this
            # pause ends, nor while their rows are made (`_post_rows`), nor in their frame
            gcpause.hold_until_idle()
        if len(hits) < ROWS_ELSEWHERE:  # (a few ms: here, without a hand-off to the worker thread)
            self._post_rows(worker, text, view, hits, top, generation)
            return None
        return hits

    def _count_poster(
        self, worker: Worker[Any], text: str, view: RowsView, generation: int, first_page_top: bool | None = None
    ) -> Callable[[Matched], None]:
        """What posts the search's `SearchCount` once its matches are known (`search_iter`'s
        `on_matched`): the count and the scrollbar of the whole ranking, ~70 ms of CPU at
        100,000 sessions before its hits are made, ranked and given rows (which then change
        nothing on screen under the first page: a prefix of them).  With `first_page_top`
        (no first page of title hits was shown), the final order's first page comes first
        (`Matched.first`: its first `FIRST_PAGE_MAX` hits, made without ranking the rest),
        shown from the top if `first_page_top`; none when there is no hit (nor the count)."""

        def post(matched: Matched) -> None:
            if not worker.is_cancelled:
                if first_page_top is not None:
                    first = matched.first(FIRST_PAGE_MAX)
                    if not first:  # (no hit, or the sessions are not newest first: the final rows come as before)
                        return
                    self.post_message(FirstPage(text, view.hit_rows(first), generation, first_page_top))
                shown, lines = view.hit_lines(matched)
                self.post_message(SearchCount(text, shown, len(view.visible()), lines, generation))

        return post

    def _index_query(self, query: Any, view: RowsView, paths: bool) -> Future[Mapping[str, Any]] | None:
        """`query`'s index query (every hit, made lazily: the rows on screen make their
        snippets), queued on the index thread; None when it needs none."""
        if not query.fts_match():
            return None
        within = self._paths_of(view.visible())  # (hits keyed by these strings: fast lookups)
        return self._index_thread.submit(lambda: self.catalog.text_hits(query, include_cwd=paths, within=within))

    def _start_index_query(self, query: Any, view: RowsView, paths: bool, generation: int) -> None:
        """Start the index query of a key typed after a pause from the UI thread, once the
        echo's frame is out, for the search of rows request `generation` to take up
        (`_rank_and_post`).  The query (its SQL runs without the GIL) is the longest step of
        a keystroke's search, and started ~10 ms after the key: behind a worker, the search
        thread's hop and the term scan, which held the GIL the index thread needed.  (Before
        the echo's frame it slowed the echo: on two cores, SQL, the frame and the terminal
        drawing it compete.)"""
        self._early_index = (generation, self._index_query(query, view, paths))

    def on_first_page(self, message: FirstPage) -> None:
        """Show the first page, unless a newer key or another change of the rows came since."""
        if message.generation != self._rows_generation or message.query_text != self.model.query:
            return
        self._first_page_generation = message.generation
        self._preview_held = message.generation
        self._show_selection()
        # the status count and the scrollbar stay as they were until the search's count comes (`SearchCount`)
        widget = self.session_list
        widget.set_rows(message.rows, top=message.top, lines_at_least=widget.virtual_size.height)
        self._rows_landed(message.generation)  # key_order.py: a prefix of the final rows, which keep the cursor

    def on_search_count(self, message: SearchCount) -> None:
        """The whole ranking's count and scrollbar under its first page, ahead of its rows
        (which then change neither), unless a newer key or another change of the rows came."""
        if (
            message.generation != self._rows_generation
            or message.generation != self._first_page_generation
            or message.query_text != self.model.query
        ):
            return
        self.status.shown, self.status.total = message.shown, message.total
        self.session_list.expect_lines(message.lines)
        self._release_preview()

    def _preview_waits(self) -> bool:
        """Whether the preview waits for the search under a first page: its session (the
        first page's top row) is read and drawn once the list has settled (the count shown,
        `_release_preview`).  At 100,000 sessions the first page comes ~100 ms before the
        count, and the preview's read and two frames (~40 ms of the UI thread's CPU, as much
        on its worker, 120 ms after the highlight: `ContextPreview`'s debounce) landed in the
        middle of the index hits' merge the count waits for, on a 2-core machine."""
        return self._preview_held is not None and self._preview_held == self._rows_generation

    def _release_preview(self) -> None:
        """The list settled (the first page's count, or any final rows): preview its highlighted row."""
        if self._preview_held is not None:
            self._preview_held = None
            self._show_preview(self.session_list.highlighted)

    def _final_top(self, generation: int, top: bool) -> bool:
        """Whether the search's final rows move the cursor to the top: not when its first page
        is on screen (the user may have moved since; the cursor stays on its session)."""
        return top and self._first_page_generation != generation

    def _idle_after_search(self, rows: RowSet | None) -> None:
        """A search's rows are on screen: once no key has come for `SEARCH_IDLE`, do what
        waits for the keys to stop (one timer, restarted by every search's rows):

        * collect the garbage (`gcpause.collect_idle`: the unfrozen objects only, a
          keystroke's worth), and let the collector run again: a search holds it stopped
          from its hits until then (`gcpause.hold_until_idle`), so no collection walks them
          on the search thread or in the middle of their frame.  Each key leaves cyclic garbage (Textual's strips cache
          themselves) that the collector otherwise finds in a full collection in the middle
          of a later key's search (35-70 ms at 10,000 sessions, the slow keys' share of the
          settled time);
        * make `rows`' path -> row table (`RowSet.make_index`, `RowSet` index_later) on the
          search thread: ~30 ms of CPU at 100,000 hits that, made right after the rows went
          out, competed with the UI thread drawing them (two cores) on every key, for a
          table a typed key's rows seldom need (the cursor is looked for in the first rows
          first: `RowSet.position`; a row further down makes it)."""
        if self._idle_timer is not None:
            self._idle_timer.stop()
        generation = self._rows_generation

        def idle() -> None:
            gcpause.collect_idle()
            if rows is not None and generation == self._rows_generation:
                self._search_thread.soon(lambda: rows.make_index() if generation == self._rows_generation else None)
            if generation == self._rows_generation:
                self._fuzzy_ahead(generation)

        self._idle_timer = self.set_timer(SEARCH_IDLE, idle)

    def _fuzzy_ahead(self, generation: int) -> None:
        """Once the keys stopped after a word and a space (`_idle_after_search`): the query's
        fuzzy tier in every session where its terms' scans found nothing (`fuzzy_ahead`), kept
        in the search cache for the next word's keys, whose search looks for it only where the
        index did not find the query: for a second word's first keys, most sessions (~17 ms of
        CPU before the count of `'fts5 c'` at 100,000 sessions).  A chunk at a time on the
        search thread: a key typed meanwhile is searched first, and ends it."""
        text = self.model.query
        if not text[-1:].isspace():
            return
        try:
            query = parse_query(text)
        except QueryError:
            return
        summaries, paths = self.model.search_view().visible(), self.model.scope == "all"
        cache, thread = self._search_cache, self._search_thread
        steps = fuzzy_ahead(summaries, query, paths=paths, chunk=SEARCH_CHUNK, cache=cache, marks=self.model.marks)

        def step() -> None:
            if generation != self._rows_generation:
                return  # a newer key (its search went first, and the fuzzy tier it needs is its own)
            with gc_paused():
                if next(steps, _DONE) is _DONE:
                    return
            thread.soon(step)

        thread.soon(step)

    def _warm_search(self, view: RowsView, paths: bool) -> None:
        """Fold `view`'s sessions for the search, load the fuzzy scorer, make the fork tree
        and open the index connection, on the search thread, a chunk at a time (a search
        asked for meanwhile goes first)."""
        self._warm_generation += 1
        generation, summaries = self._warm_generation, view.visible()
        cache, thread, index_thread = self._search_cache, self._search_thread, self._index_thread
        starts = list(range(0, len(summaries), SEARCH_CHUNK))

        def step(at: int) -> None:
            if generation != self._warm_generation:
                return  # a newer listing: warm that one instead
            if at < len(starts):
                with gc_paused():
                    cache.block(summaries[starts[at] : starts[at] + SEARCH_CHUNK])
                thread.soon(lambda: step(at + 1))
                return
            fuzzy_scorer()  # rapidfuzz's import (~15 ms), paid by the first fuzzy key otherwise
            view.child_count()  # the fork tree every search's rows need (`RowsMemo.parents`: ~6 ms)
            within = self._paths_of(summaries)
            index_thread.soon(lambda: opened(within))

        def opened(within: list[str] | None) -> None:
            try:
                self.catalog.text_hits(parse_query(NO_HIT_QUERY), include_cwd=paths, within=within)
            except Exception:  # the search will say what is wrong with the index
                return

        thread.soon(lambda: step(0))


__all__ = ["FIRST_PAGE_MAX", "FIRST_PAGE_MIN", "FREEZE_HITS", "FirstPage", "SearchCount", "SearchFlow"]
