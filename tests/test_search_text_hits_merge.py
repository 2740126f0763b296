"""The index's hits merged into a query of several terms (`_Matcher._merge_text_hits`): where
no term is in a session's title the combination is made without a loop per term; it must be
exactly what combining every term's match one by one (`_Matcher._combine`) gives, on a
generated corpus, for every prefix of queries typed a key at a time (what the picker asks)."""

from __future__ import annotations

from pathlib import Path

from seance.core.catalog import Catalog
from seance.core.generate import generate_corpus
from seance.core.search import QueryError, SearchCache, parse_query, search
from seance.core.search.rank import FULL_TEXT, _Matcher

QUERIES = (
    "fts5 cursor",
    "sqlite deadline",
    "the test fixture",
    "refactor !token",
    '"fix the" schema',
    "tool:grep parser",
    "index re:cach.",
    "cursor label:x",
)


def prefixes(text: str) -> list[str]:
    return [text[:end] for end in range(1, len(text) + 1)]


def test_the_merge_without_a_loop_per_term_is_the_term_by_term_combination(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    generate_corpus(root, sessions=300, projects=3, seed=11, mean_bytes=4000)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    exact = catalog.refresh()
    quick = catalog.quick()  # (its summaries carry their first 4 KB of text: terms found there too)
    merged = titled = in_text = 0
    for listing in (exact, quick):
        summaries = sorted(listing, key=lambda summary: -summary.modified_ms)
        paths = [summary.path for summary in summaries]
        cache = SearchCache()
        blocks = [cache.block(summaries[start : start + 64]) for start in range(0, len(summaries), 64)]
        for text in (prefix for query in QUERIES for prefix in prefixes(query)):
            try:
                query = parse_query(text)
            except QueryError:  # (an unfinished regex: the picker keeps the last results)
                continue
            if len(query.positive) < 2 or query.fts_match() is None:
                continue
            text_hits = catalog.text_hits(query, include_cwd=False, within=paths)
            matcher = _Matcher(query, text_hits, paths=False)
            for block in blocks:
                alive = matcher.alive(block.hays)
                rows = matcher._index_rows(block, alive)
                fast = matcher._chain(block, alive)
                matcher._merge_text_hits(block, alive, fast, rows)
                expected = matcher._chain(block, alive)
                terms = zip(matcher.positive, matcher.keys, strict=True)
                found = [matcher._scan_alone(term, key, block, alive) for term, key in terms]
                for index, field_name in rows.items():
                    matcher._combine(index, field_name, found, expected)
                assert fast == expected, text
                merged += len(rows)
                titled += sum(1 for index in rows if any(index in f and f[index][0] < FULL_TEXT for f in found))
                in_text += sum(1 for index in rows if found[0].get(index, (0,))[0] == FULL_TEXT)
            assert search(summaries, query, text_hits=text_hits) == search(
                summaries, query, text_hits=text_hits, cache=cache
            )
    assert merged > 1000 and titled > 10 and in_text > 10  # (every way of merging was exercised)
