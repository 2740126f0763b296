"""Typing a word key by key, as the picker searches (one `SearchCache` kept across keys and
queries: `first_hits`, `prescan`, the index's lazy hits, `search_iter`), gives the very hits a
fresh search gives: same sessions, order, tiers, fields, scores and snippets.  A key that
grows a term ("dea" after "de") tests its substrings only in the sessions the shorter text
matched (`_Matcher._grown_from`); this compares that against a search with an empty cache,
on generated sessions in a real temp index."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest
from ui_sessions import Spec, make_root

from seance.core.catalog import Catalog
from seance.core.search import SearchCache, first_hits, parse_query, prescan, search, search_iter
from seance.core.search.rank import _Matcher

PROJECTS = ("/work/demo/project", "/work/demo/deadwood", "/work/sql/quarry")
# words that share their first letters, so a grown key narrows to some and not others
WORDS = [
    *("dead", "deadline", "deadlock", "deal", "dealer", "dean", "death", "debug", "decode"),
    *("sql", "sqlite", "sqlalchemy", "square", "squash", "quarry", "query", "quick"),
    *("refactor", "reference", "refresh", "ref", "cursor", "curse", "curl", "fts5", "fts", "fuzzy", "futures"),
    *("xyzzy", "the", "a", "ab", "abc"),
]
TRIALS = 80


def _phrase(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 12))]
    if rng.random() < 0.3:  # a word inside another one, or split by punctuation
        at = rng.randrange(len(words))
        words[at] = rng.choice(("x", "re", "un", "")) + words[at] + rng.choice(("", "s", "ing", "-y", ".py"))
    return " ".join(words)


def _specs(rng: random.Random, count: int) -> list[Spec]:
    specs = []
    for number in range(count):
        prompts = tuple(_phrase(rng) for _ in range(rng.randint(1, 5)))
        name = _phrase(rng)[:40] if rng.random() < 0.3 else None
        age = timedelta(minutes=rng.randint(1, 60 * 24 * 30))
        sid = f"s{number:04d}-{rng.choice(('dea', 'sql', 'ab', 'f0'))}"
        specs.append(Spec(sid, rng.choice(PROJECTS), prompts, age, name))
    return specs


def _query(rng: random.Random) -> str:
    if rng.random() < 0.15:  # an id's prefix, and a part of an id that is no prefix of it
        return rng.choice(("001", "0012", "s001", "s0012", "012", "s01"))
    words = [rng.choice(WORDS)]
    if rng.random() < 0.35:
        words.append(rng.choice(WORDS))
    text = " ".join(words)
    if rng.random() < 0.15:
        text += " !" + rng.choice(WORDS)
    if rng.random() < 0.1:
        text = "s0" + text  # an id's prefix, then more
    return text


def _seen(hits: list) -> list[tuple]:
    return [(hit.summary.path, hit.tier, hit.field, hit.score) for hit in hits]


def _snippets(hits: list) -> list[tuple]:
    return [(hit.summary.path, hit.snippet()) for hit in hits[:30]]


@pytest.mark.slow
def test_typed_key_by_key_equals_a_fresh_search_80_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(14)
    root = make_root(tmp_path, _specs(rng, 400))
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    summaries = catalog.exact()
    narrowed = []
    grown_from = _Matcher._grown_from

    def counted(self, block, key, before):  # type: ignore[no-untyped-def]
        found = grown_from(self, block, key, before)
        narrowed.append(found is not None)
        return found

    monkeypatch.setattr(_Matcher, "_grown_from", counted)
    quick = catalog.quick()  # (these carry the first 4 KB's text: the text tier is scanned too)
    scopes = {  # (paths matched, summaries)
        (False, "exact"): [summary for summary in summaries if summary.cwd == PROJECTS[0]],  # one project
        (False, "quick"): [summary for summary in quick if summary.cwd == PROJECTS[1]],
        (True, "exact"): summaries,  # every project, cwd and path matched
        (True, "quick"): quick,
    }
    caches = {scope: SearchCache() for scope in scopes}  # kept across queries, as the picker keeps it
    compared = 0
    for _trial in range(TRIALS):
        scope = rng.choice(list(scopes))
        paths = scope[0]
        listed, cache = scopes[scope], caches[scope]
        within = [summary.path for summary in listed]
        text = _query(rng)
        for end in range(1, len(text) + 1):
            query = parse_query(text[:end])
            text_hits = catalog.text_hits(query, include_cwd=paths, within=within) if query.fts_match() else {}
            first = first_hits(listed, query, paths=paths, chunk=64, cache=cache, limit=20)
            assert prescan(listed, query, paths=paths, chunk=64, cache=cache)
            typed: list = []
            for step in search_iter(listed, query, text_hits=text_hits, paths=paths, chunk=64, cache=cache):
                if step.hits is not None:
                    typed = step.hits
            fresh_text_hits = catalog.text_hits(query, include_cwd=paths, within=within) if query.fts_match() else {}
            fresh = search(listed, query, text_hits=fresh_text_hits, paths=paths, cache=SearchCache())
            assert _seen(typed) == _seen(fresh), text[:end]
            assert _snippets(typed) == _snippets(fresh), text[:end]
            fresh_first = first_hits(listed, query, paths=paths, chunk=64, cache=SearchCache(), limit=20)
            assert first is not None and fresh_first is not None
            assert _seen(first) == _seen(fresh_first), text[:end]
            compared += 1
    assert compared > TRIALS * 3
    assert sum(narrowed) > TRIALS  # (not vacuous: grown keys were narrowed)


def _typed(listed: list, texts: tuple[str, ...], paths: bool) -> list[tuple]:
    """The hits of the last of `texts`, each typed key by key into one kept cache."""
    cache, hits = SearchCache(), []
    for text in texts:
        for end in range(1, len(text) + 1):
            hits = search(listed, text[:end], paths=paths, cache=cache)
    return _seen(hits)


def test_a_grown_key_finds_where_the_shorter_text_matched_only_fuzzily_and_ids_by_prefix(tmp_path: Path) -> None:
    specs = [
        Spec("s0012-abc", "/work/demo/deadwood", ("do every act",), timedelta(hours=1)),  # "dea": fuzzy only
        Spec("s0013-abc", "/work/demo/deadwood", ("nothing here",), timedelta(hours=2)),
        Spec("t0001-abc", "/work/demo/other", ("ids 0123 and 9s01",), timedelta(hours=3)),
    ]
    catalog = Catalog([make_root(tmp_path, specs)], cache_dir=tmp_path / "cache")
    listed = catalog.exact()
    for texts, paths in ((("dead",), True), (("012", "s01"), False), (("01", "s01"), True)):
        fresh = _seen(search(listed, texts[-1], paths=paths, cache=SearchCache()))
        assert _typed(listed, texts, paths) == fresh, texts
        assert fresh  # (not vacuous)
    # the cwd match of "dead" in a session whose title "dea" matched only fuzzily (its cwd unread)
    assert ("path", "cwd") in {(seen[1], seen[2]) for seen in _seen(search(listed, "dead", paths=True))}
