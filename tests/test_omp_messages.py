"""oh-my-pi's own message roles, as omp writes them: every view shows them, search finds them.

omp persists, besides pi's roles, `pythonExecution` (a `$` Python cell the user ran: `code`,
`output`, like pi's `!command` `bashExecution`), `developer` (a prompt the agent made itself:
`content`) and `fileMention` (the files a prompt's `@path` read: `files: [{path, content}]`,
sent to the model as `<file path="…">content</file>`) — see its `session/messages.ts`.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from seance.cli import main
from seance.core.metadata import scan_file
from seance.core.pathtotals import message_size
from seance.core.session import load_session
from seance.core.summary import summarize

STAMP = "2026-07-02T10:00:00.000Z"
CELL = {
    "role": "pythonExecution",
    "code": "print(zebrafish_count)",
    "output": "42 zebrafish",
    "exitCode": 0,
    "cancelled": False,
    "truncated": False,
    "timestamp": 1,
}


def _omp_session(path: Path, *messages: dict) -> Path:
    """An oh-my-pi session (title slot-less header with a title, omp's model_change) of `messages`."""
    lines = [
        {"type": "session", "version": 3, "id": "0194-omp", "title": "cells", "timestamp": STAMP, "cwd": "/p"},
        {"type": "model_change", "id": "m0", "parentId": None, "timestamp": STAMP, "model": "anthropic/opus"},
    ]
    for index, message in enumerate(messages, start=1):
        lines.append({"type": "message", "id": f"m{index}", "parentId": f"m{index - 1}", "timestamp": STAMP})
        lines[-1]["message"] = message
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def test_a_python_cell_is_shown_exported_counted_and_searched(tmp_path: Path, capsys, monkeypatch) -> None:
    """A `$` Python cell reads as pi's `!command` does: `[python]: code` in the tree, the code
    and its output in the preview and the export, both counted as context and searchable
    (`bash:` the code, `result:` the output)."""
    from seance.app.widgets.context_preview import build_preview

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    root = tmp_path / "sessions"
    path = _omp_session(root / "-p" / "s.jsonl", CELL, {"role": "user", "content": "hello"})
    session = load_session(path)
    cell = session.tree.by_id["m1"]
    assert summarize(cell).plain() == "[python]: print(zebrafish_count)"
    block = build_preview(session).blocks[0]
    assert (block.title, block.body) == ("[python]: print(zebrafish_count)", "42 zebrafish")
    assert message_size(CELL) == len(CELL["code"]) + len(CELL["output"])
    texts: list[tuple[str, str]] = []
    scan_file(path, sink=lambda field, text: texts.append((field, text)))
    assert ("bash", CELL["code"]) in texts and ("result", CELL["output"]) in texts
    assert main(["export", str(path), "--format", "md"]) == 0
    exported = capsys.readouterr().out
    assert "\nprint(zebrafish_count)\n" in exported and "\n42 zebrafish\n" in exported
    for query in ("zebrafish_count", "bash:zebrafish_count", "result:zebrafish"):
        assert main(["ls", "--root", str(root), "--all", "--query", query, "--json"]) == 0
        assert [row["path"] for row in orjson.loads(capsys.readouterr().out)] == [str(path)], query


def test_pi_s_bash_execution_reads_as_before(tmp_path: Path) -> None:
    """(pi's `!command` is the same row as before: `[bash]: command`.)"""
    message = {"role": "bashExecution", "command": "ls -la", "output": "total 0", "exitCode": 0}
    session = load_session(_omp_session(tmp_path / "s.jsonl", message))
    assert summarize(session.tree.by_id["m1"]).plain() == "[bash]: ls -la"


def test_developer_prompts_and_file_mentions_are_shown_and_searched(tmp_path: Path, capsys) -> None:
    """omp's tree shows a developer prompt as `developer: text`; a file mention's paths and
    contents are what the model read (`show` gives that text, as omp sends it); both searchable."""
    from seance.app.widgets.context_preview import build_preview

    mention = {"role": "fileMention", "files": [{"path": "src/kangaroo.py", "content": "def hop(): pass"}]}
    developer = {"role": "developer", "content": [{"type": "text", "text": "platypus reminder"}], "timestamp": 2}
    root = tmp_path / "sessions"
    path = _omp_session(root / "-p" / "s.jsonl", mention, developer)
    session = load_session(path)
    rows = [summarize(session.tree.by_id[entry_id]).plain() for entry_id in ("m1", "m2")]
    assert rows == ["[fileMention]: src/kangaroo.py", "developer: platypus reminder"]
    assert [block.body for block in build_preview(session).blocks] == [
        '<file path="src/kangaroo.py">\ndef hop(): pass\n</file>',
        "platypus reminder",
    ]
    assert main(["show", str(path), "--json"]) == 0
    texts = [message["text"] for message in orjson.loads(capsys.readouterr().out)["messages"]]
    assert texts == ['<file path="src/kangaroo.py">\ndef hop(): pass\n</file>', "platypus reminder"]
    for query in ("result:hop", "kangaroo", "custom:platypus"):
        assert main(["ls", "--root", str(root), "--all", "--query", query, "--json"]) == 0
        assert [row["path"] for row in orjson.loads(capsys.readouterr().out)] == [str(path)], query


@pytest.mark.parametrize("agent_data", ["profiles/work/agent", "xdg/omp"])
def test_an_exported_image_s_blob_is_found_beside_the_session_s_own_root(tmp_path: Path, capsys, agent_data) -> None:
    """omp keeps a session's externalised images in `blobs/` beside its sessions root (the
    same agent data dir): a profile's in `~/.omp/profiles/<name>/agent/blobs`, under XDG in
    `$XDG_DATA_HOME/omp/blobs`.  The export sizes the image from that blob, not from the
    default profile's store (where it is not: "blob not found")."""
    import hashlib

    raw = b"\x89PNG" + bytes(3000)
    agent = tmp_path / agent_data
    (agent / "blobs").mkdir(parents=True)
    (agent / "blobs" / hashlib.sha256(raw).hexdigest()).write_bytes(raw)
    image = {"type": "image", "mimeType": "image/png", "data": f"blob:sha256:{hashlib.sha256(raw).hexdigest()}"}
    user = {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
    path = _omp_session(agent / "sessions" / "-p" / "s.jsonl", user)
    assert main(["export", str(path), "--format", "md"]) == 0
    exported = capsys.readouterr().out
    assert "image/png, 3 KB" in exported and "blob not found" not in exported


def test_omp_bookkeeping_rows_say_what_they_record(tmp_path: Path, capsys) -> None:
    """The tree (and `tree --text`, which reads only what rows need) names omp's bookkeeping as
    omp's tree does, `/clear`'s boundary as what it does, instead of a bare `[type]`."""
    lines = [
        {"type": "session", "version": 3, "id": "0196-omp", "title": "t", "timestamp": STAMP, "cwd": "/p"},
        {"type": "credential_pin", "id": "k1", "parentId": None, "provider": "anthropic", "hash": "ab"},
        {"type": "service_tier_change", "id": "k2", "parentId": "k1", "serviceTier": {"openai": "flex"}},
        {"type": "service_tier_change", "id": "k3", "parentId": "k2", "serviceTier": None},
        {"type": "model_usage", "id": "k4", "parentId": "k3", "purpose": "composer-prediction", "usage": {}},
        {"type": "reset_boundary", "id": "k5", "parentId": "k4"},
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps({**line, "timestamp": STAMP}) + b"\n" for line in lines))
    assert main(["tree", str(path), "--text"]) == 0
    rows = [line[2:].split(" ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert rows == [
        "[credential pin: anthropic]",
        "[service tier: openai:flex]",
        "[service tier: (default)]",
        "[model usage: composer-prediction]",
        "[context cleared]",
    ]


@pytest.mark.parametrize(("query", "title"), [("result:hop", "[fileMention]"), ("custom:platypus", "[developer]")])
def test_a_field_query_that_finds_a_file_mention_or_a_developer_prompt_marks_it_in_the_preview(
    tmp_path: Path, query: str, title: str
) -> None:
    """Search keeps a file mention's text under `result:` and a developer prompt under
    `custom:`; the preview of a session such a query found opens at that message and marks
    it, as it does a tool result's or a custom message's (not the context's tail unmarked)."""
    from seance.app.widgets.context_preview import build_preview

    mention = {"role": "fileMention", "files": [{"path": "src/kangaroo.py", "content": "def hop(): pass"}]}
    developer = {"role": "developer", "content": [{"type": "text", "text": "platypus reminder"}]}
    later = [{"role": "user", "content": f"later question {number}"} for number in range(3)]
    session = load_session(_omp_session(tmp_path / "s.jsonl", mention, developer, *later))
    blocks = build_preview(session, query=query, tail=2).blocks
    assert blocks[0].title == title and blocks[0].body_marks, [(block.title, block.body_marks) for block in blocks]
