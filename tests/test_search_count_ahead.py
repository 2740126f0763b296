"""A search's count ahead of its ranking (`search_iter`'s `on_matched`, `Matched.tally`,
`RowsView.hit_lines`): the picker shows it under the first page before the hits are made and
ranked (app/screens/search_flow.py, `SearchCount`), so it must be exactly the rows and lines
the final ranking's rows have, for every query typed key by key as the picker searches (one
kept `SearchCache`, `first_hits`, `prescan`, the index's lazy hits), in every child mode and
sort, with and without paths; on a generated corpus (tools, errors, names, forks) in a real
temp index."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from seance.app.picker_model import RowsMemo, RowsView
from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.listing import CHILD_MODES, SORTS
from seance.core.marks import Mark
from seance.core.model import SessionSummary
from seance.core.search import Matched, QueryError, SearchCache, first_hits, parse_query, prescan, search_iter

QUERIES = (
    "fts5 cursor",
    "sqlite deadline",
    "the test fixture",
    "refactor !token",
    '"fix the" schema',
    "tool:grep parser",
    "error:timeout",
    "tool:bash",
    "index re:cach.",
    "re:de.d",
    "cursor label:x",
    "cwd:work",
    "optimse",  # fuzzy
    "benchmark latency memory",
    "user:refactor",
    "is:pinned",
    "tag:keep deadline",
)
TRIALS = 60  # queries typed key by key (each prefix compared), the named ones first


def _ranked(summaries: list, query: Any, cache: SearchCache, text_hits: Any, paths: bool) -> tuple[list, Matched]:
    """The picker's steps for one key: the hits, and what `on_matched` was given."""
    marks = _MARKS
    first_hits(summaries, query, paths=paths, chunk=64, cache=cache, marks=marks, limit=200)
    assert prescan(summaries, query, paths=paths, chunk=64, cache=cache, marks=marks)
    seen: list[Matched] = []
    hits: list = []
    for step in search_iter(
        summaries, query, text_hits=text_hits, paths=paths, chunk=64, cache=cache, marks=marks, on_matched=seen.append
    ):
        if step.hits is not None:
            hits = step.hits
        else:
            assert len(seen) <= 1
    assert len(seen) == 1  # once, before the last step
    return hits, seen[0]


_MARKS: dict[str, Mark] = {}


class Marked(NamedTuple):
    """A generated corpus in a real temp index, a few of its sessions pinned (`marked_corpus`)."""

    catalog: Catalog
    exact: list[SessionSummary]  # its exact listing
    rng: random.Random  # seeded: the trials' queries and choices
    project: list[SessionSummary]  # the first project's sessions, newest first


def marked_corpus(tmp_path: Path, seed: int) -> Marked:
    """400 generated sessions in 3 projects (tools, errors, names, forks) indexed in a temp
    cache, 40 of them pinned and tagged "keep" in `_MARKS` (what `is:` and `tag:` see)."""
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=400, projects=3, seed=seed, mean_bytes=4000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    exact = catalog.refresh()
    rng = random.Random(seed)
    ids = [summary.id for summary in exact if summary.id]
    _MARKS.clear()
    _MARKS.update({sid: Mark(pinned=True, tags=("keep",)) for sid in rng.sample(ids, 40)})
    first_cwd = min(summary.cwd for summary in exact)
    project = sorted([s for s in exact if s.cwd == first_cwd], key=lambda summary: -summary.modified_ms)
    return Marked(catalog, exact, rng, project)


def typed_queries(
    marked: Marked, scopes: dict[bool, list[SessionSummary]], trials: int, share: float, extra: tuple[str, ...] = ()
) -> Iterator[tuple[bool, list[SessionSummary], SearchCache, list[str], str, Any]]:
    """`QUERIES`, then random ones of their words (and `extra`) up to `trials`, each typed key
    by key as the picker searches: (paths, the scope's sessions, its kept `SearchCache`, their
    paths, the text typed so far, its parsed query) per key that parses; the paths scope for a `share` of them."""
    rng = marked.rng
    caches = {paths: SearchCache() for paths in scopes}
    words = [word for text in QUERIES for word in text.split()] + list(extra)
    texts = list(QUERIES) + [" ".join(rng.sample(words, rng.randint(1, 3))) for _ in range(trials - len(QUERIES))]
    for text in texts:
        paths = rng.random() < share
        summaries, cache = scopes[paths], caches[paths]
        within = [summary.path for summary in summaries]
        for end in range(1, len(text) + 1):
            try:
                query = parse_query(text[:end])
            except QueryError:  # (an unfinished regex: the picker keeps the last results)
                continue
            yield paths, summaries, cache, within, text[:end], query


@pytest.mark.slow
def test_the_count_ahead_of_the_ranking_is_the_final_rows_count_and_lines_60_trials(tmp_path: Path) -> None:
    marked = marked_corpus(tmp_path, 14)
    catalog, exact, project = marked.catalog, marked.exact, marked.project
    scopes = {
        False: project,
        True: exact,  # every project, not newest first: the ranking sorts
    }
    compared = snippets = hidden = filtered = 0
    for paths, summaries, cache, within, typed, query in typed_queries(marked, scopes, TRIALS, 0.4):
        text_hits = catalog.text_hits(query, include_cwd=paths, within=within) if query.fts_match() else {}
        hits, matched = _ranked(summaries, query, cache, text_hits, paths)
        assert matched.tally() == (len(hits), sum(hit.shows_snippet for hit in hits)), typed
        memo = RowsMemo()
        for children in CHILD_MODES:
            for sort in SORTS:
                view = RowsView(summaries, False, sort, children, _MARKS, None, memo)
                rows = view.hit_rows(hits)
                assert view.hit_lines(matched) == (len(rows), rows.line_count), (typed, children, sort)
                hidden += len(hits) - len(rows)
        compared += 1
        snippets += sum(hit.shows_snippet for hit in hits)
        filtered += not query.positive and bool(hits)
    assert compared > TRIALS * 4
    assert snippets > 1000 and hidden > 100 and filtered > 0  # (not vacuous: every part of the count counted)
