"""A user's `re:` pattern, run so that it always stops and never holds the interpreter.

Python's `re` cannot be interrupted and holds the GIL while it matches: `re:\\w*\\w*\\w*x`
over a long word ran for minutes and froze the picker's event loop from a worker thread,
and hung `seance ls --query`.  A user's pattern is run by the `regex` package (mrab-regex)
instead: `concurrent=True` releases the GIL while it matches (the UI thread draws and takes
keys meanwhile) and `timeout=` stops a match from inside (the package measures it in the
process's CPU time, `clock()`).

- **matching** (`UserRegex.search`: whether a session matches): every string one parsed
  query scans shares one budget, `QUERY_BUDGET` seconds plus `STRING_ALLOWANCE` for each
  string scanned (a pattern that is quick on every string never runs out, however many
  sessions there are; one that is slow on each runs out within seconds); once it is spent the
  search raises `RegexTimeout`, a `QueryError` (the picker says why and keeps its rows,
  `seance ls` exits with one line on stderr).  A query is parsed again for every key.
- **looking** (`UserRegex.look`: a highlight, a snippet, the preview's marks): each look
  may take `LOOK_TIMEOUT`; once one runs out the pattern marks nothing more (a row is drawn
  on the UI thread: at most one such look per query costs it).

A call's `timeout=` costs ~1.5 us (the package reads the process's CPU clock, a system
call), three times a short title's search: a *tame* pattern (`_tame`: at most one repetition
that is free to backtrack, over a fixed body, and a few alternatives) over a short string
(`TAME_CHARS`: a title, an id, a path) is run without it, in the calling thread, since it
cannot take long (at most ~`TAME_CHARS`² steps of the pattern); its time still counts.

The syntax is `re`'s: a pattern is first compiled by `re` (what it refuses, with its
message, is refused as before), then by `regex` in its `re`-compatible mode (VERSION0),
case-insensitive with simple case folding, as the index's tokenizer folds (`ß` is not
`ss`, `ı` is not `i`; FULLCASE would fold the first, `re` matched the second).
"""

from __future__ import annotations

import re
import re._parser as re_parser  # type: ignore[import-not-found]  # (`_tame`: the stdlib's own parse; no stub)
import time
import warnings
from collections.abc import Iterator
from typing import Any

import regex  # type: ignore[import-untyped]  # (no stubs in the test extra: the calls go through `UserRegex`)

from ..text import display_text
from .query import QueryError

QUERY_BUDGET = 3.0
"""Seconds one parsed query may spend matching its `re:` terms: the wall time of its calls,
summed over every string it scans (each call's `timeout=` is what is left).  At 100,000
sessions `re:fix.*sqlite` spends 0.2 s, `re:[a-z]+_[a-z]+\\(` 1.3-1.6 s (docs/benchmarks.md)."""

STRING_ALLOWANCE = 50e-6
"""Seconds of matching each string scanned adds to the query's budget: 20x what an ordinary
pattern spends on a title (~2.5 us), so the budget grows with the store for such a pattern
(at 100,000 sessions a query scans a few hundred thousand strings: 10 s and more allowed)
while one that takes a millisecond a string still stops after ~3,000 of them."""

LOOK_TIMEOUT = 0.02
"""Seconds one look for display may take (about a frame): a longer one marks nothing."""

_FLAGS = regex.IGNORECASE | regex.VERSION0

CALL_LIMIT = 1.0
"""Seconds one string may take at most (within the budget): a string that takes a second is
a pattern gone wrong, and the search thread must not sit in one call for the whole budget
(the next key's search waits behind it)."""

MAX_EXPANSION = 100_000
"""Characters a pattern's counted repeats may stand for (`a{4000000}`): `regex` expands
them when it compiles, on the UI thread with every key (1 GB and 1.5 s; `(?:ab|cd){300000}`
crashed it)."""

TAME_CHARS = 320
"""A tame pattern runs without a timeout over a string up to this long (a title is 300)."""


class RegexTimeout(QueryError):
    """A `re:` pattern used up its query's `QUERY_BUDGET`: the search stopped."""


class UserRegex:
    """A compiled `re:` pattern (`pattern`: its text) whose every run is bounded."""

    __slots__ = ("_compiled", "_looks_out", "_scanned", "_shared", "_spent", "_tame", "pattern")

    def __init__(self, source: str) -> None:
        """Compile `source`; raises `QueryError` for a pattern `re` refuses."""
        try:
            with warnings.catch_warnings():  # (`[[:alpha:]]`: `re` warns of a nested set, `regex` reads a class)
                warnings.simplefilter("ignore", FutureWarning)
                parsed = re_parser.parse(source, re.IGNORECASE)
                re.compile(source, re.IGNORECASE)
            if _expansion(parsed) > MAX_EXPANSION:
                raise QueryError(f"re: repeat counts too large (over {MAX_EXPANSION:,} characters)")
            verbose = bool(parsed.state.flags & re.VERBOSE)
            try:
                self._compiled: Any = regex.compile(_braces_as_re_reads_them(source, verbose), _FLAGS)
            except (MemoryError, OverflowError, RecursionError):
                raise QueryError("re: the pattern is too large to compile") from None
            self._tame = not verbose and "(?#" not in source and _tame(source)
        except (re.error, regex.error) as error:
            where = f" at {error.pos}" if getattr(error, "pos", None) is not None else ""
            raise QueryError(f"re: {error.msg}{where}") from None
        self.pattern = source
        self._spent = 0.0
        self._scanned = 0
        self._looks_out = False
        self._shared: dict[str, bool] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserRegex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"UserRegex({self.pattern!r})"

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        """The first match in `text[pos:endpos]`, or None; charged to the query's budget
        (raises `RegexTimeout` once it is spent)."""
        self._scanned += 1
        left = self._allowed() - self._spent
        if left <= 0:
            raise self._stopped()
        started = time.thread_time()  # (this thread's: a busy UI thread or host spends none of it)
        try:
            if self._tame and len(text) <= TAME_CHARS:
                return self._compiled.search(text, pos, endpos)
            return self._compiled.search(text, pos, endpos, concurrent=True, timeout=min(left, CALL_LIMIT))
        except TimeoutError:
            self._spent = self._allowed()
            raise self._stopped() from None
        finally:
            self._spent += time.thread_time() - started

    def found(self, text: str) -> bool:
        """Whether the pattern matches in `text` (`search`'s budget); the empty string (an
        unnamed session's name, an exact summary's text) is asked once a query."""
        if text:
            return self.search(text) is not None
        return self.found_shared(text)

    def found_shared(self, text: str) -> bool:
        """`found(text)` for a string many sessions share (a cwd: 10,000 sessions, a few
        hundred cwds), remembered for the query: each call costs ~2 us beyond `re`'s (the
        timeout reads the process's CPU clock), and half a search's calls were such repeats."""
        known = self._shared.get(text)
        if known is None:
            known = self._shared[text] = self.search(text) is not None
        return known

    @property
    def gave_up(self) -> bool:
        """Whether a look for display ran out (`look`): its "no match" is not an answer."""
        return self._looks_out

    def look(self, text: str, pos: int = 0, endpos: int | None = None) -> Iterator[Any]:
        """Every match in `text[pos:endpos]`, for display: none when this look took longer
        than `LOOK_TIMEOUT`, nor ever again after one did."""
        if self._looks_out:
            return iter(())
        try:
            return iter(list(self._compiled.finditer(text, pos, endpos, concurrent=True, timeout=LOOK_TIMEOUT)))
        except TimeoutError:
            self._looks_out = True
            return iter(())

    def look_first(self, text: str) -> Any:
        """The first match in `text` for display (None: none, or a look ran out as `look`'s)."""
        if self._looks_out:
            return None
        try:
            return self._compiled.search(text, concurrent=True, timeout=LOOK_TIMEOUT)
        except TimeoutError:
            self._looks_out = True
            return None

    def _allowed(self) -> float:
        """Seconds this query may spend matching, for the strings it scanned so far."""
        return QUERY_BUDGET + STRING_ALLOWANCE * self._scanned

    def _stopped(self) -> RegexTimeout:
        shown = display_text(self.pattern, 40)
        spent = f"{self._allowed():.1f}"
        return RegexTimeout(f"re:{shown} took over {spent} s of matching: stopped (simplify the pattern)")


_STEPS = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY", "AT"})  # one character, or none
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_TAME_PATHS = 16  # alternatives a tame pattern may try at one place (`(a|b)(c|d)`: 4)
_TAME_SOURCE = 100  # characters of a tame pattern


def _tame(source: str) -> bool:
    """Whether `source` cannot backtrack much: at most one repetition with a choice of
    counts (`.*`, `\\d+`, `(?:ab){1,3}`), whose body is a fixed sequence of steps, at most
    `_TAME_PATHS` ways through its optional parts and fixed counts of at most `_TAME_PATHS`;
    no alternation in a group (`re`'s parse folds `(?:a|\\w)` into one set, which `regex`
    does not: `(?:a|\\w)*z` took seconds over 27 characters; `widget|sidebar` is tame),
    backreference, conditional, atomic group, nor literal `{`.
    Over n characters such a pattern takes O(n²) steps of itself (`fix.*sqlite`: each
    start, each length of `.*`); `(a|aa)*`, `\\w*\\w*x` and `(x+x+)+y` are not tame."""
    if len(source) > _TAME_SOURCE or _alternation_in_a_group(source):
        return False
    try:
        shape = _shape(re_parser.parse(source))
    except Exception:
        return False
    return shape is not None and shape[0] <= _TAME_PATHS and shape[1] <= 1


def _shape(items: Any) -> tuple[int, int] | None:
    """(ways through, repetitions free to backtrack) of parsed `items`; None: not tame."""
    paths, free = 1, 0
    for code, value in items:
        name = str(code)
        inner: tuple[int, int] | None
        if name in _STEPS:
            if name == "LITERAL" and value == ord("{"):
                return None
            continue
        if name == "SUBPATTERN":
            inner = _shape(value[-1])
        elif name in ("ASSERT", "ASSERT_NOT"):
            inner = _shape(value[1])
        elif name == "BRANCH":
            shapes = [_shape(branch) for branch in value[1]]
            known = [shape for shape in shapes if shape is not None]
            if len(known) < len(shapes):
                return None
            inner = (sum(shape[0] for shape in known), sum(shape[1] for shape in known))
        elif name in _REPEATS:
            low, high, body = value
            inner = _shape(body)
            if inner is None:
                return None
            if low == high:  # a fixed count: the body's choices, that many times
                if low > _TAME_PATHS:  # (`.*?a{300}b`: each start, each length, 300 more steps)
                    return None
                inner = (inner[0] ** low, inner[1] * low) if low else (1, 0)
            elif high == 1:  # optional: the body's ways, or none
                inner = (inner[0] + 1, inner[1])
            elif inner != (1, 0):  # a choice of counts over a body with choices of its own
                return None
            else:
                inner = (1, 1)
        else:
            return None
        if inner is None or inner[0] > _TAME_PATHS:
            return None
        paths, free = paths * inner[0], free + inner[1]
        if paths > _TAME_PATHS or free > 1:
            return None
    return paths, free


def _expansion(items: Any) -> int:
    """How many single steps parsed `items` stand for once each counted repeat is written
    out as `regex` compiles it: a bounded count its upper bound, an open one its lower."""
    total = 0
    for code, value in items:
        name = str(code)
        if name in _REPEATS:
            low, high, body = value
            total += _expansion(body) * (low if high == re_parser.MAXREPEAT else max(low, high))
        elif name == "SUBPATTERN":
            total += _expansion(value[-1])
        elif name == "ATOMIC_GROUP":  # (`(?>a{1000}){1000}`)
            total += _expansion(value)
        elif name in ("ASSERT", "ASSERT_NOT"):
            total += _expansion(value[1])
        elif name == "BRANCH":
            total += sum(_expansion(branch) for branch in value[1])
        elif name == "GROUPREF_EXISTS":
            total += sum(_expansion(branch) for branch in value[1:] if branch is not None)
        else:
            total += 1
    return total


_QUANTIFIER = re.compile(r"\{(?:[0-9]+(?:,[0-9]*)?|,[0-9]*)\}")


def _tokens(source: str, verbose: bool = False) -> Iterator[tuple[int, str]]:
    """(index, piece) of `source`: an escape (`\\{`, `\\N{DASH}`), a whole set (`[{|]`), a
    comment (`(?#...)`, and `#` to the line's end in a `verbose` pattern), or one character
    of the pattern's own syntax."""
    index, length = 0, len(source)
    while index < length:
        end = index + 1
        if source[index] == "\\":
            end = index + 2
            if source.startswith("N{", index + 1):
                end = source.find("}", index) + 1 or length
        elif source.startswith("(?#", index):  # (to its `)`, an escaped one skipped, as `re` reads it)
            end = index + 3
            while end < length and source[end] != ")":
                end += 2 if source[end] == "\\" else 1
            end += 1
        elif verbose and source[index] == "#":
            end = source.find("\n", index) + 1 or length
        elif source[index] == "[":
            end += source.startswith("^", end)
            end += source.startswith("]", end)
            while end < length and source[end] != "]":
                end += 2 if source[end] == "\\" else 1
            end += 1
        yield index, source[index:end]
        index = end


def _braces_as_re_reads_them(source: str, verbose: bool = False) -> str:
    """`source` with every `{` that `re` reads as a literal escaped: `regex` reads `{e}`,
    `{i<=1}` as fuzzy matching (`re:"Error: {e}"` matched any error) where `re` reads text."""
    return "".join(
        "\\{" if piece == "{" and not _QUANTIFIER.match(source, index) else piece
        for index, piece in _tokens(source, verbose)
    )


def _alternation_in_a_group(source: str) -> bool:
    """Whether a `|` of `source` is inside parentheses (where a repeat may apply to it)."""
    depth = 0
    for _, piece in _tokens(source):
        if piece == "(":
            depth += 1
        elif piece == ")":
            depth -= 1
        elif piece == "|" and depth > 0:
            return True
    return False


__all__ = [
    "CALL_LIMIT",
    "LOOK_TIMEOUT",
    "MAX_EXPANSION",
    "QUERY_BUDGET",
    "STRING_ALLOWANCE",
    "RegexTimeout",
    "UserRegex",
]
