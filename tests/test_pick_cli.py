"""`seance pick` for real, in a tmux terminal: the answer on stdout, the exit code, nothing else.

Each test runs its own tmux server (a private socket), so it never touches the user's tmux.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.core.settings import save_setting

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """One `seance` command in a detached 120x40 tmux session; stdout to a file, then the exit code."""

    def __init__(self, workdir: Path, socket: str) -> None:
        self.workdir = workdir
        self.socket = socket
        self.out = workdir / "out.txt"
        self.rc = workdir / "rc.txt"

    def tmux(self, *args: str) -> str:
        result = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False)
        return result.stdout

    def start(self, *seance_args: str) -> None:
        env = f"SEANCE_CACHE_DIR={shlex.quote(str(self.workdir / 'cache'))} TERM=xterm-256color"
        command = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "seance", *seance_args))
        script = f"cd {shlex.quote(str(self.workdir))} && env {env} {command} > out.txt; echo $? > rc.txt"
        self.tmux("new-session", "-d", "-s", "pick", "-x", "120", "-y", "40", script)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "pick")

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on screen:\n{self.screen()}")

    def wait_gone(self, text: str, timeout: float = 20.0) -> str:
        """The screen once `text` is no longer on it (a dialog closed)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text not in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} stayed on screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "pick", key)
            time.sleep(0.15)

    def continue_missing_cwd(self) -> None:
        """The test sessions' cwds exist nowhere: seance asks as pi does ("Session cwd not found"); Enter continues."""
        self.wait_for("Session cwd not found")
        self.keys("Enter")

    def result(self, timeout: float = 20.0) -> tuple[int, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.rc.exists() and self.rc.read_text().strip():
                return int(self.rc.read_text()), self.out.read_text()
            time.sleep(0.1)
        raise AssertionError(f"seance did not exit:\n{self.screen()}")


@pytest.fixture(autouse=True)
def _children_threaded() -> None:
    """These rows include the standard fork (keys move over it): pi's threaded look, saved as
    the setting the command reads (the default hides child sessions)."""
    save_setting("children", "threaded")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path, f"seance-test-{os.getpid()}-{tmp_path.name}")
    yield term
    term.tmux("kill-server")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def test_enter_prints_the_path_and_exits_0(terminal: Terminal, root: Path) -> None:
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("Down", "Down", "Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0
    assert out == f"{session_path(root, Spec('s-named', PROJECT))}\n"


def test_a_missing_cwd_is_asked_about_like_pi_and_esc_stays_in_the_picker(terminal: Terminal, root: Path) -> None:
    terminal.start("pick", "--root", str(root), "--cwd", "/", "--all", "--json")
    terminal.wait_for("8 sessions")
    terminal.keys("Enter")
    screen = terminal.wait_for("Session cwd not found")
    assert "cwd from session file does not exist" in screen and "continue in current cwd" in screen
    assert "/work/demo/project" in screen  # the session's cwd; then the current one, `/`
    terminal.keys("Escape")  # pi's Cancel: nothing is chosen, the list is back
    # (the list's status shows behind the dialog too: wait for the dialog to go, not for the list)
    assert "8 sessions" in terminal.wait_gone("Session cwd not found")
    terminal.keys("Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0 and json.loads(out)["cwdMissing"] is True


@pytest.mark.parametrize("keys", [("Enter",), ("C-t", "Enter")], ids=["list", "tree"])
def test_no_cwd_prompt_resumes_without_asking_and_still_says_cwd_missing(
    terminal: Terminal, root: Path, keys: tuple[str, ...]
) -> None:
    """For a host that asks itself (pi's switchSession does: /seance put the question twice)."""
    terminal.start("pick", "--root", str(root), "--cwd", "/", "--all", "--json", "--no-cwd-prompt")
    terminal.wait_for("8 sessions")
    for key in keys:
        terminal.keys(key)
        if key == "C-t":
            terminal.wait_for("Session Tree")
    code, out = terminal.result()
    assert code == 0 and json.loads(out)["cwdMissing"] is True
    assert "Session cwd not found" not in terminal.screen()


def test_escape_prints_nothing_and_exits_130(terminal: Terminal, root: Path) -> None:
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("z", "e", "b")
    terminal.wait_for("zeb")
    terminal.keys("Escape")  # clears the query
    terminal.wait_for("5 sessions")
    terminal.keys("Escape")  # cancels
    code, out = terminal.result()
    assert (code, out) == (130, "")


def test_space_and_question_mark_typed_fast_go_into_the_query(terminal: Terminal, root: Path) -> None:
    """Space selects and ? opens help only on an empty query.  Typed in one burst (or pasted),
    "x?y z" reached the priority bindings before the input had taken the "x": help opened and
    the space selected a row.  A Pilot press waits between keys and never showed it."""
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.tmux("send-keys", "-t", "pick", "-l", "x?y z")  # one write, as a fast typist or a paste
    screen = terminal.wait_for("x?y z")
    time.sleep(0.5)
    screen = terminal.screen()
    assert "Keys" not in screen and "1 selected" not in screen, screen
    terminal.keys("C-u", "Space")  # on the empty query, Space selects the row
    terminal.wait_for("1 selected")
    terminal.keys("?")
    terminal.wait_for("Keys")


def test_ctrl_u_then_a_word_in_one_write_keeps_the_word(terminal: Terminal, root: Path) -> None:
    """Ctrl+U (the input's binding) ran once the key had bubbled back to the app, after the
    word behind it in the same write had been typed: the query ended empty (issue 14)."""
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.tmux("send-keys", "-t", "pick", "-l", "ancient")
    terminal.wait_for("1 of 5 sessions")
    terminal.tmux("send-keys", "-t", "pick", "C-u", "zebra")  # one write, as `tmux send-keys` sends it
    terminal.wait_for("README")  # the word's hit (its second message mentions the zebra crossing)
    time.sleep(0.5)  # a late Ctrl+U would have erased the word by now
    screen = terminal.screen()
    assert "zebra" in screen.splitlines()[1] and "1 of 5 sessions" in screen, screen


def test_a_word_then_enter_in_one_write_prints_the_words_session(terminal: Terminal, root: Path) -> None:
    """The pick contract under a script (pi's /resume, `tmux send-keys 'word' Enter`): Enter
    acted on the row highlighted before the word was searched and printed that session's path
    (s-auth, the top row); it waits for the word's rows and prints its hit (issue 14)."""
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.tmux("send-keys", "-t", "pick", "zebra", "Enter")  # one write, as `tmux send-keys` sends it
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert (code, out) == (0, f"{session_path(root, Spec('s-docs', PROJECT))}\n")


def test_ctrl_c_cancels(terminal: Terminal, root: Path) -> None:
    terminal.start("pick", "--root", str(root), "--all")
    terminal.wait_for("8 sessions")
    terminal.keys("C-c")
    assert terminal.result() == (130, "")


def test_json_query_and_all_scope(terminal: Terminal, root: Path) -> None:
    terminal.start("pick", "--root", str(root), "--all", "--query", "parser", "--json")
    terminal.wait_for("1 of 8 sessions")
    terminal.keys("Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0
    assert json.loads(out) == {
        "action": "resume",
        "path": str(session_path(root, Spec("s-other1", "/work/demo/other"))),
        "id": "s-other1",
        "leafId": None,
        "cwd": "/work/demo/other",
        "prefill": None,
        "reset": False,
        "entryId": None,
        "cwdMissing": True,
    }


def test_no_sessions_anywhere_is_exit_1(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "seance", "pick", "--root", str(empty)],
        capture_output=True,
        text=True,
        env={**os.environ, "SEANCE_CACHE_DIR": str(tmp_path / "cache")},
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no sessions found" in result.stderr and "Traceback" not in result.stderr


def test_files_that_are_not_sessions_are_exit_1(tmp_path: Path) -> None:
    bucket = tmp_path / "junk" / "--work-x--"
    bucket.mkdir(parents=True)
    (bucket / "a.jsonl").write_text('{"foo": 1}\n')
    (bucket / "b.jsonl").write_text("not json at all\n")
    result = subprocess.run(
        [sys.executable, "-m", "seance", "pick", "--root", str(tmp_path / "junk")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "SEANCE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 1 and result.stdout == ""
    assert "no sessions found" in result.stderr and "a.jsonl" in result.stderr and "b.jsonl" in result.stderr
    assert "Traceback" not in result.stderr


def test_browse_enter_opens_the_tree_and_enter_there_prints_the_path(terminal: Terminal, root: Path) -> None:
    terminal.start("--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("Enter")
    terminal.wait_for("Session Tree")
    terminal.keys("Escape")  # back to the list
    terminal.wait_for("5 sessions")
    terminal.keys("Enter")
    terminal.wait_for("Session Tree")
    terminal.keys("Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert (code, out) == (0, f"{session_path(root, Spec('s-auth', PROJECT))}\n")


def test_demo_generates_a_root_and_browses_it(terminal: Terminal) -> None:
    terminal.start("--demo")
    screen = terminal.wait_for("Current Folder", timeout=60)
    assert "Traceback" not in screen
    terminal.wait_for("›")  # rows
    terminal.keys("Tab")
    terminal.wait_for("◉ All")
    terminal.keys("Escape")
    assert terminal.result() == (130, "")


def test_demo_names_are_short_whole_words_and_never_empty(tmp_path: Path) -> None:
    from seance.cli.ui import DEMO_PROJECTS, DEMO_SESSIONS
    from seance.core.generate import _Text, generate_corpus, short_title

    assert (
        short_title("Refactor the memory latency fix before release tomorrow morning.", 30)
        == "Refactor the memory latency"
    )
    corpus = generate_corpus(
        tmp_path / "demo", sessions=DEMO_SESSIONS, projects=DEMO_PROJECTS, seed=7, mean_bytes=2_000, cleared_names=False
    )
    names = [
        json.loads(line)["name"]
        for path in corpus.files
        for line in path.read_text().splitlines()
        if '"session_info"' in line
    ]
    assert names and all(name and name == name.strip() and len(name) <= 40 for name in names)
    pool = _Text(random.Random(7)).sentences  # what generate_corpus(seed=7) draws its prose from
    assert all(
        any(sentence.rstrip(".") == name or sentence.startswith(name + " ") for sentence in pool) for name in names
    ), "names end at a word boundary"


def test_tree_keys_in_a_real_terminal(terminal: Terminal, root: Path) -> None:
    """Shift+Ctrl+O as a kitty-protocol terminal sends it (CSI 111;6u) cycles the filter backwards;
    F1 opens help; Shift+T shows label times instead of typing "T" into the search."""
    terminal.start("tree", str(session_path(root, Spec("s-auth", PROJECT))))
    terminal.wait_for("filter: default")
    terminal.tmux(
        "send-keys", "-t", "pick", "-H", *["1b", "5b", "31", "31", "31", "3b", "36", "75"]
    )  # ESC [ 1 1 1 ; 6 u
    terminal.wait_for("filter: all")
    terminal.keys("T")
    screen = terminal.wait_for("+label time")
    assert "search: T" not in screen
    terminal.keys("F1")
    terminal.wait_for("previous filter")
    terminal.keys("Escape", "Escape")
    assert terminal.result() == (130, "")
