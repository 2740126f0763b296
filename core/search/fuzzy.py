"""The fuzzy token rule: a token's letters in order, close together (fzf-like, bounded).

A spread-out subsequence in long text is a coincidence, not a match (pi's weakness), so
the letters of an n-letter token must lie within `max_span(n)` = max(3n, n+8) characters.
Shorter tokens than `MIN_FUZZY` only match as substrings.  Matching (`rank`) and
highlighting (`snippet`) both use these, so every fuzzy hit highlights what matched.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

MIN_FUZZY = 3  # shorter tokens only match as substrings (a 2-letter subsequence is noise)


def max_span(length: int) -> int:
    """How far apart a fuzzy token's letters may be: further is a coincidence, not a match."""
    return max(3 * length, length + 8)


@lru_cache(maxsize=256)
def fuzzy_pattern(term: str, groups: bool = False) -> re.Pattern[str]:
    """The letters of `term` in order, each within a bounded gap of the previous one.

    Gaps are possessive (`[^h]{0,G}+h` takes the first "h" within G characters), so a
    match is found in linear time; with `groups`, each letter is a group (for highlights).
    """
    gap = max_span(len(term)) - len(term)
    parts = []
    for position, char in enumerate(term):
        letter = f"({re.escape(char)})" if groups else re.escape(char)
        parts.append(letter if position == 0 else f"[^{re.escape(char)}]{{0,{gap}}}+{letter}")
    return re.compile("".join(parts))


def fuzzy_match(pattern: re.Pattern[str], hay: str, length: int) -> re.Match[str] | None:
    """The first in-order occurrence spanning at most `max_span(length)` characters.

    From each start, the possessive gaps take the earliest next letter, so that start's
    span is as small as it can be; later starts are tried only while spans are too wide.
    """
    limit = max_span(length)
    match = pattern.search(hay)
    while match is not None and match.end() - match.start() > limit:
        match = pattern.search(hay, match.start() + 1)
    return match


def fuzzy_scorer() -> Callable[[str, str], float]:
    """rapidfuzz's `fuzz.partial_ratio`, which scores a fuzzy hit, imported on first use: a
    search without a fuzzy hit (and `seance ls`) never loads it.  The import costs ~15 ms of
    CPU, so the picker calls this ahead, off the UI thread, before the first key needs it."""
    from rapidfuzz import fuzz

    return fuzz.partial_ratio


def fuzzy_positions(hay: str, term: str) -> list[int] | None:
    """Where the letters of `term` match in `hay` (both folded), or None if they do not."""
    match = fuzzy_match(fuzzy_pattern(term, True), hay, len(term))
    return None if match is None else [match.start(group) for group in range(1, len(term) + 1)]
