"""SessionTreeScreen through Pilot: every key, the label dialog, errors, the preview and snapshots."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from textual.app import App
from textual.widgets import Input, Static

from seance.app.screens.help import HelpScreen
from seance.app.screens.prompt import PromptScreen
from seance.app.screens.session_tree import SessionTreeScreen, TreeResult
from seance.app.tree_model import TreeModel, format_label_time
from seance.app.widgets.context_preview import ContextPreview
from seance.app.widgets.tree_view import TreeView
from seance.core.session import load_session

SIZE = (120, 32)
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


# -- a fixed session with branches, labels, a compaction and tool results ---------------------


def _entry(entries: list[dict[str, Any]], entry_id: str, parent: str | None, **fields: Any) -> str:
    stamp = f"2025-02-20T10:{len(entries) // 60:02d}:{len(entries) % 60:02d}.000Z"
    entries.append({"id": entry_id, "parentId": parent, "timestamp": stamp, **fields})
    return entry_id


def _user(entries: list, entry_id: str, parent: str | None, text: str) -> str:
    return _entry(entries, entry_id, parent, type="message", message={"role": "user", "content": text})


def _assistant(entries: list, entry_id: str, parent: str, text: str, call: dict | None = None) -> str:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if call:
        content.append({"type": "toolCall", **call})
    message = {
        "role": "assistant",
        "content": content,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"cost": {"total": 0.25}},
        "stopReason": "toolUse" if call else "stop",
    }
    return _entry(entries, entry_id, parent, type="message", message=message)


def write_session(path: Path, *, version: int = 3) -> Path:
    """Root prompt, a tool round, then two branches; branch A has a compaction and the leaf."""
    entries: list[dict[str, Any]] = []
    _entry(entries, "m0", None, type="model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    _user(entries, "u1", "m0", "Refactor the parser [bold]x[/] please")
    _assistant(entries, "a1", "u1", "", {"id": "c1", "name": "bash", "arguments": {"command": "ls -la src"}})
    _entry(
        entries,
        "t1",
        "a1",
        type="message",
        message={"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "content": "main.py\nparser.py"},
    )
    _assistant(entries, "a2", "t1", "The parser lives in src/parser.py.")
    _user(entries, "uA", "a2", "Try approach A: a recursive descent parser")
    _assistant(entries, "aA", "uA", "Approach A done.")
    _entry(
        entries,
        "cA",
        "aA",
        type="compaction",
        summary="Work so far: approach A.",
        firstKeptEntryId="aA",
        tokensBefore=175_300,
    )
    _user(entries, "uA2", "cA", "Now add tests for approach A")
    _assistant(entries, "aA2", "uA2", "Tests added.")
    _user(entries, "uB", "a2", "Actually, try approach B: a table-driven parser")
    _entry(entries, "bB", "uB", type="branch_summary", fromId="aA2", summary="Approach A was abandoned.")
    _assistant(entries, "aB", "bB", "Approach B sketched.")
    _entry(entries, "l1", "aA2", type="label", targetId="uA", label="milestone")
    _entry(entries, "th", "l1", type="thinking_level_change", thinkingLevel="high")
    _entry(entries, "leaf", "th", type="leaf", targetId="aA2")
    header = {
        "type": "session",
        "version": version,
        "id": "tree-ui-session",
        "timestamp": "2024-12-01T09:00:00.000Z",
        "cwd": "/home/u/project",
    }
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [header, *entries]))
    if version != 3:  # an old-format file is at rest: no agent writes it (a rewrite waits for quiet)
        os.utime(path, (1_733_043_600, 1_733_043_600))
    return path


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    return write_session(tmp_path / "session.jsonl")


class TreeApp(App[Any]):
    """Pushes the tree screen and records what it dismisses with and what it notifies."""

    def __init__(self, path: Path, *, standalone: bool = False, session: Any = None, confirm: bool = False) -> None:
        super().__init__()
        self.path = path
        self.standalone = standalone
        self.session = session
        self.confirm = confirm  # the fixture's cwd (/home/u/project) exists nowhere: pi's question is off
        self.results: list[Any] = []
        self.notes: list[tuple[str, str]] = []

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.animation_level = "none"
        screen = SessionTreeScreen(
            self.path,
            clock=lambda: NOW,
            standalone=self.standalone,
            session=self.session,
            cwd="/home/u/elsewhere",
            confirm_missing_cwd=self.confirm,
        )
        self.push_screen(screen, callback=self.results.append)

    def notify(self, message: str, *, title: str = "", severity: str = "information", **kwargs: Any) -> None:
        self.notes.append((severity, message))
        super().notify(message, title=title, severity=severity, **kwargs)


async def settle(pilot) -> None:
    """Let the loader, the preview's debounce and any write finish (the box may be busy)."""
    for _ in range(100):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        previews = pilot.app.screen.query(ContextPreview)
        screen = pilot.app.screen
        loading = isinstance(screen, SessionTreeScreen) and screen.session is None and screen.load_error is None
        if not any(preview.pending for preview in previews) and not loading and not pilot.app.workers:
            return
        await pilot.pause(0.05)


def screen_of(app: TreeApp) -> SessionTreeScreen:
    screen = app.screen
    assert isinstance(screen, SessionTreeScreen)
    return screen


def model_of(app: TreeApp) -> TreeModel:
    model = screen_of(app).model
    assert model is not None
    return model


def status(app: TreeApp) -> str:
    return str(app.screen.query_one("#seance-tree-status", Static).render())


# -- loading ----------------------------------------------------------------------------------


async def test_opens_on_the_leaf_with_pi_structure(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        assert model.selected_id == "aA2"
        assert [model.row_text(row) for row in model.rows] == [
            "• user: Refactor the parser [bold]x[/] please",
            "• [bash: ls -la src]",
            "• assistant: The parser lives in src/parser.py.",
            "├⊟ • [milestone] user: Try approach A: a recursive descent parser",
            "│     • assistant: Approach A done.",
            "│     • [compaction: 175k tokens]",
            "│     • user: Now add tests for approach A",
            "│     • assistant: Tests added.",
            "└⊟ user: Actually, try approach B: a table-driven parser",
            "      [branch summary]: Approach A was abandoned.",
            "      assistant: Approach B sketched.",
        ]
        assert status(app).startswith("(8/11)  ·  filter: default")
        assert app.screen.focused is app.screen.query_one(TreeView)


async def test_not_a_session_shows_a_message_not_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "notes.jsonl"
    bad.write_text('this is not json\n{"also": "not a header"}\n')
    app = TreeApp(bad)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        message = str(app.screen.query_one("#seance-tree-message", Static).render())
        assert "not a session" in message
        assert screen_of(app).load_error == message
        assert screen_of(app).model is None
        assert "loading" not in status(app)  # the load is over: it failed (it said "loading…" for good)
        await pilot.press("escape")
        await pilot.pause()
    assert app.results == [None]


async def test_an_empty_session_says_so_and_keys_do_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"session","version":3,"id":"e","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}\n')
    app = TreeApp(empty)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("up", "down", "pagedown", "ctrl+left", "ctrl+right", "ctrl+o", "L", "x", "escape", "enter")
        await settle(pilot)
        assert "No entries found" in app.screen.query_one(TreeView).render_line(0).text
        assert status(app).startswith("(0/0)")
        assert app.results == []


async def test_a_session_the_caller_already_read_is_not_read_again(session_file: Path) -> None:
    session = load_session(session_file)
    session_file.write_text("overwritten: the screen must use the session it was given\n")
    app = TreeApp(session_file, session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert screen_of(app).session is session
        assert len(model_of(app).rows) == 11


async def test_deep_trees_keep_room_for_the_text(tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = []
    parent = _user(entries, "r", None, "root")
    for depth in range(30):  # each level branches: a dead end and the way on
        _user(entries, f"dead{depth}", parent, f"dead end {depth}")
        parent = _user(entries, f"on{depth}", parent, f"deeper {depth}")
    header = {"type": "session", "version": 3, "id": "deep", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [header, *entries]))
    app = TreeApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tree_view = app.screen.query_one(TreeView)
        line = tree_view.render_line(model_of(app).cursor - tree_view.scroll_offset.y).text
        assert line.startswith("› …  ") and "deeper 29" in line


async def test_skipped_lines_are_counted_in_the_status_line(session_file: Path) -> None:
    with session_file.open("ab") as handle:
        handle.write(b"{broken json\n")
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "1 problem while reading" in status(app)


# -- movement -----------------------------------------------------------------------------------


async def test_up_down_wrap_page_home_end(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        await pilot.press("down", "down", "down")
        assert model.cursor == 10
        await pilot.press("down")
        assert model.cursor == 0  # wrapped
        await pilot.press("up")
        assert model.cursor == 10
        await pilot.press("home")
        assert model.cursor == 0
        await pilot.press("pagedown")
        assert model.cursor == 10  # the page is taller than the tree
        await pilot.press("pageup")
        assert model.cursor == 0
        await pilot.press("end")
        assert model.cursor == 10
        assert status(app).startswith("(11/11)")


async def test_fold_unfold_and_branch_jumps(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        await pilot.press("ctrl+left")  # on aA2: not foldable, jump up to the segment start
        assert model.selected_id == "uA"
        await pilot.press("ctrl+left")  # fold it
        assert model.folded == {"uA"}
        assert model.rows.ids == ["u1", "t1", "a2", "uA", "uB", "bB", "aB"]
        assert model.row_text(model.rows[3]).startswith("├⊞ ")
        assert status(app).startswith("(4/7)") and "1 folded" in status(app)
        await pilot.press("ctrl+right")  # unfold
        assert not model.folded and len(model.rows) == 11
        await pilot.press("alt+right")  # Alt+←/→ do the same (pi 0.73.1): jump down to the branch end
        assert model.selected_id == "aA2"
        await pilot.press("alt+left")
        assert model.selected_id == "uA"
        await pilot.press("alt+left")
        assert model.folded == {"uA"}
        await pilot.press("alt+right")
        assert not model.folded


async def test_left_right_page_as_in_pi_never_fold(tmp_path: Path) -> None:
    """pi 0.73.1's tree: ←/→ (and Ctrl+B/Ctrl+F) page by a screenful without wrapping, like PgUp/PgDn."""
    entries: list[dict[str, Any]] = []
    parent = None
    for number in range(60):
        parent = _user(entries, f"u{number}", parent, f"prompt {number}")
    header = {"type": "session", "version": 3, "id": "long", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in [header, *entries]))
    app = TreeApp(path)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        model = model_of(app)
        page = app.screen.query_one(TreeView).page_height
        assert model.cursor == 59 and page > 5
        await pilot.press("left")
        assert model.cursor == 59 - page and not model.folded
        await pilot.press("ctrl+b")
        assert model.cursor == 59 - 2 * page
        await pilot.press("right")
        assert model.cursor == 59 - page
        await pilot.press("ctrl+f", "right", "right")
        assert model.cursor == 59  # clamped, no wrap
        await pilot.press("home", "left")
        assert model.cursor == 0


async def test_shift_t_toggles_label_times_and_never_types(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        tree_view = app.screen.query_one(TreeView)
        await pilot.press("T")
        assert model.query == "" and model.show_label_times
        assert "+label time" in status(app)
        row = model.rows[model.index["uA"]]
        expected = format_label_time(model.tree.label_times["uA"], NOW)
        assert expected and f"[milestone] {expected} user: Try approach A" in model.row_text(row, NOW)
        line = tree_view.render_line(model.index["uA"] - tree_view.scroll_offset.y).text
        assert f"[milestone] {expected} user:" in line
        await pilot.press("shift+t")
        assert not model.show_label_times and "+label time" not in status(app)
        assert "[milestone] user:" in tree_view.render_line(model.index["uA"] - tree_view.scroll_offset.y).text


def test_label_times_read_like_pis() -> None:
    now = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).astimezone()

    def at(**parts: int) -> str:
        return now.replace(**parts).astimezone(UTC).isoformat()

    assert format_label_time(at(hour=9, minute=5), now) == "09:05"
    assert format_label_time(at(month=2, day=7, hour=14, minute=30), now) == "2/7 14:30"
    assert format_label_time(at(year=2024, month=11, day=3, hour=8, minute=0), now) == "24/11/3 08:00"
    assert format_label_time("not a time", now) == "" and format_label_time(None, now) == ""


async def test_shift_ctrl_o_cycles_the_filter_backwards(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        await pilot.press("ctrl+shift+o")
        assert model.filter_mode == "all"
        await pilot.press("ctrl+shift+o")
        assert model.filter_mode == "labeled-only"
        await pilot.press("ctrl+o")
        assert model.filter_mode == "all" and model.query == ""


async def test_f1_opens_help_listing_the_pi_keys(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "F1 keys" in str(app.screen.query_one("#seance-tree-help", Static).render())
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = {what: key for key, what in app.screen.rows}
        assert rows["page up"] == "PgUp ← Ctrl+B" and rows["page down"] == "PgDn → Ctrl+F"
        assert rows["fold, or jump up to the branch start"] == "Ctrl+← / Alt+←"
        assert rows["show / hide when labels were set"] == "T / Shift+T"
        assert rows["previous filter"] == "Ctrl+Shift+O"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionTreeScreen)


async def test_header_of_an_unnamed_session_is_its_first_prompt_like_the_list(session_file: Path) -> None:
    from seance.core.metadata import scan_file, summary_from_scan

    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        title = str(app.screen.query_one("#seance-tree-title", Static).render())
        listed = summary_from_scan(str(session_file), scan_file(session_file)).title
        assert listed == "Refactor the parser [bold]x[/] please"
        assert title.startswith(f"Session Tree  {listed}  ·  ")
        assert "session.jsonl" not in title


async def test_click_selects_and_double_click_resumes(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.click(TreeView, offset=(10, 2))
        assert model_of(app).selected_id == "a2"
        await pilot.click(TreeView, offset=(10, 10), times=2)
        await pilot.pause()
    assert app.results == [TreeResult("resume", session_file.resolve(), "aB", None, "aB")]


# -- filters and search ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "mode", "tag"),
    [
        (("ctrl+t",), "no-tools", "[no-tools]"),
        (("ctrl+u",), "user-only", "[user]"),
        (("ctrl+l",), "labeled-only", "[labeled]"),
        (("ctrl+a",), "all", "[all]"),
        (("ctrl+a", "ctrl+d"), "default", ""),
        (("ctrl+t", "ctrl+t"), "default", ""),
        (("ctrl+o", "ctrl+o", "ctrl+o"), "labeled-only", "[labeled]"),
    ],
)
async def test_filter_keys(session_file: Path, keys: tuple[str, ...], mode: str, tag: str) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        model = model_of(app)
        assert model.filter_mode == mode
        assert f"filter: {mode}" in status(app)
        assert status(app).count(mode) == 1 and not (tag and tag in status(app)), "the filter is named once"
        expected = {"no-tools": 10, "user-only": 4, "labeled-only": 1, "all": 15, "default": 11}[mode]
        assert len(model.rows) == expected


async def test_type_to_search_backspace_and_escape(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        model = model_of(app)
        await pilot.press(*"approach b")
        assert model.query == "approach b"
        assert model.rows.ids == ["uB", "bB", "aB"]  # bB: "abandoned"; every word must match
        assert "Type to search: approach b" in str(app.screen.query_one("#seance-tree-search", Static).render())
        assert "search: approach b" in status(app)
        await pilot.press("backspace", "backspace")
        assert model.query == "approach"
        await pilot.press("escape")  # clears the search first
        assert model.query == "" and len(model.rows) == 11
        assert app.results == []
        await pilot.press("escape")  # then leaves
        await pilot.pause()
    assert app.results == [None]


async def test_search_without_hits_says_so(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*"zzz")
        tree_view = app.screen.query_one(TreeView)
        assert model_of(app).rows.ids == []
        assert "No entries match search" in tree_view.render_line(0).text
        assert status(app).startswith("(0/0)")


async def test_ctrl_c_leaves_like_escape(session_file: Path) -> None:
    app = TreeApp(session_file, standalone=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "Esc quit" in str(app.screen.query_one("#seance-tree-help", Static).render())
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.results == [None]


# -- Enter ----------------------------------------------------------------------------------------


async def test_enter_on_a_user_message_resumes_before_it_with_its_text(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("up")  # uA2
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [TreeResult("resume", session_file.resolve(), "cA", "Now add tests for approach A", "uA2")]


def reading_held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The tree screen's read of its session waits until the returned event is set: the
    screen stays loading while the test presses keys (a big session takes seconds)."""
    from seance.app.screens import session_tree

    loaded = threading.Event()
    real_read = session_tree.read_session

    def held_read(*args: Any, **kwargs: Any) -> Any:
        loaded.wait(5)
        return real_read(*args, **kwargs)

    monkeypatch.setattr(session_tree, "read_session", held_read)
    return loaded


async def test_keys_pressed_while_the_session_loads_act_once_it_has(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up, Enter pressed while the tree still loads its session (seconds for a big one) went to
    a screen without rows and were lost (seen driving pi in tmux: Ctrl+T, Up, Enter on a v1
    session of 12,004 entries resumed nothing).  They are pressed again once it has loaded;
    printable keys too (into the search)."""
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert screen_of(app).session is None, "(still loading)"
        await pilot.press("up", "enter")
        loaded.set()
        await settle(pilot)
        await pilot.pause()
    assert app.results == [TreeResult("resume", session_file.resolve(), "cA", "Now add tests for approach A", "uA2")]


async def test_text_typed_while_the_session_loads_goes_to_the_search(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("t", "e", "s", "t")
        loaded.set()
        await settle(pilot)
        assert model_of(app).query == "test"


async def test_escape_while_the_session_loads_leaves_at_once(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The keys held while loading are the tree's own: the screen's (Esc, Ctrl+C) act at once,
    so a slow load of a big session can be left without waiting for it."""
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, SessionTreeScreen), "left while still loading"
        loaded.set()
        await pilot.app.workers.wait_for_complete()


@pytest.mark.parametrize(
    ("keys", "shown"),
    [
        (("ctrl+u",), "filter: user-only"),
        (("ctrl+a",), "filter: all"),
        (("ctrl+o",), "filter: no-tools"),
        (("T",), "+label time"),
        (("ctrl+u", "up"), "filter: user-only"),
    ],
    ids=["ctrl+u", "ctrl+a", "ctrl+o", "shift+t", "ctrl+u-up"],
)
async def test_the_screens_own_keys_pressed_while_the_session_loads_act_once_it_has(
    session_file: Path, monkeypatch: pytest.MonkeyPatch, keys: tuple[str, ...], shown: str
) -> None:
    """The filters and Shift+T ran at once while the tree loaded, on no model: lost (found by
    the sweep).  Only the keys that leave act at once; the others wait for the rows, in order."""
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "loading" in status(app)
        await pilot.press(*keys)
        loaded.set()
        await settle(pilot)
        await pilot.pause()
        assert shown in status(app), status(app)


async def test_alt_e_pressed_while_the_session_loads_asks_once_it_has(
    session_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alt+E is a priority key: it never reached the hold in `on_key`, ran on no rows, and was
    lost (review)."""
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "loading" in status(app)
        await pilot.press("alt+e")
        loaded.set()
        await settle(pilot)
        await pilot.pause(0.2)
        assert isinstance(app.screen, PromptScreen)


@pytest.mark.parametrize("leave", ["escape", "ctrl+c"])
async def test_a_key_held_while_loading_does_not_hold_the_keys_that_leave(
    session_file: Path, monkeypatch: pytest.MonkeyPatch, leave: str
) -> None:
    """Esc and Ctrl+C leave a slow load at once, whatever was pressed before them: one arrow
    held while a big session loaded made them wait for the whole load (review)."""
    loaded = reading_held(monkeypatch)
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("up", leave)
        await pilot.pause()
        left = not isinstance(app.screen, SessionTreeScreen)
        loaded.set()
        await pilot.app.workers.wait_for_complete()
    assert left


async def test_enter_on_the_root_prompt_resumes_before_everything(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", "enter")
        await pilot.pause()
    result = app.results[0]
    assert (result.leaf_id, result.prefill, result.entry_id) == ("m0", "Refactor the parser [bold]x[/] please", "u1")


async def test_enter_on_other_entries_resumes_at_them(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end", "enter")
        await pilot.pause()
    assert app.results == [TreeResult("resume", session_file.resolve(), "aB", None, "aB")]


# -- labels ---------------------------------------------------------------------------------------


async def test_shift_l_edits_the_label_through_core(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")  # aB
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == ""
        await pilot.press(*"plan b", "enter")
        await settle(pilot)
        model = model_of(app)
        assert model.tree.labels["aB"] == "plan b"
        assert model.row_text(model.rows[model.cursor]) == "      [plan b] assistant: Approach B sketched."
        assert ("information", "Label saved") in app.notes
        assert load_session(session_file).tree.labels["aB"] == "plan b"
        preview = app.screen.query_one(ContextPreview).document
        assert preview is not None and "[plan b]" in dict(preview.header)["labels"]
        # Edit the existing label: the dialog is prefilled; an empty label clears it.
        await pilot.press("shift+l")
        await pilot.pause()
        field = app.screen.query_one(Input)
        assert field.value == "plan b"
        field.value = ""
        await pilot.press("enter")
        await settle(pilot)
        assert "aB" not in model.tree.labels
        assert "aB" not in load_session(session_file).tree.labels


async def test_label_dialog_escape_writes_nothing(session_file: Path) -> None:
    before = session_file.read_bytes()
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("L", *"nope", "escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        assert app.results == []
    assert session_file.read_bytes() == before


async def test_label_write_errors_become_a_notification(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        session_file.unlink()  # the session vanished while it was open
        await pilot.press("L", *"x", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        assert any(severity == "error" and "no such file" in note for severity, note in app.notes)
    assert not session_file.exists(), "nothing was written"


async def test_a_label_on_an_old_session_persists_its_migration_first(tmp_path: Path) -> None:
    old = write_session(tmp_path / "old.jsonl", version=2)
    app = TreeApp(old)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("L", *"x", "enter")
        await settle(pilot)
    session = load_session(old)
    assert session.disk_version == 3 and "x" in session.tree.labels.values()


# -- preview ----------------------------------------------------------------------------------------


async def test_preview_follows_the_cursor(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        preview = app.screen.query_one(ContextPreview)
        doc = preview.document
        assert doc is not None
        assert doc.blocks[0].kind == "compaction"  # the compaction summary comes first
        assert dict(doc.header)["model"] == "anthropic/claude-sonnet-4-5"
        assert "[milestone]" in dict(doc.header)["labels"]
        await pilot.press("end")  # aB on the other branch: no compaction, a branch summary
        await settle(pilot)
        doc = preview.document
        assert doc is not None and [block.kind for block in doc.blocks].count("compaction") == 0
        assert "branch" in [block.kind for block in doc.blocks]
        assert doc.blocks[-1].body == "Approach B sketched."


async def test_preview_hides_on_a_narrow_terminal(session_file: Path) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(ContextPreview).display


# -- snapshots ----------------------------------------------------------------------------------------


SNAPSHOT_KEYS = {
    "branches": (),
    "folded": ("ctrl+left", "ctrl+left"),
    "no_tools": ("ctrl+t",),
    "user_only": ("ctrl+u",),
    "labeled_only": ("ctrl+l",),
    "all": ("ctrl+a",),
    "search": tuple("approach"),
    "compaction": ("up", "up"),
}


@pytest.mark.parametrize("keys", list(SNAPSHOT_KEYS.values()), ids=list(SNAPSHOT_KEYS))
async def test_snapshots(session_file: Path, snap_app, keys: tuple[str, ...]) -> None:
    app = TreeApp(session_file)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(*keys)
        await settle(pilot)
        assert await snap_app(pilot)


@pytest.mark.parametrize(
    ("stamp", "said"),
    [
        ("2025-03-01T11:59:30.000Z", "started just now"),  # 30 s before NOW: not "started now ago"
        ("9999-12-31T23:59:59.999Z", "started in the future"),  # a skewed or hostile header clock
        ("2025-02-28T12:00:00.000Z", "started 1d ago"),
    ],
)
async def test_the_header_says_when_the_session_started_in_words(tmp_path: Path, stamp: str, said: str) -> None:
    path = write_session(tmp_path / "session.jsonl")
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0].replace(b"2024-12-01T09:00:00.000Z", stamp.encode()), *lines[1:]]) + b"\n")
    app = TreeApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        title = str(app.screen.query_one("#seance-tree-title", Static).render())
        assert f"  ·  {said}  ·  " in title, title
        assert " ago ago" not in title and "now ago" not in title
