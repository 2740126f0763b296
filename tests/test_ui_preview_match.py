"""The preview and the tree follow the list's search: the preview shows the highlighted
session's first match (scrolled into view, highlighted, a clipped body cut around it), and
Ctrl+T opens the tree on it.  Real files in temp dirs, a real index, Textual Pilot."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_harness import picker_app, screen_of, searched, settle, wait_until

from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.widgets.context_preview import ContextPreview, build_preview
from seance.app.widgets.preview_body import PreviewBody
from seance.core.session import read_session

CWD = "/work/demo/match"
CORPUS_FILE = "wild/alhajjemohammad44-stack__93-coffee-shop/2026-07-05T02-10-57-253Z_019f300b-0864-715c-9025-dd00e574139c.jsonl"


def write(path: Path, *entries: dict, cwd: str = CWD) -> Path:
    """A pi v3 session of `entries` (a chain, ids e0, e1, ...)."""
    header = {"type": "session", "version": 3, "id": path.stem, "timestamp": "2026-05-01T00:00:00.000Z", "cwd": cwd}
    path.parent.mkdir(parents=True, exist_ok=True)
    lines, parent = [header], None
    for number, entry in enumerate(entries):
        lines.append({"id": f"e{number}", "parentId": parent, "timestamp": "2026-05-01T00:00:01.000Z", **entry})
        parent = entry.get("id", f"e{number}")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def message(role: str, content: object, **extra: object) -> dict:
    return {"type": "message", "message": {"role": role, "content": content, "timestamp": 1_777_593_601_000, **extra}}


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


def call(call_id: str, command: str) -> dict:
    return message(
        "assistant",
        [{"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}],
        stopReason="toolUse",
    )


def result(call_id: str, output: str, *, error: bool = False) -> dict:
    return message("toolResult", text(output), toolCallId=call_id, toolName="bash", isError=error)


def chatter(count: int) -> list[dict]:
    """`count` user/assistant turns of filler (pushes a match away from the context's end)."""
    turns: list[dict] = []
    for number in range(count):
        turns += [message("user", text(f"step {number}: go on")), message("assistant", text(f"done step {number}"))]
    return turns


def body_of(pilot: Pilot) -> PreviewBody:
    return pilot.app.screen.query_one(PreviewBody)


def shown_lines(pilot: Pilot) -> list[str]:
    """The preview body's lines in view, as plain text."""
    body = body_of(pilot)
    return [body.render_line(y).text for y in range(body.size.height)]


def marked(preview: ContextPreview) -> list[str]:
    """The texts the pane's body shows in its match style (`context-preview--match`)."""
    style = preview.get_visual_style("context-preview--match", partial=True)
    content = preview.query_one(PreviewBody).content
    return [content.plain[span.start : span.end] for span in content.spans if span.style == style]


async def preview_ready(pilot: Pilot) -> ContextPreview:
    preview = pilot.app.screen.query_one(ContextPreview)
    await wait_until(pilot, lambda: not preview.pending and preview.document is not None)
    await settle(pilot)
    return preview


# -- the case, on a copy of a corpus file -------------------------------------------


@pytest.fixture
def corpus_root(corpus: Path, tmp_path: Path) -> Path:
    """The corpus session where "Cannot find module" is in a failed bash result 148 messages
    before the leaf, past the first 691 characters of its output (copied: browsing reads it)."""
    root = tmp_path / "sessions" / "--coffee--"
    root.mkdir(parents=True)
    shutil.copy(corpus / CORPUS_FILE, root / Path(CORPUS_FILE).name)
    return tmp_path / "sessions"


async def test_cannot_find_module_shows_in_the_preview_and_ctrl_t_lands_on_it(corpus_root: Path, tmp_path: Path) -> None:
    app = picker_app(corpus_root, scope="all", cache_dir=tmp_path / "cache")
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await searched(pilot, '"Cannot find module"')
        assert len(screen.session_list.rows) == 1
        preview = await preview_ready(pilot)
        lines = shown_lines(pilot)
        assert any(line.startswith("Error: Cannot find module") for line in lines), lines
        assert any("earlier character" in line for line in lines), "the body is cut around the match, and says so"
        assert marked(preview) and {part.lower() for part in marked(preview)} == {"cannot find module"}
        doc = preview.document
        assert doc is not None and doc.at_match and doc.blocks[0].kind == "error"

        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, lambda: tree.model is not None)
        await settle(pilot)
        assert tree.model is not None and tree.session is not None
        entry = tree.session.tree.by_id[tree.model.selected_id]
        assert entry["message"]["role"] == "toolResult" and entry["message"]["isError"]
        assert "Cannot find module" in json.dumps(entry)
        assert tree.model.query == "", "the tree is not filtered: every entry is still there"
        preview = await preview_ready(pilot)
        assert any("Cannot find module" in line for line in shown_lines(pilot)), "the tree's preview shows it too"

        await pilot.press("escape")
        await settle(pilot)
        assert screen_of(pilot) is screen and screen.search_input.value == '"Cannot find module"'
