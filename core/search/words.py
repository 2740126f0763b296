"""Words as the index's tokenizer sees them (FTS5 `unicode61 remove_diacritics 2`), for the
regexes that find in a text what the index matched (`query.words_pattern`).

A word is letters, digits, combining marks and private-use characters (unicode61 splits at
none of them: a decomposed `Re\u0301sume\u0301` is one word); `_` and everything else
separate words.  Accents are folded as the index folds them, which is Latin letters only
(`мой` is not `мои`, `άλφα` not `αλφα`): the fold table is SQLite's own, read back from
its tokenizer the first time a text needs it, not Unicode's decompositions.  Both are made
on first use (tens of milliseconds), never at import.
"""

from __future__ import annotations

import functools
import sqlite3
import unicodedata
from typing import NamedTuple

_MARKS = ("Mn", "Mc", "Me")
_PRIVATE_USE = r"\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


class WordSyntax(NamedTuple):
    """The regex pieces of a word: one word character, one separator, a word's end (a
    lookahead) and a word prefix's rest."""

    word: str
    separator: str
    end: str
    tail: str

    def first(self, word: str) -> str:
        """`word` (escaped) from a word start: the literal first and the start checked behind
        it, so `re` looks for the literal (a lookbehind first is tried at every position,
        with the marks' class ~6x slower over a long text)."""
        return f"{word}(?<!{self.word}{word})"


@functools.cache
def word_syntax() -> WordSyntax:
    """`WordSyntax` for this Python's Unicode data (made once: a pass over the marks' planes).
    The fold table is made with it: the texts a word pattern runs over are folded first, and
    the pattern is made where the work is (a search or preview worker), a snippet's first
    fold maybe not."""
    _fold_table()
    ranges: list[list[int]] = []
    category = unicodedata.category
    for code in (*range(0x300, 0x20000), *range(0xE0000, 0xE1000)):
        if category(chr(code)) in _MARKS:
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
    marks = "".join(chr(low) if low == high else f"{chr(low)}-{chr(high)}" for low, high in ranges)
    extra = f"[{marks}{_PRIVATE_USE}]"
    word = rf"(?:[^\W_]|{extra})"
    return WordSyntax(word, rf"(?:[\W_](?<!{extra}))", f"(?!{word})", f"{word}*")


@functools.cache
def _fold_table() -> dict[int, int]:
    """Each character the index folds to another one letter (`é` -> `e`), as its tokenizer
    does it: every character with a canonical decomposition (the only ones unicode61 strips
    accents from) is tokenized alone by an in-memory FTS5 table and its token read back
    (`fts5vocab`); one that becomes one other character folds to it (its case aside: the
    patterns ignore case), the rest stay (one character for one: offsets are kept)."""
    candidates = [
        code
        for code in range(0x80, 0x30000)
        if not 0xD800 <= code < 0xE000 and unicodedata.normalize("NFD", chr(code)) != chr(code)
    ]
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE words USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
        db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        db.executemany("INSERT INTO words(rowid, x) VALUES (?, ?)", [(code, chr(code)) for code in candidates])
        table: dict[int, int] = {}
        for token, code in db.execute("SELECT term, doc FROM tokens"):
            if len(token) == 1 and token != chr(code).lower():
                table[code] = ord(token)
        return table
    finally:
        db.close()


def fold_accents(text: str) -> str:
    """`text` with each character the index strips of its accents as its base letter
    (`café` -> `cafe`; `мой`, `ά` unchanged), one character for one, so offsets in the
    result are offsets in `text`: what `remove_diacritics` does to words, for the
    patterns of `query.words_pattern`."""
    return text if text.isascii() else text.translate(_fold_table())
