"""core.search.first_hits: the title tiers alone are always the first hits of the full search."""

from __future__ import annotations

import random
from dataclasses import replace

from seance.core.search import SearchCache, first_hits, parse_query, prescan, search, search_iter
from tests.test_search import FakeTextHit, _outcome, summary

WORDS = ["docker", "build", "cache", "fix", "auth", "quota", "kube", "the", "dead", "beef"]


def _sessions(count: int, seed: int, *, ordered: bool) -> list:
    rng = random.Random(seed)
    sessions = [
        summary(
            f"{rng.choice(['dead', 'beef', 'cafe', '0a1b'])}{index:05x}",
            " ".join(rng.sample(WORDS, 3)),
            name=" ".join(rng.sample(WORDS, 2)) if index % 5 == 0 else None,
            text=" ".join(rng.sample(WORDS, rng.randrange(0, 4))),
            cwd=f"/home/u/{rng.choice(['api', 'web', 'docker-infra'])}",
            modified_ms=1_700_000_000_000 + (count - index if ordered else rng.randrange(count)),
        )
        for index in range(count)
    ]
    return sessions


QUERIES = [
    "d", "do", "docker", "docker b", "docker build", "fix auth", "the !cache", "dead", "beef",
    "re:f.x", "fix re:a.t", "kube cwd:api", "qota", "auth docker-infra", "tool:docker", '"fix auth"',
    "cache !re:x", "",
]  # fmt: skip


def test_first_hits_are_the_full_searchs_first_hits_for_every_query_and_keystroke() -> None:
    """Typed key by key over both orders and with and without index hits (which rank below the
    titles: they may never change what `first_hits` put first), with one cache kept across all
    of them and the full search run after `first_hits` each time, as the picker runs them."""
    for ordered in (True, False):
        sessions = _sessions(700, seed=3, ordered=ordered)
        text_hits = {session.path: FakeTextHit(session.path, "…", "assistant") for session in sessions[::4]}
        cache = SearchCache()
        for typed in QUERIES:
            for end in range(1, len(typed) + 1) if typed else [0]:
                query = parse_query(typed[:end])
                for paths in (False, True):
                    first = first_hits(sessions, query, paths=paths, chunk=128, cache=cache)
                    assert first is not None
                    for limit in (1, 7, 60):  # fewer made, the same first ones
                        assert (
                            first_hits(sessions, query, paths=paths, chunk=128, cache=cache, limit=limit)
                            == first[:limit]
                        )
                    for hits_given in (None, text_hits):
                        full = search(sessions, query, text_hits=hits_given, paths=paths, cache=cache)
                        assert _outcome(full[: len(first)]) == _outcome(first), (typed[:end], paths, ordered)
                        assert all(hit.tier in ("exact", "prefix", "substring", "filter") for hit in first)
                        rest = full[len(first) :]  # and nothing in a title tier was left out
                        assert not any(hit.tier in ("exact", "prefix", "substring") for hit in rest), typed[:end]


def test_first_hits_find_titles_only_and_stop_when_cancelled() -> None:
    sessions = [
        summary("a1", "fix the docker build", modified_ms=3),
        summary("b2", "something else", text="docker in the text", modified_ms=2),
        summary("c3", "docker", modified_ms=1),
    ]
    query = parse_query("docker")
    assert [hit.summary.id for hit in first_hits(sessions, query) or []] == ["c3", "a1"]  # exact, then substring
    assert [hit.summary.id for hit in search(sessions, query)] == ["c3", "a1", "b2"]
    assert first_hits(sessions, query, cancelled=lambda: True) is None


def test_a_search_after_prescan_ranks_as_a_fresh_one() -> None:
    """The picker scans the terms while the index query runs, then ranks with its hits: the
    memoised scans must give what a search from scratch gives, key after key."""
    sessions = _sessions(500, seed=8, ordered=False)
    text_hits = {session.path: FakeTextHit(session.path, "…", "tool_result") for session in sessions[::3]}
    cache = SearchCache()
    for typed in QUERIES:
        for end in range(1, len(typed) + 1) if typed else [0]:
            query = parse_query(typed[:end])
            for paths in (False, True):
                assert prescan(sessions, query, paths=paths, chunk=128, cache=cache)
                steps = search_iter(sessions, query, text_hits=text_hits, paths=paths, chunk=128, cache=cache)
                reused = next(step.hits for step in steps if step.hits is not None)
                fresh = search([replace(session) for session in sessions], query, text_hits=text_hits, paths=paths)
                assert _outcome(reused) == _outcome(fresh), (typed[:end], paths)
    assert not prescan(sessions, parse_query("fix"), cache=cache, cancelled=lambda: True)


def test_prescan_of_several_terms_leaves_no_term_to_scan_once_the_index_answers(monkeypatch) -> None:
    """With the index's hits, a query of several terms is merged with each term's own scan
    (`_merge_text_hits`): the picker's `prescan` makes those while the index answers, and the
    chain of terms reuses them, so each term is scanned at most once per block, and nothing is
    left to scan once the index has answered."""
    from seance.core.search import rank

    sessions = _sessions(500, seed=9, ordered=False)
    text_hits = {session.path: FakeTextHit(session.path, "…", "assistant") for session in sessions[::2]}
    scanned: list[str] = []
    scan_term = rank._Matcher._scan_term

    def counted(self, term, block, candidates, *narrowed, **options):  # (what a grown or titled term is narrowed by)
        scanned.append(term.text)
        return scan_term(self, term, block, candidates, *narrowed, **options)

    monkeypatch.setattr(rank._Matcher, "_scan_term", counted)
    cache, blocks = SearchCache(), -(-len(sessions) // 128)
    for typed in ("docker", "docker b", "docker bu", "fix auth", "kube dead beef", "the !cache"):
        query = parse_query(typed)
        scanned.clear()
        assert prescan(sessions, query, chunk=128, cache=cache)
        assert all(scanned.count(text) <= blocks for text in set(scanned)), typed
        scanned.clear()
        steps = search_iter(sessions, query, text_hits=text_hits, chunk=128, cache=cache)
        hits = next(step.hits for step in steps if step.hits is not None)
        assert hits and scanned == [], typed  # (not vacuous: index hits merged)
        fresh = search([replace(session) for session in sessions], query, text_hits=text_hits)
        assert _outcome(hits) == _outcome(fresh), typed
