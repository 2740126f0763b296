"""The preview's look for a query's first match (`_matches`, `_ContextScan`): found from
the top, each term's answer kept for the next key typed, a narrowed term looked for from its
wider one's answer on; what a message shows is what is looked in (image messages, nested
tool arguments as deep as the index reads them)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_ui_preview_match import call, chatter, message, result, text, write

from seance.app.widgets import context_preview as cp
from seance.core.context import ContextMessage, build_session_context
from seance.core.fulltext import ARGUMENT_DEPTH, arguments_text
from seance.core.search import TextMarks, parse_query
from seance.core.session import read_session


def test_a_user_message_with_an_image_keeps_its_marks_aligned() -> None:
    marks = TextMarks.of("zebra")
    for said, at in (("zebra here", 0), (" zebra here", 1), ("\tzebra here", 4)):  # (a tab: 4 spaces)
        content = [{"type": "text", "text": said}, {"type": "image", "data": "", "mimeType": "image/png"}]
        block = cp._message_block(ContextMessage("user", {"role": "user", "content": content}, "e1"), {}, marks)
        assert block.body.endswith("\n[1 image]")
        assert block.body_marks == ((at, at + 5),), said


def nested(depth: int, leaf: object) -> object:
    for _ in range(depth):
        leaf = {"k": leaf}
    return leaf


@pytest.mark.parametrize("depth", range(1, ARGUMENT_DEPTH + 2))  # (under the arguments object)
def test_a_match_in_tool_arguments_as_deep_as_the_index_reads_is_found(tmp_path: Path, depth: int) -> None:
    arguments = nested(depth, "zebra")
    assert "zebra" in arguments_text(arguments), "the index reads it"
    deep = message("assistant", [{"type": "toolCall", "id": "c1", "name": "mytool", "arguments": arguments}])
    path = write(tmp_path / "s.jsonl", message("user", text("go")), deep, *chatter(150))
    doc = cp.build_preview(read_session(path), query=parse_query("tool:zebra"))
    assert doc.at_match and doc.earlier == 1 and doc.blocks[0].call_marks[0]


def test_each_term_s_first_match_is_kept_and_a_narrower_term_starts_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        message("user", text("a promise")),
        *chatter(40),
        call("c1", "ls"),
        result("c1", "prompt"),
        *chatter(40),
    )
    session = read_session(path)
    made: list[object] = []
    real = cp._message_block
    monkeypatch.setattr(cp, "_message_block", lambda *args: made.append(args[0]) or real(*args))
    first = cp.build_preview(session, query="pro")
    assert first.at_match and first.earlier == 0
    made.clear()
    again = cp.build_preview(session, query="pro")
    assert again == first and len(made) == len(first.blocks), "the match is not looked for again"
    made.clear()
    narrower = cp.build_preview(session, query="prompt")
    assert narrower.at_match and narrower.blocks[0].body == "prompt"
    looked = len(made) - len(narrower.blocks)
    assert 0 < looked <= 3, "looked for from `pro`'s match on"
    assert narrower == cp.build_preview(read_session(path), query="prompt"), "as a fresh look finds it"
    none = cp.build_preview(session, query="zzz")
    assert not none.at_match
    made.clear()
    assert not cp.build_preview(session, query="zzzz").at_match
    assert len(made) == len(none.blocks), "`zzz` matched nowhere: neither does `zzzz`, nothing looked at"


def test_the_context_shown_from_a_match_counts_what_is_left_out(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", *chatter(30), message("user", text("zebra")), *chatter(300))
    session = read_session(path)
    doc = cp.build_preview(session, query="zebra")
    whole = build_session_context(session).messages
    assert doc.at_match and doc.earlier == 60 and len(doc.blocks) == cp.TAIL_MESSAGES
    assert doc.earlier + len(doc.blocks) + doc.later == len(whole)
    assert json.dumps(doc.header).count(f"{len(whole)} messages") == 1


def tool_call(call_id: str, name: str, **arguments: object) -> dict:
    return message("assistant", [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}])


@pytest.mark.parametrize(
    ("query", "first_call"),
    [
        ("tool:npm", "[read: /p/npm/notes.md]"),  # the index files a call's command under bash only
        ("bash:npm", "[bash: npm test]"),
        ("npm", "[bash: npm test]"),  # a plain term: any field
        ("tool:bash", "[bash: npm test]"),  # the tool's name is in `tool`
    ],
)
def test_a_call_line_is_in_the_fields_the_index_files_the_call_under(
    tmp_path: Path, query: str, first_call: str
) -> None:
    path = write(
        tmp_path / "s.jsonl",
        message("user", text("go")),
        tool_call("c1", "bash", command="npm test"),
        *chatter(3),
        tool_call("c2", "read", path="/p/npm/notes.md"),
        *chatter(120),
    )
    doc = cp.build_preview(read_session(path), query=parse_query(query))
    assert doc.at_match and doc.blocks[0].calls == (first_call,)
    assert doc.blocks[0].call_marks[0], "and marked"


def test_the_kept_scan_goes_with_its_session(tmp_path: Path) -> None:
    """What the look keeps (a long context's texts) is not kept past the session's life."""
    import gc

    path = write(tmp_path / "s.jsonl", *chatter(20), message("user", text("zebra")))
    session = read_session(path)
    assert cp.build_preview(session, query="zebra").at_match
    assert cp._scan is not None and cp._scan.session() is session
    del session
    gc.collect()
    assert cp._scan is None
