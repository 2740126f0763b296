"""`tree --text`'s rows of messages read as they are parsed (`summary.message_row`, with each
message's kind: `KindedFacts`) make a
prompt's or a reply's row from its usual text, and a bash result's row from its call's
usual command, without the general path's sanitisers and cuts: each equals the general
path's row (`entry_summary_text(summarize(entry, calls), 100)`) for texts of every length
around the cuts (200 and 100 characters) with spaces, runs of spaces, controls, bidi marks
and wide characters placed at those cuts, and the usual texts take the quick way.  `show`'s
texts read with their kinds (`context.MESSAGE_TEXTS`) equal `message_text` and `message_kind`."""

from __future__ import annotations

import random
from typing import Any

from seance.core.context import MESSAGE_TEXTS
from seance.core.entries import message_kind
from seance.core.summary import (
    _clean_bash_row,
    _clean_row,
    entry_summary_text,
    message_row,
    message_row_texts,
    summarize,
)
from seance.core.text import message_text

# What may stand at a cut: a letter, a space, a run of spaces, a control, a bidi mark, a
# wide character, the ellipsis the cut writes, a newline.
_PIECES = ["a", "b", " ", "  ", "\x1b", "\u202e", "界", "…", "\n", "\t", "\u3000"]


def _text(rng: random.Random) -> str:
    """A text of a length around the cuts, with odd characters at random places."""
    length = rng.choice([0, 1, 2, rng.randrange(3, 90), *range(88, 104), *range(190, 212), rng.randrange(212, 900)])
    chars = ["x" if rng.random() < 0.8 else "y z"[rng.randrange(3)] for _ in range(length)]
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        if chars:
            chars[rng.randrange(len(chars))] = rng.choice(_PIECES)
    if chars and rng.random() < 0.2:
        chars[rng.choice([0, -1, min(len(chars) - 1, rng.choice([93, 94, 99, 100, 188, 189, 199, 200]))])] = " "
    return "".join(chars)


def _message(rng: random.Random, text: str) -> dict[str, Any]:
    roll = rng.randrange(7)
    if roll == 6:  # (a role of no kind of its own, an assistant of blank or no text)
        return rng.choice(
            [
                {"role": "bashExecution", "command": text},
                {"role": "assistant", "content": [{"type": "text", "text": " \n"}], "stopReason": "error"},
                {"role": "assistant", "content": None, "stopReason": rng.choice(["stop", "toolUse", "length"])},
            ]
        )
    if roll == 0:
        return {"role": "user", "content": text}
    if roll == 1:
        return {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image", "data": "x"}]}
    if roll == 2:
        return {"role": "assistant", "content": text, "stopReason": rng.choice(["stop", "aborted", None])}
    blocks: list[Any] = [{"type": "text", "text": text}]
    if roll >= 4:
        call_id = f"c{rng.randrange(3)}"
        blocks.append({"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": text}})
    if roll == 5:
        blocks.insert(0, {"type": "text", "text": rng.choice(["", " ", "more"])})
        blocks.append({"type": "toolCall", "id": 7, "name": "read"})  # (no string id: no call)
    message = {"role": "assistant", "content": blocks, "stopReason": "toolUse"}
    if rng.random() < 0.2:
        message["errorMessage"] = "boom"
    return message


def _general_row(message: dict[str, Any], calls: dict[str, Any] | None = None) -> str:
    return entry_summary_text(summarize({"type": "message", "message": message}, calls), 100)


def test_a_message_rows_read_as_parsed_equal_the_general_path_3000_trials() -> None:
    rng = random.Random(41)
    for trial in range(3000):
        message = _message(rng, _text(rng))
        code, fact = message_row.with_kind(message)
        row = fact[0] if isinstance(fact, tuple) else fact
        assert row == _general_row(message), (trial, message)
        assert code == message_kind(message) and fact == message_row(message), (trial, message)


def test_a_bash_results_row_equals_the_general_path_for_commands_around_the_cut_3000_trials() -> None:
    rng = random.Random(43)
    for trial in range(3000):
        command: Any = _text(rng)
        arguments: Any = {"command": command}
        name: Any = "bash"
        roll = rng.randrange(10)
        if roll == 0:
            arguments = {"command": rng.choice([None, 5, ["ls"]])}
        elif roll == 1:
            arguments = rng.choice([None, "ls", []])
        elif roll == 2:
            name = rng.choice(["read", "Bash", None])
        call = {"type": "toolCall", "id": "c1", "name": name, "arguments": arguments}
        reply = {"role": "assistant", "content": [call], "stopReason": "toolUse"}
        result = {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": "out"}
        rows = list(message_row_texts([message_row(reply), message_row(result)]))
        assert rows[1] == _general_row(result, {"c1": call}), (trial, call)


def test_the_usual_texts_take_the_quick_way() -> None:
    """A clean prompt, reply or command is made by the quick rows (None: the general path)."""
    assert _clean_row("user: ", "fix the parser") == "user: fix the parser"
    assert _clean_row("user: ", "word " * 60) == ("user: " + "word " * 60)[:99] + "…"
    assert _clean_row("user: ", " padded") is None and _clean_row("user: ", "two  spaces") is None
    assert _clean_row("user: ", "line\nbreak") is None and _clean_row("user: ", "") is None
    call = {"type": "toolCall", "id": "c", "name": "bash", "arguments": {"command": "ls -la"}}
    assert _clean_bash_row(call) == "[bash: ls -la]"
    assert _clean_bash_row({**call, "arguments": {"command": "x" * 60}}) == f"[bash: {'x' * 50}...]"
    assert _clean_bash_row({**call, "arguments": {"command": "a\tb"}}) is None
    assert _clean_bash_row({**call, "name": "read"}) is None
    # A reply's clean bash call is kept as its results' row (made while the call is read), any
    # other as the call itself.
    read = {**call, "id": "r", "name": "read", "arguments": {"path": "/p/f.py"}}
    fact = message_row({"role": "assistant", "content": [{"type": "text", "text": "ok"}, call, read]})
    assert fact == ("assistant: ok", {"c": "[bash: ls -la]", "r": read})


def test_shows_texts_read_with_their_kinds_equal_message_text_and_message_kind_3000_trials() -> None:
    """`show` reads each message's text and kind in one look (`context.MESSAGE_TEXTS`)."""
    rng = random.Random(47)
    odd: list[dict[str, Any]] = [
        {"role": "compactionSummary", "summary": "s"},
        {"role": "branchSummary", "summary": 5},
        {"role": "assistant", "content": [{"type": "text", "text": "\u3000"}, {"type": "text", "text": "\n"}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}], "stopReason": "aborted"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, "junk", {"type": "text", "text": "b"}]},
        {"role": "toolResult", "content": "plain"},
    ]
    for trial in range(3000):
        message = rng.choice(odd) if trial % 5 == 0 else _message(rng, _text(rng))
        assert MESSAGE_TEXTS.with_kind(message) == (message_kind(message), message_text(message)), (trial, message)
        assert MESSAGE_TEXTS(message) == message_text(message)
