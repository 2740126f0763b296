"""What a result row shows of a match: highlight spans, and one excerpt maker for snippets.

`highlight` marks a query's terms in a title or snippet (every occurrence; a fuzzy token
that is no substring marks the letters the matcher accepted).  `TextMarks` finds and marks
them in a session's own text, field by field, as the index matched them (the context
preview: the first message that matches, its words highlighted).  `make_snippet` cuts the
excerpt for both kinds of full-text hit: the index's (`TextHit`, around the first word
FTS5 matched in the stored chunk) and search's own (`query_snippet`, around the first
term in the message text a summary carries), so both look and cut alike.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Container, Iterable, Iterator, Sequence
from re import Pattern
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ..text import blank_controls
from .fuzzy import MIN_FUZZY, fuzzy_positions
from .query import Query, QueryError, Term, fold, fold_accents, parse_query, words_pattern

if TYPE_CHECKING:
    from .userregex import UserRegex

Span = tuple[int, int]

_BEFORE, _AFTER = 40, 120  # characters kept before the first match and after its end
_SNAP = 15  # how far a cut may move to land on a space instead of inside a word


class Snippet(NamedTuple):
    """A short excerpt around a full-text match, with highlight spans into `text`."""

    text: str
    spans: tuple[Span, ...]


def make_snippet(text: str, first: Span | None, mark: Callable[[str], Iterable[Span]]) -> Snippet:
    """A one-line excerpt of `text` around `first` (the start of `text` if None), `…` where
    cut, with the spans `mark` finds in the excerpt.  Controls become spaces one for one."""
    start = 0 if first is None else max(first[0] - _BEFORE, 0)
    if start:
        space = text.find(" ", start, start + _SNAP)
        start = space + 1 if space != -1 else start
    end = min(len(text), (first[1] if first is not None else 0) + _AFTER)
    if end < len(text):
        space = text.rfind(" ", end - _SNAP, end)
        end = space if space > start else end
    excerpt = ("…" if start else "") + blank_controls(text[start:end]) + ("…" if end < len(text) else "")
    return Snippet(excerpt, tuple(mark(excerpt)))


def query_snippet(text: str, query: Query, fields: Container[str] | None = None) -> Snippet | None:
    """An excerpt of `text` around the first match of any positive term of `query`,
    highlighted for it; None when no term occurs (a fuzzy token counts as a substring).
    `fields`: as `highlight`'s."""
    folded = fold(text)
    first: Span | None = None
    for term in query.positive:
        if not _in_fields(term, fields):
            continue
        if term.kind == "regex":
            assert term.pattern is not None
            found = term.pattern.look_first(text)
            span = found.span() if found else None
        else:
            position = folded.find(term.text)
            span = (position, position + len(term.text)) if position >= 0 else None
        if span is not None and (first is None or span[0] < first[0]):
            first = span
    if first is None:
        return None
    return make_snippet(text, first, lambda excerpt: highlight(excerpt, query, fields))


class TextHit:
    """A full-text match from the index: the session file, the field it is in, and a snippet
    with highlight spans.

    The snippet is made on first access (`chunk` reads the matched text: one small query),
    so a search over thousands of sessions only pays for the rows a UI shows.  `field` is
    user | assistant | tool | bash | name | label | cwd | id.
    """

    __slots__ = ("_chunk", "_highlight", "_snippet", "field", "path")

    def __init__(
        self,
        path: str,
        field: str,
        chunk: Callable[[], str],
        highlight: Pattern[str] | Callable[[], Pattern[str] | None] | None,
    ) -> None:
        self.path = path
        self.field = field
        self._chunk = chunk
        # `FullText.highlight`: the words FTS5 matched, or what makes it when a snippet is first asked for
        self._highlight = highlight
        self._snippet: Snippet | None = None

    def _made(self) -> Snippet:
        if self._snippet is None:
            pattern = self._highlight() if callable(self._highlight) else self._highlight
            body = self._chunk()  # (words: found in the text accents folded)
            first = pattern.search(fold_accents(body)) if pattern is not None else None
            self._snippet = make_snippet(
                body,
                first.span() if first is not None else None,
                lambda excerpt: (
                    [hit.span() for hit in pattern.finditer(fold_accents(excerpt))] if pattern is not None else ()
                ),
            )
        return self._snippet

    @property
    def snippet(self) -> str:
        """A short excerpt (plain text, `…` where cut) around the match."""
        return self._made().text

    @property
    def spans(self) -> tuple[Span, ...]:
        """(start, end) of the matched words in `snippet`."""
        return self._made().spans

    def __repr__(self) -> str:
        return f"TextHit(path={self.path!r}, field={self.field!r})"


# ---------------------------------------------------------------------------- session text


REGEX_SCAN = 4_000
"""A `re:` term is looked for in the first this many characters of each text `TextMarks`
is given (a part of a message): a user's regex runs over a whole session's messages, each
look bounded (`UserRegex.look`)."""


def regex_matches(pattern: UserRegex, text: str) -> Iterator[Any]:
    """A `re:` term's matches in the first `REGEX_SCAN` characters of `text`.  The cap is an
    end of text to `$`, `\\b` and lookaheads: a match ending there in a longer text may be
    no match in it, and is left out."""
    capped = len(text) > REGEX_SCAN
    for match in pattern.look(text, 0, REGEX_SCAN):
        if capped and match.end() == REGEX_SCAN:
            return
        yield match


class MarkTerm(NamedTuple):
    """One term `TextMarks` looks for: the field it is narrowed to (None: any), its pattern,
    and whether that is a user's regex (run over the text itself, capped) or the index's
    words (run over the text with accents folded)."""

    within: str | None
    pattern: Pattern[str] | UserRegex  # a `UserRegex` when `regex`
    regex: bool = False


class TextMarks:
    """Where a query's positive text terms match in a session's text, field by field.

    A word or phrase is matched as the index matched it (`words_pattern`: the words the list's
    full-text snippets mark), a `re:` term by its own pattern in the first `REGEX_SCAN`
    characters of a text (each look bounded: `UserRegex.look`).  A term narrowed to a field
    (`error:"Cannot find module"`, `tool:npm`) matches only text of that field (the index's
    field names, `core.fulltext`); a plain term matches text of any field.  Negated terms,
    filters and the title-only fuzzy letters mark nothing.
    """

    __slots__ = ("terms",)

    def __init__(self, terms: Sequence[MarkTerm]) -> None:
        self.terms = tuple(terms)

    @classmethod
    def of(cls, query: Query | str | None) -> TextMarks | None:
        """The marks of `query` (its text, or as parsed), or None when it has nothing to mark
        in a session's text (no query, an invalid one, only filters or negations)."""
        if isinstance(query, str):
            try:
                query = parse_query(query)
            except QueryError:
                return None
        if query is None:
            return None
        terms: list[MarkTerm] = []
        for term in query.positive:
            if term.kind == "regex" and term.pattern is not None:
                terms.append(MarkTerm(term.within, term.pattern, True))
            elif term.in_index and (pattern := words_pattern([term])) is not None:
                terms.append(MarkTerm(term.within, pattern))
        return cls(terms) if terms else None

    def single(self) -> list[TextMarks]:
        """Each term's marks alone (a message is marked by these marks when by one of them)."""
        return [TextMarks([term]) for term in self.terms]

    def _matches(self, text: str, fields: Collection[str] | None) -> Iterable[Span]:
        folded: str | None = None
        for within, pattern, regex in self.terms:
            if within is not None and fields is not None and within not in fields:
                continue
            if regex:
                found = regex_matches(cast("UserRegex", pattern), text)
            else:
                folded = fold_accents(text) if folded is None else folded
                found = cast("Pattern[str]", pattern).finditer(folded)
            yield from (match.span() for match in found if match.end() > match.start())

    def found(self, text: str, fields: Collection[str] | None) -> bool:
        """Whether any term for `fields` (None: every term, whatever its field) matches in
        `text` (a match of some length)."""
        return next(iter(self._matches(text, fields)), None) is not None

    def spans(self, text: str, fields: Collection[str]) -> list[Span]:
        """Every match in `text` of the terms for `fields`: sorted, merged (start, end) spans."""
        return merge_spans(list(self._matches(text, fields)))


# ---------------------------------------------------------------------------- highlight


def highlight(
    text: str, query: Query | str, fields: Container[str] | None = None, *, letters: bool = True
) -> list[Span]:
    """Where `query` matches in `text` (a title or snippet): sorted, merged (start, end) spans.

    Offsets index the original `text`.  Every occurrence of a word or phrase is highlighted;
    a fuzzy token that is no substring highlights the in-order letters the matcher accepted
    (unless not `letters`: the text did not match fuzzily).
    `fields`: the full-text fields `text` is (a title: "user" for a first message, none for a
    name); a term narrowed to another (`tool:read`) marks nothing there.  None: any text.
    """
    if isinstance(query, str):
        try:
            query = parse_query(query)
        except QueryError:
            return []
    folded = fold(text)
    spans: list[Span] = []
    for term in query.terms:
        if term.negated or not _in_fields(term, fields):
            continue
        if term.kind == "regex":
            assert term.pattern is not None
            spans.extend(match.span() for match in term.pattern.look(text) if match.end() > match.start())
        elif term.kind == "phrase" or (term.kind == "field" and term.field == "name"):
            spans.extend(_occurrences(folded, term.text))
        elif term.kind == "fuzzy":
            spans.extend(_fuzzy_spans(folded, term.text) if letters else _occurrences(folded, term.text))
    return merge_spans(spans)


def _in_fields(term: Term, fields: Container[str] | None) -> bool:
    """Whether `term` may match a text of `fields` (None: any text)."""
    return fields is None or term.within is None or term.within in fields


def _occurrences(folded: str, needle: str) -> list[Span]:
    spans = []
    start = folded.find(needle)
    while needle and start >= 0:
        spans.append((start, start + len(needle)))
        start = folded.find(needle, start + len(needle))
    return spans


def _fuzzy_spans(folded: str, term: str) -> list[Span]:
    if occurrences := _occurrences(folded, term):
        return occurrences
    if len(term) < MIN_FUZZY:
        return []
    positions = fuzzy_positions(folded, term)
    return [(position, position + 1) for position in positions] if positions is not None else []


def merge_spans(spans: Sequence[Span]) -> list[Span]:
    """Sort spans and merge overlapping or touching ones into runs."""
    merged: list[Span] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged
