"""`TextMarks`: a query's matches in a session's own text, field by field, as the index matched
them (what the preview finds and highlights)."""

from __future__ import annotations

import pytest

from seance.core.search import TextMarks, parse_query

ERROR_TEXT = "Error: Cannot find module '../shell.js'"


def test_nothing_to_mark_is_none() -> None:
    for query in (None, "", "!wombat", "cwd:/tmp", "is:pinned", "re:(", '"--"'):
        assert TextMarks.of(query) is None, query


@pytest.mark.parametrize(
    ("query", "fields", "spans"),
    [
        ('"Cannot find module"', ("error",), [(7, 25)]),
        ('"cannot   FIND module"', ("result",), [(7, 25)]),  # a phrase's words, any case and spacing
        ('error:"Cannot find module"', ("error",), [(7, 25)]),
        ('error:"Cannot find module"', ("user",), []),  # narrowed to another field: nothing
        ("user:cannot", ("error",), []),
        ("cann", ("error",), [(7, 13)]),  # a word prefix (3+ letters), to the word's end
        ("ca", ("error",), []),  # a shorter word matches only itself
        ("module shell", ("error",), [(19, 25), (30, 35)]),
        (r"re:\.\./sh", ("error",), [(27, 32)]),
        ("annot", ("error",), []),  # from a word's start only, as FTS5 matched
    ],
)
def test_spans_follow_the_index_s_matching_and_the_field(query: str, fields: tuple[str, ...], spans: list) -> None:
    marks = TextMarks.of(parse_query(query))
    assert marks is not None
    assert marks.spans(ERROR_TEXT, fields) == spans
    assert marks.found(ERROR_TEXT, fields) == bool(spans)
    if spans:
        assert marks.found(ERROR_TEXT, None), "None: every term, whatever its field"


def test_markup_and_escape_lookalikes_are_text() -> None:
    marks = TextMarks.of('"[bold]zebra"')
    assert marks is not None
    text = "a [bold]zebra[/] and [32m zebra"
    assert [text[start:end] for start, end in marks.spans(text, ("result",))] == ["bold]zebra"]


@pytest.mark.parametrize(
    ("query", "text", "marked"),
    [
        ("config", "load_config(path)", ["config"]),  # the index's words: `_` separates them
        ('"args"', "parse_args()", ["args"]),
        ("load", "load_config", ["load"]),
        ('"load config"', "load_config", ["load_config"]),
        ("cafe", "au café, cafés", ["café", "cafés"]),  # accents folded, as `remove_diacritics`
        ("café", "au cafe", ["cafe"]),
        ("naive", "NAÏVE", ["NAÏVE"]),
        ("한국", "한국 하고", ["한국"]),  # (a Hangul syllable is no letter and its marks: kept whole)
    ],
)
def test_words_are_the_index_s_words(query: str, text: str, marked: list[str]) -> None:
    marks = TextMarks.of(query)
    assert marks is not None
    assert [text[start:end] for start, end in marks.spans(text, ("user",))] == marked


def test_the_list_s_snippet_marks_the_same_words() -> None:
    from seance.core.search.snippet import TextHit

    full_text = parse_query("cafe config").full_text()
    assert full_text is not None
    hit = TextHit("/p", "user", lambda: "we met at the café to load_config", full_text.highlight)
    assert [hit.snippet[start:end] for start, end in hit.spans] == ["café", "config"]


def test_a_regex_looks_only_in_a_text_s_first_characters() -> None:
    from seance.core.search.snippet import REGEX_SCAN

    marks = TextMarks.of("re:zebra")
    assert marks is not None
    assert marks.spans("zebra " + "x" * REGEX_SCAN, ("result",)) == [(0, 5)]
    assert marks.spans("x" * REGEX_SCAN + " zebra", ("result",)) == []
    words = TextMarks.of("zebra")
    assert words is not None and words.found("x" * REGEX_SCAN + " zebra", None), "words are looked for everywhere"
