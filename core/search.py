"""Session search: a small query language, tiered ranking and highlight spans — pure functions.

Query language (whitespace separates terms; every term must match):

    fix auth          fuzzy tokens (fzf-like: the letters in order, ranked with rapidfuzz)
    "exact phrase"    a phrase (whitespace-normalised, case-insensitive substring);
                      an unbalanced quote makes the quotes plain characters to ignore
    re:pat  re:"a b"  a case-insensitive Python regex (an invalid one is a `QueryError`)
    !word  !"a b"     negation: excludes sessions containing it (works on any term or filter)
    id:  name:  cwd:  path:  label:  model:    field filters (id: is an id prefix, the
                      others case-insensitive substrings; label/model match any of them)
    after:YYYY-MM-DD  before:YYYY-MM-DD        last activity (`modified`), local days;
                      after: includes the day, before: excludes it

A term with an empty value (`re:`, `cwd:` while the user is still typing) is ignored.

Searched for text terms: the id (prefix only: a short hex run inside a uuid is noise), the
name, the first message, the message text seance holds for the session (the 4 KB prefix, or
what the caller passes), and full-text hits from the index (`text_hits`).  cwd and path are
matched by text terms only when the caller asks for it (`paths=True`, meant for the
all-projects scope): in the current-project scope every session has the same cwd, so a token
taken from the folder name would match every row (pi does this; tau PR #420 removed it).
Even then a cwd/path-only match ranks last.  `cwd:` and `path:` always work.

Fuzzy tokens (3+ letters) match only the title a row shows (the name, else the first
message), so every fuzzy hit can be highlighted; the letters must lie within
max(3n, n+8) characters of each other (a spread-out subsequence is a coincidence in long
text — pi's weakness), and rapidfuzz's `partial_ratio` of the matched stretch ranks them.
Shorter tokens match as substrings only.

Ranking tiers: exact (the whole query equals the id, name or first message) > prefix >
substring (every term in the id/name/first message) > full text (some term only in the
message text or the index) > fuzzy > path; ties by recency (`modified_ms`, newest first),
fuzzy hits by score first.  A session's tier is its weakest term's.  Highlight spans are
computed on demand (`highlight`, `Hit.title_spans`), so a UI pays for visible rows only.

Negation and field filters see the summary (and its prefix text); in the index, `fts_match`
carries negations as `NOT`, so full-text hits respect them too.

Scoring is chunked: `search_iter` yields after every `chunk` sessions so a UI worker can
check for cancellation and let the event loop breathe; `search` runs it to completion.
Per chunk, what the terms before the last matched is memoised: typing the second word of
a query scans that word only, over the sessions the first one left.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from itertools import chain
from typing import Any, NamedTuple, Protocol

from rapidfuzz import fuzz

from .model import SessionSummary
from .text import CONTROL_CHARS

Span = tuple[int, int]

TIERS = ("exact", "prefix", "substring", "full-text", "fuzzy", "path")
EXACT, PREFIX, SUBSTRING, FULL_TEXT, FUZZY, PATH = range(len(TIERS))
FILTER_ONLY = "filter"  # the tier name of every hit when a query has no text terms

FIELDS = ("id", "name", "cwd", "path", "label", "model", "after", "before")  # `field:` filters

_TITLE_LIMIT = 300  # fuzzy and title tiers look at this much of the name / first message
_TEXT_LIMIT = 64 * 1024  # message text held per session for substring / regex terms
_MIN_FUZZY = 3  # shorter tokens only match as substrings (a 2-letter subsequence is noise)
_SNIPPET_BEFORE, _SNIPPET_AFTER = 40, 80


class QueryError(ValueError):
    """The query cannot be used; the message says why, in one line, for the user."""


class TextHit(Protocol):
    """A full-text hit from the catalog's index (`Catalog.search_text`)."""

    path: str
    snippet: str
    field: str


@dataclass(frozen=True, slots=True)
class Term:
    """One query term.  `text` is case-folded for fuzzy/phrase terms and field values."""

    kind: str  # fuzzy | phrase | regex | field
    text: str
    negated: bool = False
    field: str | None = None
    pattern: re.Pattern[str] | None = None
    bound_ms: float | None = None  # after:/before: as epoch milliseconds

    @property
    def is_text(self) -> bool:
        return self.kind != "field"


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
        return tuple(term for term in self.terms if not term.is_text)

    @property
    def is_empty(self) -> bool:
        return not self.terms

    def fts_match(self) -> str | None:
        """A safe FTS5 MATCH string for the catalog's full-text index, or None if none applies.

        Every term is quoted (so no user text is FTS5 syntax); fuzzy tokens become prefix
        queries (`"auth"*`), phrases stay phrases, negations become `NOT`.  Regexes and field
        filters have no FTS form and are checked by `search` itself.
        """
        positive = [_fts_phrase(term) for term in self.positive if term.kind in ("fuzzy", "phrase")]
        positive = [part for part in positive if part]
        if not positive:
            return None
        negative = [_fts_phrase(term) for term in self.negative if term.kind in ("fuzzy", "phrase")]
        return " ".join(positive) + "".join(f" NOT {part}" for part in negative if part)


def _fts_phrase(term: Term) -> str:
    if not any(char.isalnum() for char in term.text):
        return ""  # punctuation only: FTS5 would see an empty phrase
    quoted = '"' + term.text.replace('"', '""') + '"'
    return quoted + "*" if term.kind == "fuzzy" else quoted


# ---------------------------------------------------------------------------- parsing

_FIELD_PREFIX = re.compile(f"(?i)({'|'.join(FIELDS)}):")


def parse_query(text: str) -> Query:
    """Parse the query language (see the module docstring).  Raises `QueryError`."""
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
    text = _normalise(head + value)
    if not text:
        return None
    return Term("phrase" if quoted else "fuzzy", fold(text), negated)


def _regex_term(pattern: str, negated: bool) -> Term | None:
    if not pattern:
        return None
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        where = f" at {error.pos}" if error.pos is not None else ""
        raise QueryError(f"re: {error.msg}{where}") from None
    return Term("regex", pattern, negated, pattern=compiled)


def _field_term(name: str, value: str, negated: bool) -> Term | None:
    if not value:
        return None
    if name in ("after", "before"):
        try:
            day = datetime.strptime(value, "%Y-%m-%d")
        except ValueError:
            raise QueryError(f"{name}: expects a date as YYYY-MM-DD, not {value!r}") from None
        return Term("field", value, negated, field=name, bound_ms=day.timestamp() * 1000)
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


# ---------------------------------------------------------------------------- haystacks


@dataclass(slots=True)
class _Haystack:
    """What search needs of one summary, folded once and reused while the summary lives."""

    summary: SessionSummary
    ident: str
    name: str
    first: str
    text: str  # message text (folded, whitespace-normalised)
    cwd: str
    path: str
    labels: tuple[str, ...]
    models: tuple[str, ...]


def _one_line(text: str, limit: int | None = None) -> str:
    """`display_text` without its per-space regex: the hot path when folding 10k sessions."""
    if limit is not None:
        text = text[: limit * 4]
    if CONTROL_CHARS.search(text):
        text = CONTROL_CHARS.sub(" ", text)
    text = " ".join(text.split())
    return text[:limit] if limit is not None else text


def session_text(summary: SessionSummary) -> str:
    """The message text a summary carries (the 4 KB prefix's), on one clean line.

    Exact summaries carry none: text beyond the prefix is the index's business, passed to
    `search` as `text_hits`.
    """
    text = getattr(summary, "prefix_text", "") or (summary.extra or {}).get("text") or ""
    return _one_line(text[:_TEXT_LIMIT]) if isinstance(text, str) else ""


def _make_haystack(summary: SessionSummary) -> _Haystack:
    return _Haystack(
        summary=summary,
        ident=_one_line(summary.id.lower()),
        name=fold(_one_line(summary.name or "", _TITLE_LIMIT)),
        first=fold(_one_line(summary.first_message, _TITLE_LIMIT)),
        text=fold(session_text(summary)),
        cwd=fold(summary.cwd),
        path=fold(summary.path),
        labels=tuple(fold(label) for label in summary.labels),
        models=tuple(fold(model) for model in summary.models),
    )


def _line_starts(lines: list[str], offset: int = 0) -> list[int]:
    """Offsets where each line starts once the lines are joined with one separator."""
    starts = []
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts


@dataclass(slots=True)
class _Block:
    """One chunk of haystacks as parallel lists, for tight comprehensions instead of method calls.

    `pairs[i]` is name and first message joined by "\n" (one substring test for both);
    `shown[i]` what the row shows; `ids` is "\n" + one id per line, for a C-speed prefix scan.
    """

    hays: list[_Haystack]
    summaries: list[SessionSummary]
    recency: list[float]  # -modified_ms: the last sort key
    names: list[str]
    firsts: list[str]
    pairs: list[str]
    shown: list[str]
    idents: list[str]
    texts: list[str]
    cwds: list[str]
    paths: list[str]
    ids: str
    id_starts: list[int]
    exact: dict[str, list[tuple[int, str]]]  # an id, name or first message -> where it is all of it
    ordered: bool  # newest first already (the catalog's order): no sort needed within a tier
    # (scope, terms) -> the sessions every one of those terms matches (index hits aside): the
    # next keystroke usually repeats the terms before the last, and re-scans only the last
    memo: dict[tuple, dict[int, _Match]] = dataclasses.field(default_factory=dict)
    _positions: dict[str, int] | None = None  # path -> index, built when index hits first come

    def position_of(self, path: str) -> int | None:
        if self._positions is None:
            self._positions = {summary.path: index for index, summary in enumerate(self.summaries)}
        return self._positions.get(path)

    @classmethod
    def of(cls, hays: list[_Haystack]) -> _Block:
        idents = [hay.ident for hay in hays]
        exact: dict[str, list[tuple[int, str]]] = {}
        for index, hay in enumerate(hays):
            for value, field in ((hay.ident, "id"), (hay.name, "name"), (hay.first, "first message")):
                if value:
                    exact.setdefault(value, []).append((index, field))
        recency = [-hay.summary.modified_ms for hay in hays]
        return cls(
            hays=hays,
            summaries=[hay.summary for hay in hays],
            recency=recency,
            names=[hay.name for hay in hays],
            firsts=[hay.first for hay in hays],
            pairs=[f"{hay.name}\n{hay.first}" for hay in hays],
            shown=[hay.name or hay.first for hay in hays],
            idents=idents,
            texts=[hay.text for hay in hays],
            cwds=[hay.cwd for hay in hays],
            paths=[hay.path for hay in hays],
            ids="\n" + "\n".join(idents),
            id_starts=_line_starts(idents),
            exact=exact,
            ordered=all(map(operator.le, recency, recency[1:])),
        )


class _Cache:
    """Haystacks and blocks keyed by object identity (summaries are immutable).

    A changed session is a new summary object and is folded again; what is no longer
    searched is dropped when the cache outgrows the searched list.
    """

    def __init__(self) -> None:
        self._hays: dict[int, _Haystack] = {}
        self._blocks: dict[tuple[int, ...], _Block] = {}

    def haystack(self, summary: SessionSummary) -> _Haystack:
        found = self._hays.get(id(summary))
        if found is None or found.summary is not summary:  # the haystack keeps its summary alive
            found = self._hays[id(summary)] = _make_haystack(summary)
        return found

    def cached_block(self, summaries: Sequence[SessionSummary]) -> _Block | None:
        return self._blocks.get(tuple(map(id, summaries)))

    def block(self, summaries: Sequence[SessionSummary]) -> _Block:
        key = tuple(map(id, summaries))
        found = self._blocks.get(key)
        if found is None:
            found = self._blocks[key] = _Block.of([self.haystack(summary) for summary in summaries])
        return found

    def prune(self, keep: Sequence[SessionSummary], blocks: int) -> None:
        if len(self._hays) > 2 * len(keep) + 1024:
            alive = {id(summary) for summary in keep}
            self._hays = {key: value for key, value in self._hays.items() if key in alive}
        if len(self._blocks) > 2 * blocks + 8:
            self._blocks = {}


_CACHE = _Cache()


# ---------------------------------------------------------------------------- hits


class Snippet(NamedTuple):
    """A short excerpt around a full-text match, with highlight spans into `text`."""

    text: str
    spans: tuple[Span, ...]


class Hit(NamedTuple):
    """One matching session: how well (tier, score) and where (field) it matched.

    A named tuple, because a search may build ten thousand of them per keystroke.
    """

    summary: SessionSummary
    tier: str  # one of TIERS, or "filter" when the query has no text terms
    field: str  # id | name | first message | text | cwd | path | filter (or the index's field)
    score: float  # 0-100: the mean rapidfuzz score for fuzzy hits, 100 otherwise
    query: Query
    text_hit: Any = None  # the index's TextHit when the match came from there

    def title_spans(self) -> list[Span]:
        """Highlight spans in `summary.title` (merged, sorted); computed on demand."""
        return highlight(self.summary.title, self.query)

    def snippet(self) -> Snippet | None:
        """For a full-text hit: an excerpt of the matching text with its highlight spans."""
        if self.tier != TIERS[FULL_TEXT]:
            return None
        snippet = getattr(self.text_hit, "snippet", None)
        if isinstance(snippet, str) and snippet:
            spans = tuple(getattr(self.text_hit, "spans", ()) or ())
            text = _one_line(snippet)
            if spans and text == snippet:  # the index marked the matched words itself
                return Snippet(text, spans)
        else:
            text = make_snippet(session_text(self.summary), self.query)
        if not text:
            return None
        return Snippet(text, tuple(highlight(text, self.query)))


class SearchProgress(NamedTuple):
    """One step of `search_iter`: how far it got; `hits` is set on the last step only."""

    scanned: int
    total: int
    hits: list[Hit] | None = None

    @property
    def done(self) -> bool:
        return self.hits is not None


# ---------------------------------------------------------------------------- matching


# A term's match in one session: (tier, field, score).  Plain tuples: thousands per keystroke.
_Match = tuple[int, str, float]


_PREFIX_NAME = (PREFIX, "name", 100.0)
_PREFIX_FIRST = (PREFIX, "first message", 100.0)
_PREFIX_ID = (PREFIX, "id", 100.0)
_SUBSTRING_NAME = (SUBSTRING, "name", 100.0)
_SUBSTRING_FIRST = (SUBSTRING, "first message", 100.0)
_FULL_TEXT = (FULL_TEXT, "text", 100.0)
_PATH_CWD = (PATH, "cwd", 100.0)
_PATH_PATH = (PATH, "path", 100.0)


def _max_span(length: int) -> int:
    """How far apart a fuzzy token's letters may be: further is a coincidence, not a match."""
    return max(3 * length, length + 8)


@lru_cache(maxsize=256)
def fuzzy_pattern(term: str, groups: bool = False) -> re.Pattern[str]:
    """The letters of `term` in order, each within a bounded gap of the previous one.

    Gaps are possessive (`[^h]{0,G}+h` takes the first "h" within G characters), so a
    match is found in linear time; with `groups`, each letter is a group (for highlights).
    """
    gap = _max_span(len(term)) - len(term)
    parts = []
    for position, char in enumerate(term):
        letter = f"({re.escape(char)})" if groups else re.escape(char)
        parts.append(letter if position == 0 else f"[^{re.escape(char)}]{{0,{gap}}}+{letter}")
    return re.compile("".join(parts))


def _fuzzy_match(pattern: re.Pattern[str], hay: str, length: int) -> re.Match[str] | None:
    """The first in-order occurrence spanning at most `_max_span(length)` characters.

    From each start, the possessive gaps take the earliest next letter, so that start's
    span is as small as it can be; later starts are tried only while spans are too wide.
    """
    limit = _max_span(length)
    match = pattern.search(hay)
    while match is not None and match.end() - match.start() > limit:
        match = pattern.search(hay, match.start() + 1)
    return match


def fuzzy_positions(hay: str, term: str) -> list[int] | None:
    """Where the letters of `term` match in `hay` (both folded), or None if they do not."""
    match = _fuzzy_match(fuzzy_pattern(term, True), hay, len(term))
    return None if match is None else [match.start(group) for group in range(1, len(term) + 1)]


class _Matcher:
    """Matches blocks of haystacks against one query, term by term (every term must match)."""

    def __init__(self, query: Query, text_hits: Mapping[str, Any] | None, paths: bool) -> None:
        self.query = query
        self.text_hits = text_hits or {}
        self.paths = paths
        self.positive = query.positive
        self.negative = query.negative
        self.filters = query.filters
        self.whole = " ".join(term.text for term in self.positive if term.kind in ("fuzzy", "phrase"))
        self.scope = (paths, tuple(map(_term_key, self.filters + self.negative)))  # what `alive` depends on
        self.keys = tuple(map(_term_key, self.positive))
        self.fuzzy_patterns = {
            term.text: fuzzy_pattern(term.text)
            for term in self.positive
            if term.kind == "fuzzy" and len(term.text) >= _MIN_FUZZY
        }

    # -- filters and negation

    def alive(self, hays: list[_Haystack]) -> list[int]:
        """Indices of the sessions that pass the field filters and negations."""
        indices = range(len(hays))
        if not self.filters and not self.negative:
            return list(indices)
        return [
            index
            for index in indices
            if all(_filter_matches(term, hays[index]) != term.negated for term in self.filters)
            and not any(self._contains(term, hays[index]) for term in self.negative)
        ]

    def _contains(self, term: Term, hay: _Haystack) -> bool:
        values = [hay.name, hay.first, hay.text] + ([hay.cwd, hay.path] if self.paths else [])
        if term.kind == "regex":
            assert term.pattern is not None
            return any(term.pattern.search(value) for value in values)
        return hay.ident.startswith(term.text) or any(term.text in value for value in values)

    # -- positive terms

    def scan(self, block: _Block, alive: list[int]) -> dict[int, _Match]:
        """The sessions of `block` (among `alive`) where every positive term matches."""
        matches = self._chain(block, alive)
        if self.text_hits:
            self._with_text_hits(block, alive, matches)
        return matches

    def _chain(self, block: _Block, alive: list[int]) -> dict[int, _Match]:
        """Every term matched on its own (index hits aside), term after term over what the
        previous ones left; each prefix of the chain is memoised on the block.  A fresh dict."""
        memo, scope, keys = block.memo, self.scope, self.keys
        depth, matches = 0, None
        for known in range(len(keys), 0, -1):  # the longest chain already scanned
            matches = memo.get((scope, keys[:known]))
            if matches is not None:
                depth = known
                break
        for position in range(depth, len(keys)):
            candidates = alive if matches is None else list(matches)
            found = self._scan_term(self.positive[position], block, candidates)
            matches = found if matches is None else _both(matches, found)
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[(scope, keys[: position + 1])] = matches
            if not matches:
                break
        return dict(matches) if matches else {}

    def _with_text_hits(self, block: _Block, alive: list[int], matches: dict[int, _Match]) -> None:
        """Sessions the index found the query in: a fuzzy, path or missing match of a fuzzy or
        phrase term counts as a full-text hit there (a regex term must still match itself)."""
        rows: dict[int, str] = {}
        for path, hit in self.text_hits.items():
            index = block.position_of(path)
            field_name = str(getattr(hit, "field", "") or "text")
            if index is not None and (self.paths or field_name != "cwd"):  # the cwd only counts where paths do
                rows[index] = field_name
        if not rows:
            return
        if self.filters or self.negative:
            allowed = set(alive)
            rows = {index: name for index, name in rows.items() if index in allowed}
        found = [self._scan_term(term, block, list(rows)) for term in self.positive]
        for index, field_name in rows.items():
            combined: _Match | None = None
            for term, term_found in zip(self.positive, found, strict=True):
                match = term_found.get(index)
                if term.kind != "regex" and (match is None or match[0] > FULL_TEXT):
                    match = (FULL_TEXT, field_name, 100.0)
                if match is None:
                    break
                combined = match if combined is None else _both_one(combined, match)
            else:
                matches[index] = combined  # type: ignore[assignment]

    def _scan_term(self, term: Term, block: _Block, candidates: list[int]) -> dict[int, _Match]:
        if term.kind == "regex":
            return self._scan_regex(term, block, candidates)
        return self._scan_text(term, block, candidates)

    def _scan_text(self, term: Term, block: _Block, candidates: list[int]) -> dict[int, _Match]:
        text = term.text
        names, firsts, pairs = block.names, block.firsts, block.pairs
        in_title = [index for index in candidates if text in pairs[index]]  # name / first message
        found: dict[int, _Match] = dict.fromkeys(in_title, _SUBSTRING_FIRST)
        if in_title:  # later updates win: name prefix > first-message prefix > name substring
            found.update(dict.fromkeys([index for index in in_title if text in names[index]], _SUBSTRING_NAME))
            found.update(dict.fromkeys([index for index in in_title if firsts[index].startswith(text)], _PREFIX_FIRST))
            found.update(dict.fromkeys([index for index in in_title if names[index].startswith(text)], _PREFIX_NAME))
        position = block.ids.find("\n" + text)
        if position >= 0:  # id prefix (a hex run inside an id is noise, not a match)
            wanted = set(candidates)
            while position >= 0:
                index = bisect_right(block.id_starts, position) - 1
                if index in wanted and found.get(index, _PREFIX_ID)[0] >= PREFIX:
                    found[index] = _PREFIX_ID
                position = block.ids.find("\n" + text, position + 1)
        rest = [index for index in candidates if index not in found] if found else candidates
        texts = block.texts
        found.update(dict.fromkeys([index for index in rest if text in texts[index]], _FULL_TEXT))
        pattern = self.fuzzy_patterns.get(text) if term.kind == "fuzzy" else None
        if pattern is not None:  # fuzzy: only what the row shows, so every hit can be highlighted
            shown, length, ratio = block.shown, len(text), fuzz.partial_ratio
            first, limit = pattern.search, _max_span(length)
            # the first occurrence is usually tight enough; `_fuzzy_match` looks further when not
            fuzzy = [
                (index, match)
                for index in rest
                if index not in found
                and (match := first(shown[index]))
                and (match.end() - match.start() <= limit or (match := _fuzzy_match(pattern, shown[index], length)))
            ]
            for index, match in fuzzy:
                # scored where it matched (what the row highlights), not against the whole title
                window = shown[index][max(match.start() - length, 0) : match.end() + length]
                found[index] = (FUZZY, "name" if names[index] else "first message", ratio(text, window))
        if self.paths:
            cwds, paths = block.cwds, block.paths
            left = [index for index in rest if index not in found]
            found.update(dict.fromkeys([index for index in left if text in paths[index]], _PATH_PATH))
            found.update(dict.fromkeys([index for index in left if text in cwds[index]], _PATH_CWD))  # cwd wins
        return found

    def _scan_regex(self, term: Term, block: _Block, candidates: list[int]) -> dict[int, _Match]:
        search_in = term.pattern.search  # type: ignore[union-attr]
        found: dict[int, _Match] = {}
        for index in candidates:
            hay = block.hays[index]
            if search_in(hay.ident):
                found[index] = (SUBSTRING, "id", 100.0)
            elif search_in(hay.name):
                found[index] = (SUBSTRING, "name", 100.0)
            elif search_in(hay.first):
                found[index] = (SUBSTRING, "first message", 100.0)
            elif search_in(hay.text):
                found[index] = (FULL_TEXT, "text", 100.0)
            elif self.paths and (search_in(hay.cwd) or search_in(hay.path)):
                found[index] = (PATH, "cwd" if search_in(hay.cwd) else "path", 100.0)
        return found

    # -- hits

    def collect(self, block: _Block, buckets: list[list[Hit]]) -> None:
        """Append the hits of one block to `buckets` (one list per tier), in block order."""
        alive = self.alive(block.hays)
        summaries, query, count = block.summaries, self.query, len(self.positive)
        new_hit = _new_hit
        if not count:
            buckets[0].extend(
                new_hit(Hit, (summaries[index], FILTER_ONLY, "filter", 100.0, query, None)) for index in alive
            )
            return
        matches = self.scan(block, alive)
        whole = self.whole
        if whole and matches:
            self._upgrade_whole(block, matches, several=count > 1)
        text_hits, add, tiers = self.text_hits, [bucket.append for bucket in buckets], TIERS
        for index in sorted(matches):  # block order (sorting ints, not the items, is the cheap sort)
            tier, name, score = matches[index]
            text_hit = text_hits.get(summaries[index].path) if text_hits and tier == FULL_TEXT else None
            add[tier](new_hit(Hit, (summaries[index], tiers[tier], name, score / count, query, text_hit)))

    def _upgrade_whole(self, block: _Block, matches: dict[int, _Match], several: bool) -> None:
        """Exact: the whole query is the id, name or first message.  Prefix: it starts one
        (for a single term the scan found that already)."""
        whole = self.whole
        for index, field in block.exact.get(whole, ()):
            if index in matches:
                matches[index] = (EXACT, field, matches[index][2])
        if several:
            idents, names, firsts = block.idents, block.names, block.firsts
            for index, (tier, _name, score) in matches.items():
                if tier == SUBSTRING:
                    for value, field in (
                        (idents[index], "id"),
                        (names[index], "name"),
                        (firsts[index], "first message"),
                    ):
                        if value.startswith(whole):
                            matches[index] = (PREFIX, field, score)
                            break


_MEMO_LIMIT = 16  # memoised term chains per block (each at most a dict of `chunk` entries)


def _term_key(term: Term) -> tuple:
    return term.kind, term.text, term.negated, term.field, term.bound_ms


def _both_one(old: _Match, new: _Match) -> _Match:
    """Two terms' matches in one session: the weaker tier and its field, the scores summed."""
    return (old[0], old[1], old[2] + new[2]) if old[0] >= new[0] else (new[0], new[1], old[2] + new[2])


def _both(matches: dict[int, _Match], found: dict[int, _Match]) -> dict[int, _Match]:
    """AND: the sessions in both, each with `_both_one` of its two matches (inlined: thousands)."""
    return {
        index: (old[0], old[1], old[2] + new[2]) if old[0] >= new[0] else (new[0], new[1], old[2] + new[2])
        for index, old in matches.items()
        if (new := found.get(index)) is not None
    }


def _filter_matches(term: Term, hay: _Haystack) -> bool:
    name, value = term.field, term.text
    summary = hay.summary
    if name == "id":
        return hay.ident.startswith(value)
    if name == "name":
        return bool(summary.name) and value in hay.name
    if name == "cwd":
        return value in hay.cwd
    if name == "path":
        return value in hay.path
    if name == "label":
        return any(value in label for label in hay.labels)
    if name == "model":
        return any(value in model for model in hay.models)
    assert term.bound_ms is not None
    if name == "after":
        return summary.modified_ms >= term.bound_ms
    return summary.modified_ms < term.bound_ms  # before


_new_hit = tuple.__new__  # builds a Hit without NamedTuple's Python-level __new__


def _newest_first(hit: Hit) -> float:
    return -hit.summary.modified_ms


def _fuzzy_order(hit: Hit) -> tuple[float, float]:
    return -round(hit.score), -hit.summary.modified_ms


# ---------------------------------------------------------------------------- search


_FOLD_STEP = 256  # sessions folded between yields when the cache is cold


def search_iter(
    summaries: Sequence[SessionSummary],
    query: Query | str,
    *,
    text_hits: Mapping[str, Any] | None = None,
    paths: bool = False,
    chunk: int = 2048,
) -> Iterator[SearchProgress]:
    """Rank `summaries` for `query`, yielding a `SearchProgress` between chunks of work.

    The last step carries the ranked hits.  `text_hits` maps a session path to the index's
    `TextHit` for `query.fts_match()`.  An empty query returns every session, newest first.
    Folding sessions seen for the first time yields every 256 sessions, so no step is long.
    """
    parsed = parse_query(query) if isinstance(query, str) else query
    matcher = _Matcher(parsed, text_hits, paths)
    total = len(summaries)
    chunk = max(chunk, 1)
    buckets: list[list[Hit]] = [[] for _ in TIERS]
    ordered, last = True, -math.inf
    for start in range(0, total, chunk):
        part = summaries[start : start + chunk]
        block = _CACHE.cached_block(part)
        if block is None:
            for offset in range(0, len(part), _FOLD_STEP):
                for summary in part[offset : offset + _FOLD_STEP]:
                    _CACHE.haystack(summary)
                yield SearchProgress(start, total)  # still folding this chunk
            block = _CACHE.block(part)
            yield SearchProgress(start, total)
        ordered = ordered and block.ordered and last <= block.recency[0]
        last = block.recency[-1]
        matcher.collect(block, buckets)
        if start + chunk < total:
            yield SearchProgress(start + chunk, total)
    for tier, bucket in enumerate(buckets):
        if tier == FUZZY:
            bucket.sort(key=_fuzzy_order)
        elif not ordered:
            bucket.sort(key=_newest_first)  # stable: equal times keep the input order
    _CACHE.prune(summaries, -(-total // chunk))
    yield SearchProgress(total, total, list(chain.from_iterable(buckets)))


def search(
    summaries: Sequence[SessionSummary],
    query: Query | str,
    *,
    text_hits: Mapping[str, Any] | None = None,
    paths: bool = False,
) -> list[Hit]:
    """`search_iter` run to completion: the ranked hits."""
    for step in search_iter(summaries, query, text_hits=text_hits, paths=paths):
        if step.hits is not None:
            return step.hits
    return []


# ---------------------------------------------------------------------------- highlight


def highlight(text: str, query: Query | str) -> list[Span]:
    """Where `query` matches in `text` (a title or snippet): sorted, merged (start, end) spans.

    Offsets index the original `text`.  Every occurrence of a word or phrase is highlighted;
    a fuzzy token that is no substring highlights the in-order letters the matcher accepted.
    """
    if isinstance(query, str):
        try:
            query = parse_query(query)
        except QueryError:
            return []
    folded = fold(text)
    spans: list[Span] = []
    for term in query.terms:
        if term.negated:
            continue
        if term.kind == "regex":
            assert term.pattern is not None
            spans.extend(match.span() for match in term.pattern.finditer(text) if match.end() > match.start())
        elif term.kind == "phrase" or (term.kind == "field" and term.field == "name"):
            spans.extend(_occurrences(folded, term.text))
        elif term.kind == "fuzzy":
            spans.extend(_fuzzy_spans(folded, term.text))
    return merge_spans(spans)


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
    if len(term) < _MIN_FUZZY:
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


def make_snippet(text: str, query: Query, before: int = _SNIPPET_BEFORE, after: int = _SNIPPET_AFTER) -> str:
    """An excerpt of `text` around the first match of any positive term ("" if none)."""
    folded = fold(text)
    first: int | None = None
    for term in query.positive:
        if term.kind == "regex":
            assert term.pattern is not None
            found = term.pattern.search(text)
            position = found.start() if found else -1
        else:
            position = folded.find(term.text)
        if position >= 0 and (first is None or position < first):
            first = position
    if first is None:
        return ""
    start, end = max(0, first - before), min(len(text), first + after)
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
