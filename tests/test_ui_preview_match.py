"""The preview and the tree follow the list's search: the preview shows the highlighted
session's first match (scrolled into view, highlighted, a clipped body cut around it), and
Ctrl+T opens the tree on it.  Real files in temp dirs, a real index, Textual Pilot."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot
from ui_harness import picker_app, screen_of, searched, settle, wait_until

from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.widgets.context_preview import ContextPreview, PreviewDoc, build_preview
from seance.app.widgets.preview_body import PreviewBody
from seance.core.session import read_session

CWD = "/work/demo/match"
CORPUS_FILE = (
    "wild/alhajjemohammad44-stack__93-coffee-shop/2026-07-05T02-10-57-253Z_019f300b-0864-715c-9025-dd00e574139c.jsonl"
)


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
    style = preview.get_visual_style("context-preview--match")
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


async def test_cannot_find_module_shows_in_the_preview_and_ctrl_t_lands_on_it(
    corpus_root: Path, tmp_path: Path
) -> None:
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


# -- sessions written for the cases ---------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Four sessions in one project folder (each found by the queries below, and only it)."""
    folder = tmp_path / "sessions" / "--work-demo-match--"
    write(
        folder / "fields.jsonl",
        message("user", text("check the zoo")),
        call("c1", "ls zoo"),
        result("c1", "Error: wombat not found", error=True),
        message("user", text("the wombat again")),
        message("assistant", text("looked everywhere")),
    )
    far = "\n".join(f"line {number} ok" for number in range(60)).replace("line 45 ok", "line 45 zebra-crossing failed")
    write(folder / "far.jsonl", message("user", text("run it")), call("c1", "make"), result("c1", far), *chatter(150))
    hostile = "ok [bold]zebras[/] \x1b[32mzebras\x1b[0m\x07 [32m zebras\x00end"
    write(folder / "hostile.jsonl", message("user", text("paint it")), call("c1", "paint"), result("c1", hostile))
    write(
        folder / "branches.jsonl",
        message("user", text("start here")),
        message("assistant", text("started")),
        {**message("user", text("try the platypus way")), "id": "p1", "parentId": "e1"},
        {**message("assistant", text("tried")), "id": "p2", "parentId": "p1"},
        {**message("user", text("another way then")), "id": "o1", "parentId": "e1"},
        {**message("assistant", text("done that way")), "id": "o2", "parentId": "o1"},
        {"type": "session_info", "id": "n1", "parentId": "o2", "name": "Quokka plan"},
    )
    return tmp_path / "sessions"


def without_stats(preview: ContextPreview) -> PreviewDoc | None:
    """The pane's document without its stats block (`build_preview` makes none)."""
    doc = preview.document
    return replace(doc, stats=[]) if doc is not None else None


def session_file(root: Path, name: str) -> Path:
    return root / "--work-demo-match--" / f"{name}.jsonl"


async def highlighted_preview(pilot: Pilot, query: str) -> ContextPreview:
    screen = await searched(pilot, query)
    assert len(screen.session_list.rows) == 1, [row.path for row in screen.session_list.rows]
    return await preview_ready(pilot)


@pytest.mark.parametrize(
    ("query", "earlier", "first", "marked_blocks", "word"),
    [
        ("error:wombat", 2, "error", [True, False, False], "wombat"),  # narrowed: only the error's text
        ("wombat", 2, "error", [True, True, False], "wombat"),  # the first from the top; every match marked
        ("user:wombat", 3, "user", [True, False], "wombat"),
    ],
)
async def test_a_field_prefix_finds_and_marks_only_its_field(
    root: Path, tmp_path: Path, query: str, earlier: int, first: str, marked_blocks: list[bool], word: str
) -> None:
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        preview = await highlighted_preview(pilot, query)
        doc = preview.document
        assert doc is not None and doc.at_match and doc.earlier == earlier
        assert doc.blocks[0].kind == first
        assert [block.marked for block in doc.blocks] == marked_blocks
        assert {part.lower() for part in marked(preview)} == {word}
        lines = shown_lines(pilot)
        top = lines[0] if earlier else lines[0].strip()
        assert top.startswith(f"… {earlier} earlier messages not shown" if earlier else first)


@pytest.mark.parametrize("query", ["re:che+ck", "zoo"])
async def test_a_hit_in_the_title_leaves_the_preview_and_the_tree_at_the_leaf(
    root: Path, tmp_path: Path, query: str
) -> None:
    """A session found by its title (a regex matches only titles; `zoo` is in its first message
    as well as a call) was found for what it is: its preview and tree stay at the leaf, where
    it resumes (pi's `/seance words`, then Ctrl+T and Up, resumes near the end)."""
    path = session_file(root, "fields")
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        preview = await highlighted_preview(pilot, query)
        assert without_stats(preview) == build_preview(read_session(path))
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, lambda: tree.model is not None)
        await settle(pilot)
        assert tree.model is not None and tree.model.selected_id == read_session(path).tree.leaf_id


async def test_a_match_beyond_a_clipped_body_and_the_tail_is_shown_cut_around_it(root: Path, tmp_path: Path) -> None:
    path = session_file(root, "far")
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        preview = await highlighted_preview(pilot, '"zebra-crossing"')
        lines = shown_lines(pilot)
        assert lines[0].startswith("… 2 earlier messages not shown")
        window = lines[lines.index(next(line for line in lines if line.startswith("result [bash: make]"))) :]
        assert window[1].startswith("… (") and "earlier characters)" in window[1]
        assert window[2].startswith("line 45 zebra-crossing failed")
        assert window[8].startswith("… (") and "more characters)" in window[8], "6 lines, then what is left out"
        assert marked(preview) == ["zebra-crossing"]
        doc = preview.document
        assert doc is not None and doc.later == 303 - 2 - 200, "the messages after the shown 200 are counted"
        assert preview.query_one(PreviewBody).content.plain.endswith("… 101 later messages not shown")

        await pilot.press("ctrl+u")  # the query cleared: the preview is today's again
        await settle(pilot)
        preview = await preview_ready(pilot)
        assert without_stats(preview) == build_preview(read_session(path))
        assert not marked(preview)


async def test_markup_escapes_and_controls_around_a_match_stay_plain_text(root: Path, tmp_path: Path) -> None:
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        preview = await highlighted_preview(pilot, "zebras")
        content = preview.query_one(PreviewBody).content
        assert "ok [bold]zebras[/] zebras [32m zebrasend" in content.plain
        assert not any(char in content.plain for char in "\x1b\x07\x00")
        assert marked(preview) == ["zebras", "zebras", "zebrasend"]  # (a word prefix, as the index matched it)
        assert any("ok [bold]zebras[/] zebras [32m zebrasend" in line for line in shown_lines(pilot))

        preview = await highlighted_preview(pilot, '"[bold]zebras"')  # the phrase's words, not markup
        assert marked(preview) == ["bold]zebras"]


async def test_off_the_leaf_s_path_the_preview_is_as_without_a_query_and_the_tree_opens_on_it(
    root: Path, tmp_path: Path
) -> None:
    path = session_file(root, "branches")
    async with picker_app(root, scope="all", cache_dir=tmp_path / "cache").run_test(size=(160, 45)) as pilot:
        preview = await highlighted_preview(pilot, "platypus")
        assert without_stats(preview) == build_preview(read_session(path)), "nothing on the context: as today"
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, lambda: tree.model is not None)
        await settle(pilot)
        assert tree.model is not None and tree.model.selected_id == "p1", "the branch that holds the match"
        await pilot.press("escape")
        await settle(pilot)

        await highlighted_preview(pilot, "quokka")  # only the name matches: the leaf, as today
        await pilot.press("ctrl+t")
        tree = pilot.app.screen
        assert isinstance(tree, SessionTreeScreen)
        await wait_until(pilot, lambda: tree.model is not None)
        await settle(pilot)
        assert tree.model is not None and tree.model.selected_id == "o2"
