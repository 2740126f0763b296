"""The seams between core.search's modules and the index: one parse for the FTS query and
its highlights, one snippet maker, and the caller-owned search cache."""

from __future__ import annotations

import gc
import sqlite3
import weakref

import pytest

from seance.core.model import SessionSummary
from seance.core.search import SearchCache, TextHit, make_snippet, parse_query, search, search_iter

# ---------------------------------------------------------------------------- query -> FTS + highlight


def test_full_text_is_the_match_and_the_highlight_of_one_parse() -> None:
    full_text = parse_query('fix "memory leak" !docker re:x+ cwd:/a').full_text()
    assert full_text is not None
    assert full_text.match == '"fix"* "memory leak" NOT "docker"*'
    assert full_text.match == parse_query('fix "memory leak" !docker re:x+ cwd:/a').fts_match()
    assert full_text.highlight is not None
    text = "Fixing a Memory  leak, not docker; prefix xx"
    # fuzzy -> a prefix from a word start; phrase -> whole words; negations, regexes, filters: nothing
    assert [text[a:b] for a, b in (m.span() for m in full_text.highlight.finditer(text))] == [
        "Fixing",
        "Memory  leak",
    ]


@pytest.mark.parametrize("query", ["", "re:abc", "cwd:x", "--- !x", "!docker"])
def test_no_full_text_without_a_word_to_look_for(query: str) -> None:
    assert parse_query(query).full_text() is None


def test_a_punctuation_only_phrase_asks_nothing_and_marks_nothing() -> None:
    full_text = parse_query('auth "---"').full_text()
    assert full_text is not None and full_text.match == '"auth"*'
    assert full_text.words is not None and [term.text for term in full_text.words] == ["auth"]
    assert full_text.highlight is not None
    assert [match.group() for match in full_text.highlight.finditer("--- authored ---")] == ["authored"]


@pytest.mark.parametrize(
    "query", ["auth", '"auth flow"', "flow", "fix-it", '"fix it"', "o'brien", "naïve", "日本語", "a_b", '"x ""y"']
)
def test_the_highlight_finds_what_fts5_matched(query: str) -> None:
    """For one term, FTS5 (the index's tokenizer) matches a body exactly when the highlight
    regex built from the same parse finds something in it."""
    bodies = [
        "the auth flow broke",
        "authentication flows",
        "reauth only",
        "fix-it and fix it",
        "o'brien wrote it",
        "naïve and naive",
        "日本語 text",
        "a_b snake",
        'x "y quoted',
        "nothing here",
    ]
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", enumerate(bodies))
    full_text = parse_query(query).full_text()
    assert full_text is not None and full_text.highlight is not None
    matched = {rowid for (rowid,) in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (full_text.match,))}
    marked = {rowid for rowid, body in enumerate(bodies) if full_text.highlight.search(body)}
    assert matched == marked, (matched, marked)


# ---------------------------------------------------------------------------- the snippet maker


def _marks(word: str):
    return lambda text: [(start, start + len(word)) for start in range(len(text)) if text.startswith(word, start)]


def test_snippet_cuts_on_spaces_around_the_first_match() -> None:
    text = "lead " * 20 + "the needle here " + "tail " * 40
    first = text.index("needle")
    snippet = make_snippet(text, (first, first + 6), _marks("needle"))
    assert snippet.text.startswith("…") and snippet.text.endswith("…")
    assert not snippet.text[1:].startswith(" ") and not snippet.text[:-1].endswith(" ")
    assert [snippet.text[a:b] for a, b in snippet.spans] == ["needle"]
    assert 40 - 15 <= snippet.text.index("needle") - 1 <= 40  # about 40 characters before it
    assert len(snippet.text) - 2 <= 40 + 6 + 120


def test_snippet_without_a_match_is_the_start_and_a_short_text_is_whole() -> None:
    long = "word " * 100
    assert make_snippet(long, None, _marks("zzz")).text == ("word " * 24).rstrip() + "…"
    assert make_snippet("short text", None, _marks("text")) == ("short text", ((6, 10),))


def test_snippet_blanks_controls_one_for_one() -> None:
    snippet = make_snippet("bad\x1b[31m\nred text", (9, 12), _marks("red"))
    assert snippet.text == "bad      red text"  # the sequence's five characters and the newline
    assert [snippet.text[a:b] for a, b in snippet.spans] == ["red"]


def test_an_index_hit_reads_its_chunk_once_and_only_when_shown() -> None:
    reads: list[int] = []

    def chunk() -> str:
        reads.append(1)
        return "a quokka appears"

    full_text = parse_query("quokka").full_text()
    assert full_text is not None
    hit = TextHit("/s.jsonl", "assistant", chunk, full_text.highlight)
    assert reads == []
    assert (hit.snippet, hit.spans) == ("a quokka appears", ((2, 8),))
    assert reads == [1]


# ---------------------------------------------------------------------------- the caller-owned cache


class _Summary(SessionSummary):
    """A summary that can be watched with a weak reference."""

    __slots__ = ("__weakref__",)


def _summaries(count: int) -> list[SessionSummary]:
    return [
        _Summary(
            path=f"/s/{index}.jsonl",
            id=f"id-{index:05d}",
            cwd="/proj",
            name=None,
            parent_session=None,
            created=None,
            modified="",
            modified_ms=count - index,
            message_count=1,
            first_message=f"title number {index}",
            labels=(),
            models=(),
        )
        for index in range(count)
    ]


def _steps(summaries: list[SessionSummary], cache: SearchCache | None) -> int:
    return len(list(search_iter(summaries, "number", chunk=1000, cache=cache)))


def test_only_the_callers_cache_carries_work_between_searches() -> None:
    sessions = _summaries(3000)
    assert _steps(sessions, None) == _steps(sessions, None) > 3  # no cache: folded every time
    mine = SearchCache()
    cold = _steps(sessions, mine)
    assert _steps(sessions, mine) == 3 < cold  # warm: one step per chunk
    assert _steps(sessions, SearchCache()) == cold  # another owner's cache starts cold


def test_a_search_keeps_nothing_alive_once_its_cache_is_gone() -> None:
    sessions = _summaries(10)
    watched = weakref.ref(sessions[0])
    search(sessions, "number")  # no cache: nothing kept anywhere
    cache = SearchCache()
    assert len(search(sessions, "number", cache=cache)) == 10
    del sessions
    gc.collect()
    assert watched() is not None  # the owner's cache holds its sessions while it lives...
    del cache
    gc.collect()
    assert watched() is None  # ...and nothing else does (no module-global)
