"""Session search: a small query language, tiered ranking, highlight spans and snippets.

    query.py     the query language -> `Query`; the same terms as the index's FTS5 query
    words.py     words as the index's tokenizer splits and folds them (SQLite's own fold table)
    haystack.py  what of a session is searched, folded once; the caller-owned `SearchCache`
    fuzzy.py     the fuzzy token rule (letters in order, close together)
    rank.py      matching and tiers: `search_iter` / `search` -> ranked `Hit`s (`Matched`:
                 how many, before they are ranked); `first_hits`:
                 the title tiers alone, the first of them (what a picker shows first);
                 `prescan`: the term scans a search memoises, ahead of the index's hits;
                 `fuzzy_ahead`: the fuzzy tier a next word's search needs, once the keys stop
    snippet.py   highlight spans, the one snippet maker, the index's `TextHit`, and
                 `TextMarks`: the same matches found in a session's own text (the preview)

Pure functions over `SessionSummary`s; the index (`core.index`) stores and MATCHes the
text, and takes its quoting, highlighting and snippets from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .query import FullText, Query, QueryError, parse_query

if TYPE_CHECKING:
    from .haystack import SearchCache
    from .rank import TIERS, Hit, Matched, SearchProgress, first_hits, fuzzy_ahead, prescan, search, search_iter
    from .snippet import Snippet, TextHit, TextMarks, highlight, make_snippet, merge_spans, query_snippet

# The rest is imported when it is first asked for: `parse_query` is all a query answered
# from a kept answer needs (the haystack, ranking, fuzzy and snippet modules are ~5 ms).
_LAZY = {
    "SearchCache": "haystack",
    **dict.fromkeys(
        ("TIERS", "Hit", "Matched", "SearchProgress", "first_hits", "fuzzy_ahead", "prescan", "search", "search_iter"),
        "rank",
    ),
    **dict.fromkeys(
        ("Snippet", "TextHit", "TextMarks", "highlight", "make_snippet", "merge_spans", "query_snippet"), "snippet"
    ),
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "TIERS",
    "FullText",
    "Hit",
    "Matched",
    "Query",
    "QueryError",
    "SearchCache",
    "SearchProgress",
    "Snippet",
    "TextHit",
    "TextMarks",
    "first_hits",
    "fuzzy_ahead",
    "highlight",
    "make_snippet",
    "merge_spans",
    "parse_query",
    "prescan",
    "query_snippet",
    "search",
    "search_iter",
]
