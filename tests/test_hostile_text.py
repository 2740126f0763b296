"""Session text never drives the terminal: hostile strings in every shown field, every exit.

A corpus of escape sequences (clear screen, OSC 52 clipboard write, OSC 0 title, CSI, C1 CSI and
DCS), C0 controls (BEL, backspace, CR, newline, NUL), bidi overrides and Rich/Textual markup is
written into every field seance shows: the header id and cwd, the session name, messages,
thinking, tool names and arguments, tool results, labels, compaction and branch summaries,
model names, entry ids, and the session file's own name and directory.  Then every CLI command
and the UI (picker, preview, tree, help, dialogs, toasts) runs on it, and what reaches the
terminal is checked: no control, C1 or bidi character, one path per line, markup shown literally.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from ui_harness import picker_app, settle

from seance.app.screens.help import HelpScreen
from seance.app.screens.session_list import PickerOptions, SessionPickerScreen
from seance.app.screens.session_tree import SessionTreeScreen
from seance.app.screens.skipped import SkippedScreen
from seance.cli import main
from seance.cli.catalog import QUICK_LEGEND
from seance.core.session import SessionError
from seance.core.text import shell_path

MARKUP = "[bold red]x[/]"
PARTS = (
    MARKUP,  # first: the visible proof that markup was not interpreted
    "[/]",
    "[link=https://e.vil]l[/link]",
    "\\[",
    "\x1b[2J",  # clear screen
    "\x1b]52;c;cHduZWQ=\x07",  # OSC 52: write "pwned" to the clipboard
    "\x1b]0;PWNED-TITLE\x07",  # OSC 0: set the window title
    "\x1b[31m",  # CSI colour
    "\x9b31m",  # C1 CSI
    "\x90qdcs\x9c",  # C1 DCS ... ST
    "\x07\x08\r\n\t",  # BEL, backspace, CR, newline, tab
    "\u202eevil\u202c\u2066iso\u2069\u200f\u061c",  # bidi override, isolate, marks
    "\U0001f47b",  # emoji: harmless, must survive
    "\x00",
    "\x7f",
)
HOSTILE = "".join(PARTS)
FILE_SAFE = HOSTILE.replace("\x00", "").replace("/", "|")  # what a file name can hold
# What may not reach the terminal from session text (newline and tab only between lines).
DANGER = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
SID = f"hostile-{HOSTILE}"
STAMP = "2026-01-01T00:00:00.000Z"


def _entry(kind: str, entry_id: str, parent: str | None, **fields) -> dict:
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": STAMP, **fields}


def _calls() -> list[dict]:
    tools = {
        "read": {"path": f"/r/{HOSTILE}", "offset": 1, "limit": 5},
        "write": {"path": f"/w/{HOSTILE}", "content": HOSTILE},
        "edit": {"path": f"/e/{HOSTILE}"},
        "grep": {"pattern": HOSTILE, "path": f"/g/{HOSTILE}"},
        "find": {"pattern": HOSTILE, "path": f"/f/{HOSTILE}"},
        "ls": {"path": f"/l/{HOSTILE}"},
        "bash": {"command": HOSTILE},
        f"tool{HOSTILE}": {"arg": HOSTILE},
    }
    return [
        {"type": "toolCall", "id": f"call-{number}", "name": name, "arguments": arguments}
        for number, (name, arguments) in enumerate(tools.items())
    ]


def write_hostile_session(root: Path) -> Path:
    """A session with hostile text in every shown field, under a hostile directory and file name."""
    calls = _calls()
    entries: list[dict] = [
        {"type": "session", "version": 3, "id": SID, "timestamp": STAMP, "cwd": f"/p/{HOSTILE}"},
        _entry("model_change", f"m{HOSTILE}", None, provider=HOSTILE, modelId=HOSTILE),
        _entry("message", f"u1{HOSTILE}", f"m{HOSTILE}", message={"role": "user", "content": HOSTILE}),
        _entry(
            "message",
            f"a1{HOSTILE}",
            f"u1{HOSTILE}",
            message={
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": HOSTILE}, {"type": "text", "text": HOSTILE}, *calls],
                "provider": HOSTILE,
                "model": HOSTILE,
            },
        ),
    ]
    parent = f"a1{HOSTILE}"
    for call in calls:
        entry_id = f"r-{call['id']}{HOSTILE}"
        message = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": [{"type": "text", "text": HOSTILE}],
        }
        entries.append(_entry("message", entry_id, parent, message=message))
        parent = entry_id
    entries += [
        _entry("label", f"l{HOSTILE}", parent, targetId=f"a1{HOSTILE}", label=HOSTILE),
        _entry("session_info", f"n{HOSTILE}", f"l{HOSTILE}", name=HOSTILE),
        _entry(
            "compaction",
            f"c{HOSTILE}",
            f"n{HOSTILE}",
            summary=HOSTILE,
            firstKeptEntryId=f"a1{HOSTILE}",
            tokensBefore=12000,
        ),
        _entry("branch_summary", f"b{HOSTILE}", f"c{HOSTILE}", fromId=f"u1{HOSTILE}", summary=HOSTILE),
        _entry("custom_message", f"x{HOSTILE}", f"b{HOSTILE}", customType=HOSTILE, content=HOSTILE, display=True),
        _entry("message", f"u2{HOSTILE}", f"x{HOSTILE}", message={"role": "user", "content": f"again {HOSTILE}"}),
    ]
    bucket = root / f"--p-{FILE_SAFE}--"
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / f"2026-01-01T00-00-00-000Z_{FILE_SAFE}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    stamp = time.time() - 3600  # an hour ago: no agent is writing it, so rm and rename go ahead
    os.utime(path, (stamp, stamp))
    return path


def write_not_a_session(root: Path) -> Path:
    bucket = root / f"--p-{FILE_SAFE}--"
    bucket.mkdir(parents=True, exist_ok=True)
    path = bucket / f"junk-{FILE_SAFE}.jsonl"
    path.write_bytes(b"this is not json\n")
    return path


def assert_clean(text: str, where: str) -> None:
    """No control, C1 or bidi character from session text (newlines and tabs only)."""
    found = sorted(set(DANGER.findall(text)))
    assert not found, f"{where}: {found!r} reached the terminal in {text[:2000]!r}"


@pytest.fixture
def env(tmp_path, monkeypatch) -> Path:
    for name in ("home", "data", "agent", "sessions", "cache"):
        (tmp_path / name).mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert_clean(out, f"stdout of {argv[:3]}")
    assert_clean(err, f"stderr of {argv[:3]}")
    return code, out, err


def unquoted(line: str) -> str:
    """What bash makes of a printed path line (the `$'...'` quoting is bash's)."""
    result = subprocess.run(
        ["bash", "-c", f"printf %s {line}"], capture_output=True, check=True, env={**os.environ, "LC_ALL": "C.UTF-8"}
    )
    return os.fsdecode(result.stdout)


# -- the sanitisers --------------------------------------------------------------------------------


def test_shell_path_leaves_normal_paths_alone_and_quotes_hostile_ones_reversibly() -> None:
    normal = "/home/me/.pi/agent/sessions/--home-me-p--/2026_x y'z\\.jsonl"
    assert shell_path(normal) == normal  # `$(seance pick)` stays exact
    hostile = f"/s/{FILE_SAFE}\udcff.jsonl"  # with an undecodable byte too
    line = shell_path(hostile)
    assert line.startswith("$'") and "\n" not in line
    assert_clean(line, "shell_path")
    if shutil.which("bash"):
        assert unquoted(line) == hostile


# -- the command line ------------------------------------------------------------------------------


def test_every_cli_output_of_a_hostile_session_is_clean_and_one_path_per_line(env, capsys) -> None:
    root = env / "sessions"
    path = write_hostile_session(root)
    junk = write_not_a_session(root)
    r = ("--root", str(root))

    for argv in (("ls", "--all"), ("ls", "--all", "--quick"), ("ls", "--all", "--sort", "threaded")):
        code, out, err = run(capsys, *argv, *r)
        assert code == 0 and MARKUP in out, argv  # the title (the session name) is shown, literally
        assert len(out.splitlines()) == 1, out  # one session, one line
        lines = [line for line in err.splitlines() if line != QUICK_LEGEND]  # --quick labels its estimates
        assert len(lines) == 1 and "skipped 1" in lines[0] and "junk-" in lines[0], err

    for argv in (("ls", "--all", "--json"), ("ls", "--all", "--json", "--quick"), ("ls", "--all", "--json", "-q", "x")):
        code, out, _err = run(capsys, *argv, *r)
        assert orjson.loads(out)[0]["path"] == str(path)

    code, out, err = run(capsys, "show", str(path))
    assert code == 0 and MARKUP in out and "\\e]52;c;" in out  # the id is shown, its escapes made visible
    code, out, _err = run(capsys, "show", str(path), "--json")
    payload = orjson.loads(out)
    assert payload["id"] == SID and payload["path"] == str(path) and HOSTILE in payload["messages"][0]["text"]

    code, out, _err = run(capsys, "tree", str(path), "--text")
    assert code == 0 and MARKUP in out
    assert len(out.splitlines()) == 17  # one line per entry, whatever the ids hold
    code, out, _err = run(capsys, "tree", str(path), "--json")
    assert orjson.loads(out)["nodes"][0]["id"] == f"m{HOSTILE}"

    code, out, err = run(capsys, "resolve", "hostile", *r, "--cwd", f"/p/{HOSTILE}")
    assert code == 0 and out.count("\n") == 1, out
    if shutil.which("bash"):
        assert unquoted(out.rstrip("\n")) == str(path)
    code, out, _err = run(capsys, "resolve", "hostile", *r, "--cwd", f"/p/{HOSTILE}", "--json")
    assert orjson.loads(out)["path"] == str(path)

    code, out, err = run(capsys, "rename", str(path), HOSTILE)
    assert code == 0 and out.count("\n") == 1 and "renamed" in err

    code, out, err = run(capsys, "show", str(junk))  # the error names the hostile file
    assert code == 2 and "not a session" in err and err.count("\n") == 1, err
    code, out, err = run(capsys, "show", f"{root}/nothing-{FILE_SAFE}.jsonl")
    assert code == 1 and err.count("\n") == 1, err
    code, out, err = run(capsys, "resolve", f"none{HOSTILE}", *r)
    assert code == 1 and err.count("\n") == 1, err

    stamp = time.time() - 3600  # the rename just wrote it: say nobody has since, or rm refuses
    os.utime(path, (stamp, stamp))
    code, out, err = run(capsys, "rm", str(path))
    assert code == 0 and out.count("\n") == 1 and "moved to the Trash" in err, err
    assert err.count("\n") == 2, err  # the moved file (no artifacts folder here), the undo hint
    code, out, err = run(capsys, "rm", "--undo")
    assert code == 0 and path.exists() and out.count("\n") == 1, out
    if shutil.which("bash"):
        assert unquoted(out.rstrip("\n")) == str(path)


def test_pick_prints_a_hostile_path_on_one_line(env, capsys) -> None:
    from seance.app.results import PickResult
    from seance.cli.ui import _print_result

    path = write_hostile_session(env / "sessions")
    result = PickResult(action="resume", path=path, session_id=SID, leaf_id=None, cwd=f"/p/{HOSTILE}")
    assert _print_result(result, as_json=False) == 0
    out = capsys.readouterr().out
    assert_clean(out, "pick")
    assert out.count("\n") == 1 and out.startswith("$'")
    assert _print_result(result, as_json=True) == 0
    out = capsys.readouterr().out
    assert_clean(out, "pick --json")
    assert orjson.loads(out)["id"] == SID


def test_no_session_found_lists_the_hostile_skipped_files_on_one_line_each(env, capsys) -> None:
    import argparse

    from seance.cli.ui import run_ui

    root = env / "sessions"
    write_not_a_session(root)
    code = run_ui(argparse.Namespace(root=[str(root)], command="pick"))
    err = capsys.readouterr().err
    assert code == 1 and "junk-" in err
    assert_clean(err, "no sessions found")
    assert err.count("\n") == 2, err


# -- the terminal UI -------------------------------------------------------------------------------


def rendered(app) -> tuple[str, str]:
    """(the text of every cell on screen, what the driver would write for a full redraw)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True, color_system="truecolor", record=True
    )
    update = app.screen._compositor.render_update(full=True, screen_stack=app._background_screens)
    console.print(update)
    return console.export_text(styles=False), update.render_segments(console)


def assert_screen_clean(app, where: str) -> str:
    text, stream = rendered(app)
    assert_clean(text, where)
    # Textual's own output is CSI (style, cursor) only: no OSC, no C1, no bell from the session
    for sequence in ("\x1b]", "\x07", "\x1b[2J", "\x9b", "\x90", "\u202e", "PWNED-TITLE\x07"):
        assert sequence not in stream, f"{where}: {sequence!r} in the terminal stream"
    return text


async def test_picker_preview_tree_help_and_dialogs_draw_hostile_text_inertly(env, monkeypatch) -> None:
    root = env / "sessions"
    path = write_hostile_session(root)
    write_not_a_session(root)
    app = picker_app(root, scope="all", cache_dir=env / "cache", options=PickerOptions(watch=False, enter="tree"))
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await settle(pilot, 5)
        # the list and the preview (messages, thinking, tool calls and results, labels, model)
        text = assert_screen_clean(app, "picker and preview")
        assert text.count(MARKUP) >= 3  # the name in the list and the header, messages: shown as text
        assert "models [bold red]x[/]" in text  # the stats block (a tall pane) names the model as text
        await pilot.press("alt+i")  # without the stats block, the tool results come into view
        await settle(pilot)
        text = assert_screen_clean(app, "picker and preview without stats")
        assert "result [bash: [bold red]x[/]" in text, text
        assert "skipped" in text  # the status bar names the hostile junk file

        await pilot.press("ctrl+p")  # file paths
        await settle(pilot)
        assert_screen_clean(app, "picker with paths")

        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        assert_screen_clean(app, "help")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("alt+s")  # the skipped files, the hostile junk file's name among them
        await settle(pilot)
        assert isinstance(app.screen, SkippedScreen)
        assert_screen_clean(app, "skipped files")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("ctrl+d")  # the delete dialog shows the title
        await settle(pilot)
        text = assert_screen_clean(app, "delete dialog")
        assert "Delete session?" in text and MARKUP in text
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("ctrl+r")  # the rename dialog shows the title and the name
        await settle(pilot)
        assert_screen_clean(app, "rename dialog")
        await pilot.press("escape")
        await settle(pilot)

        # a failing rename: the error names the hostile path, in the status bar
        def refuse(session_path, name):
            raise SessionError(f"{session_path}: changed {HOSTILE}")

        monkeypatch.setattr("seance.core.writes.rename_session", refuse)
        await pilot.press("ctrl+r", "z", "enter")
        await settle(pilot)
        text = assert_screen_clean(app, "rename failure")
        assert "Rename failed" in text

        # a toast, whoever raises it and however: the app's notify is the one exit
        app.notify(f"{path} {HOSTILE}", title=HOSTILE)
        await settle(pilot)
        text = assert_screen_clean(app, "toast")
        assert text.count(MARKUP) >= 2

        assert isinstance(app.screen, SessionPickerScreen)
        await pilot.press("ctrl+t")  # the tree: ids, labels, tool summaries, compaction, branch summary
        await settle(pilot, 5)
        assert isinstance(app.screen, SessionTreeScreen)
        text = assert_screen_clean(app, "tree")
        assert "[grep: /" in text and "[read: /r/" in text and f"[{MARKUP}" in text.replace("\n", "")
        await pilot.press("ctrl+a")  # every entry, the model change and session info too
        await settle(pilot)
        assert_screen_clean(app, "tree, all entries")
        assert app.title == "seance" and app.sub_title == ""  # nothing from the session in the title


async def test_a_hostile_label_failure_toast_in_the_tree_is_inert(env, monkeypatch) -> None:
    path = write_hostile_session(env / "sessions")

    def refuse(session_path, target_id, label):
        raise SessionError(f"{session_path}: entry {target_id} changed; nothing was written")

    monkeypatch.setattr("seance.app.screens.session_tree.set_label", refuse)
    from seance.app.app import SeanceApp

    app = SeanceApp(lambda: SessionTreeScreen(path), theme="textual-dark")
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot, 5)
        assert_screen_clean(app, "tree")
        await pilot.press("L")
        await settle(pilot)
        assert_screen_clean(app, "label dialog")
        await pilot.press("k", "enter")
        await settle(pilot)
        assert app._notifications, "the failure was shown"
        text = assert_screen_clean(app, "label failure toast")
        assert "Label not saved" in text


# -- end to end in a real terminal -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)")
def test_pick_in_tmux_sets_no_title_and_writes_no_clipboard_from_session_text(env) -> None:
    root = env / "sessions"
    write_hostile_session(root)
    socket = str(env / "tmux.sock")
    tmux = ["tmux", "-S", socket, "-f", "/dev/null"]
    environment = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", ""), "TERM": "xterm-256color"}
    environment.pop("TMUX", None)
    command = f"{sys.executable} -m seance pick --all --root {shell_quote(str(root))}"
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "160", "-y", "45", "-s", "h", command], env=environment, check=True
    )
    try:
        subprocess.run([*tmux, "set-option", "-g", "set-clipboard", "on"], check=True)
        subprocess.run([*tmux, "set-option", "-g", "allow-rename", "on"], check=True)
        screen = ""
        for _ in range(150):  # up to 30 s for the first paint
            screen = capture(tmux)
            if "Current Folder" in screen:
                break
            time.sleep(0.2)
        assert "Current Folder" in screen, screen
        time.sleep(1.0)
        for keys in (["C-o"], ["C-t"], ["C-a"]):  # preview, tree, all entries
            subprocess.run([*tmux, "send-keys", "-t", "h", *keys], check=True)
            time.sleep(1.5)
            screen = capture(tmux)
            assert_clean(screen.replace("\x1b[", "CSI["), f"tmux after {keys}")  # SGR is tmux's own
        title = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "h", "#{pane_title}|#{window_name}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "PWNED" not in title, title
        buffers = subprocess.run([*tmux, "list-buffers"], capture_output=True, text=True).stdout
        assert "pwned" not in buffers and "cHduZWQ" not in buffers, buffers
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def capture(tmux: list[str]) -> str:
    return subprocess.run(
        [*tmux, "capture-pane", "-e", "-p", "-t", "h"], capture_output=True, text=True, check=True
    ).stdout


def shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


async def test_a_changed_file_toast_in_a_host_app_shows_the_hostile_path_as_text(env) -> None:
    """Embedded (a host's own App, whose `notify` parses markup by default), the tree's toast
    for a session file rewritten under it names the path: as text, never as markup."""
    from textual.app import App

    from seance.core.linesource import changed_error

    path = write_hostile_session(env / "sessions")
    app = App()
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        screen = SessionTreeScreen(path)
        app.push_screen(screen)
        await settle(pilot, 5)
        screen._source_changed(changed_error(path))  # what a read of the rewritten file raises
        await settle(pilot)
        assert [notification.markup for notification in app._notifications] == [False]
        text = assert_screen_clean(app, "changed-file toast in a host")
        assert "red]x[|][|][link=https:||e.vil]l[|link]" in text and "changed on disk" in text  # literally


async def test_enter_on_an_unchanged_rename_or_label_prompt_writes_nothing(env) -> None:
    """The prompts are pre-filled with the name or label as drawn (one clean line: no
    controls, no newline, runs of spaces folded).  Enter without an edit changed nothing:
    the session file stays as it was, not rewritten with the drawn, sanitised text."""
    root = env / "sessions"
    path = write_hostile_session(root)
    before = path.read_bytes()
    app = picker_app(root, scope="all", cache_dir=env / "cache", options=PickerOptions(watch=False, enter="tree"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, 5)
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionPickerScreen)
        assert path.read_bytes() == before, "the name was rewritten as drawn"

        await pilot.press("ctrl+t")
        await settle(pilot, 5)
        await pilot.press("ctrl+l")  # labelled entries only: the cursor is on the labelled one
        await settle(pilot)
        await pilot.press("L")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, SessionTreeScreen)
        assert path.read_bytes() == before, "the label was rewritten as drawn"
