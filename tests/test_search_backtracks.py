"""`backtracks` must look into atomic groups and both branches of a conditional: a nested
repetition there still backtracks exponentially (Python's `re` holds the GIL: the UI
freezes, Esc cannot stop it).  The 4,000-character cap
does not bound that (2**n in a word's length)."""

from __future__ import annotations

import pytest

from seance.core.search import TextMarks
from seance.core.search.query import backtracks

MISSED = [r"(?>(a+)+b)", r"(x)?(?(1)y|(a+)+)b", r"(?>a|(a+)+)b"]


@pytest.mark.parametrize("pattern", MISSED)
def test_a_nested_repetition_inside_an_atomic_group_or_a_conditional_counts(pattern: str) -> None:
    assert backtracks(pattern), pattern


def test_such_a_pattern_marks_nothing_in_the_preview() -> None:
    assert TextMarks.of(r"re:(?>(\w+)+x)") is None
