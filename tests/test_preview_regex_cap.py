"""A `re:` term is capped at REGEX_SCAN characters of each text, but the walk's
quick test caps the message's *joined* strings (thinking, signatures, ids, every part), while
the block it confirms with caps each part alone: a match the block would show is skipped when
other strings come first.  And the cap is an `endpos`: `$`, `\\b` and lookaheads see an end
of text there."""

from __future__ import annotations

import re
from pathlib import Path

from test_ui_preview_match import chatter, message, text, write

from seance.app.widgets import context_preview as cp
from seance.core.search import TextMarks, parse_query
from seance.core.session import read_session

THINKING = "let me think about this carefully. " * 150  # ~5,000 characters, as thinking often is


def test_a_regex_match_after_a_long_thinking_block_is_found(tmp_path: Path) -> None:
    answer = message(
        "assistant",
        [
            {"type": "thinking", "thinking": THINKING, "thinkingSignature": "sig"},
            {"type": "text", "text": "use needle42 here"},
        ],
    )
    path = write(
        tmp_path / "s.jsonl",
        message("user", text("go")),
        answer,
        *chatter(40),
        message("user", text("needle42 again")),
        *chatter(40),
    )
    session = read_session(path)
    block = cp._message_block(
        cp.ContextMessage("assistant", answer["message"], "e1"), {}, TextMarks.of("re:needle\\d+")
    )
    assert block.marked, "the block shows and marks it"
    words = cp.build_preview(session, query=parse_query("needle42"))
    assert words.at_match and words.blocks[0].body == "use needle42 here", "a word term finds it"
    doc = cp.build_preview(session, query=parse_query("re:needle\\d+"))
    assert doc.at_match
    assert doc.blocks[0].body == "use needle42 here", f"opened at {doc.blocks[0].body!r}, earlier={doc.earlier}"


def test_a_regex_anchored_at_the_end_is_not_marked_where_the_cap_cuts(tmp_path: Path) -> None:
    marks = TextMarks.of("re:foo$")
    body = "x" * 3997 + "foo" + " and the text goes on"
    assert not re.search("foo$", body, re.IGNORECASE)
    assert marks.spans(body, ("user",)) == [], "`foo$` marked where the text does not end"


def test_an_image_s_data_and_a_thinking_signature_are_not_kept_for_the_quick_test() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "image", "data": "QUJD" * 1000, "mimeType": "image/png"},
            {"type": "thinking", "thinking": "hm", "thinkingSignature": "c2ln" * 100},
        ],
    }
    strings = cp._strings(message, [])
    assert "image/png" in strings and "hm" in strings
    assert not any(text.startswith(("QUJD", "c2ln")) for text in strings)
