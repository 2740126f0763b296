"""Pilot tests of pins and tags in the session list: Alt+P, Alt+T, the row marks, tag:/is:."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input
from ui_harness import SIZE, cursor_title, picker_app, screen_of, settle, titles, visible_text
from ui_sessions import make_root

from seance.app.screens.prompt import PromptScreen
from seance.core.marks import Mark, MarkStore


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def session_files(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*.jsonl")}


async def test_alt_p_pins_and_unpins(root: Path) -> None:
    before = session_files(root)
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert titles(pilot)[0] == "fix the auth bug in login"
        await pilot.press("down", "down", "down")
        assert cursor_title(pilot) == "update the README"
        await pilot.press("alt+p")
        await settle(pilot)
        assert titles(pilot)[0] == "update the README", "pinned first"
        assert cursor_title(pilot) == "update the README", "the cursor stays on the session"
        assert visible_text(pilot)[0].startswith("› ★ update the README")
        assert MarkStore().load() == {"s-docs": Mark(True, ())}
        assert "Pinned update the README" in screen_of(pilot).status.render().plain
        await pilot.press("ctrl+s")  # recent: still first
        await settle(pilot)
        assert titles(pilot)[0] == "update the README"
        await pilot.press("alt+p")
        await settle(pilot)
        assert titles(pilot)[0] == "fix the auth bug in login"
        assert "★" not in "".join(visible_text(pilot))
        assert MarkStore().load() == {}
    assert session_files(root) == before, "no session file was written"


async def test_alt_t_edits_tags_prefilled_and_tag_search_finds_them(root: Path) -> None:
    before = session_files(root)
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("down", "down")
        assert cursor_title(pilot) == "Release 1.0"
        await pilot.press("alt+t")
        await pilot.pause()
        assert isinstance(pilot.app.screen, PromptScreen)
        assert pilot.app.screen.query_one(Input).value == ""
        await pilot.press(*"work later", "enter")
        await settle(pilot)
        assert MarkStore().load() == {"s-named": Mark(False, ("work", "later"))}
        line = next(text for text in visible_text(pilot) if "Release 1.0" in text)
        assert "#work #later" in line
        # the prompt opens with the current tags
        await pilot.press("alt+t")
        await pilot.pause()
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen) and prompt.query_one(Input).value == "work later"
        prompt.query_one(Input).value = "bad\x1b[31mtag"
        assert prompt.query_one(Input).value == "badtag", "a one-line input holds no control (ordered_input.one_line)"
        prompt.query_one(Input).value = 'bad"tag ok'
        await pilot.press("enter")
        await settle(pilot)
        assert "Tags not saved" in screen_of(pilot).status.render().plain
        assert MarkStore().load() == {"s-named": Mark(False, ("work", "later"))}, "a bad tag saves nothing"
        # search by tag, and by negated tag
        screen_of(pilot).search_input.value = "tag:work"
        await settle(pilot)
        assert titles(pilot) == ["Release 1.0"]
        screen_of(pilot).search_input.value = "!tag:WORK"
        await settle(pilot)
        assert "Release 1.0" not in titles(pilot) and len(titles(pilot)) == 4
        screen_of(pilot).search_input.value = ""
        await settle(pilot)
        screen_of(pilot).session_list.set_cursor(titles(pilot).index("Release 1.0"))
        # an empty answer removes every tag
        await pilot.press("alt+t")
        await pilot.pause()
        pilot.app.screen.query_one(Input).value = ""
        await pilot.press("enter")
        await settle(pilot)
        assert MarkStore().load() == {}
        assert "#work" not in "".join(visible_text(pilot))
    assert session_files(root) == before


async def test_marks_from_another_process_show_at_start_and_is_pinned_filters(root: Path) -> None:
    MarkStore().set_pinned("s-old", True)
    MarkStore().edit_tags("s-old", ["archive"])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert titles(pilot)[0] == "ancient history"
        assert visible_text(pilot)[0].startswith("› ★ ancient history") and "#archive" in visible_text(pilot)[0]
        screen_of(pilot).search_input.value = "is:pinned"
        await settle(pilot)
        assert titles(pilot) == ["ancient history"]
        screen_of(pilot).search_input.value = "fix"  # relevance: the pinned hit would lead, but none matches
        await settle(pilot)
        assert "ancient history" not in titles(pilot)


async def test_alt_t_keeps_a_tag_another_process_added_while_the_list_was_open(root: Path) -> None:
    """The list's marks are read when it opens; a tag `seance tag` added since is not in the
    prompt, and saving the prompt's answer must not drop it (only what the user deleted goes)."""
    MarkStore().edit_tags("s-named", ["old", "keep"])
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        MarkStore().edit_tags("s-named", ["work"])  # another terminal: `seance tag SESSION +work`
        screen_of(pilot).session_list.set_cursor(titles(pilot).index("Release 1.0"))
        await pilot.press("alt+t")
        await pilot.pause()
        prompt = pilot.app.screen
        assert isinstance(prompt, PromptScreen) and prompt.query_one(Input).value == "old keep"
        prompt.query_one(Input).value = "Keep later"  # "old" deleted, "keep" recased, "later" added
        await pilot.press("enter")
        await settle(pilot)
        assert MarkStore().load() == {"s-named": Mark(False, ("Keep", "later", "work"))}


async def test_alt_p_on_a_row_pinned_elsewhere_meanwhile_pins_it(root: Path) -> None:
    """Alt+P on a row shown unpinned pins it ("Pinned ..."), even if another process pinned
    it since the list read the marks: a toggle of the file's state would unpin it."""
    async with picker_app(root).run_test(size=SIZE) as pilot:
        await settle(pilot)
        MarkStore().set_pinned("s-named", True)  # another terminal: `seance pin SESSION`
        screen_of(pilot).session_list.set_cursor(titles(pilot).index("Release 1.0"))
        await pilot.press("alt+p")
        await settle(pilot)
        assert MarkStore().load() == {"s-named": Mark(True, ())}
        assert "Pinned Release 1.0" in screen_of(pilot).status.render().plain
        assert titles(pilot)[0] == "Release 1.0"
