"""A query's fuzzy tier is looked for once the index has answered, only where it did not find the
query (`_Matcher._beside_index`): the same ranking as the whole scan, less work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from seance.core.search import SearchCache, parse_query, prescan, rank, search, search_iter
from tests.test_search import FakeTextHit, _outcome
from tests.test_search_first_page import _sessions

TYPED = ["qota", "dockr", "beef", "fix", "auth", "qota cwd:api", "qota !cache", "cache", "dead beef"]


def _counting_patterns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every title a fuzzy pattern is searched in (the matcher's fuzzy tier), in order."""
    searched: list[str] = []
    make = rank.fuzzy_pattern

    class Counted:
        def __init__(self, text: str) -> None:
            self._pattern = make(text)

        def search(self, string: str, *args: int):  # type: ignore[no-untyped-def]
            searched.append(string)
            return self._pattern.search(string, *args)

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self._pattern, name)

    monkeypatch.setattr(rank, "fuzzy_pattern", Counted)
    return searched


def _whole(sessions: list, query, text_hits, paths: bool) -> list:  # type: ignore[no-untyped-def]
    """The ranking with the fuzzy tier scanned in every session first, as before."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rank._Matcher, "_fuzzy_later", lambda self: False, raising=False)
        return search([replace(session) for session in sessions], query, text_hits=text_hits, paths=paths)


def test_a_lone_terms_fuzzy_tier_is_looked_for_only_where_the_index_did_not_find_it(monkeypatch) -> None:
    sessions = _sessions(600, seed=11, ordered=False)
    found = sessions[::2]  # the index finds the term in every other session
    text_hits = {session.path: FakeTextHit(session.path, "…", "assistant") for session in found}
    searched = _counting_patterns(monkeypatch)
    cache = SearchCache()
    for typed in ("q", "qo", "qot", "qota", "qota ", "qota d", "qota do", "qota dockr"):  # key by key
        query = parse_query(typed)
        for paths in (False, True):
            searched.clear()
            assert prescan(sessions, query, paths=paths, chunk=128, cache=cache)
            assert searched == []  # no fuzzy tier before the index's answer
            steps = search_iter(sessions, query, text_hits=text_hits, paths=paths, chunk=128, cache=cache)
            hits = next(step.hits for step in steps if step.hits is not None)
            # each term's fuzzy tier at most once in each session the index did not find it in
            assert len(searched) <= len(query.positive) * (len(sessions) - len(found)), typed
            if typed in ("qot", "qota", "qota dockr"):  # a new fuzzy term (others: kept, or none)
                assert searched, typed  # (not vacuous: titles were looked at)
                assert any(hit.tier == "fuzzy" for hit in hits), typed
            assert _outcome(hits) == _outcome(_whole(sessions, query, text_hits, paths)), (typed, paths)


def test_the_ranking_is_the_whole_scans_for_every_query_key_after_key() -> None:
    """Key after key, with and without paths, filters and negations, one cache kept across
    them all as the picker keeps it, with and without a prescan: the whole scan's ranking."""
    sessions = _sessions(500, seed=12, ordered=False)
    text_hits = {session.path: FakeTextHit(session.path, "…", "user") for session in sessions[::3]}
    cwd_hits = {session.path: FakeTextHit(session.path, "…", "cwd") for session in sessions[1::5]}
    cache = SearchCache()
    for typed in TYPED:
        for end in range(1, len(typed) + 1):
            query = parse_query(typed[:end])
            for paths in (False, True):
                for hits_given in (text_hits, cwd_hits):
                    if end % 2:
                        assert prescan(sessions, query, paths=paths, chunk=128, cache=cache)
                    steps = search_iter(sessions, query, text_hits=hits_given, paths=paths, chunk=128, cache=cache)
                    hits = next(step.hits for step in steps if step.hits is not None)
                    whole = _whole(sessions, query, hits_given, paths)
                    assert _outcome(hits) == _outcome(whole), (typed[:end], paths)
