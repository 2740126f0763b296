"""A user's `re:` pattern, run so that it always stops and never holds the interpreter.

Python's `re` cannot be interrupted and holds the GIL while it matches: `re:\\w*\\w*\\w*x`
over a long word ran for minutes and froze the picker's event loop from a worker thread,
and hung `seance ls --query`.  A user's pattern is run by the `regex` package (mrab-regex)
instead: `concurrent=True` releases the GIL while it matches (the UI thread draws and takes
keys meanwhile) and `timeout=` stops a match from inside (the package measures it in the
process's CPU time, `clock()`).

- **matching** (`UserRegex.search`: whether a session matches): every string one parsed
  query scans shares one budget, `QUERY_BUDGET` seconds in all; once it is spent the
  search raises `RegexTimeout`, a `QueryError` (the picker says why and keeps its rows,
  `seance ls` exits with one line on stderr).  A query is parsed again for every key.
- **looking** (`UserRegex.look`: a highlight, a snippet, the preview's marks): each look
  may take `LOOK_TIMEOUT`; once one runs out the pattern marks nothing more (a row is drawn
  on the UI thread: at most one such look per query costs it).

The syntax is `re`'s: a pattern is first compiled by `re` (what it refuses, with its
message, is refused as before), then by `regex` in its `re`-compatible mode (VERSION0),
case-insensitive with simple case folding, as the index's tokenizer folds (`ß` is not
`ss`, `ı` is not `i`; FULLCASE would fold the first, `re` matched the second).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterator
from typing import Any

import regex  # type: ignore[import-untyped]  # (no stubs in the test extra: the calls go through `UserRegex`)

from ..text import display_text
from .query import QueryError

QUERY_BUDGET = 3.0
"""Seconds one parsed query may spend matching its `re:` terms, summed over every string it
scans (a regex over 100,000 sessions' titles and text takes well under a second)."""

LOOK_TIMEOUT = 0.02
"""Seconds one look for display may take (about a frame): a longer one marks nothing."""

_FLAGS = regex.IGNORECASE | regex.VERSION0


class RegexTimeout(QueryError):
    """A `re:` pattern used up its query's `QUERY_BUDGET`: the search stopped."""


class UserRegex:
    """A compiled `re:` pattern (`pattern`: its text) whose every run is bounded."""

    __slots__ = ("_compiled", "_looks_out", "_spent", "pattern")

    def __init__(self, source: str) -> None:
        """Compile `source`; raises `QueryError` for a pattern `re` refuses."""
        try:
            with warnings.catch_warnings():  # (`[[:alpha:]]`: `re` warns of a nested set, `regex` reads a class)
                warnings.simplefilter("ignore", FutureWarning)
                re.compile(source, re.IGNORECASE)
            self._compiled: Any = regex.compile(source, _FLAGS)
        except (re.error, regex.error) as error:
            where = f" at {error.pos}" if getattr(error, "pos", None) is not None else ""
            raise QueryError(f"re: {error.msg}{where}") from None
        self.pattern = source
        self._spent = 0.0
        self._looks_out = False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserRegex) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)

    def __repr__(self) -> str:
        return f"UserRegex({self.pattern!r})"

    def search(self, text: str, pos: int = 0, endpos: int | None = None) -> Any:
        """The first match in `text[pos:endpos]`, or None; charged to the query's budget
        (raises `RegexTimeout` once it is spent)."""
        left = QUERY_BUDGET - self._spent
        if left <= 0:
            raise self._stopped()
        started = time.perf_counter()
        try:
            return self._compiled.search(text, pos, endpos, concurrent=True, timeout=left)
        except TimeoutError:
            self._spent = QUERY_BUDGET
            raise self._stopped() from None
        finally:
            self._spent += time.perf_counter() - started

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

    def _stopped(self) -> RegexTimeout:
        shown = display_text(self.pattern, 40)
        return RegexTimeout(f"re:{shown} took over {QUERY_BUDGET:g} s of matching: stopped (simplify the pattern)")


__all__ = ["LOOK_TIMEOUT", "QUERY_BUDGET", "RegexTimeout", "UserRegex"]
