"""The final order's first page ahead of the ranking (`Matched.first`): the picker shows it,
with the count, once every match is known, where the title hits were too few for a first
page (app/screens/search_flow.py).  It must be exactly a prefix of the final ranking's hits
for every query typed key by key as the picker searches (one kept `SearchCache`,
`first_hits`, `prescan`, the index's lazy hits or a plain map of them), at every length;
differential against `search_iter`'s whole ranking on a generated corpus in a real index."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from test_search_count_ahead import _ranked, marked_corpus, typed_queries

from seance.core.search.rank import FULL_TEXT, FUZZY, TIERS

TRIALS = 80  # queries typed key by key (each prefix compared), the named ones first
LIMITS = (1, 2, 7, 40, 200)


def _key(hit: Any) -> tuple:
    """What a hit is, with the lazy map of the index's hits by identity (its equality would make every hit)."""
    source = hit.source
    return (
        id(hit.summary),
        hit.tier,
        hit.field,
        hit.score,
        id(hit.query),
        id(source) if isinstance(source, Mapping) else source,
    )


@pytest.mark.slow
def test_the_final_orders_first_page_is_a_prefix_of_the_final_ranking_80_trials(tmp_path: Path) -> None:
    marked = marked_corpus(tmp_path, 15)
    catalog, exact, rng, project = marked
    scopes = {
        False: project,
        True: rng.sample(exact, len(exact)),  # every project, shuffled: no first page (every tier is sorted)
    }
    compared = partitioned = fuzzy = several_tiers = unordered = 0
    extra = ("optmise", "dedline", "grep", "bash")
    for paths, summaries, cache, within, typed, query in typed_queries(marked, scopes, TRIALS, 0.3, extra):
        text_hits: Any = catalog.text_hits(query, include_cwd=paths, within=within) if query.fts_match() else {}
        if text_hits and rng.random() < 0.3:  # a plain map of the index's hits (`TextHit`s), not the lazy one
            text_hits = dict(text_hits)
        hits, matched = _ranked(summaries, query, cache, text_hits, paths)
        if paths:
            assert matched.first(200) is None or not hits, typed
            unordered += 1
            continue
        keys = [_key(hit) for hit in hits]
        for limit in LIMITS:
            first = matched.first(limit)
            assert first is not None
            assert [_key(hit) for hit in first] == keys[:limit], (typed, limit)
        compared += 1
        tiers = [hit.tier for hit in hits]
        fuzzy += TIERS[FUZZY] in tiers
        several_tiers += len(set(tiers)) > 2
        in_text = [hit for hit in hits if hit.tier == TIERS[FULL_TEXT]]
        positions = [index for index, hit in enumerate(hits) if hit.tier == TIERS[FULL_TEXT]]
        newest = sorted(positions, key=lambda at: (-hits[at].summary.modified_ms, at))
        partitioned += len(in_text) > 1 and positions != sorted(newest)  # (never: positions are sorted)
        partitioned += [hits[at] for at in newest] != in_text  # tools' output after what people wrote
    assert compared > TRIALS * 3 and unordered > 20
    assert partitioned > 20 and fuzzy > 5 and several_tiers > 20  # (not vacuous: each order rule was at work)
