"""core.search: the query language, ranking tiers, filters, highlight spans and chunking."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, replace
from datetime import datetime

import pytest

from seance.core.model import SessionSummary
from seance.core.search import (
    QueryError,
    SearchCache,
    highlight,
    merge_spans,
    parse_query,
    query_snippet,
    search,
    search_iter,
)

DAY_MS = 86_400_000


def summary(
    sid: str,
    first: str = "(no messages)",
    *,
    name: str | None = None,
    text: str = "",
    cwd: str = "/home/u/proj",
    modified_ms: float = 1_700_000_000_000,
    labels: tuple[str, ...] = (),
    models: tuple[str, ...] = (),
) -> SessionSummary:
    return SessionSummary(
        path=f"{cwd}/.sessions/2025-01-01T00-00-00-000Z_{sid}.jsonl",
        id=sid,
        cwd=cwd,
        name=name,
        parent_session=None,
        created=None,
        modified="",
        modified_ms=modified_ms,
        message_count=1,
        first_message=first,
        labels=labels,
        models=models,
        prefix_text=text,
    )


@dataclass(frozen=True)
class FakeTextHit:
    path: str
    snippet: str
    field: str
    spans: tuple[tuple[int, int], ...] = ()


def ids(hits) -> list[str]:
    return [hit.summary.id for hit in hits]


# ---------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fix auth", [("fuzzy", "fix", False), ("fuzzy", "auth", False)]),
        ("  Fix   AUTH ", [("fuzzy", "fix", False), ("fuzzy", "auth", False)]),
        ('"Memory  Leak" now', [("phrase", "memory leak", False), ("fuzzy", "now", False)]),
        ('!"memory leak"', [("phrase", "memory leak", True)]),
        ("!docker", [("fuzzy", "docker", True)]),
        ("!", []),
        ('"unbalanced quote', [("fuzzy", "unbalanced", False), ("fuzzy", "quote", False)]),
        ('a "b', [("fuzzy", "a", False), ("fuzzy", "b", False)]),
        ('"name:literal"', [("phrase", "name:literal", False)]),
        ("http://example.com", [("fuzzy", "http://example.com", False)]),
        ("cwd:", []),
        ("re:", []),
        ('""', []),
    ],
)
def test_parse_terms(text, expected) -> None:
    query = parse_query(text)
    assert [(term.kind, term.text, term.negated) for term in query.terms] == expected


@pytest.mark.parametrize(
    ("text", "field", "value", "negated"),
    [
        ("id:019A", "id", "019a", False),
        ("name:Auth", "name", "auth", False),
        ('name:"two words"', "name", "two words", False),
        ("CWD:/home/u", "cwd", "/home/u", False),
        ("!cwd:tmp", "cwd", "tmp", True),
        ("label:todo", "label", "todo", False),
        ("model:opus", "model", "opus", False),
        ("path:sessions", "path", "sessions", False),
    ],
)
def test_parse_fields(text, field, value, negated) -> None:
    (term,) = parse_query(text).terms
    assert (term.kind, term.field, term.text, term.negated) == ("field", field, value, negated)


def test_parse_dates_are_local_midnights() -> None:
    after, before = parse_query("after:2025-01-10 before:2025-02-01").terms
    assert after.bound_ms == datetime(2025, 1, 10).timestamp() * 1000
    assert before.bound_ms == datetime(2025, 2, 1).timestamp() * 1000


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("re:(ab", "re: missing ), unterminated subpattern at 0"),
        ("fix re:a[", "re: unterminated character set at 1"),
        ("after:2025-13-01", "after: expects a date as YYYY-MM-DD, not '2025-13-01'"),
        ("before:yesterday", "before: expects a date as YYYY-MM-DD, not 'yesterday'"),
    ],
)
def test_parse_errors_are_clear(text, message) -> None:
    with pytest.raises(QueryError) as raised:
        parse_query(text)
    assert str(raised.value) == message


def test_regex_terms_keep_spaces_in_quotes() -> None:
    (term,) = parse_query('re:"fix +auth"').terms
    assert term.kind == "regex"
    assert term.pattern is not None and term.pattern.search("please FIX  AUTH now")


@pytest.mark.parametrize(
    ("text", "fts"),
    [
        ("fix auth", '"fix"* "auth"*'),
        ('"memory leak" !docker', '"memory leak" NOT "docker"*'),
        ('say"hi', '"say"* "hi"'),  # unbalanced: quote dropped; "hi" is short: a whole word
        ("r re ref", '"r" "re" "ref"*'),  # a prefix from MIN_PREFIX letters, whole words below
        ('"a ""b"', '"a b"'),  # adjacent quoted parts glue into one phrase
        ("re:abc cwd:x", None),
        ("--- !x", None),
        ("", None),
    ],
)
def test_fts_match(text, fts) -> None:
    assert parse_query(text).fts_match() == fts


def test_fts_match_is_valid_fts5_for_hostile_input() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES ('fix the auth bug in NEAR OR AND module')")
    for text in ['fix" OR "auth', "NEAR( AND", "fix* auth", "!OR fix", 'a"b"c', "(auth)", "col:fix"]:
        match = parse_query(text).fts_match()
        if match:
            db.execute("SELECT * FROM t WHERE t MATCH ?", (match,)).fetchall()  # must not raise


# ---------------------------------------------------------------------------- tiers


def test_ranking_tiers_then_recency() -> None:
    sessions = [
        summary("a1", "something about fuzzy finders", modified_ms=9),  # fuzzy? no: "auth" absent
        summary("b2", "fix the auth flow", modified_ms=8),  # substring
        summary("c3", "auth", modified_ms=1),  # exact
        summary("d4", "authentication rework", modified_ms=2),  # prefix
        summary("e5", "unrelated title", text="we changed auth here", modified_ms=7),  # full text
        summary("f6", "ask u to hold", modified_ms=6),  # fuzzy a-u-t-h
        summary("g7", "Authors page", name="auth tweaks", modified_ms=5),  # prefix via name
    ]
    hits = search(sessions, "auth")
    assert [(hit.summary.id, hit.tier, hit.field) for hit in hits] == [
        ("c3", "exact", "first message"),
        ("g7", "prefix", "name"),
        ("d4", "prefix", "first message"),
        ("b2", "substring", "first message"),
        ("e5", "full-text", "text"),
        ("f6", "fuzzy", "first message"),
    ]


def test_exact_and_prefix_of_whole_query() -> None:
    sessions = [
        summary("x1", "Fix auth", modified_ms=1),
        summary("x2", "fix auth in the login page", modified_ms=2),
        summary("x3", "auth fix", modified_ms=3),
    ]
    assert [(hit.summary.id, hit.tier) for hit in search(sessions, "fix auth")] == [
        ("x1", "exact"),
        ("x2", "prefix"),
        ("x3", "substring"),
    ]


def test_id_matches_by_prefix_only() -> None:
    sessions = [summary("019abc00-1111", "first"), summary("ffff019a-2222", "second")]
    assert [(hit.summary.id, hit.tier, hit.field) for hit in search(sessions, "019A")] == [
        ("019abc00-1111", "prefix", "id")
    ]
    assert [hit.tier for hit in search(sessions, "019abc00-1111")] == ["exact"]


def test_every_token_must_match() -> None:
    sessions = [summary("a", "docker build"), summary("b", "docker compose"), summary("c", "build cache")]
    assert ids(search(sessions, "docker build")) == ["a"]
    assert ids(search(sessions, "build")) == ["c", "a"]  # prefix before substring


def test_weakest_term_decides_the_tier() -> None:
    sessions = [summary("a", "docker build", text="and the cache was cold")]
    (hit,) = search(sessions, "docker cache")
    assert (hit.tier, hit.field) == ("full-text", "text")


def test_fuzzy_needs_letters_close_together() -> None:
    sessions = [
        summary("tight", "session picker"),
        summary("loose", "so every session ended, people said pick a kite " + "x" * 40),
        summary("none", "nothing in order"),
    ]
    assert ids(search(sessions, "sesspick")) == ["tight"]


def test_short_tokens_do_not_match_fuzzily() -> None:
    sessions = [summary("a", "a big cat"), summary("b", "abc")]
    assert ids(search(sessions, "ac")) == []  # a..c is a subsequence but 2 letters is noise


def test_fuzzy_only_on_the_title_shown() -> None:
    named = summary("n", "fix the authentication", name="Release notes")
    assert ids(search([named], "fxauth")) == []  # first message hidden behind the name
    assert ids(search([summary("m", "fix the authentication")], "fxauth")) == ["m"]


def test_fuzzy_scores_rank_within_tier() -> None:
    sessions = [
        summary("worse", "f i x a u t h spread", modified_ms=10),
        summary("better", "fixauth", modified_ms=1),
    ]
    hits = search(sessions, "fxath")
    assert ids(hits) == ["better", "worse"]
    assert hits[0].score > hits[1].score


def test_phrase_and_regex() -> None:
    sessions = [
        summary("a", "the memory  leak in render"),
        summary("b", "leak memory"),
        summary("c", "notes", text="a Docker build and a dockerfile"),
    ]
    assert ids(search(sessions, '"memory leak"')) == ["a"]
    # a regex reads the id, name and first message (and, across projects, the paths): the
    # index has no regex, so neither has a quick summary's prefix text (the two would disagree)
    assert ids(search(sessions, "re:dock.r")) == []
    assert ids(search(sessions, "re:n.tes")) == ["c"]
    assert ids(search(sessions, "re:^leak")) == ["b"]


def test_negation() -> None:
    sessions = [
        summary("a", "docker build"),
        summary("b", "docker compose", text="the build failed"),
        summary("c", "podman build"),
    ]
    assert ids(search(sessions, "build !docker")) == ["c"]
    assert sorted(ids(search(sessions, "!compose"))) == ["a", "c"]
    assert ids(search(sessions, '!"docker build" build')) == ["c", "b"]  # substring before full text
    assert ids(search(sessions, "!re:^(docker|podman)")) == []


# ---------------------------------------------------------------------------- fields


def test_field_filters() -> None:
    now = datetime(2025, 3, 10, 12).timestamp() * 1000
    sessions = [
        summary(
            "019a-1",
            "one",
            name="Auth work",
            cwd="/srv/api",
            labels=("todo",),
            models=("claude-opus-4",),
            modified_ms=now,
        ),
        summary("019b-2", "two", cwd="/home/u/web", labels=("done",), models=("gpt-5",), modified_ms=now - 30 * DAY_MS),
        summary("02-3", "three", cwd="/tmp/scratch", modified_ms=now - 60 * DAY_MS),
    ]
    cases = {
        "id:019": {"019a-1", "019b-2"},
        "id:019B": {"019b-2"},
        "name:auth": {"019a-1"},
        "cwd:/home": {"019b-2"},
        "!cwd:tmp": {"019a-1", "019b-2"},
        "path:scratch": {"02-3"},
        "label:to": {"019a-1"},
        "model:GPT": {"019b-2"},
        "after:2025-03-10": {"019a-1"},
        "before:2025-03-10": {"019b-2", "02-3"},
        "after:2025-01-01 before:2025-03-01": {"019b-2", "02-3"},
        "after:2025-02-01 before:2025-03-01": {"019b-2"},
        "two cwd:/home": {"019b-2"},
        "three cwd:/home": set(),
    }
    for text, expected in cases.items():
        hits = search(sessions, text)
        assert set(ids(hits)) == expected, text
    filter_only = search(sessions, "cwd:/")
    assert [hit.tier for hit in filter_only] == ["filter"] * 3
    assert ids(filter_only) == ["019a-1", "019b-2", "02-3"]  # recency


def test_cwd_and_path_only_when_asked() -> None:
    sessions = [summary("a", "hello", cwd="/home/u/seance"), summary("b", "seance notes", cwd="/home/u/other")]
    assert ids(search(sessions, "seance")) == ["b"]
    hits = search(sessions, "seance", paths=True)
    assert [(hit.summary.id, hit.tier, hit.field) for hit in hits] == [
        ("b", "prefix", "first message"),
        ("a", "path", "cwd"),
    ]


def test_empty_query_is_everything_newest_first() -> None:
    sessions = [summary("old", modified_ms=1), summary("new", modified_ms=3), summary("mid", modified_ms=2)]
    assert ids(search(sessions, "")) == ["new", "mid", "old"]
    assert ids(search(sessions, "   ")) == ["new", "mid", "old"]


# ---------------------------------------------------------------------------- full-text hits


def test_text_hits_merge_as_full_text_with_snippet() -> None:
    sessions = [summary("a", "unrelated", modified_ms=2), summary("b", "kubernetes upgrade", modified_ms=1)]
    text_hits = {
        sessions[0].path: FakeTextHit(sessions[0].path, "…we hit a kubernetes quota…", "assistant", ((10, 20),))
    }
    hits = search(sessions, "kubernetes", text_hits=text_hits)
    assert [(hit.summary.id, hit.tier, hit.field) for hit in hits] == [
        ("b", "prefix", "first message"),
        ("a", "full-text", "assistant"),
    ]
    snippet = hits[1].snippet()
    assert snippet is not None
    assert snippet.text == "…we hit a kubernetes quota…"
    assert [snippet.text[s:e] for s, e in snippet.spans] == ["kubernetes"]
    assert hits[0].snippet() is None


def test_a_word_narrowed_to_a_field_marks_a_title_only_if_the_title_is_that_field() -> None:
    """`tool:read` is found in a tool call, never in the title (the name, else the first user
    message): the title's "read" (or, fuzzily, its r-e-a-d letters) was marked as the match
    all the same.  `user:` marks a first message shown as the title, not a name."""
    plain = summary("p", "please read the spec")
    named = summary("n", "please read the spec", name="Reading list")
    found = {
        session.path: FakeTextHit(session.path, "read /src/spec.md", "tool", ((0, 4),)) for session in (plain, named)
    }
    for query in ("tool:read", "bash:read", "error:read", 'assistant:"read"', "thinking:rd"):
        hits = search([plain, named], query, text_hits=found)
        assert [hit.summary.id for hit in hits] == ["p", "n"], query
        assert [hit.title_spans() for hit in hits] == [[], []], query
        assert [hits[0].snippet().text[s:e] for s, e in hits[0].snippet().spans] == ["read"], query
    by_id = {hit.summary.id: hit for hit in search([plain, named], "user:read", text_hits=found)}
    assert [plain.title[s:e] for s, e in by_id["p"].title_spans()] == ["read"]
    assert by_id["n"].title_spans() == [], "the name is not what the user wrote"
    assert highlight("please read the spec", "tool:read") == [(7, 11)], "no fields given: every term marks"


def test_a_full_text_hit_marks_no_scattered_letters_in_its_title() -> None:
    """A session found in its text for "test" had the t-e-s-t of "in*te*re*st*ed", 279
    characters into its first message, marked as the match, and its title scrolled there
    to show it: letters the fuzzy matcher would accept are no match when the text was the
    reason.  A whole word in the title is still marked; a fuzzy hit keeps its letters."""
    title = "alright, read main.ts first, especially interested in code paths " * 2
    session = summary("a", title)
    found = {session.path: FakeTextHit(session.path, "we test it", "user", ((3, 7),))}
    (hit,) = search([session], "test", text_hits=found)
    assert hit.tier == "full-text" and hit.title_spans() == []
    (hit,) = search([session], "read test", text_hits=found)
    assert [title[s:e] for s, e in hit.title_spans()] == ["read", "read"]
    (fuzzy,) = search([summary("f", "the session picker")], "sesspick")
    assert fuzzy.tier == "fuzzy" and fuzzy.title_spans() == [(4, 8), (12, 16)]


def test_text_hits_in_cwd_ignored_in_current_scope() -> None:
    (session,) = sessions = [summary("a", "hello", cwd="/home/u/seance")]
    text_hits = {session.path: FakeTextHit(session.path, "/home/u/seance", "cwd")}
    assert search(sessions, "seance", text_hits=text_hits) == []
    assert ids(search(sessions, "seance", text_hits=text_hits, paths=True)) == ["a"]


def test_text_hits_count_for_every_term_but_not_for_a_regex() -> None:
    sessions = [summary("a", "docker notes"), summary("b", "unrelated")]
    text_hits = {session.path: FakeTextHit(session.path, "…", "assistant") for session in sessions}
    hits = search(sessions, "docker quota", text_hits=text_hits)
    assert [(hit.summary.id, hit.tier) for hit in hits] == [("a", "full-text"), ("b", "full-text")]
    assert ids(search(sessions, "docker re:quota", text_hits=text_hits)) == []  # the regex must match itself
    assert ids(search(sessions, "docker re:not", text_hits=text_hits)) == ["a"]


def test_an_index_hit_outranks_a_fuzzy_match_of_the_same_term() -> None:
    sessions = [summary("a", "fix the authentication")]
    text_hits = {sessions[0].path: FakeTextHit(sessions[0].path, "…fxauth…", "assistant")}
    assert [hit.tier for hit in search(sessions, "fxauth")] == ["fuzzy"]
    assert [(hit.tier, hit.field) for hit in search(sessions, "fxauth", text_hits=text_hits)] == [
        ("full-text", "assistant")
    ]


def _fresh(sessions: list[SessionSummary]) -> list[SessionSummary]:
    """Equal summaries that are new objects: nothing of an earlier search is reused for them."""
    return [replace(session) for session in sessions]


def _outcome(hits) -> list[tuple]:
    return [(hit.summary.id, hit.tier, hit.field, round(hit.score, 6)) for hit in hits]


def test_typing_gives_what_a_fresh_search_gives() -> None:
    """Each keystroke reuses the scan of the terms before the last: never a different answer."""
    words = ["docker", "build", "cache", "fix", "auth", "quota", "kube", "the"]
    sessions = [
        summary(
            f"s{index:02d}",
            " ".join(words[(index * step) % len(words)] for step in (1, 3, 5)),
            name="release notes" if index % 7 == 0 else None,
            text=" ".join(words[(index + step) % len(words)] for step in range(index % 5)),
            modified_ms=1_700_000_000_000 + index,
        )
        for index in range(60)
    ]
    text_hits = {session.path: FakeTextHit(session.path, "…", "assistant") for session in sessions[::9]}
    cache = SearchCache()  # kept across keystrokes, as the picker keeps it
    for typed in ("docker buil", "fix auth quota", "the cache", "kube !fix", "fix re:a.t", "relnotes dock"):
        for hits_given in (None, text_hits):
            for end in [*range(1, len(typed) + 1), *range(len(typed) - 1, 0, -1)]:
                query = typed[:end]
                reused = search(sessions, query, text_hits=hits_given, paths=True, cache=cache)
                assert _outcome(reused) == _outcome(
                    search(_fresh(sessions), query, text_hits=hits_given, paths=True)
                ), query


def test_local_snippet_around_match() -> None:
    long_text = "word " * 30 + "the Kubernetes quota was exceeded " + "tail " * 40
    (hit,) = search([summary("a", "title", text=long_text)], "kubernetes")
    snippet = hit.snippet()
    assert snippet is not None and snippet.text.startswith("…") and snippet.text.endswith("…")
    assert [snippet.text[s:e] for s, e in snippet.spans] == ["Kubernetes"]
    assert query_snippet("nothing here", parse_query("zzz")) is None


# ---------------------------------------------------------------------------- highlight


@pytest.mark.parametrize(
    ("title", "query", "expected"),
    [
        ("Fix the auth bug", "auth", ["auth"]),
        ("Fix the auth bug", "fix bug", ["Fix", "bug"]),
        ("reauth then auth", "auth", ["auth", "auth"]),  # every occurrence, not only the first
        ("Fix it, then fix it again", "fix", ["Fix", "fix"]),
        ("a b a b", '"a b"', ["a b", "a b"]),
        ("session picker", "sesspick", ["sess", "pick"]),
        ("Straße über Äpfel", "über", ["über"]),
        ("İstanbul trip to İzmir", "izmir", ["İzmir"]),  # İ lowers to 2 chars; offsets stay right
        ("日本語のテスト session", "テスト", ["テスト"]),
        ("the memory leak", '"memory leak"', ["memory leak"]),
        ("v2 v2 v3", "re:v[23]", ["v2", "v2", "v3"]),
        ("ab", 're:a "b"', ["ab"]),  # touching spans merge into one run
        ("nothing", "!nothing", []),
        ("abc", "re:(", []),  # an invalid query highlights nothing instead of raising
        ("Auth work", "name:auth", ["Auth"]),
    ],
)
def test_highlight(title, query, expected) -> None:
    spans = highlight(title, query)
    assert [title[start:end] for start, end in spans] == expected


def test_hit_title_spans_index_the_displayed_title() -> None:
    (hit,) = search([summary("a", "line one\n\tline\x1b[31m two auth")], "auth")
    title = hit.summary.title
    assert [title[s:e] for s, e in hit.title_spans()] == ["auth"]


def test_merge_spans() -> None:
    assert merge_spans([(5, 7), (0, 2), (2, 3), (6, 9), (12, 13)]) == [(0, 3), (5, 9), (12, 13)]


# ---------------------------------------------------------------------------- chunking


def test_search_iter_yields_between_chunks() -> None:
    sessions = [summary(f"s{index:05d}", f"title number {index}", modified_ms=index) for index in range(5000)]
    cache = SearchCache()
    steps = list(search_iter(sessions, "number", chunk=1000, cache=cache))
    assert len(steps) > 5  # folding yields too, the first time
    assert all(not step.done for step in steps[:-1]) and steps[-1].done
    assert [step.scanned for step in steps] == sorted(step.scanned for step in steps)
    assert steps[-1].hits is not None and len(steps[-1].hits) == 5000
    warm = list(search_iter(sessions, "number", chunk=1000, cache=cache))
    assert len(warm) == 5  # cached haystacks: one step per chunk
    assert ids(warm[-1].hits[:2]) == ["s04999", "s04998"]


def test_changed_summary_is_searched_fresh() -> None:
    cache = SearchCache()
    before = summary("a", "old title")
    assert ids(search([before], "old", cache=cache)) == ["a"]
    after = summary("a", "new title")
    assert ids(search([after], "old", cache=cache)) == []
    assert ids(search([after], "new", cache=cache)) == ["a"]


def test_id_prefix_maps_to_the_right_session_in_big_blocks() -> None:
    sessions = [summary(f"{index:04x}-{index}", f"title {index}", modified_ms=index) for index in range(3000)]
    hits = search(sessions, "0a1")
    expected = [f"{index:04x}-{index}" for index in range(3000) if f"{index:04x}".startswith("0a1")]
    assert sorted(ids(hits)) == sorted(expected)
    assert {(hit.tier, hit.field) for hit in hits} == {("prefix", "id")}


def test_newest_first_input_and_shuffled_input_rank_the_same() -> None:
    import random

    rng = random.Random(5)
    words = ["auth", "authentication", "fix auth", "docker", "a u t h", "au th", "the auth bug"]
    sessions = [
        summary(f"id{index:04d}", rng.choice(words), text=rng.choice(["", "auth in text"]), modified_ms=10_000 - index)
        for index in range(600)
    ]
    shuffled = sessions[:]
    rng.shuffle(shuffled)
    for query in ["auth", "au", "ath", "auth !docker", ""]:
        expected = [(hit.summary.id, hit.tier) for hit in search(sessions, query)]
        assert [(hit.summary.id, hit.tier) for hit in search(shuffled, query)] == expected, query
        ranks = [
            ("exact", "prefix", "substring", "full-text", "fuzzy", "path", "filter").index(tier)
            for _id, tier in expected
        ]
        assert ranks == sorted(ranks) or query == "", query


def test_fuzzy_finds_a_later_tight_occurrence() -> None:
    wide = "a" + "x" * 7 + "b" + "x" * 7 + "c"  # letters in order, but 17 characters apart
    assert ids(search([summary("w", wide)], "abc")) == []
    title = wide + " axbxc"
    (hit,) = search([summary("t", title)], "abc")
    assert hit.tier == "fuzzy"
    assert [title[s:e] for s, e in hit.title_spans()] == ["a", "b", "c"]
    assert [s for s, _e in hit.title_spans()] == [18, 20, 22]
