"""The sanitisers' fast paths (`display_text`, `visible`: printable text) give what the regex gives.

They rest on facts about Unicode: a character `str.isprintable()` accepts is never whitespace
or a control except the plain space, and every control is unprintable.  Checked here over
every code point, and `display_text` compared with its regex-only form on hostile and random
strings.
"""

from __future__ import annotations

import random

from seance.core.text import _BLANK_RUN, CONTROL_CHARS, ESCAPE_SEQUENCES, display_text, has_introducer


def _by_regex(text: str, limit: int | None = None) -> str:
    if limit is not None and len(text) > limit * 4:
        if has_introducer(text[: limit * 4]):  # (coloured: its sequences dropped before the cut)
            text = ESCAPE_SEQUENCES.sub("", text)
        text = text[: limit * 4]
    text = _BLANK_RUN.sub(" ", ESCAPE_SEQUENCES.sub("", text)).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def test_a_printable_character_is_never_blank_or_a_control_but_the_space_over_all_of_unicode() -> None:
    for code in range(0x110000):
        char = chr(code)
        if char.isprintable() and char != " ":
            assert not _BLANK_RUN.match(char), hex(code)
            assert not CONTROL_CHARS.match(char), hex(code)
            assert char.strip() == char, hex(code)


def test_display_text_equals_the_regex_on_hostile_and_random_text() -> None:
    samples = [
        "",
        " ",
        "  a  b  ",
        "plain words",
        "tab\there",
        "\x1b[31mred\x1b[0m",
        "bidi \u202eevil\u202c",
        "nbsp\u00a0here",
        "lone \udc80 surrogate",
        "line\nbreak",
        " lead",
        "trail ",
        "wide 漢字 and emoji 😀",
        "\u2028sep\u2029",
    ]
    rng = random.Random(14)
    alphabet = ["a", " ", "  ", "\t", "\n", "\x1b", "\x9b", "\u200e", "\u3000", "é", "\ud800", "x", "\u00a0"]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))) for _ in range(5_000)]
    for text in samples:
        for limit in (None, 0, 1, 5, 200):
            assert display_text(text, limit) == _by_regex(text, limit), (text, limit)


def test_every_control_is_unprintable_so_visible_may_skip_its_regex_over_all_of_unicode() -> None:
    for code in range(0x110000):
        char = chr(code)
        if CONTROL_CHARS.match(char):
            assert not char.isprintable(), hex(code)


def test_display_text_cut_at_a_clean_head_equals_the_regex_on_20000_long_random_texts() -> None:
    """A text longer than the limit whose first limit + 1 characters are one clean line is
    cut there without cleaning the rest: the same as cleaning all of it, whatever follows
    (blank runs and controls right after the head, or straddling it) and whatever the limit."""
    rng = random.Random(15)
    alphabet = ["a", "b", " ", " ", "\t", "\n", "\x1b", "\x9b", "\u200e", "\u3000", "é", "\ud800", "\u00a0", "\x1c"]
    for trial in range(20_000):
        limit = rng.choice([1, 2, 3, 5, 10, 50, 100, 200])
        clean = "".join(rng.choice("abc d") for _ in range(rng.randint(0, limit + 3)))
        tail = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3 * limit)))
        text = rng.choice([clean + tail, tail + clean, clean, clean.replace(" ", "  ") + tail])
        assert display_text(text, limit) == _by_regex(text, limit), (trial, text, limit)
