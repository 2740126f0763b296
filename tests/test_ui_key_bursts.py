"""Keys typed in one burst act in the order typed: none is lost or applied to the wrong text (issue 14).

A terminal hands the app a burst — a fast typist, a key repeat, `tmux send-keys C-u word` — as
one write, and Textual's parser posts every key to the app at once.  The input's editing keys
(Ctrl+U, Ctrl+W, Backspace, the arrows, Ctrl+Z) are bindings Textual ran only once the key had
bubbled back up to the app, behind the characters typed after it: Ctrl+U then "shadow-realms"
left the query empty.  `pilot.press` waits for each key to be handled and never showed it, so
`burst` posts the keys as the driver does: the terminal's bytes, parsed by Textual's own
parser, all posted before the app handles the first.  The order is the queues', not a timing
race: every run of these tests is the same run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_ui_first_page import Gate, wait_for
from textual import events
from textual._xterm_parser import XTermParser
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Input, Static
from ui_harness import cursor_title, picker_app, screen_of, settle, titles
from ui_sessions import PROJECT, Spec, clock, make_root, session_path

from seance.app import PickerOptions
from seance.app.messages import SessionsChanged
from seance.app.screens.confirm import ConfirmScreen
from seance.app.screens.prompt import PromptScreen
from seance.app.screens.session_list import SessionPickerScreen
from seance.app.screens.session_tree import SessionTreeScreen
from seance.core.catalog import Catalog

CTRL_U, CTRL_W, CTRL_Z, BACKSPACE, LEFT, CTRL_LEFT = "\x15", "\x17", "\x1a", "\x7f", "\x1b[D", "\x1b[1;5D"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def burst(app: App, data: str) -> None:
    """`data` as a terminal writes it: parsed by Textual's parser, every key posted at once."""
    for message in XTermParser().feed(data):
        app.post_message(message)


async def typed(pilot, data: str) -> str:
    """The query after `data` arrived in one burst and the app settled."""
    burst(pilot.app, data)
    await settle(pilot)
    return screen_of(pilot).search_input.value


async def test_ctrl_u_then_a_word_in_one_burst_leaves_the_word_and_searches_it(root: Path) -> None:
    async with picker_app(root).run_test() as pilot:
        await settle(pilot)
        assert await typed(pilot, "ancient") == "ancient"
        assert await typed(pilot, CTRL_U + "zebra") == "zebra", "Ctrl+U ran after the word and erased it"
        assert titles(pilot) == ["update the README"]  # the word's hit, searched


@pytest.mark.parametrize(
    ("before", "keys", "after"),
    [
        ("one two", CTRL_W + "three", "one three"),  # delete a word, type another
        ("abc", BACKSPACE * 3 + "xyz", "xyz"),  # the backspaces erased the "xyz" typed after them
        ("abc", LEFT + "X", "abXc"),  # the X went to the end, the cursor moved after it
        ("abc", CTRL_LEFT + "X", "Xabc"),
        ("abc", CTRL_Z + "d", "abd"),  # undo the "c", type "d": the undo took the "d"
    ],
    ids=["ctrl+w", "backspace", "left", "ctrl+left", "ctrl+z"],
)
async def test_an_editing_key_then_typing_in_one_burst_edits_then_types(
    root: Path, before: str, keys: str, after: str
) -> None:
    async with picker_app(root).run_test() as pilot:
        await settle(pilot)
        assert await typed(pilot, before) == before
        assert await typed(pilot, keys) == after


async def test_typing_then_esc_in_one_burst_clears_the_typing_and_keeps_the_picker(root: Path) -> None:
    """Esc clears the query, and closes the picker on an empty one: decided on the query the keys
    before it made ("xy" then Esc on an empty query closed the picker; on "abc" it left "xy")."""
    async with picker_app(root).run_test() as pilot:
        await settle(pilot)
        for before in ("", "abc"):
            assert await typed(pilot, before) == before
            burst(pilot.app, "xy")
            pilot.app.post_message(events.Key("escape", "\x1b"))  # the parser holds a lone Esc back
            await settle(pilot)
            assert isinstance(pilot.app.screen, SessionPickerScreen), "Esc saw the query before the xy"
            assert screen_of(pilot).search_input.value == ""


async def test_ctrl_u_then_a_name_in_one_burst_in_the_rename_prompt_keeps_the_name(root: Path) -> None:
    async with picker_app(root).run_test() as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, PromptScreen)
        burst(pilot.app, CTRL_U + "Docs pass")
        await settle(pilot)
        assert pilot.app.screen.query_one(Input).value == "Docs pass"


class _HostMain(Screen):
    def compose(self) -> ComposeResult:
        yield Static("host main")


class _Host(App[None]):
    """A host app that pushes its own screen, then the picker (the embedding of tests/test_host_app.py)."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.catalog = Catalog([root])
        self.results: list[object] = []

    async def open_picker(self, pilot) -> None:
        self.push_screen(_HostMain())
        await pilot.pause()
        options = PickerOptions(watch=False, confirm_missing_cwd=False)
        picker = SessionPickerScreen(self.catalog, cwd=PROJECT, clock=clock, options=options)
        self.push_screen(picker, self.results.append)
        await settle(pilot)


@pytest.mark.parametrize(
    "after", ["escape", "\r", "\x1bOP", "\x12", "?"], ids=["esc", "enter", "f1", "ctrl+r", "question-mark"]
)
async def test_esc_then_another_key_in_one_burst_leaves_the_picker_once_and_never_the_host(
    root: Path, after: str
) -> None:
    """Esc on an empty query decides after the keys before it (in the input's queue); a priority
    key right after it (a second Esc, Enter, F1, Ctrl+R) may act first.  The Esc must then do
    nothing: it once popped the host's own screen, or the dialog the next key opened."""
    app = _Host(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await app.open_picker(pilot)
        app.post_message(events.Key("escape", "\x1b"))
        if after == "escape":
            app.post_message(events.Key("escape", "\x1b"))
        else:
            burst(app, after)
        await settle(pilot)
        await settle(pilot)
        stack = [type(screen).__name__ for screen in app.screen_stack]
        assert "_HostMain" in stack, f"the host's screen was popped: {stack}"
        assert stack.count("SessionPickerScreen") <= 1
        assert len(app.results) <= 1
        if "SessionPickerScreen" not in stack:
            assert stack[-1] == "_HostMain", f"a dialog of the dismissed picker is left over: {stack}"


@pytest.mark.parametrize("after", ["\x03", "\x1b\x1b"], ids=["ctrl+c", "esc"])
async def test_enter_then_cancel_in_one_burst_in_the_prompt_keeps_the_picker(root: Path, after: str) -> None:
    """The prompt cancelled by a key behind its Enter: the Enter, reaching the prompt's input after
    the prompt was gone, once dismissed the picker itself (a blank, hung app)."""
    async with picker_app(root).run_test() as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(pilot.app.screen, PromptScreen)
        burst(pilot.app, "Docs\r")
        if after == "\x03":
            burst(pilot.app, after)
        else:
            pilot.app.post_message(events.Key("escape", "\x1b"))
        await settle(pilot)
        assert any(isinstance(screen, SessionPickerScreen) for screen in pilot.app.screen_stack)
        assert isinstance(pilot.app.screen, SessionPickerScreen | ConfirmScreen | PromptScreen)


# -- keys that act on the list act on the query as typed (the search's rows, not the rows before) --

A_TITLE = "fix the auth bug in login"  # s-auth: the top row, under the cursor before the query


async def _on_session_a(pilot) -> None:
    await settle(pilot)
    assert cursor_title(pilot) == A_TITLE


DOCS = Spec("s-docs", PROJECT)  # the one session "zebra" finds


async def _zebra_enter_held(pilot) -> tuple[SessionPickerScreen, Gate]:
    """ "zebra" then Enter in one burst, the word's search held (its index query) until
    `gate.open()`: the Enter waits for its rows."""
    screen = screen_of(pilot)
    gate = Gate(screen)
    burst(pilot.app, "zebra\r")
    await wait_for(pilot, gate.entered.is_set)
    return screen, gate


async def test_a_word_then_enter_in_one_burst_resumes_the_words_session(root: Path) -> None:
    """Enter, a priority binding, ran before the word reached the query: it resumed the row
    highlighted before it (s-auth), not "zebra"'s only hit (s-docs)."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "zebra\r")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.path == session_path(root, DOCS)


async def test_a_word_then_ctrl_t_in_one_burst_opens_the_words_session(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "zebra\x14")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        assert app.screen.session_path == session_path(root, DOCS)


async def test_a_word_then_down_then_enter_in_one_burst_picks_the_words_second_hit(root: Path) -> None:
    """Down moved the old list's cursor, then the word's rows came with the cursor on top."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "auth\x1b[B")
        await settle(pilot)
        screen = screen_of(pilot)
        assert screen.model.query == "auth" and len(screen.session_list.rows) >= 2
        assert screen.session_list.cursor == 1
        second = screen.session_list.highlighted
        assert second is not None
        burst(app, "\r")
        await settle(pilot)
    assert app.return_value is not None and app.return_value.path == Path(second.path)


async def test_a_word_that_matches_nothing_then_enter_resumes_nothing_and_says_so(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "qxqxjzv\r")
        await settle(pilot)
        screen = screen_of(pilot)  # still the picker: the stale row was not resumed
        assert screen.session_list.highlighted is None and app.return_value is None
        assert "No session matches" in screen.status.message


async def test_an_invalid_query_then_enter_resumes_nothing_and_the_cursor_keys_still_move(root: Path) -> None:
    """An invalid query has no rows (the last valid query's stay on screen, said invalid):
    Enter resumed the highlighted one of those; Down still moves over them, as before."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "re:(")
        await settle(pilot)
        screen = screen_of(pilot)
        assert "invalid query" in screen.status.message and len(screen.session_list.rows) >= 2
        await pilot.press("down")
        await settle(pilot)
        assert screen.session_list.cursor == 1
        burst(app, "\r")
        await settle(pilot)
        assert app.screen is screen and app.return_value is None


async def test_enter_waits_for_a_slow_search_then_resumes_its_hit(root: Path) -> None:
    """The search of the word is held (its index query): Enter waits for its rows, without
    holding the UI (the status line says so), then resumes the word's session."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        screen, gate = await _zebra_enter_held(pilot)
        await pilot.pause(0.4)  # (more than the notice's delay)
        assert app.screen is screen and app.return_value is None
        assert "Waiting" in screen.status.message
        gate.open()
        await settle(pilot)
    assert app.return_value is not None and app.return_value.path == session_path(root, DOCS)


async def test_esc_cancels_an_enter_waiting_for_its_search_and_keeps_the_query(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        screen, gate = await _zebra_enter_held(pilot)
        app.post_message(events.Key("escape", "\x1b"))
        await pilot.pause(0.1)
        gate.open()
        await settle(pilot)
        assert app.screen is screen and app.return_value is None
        assert screen.search_input.value == "zebra"


async def test_typing_after_an_enter_waiting_for_its_search_does_not_change_what_it_resumes(root: Path) -> None:
    """ "zebra", Enter, "x": the Enter resumes zebra's hit (pi's picker, synchronous, would
    have); the "x" typed while it waits is held, not typed into the query it acts on."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        screen, gate = await _zebra_enter_held(pilot)
        burst(app, "x")
        await pilot.pause(0.1)
        assert screen.search_input.value == "zebra"
        gate.open()
        await settle(pilot)
    assert app.return_value is not None and app.return_value.path == session_path(root, DOCS)


async def test_typing_after_a_down_waiting_for_its_search_is_typed_after_it_in_order(root: Path) -> None:
    """ "auth", Down, Backspace, "th": the Down moves on auth's rows once they land, then the
    keys held behind it are typed, in order, into the query as it left it."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        screen = screen_of(pilot)
        moved: list[int] = []
        original = screen.session_list.move_cursor

        def recorded(delta: int) -> None:
            original(delta)
            moved.append(screen.session_list.cursor)

        screen.session_list.move_cursor = recorded  # type: ignore[method-assign]
        gate = Gate(screen)
        burst(app, "auth\x1b[B" + BACKSPACE + "th")
        await wait_for(pilot, gate.entered.is_set)
        await pilot.pause(0.1)
        assert screen.search_input.value == "auth" and moved == []
        gate.open()
        await settle(pilot)
        assert moved == [1], "the Down moved on auth's two hits"
        assert screen.search_input.value == "autth"


# -- after review: keys waiting for their rows, with the rest of the picker going on ----------


async def test_a_sort_while_a_search_runs_then_enter_resumes_the_searched_session(root: Path) -> None:
    """Ctrl+S and Alt+C re-order the hits on screen: while a newer query's search runs those
    are the query before's, and the rows they made let a waiting Enter resume one of them."""
    for key in ("ctrl+s", "alt+c"):
        app = picker_app(root)
        async with app.run_test(size=(120, 30)) as pilot:
            await settle(pilot)
            burst(app, "the")
            await settle(pilot)
            gate = Gate(screen_of(pilot))
            burst(app, " zebra")
            await wait_for(pilot, gate.entered.is_set)
            app.post_message(events.Key(key, None))
            app.post_message(events.Key("enter", "\r"))
            await pilot.pause(0.3)
            assert app.return_value is None, f"{key}: Enter acted on the rows of the query before"
            gate.open()
            await settle(pilot)
        assert app.return_value is not None and app.return_value.path == session_path(root, DOCS), key


async def test_an_enter_waiting_for_its_rows_runs_while_the_watcher_keeps_reporting_changes(root: Path) -> None:
    """Every batch of the watcher's changes made a new search, cancelling the one under way:
    with agents writing every 150 ms, the Enter waited until they stopped."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        hits = screen.catalog.text_hits

        def slow(*args: object, **kwargs: object) -> object:
            time.sleep(0.3)
            return hits(*args, **kwargs)

        screen.catalog.text_hits = slow  # type: ignore[method-assign]
        some = screen.model.summaries["project"][1]
        burst(app, "zebra\r")
        for _ in range(20):
            if app.return_value is not None:
                break
            screen.post_message(SessionsChanged(changed=[some], removed=[]))
            await pilot.pause(0.15)
        assert app.return_value is not None, "Enter waited for as long as the changes kept coming"
        assert app.return_value.path == session_path(root, DOCS)


async def test_a_key_waiting_when_a_dialog_covers_the_picker_is_dropped_not_run_on_its_return(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen, gate = await _zebra_enter_held(pilot)
        burst(app, "\x1bOP")  # F1: the help, over the picker
        await pilot.pause(0.3)
        await pilot.press("escape")
        await pilot.pause(0.2)
        gate.open()
        await settle(pilot)
        assert app.return_value is None, "the Enter before F1 resumed a session once the help was closed"
        assert isinstance(app.screen, SessionPickerScreen) and screen.search_input.value == "zebra"


async def test_space_on_an_empty_query_then_down_in_one_burst_selects_the_first_row(root: Path) -> None:
    async with picker_app(root).run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        first = screen.session_list.highlighted
        assert first is not None
        burst(pilot.app, " \x1b[B")
        await settle(pilot)
        assert [summary.id for summary in screen.model.selection.summaries] == [first.summary.id]


async def test_text_pasted_while_enter_waits_is_pasted_after_it(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen, gate = await _zebra_enter_held(pilot)
        app.post_message(events.Paste("qqq"))
        await pilot.pause(0.1)
        assert screen.search_input.value == "zebra", "the paste went into the query Enter waits on"
        gate.open()
        await settle(pilot)
    assert app.return_value is not None and app.return_value.path == session_path(root, DOCS)


async def test_the_watchers_changes_held_for_a_waiting_key_are_shown_after_a_dialog_dropped_it(
    root: Path,
) -> None:
    """The watcher's changes wait for the keys waiting for their rows; F1 dropped those keys
    while the picker was covered, and the changes were never shown after the help closed."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        gate = Gate(screen)
        burst(app, "zebra\x1b[B")
        await wait_for(pilot, gate.entered.is_set)
        docs = next(summary for summary in screen.model.summaries["project"] if summary.path.endswith("s-docs.jsonl"))
        renamed = dataclasses.replace(docs, name="renamed by the agent")
        screen.post_message(SessionsChanged(changed=[renamed], removed=[]))
        await pilot.pause(0.1)
        burst(app, "\x1bOP")  # F1
        await pilot.pause(0.3)
        await pilot.press("escape")
        gate.open()
        await settle(pilot)
        assert titles(pilot) == ["renamed by the agent"]


async def test_a_word_tab_and_enter_at_launch_resume_the_words_session_in_the_new_scope_12_trials(root: Path) -> None:
    """The word's first search, over the launch's listing, ended after the Tab had started
    another: its hits laid over the new scope's listing were taken as the rows a waiting Enter
    waited for ("No session matches"), and the right rows came after the Enter was spent."""
    for _ in range(12):  # (the order of the two searches' ends varies: each run its own launch)
        app = picker_app(root)
        async with app.run_test(size=(120, 30)) as pilot:
            burst(app, "zebra\t\r")
            await settle(pilot)
        assert app.return_value is not None and app.return_value.path == session_path(root, DOCS)


async def test_enter_typed_before_the_first_listing_waits_for_it_not_for_a_search_of_no_sessions(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word searched before its scope was listed at all (the launch's refresh still running,
    or a Tab to a scope not listed yet that ran before the characters typed ahead of it) was
    searched over no sessions: that empty answer was taken for the query's rows and a waiting
    Enter said "No session matches" (the flaky `zebra, Tab, Enter` trials above)."""
    listing = threading.Event()
    original = Catalog.refresh

    def held(self: Catalog, *args: Any, **kwargs: Any) -> Any:
        listing.wait(10)  # (where a big cold root holds the launch's listing)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Catalog, "refresh", held)
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        burst(app, "zebra\r")
        await pilot.pause(0.3)
        screen = screen_of(pilot)
        assert "No session matches" not in screen.status.message, "Enter acted on a search of no sessions"
        assert app.return_value is None and screen.is_active
        listing.set()
        await wait_for(pilot, lambda: app.return_value is not None)
    assert app.return_value.path == session_path(root, DOCS)


# -- keys behind a key that opens the tree are the tree's --------------------------------------


async def _tree_loaded(pilot) -> SessionTreeScreen:
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SessionTreeScreen) and pilot.app.screen.model)
    return pilot.app.screen


async def test_ctrl_t_then_up_then_enter_in_one_burst_resumes_where_the_same_keys_one_by_one_do(root: Path) -> None:
    """Up and Enter, pressed in the burst that opened the tree (a fast hand, `tmux send-keys`,
    pi's /seance driven by a script), reached the picker after it was covered and were dropped:
    the tree stayed open at its leaf.  They are the tree's, as the terminal sent them."""
    slow = picker_app(root)
    async with slow.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        await pilot.press("ctrl+t")
        await _tree_loaded(pilot)
        await pilot.press("up", "enter")
        await settle(pilot)
    assert slow.return_value is not None and slow.return_value.entry_id is not None
    fast = picker_app(root)
    async with fast.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(fast, "\x14\x1b[A\r")
        await settle(pilot)
        await wait_for(pilot, lambda: fast.return_value is not None)
    assert fast.return_value == slow.return_value


async def test_text_typed_behind_ctrl_t_goes_to_the_trees_search_not_the_hidden_query(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        picker = screen_of(pilot)
        burst(app, "\x14login")
        await settle(pilot)
        tree = await _tree_loaded(pilot)
        await wait_for(pilot, lambda: tree.model.query == "login")
        assert picker.search_input.value == ""


async def test_enter_behind_ctrl_d_in_one_burst_does_not_confirm_the_delete(root: Path) -> None:
    """Only a screen built to take keys pressed ahead of it gets them: a dialog shows first."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        target = Path(screen_of(pilot).session_list.highlighted.path)
        burst(app, "\x04\r")
        await settle(pilot)
        await pilot.pause(0.2)
        assert isinstance(app.screen, ConfirmScreen)
        assert target.exists()


async def test_keys_waiting_behind_a_ctrl_t_that_waits_for_its_search_go_to_the_tree(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "zebra", Ctrl+T, Up, Enter in one burst, the word's search slow: Ctrl+T waits for its
    rows, Up and Enter wait behind it in the picker's queue; once the tree opens they are its.
    (The tree's look for the word's first match is left out: it moves the cursor unless a key
    did first, so where the Up starts would be a race.)"""
    from seance.app.screens import session_tree

    monkeypatch.setattr(session_tree, "first_matching_entry", lambda *args: None)
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        gate = Gate(screen_of(pilot))
        burst(app, "zebra\x14\x1b[A\r")
        await wait_for(pilot, gate.entered.is_set)
        await pilot.pause(0.1)
        assert isinstance(app.screen, SessionPickerScreen)
        gate.open()
        await settle(pilot)
        await wait_for(pilot, lambda: app.return_value is not None)
    result = app.return_value
    assert result.path == session_path(root, DOCS)
    # one row up from the leaf (a0001), where the tree opens without its look for the word
    assert result.entry_id == "u0001", f"Up lost: resumed at {result.entry_id}"


@pytest.mark.parametrize(("typed", "query"), [("the token", "the token"), ("a?b", "a?b")], ids=["space", "question"])
async def test_a_space_or_question_mark_typed_behind_ctrl_t_reaches_the_trees_search(
    root: Path, typed: str, query: str
) -> None:
    """Space and ? are the picker's keys on an empty query (select, help): behind Ctrl+T they
    were neither handed on nor typed (review): "the token" searched "thetoken"."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "\x14" + typed)
        await settle(pilot)
        tree = await _tree_loaded(pilot)
        await wait_for(pilot, lambda: tree.model.query == query)


@pytest.mark.parametrize("opener", ["\x04", "\x12"], ids=["ctrl+d", "ctrl+r"])
async def test_text_typed_behind_a_key_that_opens_a_dialog_is_typed_nowhere(root: Path, opener: str) -> None:
    """A dialog takes no key pressed before it showed, and the covered query is not the user's
    to change unseen: "abc" behind Ctrl+D or Ctrl+R went into the picker's hidden query (review)."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        picker = screen_of(pilot)
        burst(app, opener + "abc")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen | PromptScreen)
        if isinstance(app.screen, PromptScreen):
            assert app.screen.query_one(Input).value == ""
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is picker and picker.search_input.value == ""


async def test_alt_e_behind_ctrl_t_asks_to_export_the_trees_entry(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "\x14")
        app.post_message(events.Key("alt+e", None))  # (the parser holds an Esc back: as the driver would post it)
        await settle(pilot)
        await wait_for(pilot, lambda: isinstance(app.screen, PromptScreen))
        assert isinstance(app.screen_stack[-2], SessionTreeScreen)


async def test_text_esc_text_behind_ctrl_t_keeps_their_order_in_the_tree(root: Path) -> None:
    """Ctrl+T, "ab", Esc, "c" in one burst: typed one at a time, Esc clears the tree's search
    "ab" (the tree stays) and "c" is searched.  The tree loaded between "a" and "b", and Esc,
    a key that leaves at once while a session loads, acted ahead of the held "b": the tree
    closed and "a", "b" and "c" were lost (review)."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        burst(app, "\x14ab")
        app.post_message(events.Key("escape", "\x1b"))
        burst(app, "c")
        await settle(pilot)
        tree = await _tree_loaded(pilot)
        await wait_for(pilot, lambda: tree.model.query == "c")
        assert app.screen is tree


async def test_enter_then_a_letter_in_one_burst_in_the_tree_resumes_before_the_letter_is_searched(
    root: Path,
) -> None:
    """Enter's binding runs once its key has bubbled up to the app; a letter behind it was typed
    into the tree's search at the screen first, and Enter then acted on no row (review)."""
    app = picker_app(root)
    async with app.run_test(size=(120, 30)) as pilot:
        await _on_session_a(pilot)
        await pilot.press("ctrl+t")
        await _tree_loaded(pilot)
        await settle(pilot)
        burst(app, "\ry")
        await settle(pilot)
        await wait_for(pilot, lambda: app.return_value is not None)
    assert app.return_value.path == session_path(root, Spec("s-auth", PROJECT))
