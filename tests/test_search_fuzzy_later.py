"""A query's fuzzy tier is looked for once the index has answered, only where it did not find the
query (`_Matcher._beside_index`): the same ranking as the whole scan, less work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from seance.core.search import SearchCache, fuzzy_ahead, parse_query, prescan, rank, search, search_iter
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


def _per_session(sessions: list, query, text_hits, paths: bool, cache: SearchCache | None = None) -> list:  # type: ignore[no-untyped-def]
    """The ranking by the definition, session by session: each index hit's session is the
    terms' own matches combined with it (`_combine`), and each session whose match is in the
    substring tier is tested for a title the whole query starts, field by field in order."""

    def merge(self, block, alive, matches, rows, scans=None) -> None:  # type: ignore[no-untyped-def]
        if len(self.positive) == 1:
            return merged(self, block, alive, matches, rows, scans)
        found = scans or [
            self._scan_alone(term, key, block, alive) for term, key in zip(self.positive, self.keys, strict=True)
        ]
        for index, field_name in rows.items():
            self._combine(index, field_name, found, matches)

    def upgrade(self, block, matches, several: bool) -> None:  # type: ignore[no-untyped-def]
        upgraded(self, block, matches, several=False)  # (the exact ones)
        for index, (tier, _field, score) in list(matches.items()) if several else ():
            for value, field in zip(
                (block.idents, block.names, block.firsts), ("id", "name", "first message"), strict=True
            ):
                if tier == rank.SUBSTRING and value[index].startswith(self.whole):
                    matches[index] = (rank.PREFIX, field, score)
                    break

    merged, upgraded = rank._Matcher._merge_text_hits, rank._Matcher._upgrade_whole
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rank._Matcher, "_merge_text_hits", merge)
        patch.setattr(rank._Matcher, "_upgrade_whole", upgrade)
        return search([replace(session) for session in sessions], query, text_hits=text_hits, paths=paths)


SEVERAL = ["docker build", "fix the auth", "dead beef", "the cache", "quota kube fix", "build docker", "fix fi"]


def test_several_words_rank_as_each_sessions_combined_match_key_after_key() -> None:
    """Queries of several words typed key by key, their index hits in fields of both kinds and
    the cwd, with and without paths, one cache kept, a prescan every other key: each session's
    match is the terms' own ones combined with its index hit, as `_combine` makes it one session
    at a time, and a title the whole query starts is a prefix hit in its first such field."""
    sessions = _sessions(700, seed=21, ordered=True)
    for index, session in enumerate(sessions[:700:9]):  # titles the whole query starts or is
        sessions[index * 9] = replace(session, first_message=SEVERAL[index % len(SEVERAL)] + " now" * (index % 2))
    for index, session in enumerate(sessions[4:700:23]):
        sessions[4 + index * 23] = replace(session, name=SEVERAL[index % len(SEVERAL)])
    for index, session in enumerate(sessions[2:700:31]):  # both the name and the first message
        typed = SEVERAL[index % len(SEVERAL)]
        sessions[2 + index * 31] = replace(session, name=f"{typed} notes", first_message=f"{typed} then")
    fields = ("user", "assistant", "tool", "bash", "cwd")
    hit_sets = [
        {session.path: FakeTextHit(session.path, "…", fields[at % 5]) for at, session in enumerate(sessions[::2])},
        {session.path: FakeTextHit(session.path, "…", "tool") for at, session in enumerate(sessions) if at % 7},
    ]
    cache = SearchCache()
    seen = set()
    for typed in SEVERAL:
        for end in range(1, len(typed) + 1):
            query = parse_query(typed[:end])
            for paths in (False, True):
                for number, text_hits in enumerate(hit_sets):
                    if (end + number) % 2:
                        assert prescan(sessions, query, paths=paths, chunk=128, cache=cache)
                    steps = search_iter(sessions, query, text_hits=text_hits, paths=paths, chunk=128, cache=cache)
                    hits = next(step.hits for step in steps if step.hits is not None)
                    expected = _per_session(sessions, query, text_hits, paths)
                    assert _outcome(hits) == _outcome(expected), (typed[:end], paths, number)
                    seen.update((hit.tier, hit.field) for hit in hits)
    # not vacuous: prefix and exact hits of the whole query, full-text hits in the text, in
    # the index's fields, and combined title matches
    for wanted in [("prefix", "first message"), ("prefix", "name"), ("exact", "name"), ("full-text", "text")]:
        assert wanted in seen, wanted
    assert {("full-text", "tool"), ("full-text", "user"), ("substring", "first message")} <= seen


def test_a_path_match_does_not_hide_a_fuzzy_title_match_of_the_same_term() -> None:
    """With paths, a term in a session's cwd (a path match, the last tier) whose letters are
    also in its title, apart: the fuzzy match ranks above and is the session's, whether the
    term is alone or follows another, and whatever the index found elsewhere."""
    sessions = _sessions(240, seed=23, ordered=True)
    for at in range(0, 240, 6):  # "infra" is in their cwd, its letters apart in the title
        sessions[at] = replace(
            sessions[at], name=None, first_message=f"fix info frame {at}", cwd="/home/u/docker-infra"
        )
    text_hits = {session.path: FakeTextHit(session.path, "…", "user") for session in sessions[1::4]}
    cache = SearchCache()
    for typed in ("infra", "fix infra", "info infra"):
        for end in range(1, len(typed) + 1):
            query = parse_query(typed[:end])
            prescan(sessions, query, paths=True, chunk=64, cache=cache)
            steps = search_iter(sessions, query, text_hits=text_hits, paths=True, chunk=64, cache=cache)
            hits = next(step.hits for step in steps if step.hits is not None)
            assert _outcome(hits) == _outcome(_whole(sessions, query, text_hits, True)), typed[:end]
            assert _outcome(hits) == _outcome(_per_session(sessions, query, text_hits, True)), typed[:end]
        fuzzy = {hit.summary.id for hit in hits if hit.tier == "fuzzy"}
        assert {session.id for session in sessions[::6]} <= fuzzy, typed  # (not vacuous)


def test_the_fuzzy_tier_looked_for_ahead_is_what_the_next_words_search_needs(monkeypatch) -> None:
    """`fuzzy_ahead` after a word: the next word's search, whose index hits are fewer, looks for
    the first word's fuzzy tier in no session (each answer is kept), and ranks as the whole scan."""
    sessions = _sessions(600, seed=24, ordered=False)
    alone = {session.path: FakeTextHit(session.path, "…", "user") for session in sessions[::2]}
    both = {session.path: FakeTextHit(session.path, "…", "tool") for session in sessions[::10]}
    looked: list[tuple[str, int]] = []
    fuzzy = rank._Matcher._fuzzy

    def counted(self, term, block, candidates):  # type: ignore[no-untyped-def]
        looked.append((term.text, len(candidates)))
        return fuzzy(self, term, block, candidates)

    monkeypatch.setattr(rank._Matcher, "_fuzzy", counted)
    for paths in (False, True):
        cache = SearchCache()
        first = parse_query("qota ")
        assert prescan(sessions, first, paths=paths, chunk=128, cache=cache)
        _ = [step for step in search_iter(sessions, first, text_hits=alone, paths=paths, chunk=128, cache=cache)]
        looked.clear()
        for _ in fuzzy_ahead(sessions, first, paths=paths, chunk=128, cache=cache):
            pass
        assert sum(count for text, count in looked if text == "qota") > 100  # (where the index found "qota")
        for typed in ("qota d", "qota do", "qota dockr"):
            looked.clear()
            query = parse_query(typed)
            assert prescan(sessions, query, paths=paths, chunk=128, cache=cache)
            steps = search_iter(sessions, query, text_hits=both, paths=paths, chunk=128, cache=cache)
            hits = next(step.hits for step in steps if step.hits is not None)
            assert not [count for text, count in looked if text == "qota" and count], (typed, looked)
            assert _outcome(hits) == _outcome(_whole(sessions, query, both, paths)), (typed, paths)
            assert any(hit.tier == "fuzzy" for hit in hits), typed  # (not vacuous)
