"""Recall in the picker: what the preview shows of a session, typed into the search, lists
that session (the picker's own path: the index asked on its thread, `search_flow`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_recall import call, message, write
from ui_harness import SIZE, picker_app, searched


@pytest.mark.parametrize(
    "query", ['tool:"write src/b.py"', '"write src/b.py"', "custom:subagent-slash-result", 'error:"peer dep"']
)
async def test_the_picker_lists_the_session_by_what_its_preview_shows(tmp_path: Path, query: str) -> None:
    """A call shown `[write: src/b.py]` after a `read src/b.py` and a `write src/a.py`, its
    content written before its path; a custom message titled by its type; a warning a
    failed run printed after a successful one: each found, the other session not."""
    root = tmp_path / "sessions"
    folder = root / "--p--"
    warning = "WARN peer dep missing"
    write(
        folder / "found.jsonl",
        message("user", "go"),
        call("read", path="src/b.py"),
        call("write", path="src/a.py"),
        call("write", content="x = 1\n", path="src/b.py"),
        {"type": "custom_message", "customType": "subagent-slash-result", "content": "ok", "display": True},
        message("toolResult", [{"type": "text", "text": f"ok\n{warning}"}], toolCallId="c1", isError=False),
        message("toolResult", [{"type": "text", "text": f"{warning}\nexit 1"}], toolCallId="c2", isError=True),
    )
    write(folder / "other.jsonl", message("user", "write the docs for src/b.py"))
    app = picker_app(root, scope="all", cache_dir=tmp_path / "cache")
    async with app.run_test(size=SIZE) as pilot:
        screen = await searched(pilot, query)
        assert [Path(hit.summary.path).stem for hit in screen.model.hits] == ["found"]
