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
