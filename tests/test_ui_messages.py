"""Honest status and messages in the UI (issue 13): the skipped count and Alt+S, the sort in
effect, why a named session matched, the tree's loading state, what a resume at a user
message really gives, and no stale "undo" toast after an undo."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from test_ui_tree import TreeApp
from test_ui_tree import settle as settle_tree
from test_ui_tree import write_session as write_tree_session
from textual.widgets import Static
from ui_harness import SIZE, picker_app, screen_of, settle, visible_text
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.app.rows import FIRST_MESSAGE_LABEL, sort_label
from seance.app.screens import session_tree
from seance.app.screens.confirm import ConfirmScreen
from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.screens.skipped import SkippedScreen
from seance.app.widgets.context_preview import ContextPreview, build_preview
from seance.app.widgets.preview_body import PreviewBody
from seance.core.session import load_session


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def status_text(pilot) -> str:
    return screen_of(pilot).status.render().plain


# -- skipped files ---------------------------------------------------------------------------------


async def test_status_counts_skipped_files_and_alt_s_lists_them(root: Path) -> None:
    bucket = root / "--junk--"
    bucket.mkdir()
    junk = [bucket / f"{'a-rather-long-file-name-' * 4}{number}.jsonl" for number in range(12)]
    for path in junk:
        path.write_text("not json\n")
    async with picker_app(root).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        status = status_text(pilot)
        assert "12 skipped (Alt+S)" in status
        assert str(bucket) not in status, "no path to cut off: the count and the key say it all"
        await pilot.press("alt+s")
        await pilot.pause()
        dialog = pilot.app.screen
        assert isinstance(dialog, SkippedScreen)
        assert "12 files skipped" in str(dialog.query_one("#seance-dialog-title").render())
        lines = [str(row.render()) for row in dialog.query(".seance-help-row").results(Static)]
        assert sorted(line.split("  ", 1)[0] for line in lines) == sorted(str(path) for path in junk)
        assert all(line.split("  ", 1)[1] for line in lines), "each with its reason"
        await pilot.press("escape")
        await pilot.pause()
        screen_of(pilot)  # back on the list


async def test_no_skipped_count_when_nothing_was_skipped(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "skipped" not in status_text(pilot)
        await pilot.press("alt+s")
        await pilot.pause()
        assert isinstance(pilot.app.screen, SkippedScreen)
        assert "Nothing skipped" in str(pilot.app.screen.query_one("#seance-dialog-title").render())


# -- the sort in effect ----------------------------------------------------------------------------


def test_sort_label_names_the_order_in_effect() -> None:
    assert sort_label("threaded", False) == "Threaded"
    assert sort_label("threaded", True) == "Relevance (query)"
    assert sort_label("recent", True) == "Recent"
    assert sort_label("relevance", True) == "Relevance"
    assert sort_label("relevance", False) == "Recent (no query)"


async def test_a_query_shows_relevance_as_the_sort(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Sort: Threaded" in status_text(pilot)
        await pilot.press(*"auth")
        await settle(pilot)
        assert "Sort: Relevance (query)" in status_text(pilot)
        await pilot.press("ctrl+s")
        assert "Sort: Recent ·" in status_text(pilot)
        await pilot.press("ctrl+s", "ctrl+s")
        assert "Sort: Relevance ·" in status_text(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert "Sort: Recent (no query)" in status_text(pilot)


# -- why a named session matched ---------------------------------------------------------------------


async def test_a_hit_in_the_first_message_of_a_named_session_shows_that_message(root: Path) -> None:
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"notes")  # in "write the release notes", the first message of "Release 1.0"
        await settle(pilot)
        (row,) = screen_of(pilot).session_list.rows
        assert row.summary.title == "Release 1.0" and row.has_snippet
        text, spans = row.snippet()
        assert text == FIRST_MESSAGE_LABEL + "write the release notes"
        assert [text[start:end] for start, end in spans] == ["notes"]
        lines = visible_text(pilot)
        assert lines[0].startswith("› Release 1.0")
        assert lines[1].strip() == "first message: write the release notes"
        await pilot.press(*" ", "escape")
        await pilot.press(*"release")  # in the name too: the title says why, no second line
        await settle(pilot)
        named = [row for row in screen_of(pilot).session_list.rows if row.summary.name]
        assert named and not named[0].has_snippet


# -- delete toasts ---------------------------------------------------------------------------------


async def test_undoing_a_delete_withdraws_its_toast(root: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = session_path(root, Spec("s-named", PROJECT))
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        pilot.app.notify("a host's own toast", title="Host")
        await pilot.press("down", "down", "ctrl+d")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert not path.exists()
        assert [note.title for note in pilot.app._notifications] == ["Host", "Deleted"]
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert path.exists()
        assert [note.title for note in pilot.app._notifications] == ["Host"], "only seance's stale toast went"


# -- the tree: loading, and a user message's resume ------------------------------------------------------


async def test_the_tree_preview_says_loading_until_the_session_is_read(tmp_path: Path, monkeypatch) -> None:
    path = write_tree_session(tmp_path / "session.jsonl")
    release = threading.Event()
    real_read = session_tree.read_session

    def slow_read(target, **options):  # the real read, held back as a 1 MB file would be
        release.wait(10)
        return real_read(target, **options)

    monkeypatch.setattr(session_tree, "read_session", slow_read)
    app = TreeApp(path)
    async with app.run_test(size=(120, 32)) as pilot:
        await pilot.pause(0.3)
        preview = app.screen.query_one(ContextPreview)
        body = preview.query_one("#seance-preview-body", PreviewBody).content.plain
        assert body == "Loading session…" and "No session selected" not in body
        release.set()
        await settle_tree(pilot)
        assert preview.document is not None and preview.document.blocks


async def test_a_user_message_previews_the_context_before_it_and_the_editor_text(tmp_path: Path) -> None:
    path = write_tree_session(tmp_path / "session.jsonl")
    app = TreeApp(path)
    async with app.run_test(size=(120, 32)) as pilot:
        await settle_tree(pilot)
        screen = app.screen
        assert isinstance(screen, SessionTreeScreen) and screen.model is not None
        for _ in range(len(screen.model.rows)):
            if screen.model.selected_id == "uA2":
                break
            await pilot.press("up")
        assert screen.model.selected_id == "uA2"
        await settle_tree(pilot)
        doc = screen.query_one(ContextPreview).document
        assert doc is not None and doc.editor == "Now add tests for approach A"
        assert all("Now add tests" not in block.body for block in doc.blocks), "not in the context"
        assert doc.blocks[0].kind == "compaction" and doc.blocks[-1].body == "Approach A done.", "up to its parent"
        body = screen.query_one("#seance-preview-body", PreviewBody).content.plain
        assert body.rstrip().endswith("Enter: this message goes to the editor\nNow add tests for approach A")


# -- preview wording -------------------------------------------------------------------------------------


def test_preview_counts_are_plural_only_when_more_than_one(tmp_path: Path) -> None:
    path = write_tree_session(tmp_path / "session.jsonl")
    session = load_session(path)
    doc = build_preview(session, "u1")  # "Refactor the parser [bold]x[/] please": 38 characters
    assert dict(doc.header)["context"] == "~9 tokens · 1 message"
    doc = build_preview(session, None)
    assert dict(doc.header)["context"] == "~0 tokens · 0 messages"


def test_a_text_a_little_over_the_limit_is_shown_whole() -> None:
    from seance.app.widgets.context_preview import BODY_LIMIT, _clip

    almost = "x" * (BODY_LIMIT + 4)
    assert _clip(almost, BODY_LIMIT) == almost, "no '… (4 more characters)'"
    long = "y" * (BODY_LIMIT * 2)
    assert _clip(long, BODY_LIMIT).endswith(f"\n… ({BODY_LIMIT:,} more characters)")
    lines = "\n".join(f"line {number}" for number in range(7))
    assert _clip(lines, 1000, 6) == lines, "one more line is shown, not hidden behind a notice"
    many = "\n".join(f"line {number}" for number in range(20))
    assert _clip(many, 1000, 6).endswith("more characters)")
