"""What of a session is searched, folded once, and the caller-owned cache that keeps it.

Searched for text terms: the id (prefix only: a short hex run inside a uuid is noise), the
name, the first message, the message text seance holds for the session (the 4 KB prefix, or
what the caller passes), and full-text hits from the index.  cwd and path are kept for the
all-projects scope and for `cwd:`/`path:` filters.

Folding ten thousand summaries takes longer than a keystroke may, so a `SearchCache` keeps
the folded `Haystack`s and the per-chunk `Block`s between searches.  Its owner (the picker
screen, for as long as it shows a list) creates it and passes it to every search; a search
given none folds afresh and keeps nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import chain, compress

from ..model import SessionSummary
from ..text import CONTROL_CHARS, drop_escapes, has_introducer
from .query import fold

TITLE_LIMIT = 300  # fuzzy and title tiers look at this much of the name / first message
_TEXT_LIMIT = 64 * 1024  # message text held per session for substring / regex terms


def one_line(text: str, limit: int | None = None) -> str:
    """`display_text` without its per-space regex: the hot path when folding 10k sessions."""
    if limit is not None:
        text, whole = text[: limit * 4], text
        if CONTROL_CHARS.search(text) and has_introducer(text):  # (coloured: its sequences go
            text = drop_escapes(whole)[: limit * 4]  # first, none cut in half)
    if CONTROL_CHARS.search(text):
        text = CONTROL_CHARS.sub(" ", drop_escapes(text))
    text = " ".join(text.split())
    return text[:limit] if limit is not None else text


def session_text(summary: SessionSummary) -> str:
    """The message text a summary carries (the 4 KB prefix's), on one clean line.

    Exact summaries carry none: text beyond the prefix is the index's business, passed to
    `search` as `text_hits`.
    """
    text = summary.prefix_text
    return one_line(text[:_TEXT_LIMIT]) if isinstance(text, str) else ""


@dataclass(slots=True)
class Haystack:
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

    @classmethod
    def of(cls, summary: SessionSummary, title: tuple[str, str, str] | None = None) -> Haystack:
        """`summary` folded; `title`: its `folded_title`, when the caller has it already (the
        index stores it, so a query over every session does not fold every title again)."""
        ident, name, first = title if title is not None else folded_title(summary)
        return cls(
            summary=summary,
            ident=ident,
            name=name,
            first=first,
            text=fold(session_text(summary)),
            cwd=fold_cwd(summary.cwd),
            path=fold(summary.path),
            labels=tuple(fold(label) for label in summary.labels) if summary.labels else (),
            models=tuple(fold(model) for model in summary.models) if summary.models else (),
        )


def folded_title(summary: SessionSummary) -> tuple[str, str, str]:
    """The id, name and first message as the title tiers match them: folded, on one line
    (never a newline in any of them), the name and first message cut to `TITLE_LIMIT`."""
    return (
        one_line(summary.id.lower()),
        fold(one_line(summary.name or "", TITLE_LIMIT)),
        fold(one_line(summary.first_message, TITLE_LIMIT)),
    )


@functools.lru_cache(maxsize=4096)
def fold_cwd(cwd: str) -> str:
    """`fold(cwd)`, remembered: ten thousand sessions share a few hundred cwds."""
    return fold(cwd)


def _line_starts(lines: list[str], offset: int = 0) -> list[int]:
    """Offsets where each line starts once the lines are joined with one separator."""
    starts = []
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    return starts


@dataclass(slots=True)
class Block:
    """One chunk of haystacks as parallel lists, for tight comprehensions instead of method calls.

    `pairs[i]` is name and first message joined by "\n" (one substring test for both);
    `shown[i]` what the row shows; `ids` is "\n" + one id per line, for a C-speed prefix scan.
    """

    hays: list[Haystack]
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
    ordered: bool  # newest first already (the catalog's order): no sort needed within a tier
    # (scope, terms) -> the sessions every one of those terms matches (index hits aside) and
    # how: the next keystroke usually repeats the terms before the last, and re-scans the last
    memo: dict[tuple, dict[int, tuple[int, str, float]]] = dataclasses.field(default_factory=dict)
    # id(a memoised scan) -> (that scan, its sessions in a title tier, those in the text tier): `rank`'s merge of
    # several terms' index hits, kept while the scan is (the next key of a query's second word asks again)
    tiers: dict[int, tuple[dict, set[int], set[int]]] = dataclasses.field(default_factory=dict)
    _positions: dict[str, int] | None = None  # path -> index, built when index hits first come
    _among: tuple[Collection[str], set[int]] | None = None  # `indices_among`'s last answer
    _named: list[bool] | None = None  # `named`
    _titles: frozenset[str] | None = None  # every id, name and first message (`exact_places`)

    @property
    def named(self) -> list[bool]:
        """Whether each session's row shows its name (not its first message), made once: a
        search's count asks it of every hit in a first message (`Matched.tally`)."""
        if self._named is None:
            self._named = [bool(summary.name and summary.name.strip()) for summary in self.summaries]
        return self._named

    def exact_places(self, whole: str) -> list[tuple[int, str]]:
        """Where `whole` (non-empty) is all of an id, name or first message: (index, field),
        by index, each session's in the order id, name, first message.  A set of the block's
        titles, made once, says whether any is (three scans of the lists were ~3 ms a key at
        100,000 sessions, on the way to the count); then C-speed scans (`in`) of those that do."""
        titles = self._titles
        if titles is None:
            titles = self._titles = frozenset(chain(self.idents, self.names, self.firsts))
        if whole not in titles:  # (usually none is the whole query: one lookup, not three scans)
            return []
        places: list[tuple[int, str]] = []
        for values, field in ((self.idents, "id"), (self.names, "name"), (self.firsts, "first message")):
            if whole in values:  # (`in` is the C-level scan)
                places += [(index, field) for index, value in enumerate(values) if value == whole]
        places.sort(key=operator.itemgetter(0))  # stable: a session's fields keep their order
        return places

    def indices_among(self, paths: Collection[str]) -> set[int]:
        """The indices of the sessions whose path is in `paths`, kept for the same `paths`
        object, which must be replaced, never changed (a picker's table of child sessions,
        `RowsMemo.parents`, asked about on every keystroke)."""
        kept = self._among
        if kept is None or kept[0] is not paths:
            found = compress(
                range(len(self.summaries)), map(paths.__contains__, map(operator.attrgetter("path"), self.summaries))
            )
            kept = self._among = (paths, set(found))
        return kept[1]

    def position_of(self, path: str) -> int | None:
        if self._positions is None:
            self._positions = {summary.path: index for index, summary in enumerate(self.summaries)}
        return self._positions.get(path)

    @classmethod
    def of(cls, hays: list[Haystack]) -> Block:
        idents = [hay.ident for hay in hays]
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
            ordered=all(map(operator.le, recency, recency[1:])),
        )


class SearchCache:
    """Haystacks and blocks of the summaries searched, kept between searches by their owner.

    Keyed by object identity, which is safe because every entry holds its summaries (an id
    cannot be reused while its entry lives) and summaries are immutable: a changed session
    is a new summary object and is folded again.  What is no longer searched is dropped
    when the cache outgrows the searched list.  One owner, one search at a time.
    """

    def __init__(self) -> None:
        self._hays: dict[int, Haystack] = {}
        self._blocks: dict[tuple[int, ...], Block] = {}

    def haystack(self, summary: SessionSummary, title: tuple[str, str, str] | None = None) -> Haystack:
        """`summary`'s haystack, folded now if it is not kept (with `title`: its stored `folded_title`)."""
        found = self._hays.get(id(summary))
        if found is None or found.summary is not summary:
            found = self._hays[id(summary)] = Haystack.of(summary, title)
        return found

    def put(self, hay: Haystack) -> None:
        """Keep `hay`, folded by the caller (from what the index stores), as its summary's haystack."""
        self._hays[id(hay.summary)] = hay

    def cached_block(self, summaries: Sequence[SessionSummary]) -> Block | None:
        return self._blocks.get(tuple(map(id, summaries)))

    def block(self, summaries: Sequence[SessionSummary]) -> Block:
        key = tuple(map(id, summaries))
        found = self._blocks.get(key)
        if found is None:
            found = self._blocks[key] = Block.of([self.haystack(summary) for summary in summaries])
        return found

    def prune(self, keep: Sequence[SessionSummary], blocks: int) -> None:
        """Forget what `keep` (the list just searched, in `blocks` chunks) no longer holds."""
        if len(self._hays) > 2 * len(keep) + 1024:
            alive = {id(summary) for summary in keep}
            self._hays = {key: value for key, value in self._hays.items() if key in alive}
        if len(self._blocks) > 2 * blocks + 8:
            self._blocks = {}
