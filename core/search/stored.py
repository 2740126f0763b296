"""Ranking sessions from what the index stores, without decoding one summary.

`seance ls --json --query WORD` for a word in nearly every session used to decode ten
thousand summaries, fold each one's title and path and write each one out again, for an
answer that is the stored `ls --json` objects in rank order.  What `rank.search` reads of a
session, for a query without field filters or marks, is its folded title (stored:
`haystack.folded_title`), its path and cwd, its recency and the index's hit: all in the
index row.  So a `StoredSession` carries those and the ready object, and the hits come back
in `rank.search`'s order, by `rank.search` itself (one ranking, never a copy of it).

A query with field filters (`name:`, `label:`, `after:`...) or marks (`tag:`, `is:`) needs
more of the summary: `needs_summaries` says so, and the caller decodes (`Catalog.matching`).
tests/test_cli_query.py compares both with ranking every summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple, cast

from ..model import SessionSummary
from .haystack import Haystack, SearchCache, fold_cwd
from .prefilter import Prefilter
from .query import Query, fold
from .rank import Hit, search
from .snippet import TextHit


class StoredSession(NamedTuple):
    """What ranking reads of a session (the attributes `Haystack`, `Block` and `Hit` use),
    and its stored `ls --json` object, which is what is printed."""

    path: str
    cwd: str
    modified_ms: int
    pi_json: bytes
    labels: tuple[str, ...] = ()  # only `label:` filters read them: such queries are not ranked here
    models: tuple[str, ...] = ()
    prefix_text: None = None  # an exact summary carries no message text: the index's hits are it

    @classmethod
    def of(cls, path: str, cwd: str, modified_ms: int, pi_json: bytes) -> StoredSession:
        """One session (without NamedTuple's Python-level __new__: a hundred thousand a query)."""
        return tuple.__new__(cls, (path, cwd, modified_ms, pi_json, (), (), None))


def needs_summaries(query: Query) -> bool:
    """Whether ranking `query` reads more of a session than the index row holds."""
    return bool(query.filters or query.mark_filters)


def rank_stored(
    sessions: Iterable[tuple[StoredSession, tuple[str, str, str]]],
    query: Query,
    text_hits: Mapping[str, TextHit],
    *,
    paths: bool,
) -> list[StoredSession]:
    """The sessions `query` matches, in `rank.search`'s order: `sessions` are (session, its
    folded title), newest first; `text_hits` the index's hits by path; `paths` as in `search`."""
    return [cast(StoredSession, hit.summary) for hit in rank_hits(sessions, query, text_hits, paths=paths)]


def rank_hits(
    sessions: Iterable[tuple[StoredSession, tuple[str, str, str]]],
    query: Query,
    text_hits: Mapping[str, TextHit],
    *,
    paths: bool,
    prefiltered: bool = False,
) -> list[Hit]:
    """`rank_stored` with each session's `Hit` (its tier and the index's hit): the caller
    merges these into hits it ranked by tier alone (`core.indexquery`).  `prefiltered`:
    the caller kept only sessions that may match (`Prefilter`'s rule, a superset: `search`
    decides), so they are not filtered again."""
    assert not needs_summaries(query)
    keep = None if prefiltered else Prefilter(query, text_hits, paths).keeps
    cache = SearchCache()
    candidates: list[SessionSummary] = []
    for session, title in sessions:
        if keep is None or keep(session.path, title, session.cwd):
            summary = cast(SessionSummary, session)  # duck-typed: see StoredSession
            ident, name, first = title
            cache.put(Haystack(summary, ident, name, first, "", fold_cwd(session.cwd), fold(session.path), (), ()))
            candidates.append(summary)
    return search(candidates, query, text_hits=text_hits, paths=paths, cache=cache)
