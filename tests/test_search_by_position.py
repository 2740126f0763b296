"""The index's hits looked up by position (`search_iter`'s `summary_paths`,
`IndexHits.fields_at`): the picker passes the very list of paths it asked the index about, and
the ranking then takes each block's index fields as a slice instead of looking every path up
(~25 ms of CPU a key at 100,000 sessions, on the way to the count).  It must change nothing:
for every query typed key by key, the hits (order, tier, field, score, the index's field of
each), the count ahead of them and the final order's first page are those of the path
lookups; on a generated corpus in a real temp index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_search_count_ahead import marked_corpus, typed_queries

from seance.core.fulltext import is_primary
from seance.core.index import IndexHits
from seance.core.search import Matched, SearchCache, first_hits, prescan, search, search_iter

TRIALS = 60


def _searched(
    summaries: list, query: Any, cache: SearchCache, text_hits: Any, paths: bool, summary_paths: list[str] | None
) -> tuple[list, Matched | None, list]:
    """The picker's steps for one key (`first_hits`, `prescan`, `search_iter` with a count):
    the hits and the `Matched` the count was made from; then the same search without one."""
    first_hits(summaries, query, paths=paths, chunk=64, cache=cache, limit=200)
    assert prescan(summaries, query, paths=paths, chunk=64, cache=cache)
    seen: list[Matched] = []
    hits: list = []
    for step in search_iter(
        summaries,
        query,
        text_hits=text_hits,
        paths=paths,
        chunk=64,
        cache=cache,
        on_matched=seen.append,
        summary_paths=summary_paths,
    ):
        if step.hits is not None:
            hits = step.hits
    plain: list = []  # (no count asked for: `collect`, a block's hits at once)
    for step in search_iter(
        summaries, query, text_hits=text_hits, paths=paths, chunk=64, cache=cache, summary_paths=summary_paths
    ):
        if step.hits is not None:
            plain = step.hits
    return hits, (seen[0] if seen else None), plain


def _shape(hits: list) -> list[tuple]:
    """What a hit's row is made of: the session, tier, field, score and the index's field."""
    return [
        (id(hit.summary), hit.tier, hit.field, hit.score, None if hit.text_hit is None else hit.text_hit.field)
        for hit in hits
    ]


@pytest.mark.slow
def test_hits_by_position_are_the_hits_by_path_typed_key_by_key_60_trials(tmp_path: Path) -> None:
    marked = marked_corpus(tmp_path, 21)
    catalog, exact, project = marked.catalog, marked.exact, marked.project
    scopes = {False: project, True: exact}  # (every project: not newest first, the ranking sorts)
    by_place = {paths: SearchCache() for paths in scopes}
    by_path = {paths: SearchCache() for paths in scopes}
    compared = positional = in_tools = firsts = 0
    for paths, summaries, _cache, within, typed, query in typed_queries(marked, scopes, TRIALS, 0.3):
        if not query.fts_match():
            continue
        placed = catalog.text_hits(query, include_cwd=paths, within=within)
        looked_up = catalog.text_hits(query, include_cwd=paths, within=within)  # (a map of its own: no table shared)
        assert isinstance(placed, IndexHits) and placed is not looked_up
        assert placed.fields_at(list(within)) is None  # (an equal list is not the one asked about)
        at = placed.fields_at(within)
        assert at is not None and len(at) == len(summaries)
        assert at == looked_up.fields([summary.path for summary in summaries]), typed
        assert len(placed) == len(looked_up) == len(list(looked_up)), typed
        assert [placed.field(path) for path in within] == looked_up.fields(within), typed  # (one at a time: by id)
        others = [summary.path for summary in exact if summary.path not in set(within)][:20]  # indexed, not asked about
        assert not any(path in placed or placed.get(path) for path in others), typed
        positional += any(at)
        placed = catalog.text_hits(query, include_cwd=paths, within=within)  # (afresh: no table made above)
        hits, matched, plain = _searched(summaries, query, by_place[paths], placed, paths, within)
        expected, expected_matched, expected_plain = _searched(summaries, query, by_path[paths], looked_up, paths, None)
        assert _shape(hits) == _shape(expected) == _shape(plain) == _shape(expected_plain), typed
        assert _shape(hits) == _shape(search(summaries, query, text_hits=looked_up, paths=paths)), typed
        assert matched is not None and expected_matched is not None
        assert matched.tally() == expected_matched.tally(), typed
        for limit in (1, 7, 200):
            first = matched.first(limit)
            assert (first is None) == (expected_matched.first(limit) is None), typed
            if first is not None:
                assert _shape(first) == _shape(expected_matched.first(limit) or []) == _shape(hits[:limit]), typed
                firsts += 1
        in_tools += sum(
            hit.tier == "full-text" and field is not None and not is_primary(field)
            for hit, (*_, field) in zip(hits, _shape(hits), strict=True)
        )
        compared += 1
    assert compared > TRIALS * 3
    assert positional > TRIALS and firsts > TRIALS and in_tools > 100  # (not vacuous: fields, first pages, tools' hits)


def test_a_list_with_a_path_twice_is_looked_up_by_path(tmp_path: Path) -> None:
    """A position per file cannot stand for a path listed twice: such a list gets no
    positional answer (the search looks its paths up), and its hits are still every hit."""
    from seance.core.search import parse_query

    marked = marked_corpus(tmp_path, 5)
    within = [summary.path for summary in marked.project]
    twice = [*within, within[0]]
    query = parse_query("fts5")
    hits = marked.catalog.text_hits(query, include_cwd=False, within=twice)
    assert isinstance(hits, IndexHits)
    assert hits.fields_at(twice) is None
    once = marked.catalog.text_hits(query, include_cwd=False, within=within)
    assert isinstance(once, IndexHits) and once.fields_at(within) is not None
    assert len(hits) == len(once) > 0 and set(hits) == set(once)


def test_a_file_the_runs_read_but_not_asked_about_is_no_hit(tmp_path: Path) -> None:
    """The index reads runs of file ids, which hold files the caller did not ask about (every
    other session of a project here): looked up one at a time (a row's snippet), such a file
    is no hit, as in the table of every hit's path."""
    from seance.core.search import parse_query

    marked = marked_corpus(tmp_path, 8)
    every = [summary.path for summary in marked.project]
    half, skipped = every[::2], every[1::2]
    query = parse_query("the")
    whole = marked.catalog.text_hits(query, include_cwd=False, within=every)
    assert sum(path in whole for path in skipped) > 20  # (in the runs read for `half`: its neighbours)
    hits = marked.catalog.text_hits(query, include_cwd=False, within=half)
    assert not any(path in hits or hits.get(path) or hits.field(path) for path in skipped)
    assert [hits.field(path) for path in half] == [whole.field(path) for path in half]
    assert set(hits) == {path for path in half if path in whole}
