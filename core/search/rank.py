"""Ranking: which sessions match every term, at which tier, in which order — pure functions.

Ranking tiers: exact (the whole query equals the id, name or first message) > prefix >
substring (every term in the id/name/first message) > full text (some term only in the
message text or the index) > fuzzy > path; ties by recency (`modified_ms`, newest first),
fuzzy hits by score first.  Within the full-text tier, hits in what people wrote (user,
assistant, summaries: `fulltext.PRIMARY`) come before hits in tool calls and output.  A term
narrowed to an index field (`tool:npm`) matches only where the index found it.
A session's tier is its weakest term's.  Highlight spans are
computed on demand (`Hit.title_spans`, `Hit.snippet`), so a UI pays for visible rows only.

Fuzzy tokens (3+ letters) match only the title a row shows (the name, else the first
message), so every fuzzy hit can be highlighted (`fuzzy` has the rule); rapidfuzz's
`partial_ratio` of the matched stretch ranks them.  Shorter tokens match as substrings only.
cwd and path are matched by text terms only when the caller asks for it (`paths=True`,
meant for the all-projects scope): in the current-project scope every session has the same
cwd, so a token taken from the folder name would match every row (pi does this; tau PR
#420 removed it).  Even then a cwd/path-only match ranks last.  `cwd:` and `path:` always
work.  Negation and field filters see the summary (and its prefix text); the index gets
negations as `NOT` (`Query.full_text`), so full-text hits respect them too.  `tag:` and
`is:` see the user's marks (`core.marks`), which the caller passes as `marks` (session id
-> `Mark`); they narrow the sessions before anything else is matched.

Scoring is chunked: `search_iter` yields after every `chunk` sessions so a UI worker can
check for cancellation and let the event loop breathe; `search` runs it to completion.
Per chunk, what the terms before the last matched is memoised (in the caller's
`SearchCache`): typing the second word of a query scans that word only, over the sessions
the first one left.  A term that grew by a key ("dea" after "de") tests its substrings (id,
name, first message, text, path) only in the sessions the shorter one matched, found in the
same memo (`_Matcher._grown_from`): a string that holds "dead" holds "dea".  Fuzzy matches
are not narrowed (a longer token's letters may lie further apart).
"""

from __future__ import annotations

import heapq
import itertools
import math
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import chain, compress, islice, repeat
from operator import add as add_
from operator import and_, attrgetter, itemgetter, neg, not_, truediv
from typing import Any, NamedTuple, cast

from ..fulltext import PRIMARY, is_primary
from ..model import SessionSummary
from .fuzzy import MIN_FUZZY, fuzzy_match, fuzzy_pattern, fuzzy_scorer, max_span
from .haystack import Block, Haystack, SearchCache, one_line, session_text
from .query import Query, Term, fold, parse_query
from .snippet import Snippet, Span, TextHit, highlight, query_snippet

TIERS = ("exact", "prefix", "substring", "full-text", "fuzzy", "path")
EXACT, PREFIX, SUBSTRING, FULL_TEXT, FUZZY, PATH = range(len(TIERS))
FILTER_ONLY = "filter"  # the tier name of every hit when a query has no text terms


# ---------------------------------------------------------------------------- hits


class Hit(NamedTuple):
    """One matching session: how well (tier, score) and where (field) it matched.

    A named tuple, because a search may build ten thousand of them per keystroke.
    """

    summary: SessionSummary
    tier: str  # one of TIERS, or "filter" when the query has no text terms
    field: str  # id | name | first message | text | cwd | path | filter (or the index's field)
    score: float  # 0-100: the mean rapidfuzz score for fuzzy hits, 100 otherwise
    query: Query
    # the index's hit when the match came from there, or the lazy map of hits (`core.index.IndexHits`,
    # a Mapping) it is made from when first asked for: `text_hit`
    source: TextHit | Mapping[str, TextHit] | None = None

    @property
    def text_hit(self) -> TextHit | None:
        """The index's hit (a snippet of the matched text) when the match came from there."""
        source = self.source
        if isinstance(source, Mapping):
            return source.get(self.summary.path)
        return source

    def title_spans(self) -> list[Span]:
        """Highlight spans in `summary.title` (merged, sorted); computed on demand.  A term
        narrowed to a field (`tool:read`) marks the title only if the title is that field's
        text (`user:`, a first message shown as the title); scattered letters only when the
        title is what matched fuzzily (a full-text hit's reason is its snippet)."""
        fields = () if _named(self.summary) else FIRST_MESSAGE_FIELDS
        return highlight(self.summary.title, self.query, fields, letters=self.tier == _FUZZY_TIER)

    @property
    def in_hidden_first_message(self) -> bool:
        """The match is in the first message, but the row shows the session's name instead:
        the first message has to be shown to say why the session matched."""
        return self.field == "first message" and _named(self.summary)

    @property
    def shows_snippet(self) -> bool:
        """The hit's row says why it matched on a second line: a full-text hit, or a hit in
        the first message of a session whose row shows its name (`Matched.tally` counts them)."""
        return self.tier == _FULL_TEXT_TIER or (self.field == "first message" and _named(self.summary))

    def snippet(self) -> Snippet | None:
        """Why the session matched, when its title does not show it: for a full-text hit an
        excerpt of the matching text, for a hit in the first message of a named session an
        excerpt of that message; with highlight spans."""
        if self.in_hidden_first_message and self.tier != TIERS[FULL_TEXT]:
            text = one_line(self.summary.first_message)
            fields = FIRST_MESSAGE_FIELDS
            return query_snippet(text, self.query, fields) or Snippet(text, tuple(highlight(text, self.query, fields)))
        if self.tier != TIERS[FULL_TEXT]:
            return None
        text_hit = self.text_hit
        if text_hit is None or not text_hit.snippet:
            return query_snippet(session_text(self.summary), self.query)
        snippet, spans = text_hit.snippet, text_hit.spans
        text = one_line(snippet)
        if spans and text == snippet:  # the index marked the matched words itself
            return Snippet(text, tuple(spans))
        return Snippet(text, tuple(highlight(text, self.query))) if text else None


_FULL_TEXT_TIER = TIERS[FULL_TEXT]
_FUZZY_TIER = TIERS[FUZZY]
FIRST_MESSAGE_FIELDS = ("user",)  # the full-text field a first message is (a field-narrowed term's `within`)


def _named(summary: SessionSummary) -> bool:
    """The session's row shows its name (not its first message)."""
    return bool(summary.name and summary.name.strip())


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


class _Matcher:
    """Matches blocks of haystacks against one query, term by term (every term must match)."""

    def __init__(
        self,
        query: Query,
        text_hits: Mapping[str, TextHit] | None,
        paths: bool,
        *,
        titles_only: bool = False,
        field_at: Sequence[str | None] | None = None,
    ) -> None:
        self.query = query
        self.text_hits = text_hits or {}
        # the field of the index's hit in each session searched, by its position (`search_iter`'s
        # `summary_paths`): a block's hits are then a slice, not a lookup of each path
        self.field_at = field_at
        self.paths = paths
        self.titles_only = titles_only  # only the title tiers (id, name, first message): `first_hits`
        self.positive = query.positive
        self.negative = query.negative
        self.filters = query.filters
        self.whole = " ".join(term.text for term in self.positive if term.kind in ("fuzzy", "phrase"))
        # what `alive` depends on, and whether the chain memoised under it is the titles' only
        self.scope = (paths, tuple(map(_term_key, self.filters + self.negative)), titles_only)
        self.unfuzzy_scope = (*self.scope, "no fuzzy")  # a term's scan without its fuzzy tier (`_unfuzzy`)
        self.fuzzy_scope = (*self.scope, "fuzzy")  # a term's fuzzy tier, session by session (`_fuzzy_kept`)
        self.keys = tuple(map(_term_key, self.positive))
        self.fuzzy_patterns = {
            term.text: fuzzy_pattern(term.text)
            for term in self.positive
            if term.kind == "fuzzy" and len(term.text) >= MIN_FUZZY
        }

    # -- filters and negation

    def alive(self, hays: list[Haystack]) -> list[int]:
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

    def _contains(self, term: Term, hay: Haystack) -> bool:
        if term.within:  # only the index can tell (it leaves such sessions out itself)
            return False
        if term.kind == "regex":  # (the title, id and paths only: `_scan_regex`)
            assert term.pattern is not None
            found = term.pattern.found
            if found(hay.ident) or found(hay.name) or found(hay.first):
                return True
            return self.paths and (term.pattern.found_shared(hay.cwd) or found(hay.path))
        values = [hay.name, hay.first, hay.text] + ([hay.cwd, hay.path] if self.paths else [])
        return hay.ident.startswith(term.text) or any(term.text in value for value in values)

    # -- positive terms

    def scan(self, block: Block, alive: list[int], at: int | None = None) -> dict[int, _Match]:
        """The sessions of `block` (among `alive`) where every positive term matches; `at`: the
        position of the block's first session in the sessions searched (`field_at`)."""
        if not self.text_hits:
            return self._chain(block, alive)
        rows = self._index_rows(block, alive, at)
        if not self._fuzzy_later():
            matches = self._chain(block, alive)
            if rows:
                self._merge_text_hits(block, alive, matches, rows)
            return matches
        scans = [self._unfuzzy(position, block, alive) for position in range(len(self.positive))]
        matches = self._beside_index(block, alive, rows, scans)
        if rows:
            self._merge_text_hits(block, alive, matches, rows, scans)
        return matches

    def prepare(self, block: Block, alive: list[int]) -> None:
        """What a scan of `block` can do before the index answers (`prescan`), memoised: each
        term's scan without its fuzzy tier (`_fuzzy_later`), else every term's chain and, for
        several terms, each term alone (`_merge_text_hits` merges the index's hits with them)."""
        if self._fuzzy_later():
            for position in range(len(self.positive)):
                scan = self._unfuzzy(position, block, alive)
                if len(self.positive) > 1:  # (what the merge of the index's hits needs of it)
                    _in_title_and_text(block, scan)
            return
        if len(self.positive) > 1:
            for term, key in zip(self.positive, self.keys, strict=True):
                self._scan_alone(term, key, block, alive)
        self._chain(block, alive)

    def _fuzzy_later(self) -> bool:
        """Whether the fuzzy tier waits for the index's answer (`_beside_index`): a fuzzy term
        with a fuzzy pattern, no regex term (which must match by itself) nor one only the index
        can tell, and not the titles only."""
        if self.titles_only or not self.fuzzy_patterns:
            return False
        return not any(term.kind == "regex" or term.within for term in self.positive)

    def _beside_index(
        self, block: Block, alive: list[int], rows: Mapping[int, str], scans: list[dict[int, _Match]]
    ) -> dict[int, _Match]:
        """`_chain`'s matches for every session of `alive` but the index's `rows`, from each
        term's scan without its fuzzy tier (`scans`) and that tier there; in `rows`, for one
        term, its scan's (no fuzzy match), which is all `_merge_text_hits` keeps of them (a
        fuzzy or path match of a term the index found becomes that full-text hit), and for
        several, none (the merge replaces every one).  A prefix typed at 100,000 sessions is
        in ~40,000 of one project's 40,000 sessions' text: the fuzzy tier's regex over every
        title (~15-30 ms of CPU a term, beside the index query) found matches that were then
        all replaced.  (A session's match does not depend on the others': the chain of terms
        over what the last ones left is each term's matches combined.)  A fresh dict."""
        full = block.memo.get((self.scope, self.keys))
        if full is not None:  # the chain was scanned whole already: the same matches
            return dict(full)
        several = len(scans) > 1
        matches: dict[int, _Match] | None = None
        for position, scan in enumerate(scans):
            # the fuzzy tier where the title and text tiers found nothing (a path match ranks below
            # it), among the sessions the terms before left
            left = (set(alive) if matches is None else matches.keys()) - rows.keys()  # (set operations: 40,000 a key)
            if several:  # (the merge replaces every one of `rows`: their matches are left out)
                kept = sorted(left & scan.keys())  # (C-level: a word's text matches are most sessions)
                found = dict(zip(kept, map(scan.__getitem__, kept), strict=True))
            else:
                found = dict(scan)
            # where no title or text match was found (a path match ranks below a fuzzy one)
            above = compress(found, map(PATH.__gt__, map(_TIER, found.values())))
            pending = left.difference(above)
            if pending:
                found.update(self._fuzzy_kept(position, block, pending))
            matches = found if matches is None else _both(matches, found)
        return matches if matches is not None else {}

    def _fuzzy_kept(self, position: int, block: Block, pending: set[int]) -> dict[int, _Match]:
        """`_fuzzy` of the term at `position` in `pending`, each session's answer memoised on the
        block (`_beside_index` asks again for each key of a query's next word, and for other
        sessions when the index found the query in fewer)."""
        memo, key = block.memo, (self.fuzzy_scope, self.keys[position : position + 1])
        kept = cast("dict[int, _Match | None] | None", memo.get(key))  # (None: looked, no match)
        if kept is None:
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            kept = {}
            memo[key] = cast("dict[int, _Match]", kept)
        new = sorted(pending.difference(kept))  # (set operations and C-level maps: ~26,000 sessions
        # a key of a second word's first keys at 100,000, once `fuzzy_ahead` looked in them all)
        if new:
            found = self._fuzzy(self.positive[position], block, new)
            kept.update(zip(new, map(found.get, new), strict=True))
        matched = list(compress(pending, map(kept.__getitem__, pending)))  # (a match is truthy, None not)
        return cast("dict[int, _Match]", dict(zip(matched, map(kept.__getitem__, matched), strict=True)))

    def _unfuzzy(self, position: int, block: Block, alive: list[int]) -> dict[int, _Match]:
        """The matches of the term at `position` over `alive` without its fuzzy tier (a path
        match where a fuzzy one would have ranked above it: `_beside_index` looks), memoised
        under a scope of their own.  Not to be changed."""
        memo, key = block.memo, (self.unfuzzy_scope, self.keys[position : position + 1])
        found = memo.get(key)
        if found is None:
            term, term_key = self.positive[position], self.keys[position]
            narrow, titled = self._grown_from(block, term_key, None), self._titled(block, term_key)
            found = self._scan_term(term, block, alive, narrow, titled, fuzzy=False)
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[key] = found
        return found

    def _chain(self, block: Block, alive: list[int]) -> dict[int, _Match]:
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
            # the term scanned alone over `alive` already (`_scan_alone`, which the index's hits
            # need: `prescan` makes it while the index answers) holds its match in each of
            # `matches` (a session's match is its own): `_both` takes those, no second scan
            alone = memo.get((scope, keys[position : position + 1])) if matches is not None else None
            candidates = alive if matches is None else list(matches)
            if alone is not None:
                found = alone
            else:
                narrow = self._grown_from(block, keys[position], keys[:position])
                titled = self._titled(block, keys[position]) if matches is None else None
                found = self._scan_term(self.positive[position], block, candidates, narrow, titled)
            matches = found if matches is None else _both(matches, found)
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[(scope, keys[: position + 1])] = matches
            if not matches:
                break
        return dict(matches) if matches else {}

    def _index_rows(self, block: Block, alive: list[int], at: int | None = None) -> dict[int, str]:
        """The sessions of `block` (among `alive`) the index found the query in: index -> field,
        by index.  A common word is in most of a block's sessions (~40,000 per keystroke at
        100,000 sessions): its rows are picked out by C-level maps, not a loop per session;
        with `at` (the block's position, `field_at`) its fields are a slice of the index's."""
        text_hits, paths = self.text_hits, self.paths
        # a lazy map of the index's hits (`core.index.IndexHits`) tells the fields without making hits
        field_of = getattr(text_hits, "field", None) or _hit_field(text_hits)
        fields: Sequence[str | None]
        if self.field_at is not None and at is not None:
            fields = self.field_at[at : at + len(block.summaries)]
            indices: Iterable[int] = range(len(fields))
        elif len(text_hits) > len(block.summaries):  # a common word: look the block's sessions up
            bulk = getattr(text_hits, "fields", None)
            given = map(_PATH, block.summaries)
            fields = bulk(given) if bulk is not None else list(map(field_of, given))
            indices = range(len(fields))
        else:
            positions = [(block.position_of(path), path) for path in text_hits]
            places = sorted((index, path) for index, path in positions if index is not None)
            indices, fields = [index for index, _path in places], [field_of(path) or "" for _index, path in places]
        kept = _COUNTED_WITH_PATHS if paths else _COUNTED  # (the cwd only counts where paths do)
        named = map(_FIELD_NAMES.__getitem__, fields)
        rows = dict(compress(zip(indices, named, strict=True), map(kept.__getitem__, fields)))
        if rows and (self.filters or self.negative):
            allowed = set(alive)
            rows = {index: name for index, name in rows.items() if index in allowed}
        return rows

    def _merge_text_hits(
        self,
        block: Block,
        alive: list[int],
        matches: dict[int, _Match],
        rows: dict[int, str],
        scans: list[dict[int, _Match]] | None = None,
    ) -> None:
        """Sessions the index found the query in (`_index_rows`): a fuzzy, path or missing match
        of a fuzzy or phrase term counts as a full-text hit there (a regex term must still match
        itself).  `scans`: each term's matches, of which only the title and text tiers count
        here (`_unfuzzy`'s), else each term is scanned alone."""
        if len(self.positive) == 1:  # the chain scanned this term over `alive` already (each
            # session's match does not depend on the others'): `matches` is its scan of `rows`
            if self.positive[0].kind != "regex":  # a regex must match by itself: nothing to add
                # where no match or a fuzzy or path one: a full-text hit in the index's field
                # (set operations and C-level maps: a common word is in ~1,000 sessions a block)
                weak = compress(matches, map(FULL_TEXT.__lt__, map(_TIER, matches.values())))
                taken = sorted((rows.keys() - matches.keys()) | (rows.keys() & set(weak)))  # (the loop's order)
                matches.update(zip(taken, map(_TEXT_MATCHES.__getitem__, map(rows.__getitem__, taken)), strict=True))
            return
        found = scans or [
            self._scan_alone(term, key, block, alive) for term, key in zip(self.positive, self.keys, strict=True)
        ]
        if any(term.kind == "regex" for term in self.positive):
            for index, field_name in rows.items():
                self._combine(index, field_name, found, matches)
            return
        # no regex: `_combine`'s answer without its loop per session, in set operations and
        # C-level maps (a common word is in ~1,000 sessions a block; two dict comprehensions per
        # term over the ~500 with a term in a title were ~10 ms a key of two words at 100,000).
        # A term's match in the title or text tiers is its own (each of score 100), any other
        # (none, a path or fuzzy one) a full-text hit of 100 in the index's field.  Where every
        # term is in the title, their matches combined (`_both_one`, a few sessions); elsewhere
        # the combined match is a full-text hit of every term, in the field of the first term
        # not in the title: "text" if its own scan found it in the session's text, else the index's
        tiers = [_in_title_and_text(block, term_found) for term_found in found]
        every = rows.keys() & set.intersection(*(in_title for in_title, _in_text in tiers))
        for index in every:
            combined = found[0][index]
            for term_found in found[1:]:
                combined = _both_one(combined, term_found[index])
            matches[index] = combined
        made = _Table(lambda name: (FULL_TEXT, name, 100.0 * len(found)))  # (one tuple a field)
        left = rows.keys() - every
        for term_found, (titled, in_text) in zip(found, tiers, strict=True):
            decided = left - titled  # (the first term, in order, not in these sessions' titles)
            if decided:  # (the order of `matches` is not the ranking's: `add_hits` sorts)
                own = decided & in_text
                index_fields = decided - in_text
                matches.update(
                    zip(own, map(made.__getitem__, map(_FIELD, map(term_found.__getitem__, own))), strict=True)
                )
                matches.update(
                    zip(index_fields, map(made.__getitem__, map(rows.__getitem__, index_fields)), strict=True)
                )
                left = left - decided
            if not left:
                break

    def _combine(self, index: int, field_name: str, found: list[dict[int, _Match]], matches: dict[int, _Match]) -> None:
        """Session `index`, an index hit in `field_name`, with every term's own match (`found`,
        one dict per term): a fuzzy, path or missing match of a non-regex term counts as a
        full-text hit there; the terms' matches combined (`_both_one`) into `matches`, unless
        a regex term does not match."""
        combined: _Match | None = None
        for term, term_found in zip(self.positive, found, strict=True):
            match = term_found.get(index)
            if term.kind != "regex" and (match is None or match[0] > FULL_TEXT):
                match = (FULL_TEXT, field_name, 100.0)
            if match is None:
                return
            combined = match if combined is None else _both_one(combined, match)
        if combined is not None:
            matches[index] = combined

    def _scan_alone(self, term: Term, key: tuple, block: Block, alive: list[int]) -> dict[int, _Match]:
        """One term's matches over `alive`, memoised as the one-term chain `_chain` keeps (the
        same scan): typing a query's second word does not rescan its first.  Not to be changed."""
        memo, memo_key = block.memo, (self.scope, (key,))
        found = memo.get(memo_key)
        if found is None:
            found = self._scan_term(term, block, alive, self._grown_from(block, key, None), self._titled(block, key))
            if len(memo) >= _MEMO_LIMIT:
                memo.clear()
            memo[memo_key] = found
        return found

    def _grown_from(self, block: Block, key: tuple, before: tuple | None) -> Collection[int] | None:
        """Where a shorter text of the same term matched (memoised in `block` for the same
        scope): "dea" when "dead" is scanned after it.  A superset of the sessions among the
        scan's candidates in which the term matches as a substring or prefix (a string that
        holds or starts with "dead" holds or starts with "dea"), fuzzy matches aside.  Either
        the chain of the same terms `before` it ended with the shorter text (its candidates
        were these), or that text scanned alone over every live session; None: no such memo.
        `before` None: only the latter (`_scan_alone`).  Alone, a fuzzy match is the shorter
        text's own and says it is in no title, text or id (nor, without `paths`, anywhere
        else: with them, a path is looked at only where no fuzzy match was), so it is left out."""
        kind, text, rest = key[0], key[1], key[2:]
        if kind == "regex":
            return None
        scope, position = self.scope, len(before) if before is not None else 0
        found: dict[int, _Match] | None = None
        alone = False
        longest = 0
        unfuzzy = self.unfuzzy_scope  # (a lone term's scan without fuzzy matches: as good a superset)
        for (memo_scope, terms), matches in block.memo.items():
            if (memo_scope != scope and (memo_scope != unfuzzy or len(terms) != 1)) or not terms:
                continue
            last = terms[-1]
            if last[0] != kind or last[2:] != rest or not longest < len(last[1]) < len(text):
                continue
            if not text.startswith(last[1]):
                continue
            if len(terms) == 1 or (len(terms) == position + 1 and terms[:-1] == before):
                found, longest, alone = matches, len(last[1]), len(terms) == 1
        if found is not None and alone and not self.paths:
            return {index for index, match in found.items() if match[0] != FUZZY}
        return found

    def _titled(self, block: Block, key: tuple) -> dict[int, _Match] | None:
        """The title tiers' scan of the term `key` over every live session, memoised in
        `block` by `first_hits` (its titles-only matcher) for this scope: what the full scan
        of the same term over the same sessions finds first (`_scan_term`), so it need not
        look at the titles again.  None: not scanned (or a titles-only matcher itself)."""
        if self.titles_only:
            return None
        return block.memo.get(((*self.scope[:2], True), (key,)))

    def _scan_term(
        self,
        term: Term,
        block: Block,
        candidates: list[int],
        narrow: Collection[int] | None = None,
        titled: dict[int, _Match] | None = None,
        *,
        fuzzy: bool = True,
    ) -> dict[int, _Match]:
        """`term`'s matches among `candidates`; its substring and prefix tests only in those
        of them in `narrow` when given (`_grown_from`: no other can pass them); `titled`: the
        title tiers' matches among the same candidates, found already (`_titled`); without
        `fuzzy`, no fuzzy match (a path test where none was found)."""
        if term.kind == "regex":
            return self._scan_regex(term, block, candidates)
        if term.within:  # narrowed to an index field: the index's hits are its only matches
            return {}
        held = candidates if narrow is None else [index for index in candidates if index in narrow]
        found = dict(titled) if titled is not None else self._scan_titles(term.text, block, candidates, held)
        if self.titles_only:  # every match found so far is in a title tier; the rest rank below
            return found
        return self._scan_rest(term, block, candidates, narrow, held, found, fuzzy)

    def _scan_titles(self, text: str, block: Block, candidates: list[int], held: list[int]) -> dict[int, _Match]:
        """The title tiers: `text` in a name or first message (among `held`), an id's prefix."""
        names, firsts, pairs = block.names, block.firsts, block.pairs
        in_title = [index for index in held if text in pairs[index]]  # name / first message
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
        return found

    def _scan_rest(
        self,
        term: Term,
        block: Block,
        candidates: list[int],
        narrow: Collection[int] | None,
        held: list[int],
        found: dict[int, _Match],
        fuzzy: bool = True,
    ) -> dict[int, _Match]:
        """`_scan_term` after the titles (`found`): the text, fuzzy (unless not `fuzzy`) and path tiers."""
        text = term.text
        rest = [index for index in candidates if index not in found] if found else candidates
        texts = block.texts
        held_rest = rest if narrow is None else [index for index in held if index not in found]
        found.update(dict.fromkeys([index for index in held_rest if text in texts[index]], _FULL_TEXT))
        if fuzzy:
            found.update(self._fuzzy(term, block, [index for index in rest if index not in found]))
        if self.paths:
            cwds, paths = block.cwds, block.paths
            left = [index for index in (rest if narrow is None else held) if index not in found]
            found.update(dict.fromkeys([index for index in left if text in paths[index]], _PATH_PATH))
            found.update(dict.fromkeys([index for index in left if text in cwds[index]], _PATH_CWD))  # cwd wins
        return found

    def _fuzzy(self, term: Term, block: Block, candidates: list[int]) -> dict[int, _Match]:
        """`term`'s fuzzy matches among `candidates` (none unless a fuzzy term with a pattern)."""
        text = term.text
        pattern = self.fuzzy_patterns.get(text) if term.kind == "fuzzy" else None
        if pattern is None:
            return {}
        # fuzzy: only what the row shows, so every hit can be highlighted
        shown, names, length = block.shown, block.names, len(text)
        first, limit = pattern.search, max_span(length)
        # the first occurrence is usually tight enough; `fuzzy_match` looks further when not
        fuzzy = [
            (index, match)
            for index in candidates
            if (match := first(shown[index]))
            and (match.end() - match.start() <= limit or (match := fuzzy_match(pattern, shown[index], length)))
        ]
        if not fuzzy:
            return {}
        ratio = fuzzy_scorer()  # here: a search without a fuzzy hit never loads rapidfuzz
        found: dict[int, _Match] = {}
        for index, match in fuzzy:
            # scored where it matched (what the row highlights), not against the whole title
            window = shown[index][max(match.start() - length, 0) : match.end() + length]
            found[index] = (FUZZY, "name" if names[index] else "first message", ratio(text, window))
        return found

    def _scan_regex(self, term: Term, block: Block, candidates: list[int]) -> dict[int, _Match]:
        assert term.pattern is not None
        search_in, in_cwd = term.pattern.found, term.pattern.found_shared  # (a cwd: many sessions')
        found: dict[int, _Match] = {}
        for index in candidates:
            hay = block.hays[index]
            if search_in(hay.ident):
                found[index] = (SUBSTRING, "id", 100.0)
            elif search_in(hay.name):
                found[index] = (SUBSTRING, "name", 100.0)
            elif search_in(hay.first):
                found[index] = (SUBSTRING, "first message", 100.0)
            elif self.titles_only:
                continue
            # (not the 4 KB prefix's text of a quick summary: the full text has no regex, and the
            # two listings of a session must agree, or a quick first paint's row would go)
            elif self.paths and (in_cwd(hay.cwd) or search_in(hay.path)):
                found[index] = (PATH, "cwd" if in_cwd(hay.cwd) else "path", 100.0)
        return found

    # -- hits

    def collect(
        self,
        block: Block,
        buckets: list[list[Hit]],
        limit: int | None = None,
        at: int | None = None,
        later: list[bool] | None = None,
    ) -> None:
        """Append the hits of one block to `buckets` (one list per tier), in block order;
        none to a bucket that holds `limit` hits already.  `at`: `scan`'s; `later`: `add_hits`'."""
        self.add_hits(block, self.matched(block, at), buckets, limit, at, later)

    def matched(self, block: Block, at: int | None = None) -> dict[int, _Match] | list[int]:
        """The sessions of `block` that match, each with its (tier, field, score); for a query
        of filters only (no text terms), the indices of those that pass them.  `at`: `scan`'s."""
        alive = self.alive(block.hays)
        if not self.positive:
            return alive
        matches = self.scan(block, alive, at)
        if self.whole and matches:
            self._upgrade_whole(block, matches, several=len(self.positive) > 1)
        return matches

    def add_hits(
        self,
        block: Block,
        matches: dict[int, _Match] | list[int],
        buckets: list[list[Hit]],
        limit: int | None = None,
        at: int | None = None,
        later: list[bool] | None = None,
    ) -> None:
        """`collect` once `matched` answered for `block`.  With `later` (and `at`, the block's
        position, and `field_at`), whether each full-text hit made is in tools' output
        (`_tools_last`) is appended to it, in the order of the full-text bucket: `_ranked`
        partitions the bucket with them (looking 40,000 hits' paths up cost ~25 ms a key)."""
        summaries, query, count = block.summaries, self.query, len(self.positive)
        new_hit = _new_hit
        if isinstance(matches, list):
            buckets[0].extend(
                new_hit(Hit, (summaries[index], FILTER_ONLY, "filter", 100.0, query, None)) for index in matches
            )
            return
        text_hits, add, tiers = self.text_hits, [bucket.append for bucket in buckets], TIERS
        lazy = hasattr(text_hits, "fields")  # `IndexHits`: each hit keeps the map, made on first use
        hit_of = text_hits.get if text_hits and not lazy else None  # (a lazy map's truth is a call)
        field_at = self.field_at if at is not None and later is not None else None
        in_text: list[int] = []  # the full-text hits made (for `later`)
        for index in sorted(matches):  # block order (sorting ints, not the items, is the cheap sort)
            tier, name, score = matches[index]
            if limit is not None and len(buckets[tier]) >= limit:
                continue
            source: Any = None
            if tier == FULL_TEXT:  # (the lazy map answers None for a hit in the prefix text)
                source = text_hits if lazy else hit_of(summaries[index].path) if hit_of is not None else None
                in_text.append(index)
            add[tier](new_hit(Hit, (summaries[index], tiers[tier], name, score / count, query, source)))
        if field_at is not None and later is not None and in_text:
            later += map(_IN_TOOLS.__getitem__, map(field_at.__getitem__, map(add_, in_text, repeat(at))))

    def hit(self, block: Block, matches: dict[int, _Match], index: int) -> Hit:
        """The hit `add_hits` makes for `block`'s session `index` (of its `matches`)."""
        tier, name, score = matches[index]
        summary, text_hits, source = block.summaries[index], self.text_hits, None
        if tier == FULL_TEXT and text_hits:  # (`add_hits`' sources: the lazy map, or the path's hit)
            source = text_hits if hasattr(text_hits, "fields") else text_hits.get(summary.path)
        return _new_hit(Hit, (summary, TIERS[tier], name, score / len(self.positive), self.query, source))

    def _upgrade_whole(self, block: Block, matches: dict[int, _Match], several: bool) -> None:
        """Exact: the whole query is the id, name or first message.  Prefix: it starts one
        (for a single term the scan found that already)."""
        whole = self.whole
        for index, field in block.exact_places(whole):
            if index in matches:
                matches[index] = (EXACT, field, matches[index][2])
        if several:  # (C-level maps: ~10,000 substring matches a key of two words at 100,000, a loop
            # of three `startswith` each was ~8 ms; the fields backwards, so the first to start wins)
            substrings = list(compress(matches, map(SUBSTRING.__eq__, map(_TIER, matches.values()))))
            for values, field in ((block.firsts, "first message"), (block.names, "name"), (block.idents, "id")):
                starts = compress(substrings, map(str.startswith, map(values.__getitem__, substrings), repeat(whole)))
                for index in list(starts):
                    matches[index] = (PREFIX, field, matches[index][2])


_MEMO_LIMIT = 32  # memoised term chains per block (each at most a dict of `chunk` entries; the
# titles-only chain of `first_hits` and the full one each keep theirs)


def _hit_field(text_hits: Mapping[str, TextHit]) -> Callable[[str], str | None]:
    """path -> the field of its hit in `text_hits` (None: no hit)."""

    def field_of(path: str) -> str | None:
        hit = text_hits.get(path)
        return None if hit is None else hit.field

    return field_of


class _Table(dict):  # type: ignore[type-arg]
    """A dict that makes a missing entry with `make` (and keeps it): a C-level
    `map(table.__getitem__, ...)` over a block's thousand values, a call per distinct one."""

    def __init__(self, make: Callable[[Any], Any]) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: Any) -> Any:
        value = self[key] = self.make(key)
        return value


_FIELD_NAMES = _Table(lambda field: field or "text")  # the index's field -> a row's (`_index_rows`)
_COUNTED = _Table(lambda field: field is not None and (field or "text") != "cwd")  # a hit counted without paths
_COUNTED_WITH_PATHS = _Table(lambda field: field is not None)
_TEXT_MATCHES = _Table(lambda name: (FULL_TEXT, name, 100.0))  # a field's full-text match (one tuple each)
_IN_TOOLS = _Table(lambda field: field is not None and not is_primary(field))  # `_tools_last` of an index field


def _term_key(term: Term) -> tuple:
    return term.kind, term.text, term.negated, term.field, term.bound_ms


def _in_title_and_text(block: Block, scan: dict[int, _Match]) -> tuple[set[int], set[int]]:
    """The sessions of a term's memoised `scan` of `block` whose match is in a title tier, and
    those whose is in the text tier, kept with it (`Block.tiers`): made while the index answers
    (`prepare`), and a query's first word's are the same on every key of its second."""
    kept = block.tiers.get(id(scan))
    if kept is not None and kept[0] is scan:
        return kept[1], kept[2]
    tiers = list(map(_TIER, scan.values()))
    in_title = set(compress(scan, map(FULL_TEXT.__gt__, tiers)))
    in_text = set(compress(scan, map(FULL_TEXT.__eq__, tiers)))
    if len(block.tiers) >= _MEMO_LIMIT:
        block.tiers.clear()
    block.tiers[id(scan)] = (scan, in_title, in_text)
    return in_title, in_text


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


def _filter_matches(term: Term, hay: Haystack) -> bool:
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


def _mark_matches(term: Term, pinned: bool, tags: tuple[str, ...]) -> bool:
    if term.field == "is":
        return pinned if term.text == "pinned" else bool(tags)
    return any(fold(tag) == term.text for tag in tags)  # tag: the whole tag


def keep_marked(summaries: Sequence[SessionSummary], terms: Sequence[Term], marks: Mapping[str, Any] | None) -> list:
    """The sessions whose marks (`marks`: session id -> `core.marks.Mark`) pass every
    `tag:` / `is:` term of `terms` (a negated term must fail)."""
    marks = marks or {}
    kept = []
    for summary in summaries:
        mark = marks.get(summary.id) if summary.id else None
        pinned, tags = (mark.pinned, mark.tags) if mark is not None else (False, ())
        if all(_mark_matches(term, pinned, tags) != term.negated for term in terms):
            kept.append(summary)
    return kept


_new_hit = tuple.__new__  # builds a Hit without NamedTuple's Python-level __new__


def _newest_first(hit: Hit) -> float:
    return -hit.summary.modified_ms


def _tools_last(hit: Hit) -> bool:
    """Full-text hits in tool calls and output after those in what people wrote."""
    source = hit.source
    if source is None:
        return False
    if isinstance(source, Mapping):  # the lazy map: its field, without making the hit
        field = source.field(hit.summary.path)  # type: ignore[attr-defined]
        return field is not None and not is_primary(field)
    return not is_primary(source.field)


def _tools_last_sort(bucket: list[Hit], text_hits: Mapping[str, TextHit] | None) -> None:
    """`bucket.sort(key=_tools_last)`; with a lazy map of the index's hits, its fields are
    looked up in one pass (tens of thousands of hits per keystroke)."""
    bulk = getattr(text_hits, "fields", None)
    if bulk is None:
        bucket.sort(key=_tools_last)
        return
    fields = bulk([hit.summary.path for hit in bucket])
    last = [field is not None and not is_primary(field) for field in fields]
    if any(last):  # a stable partition: what people wrote, then tools' output
        bucket[:] = [hit for hit, later in zip(bucket, last, strict=True) if not later] + [
            hit for hit, later in zip(bucket, last, strict=True) if later
        ]


def _fuzzy_order(hit: Hit) -> tuple[float, float]:
    return -round(hit.score), -hit.summary.modified_ms


# ---------------------------------------------------------------------------- search


_FOLD_STEP = 256  # sessions folded between yields when the cache is cold


def search_iter(
    summaries: Sequence[SessionSummary],
    query: Query | str,
    *,
    text_hits: Mapping[str, TextHit] | None = None,
    paths: bool = False,
    chunk: int = 2048,
    cache: SearchCache | None = None,
    marks: Mapping[str, Any] | None = None,
    on_matched: Callable[[Matched], None] | None = None,
    summary_paths: Sequence[str] | None = None,
) -> Iterator[SearchProgress]:
    """Rank `summaries` for `query`, yielding a `SearchProgress` between chunks of work.

    The last step carries the ranked hits.  `text_hits` maps a session path to the index's
    `TextHit` for `query.full_text()`.  An empty query returns every session, newest first.
    `cache` keeps the folded sessions for the next search (the caller owns it; without one
    everything is folded afresh).  Folding sessions not in the cache yields every 256
    sessions, so no step is long.  `marks` (session id -> `core.marks.Mark`) is what
    `tag:` and `is:` terms are checked against (none given: nothing is pinned or tagged).
    `on_matched` is called with every match (`Matched`) once they are known, before the
    hits are made and ranked.  `summary_paths`: the paths of `summaries` in their order, the
    very list the index was asked about for `text_hits` (`core.index.IndexHits.fields_at`):
    the hits are then looked up by position, not by path.
    """
    parsed = parse_query(query) if isinstance(query, str) else query
    if parsed.mark_filters:
        summaries, summary_paths = keep_marked(summaries, parsed.mark_filters, marks), None
    cache = cache if cache is not None else SearchCache()
    matcher = _Matcher(parsed, text_hits, paths, field_at=_fields_at(text_hits, summary_paths, len(summaries)))
    total = len(summaries)
    chunk = max(chunk, 1)
    ordered, last = True, -math.inf
    parts: list[tuple[Block, dict[int, _Match] | list[int]]] = []
    buckets: list[list[Hit]] = [[] for _ in TIERS]
    later: list[bool] | None = [] if matcher.field_at is not None else None  # `add_hits`'
    for start in range(0, total, chunk):
        part = summaries[start : start + chunk]
        block = cache.cached_block(part)
        if block is None:
            for offset in range(0, len(part), _FOLD_STEP):
                for summary in part[offset : offset + _FOLD_STEP]:
                    cache.haystack(summary)
                yield SearchProgress(start, total)  # still folding this chunk
            block = cache.block(part)
            yield SearchProgress(start, total)
        ordered = ordered and block.ordered and last <= block.recency[0]
        last = block.recency[-1]
        if on_matched is None:  # nobody waits for the count: the block's hits at once (one pass: ~1 ms a key less)
            matcher.collect(block, buckets, at=start, later=later)
        else:
            parts.append((block, matcher.matched(block, start)))
        if start + chunk < total:
            yield SearchProgress(start + chunk, total)
    cache.prune(summaries, -(-total // chunk))
    if on_matched is not None:  # every match is known: how many, before the hits are made and ranked
        on_matched(Matched(parts, matcher, ordered))
        yield SearchProgress(total, total)
        for number, (block, matches) in enumerate(parts, 1):
            matcher.add_hits(block, matches, buckets, at=(number - 1) * chunk, later=later)
            if number % _HITS_STEP == 0:
                yield SearchProgress(total, total)
    yield SearchProgress(total, total, _ranked(buckets, ordered, text_hits, later))


def _fields_at(
    text_hits: Mapping[str, TextHit] | None, summary_paths: Sequence[str] | None, total: int
) -> Sequence[str | None] | None:
    """The field of the index's hit in each of the `total` sessions searched, by position,
    when `text_hits` can tell them for `summary_paths` (`search_iter`); else None."""
    fields_at = getattr(text_hits, "fields_at", None)
    if fields_at is None or summary_paths is None or len(summary_paths) != total:
        return None
    return cast("Sequence[str | None] | None", fields_at(summary_paths))


_TIER, _FIELD = itemgetter(0), itemgetter(1)  # of a `_Match`
_FIRST_MESSAGE = "first message"
_HITS_STEP = 2  # blocks whose hits are made between two yields of `search_iter` (a check for a newer key:
# at 100,000 sessions 8 blocks were ~10-15 ms of CPU the next key waited through)


class Matched:
    """Every session a search matched, before its hits are made and ranked (`search_iter`'s
    `on_matched`): how many rows the hits will make, and how many of those show a second
    line, are known here already (a picker's count and scrollbar, ahead of the ranking)."""

    __slots__ = ("_matcher", "_ordered", "_parts")

    def __init__(
        self, parts: list[tuple[Block, dict[int, _Match] | list[int]]], matcher: _Matcher, ordered: bool
    ) -> None:
        self._parts, self._matcher, self._ordered = parts, matcher, ordered

    def _starts(self) -> dict[int, int]:
        """id(block) -> the position of its first session in the sessions searched (`field_at`)."""
        starts, at = {}, 0
        for block, _matches in self._parts:
            starts[id(block)] = at
            at += len(block.summaries)
        return starts

    def first(self, limit: int) -> list[Hit] | None:
        """The first `limit` hits of the ranking `search_iter` ends with (equal hits, in its
        order: `_ranked`), made from the matches without making and ranking the rest (~40,000
        at 100,000 sessions): each tier's first in block order (newest first), the full-text
        tier's hits in what people wrote before those in tools' output, the fuzzy tier's best
        scores (`_fuzzy_order`).  None when the sessions did not come newest first (every
        tier is sorted then: all of it is needed)."""
        if not self._ordered:
            return None
        parts, matcher = self._parts, self._matcher
        if parts and isinstance(parts[0][1], list):  # a query of filters only: one tier, block order
            return list(islice(_filter_hits(matcher, parts), limit))
        scored = cast(list[tuple[Block, dict[int, _Match]]], parts)
        per_block = [list(map(_TIER, matches.values())) for _block, matches in scored]
        hits: list[Hit] = []
        for tier in range(len(TIERS)):
            need = limit - len(hits)
            if need <= 0:
                break
            where = (  # (lazy: the first tiers' first blocks are often all that is needed)
                (block, matches, sorted(compress(matches, map(tier.__eq__, tiers))))
                for (block, matches), tiers in zip(scored, per_block, strict=True)
                if tier in tiers
            )
            if tier == FULL_TEXT:
                starts = self._starts() if matcher.field_at is not None else None
                hits += _tools_last_first(matcher, where, need, starts)
            elif tier == FUZZY:
                hits += _best_fuzzy(matcher, where, need)
            else:
                firsts = ((block, matches, index) for block, matches, indices in where for index in indices)
                hits += (matcher.hit(*first) for first in islice(firsts, need))
        return hits

    def tally(self, leave_out: Collection[str] = ()) -> tuple[int, int]:
        """(the hits, those of them whose row says why they matched on a second line:
        `Hit.shows_snippet`), the sessions at the paths in `leave_out` left out.  C-level
        counts where they can be (40,000 matches per keystroke at 100,000 sessions)."""
        hits = snippets = 0
        for block, matches in self._parts:
            out = block.indices_among(leave_out) if leave_out else set()
            if isinstance(matches, list):  # a query of filters only: no snippets
                hits += len(matches) - len(out & set(matches)) if out else len(matches)
                continue
            values = matches.values()
            hits += len(matches)
            snippets += list(map(_TIER, values)).count(FULL_TEXT)
            if "first message" in map(_FIELD, values):  # (a name's session whose first message matched)
                in_first = list(compress(matches, map(_FIRST_MESSAGE.__eq__, map(_FIELD, values))))
                not_text = map(FULL_TEXT.__ne__, map(_TIER, map(matches.__getitem__, in_first)))
                snippets += list(map(and_, map(block.named.__getitem__, in_first), not_text)).count(True)
            if out and (gone := list(out & matches.keys())):  # (C-level maps too: ~4,000 a key at 100,000)
                left = list(map(matches.__getitem__, gone))
                hits -= len(gone)
                snippets -= list(map(_TIER, left)).count(FULL_TEXT)
                firsts = map(_FIRST_MESSAGE.__eq__, map(_FIELD, left))
                shown = map(and_, firsts, map(FULL_TEXT.__ne__, map(_TIER, left)))  # (those not counted above)
                snippets -= list(map(and_, shown, map(block.named.__getitem__, gone))).count(True)
        return hits, snippets


def _filter_hits(matcher: _Matcher, parts: list[tuple[Block, Any]]) -> Iterator[Hit]:
    """The hits of a query of filters only, in block order (`_Matcher.add_hits`)."""
    query = matcher.query
    for block, indices in parts:
        for index in indices:
            yield _new_hit(Hit, (block.summaries[index], FILTER_ONLY, "filter", 100.0, query, None))


_Where = Iterable[tuple[Block, dict[int, _Match], list[int]]]  # a tier's matches: (block, its matches, their indices)


def _tools_last_first(matcher: _Matcher, where: _Where, need: int, starts: dict[int, int] | None = None) -> list[Hit]:
    """The first `need` full-text hits in `_ranked`'s order: block order, what people wrote
    before tools' output (`_tools_last_sort`'s stable partition), looked up a block at a time
    (C-level maps: ~20,000 hits in tools' output per keystroke at 100,000 sessions) until
    `need` of the first kind are found; by position with `starts` (`Matched._starts`) and
    the matcher's `field_at`."""
    text_hits, field_at = matcher.text_hits, matcher.field_at
    bulk = getattr(text_hits, "fields", None)
    firsts: list[tuple[Block, dict[int, _Match], list[int]]] = []
    tools: list[tuple[Block, dict[int, _Match], list[int]]] = []
    found = 0
    for block, matches, indices in where:
        if field_at is not None and starts is not None:
            fields = list(map(field_at.__getitem__, map(add_, indices, repeat(starts[id(block)]))))
        elif bulk is not None:
            fields = bulk(map(_PATH, map(block.summaries.__getitem__, indices)))
        else:
            summaries = list(map(block.summaries.__getitem__, indices))
            hits = [text_hits.get(summary.path) for summary in summaries] if text_hits else [None] * len(indices)
            fields = [None if hit is None else hit.field for hit in hits]
        ahead = list(map(_AHEAD.__contains__, fields))
        firsts.append((block, matches, list(compress(indices, ahead))))
        tools.append((block, matches, list(compress(indices, map(not_, ahead)))))
        found += len(firsts[-1][2])
        if found >= need:
            break
    order = chain.from_iterable(
        ((block, matches, index) for index in indices) for block, matches, indices in chain(firsts, tools)
    )
    return [matcher.hit(*first) for first in islice(order, need)]


_PATH = attrgetter("path")
_AHEAD = PRIMARY | {None}  # the fields of full-text hits ranked first: what people wrote (None: not the index's)


def _best_fuzzy(matcher: _Matcher, where: _Where, need: int) -> list[Hit]:
    """The first `need` fuzzy hits in `_ranked`'s order (`_fuzzy_order`, stable), chosen
    among all of them without making them.  The sessions come newest first (`Matched.first`),
    so within a score, recency order is block order: the key is (the score, the position),
    computed in C-level maps (~10,000 fuzzy hits of a three-letter word at 100,000 sessions)."""
    terms = len(matcher.positive)
    negated: list[int] = []
    places: list[tuple[Block, dict[int, _Match], int]] = []
    for block, matches, indices in where:
        scores = map(_SCORE, map(matches.__getitem__, indices))
        negated += map(neg, map(round, map(truediv, scores, repeat(terms))))
        places += zip(repeat(block), repeat(matches), indices)
    best = heapq.nsmallest(need, zip(negated, itertools.count()))
    return [matcher.hit(*places[place]) for _score, place in best]


_SCORE = itemgetter(2)  # of a `_Match`


def _ranked(
    buckets: list[list[Hit]],
    ordered: bool,
    text_hits: Mapping[str, TextHit] | None,
    later: list[bool] | None = None,
) -> list[Hit]:
    """The hits of every tier, each tier in its order, best tier first.  `later`: whether
    each full-text hit is in tools' output (`add_hits`), in the bucket's order."""
    for tier, bucket in enumerate(buckets):
        if tier == FUZZY:
            bucket.sort(key=_fuzzy_order)
        elif not ordered:
            bucket.sort(key=_newest_first)  # stable: equal times keep the input order
        if tier == FULL_TEXT and bucket:
            if ordered and later is not None and len(later) == len(bucket):  # (told: no lookup of each hit)
                if any(later):  # a stable partition: what people wrote, then tools' output
                    bucket[:] = [*compress(bucket, map(not_, later)), *compress(bucket, later)]
            else:
                _tools_last_sort(bucket, text_hits)  # stable: newest first within each
    return list(chain.from_iterable(buckets))


def first_hits(
    summaries: Sequence[SessionSummary],
    query: Query,
    *,
    paths: bool = False,
    chunk: int = 2048,
    cache: SearchCache | None = None,
    marks: Mapping[str, Any] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    limit: int | None = None,
) -> list[Hit] | None:
    """The hits in the title tiers (exact, prefix, substring: in an id, name or first
    message), ranked: always the first hits of `search_iter` for the same arguments, in its
    order, whatever the index finds (full-text, fuzzy and path hits rank below them).  A
    scan of the titles only, no index query: what a picker can show while the full search
    runs.  `limit`: only the first `limit` are wanted (fewer hits are made when the sessions
    come newest first).  None if `cancelled()` says so between chunks.  The same `chunk` and
    `cache` as the full search share its folded blocks."""
    if query.mark_filters:
        summaries = keep_marked(summaries, query.mark_filters, marks)
    cache = cache if cache is not None else SearchCache()
    matcher = _Matcher(query, None, paths, titles_only=True)
    buckets: list[list[Hit]] = [[] for _ in TIERS]
    ordered, last = True, -math.inf
    for start in range(0, len(summaries), max(chunk, 1)):
        if cancelled():
            return None
        block = cache.block(summaries[start : start + max(chunk, 1)])
        ordered = ordered and block.ordered and last <= block.recency[0]
        last = block.recency[-1]
        matcher.collect(block, buckets, limit)  # (in block order: each tier's first are the first made)
    if limit is not None and not ordered:  # not newest first: each tier is sorted, so all of it is needed
        every = first_hits(summaries, query, paths=paths, chunk=chunk, cache=cache, marks=marks, cancelled=cancelled)
        return None if every is None else every[:limit]
    del buckets[FULL_TEXT:]  # (a query of filters only has every hit in the first bucket)
    hits = _ranked(buckets, ordered, None)
    return hits if limit is None else hits[:limit]


def _matched_chunks(
    summaries: Sequence[SessionSummary], query: Query, paths: bool, chunk: int, marks: Mapping[str, Any] | None
) -> tuple[_Matcher, Iterator[Sequence[SessionSummary]]]:
    """The query's matcher, and the sessions its mark filters keep, `chunk` at a time (each a
    block of the search cache): what `prescan` and `fuzzy_ahead` walk."""
    if query.mark_filters:
        summaries = keep_marked(summaries, query.mark_filters, marks)
    step = max(chunk, 1)
    return _Matcher(query, None, paths), (summaries[start : start + step] for start in range(0, len(summaries), step))


def prescan(
    summaries: Sequence[SessionSummary],
    query: Query,
    *,
    paths: bool = False,
    chunk: int = 2048,
    cache: SearchCache,
    marks: Mapping[str, Any] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> bool:
    """Scan every term over `summaries` ahead of a `search_iter` with the same arguments,
    into `cache`'s blocks (the memoised term chains): what does not need the index's hits,
    done while the index query runs (without the fuzzy tier, which waits for the index's
    answer: `_Matcher.prepare`).  The search then merges the index's hits and ranks.
    False if `cancelled()` said so between chunks."""
    matcher, parts = _matched_chunks(summaries, query, paths, chunk, marks)
    if not matcher.positive:
        return True
    for part in parts:
        if cancelled():
            return False
        block = cache.block(part)
        matcher.prepare(block, matcher.alive(block.hays))
    return True


def fuzzy_ahead(
    summaries: Sequence[SessionSummary],
    query: Query,
    *,
    paths: bool = False,
    chunk: int = 2048,
    cache: SearchCache,
    marks: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """Look for each term's fuzzy tier in every session of `summaries` where its scan without it
    found nothing (`_Matcher._fuzzy_kept`: each session's answer kept in `cache`'s blocks), a
    chunk at a time (a step between yields).  A picker's idle work once a word is followed by a
    space: a search waits for the index before the fuzzy tier and looks for it only where the
    index did not find the query (`_beside_index`), which for a second word's first keys is
    most sessions (at 100,000 sessions, ~26,000 titles for `'fts5 c'`, ~17 ms of CPU on the way
    to its count); their search then finds each answer kept.  Nothing is ranked here."""
    matcher, parts = _matched_chunks(summaries, query, paths, chunk, marks)
    if not matcher._fuzzy_later():
        return
    for part in parts:
        block = cache.block(part)
        alive = matcher.alive(block.hays)
        for position, term in enumerate(matcher.positive):
            if term.kind == "fuzzy" and term.text in matcher.fuzzy_patterns:
                scan = matcher._unfuzzy(position, block, alive)
                above = compress(scan, map(PATH.__gt__, map(_TIER, scan.values())))
                matcher._fuzzy_kept(position, block, set(alive).difference(above))
        yield


def search(
    summaries: Sequence[SessionSummary],
    query: Query | str,
    *,
    text_hits: Mapping[str, TextHit] | None = None,
    paths: bool = False,
    cache: SearchCache | None = None,
    marks: Mapping[str, Any] | None = None,
) -> list[Hit]:
    """`search_iter` run to completion: the ranked hits."""
    for step in search_iter(summaries, query, text_hits=text_hits, paths=paths, cache=cache, marks=marks):
        if step.hits is not None:
            return step.hits
    return []
