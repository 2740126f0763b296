"""`tree --text`'s rows of messages read as they are parsed (`summary.MessageRows`, with each
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
    MessageRows,
    _clean_bash_row,
    _clean_row,
    entry_summary_text,
    message_row_texts,
    summarize,
    tool_calls_by_id,
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
        code, fact = MessageRows().with_kind(message)
        assert fact == _general_row(message), (trial, message)
        assert code == message_kind(message) and fact == MessageRows()(message), (trial, message)


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
        for order in ((reply, result), (result, reply)):  # (a result read after its call, and before)
            reader = MessageRows()
            facts = list(map(reader, order))
            rows = dict(zip(map(id, order), message_row_texts(facts, reader.calls), strict=True))
            assert rows[id(result)] == _general_row(result, {"c1": call}), (trial, call)


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
    reader = MessageRows()
    fact = reader({"role": "assistant", "content": [{"type": "text", "text": "ok"}, call, read]})
    assert fact == "assistant: ok" and reader.calls == {"c": "[bash: ls -la]", "r": read}
    # A result read after its call gets its row as it is read.
    assert reader({"role": "toolResult", "toolCallId": "c", "content": "x"}) == "[bash: ls -la]"
    assert reader({"role": "toolResult", "toolCallId": "r", "content": "x"}) == "[read: /p/f.py]"
    assert reader.deferred == 0 and not reader.redefined
    reader({"role": "assistant", "content": [call, read]})  # (the same calls again: a block parsed twice)
    assert not reader.redefined
    reader({"role": "assistant", "content": [{**call, "arguments": {"command": "pwd"}}]})  # (another call, same id)
    assert reader.redefined


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


def _tool_message(rng: random.Random) -> dict[str, Any]:
    """A prompt, a reply with calls (ids from a few, each of a few contents: met again with
    the same content or another), or a result (of a call read before it, after it, or never)."""
    roll = rng.randrange(6)
    if roll == 0:
        return {"role": "user", "content": rng.choice(["fix it", "two\nlines", ""])}
    if roll <= 2:
        blocks: list[Any] = [{"type": "text", "text": rng.choice(["ok", "", "a\tb"])}]
        for _ in range(rng.randrange(3)):
            call_id = rng.choice(["c0", "c1", "c2", "c3", 7])
            name, arguments = rng.choice(
                [
                    ("bash", {"command": "ls -la"}),
                    ("bash", {"command": "ls\t-la"}),
                    ("bash", {"command": "x" * 60}),
                    ("read", {"path": "/p/f.py"}),
                    ("edit", {"path": "/p/g.py"}),
                ]
            )
            blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
        return {"role": "assistant", "content": blocks, "stopReason": "toolUse"}
    call_id = rng.choice(["c0", "c1", "c2", "c3", "c9", None])
    return {"role": "toolResult", "toolCallId": call_id, "toolName": rng.choice(["bash", None]), "content": "out"}


def test_tool_results_rows_made_as_read_equal_the_general_path_3000_trials() -> None:
    """A tool result read after its call gets its call's row as it is read; the rows of a
    read equal the general path's (each result's row its id's last call's, `tool_calls_by_id`)
    unless a call was met again with other content (`redefined`: the caller then reads the
    entries), also when a run of messages is read twice (a block the reader parses again
    line by line); the usual session (each result after its only call) is made whole as read."""
    rng = random.Random(53)
    made_as_read = compared = 0
    for trial in range(3_000):
        messages = [_tool_message(rng) for _ in range(rng.randrange(1, 14))]
        reader = MessageRows()
        facts: list[Any] = []
        again = rng.randrange(len(messages)) if rng.random() < 0.3 else -1
        for index, message in enumerate(messages):
            if index == again:  # (a block read up to some message, given up, then read again)
                for other in messages[index : index + rng.randrange(1, 4)]:
                    reader(other)
            facts.append(reader(message))
        entries = [{"type": "message", "id": f"e{index}", "message": message} for index, message in enumerate(messages)]
        expected = [_general_row(message, dict(tool_calls_by_id(entries))) for message in messages]
        if reader.redefined:
            continue
        assert list(message_row_texts(facts, reader.calls)) == expected, (trial, messages)
        compared += 1
        if not reader.deferred:
            assert facts == expected, (trial, messages)
            made_as_read += 1
    assert compared > 1_000 and made_as_read > 150, (compared, made_as_read)
