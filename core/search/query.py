"""The query language: text -> `Query` (terms), and the same terms as the index's FTS5 query.

    fix auth          fuzzy tokens (fzf-like: the letters in order, ranked with rapidfuzz);
                      in the full text a word prefix from `MIN_PREFIX` characters, a
                      whole word below (`r*` is every word with an r: it matches every
                      session and costs the index a merge of thousands of words)
    "exact phrase"    a phrase (whitespace-normalised, case-insensitive substring);
                      an unbalanced quote makes the quotes plain characters to ignore
    re:pat  re:"a b"  a case-insensitive Python regex (an invalid one is a `QueryError`;
                      run bounded, off the GIL: `userregex`)
    !word  !"a b"     negation: excludes sessions containing it (works on any term or filter)
    id:  name:  cwd:  path:  label:  model:    field filters (id: is an id prefix, the
                      others case-insensitive substrings; label/model match any of them)
    after:YYYY-MM-DD  before:YYYY-MM-DD        last activity (`modified`), local days;
                      after: includes the day, before: excludes it
    tag:work  is:pinned  is:tagged             the user's marks (`core.marks`): a tag (whole,
                      case-insensitive), pinned, any tag; `!tag:x` excludes
    tool:npm  error:"Cannot find module"  user:  assistant:  thinking:  bash:  result:
    custom:  summary:  text:                   a word or phrase in one full-text field
                      (`core/fulltext.py`); thinking is searched only this way

Whitespace separates terms; every term must match.  A term with an empty value (`re:`,
`cwd:` while the user is still typing) is ignored.

The query is parsed once.  `Query.full_text()` gives the index both what it needs from
those terms: the FTS5 MATCH string and the regex that highlights the matched words in a
stored chunk, so nothing downstream re-parses FTS syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, NamedTuple

from ..fulltext import TEXT_FIELDS
from ..text import is_utf8
from .words import fold_accents, word_syntax

if TYPE_CHECKING:
    from .userregex import UserRegex

FIELDS = ("id", "name", "cwd", "path", "label", "model", "after", "before", "tag", "is")  # `field:` filters
MARK_FIELDS = ("tag", "is")  # filters on the user's marks, not on the summary (`Query.mark_filters`)
IS_VALUES = ("pinned", "tagged")


MIN_PREFIX = 3  # a shorter fuzzy token is a whole word in the full text, not a prefix


class QueryError(ValueError):
    """The query cannot be used; the message says why, in one line, for the user."""


@dataclass(frozen=True, slots=True)
class Term:
    """One query term.  `text` is case-folded for fuzzy/phrase terms and field values."""

    kind: str  # fuzzy | phrase | regex | field
    text: str
    negated: bool = False
    field: str | None = None
    pattern: UserRegex | None = None  # a `re:` term's pattern
    bound_ms: float | None = None  # after:/before: as epoch milliseconds
    within: str | None = None  # a fuzzy/phrase term narrowed to one full-text field (`tool:x`)

    @property
    def is_text(self) -> bool:
        return self.kind != "field"

    @property
    def in_index(self) -> bool:
        """Whether the index can search this term (a fuzzy or phrase term with a word in it)."""
        return self.kind in ("fuzzy", "phrase") and any(char.isalnum() for char in self.text)


class FieldMatch(NamedTuple):
    """One term as the index asks for it: a quoted FTS5 phrase and the fields it may be in."""

    phrase: str  # `"auth"*` or `"memory leak"`: user text, quoted
    fields: tuple[str, ...] | None  # None: every field a plain word searches (not the opt-in ones)


class FullText(NamedTuple):
    """A query as the index takes it: what to MATCH, and what to highlight in a matched chunk.

    `terms` must each match somewhere in a session (not necessarily in one chunk), and a
    session where any of `exclude` matches is left out; `match` is the same query as one
    FTS5 expression over a single chunk."""

    match: str  # an FTS5 MATCH expression in which every user term is quoted
    words: tuple[Term, ...] | None  # the positive terms the index searches (`highlight`'s)
    terms: tuple[FieldMatch, ...] = ()
    exclude: tuple[FieldMatch, ...] = ()

    @property
    def highlight(self) -> re.Pattern[str] | None:
        """The positive terms as words (`words_pattern`; None: nothing to mark): made when a
        snippet first asks, not with the query (its word syntax costs a pass over Unicode)."""
        return words_pattern(list(self.words)) if self.words else None


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query.  Build it with `parse_query`."""

    source: str
    terms: tuple[Term, ...] = ()

    @property
    def positive(self) -> tuple[Term, ...]:
        """Text terms that must match (fuzzy, phrase, regex)."""
        return tuple(term for term in self.terms if term.is_text and not term.negated)

    @property
    def negative(self) -> tuple[Term, ...]:
        return tuple(term for term in self.terms if term.is_text and term.negated)

    @property
    def filters(self) -> tuple[Term, ...]:
        """Field filters on the summary."""
        return tuple(term for term in self.terms if not term.is_text and term.field not in MARK_FIELDS)

    @property
    def mark_filters(self) -> tuple[Term, ...]:
        """`tag:` and `is:` filters: checked against the marks the caller hands to the search."""
        return tuple(term for term in self.terms if term.field in MARK_FIELDS)

    def fts_match(self) -> str | None:
        """A safe FTS5 MATCH string for the catalog's full-text index, or None if none applies.

        Every term is quoted (so no user text is FTS5 syntax); fuzzy tokens become prefix
        queries (`"auth"*`), phrases stay phrases, negations become `NOT`.  Regexes and field
        filters have no FTS form and are checked by `search` itself.
        """
        positive = [_fts_phrase(term) for term in self.positive if term.in_index]
        if not positive:
            return None
        negative = [_fts_phrase(term) for term in self.negative if term.in_index]
        return " ".join(positive) + "".join(f" NOT {part}" for part in negative)

    def full_text(self) -> FullText | None:
        """`fts_match()` and the highlight regex of the same terms, or None (nothing to ask)."""
        match = self.fts_match()
        if match is None:
            return None
        positive = [term for term in self.positive if term.in_index]
        negative = [term for term in self.negative if term.in_index]
        return FullText(match, tuple(positive), tuple(map(_field_match, positive)), tuple(map(_field_match, negative)))

    def excluding(self) -> tuple[FullText, ...]:
        """One full-text query for each negated word or phrase the index can search: a session
        one of them finds is left out of the answer, whatever else matches it (`!wip`: "wip"
        said anywhere the index reads, not only in the title).  The callers drop those
        sessions before they rank (`Catalog.text_excluded`)."""
        found = []
        for term in self.negative:
            if term.in_index and (asked := Query(self.source, (replace(term, negated=False),)).full_text()):
                found.append(asked)
        return tuple(found)


def _field_match(term: Term) -> FieldMatch:
    return FieldMatch(_fts_phrase(term), (term.within,) if term.within else None)


def fts_quote(text: str) -> str:
    """Text as one FTS5 string token (a phrase), safe whatever it contains."""
    return '"' + text.replace('"', '""') + '"'


def _fts_phrase(term: Term) -> str:
    quoted = fts_quote(term.text)
    return quoted + "*" if _is_prefix(term) else quoted


def _is_prefix(term: Term) -> bool:
    """Whether the index matches `term` as a word prefix (else as whole words)."""
    return term.kind == "fuzzy" and len(term.text) >= MIN_PREFIX


def words_pattern(terms: list[Term]) -> re.Pattern[str] | None:
    """What FTS5 matched for these terms, as a regex: each term's words in order, from a word
    start; a fuzzy term of `MIN_PREFIX`+ characters (an FTS prefix query) may end inside
    a word, a phrase or a shorter token may not.  Words are the index's (`words`: `_`
    separates them, combining marks do not) and its folded accents do not count
    (`remove_diacritics`): the pattern is meant for text folded with `fold_accents` (same
    length: its spans are the text's).  The list's snippets mark these words, and the
    preview finds and marks the same (`snippet.TextMarks`)."""
    syntax = word_syntax()  # (and the fold table made, here: in a worker, not where a snippet is drawn)
    alternatives = []
    for term in terms:
        words = [re.escape(word) for word in re.findall(f"{syntax.word}+", fold_accents(term.text))]
        if words:
            tail = syntax.tail if _is_prefix(term) else syntax.end
            words[0] = syntax.first(words[0])
            alternatives.append(f"{syntax.separator}+".join(words) + tail)
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


# ---------------------------------------------------------------------------- parsing

_FIELD_PREFIX = re.compile(f"(?i)({'|'.join(FIELDS)}):")
_TEXT_PREFIX = re.compile(f"(?i)({'|'.join((*TEXT_FIELDS, 'text'))}):")


def parse_query(text: str) -> Query:
    """Parse the query language (see the module docstring).  Raises `QueryError`."""
    if not is_utf8(text):  # (a Latin-1 terminal's byte in argv: no index can be asked for it)
        raise QueryError("it is not valid UTF-8 (a byte from a terminal that is not UTF-8?)")
    tokens = _tokenize(text)
    terms = [term for token in tokens if (term := _term(*token)) is not None]
    return Query(text, tuple(terms))


def _tokenize(text: str) -> list[tuple[str, str, bool]]:
    """Split into (head, value, quoted) tokens: `!name:"a b"` -> ("!name:", "a b", True).

    `head` is what comes before the first quote (operators live there), `value` the rest.
    An unbalanced quote drops every quote character and splits on whitespace (like pi).
    """
    if text.count('"') % 2:
        return [(part, "", False) for part in text.replace('"', " ").split()]
    tokens: list[tuple[str, str, bool]] = []
    head: list[str] = []
    value: list[str] = []
    quoted = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            end = text.index('"', index + 1)
            value.append(text[index + 1 : end])
            quoted = True
            index = end
        elif char.isspace() and (head or value or quoted):
            tokens.append(("".join(head), "".join(value), quoted))
            head, value, quoted = [], [], False
        elif not char.isspace():
            (value if quoted else head).append(char)
        index += 1
    if head or value or quoted:
        tokens.append(("".join(head), "".join(value), quoted))
    return tokens


def _term(head: str, value: str, quoted: bool) -> Term | None:
    """Interpret one token; operators are recognised only outside quotes."""
    if head == "!" and not quoted:
        return None  # a negation still being typed
    negated = head.startswith("!")
    if negated:
        head = head[1:]
    if head[:3].lower() == "re:":
        return _regex_term(head[3:] + value, negated)
    match = _FIELD_PREFIX.match(head)
    if match:
        return _field_term(match.group(1).lower(), (head[match.end() :] + value).strip(), negated)
    within = None
    if text_field := _TEXT_PREFIX.match(head):
        head, within = head[text_field.end() :], text_field.group(1).lower()
    text = _normalise(head + value)
    if not text:
        return None
    return Term("phrase" if quoted else "fuzzy", fold(text), negated, within=None if within == "text" else within)


def _regex_term(pattern: str, negated: bool) -> Term | None:
    if not pattern:
        return None
    from .userregex import UserRegex  # (here: `regex` is imported by a query that has a `re:` term)

    return Term("regex", pattern, negated, pattern=UserRegex(pattern))


def _field_term(name: str, value: str, negated: bool) -> Term | None:
    if not value:
        return None
    if name in ("after", "before"):
        try:
            day = datetime.strptime(value, "%Y-%m-%d")
        except ValueError:
            raise QueryError(f"{name}: expects a date as YYYY-MM-DD, not {value!r}") from None
        return Term("field", value, negated, field=name, bound_ms=day.timestamp() * 1000)
    if name == "is" and value.lower() not in IS_VALUES:
        raise QueryError(f"is: expects {' or '.join(IS_VALUES)}, not {value!r}")
    return Term("field", fold(_normalise(value)), negated, field=name)


_WHITESPACE = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def fold(text: str) -> str:
    """Lower-case without changing the length, so offsets in the result are offsets in `text`."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(char.lower()[:1] or char for char in text)  # e.g. "İ" lowers to two chars
