"""`seance ls --json --query` and `resolve` from the index: work per hit and candidate, not per session.

`Catalog.matching_pi_json` brings the index up to date (one stat per file, then every row
loaded and checked), builds a ranking record for every session and ranks them all, holding
every row's payload.  Here, for a query of plain words and phrases (no field filter, mark,
negation or regex: `supported`), the same answer comes from:

- **freshness**: the files found (one stat each, as every listing does) against the
  index's (path, size, mtime_ns) of every file, compared in C.  A new, changed or never
  text-indexed file makes the answer `Stale`: the catalog reads those files (a few) or
  takes the refreshing path (many), so a stale index is never trusted.  A file gone from
  the roots is never listed (only files found now are).  An append changes nothing but
  the file's own stat, so nothing cheaper than a stat per file is exact.
- **every row checked**: each row's CRC (its values and its payload, as `Index.rows`
  checks it) in C-level maps, payloads dropped (`Index.query_rows`): a damaged value never
  ranks, orders or scopes, and sends the query to the refreshing path, which heals it.
- **the full-text hits**: FTS5, one (field, row) per file (`Index.best_fields`).
- **the title candidates**: a session can rank above the full-text tier (or match without a
  full-text hit: fuzzy, cwd, path) only if every term is in its stored folded title (or a
  fuzzy match of the line it shows, or in its path/cwd in the all-projects scope).  Those
  are found in bulk over all titles joined in one string (C `find`, one regex with
  `fuzzy_match`'s rule: only `rank`'s fuzzy hits are candidates; the fuzzy regex and the
  paths matter only for sessions without a full-text hit, so when those are few only their
  titles are searched).  A candidate with every term inside its name or first
  message, starting neither and not in its id, is in the substring tier whatever else
  (`rank`'s exact and prefix tiers need a start, its id tier a prefix): those are found in
  the same pass (`_Joined.rows`' `plain`: for a word in every session, most of them); only
  the others go through `rank.search` (`search.stored.rank_hits`), which decides their tier.
- **every other full-text hit** is ranked without `rank`: its tier is full text (some term
  is not in its title; `rank._Matcher._merge_text_hits` counts such a term as a full-text match),
  its order within the tier is `rank`'s (hits in what people wrote first, then newest first).
- **the output**: the hits' stored objects, kept from the check up to `PAYLOAD_BUDGET`,
  the rest read again in chunks and checked against their row (`Index.checked_payloads`);
  or, for an answer of most sessions from kept rows, every session's stored objects
  (`core.queryobjects`), written as views of them (`Catalog.query_json_views`): no row is
  made for such an answer (`_Taken`).

tests/test_indexquery.py compares each with `Catalog.matching_pi_json` / `exact_where`'s
refreshing path (itself compared with ranking every summary in tests/test_cli_query.py)
and covers appends, new and gone files, and damaged rows and titles.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, compress, repeat
from operator import is_, is_not, itemgetter, methodcaller, not_
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from .fulltext import is_primary
from .queryobjects import Made, Objects, objects_file, objects_scope, runs_of, runs_scope
from .queryrows import KeptRows, Run, holdable, in_file, pack, starts_of, stored_scope

if TYPE_CHECKING:
    from pathlib import Path

    from .discovery import FileInfo
    from .ftscheck import Verdict
    from .index import Index
    from .search import FullText, Query
    from .search.query import Term

# the columns of `Index.query_rows()`
_FILE_ID, _PATH, _SIZE, _MTIME, _SESSION, _TEXT_SEQ, _MODIFIED, _CWD = range(8)
_TITLE, _TITLE_CHECK, _HAS_JSON, _REASON, _SALT, _PAYLOAD = range(8, 14)
# files changed since the rows were kept that are read alone (`_updated_rows`); more: every row is
UPDATE_LIMIT = 256
PAYLOAD_BUDGET = 16 << 20  # the hits' objects kept from the check of every row: more are read again, in chunks
_STAT = itemgetter(_PATH, _SIZE, _MTIME)
_LINE_BREAKS = methodcaller("count", b"\n")


class Ranked(NamedTuple):
    """A query's answer: the matching files' `Index.query_rows()` rows in rank order, and the
    files found that are not sessions (path, reason), as a listing reports them."""

    rows: Sequence[tuple]  # (made as they are read: `_Taken`)
    skipped: list[tuple[str, str]]
    sessions: int  # sessions in scope (reused from the index, as `RefreshStats.reused`)
    # the checked rows to keep for the next query, (scope, files, blob) for `Index.put_listing`
    # after the read transaction (`core.queryrows`); None when they came from there
    keep: tuple[bytes, bytes, bytes] | None = None
    # file_id -> its checked object, for rows that do not carry it (`_with_payloads`)
    objects: dict[int, bytes] | None = None
    # the printed answer stored by an earlier identical query on the same files (`rows` empty)
    printed: bytes | None = None
    # (scope, files, whole) under which this answer is kept once printed (`Catalog.query_json_parts`):
    # `whole` False keeps only its key (the first time), True the printed answer too (the second)
    answer_key: tuple[bytes, bytes, bool] | None = None
    # every session's object (`core.queryobjects`) and the positions of `rows` among them:
    # the answer is printed from those, and kept as their runs when it is too big to keep whole
    store: Objects | None = None
    positions: list[int] | None = None
    # the objects just read, (scope, files, store) to keep after the read transaction (`queryobjects.save`)
    keep_objects: tuple[bytes, bytes, Made] | None = None
    # the printed answer made from the stored objects and an earlier identical query's runs
    # (`rows` empty), as views of them; `safe`: `text.json_safe` leaves them as they are
    parts: list[bytes | memoryview] | None = None
    safe: bool = False
    # the same, as the `parts` that lie in a file: (its open file, `Objects.spans`), or None
    spliced: tuple[Any, list[bytes | tuple[int, int]]] | None = None

    def found(self) -> bool:
        """Whether the answer names a session (else `ls --query` exits 1)."""
        if self.parts is not None:
            return self.parts != [b"[]"]
        return bool(self.rows or (self.printed is not None and self.printed != b"[]"))


def supported(query: Query) -> bool:
    """Whether `rank` can be answered here: plain words and phrases only."""
    positive = query.positive
    return (
        bool(positive)
        and not (query.filters or query.mark_filters or query.negative)
        and all(term.kind in ("fuzzy", "phrase") for term in positive)
    )


def rank(
    index: Index,
    query: Query,
    infos: Callable[[], Sequence[FileInfo]],
    target: str | None,
    resolve: Callable[[str], str],
    checked_ahead: Callable[[], Verdict | None] = lambda: None,
    scope: bytes | None = None,
    answered_as: bytes | None = None,
    *,
    infos_key: Callable[[], bytes] | None = None,
    start_check: Callable[[], None] | None = None,
    whole: bool = False,
) -> Ranked | Stale | None:
    """The sessions among `infos()` (the files found now, asked for once the index is read:
    they may still be being found) that `query` matches, in `rank.search`'s order, from the
    index alone; `Stale` when the index is not fresh for
    some of them (the caller reads those and asks again), None when it holds a value this
    cannot use (the caller takes the refreshing path).  `target`: a resolved
    project directory (None: every project, where paths and cwds count); `resolve` resolves
    a header cwd as the catalog does; `checked_ahead`: the full-text signature's check
    made by another process, asked for once the rows are read (`Index.adopt_fts_verdict`);
    `scope`: the roots' `index.scope_key` (all projects), under which the checked rows are
    kept for the next query on the same files and full-text index (`core.queryrows`);
    `start_check`: called when the query is ranked (its answer is not a stored one), to
    start `checked_ahead`'s check elsewhere (`ftscheck.VerdictAhead`);
    `answered_as`: the `listings` scope of this very query's printed answer (with `scope`):
    an answer stored for exactly these files and full-text index is the answer, and the
    one made here says how to keep it (`Ranked.answer_key`); `infos_key`: `files_key` of
    `infos()`, made without them (`discovery.Pending.head`); `whole`: the answer kept whole
    the first time (one asked before, made again ahead: `Catalog.remake_answers`)."""
    if scope is None:
        index.read_through_cache()
        return _answered(query, index, infos, target, resolve, checked_ahead, start_check=start_check)
    from .index import files_key

    fts = fts_key(index)
    made: list[bytes] = []

    def files() -> bytes:
        """The files' key with the full-text state's (made once: 50 ms at 100,000 files)."""
        if not made:
            made.append((infos_key() if infos_key is not None else files_key(list(infos()))) + fts)
        return made[0]

    printed = index.stored_listing(answered_as) if answered_as is not None else None
    # (the files are waited for here only when a stored answer may be the answer)
    if printed is not None and answered_as is not None:
        if printed[1].payload and printed[0] == files():
            return Ranked([], printed[1].skipped, printed[1].reused, printed=printed[1].payload)
        # a big answer is kept as runs of every session's stored objects (`core.queryobjects`)
        runs = index.stored_listing(runs_scope(answered_as)) if not printed[1].payload else None
        if runs is not None and runs[0] == printed[0] and runs[0] == files():
            printable = _printed_runs(index, objects_scope(scope), runs[1].payload, files())
            if printable is not None:
                parts, safe, spliced = printable
                return Ranked([], runs[1].skipped, runs[1].reused, parts=parts, safe=safe, spliced=spliced)
    # Rows are read from here on: through SQLite's bounded cache, not mapped (the stored
    # answer above was read mapped: 5x faster, and its pages are the answer's size).
    index.read_through_cache()
    answered = _answered(query, index, infos, target, resolve, checked_ahead, (scope, fts, files), start_check)
    if answered_as is None or not isinstance(answered, Ranked):
        return answered
    # asked for again on the same files: worth storing
    whole = whole or (printed is not None and printed[0] == files())
    return answered._replace(answer_key=(answered_as, files(), whole))


def fts_key(index: Index) -> bytes:
    """The full-text index's state (`ftscheck.fts_state`) as the tail of the key that kept rows,
    objects and answers are stored under (`files_key` of the files, then this): one spelling
    for the query (`rank`) and the watcher's refresh (`refresh_kept`)."""
    from .ftscheck import fts_state

    return b"\0" + repr(fts_state(index.db)).encode("utf-8", "surrogatepass")


class Updated(NamedTuple):
    """Rows kept for other files brought up to date for the files found now (`updated_kept`)."""

    sessions: Sequence[tuple]  # newest first (`KeptRows` when spliced)
    skipped: list[tuple[str, str]]
    keep: tuple[bytes, bytes, bytes] | None  # (scope, files, blob) for `Index.put_listing`; None: not packable
    splice: Splice | None  # how they were spliced (every session's objects are spliced likewise)


def updated_kept(
    index: Index,
    kept: KeptRows,
    rows_key: bytes,
    keep_as: tuple[bytes, bytes],
    hits: dict[int, tuple[str, int]],
    infos: Callable[[], Sequence[FileInfo]],
) -> Updated | Stale | None:
    """The rows `kept` for the files `rows_key` names, updated for the files `infos()` (a few
    changed: `_updated_rows`), the new rows' titles checked, and packed to keep under
    `keep_as` (the rows' scope, the files' key now); `Stale` or None as `_updated_rows`
    (None too when a new title fails its check: the caller reads every row).  The one
    update both a query (`_answered`) and the watcher's refresh (`refresh_kept`) make."""
    updated = _updated_rows(index, kept, hits, infos)
    if updated is None or isinstance(updated, Stale):
        return updated
    sessions, skipped, new, pieces = updated
    if not _titles_pass(new):  # (the kept ones were checked when kept)
        return None
    blob = sessions.packed(skipped) if isinstance(sessions, KeptRows) else pack(sessions, skipped)
    keep = (*keep_as, blob) if blob is not None else None
    splice = Splice(kept, rows_key, pieces) if pieces is not None else None
    return Updated(sessions, skipped, keep, splice)


class Refreshed(NamedTuple):
    """What `refresh_kept` made, to keep after the read transaction (as `Ranked.keep` and
    `Ranked.keep_objects`), and the sessions they hold."""

    keep: tuple[bytes, bytes, bytes]
    keep_objects: tuple[bytes, bytes, Made] | None
    sessions: int


def refresh_kept(index: Index, scope: bytes, files_key: bytes, infos: Sequence[FileInfo]) -> Refreshed | None:
    """The rows kept for the roots' `scope` (all projects) and, where they were stored for
    those rows, every session's objects, brought up to date for the files `infos` (whose
    `fileskey.files_key` is `files_key`) from the ones kept for the files before a few changed:
    the update a query makes first after an agent's append (`updated_kept`,
    `_every_object`'s splice), made ahead by the resident watcher once the files are quiet,
    stored under the key that query computes (the files' key and `fts_key`).  The objects keep
    the order they had (an answer asked before is still one run).  Inside a read transaction;
    None when nothing is kept, or it is up to date, or it cannot be updated from what is
    kept (too many changes, a row failing its check, the index not fresh for `infos`)."""
    files = files_key + fts_key(index)
    kept_as = stored_scope(scope)
    stored = index.stored_listing(kept_as)
    if stored is None or stored[0] == files:
        return None  # none kept, or already these files' (kept for others, or another full-text state: updated)
    kept = in_file(index.cache_dir, kept_as, stored[1].payload)
    if kept is None:
        return None
    updated = updated_kept(index, kept[0], stored[0], (kept_as, files), {}, lambda: infos)
    if updated is None or isinstance(updated, Stale) or updated.keep is None:
        return None
    made = None
    objects = index.stored_listing(objects_scope(scope))
    # (stored for the rows kept before, so made for a big answer once: spliced likewise)
    if updated.splice is not None and isinstance(updated.sessions, KeptRows) and objects and objects[0] == stored[0]:
        every = _every_object(
            index, updated.sessions, objects_scope(scope), lambda: files, files, None, make=True, splice=updated.splice
        )
        made = every[2] if every is not None else None
    return Refreshed(updated.keep, made, len(updated.sessions))


def vouch_kept(index: Index, scope: bytes) -> None:
    """The files of the rows and objects kept for `scope` read back once as a query reads
    them (`queryrows.in_file`, `Objects.load`): each checked against its entry (its CRC)
    and, as it passed, noted (`keptfile.vouch`, which makes it durable first), so the next
    query checks only its identity.  The watcher's refresh does it after writing them, once
    they settled (`keptfile.SETTLED_NS`): the first query after it pays neither the CRC of
    ~120 MB nor the `fsync` at 100,000 sessions."""
    kept_as = stored_scope(scope)
    stored = index.stored_listing(kept_as)
    if stored is not None:
        in_file(index.cache_dir, kept_as, stored[1].payload)
    objects = index.stored_listing(objects_scope(scope))
    loaded = Objects.load(objects[1].payload, objects_file(index.cache_dir, objects_scope(scope))) if objects else None
    if loaded is not None and loaded.source is not None:
        loaded.source.close()


def _printed_runs(
    index: Index, scope: bytes, runs: bytes, files: bytes
) -> tuple[list[bytes | memoryview], bool, tuple[Any, list[bytes | tuple[int, int]]] | None] | None:
    """An answer an earlier identical query kept as `runs` (`queryobjects.compact`) for
    exactly these `files` (and full-text index), printed from the objects stored under
    `scope` for them too (its parts, views of them, whether they are `Objects.safe`, and
    where they lie in the objects' open file: `Ranked.spliced`); None when those are not
    there or not the ones it was made from."""
    stored = index.stored_listing(scope)
    if stored is None or stored[0] != files or index.in_memory:
        return None
    objects = Objects.load(stored[1].payload, objects_file(index.cache_dir, scope))
    found = runs_of(runs, objects) if objects is not None else None
    if objects is None or found is None:
        return None
    spliced = (objects.source, objects.spans(found)) if objects.source is not None else None
    return objects.views(found), objects.safe, spliced


def _answered(
    query: Query,
    index: Index,
    infos: Callable[[], Sequence[FileInfo]],
    target: str | None,
    resolve: Callable[[str], str],
    checked_ahead: Callable[[], Verdict | None],
    kept_for: tuple[bytes, bytes, Callable[[], bytes]] | None = None,
    start_check: Callable[[], None] | None = None,
) -> Ranked | Stale | None:
    """`rank` without a stored printed answer: from the rows kept for the roots' scope or
    every row read and checked.  `kept_for`: (the roots' scope, the full-text index's
    state, the files' key with it); `start_check`: `rank`'s."""
    paths = target is None
    full_text = query.full_text()
    if full_text is not None and start_check is not None:
        start_check()  # (the signature counted elsewhere while this ranks)
    # The search, then every row (the hits' objects read once while they fit); the search's
    # signature is checked after the rows, before its answer is used: by then the discovery
    # child has counted it (`checked_ahead`), or it is counted here.
    hits = index.best_fields(full_text, include_cwd=paths, checked=False) if full_text is not None else {}
    kept_as, stored, files = None, None, b""
    if kept_for is not None:
        scope, fts, files_of = kept_for
        kept_as = stored_scope(scope)
        stored = index.stored_listing(kept_as)
        # (kept for other files too: updated from the few that changed, `_updated_rows`)
        kept = in_file(index.cache_dir, kept_as, stored[1].payload) if stored is not None else None
        answer = None
        if kept is not None and stored is not None and stored[0].endswith(fts):
            # the rows kept by an earlier query (checked then) for this full-text index, likely
            # for these files: ranked while the files are found
            answer = _ordered(
                index,
                query,
                kept[0],
                kept[1],
                hits,
                target,
                resolve,
                titles_checked=True,
                kept=True,
                objects_as=(objects_scope(scope), files_of, stored[0]) if stored is not None else None,
            )
        files = files_of()
        if kept is not None and stored is not None and stored[0] == files:  # made from exactly these files
            if full_text is not None:
                index.adopt_fts_verdict(checked_ahead())
                index.check_full_text()
            return answer
        if kept is not None and stored is not None:  # kept for other files: only the changed ones read
            updated = updated_kept(index, kept[0], stored[0], (kept_as, files), hits, infos)
            if isinstance(updated, Stale):
                return updated
            if updated is not None:
                if full_text is not None:
                    index.adopt_fts_verdict(checked_ahead())
                    index.check_full_text()
                return _ordered(
                    index,
                    query,
                    updated.sessions,
                    updated.skipped,
                    hits,
                    target,
                    resolve,
                    titles_checked=True,
                    keep=updated.keep,
                    kept=True,
                    objects_as=(objects_scope(scope), files_of, files) if updated.splice is not None else None,
                    splice=updated.splice,
                )
    fresh = _checked_rows(index, hits, full_text, infos, checked_ahead)
    if fresh is None or isinstance(fresh, Stale):
        return fresh
    sessions, skipped = fresh  # newest first
    keep, titles_checked = None, False
    if kept_as is not None and stored is not None and stored[0] == files and not stored[1].payload:
        # the second query on these files: the store is not changing under every query (an
        # agent appending), so the rows are worth keeping (4.6 MB at 10,000 sessions)
        if _titles_pass(sessions):  # every title checked: the rows can be kept
            blob = pack(sessions, skipped)
            keep, titles_checked = (kept_as, files, blob) if blob is not None else None, True
    elif kept_as is not None:
        keep = (kept_as, files, b"")  # the first query on these files: only their key, to see them again
    return _ordered(index, query, sessions, skipped, hits, target, resolve, titles_checked=titles_checked, keep=keep)


def _ordered(
    index: Index,
    query: Query,
    sessions: Sequence[tuple],
    skipped: list[tuple[str, str]],
    hits: dict[int, tuple[str, int]],
    target: str | None,
    resolve: Callable[[str], str],
    *,
    titles_checked: bool,
    keep: tuple[bytes, bytes, bytes] | None = None,
    kept: bool = False,
    objects_as: tuple[bytes, Callable[[], bytes], bytes] | None = None,
    splice: Splice | None = None,
) -> Ranked | None:
    """`rank`'s answer from the sessions' rows (newest first, every one checked; the titles
    too with `titles_checked`): those in `target`'s project that `query` matches, in
    `rank.search`'s order.  `kept`: rows kept by an earlier query, without their objects:
    those of many hits are read in one scan, or with `objects_as` (the objects' scope, the
    files' key now, the rows' key) every session's objects are (`core.queryobjects`:
    stored, or read and kept; `splice`: how `sessions` were spliced from other rows,
    whose stored objects are then reused, `_every_object`)."""
    from .search.fuzzy import MIN_FUZZY

    paths = target is None
    every = sessions
    if target is not None:
        sessions = [row for row in sessions if row[_CWD] and resolve(row[_CWD]) == target]
    if not titles_checked and not _titles_pass(sessions):
        return None  # not stored, or one fails its check: only the summaries can say
    path_rows: _Paths | None = None
    if isinstance(sessions, KeptRows):  # kept rows: searched as stored, joined; a row made only if it ranks
        joined = _Joined.of_joined(sessions.titles, sessions.title_starts())
        if paths:
            path_rows = _Paths.of_joined(sessions.paths, sessions.path_starts, sessions.cwds)
        file_ids = sessions.file_ids
    else:
        titles = list(map(itemgetter(_TITLE), sessions))
        joined = _Joined(titles)
        del titles
        if paths:
            path_rows = _Paths([row[_PATH] for row in sessions], [row[_CWD] or "" for row in sessions])
        file_ids = list(map(itemgetter(_FILE_ID), sessions))
    if not joined.valid:
        return None  # a NUL in a stored title: rows cannot be told apart in bulk
    # A full-text hit ranks above its tier only if every term is in its title; a session
    # without one matches only if every term is in its title, fuzzily or in its path or cwd
    # (so those are looked for only among the sessions without one, when they are few).
    codes = _hit_codes(file_ids, hits)
    unhit = _unhit(codes)
    in_titles: set[int] | None = None
    anywhere: set[int] | None = None
    plain: set[int] | None = None  # every term a plain substring of the name or first message
    for term in query.positive:
        title_rows, other_rows, plain_rows = _term_rows(term, joined, path_rows, MIN_FUZZY, unhit)
        in_titles = title_rows if in_titles is None else in_titles & title_rows
        anywhere = (title_rows | other_rows) if anywhere is None else anywhere & (title_rows | other_rows)
        plain = plain_rows if plain is None else plain & plain_rows
    in_titles, anywhere, plain = in_titles or set(), anywhere or set(), plain or set()
    if plain and not joined.three_lines(plain):
        return None  # not a title: only its summary can say (as `_split_titles` says of the others)
    del joined, path_rows

    candidates = in_titles | {position for position in anywhere - in_titles if file_ids[position] not in hits}
    # (a plain one is in the substring tier: `_rank_candidates` ranks the others)
    ranked = _rank_candidates(query, sessions, sorted(candidates - plain), hits, index.chunk, paths)
    if ranked is None:
        return None
    tiers, full_text_hits, after = ranked
    before = _with_substrings(tiers, plain)
    # Every full-text hit, in `rank`'s order: people's words first, then tools', newest first in each.
    primary, tools = _full_text_order(codes, candidates, full_text_hits)
    order = [*before, *primary, *tools, *after]
    rows = _Taken(sessions, order)
    objects = None
    if kept and len(rows) > len(sessions) // 8:  # no object read yet
        made = None
        if objects_as is not None and objects_as[1]() != objects_as[2]:
            return None  # ranked while the files were found, and they are others: this answer is not used
        if objects_as is not None and isinstance(every, KeptRows):
            if every is not sessions:  # one project's: their positions among every session's
                position_of = dict(zip(every.file_ids, range(len(every)), strict=True))
                order = [position_of[file_ids[position]] for position in order]
            # (made for an answer of most sessions of all; a project's answer uses them if they are there)
            made = _every_object(index, every, *objects_as, order, make=len(rows) > len(every) // 8, splice=splice)
        if made is not None:
            store, slots, keep_objects = made
            positions = list(map(slots.__getitem__, order)) if slots is not None else list(range(len(order)))
            return Ranked(
                rows, skipped, len(sessions), keep, store=store, positions=positions, keep_objects=keep_objects
            )
        # their objects in one scan, up to `PAYLOAD_BUDGET` bytes (the others are read when printed)
        objects = index.scanned_payloads({row[_FILE_ID]: row[_SALT] for row in rows}, PAYLOAD_BUDGET)
    return Ranked(rows, skipped, len(sessions), keep, objects)


def _take(sessions: Sequence[tuple], positions: list[int]) -> list[tuple]:
    """`[sessions[p] for p in positions]` (`KeptRows.take` for kept rows)."""
    if isinstance(sessions, KeptRows):
        return sessions.take(positions)
    return [sessions[position] for position in positions]


class _Taken(Sequence[tuple]):
    """`_take(sessions, positions)`, each row made only when it is read: an answer printed
    from every session's stored objects (`Ranked.store`) reads none (at 100,000 sessions
    making their rows was 100 ms of a word's first asking)."""

    def __init__(self, sessions: Sequence[tuple], positions: list[int]) -> None:
        self.sessions, self.positions = sessions, positions
        self._rows: list[tuple] | None = None

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> tuple: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple]: ...

    def __getitem__(self, index: int | slice) -> tuple | list[tuple]:
        if self._rows is not None:
            return self._rows[index]
        if isinstance(index, slice):
            return _take(self.sessions, self.positions[index])
        return self.sessions[self.positions[index]]

    def __iter__(self) -> Iterator[tuple]:
        if self._rows is None:
            self._rows = _take(self.sessions, self.positions)
        return iter(self._rows)


def _hit_codes(file_ids: Sequence[int], hits: dict[int, tuple[str, int]]) -> list[int]:
    """For each session (its file id), whether the index found the query in it: 0 not, 1
    in what people wrote (`fulltext.is_primary`), 2 in tools'.  In C-level maps: a common
    word is a hit in every session."""
    field_code = {field: 1 if is_primary(field) else 2 for field in set(map(itemgetter(0), hits.values()))}
    code_of = dict(zip(hits, map(field_code.__getitem__, map(itemgetter(0), hits.values())), strict=True))
    return list(map(code_of.get, file_ids, repeat(0)))


def _unhit(codes: list[int]) -> set[int] | None:
    """The positions of the sessions without a full-text hit (`_hit_codes`), when they are a
    quarter of them at most (a common word: only they can match fuzzily or by path alone);
    else None."""
    if codes.count(0) > len(codes) // 4:
        return None
    return set(compress(range(len(codes)), map(not_, codes)))


def _with_substrings(before: list[list[int]], plain: set[int]) -> list[int]:
    """`rank`'s order above the full-text tier: each tier's positions (`_rank_candidates`),
    the `plain` ones in the substring tier; newest first (by position) within each, as
    `rank` orders a tier of sessions given newest first."""
    exact, prefix, substring = before
    return [*exact, *prefix, *(sorted(plain.union(substring)) if plain else substring)]


def _full_text_order(codes: list[int], candidates: set[int], ranked: dict[int, str]) -> tuple[list[int], list[int]]:
    """The full-text tier in `rank`'s order: the positions of the hits in what people wrote,
    then of those in tools', newest first in each.  A candidate's field is `ranked`'s (none:
    ranked in another tier, or not at all); every other session's is its index hit's
    (`codes`, `_hit_codes`: changed here).  In C-level maps, as those."""
    deque(map(codes.__setitem__, candidates, repeat(0)), maxlen=0)
    for position, field in ranked.items():
        codes[position] = 1 if is_primary(field) else 2
    every = range(len(codes))
    return list(compress(every, map((1).__eq__, codes))), list(compress(every, map((2).__eq__, codes)))


def _every_object(
    index: Index,
    every: KeptRows,
    scope: bytes,
    files_of: Callable[[], bytes],
    rows_key: bytes,
    order: list[int] | None,
    *,
    make: bool,
    splice: Splice | None = None,
) -> tuple[Objects, list[int] | None, tuple[bytes, bytes, Made] | None] | None:
    """Every session's object of `every` (rows kept for the files `rows_key` names), when
    those are the files `files_of()` found now: (the objects, where each `every` position's
    is among them, and None), those stored for exactly these files and rows; else, if
    `make`, spliced from those stored for the rows `every` was spliced from (`splice`:
    `_spliced_objects`), or read in one scan and checked, `order` (an answer's positions)
    first: (the objects, where each position's is (None: the answer's are the first ones),
    and (scope, files, the store) to keep them).  `order` None: a splice keeps the old
    store's order (`_spliced_objects`).  None when the files are others, or one object
    fails its check."""
    from .queryobjects import rows_check, write

    files = files_of()
    if files != rows_key or index.in_memory:
        return None  # the rows are not these files' (the caller ranks again)
    check = rows_check(every.file_ids, every.salts, every.checks)
    stored = index.stored_listing(scope)
    if stored is not None and stored[0] == files:
        objects = Objects.load(stored[1].payload, objects_file(index.cache_dir, scope), check)
        slots = objects.slots() if objects is not None else None
        if objects is not None and slots is not None:
            return objects, slots, None
    if not make:
        return None
    if splice is not None and stored is not None and stored[0] == splice.rows_key:
        path = objects_file(index.cache_dir, scope)
        spliced = _spliced_objects(index, splice, stored[1].payload, path, check, order)
        if spliced is not None:
            return spliced.objects, None, (scope, files, spliced)
    stored_order, slots = _stored_order(order or [], len(every))
    salts = dict(zip(every.file_ids, every.salts, strict=True))
    # (each object also the one of its kept row's check: the store is tied to those, `rows_check`)
    found = index.scanned_payloads(salts, 1 << 62, checks=dict(zip(every.file_ids, every.checks, strict=True)))
    file_ids = every.file_ids
    payloads = [found.get(file_ids[position]) for position in stored_order]
    del found
    if None in payloads:
        return None  # one failed its check: printed as before, its file read again
    # (the file now, its entry after the read transaction: `Ranked.keep_objects`)
    made = write(objects_file(index.cache_dir, scope), payloads, check, slots)  # type: ignore[arg-type]
    return (made.objects, None, (scope, files, made)) if made is not None else None


class Splice(NamedTuple):
    """How kept rows were updated after a few files changed (`_updated_rows`): the rows
    they were spliced from, those rows' files key, and the `rowsplice.pieces`."""

    old: KeptRows
    rows_key: bytes
    pieces: list[Run | tuple]


def _stored_order(order: list[int], count: int) -> tuple[list[int], list[int]]:
    """The positions in the order their objects are stored (`order`, an answer's, first, then
    the others newest first), and where each position's object is then (that inverted)."""
    chosen = set(order)
    stored_order = [*order, *(position for position in range(count) if position not in chosen)]
    slots = [0] * count
    for slot, position in enumerate(stored_order):
        slots[position] = slot
    return stored_order, slots


def _spliced_objects(
    index: Index, splice: Splice, entry: bytes, path: Path, check: int, order: list[int] | None
) -> Made | None:
    """Every session's object for rows spliced from `splice.old` (`KeptRows.spliced`): the
    objects stored for those old rows (`entry`, at `path`: tied to their file ids, salts and
    row checks by `rows_check`), each still the index's since its row's check is
    (`rowsplice.retained_positions`), copied as they are (`queryobjects.write_spliced`), and
    only the new rows' objects read and checked; kept in `stored_order` (positions: an
    answer's first, as `write` keeps them: `_stored_order`; None: the old rows' objects in
    the order they were stored, the new ones first).  The store written; None when the stored
    objects are not those rows' or one fails."""
    from .queryobjects import rows_check, write_spliced

    old = splice.old
    objects = Objects.load(entry, path, rows_check(old.file_ids, old.salts, old.checks))
    if objects is None:
        return None
    try:  # (the old file is closed on every way out: its bytes are copied, or not used)
        old_slots = objects.slots()
        if old_slots is None:
            return None
        new = [piece for piece in splice.pieces if not isinstance(piece, Run)]
        found = index.checked_payloads(new)
        # each position's object: the slot of the old one (its row unchanged), or the new one read
        sources: list[int | bytes] = []
        for piece in splice.pieces:
            if isinstance(piece, Run):
                sources += old_slots[piece.first : piece.past]
            else:
                payload = found.get(piece[_FILE_ID])
                if type(payload) is not bytes:
                    return None  # it failed its check: read again elsewhere
                sources.append(payload)
        stored_order, slots = _stored_order(
            order if order is not None else _old_order(sources, len(objects)), len(sources)
        )
        return write_spliced(path, objects, list(map(sources.__getitem__, stored_order)), check, slots)
    finally:
        if objects.source is not None:
            objects.source.close()


def _old_order(sources: list[int | bytes], old: int) -> list[int]:
    """The positions whose objects are new (`bytes`, newest first), then those copied, in the
    order of their old slots: a store spliced without an answer keeps the one it was made for
    as it was (one run but for the sessions that changed).  `old`: how many objects the old
    store holds."""
    at_slot: list[int | None] = [None] * old
    new: list[int] = []
    for position, source in enumerate(sources):
        if type(source) is int:
            at_slot[source] = position
        else:
            new.append(position)
    return [*new, *(position for position in at_slot if position is not None)]


def _checked_rows(
    index: Index,
    hits: dict[int, tuple[str, int]],
    full_text: FullText | None,
    infos: Callable[[], Sequence[FileInfo]],
    checked_ahead: Callable[[], Verdict | None],
) -> tuple[list[tuple], list[tuple[str, str]]] | Stale | None:
    """Every row read and checked, the search's signature checked, and the rows of the
    sessions among `infos()` newest first with the files that are not sessions
    (`fresh_sessions`); `Stale` or None as `rank` returns them."""
    rows = index.query_rows("pi_json", hits, PAYLOAD_BUDGET)
    if rows is None:
        return None  # a row failed its check: the refresh reads its file again
    if full_text is not None:
        index.adopt_fts_verdict(checked_ahead())
        index.check_full_text()  # raises, as the search would, for the catalog's guard to heal
    return fresh_sessions(rows, infos(), text=True)  # the index must describe every file found as it is


def _updated_rows(
    index: Index,
    kept: KeptRows,
    hits: dict[int, tuple[str, int]],
    infos: Callable[[], Sequence[FileInfo]],
) -> tuple[Sequence[tuple], list[tuple[str, str]], list[tuple], list[Run | tuple] | None] | Stale | None:
    """`_checked_rows`'s sessions and skipped files from rows `kept` for other files (an
    agent appended to one), without every row read and checked again: every row's stored
    CRCs are read alone (`Index.row_checks`), a kept row whose file id, row check (over
    every value and the object: path, size, mtime, text_seq...) and title check are
    the index's still is used as it is, and only the other rows (changed, new, not
    sessions) are read and checked, at most `UPDATE_LIMIT`; also those rows' sessions (whose
    titles the caller checks), and, when every file found is one the index has as it is, the
    `rowsplice.pieces` the sessions were spliced from (they are then `KeptRows`, spliced
    from `kept` without a row made: `KeptRows.spliced`).  None when more differ, or a row
    read fails its check (the caller reads every row); rows the index no longer has are
    not used."""
    from .rowsplice import listed_only, pieces, retained_positions

    stored = index.row_checks()
    positions = retained_positions(kept, stored)
    # (the paths of the rows not kept, picked in C: a loop unpacking 100,000 rows took ~13 ms)
    reread = list(map(itemgetter(1), compress(stored, map(is_, positions, repeat(None)))))
    if len(reread) > UPDATE_LIMIT:
        return None
    new = index.query_rows("pi_json", hits, PAYLOAD_BUDGET, paths=reread) if reread else []
    if new is None:
        return None
    found = infos()
    listed = listed_only(stored, positions, new, found)
    spliced = pieces(kept, *listed, found) if listed is not None else None
    if spliced is not None:
        order, others = spliced
        sessions = [row for row in order if not isinstance(row, Run)]
        if holdable(sessions, others):
            return kept.spliced(order), others, sessions, order
    # the kept rows the index still has, with its size and mtime (those they were kept with)
    sizes: list[int | None] = [None] * len(kept)
    mtimes = sizes.copy()
    for (_, _, size, mtime, *_), at in zip(stored, positions, strict=True):
        if at is not None:
            sizes[at], mtimes[at] = size, mtime
    paths, titles = kept.split_columns()
    zero, one, none = repeat(0), repeat(1), repeat(None)
    columns = (kept.file_ids, paths, sizes, mtimes, one, zero, kept.modified, kept.cwds, titles, kept.title_checks)
    every = zip(*columns, one, none, kept.salts, none, kept.checks, strict=False)  # (the endless ones not strict)
    rows = list(compress(every, map(is_not, sizes, repeat(None))))
    fresh = fresh_sessions(rows + new, found, text=True)
    if isinstance(fresh, Stale):
        return fresh
    return fresh[0], fresh[1], [row for row in new if row[_SESSION] and row[_HAS_JSON]], None


def _titles_pass(sessions: Sequence[tuple]) -> bool:
    """Whether every session's stored title is there and passes its check (`titles_pass`)."""
    from .index import titles_pass

    titles = list(map(itemgetter(_TITLE), sessions))
    return all(type(title) is bytes for title in titles) and titles_pass(
        titles, list(map(itemgetter(_PATH), sessions)), list(map(itemgetter(_TITLE_CHECK), sessions))
    )


class Stale(NamedTuple):
    """The index does not describe these files as they are now (new, changed, or a session
    whose text was never indexed): the caller reads them (or refreshes) and asks again."""

    infos: list[FileInfo]


def fresh_sessions(
    rows: list[tuple], infos: Sequence[FileInfo], *, text: bool
) -> tuple[list[tuple], list[tuple[str, str]]] | Stale:
    """The `Index.query_rows()` rows of the sessions among `infos` (the files found now),
    newest first as a refresh orders them, and the files found that are not sessions (path,
    reason); `Stale` when the index does not describe every file found as it is now (a new
    or changed file) or, with `text`, a session's text was never indexed.  A file the
    index has but that is gone is not among them."""
    by_stat = dict(zip(map(_STAT, rows), rows, strict=True))  # keys hash and compare like a FileInfo
    found: list[Any] = list(map(by_stat.get, infos))  # None: a file new or changed since the index saw it
    listed: list[tuple] = found
    if None in found or (text and min(map(itemgetter(_TEXT_SEQ), filter(itemgetter(_SESSION), listed)), default=0) < 0):
        by_path = {row[_PATH]: row for row in rows}
        return Stale(
            [
                info
                for info in infos
                if (row := by_path.get(info[0])) is None
                or (row[_SIZE], row[_MTIME]) != (info[1], info[2])
                or (text and row[_SESSION] and row[_TEXT_SEQ] < 0)
            ]
        )
    sessions = [row for row in listed if row[_SESSION] and row[_HAS_JSON]]
    unlisted = [row for row in listed if not (row[_SESSION] and row[_HAS_JSON])] if len(sessions) < len(listed) else []
    sessions.sort(key=itemgetter(_MODIFIED), reverse=True)  # stable: equal times keep the files' order
    return sessions, [(row[_PATH], row[_REASON] or "not a session") for row in unlisted]


def kept_sessions(
    index: Index, infos: Callable[[], Sequence[FileInfo]], keep: Callable[[str, tuple[str, str, str] | None], bool]
) -> tuple[list[tuple], list[tuple[str, str]], int] | Stale | None:
    """`Catalog.exact_where` from a fresh index: the rows of the sessions `keep(path, stored
    folded title or None)` keeps, newest first, the files that are not sessions, and how
    many sessions there are; `Stale` when the index is not fresh for some of `infos()` (the
    files found now, asked for once the rows are read: they may still be being found), None
    when a row fails its check."""
    from .index import checked_title, split_title, titles_pass

    rows = index.query_rows("summary")
    if rows is None:
        return None  # a row failed its check: the refresh reads its file again
    fresh = fresh_sessions(rows, infos(), text=False)
    if isinstance(fresh, Stale):
        return fresh
    sessions, skipped = fresh
    titles = list(map(itemgetter(_TITLE), sessions))
    if all(type(title) is bytes for title in titles) and titles_pass(
        titles, list(map(itemgetter(_PATH), sessions)), list(map(itemgetter(_TITLE_CHECK), sessions))
    ):
        folded = [split_title(title) for title in titles]
    else:  # one fails its check: each is checked on its own (None: `keep` decides on the summary)
        folded = [checked_title(row[_TITLE], row[_TITLE_CHECK], row[_PATH]) for row in sessions]
    kept = [row for row, title in zip(sessions, folded, strict=True) if keep(row[_PATH], title)]
    return kept, skipped, len(sessions)


def _rank_candidates(
    query: Query,
    sessions: Sequence[tuple],
    positions: list[int],
    hits: dict[int, tuple[str, int]],
    chunk: Callable[[int], str],
    paths: bool,
) -> tuple[list[list[int]], dict[int, str], list[int]] | None:
    """`rank.search` over the candidates (positions in `sessions`, newest first): the
    positions ranked above the full-text tier (those of each tier: exact, prefix,
    substring), the full-text ones (position -> the field `rank` orders them by), and those
    below (fuzzy, path), each in `rank`'s order."""
    from .index import IndexHits
    from .search.rank import FULL_TEXT, TIERS
    from .search.stored import StoredSession, rank_hits

    rows = _take(sessions, positions)
    titles = _split_titles([row[_TITLE] for row in rows])  # checked by `rank` (`titles_pass`)
    if titles is None:
        return None  # not a title: only its summary can say
    stored = [
        (StoredSession.of(row[_PATH], row[_CWD] or "", row[_MODIFIED], b""), title)
        for row, title in zip(rows, titles, strict=True)
    ]
    position_of = {row[_PATH]: position for row, position in zip(rows, positions, strict=True)}
    # the candidates' index hits, each `TextHit` made only if `rank` asks for it
    found = {row[_FILE_ID]: best for row in rows if (best := hits.get(row[_FILE_ID])) is not None}
    # (no highlight: only the tiers are read here, never a snippet, and the pattern's word
    # syntax costs a pass over Unicode, ~60 ms of a query's first asking)
    text_hits = IndexHits.of_fields(found, {row[_FILE_ID]: row[_PATH] for row in rows}, chunk, None)
    before: list[list[int]] = [[] for _tier in range(FULL_TEXT)]
    after: list[int] = []
    in_full_text: dict[int, str] = {}
    full_text_tier = TIERS[FULL_TEXT]
    # (the candidates passed `search.prefilter`'s rule already, in bulk: `_term_rows`)
    for hit in rank_hits(stored, query, text_hits, paths=paths, prefiltered=True):
        path = hit.summary.path
        position = position_of[path]
        if hit.tier == full_text_tier:
            # `rank` puts a hit with no index hit among people's words (`_tools_last`)
            in_full_text[position] = text_hits.field(path) or "user"
        elif (tier := TIERS.index(hit.tier)) < FULL_TEXT:
            before[tier].append(position)
        else:
            after.append(position)
    return before, in_full_text, after


def _split_titles(titles: list[bytes]) -> list[tuple[str, str, str]] | None:
    """`index.split_title` of each stored title, decoded and split in bulk; None when one
    is not a title (not three lines)."""
    if not titles:
        return []
    if list(map(_LINE_BREAKS, titles)).count(2) != len(titles):
        return None
    parts = iter(b"\n".join(titles).decode("utf-8", "surrogatepass").split("\n"))
    return list(zip(parts, parts, parts, strict=True))


class _Joined:
    """Stored folded titles joined by NULs (never in a title: checked), so one `find` or regex
    over the whole finds what it would in each title, and never across two.  ASCII titles
    (the usual) are searched as the bytes they are stored as: no decoded copy."""

    def __init__(self, titles: list[bytes]) -> None:
        blob = b"\0".join(titles)
        self.valid = 0 not in b"".join(titles)  # no NUL inside a title (memchr: no count of 2.5 MB)
        self.text: bytes | str = blob
        lengths: Iterator[int] = map(len, titles)
        if not blob.isascii():
            self.text = blob.decode("utf-8", "surrogatepass")
            lengths = (len(title.decode("utf-8", "surrogatepass")) for title in titles)
        self.starts = list(accumulate((length + 1 for length in lengths), initial=0))
        self._backwards: bytes | str | None = None  # the text reversed (`_backwards_rows`), made when asked for

    @classmethod
    def of_joined(cls, blob: bytes, starts: list[int]) -> _Joined:
        """The titles already joined by NULs (`queryrows.KeptRows`: none holds one, checked
        when they were kept), `starts` the byte offset of each and one past the end (+1)."""
        joined = cls.__new__(cls)
        joined.valid, joined.text, joined.starts, joined._backwards = True, blob, starts, None
        if not blob.isascii():
            joined.text = blob.decode("utf-8", "surrogatepass")
            joined.starts = starts_of(joined.text.split("\0"))
        return joined

    def rows(self, needle: str, plain: set[int] | None = None) -> set[int]:
        """The titles `needle` is found in; with `plain` (`needle` without a line break),
        those it is in as `rank`'s substring tier puts it are added to it: its first hit is
        past the id (the first line), and it starts no line (a prefix of the name or first
        message).  (A fuzzy match: `fuzzy_rows`.)"""
        text = self.text
        probe: Any = needle
        if isinstance(text, bytes):  # ASCII titles: what is not ASCII is in none of them
            if not needle.isascii():
                return set()
            probe = needle.encode()
        found: set[int] = set()
        starts, start = self.starts, 0
        find: Any = text.find
        line: Any = b"\n" if isinstance(text, bytes) else "\n"
        prefixed = line + probe if plain is not None else None
        while True:
            position = find(probe, start)
            if position < 0:
                return found
            row = bisect_right(starts, position) - 1
            found.add(row)
            start = starts[row + 1]  # one hit a title is enough
            # (a line break before it: past the id; "\n" + it, if anywhere, is at or after it)
            if plain is not None and find(line, starts[row], position) >= 0 and find(prefixed, position - 1, start) < 0:
                plain.add(row)

    def three_lines(self, rows: set[int]) -> bool:
        """Whether each of the titles `rows` has three lines (id, name, first message), as
        `_split_titles` checks of those it splits."""
        starts = self.starts
        line: Any = b"\n" if isinstance(self.text, bytes) else "\n"
        ends = map(starts.__getitem__, map((1).__add__, rows))
        counts = map(self.text.count, repeat(line), map(starts.__getitem__, rows), ends)
        return list(counts).count(2) == len(rows)

    def fuzzy_rows(self, term: str, rows: set[int] | None = None) -> set[int]:
        """The titles whose shown line (the name, else the first message: what `rank`'s fuzzy
        tier matches) holds `term` as `fuzzy.fuzzy_match` finds it: its letters in order, each
        the first within the gap, spanning at most `max_span` (a wider match is tried again one
        character on, as `fuzzy_match` does).  Exactly `rank`'s fuzzy matches, not a superset:
        a title holding the letters loosely (~17,000 of 100,000 for `tooltip`, of which 1,032
        match) is never made into a row and ranked.  `rows`: only those titles, each searched
        alone; else one scan of the joined titles (backwards when the term's last letter is
        much rarer than its first: `_backwards_rows`).  A title that is not three lines is
        searched whole (if it matches, `_split_titles` refuses it, as it would before)."""
        from .search.fuzzy import max_span

        text = self.text
        probe = _fuzzy_probe(term, text)
        if probe is None:  # ASCII titles: what is not ASCII is in none of them
            return set()
        if rows is None and _rarer_last(term):
            rows = self._backwards_rows(term)
        search, limit, shown, starts = probe.search, max_span(len(term)), self._shown, self.starts
        found: set[int] = set()
        if rows is not None:
            for row in rows:
                low, high = shown(row)
                match = search(text, low, high)
                while match is not None and match.end() - match.start() > limit:
                    match = search(text, match.start() + 1, high)
                if match is not None:
                    found.add(row)
            return found
        start = 0
        while (match := search(text, start)) is not None:
            position = match.start()
            if match.end() - position > limit:  # too wide: tried again one on (whatever its title's line)
                start = position + 1
                continue
            row = bisect_right(starts, position) - 1
            low, high = shown(row)
            if position < low:  # in a line the row does not show: on to the one it shows
                start = low
            elif position < high:
                found.add(row)
                start = starts[row + 1]  # one match a title is enough
            else:  # past it: on to the next title
                start = starts[row + 1]
        return found

    def _backwards_rows(self, term: str) -> set[int]:
        """The titles where `term` reversed matches the reversed text within `max_span`: a
        superset of `fuzzy_rows`' (a match's last letter starts such a match backwards, each
        letter the nearest before the next, all inside the forward one), found by a scan that
        starts at the term's last letter (`tooltip`: ~0.5 million `p`s, not ~1.8 million `t`s
        in 100,000 titles: ~45 against ~150 ms).  The reversed text is made once (~15 ms)."""
        from .search.fuzzy import max_span

        if self._backwards is None:
            self._backwards = self.text[::-1]
        text, starts = self._backwards, self.starts
        probe = _fuzzy_probe(term[::-1], text)
        if probe is None:
            return set()
        search, limit, last = probe.search, max_span(len(term)), len(text) - 1
        found: set[int] = set()
        start = 0
        while (match := search(text, start)) is not None:
            position = match.start()
            if match.end() - position > limit:
                start = position + 1
                continue
            row = bisect_right(starts, last - position) - 1
            found.add(row)
            start = len(text) - starts[row] + 1  # past the NUL before it: on to the title before
        return found

    def _shown(self, row: int) -> tuple[int, int]:
        """Where title `row`'s shown line lies in the joined text: its name's, else (an empty
        name) its first message's (`Block.shown`); the whole title if it is not three lines."""
        text, start, end = self.text, self.starts[row], self.starts[row + 1] - 1
        line: Any = b"\n" if isinstance(text, bytes) else "\n"
        first = text.find(line, start, end)
        second = text.find(line, first + 1, end) if first >= 0 else -1
        if second < 0 or text.find(line, second + 1, end) >= 0:
            return start, end
        return (first + 1, second) if second > first + 1 else (second + 1, end)


class _Paths:
    """The sessions' paths and cwds, folded, for a term's path and cwd matches (all projects)."""

    def __init__(self, paths: list[str], cwds: list[str]) -> None:
        from .search.query import fold

        self.cwds = cwds
        joined = "\0".join(paths)
        if joined.isascii():  # ASCII lower-casing is per character: the same as folding each
            self.folded = joined.lower()
        else:
            self.folded = "\0".join(map(fold, paths))
        self._starts: list[int] | None = list(accumulate((len(path) + 1 for path in paths), initial=0))
        self._starts_of: Callable[[], list[int]] | None = None
        self._fold = fold

    @classmethod
    def of_joined(cls, joined: str, starts: Callable[[], list[int]], cwds: list[str]) -> _Paths:
        """The paths already joined by NULs (`queryrows.KeptRows`), `starts()` where each
        begins: asked for only when a term is in some path (100,000 paths split: 20 ms)."""
        from .search.query import fold

        paths = cls.__new__(cls)
        paths.cwds, paths._starts, paths._starts_of, paths._fold = cwds, None, starts, fold
        # (ASCII lower-casing is per character; else each path folded on its own, as __init__ does)
        paths.folded = joined.lower() if joined.isascii() else "\0".join(map(fold, joined.split("\0")))
        return paths

    @property
    def starts(self) -> list[int]:
        if self._starts is None:
            assert self._starts_of is not None
            self._starts = self._starts_of()
        return self._starts

    def rows(self, text: str) -> set[int]:
        found: set[int] = set()
        find, start = self.folded.find, 0
        while (position := find(text, start)) >= 0:
            starts = self.starts
            row = bisect_right(starts, position) - 1
            found.add(row)
            start = starts[row + 1]
        matching = {cwd for cwd in set(self.cwds) if text in self._fold(cwd)}
        if matching:
            found.update(row for row, cwd in enumerate(self.cwds) if cwd in matching)
        return found


def _term_rows(
    term: Term, titles: _Joined, paths: _Paths | None, min_fuzzy: int, unhit: set[int] | None = None
) -> tuple[set[int], set[int], set[int]]:
    """The sessions where `term` may match other than through the index (`search.prefilter`'s
    rule, in bulk): (in the title: id prefix, name, first message; else as a fuzzy
    subsequence of the title or, all projects, in the path or cwd).  Supersets: `rank` decides.
    `unhit`: the sessions without a full-text hit, if given the only ones the second set
    need hold (the others are candidates only with the term in their title).  Third, the
    titles `term` is in as `rank`'s substring tier puts it: in the name or first message,
    where neither starts with it (a prefix) and not only in the id."""
    if term.within:
        return set(), set(), set()  # narrowed to an index field: only the index's hits match it
    text = term.text
    plain: set[int] | None = set() if "\n" not in text and "\0" not in text else None
    in_title = titles.rows(text, plain)
    other: set[int] = set()
    if term.kind == "fuzzy" and len(text) >= min_fuzzy:
        if unhit is not None:  # a common word: only the few titles without a hit are searched
            other |= titles.fuzzy_rows(text, unhit - in_title)
        else:
            # only the union with `in_title` counts: with a rare letter in the term, only the titles
            # that hold it and not the term are searched (`sqlite`: 1,800 of 10,000), else every one
            letter = _rarest_letter(text)
            rare = titles.rows(letter) - in_title if letter in _RARE_LETTERS else None
            if rare is not None and len(rare) <= len(titles.starts) // 4:
                other |= titles.fuzzy_rows(text, rare)
            else:
                other |= titles.fuzzy_rows(text)
    if paths is not None:
        other |= paths.rows(text)
    return in_title, other, plain or set()


# letters from the most to the least frequent in English text and code: a term's rarest
# letter, the one fewest titles hold, is its last one in this order (anything else: rarer)
_LETTER_ORDER = {letter: rank for rank, letter in enumerate("etaoinsrhldcumfpgwybvkxjqz")}
_RARE_LETTERS = frozenset("xjqz")  # few titles hold them: finding those first pays


def _rarest_letter(term: str) -> str:
    """The character of `term` that probably the fewest titles hold (`_LETTER_ORDER`)."""
    return max(term, key=lambda char: _LETTER_ORDER.get(char, len(_LETTER_ORDER)))


def _fuzzy_in_line(term: str) -> str:
    """`fuzzy.fuzzy_pattern(term)`'s source, each gap kept inside one line of one title (never
    across a NUL, the titles' separator, nor a line break): over a shown line it matches where
    that pattern matches over the line alone (`_Joined.fuzzy_rows`)."""
    from .search.fuzzy import max_span

    gap = max_span(len(term)) - len(term)
    letters = [re.escape(char) for char in term]
    return "".join([letters[0]] + [f"[^{letter}\\x00\\n]{{0,{gap}}}+{letter}" for letter in letters[1:]])


def _fuzzy_probe(term: str, text: bytes | str) -> re.Pattern[Any] | None:
    """`_fuzzy_in_line(term)` compiled for `text` (bytes when the titles are ASCII); None when
    `text` is ASCII and `term` is not (it is in no title)."""
    source = _fuzzy_in_line(term)
    if isinstance(text, bytes):
        return re.compile(source.encode()) if source.isascii() else None
    return re.compile(source)


def _rarer_last(term: str) -> bool:
    """Whether `term`'s last letter is likely much rarer in titles than its first
    (`_LETTER_ORDER`): its fuzzy scan then pays to run backwards (`_Joined._backwards_rows`)."""
    rank = len(_LETTER_ORDER)
    return _LETTER_ORDER.get(term[-1], rank) - _LETTER_ORDER.get(term[0], rank) >= _BACKWARDS_GAIN


_BACKWARDS_GAIN = 8  # how many places later in `_LETTER_ORDER` the last letter must be (`tooltip`: t 0, p 15)
