"""The pi extension (integrations/pi) end to end: real pi 0.73.1 in tmux, real seance inside it.

pi runs interactively without an API key (it starts; no model is prompted).  Sessions are
written by pi's own SessionManager; the extension is installed with `pi install <path>`, as
the README says.  After each pick, pi is made to append something cheap (`/name X`, which
writes a session_info entry whose parentId is pi's current leaf) so pi's own files say which
session and which leaf pi switched to; the editor text is read off the screen.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PI_PACKAGE = REPO / "tests" / "oracle" / "node_modules" / "@mariozechner" / "pi-coding-agent"
PI_CLI = PI_PACKAGE / "dist" / "cli.js"  # package.json "bin": {"pi": "dist/cli.js"}
EXTENSION = REPO / "integrations" / "pi"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (pi runs on node)"),
    pytest.mark.skipif(not PI_CLI.exists(), reason="pi's npm package is not installed (cd tests/oracle && npm ci)"),
]

WRITE_SESSIONS = """
const [piDir, cwd] = process.argv.slice(2);
const { SessionManager } = await import(`${piDir}/dist/index.js`);
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const assistant = (text) => ({ role: "assistant", content: [{ type: "text", text }], provider: "anthropic",
  model: "claude-test", api: "anthropic-messages", stopReason: "stop", usage, timestamp: Date.now() });
const out = {};
const specs = [["alpha", ["alpha first prompt", "alpha second prompt"]], ["beta", ["beta only prompt"]]];
for (const [name, prompts] of specs) {
  const sm = SessionManager.create(cwd);
  const ids = [];
  for (const text of prompts) { ids.push(sm.appendMessage(user(text)), sm.appendMessage(assistant(`ok ${text}`))); }
  sm.appendSessionInfo(name);
  out[name] = { file: sm.getSessionFile(), ids };
}
console.log(JSON.stringify(out));
"""


def entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class Pi:
    """pi in a detached 120x40 tmux session on a private socket, with its own HOME and agent dir."""

    def __init__(self, tmp: Path, socket: str) -> None:
        self.tmp, self.socket = tmp, socket
        self.home, self.agent, self.project = tmp / "home", tmp / "agent", tmp / "project"
        for folder in (self.home, self.agent, self.project):
            folder.mkdir()
        self.sessions = self.agent / "sessions" / ("--" + str(self.project).strip("/").replace("/", "-") + "--")
        self.env = {
            "HOME": str(self.home),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "PI_OFFLINE": "1",  # no fd / ripgrep downloads at start-up
            "SEANCE_CACHE_DIR": str(tmp / "cache"),
            "PYTHONPATH": str(REPO.parent),
            "TERM": "xterm-256color",
        }

    def node(self, *args: str, stdin: str | None = None) -> str:
        env = {**os.environ, **self.env}
        for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"):
            env.pop(key, None)
        result = subprocess.run(
            ["node", *args], input=stdin, capture_output=True, text=True, env=env, cwd=self.project, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False).stdout

    def start(self, **extra_env: str) -> None:
        env = {**self.env, **extra_env}
        assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
        unset = "-u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u GEMINI_API_KEY"
        # (exec: pi is the pane's process, as a shell with job control runs it: a Ctrl+C reaches
        # pi and its children, not a wrapping `sh` that would die of it and take the pane along)
        pi_cli = shlex.quote(str(PI_CLI))
        command = f"cd {shlex.quote(str(self.project))} && exec env {unset} {assignments} node {pi_cli}"
        self.stop()
        self.tmux("new-session", "-d", "-s", "pi", "-x", "120", "-y", "40", command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "pi")

    def wait_for(self, check: str | object, timeout: float = 20.0) -> str:
        """Poll the screen until `check` (text, or a predicate on the screen) holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if (check in screen) if isinstance(check, str) else check(screen):  # type: ignore[operator]
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{check!r} never held; the screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "pi", key)
            time.sleep(0.15)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "pi", "-l", text)
        time.sleep(0.15)

    def command(self, text: str) -> None:
        """Type a slash command in pi's editor and submit it."""
        self.type(text)
        self.wait_for(text)
        self.keys("Enter")

    def editor_text(self) -> str | None:
        """What pi's editor holds: the lines between the last two horizontal rules (None: no editor
        on screen, e.g. seance is still up)."""
        lines = self.screen().splitlines()
        rules = [number for number, line in enumerate(lines) if line.startswith("────")]
        if len(rules) < 2:
            return None
        return "\n".join(line.strip() for line in lines[rules[-2] + 1 : rules[-1]]).strip()

    def wait_for_file(self, path: Path, predicate: object, timeout: float = 10.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path.exists() and predicate(entries(path)):  # type: ignore[operator]
                return entries(path)
            time.sleep(0.1)
        raise AssertionError(f"{path} never matched; it holds:\n{path.read_text() if path.exists() else '-'}")

    def stop(self) -> None:
        """Close its terminal, then end what outlives it: pi survives its terminal's hang-up (only
        it, the session's leader, gets the SIGHUP), and so would a seance it runs (two were found
        spinning hours after their tests)."""
        self.tmux("kill-server")
        marker = f"PI_CODING_AGENT_DIR={self.agent}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environment = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if marker in environment:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture
def pi(tmp_path: Path) -> Iterator[Pi]:
    runner = Pi(tmp_path, f"seance-pi-{os.getpid()}-{tmp_path.name}")
    yield runner
    runner.stop()


def named(name: str):
    return lambda items: items[-1].get("type") == "session_info" and items[-1].get("name") == name


def resumed_at(items: list[dict], known: set[str]) -> str:
    """pi's leaf when `/name` was typed: the marker's nearest ancestor among `known` (the ids the
    file held before pi opened it; on resume pi may append its own entries, e.g. a
    thinking_level_change, before the marker)."""
    by_id = {item.get("id"): item for item in items}
    parent = items[-1].get("parentId")
    while parent is not None and parent not in known:
        parent = by_id[parent].get("parentId")
    return parent


def ids(path: Path) -> set[str]:
    return {item["id"] for item in entries(path) if "id" in item and item.get("type") != "session"}


def test_seance_inside_pi_resume_tree_fork_and_shortcut(pi: Pi) -> None:
    made = json.loads(pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=WRITE_SESSIONS))
    alpha, beta = Path(made["alpha"]["file"]), Path(made["beta"]["file"])
    alpha_ids = made["alpha"]["ids"]  # user, assistant, user, assistant
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    seance = f"{shlex.quote(sys.executable)} -m seance"
    pi.start(SEANCE_COMMAND=seance)
    pi.wait_for("seance.ts")  # pi lists the loaded extension

    # (a) a session from the list: Enter resumes it at its own leaf
    beta_leaf, beta_ids = entries(beta)[-1]["id"], ids(beta)
    pi.command("/seance beta")
    pi.wait_for(lambda screen: "› beta" in screen and "1 of" in screen)
    pi.keys("Enter")
    pi.wait_for("Resumed session")
    pi.command("/name e2e-a")
    assert resumed_at(pi.wait_for_file(beta, named("e2e-a")), beta_ids) == beta_leaf

    # (b) an earlier user message in the tree: pi resumes before it, its text in the editor
    alpha_before = ids(alpha)
    pi.command("/seance alpha")
    pi.wait_for(lambda screen: "› alpha" in screen and "1 of" in screen)
    pi.keys("C-t")
    pi.wait_for("Session Tree")
    pi.keys("Up", "Enter")  # from the leaf's assistant reply up to "alpha second prompt"
    pi.wait_for("Resumed session")
    pi.wait_for(lambda _screen: pi.editor_text() == "alpha second prompt")
    pi.keys("C-c")  # pi: clear the editor
    pi.wait_for(lambda _screen: pi.editor_text() == "")
    pi.command("/name e2e-b")
    assert resumed_at(pi.wait_for_file(alpha, named("e2e-b")), alpha_before) == alpha_ids[1]

    # (c) Ctrl+F forks: a new file whose parent is alpha, and pi writes there, not to alpha
    alpha_leaf, alpha_before = entries(alpha)[-1]["id"], ids(alpha)
    before = set(pi.sessions.iterdir())
    pi.command("/seance alpha")
    pi.wait_for(lambda screen: "› e2e-b" in screen and "1 of" in screen)  # alpha, named in (b)
    pi.keys("C-f")
    pi.wait_for("Resumed session")
    (fork,) = set(pi.sessions.iterdir()) - before
    assert entries(fork)[0]["parentSession"] == str(alpha)
    pi.command("/name e2e-c")
    assert resumed_at(pi.wait_for_file(fork, named("e2e-c")), alpha_before) == alpha_leaf
    assert ids(alpha) == alpha_before  # the source is untouched

    # Alt+S from a draft, Esc in seance: nothing switches and the draft comes back
    pi.type("my draft")
    pi.wait_for("my draft")
    pi.keys("M-s")
    pi.wait_for("Search sessions")
    pi.keys("Escape")
    pi.wait_for(lambda _screen: pi.editor_text() == "my draft")
    pi.keys("C-c")
    pi.command("/name e2e-d")
    pi.wait_for_file(fork, named("e2e-d"))


def test_seance_not_installed_is_a_notice(pi: Pi) -> None:
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=str(pi.tmp / "no-such-seance"))
    pi.wait_for("seance.ts")
    pi.command("/seance")
    pi.wait_for("seance is not installed (command not found")


def test_seance_failing_shows_its_own_message_not_just_a_status(pi: Pi) -> None:
    """No session anywhere: seance says why on stderr and exits 1.  That line went to the
    terminal, where pi's screen coming back wiped it: the notice said only "seance exited with
    status 1"."""
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance")
    screen = pi.wait_for("no sessions found under")
    assert "exited with status" not in screen


def test_a_query_that_starts_with_a_dash_is_a_query(pi: Pi) -> None:
    """`/seance -wip` ran `seance pick --query -wip`: argparse read `-wip` as an option, and
    seance refused to start (exit 2)."""
    pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=WRITE_SESSIONS)
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance -wip")
    pi.wait_for(lambda screen: "Sort:" in screen and "-wip" in screen)  # seance is up, the query typed
    pi.keys("Escape", "Escape")  # clear the query, then cancel
    screen = pi.wait_for(lambda _screen: pi.editor_text() == "")  # pi's screen is back, nothing said
    assert "Error" not in screen


def test_a_session_whose_cwd_is_gone_is_asked_about_once_by_pi(pi: Pi) -> None:
    """seance asked "Session cwd not found", then pi's switchSession asked the same again."""
    made = json.loads(pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=WRITE_SESSIONS))
    beta = Path(made["beta"]["file"])
    lines = beta.read_text(encoding="utf-8").splitlines()
    header = {**json.loads(lines[0]), "cwd": str(pi.tmp / "gone")}
    beta.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance beta")
    pi.wait_for(lambda screen: "Sort:" in screen and "beta" in screen)
    pi.keys("Tab")  # beta's cwd is no longer pi's: all projects
    pi.wait_for(lambda screen: "› beta" in screen and "1 of" in screen)
    pi.keys("Enter")
    screen = pi.wait_for("→ Yes")  # pi's own question, its selector
    assert "Session cwd not found" in screen and "Continue" not in screen  # not seance's dialog
    pi.keys("Enter")
    pi.wait_for("Resumed session in current cwd")


@pytest.mark.parametrize("earlier_turns", [0, 6000])
def test_a_tree_entry_of_a_v1_session_is_reached_and_pi_survives(pi: Pi, earlier_turns: int) -> None:
    """A v1 session has no entry ids: seance derives its own, pi draws random ones when it
    opens the file, so navigateTree(seance's id) threw "Entry … not found" inside the switch,
    and pi's resume treated that as fatal: pi exited (status 1).  The entry is now found by its
    place in the file.  With 6,000 turns before it (`tree --json` ~1.4 MB, over spawnSync's
    default 1 MiB buffer) the position was lost and pi opened the session at its leaf."""
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": {"total": 0}}

    def message(role: str, text: str) -> dict:
        extra = {"provider": "anthropic", "model": "claude-test", "stopReason": "stop", "usage": usage}
        body = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
        return {
            "type": "message",
            "timestamp": "2026-01-01T10:00:00.000Z",
            "message": body | (extra if role == "assistant" else {}),
        }

    header = {"type": "session", "id": "v1echo-0000", "timestamp": "2026-01-01T10:00:00.000Z", "cwd": str(pi.project)}
    lines = [header]
    for turn in range(earlier_turns):
        lines += [message("user", f"earlier {turn}"), message("assistant", f"ok earlier {turn}")]
    lines += [message("user", "echo first"), message("assistant", "ok echo"), message("user", "echo second")]
    lines.append(message("assistant", "ok echo 2"))
    pi.sessions.mkdir(parents=True)
    v1 = pi.sessions / "2026-01-01T10-00-00-000Z_v1echo-0000.jsonl"
    v1.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    # (with earlier turns "echo" is not in the title: the tree would open on its first match)
    pi.command("/seance" if earlier_turns else "/seance echo")
    title = "› earlier 0" if earlier_turns else "› echo first"
    pi.wait_for(lambda screen: title in screen and "Sort:" in screen, timeout=40)
    pi.keys("C-t")
    pi.wait_for("› • assistant: ok echo 2", timeout=40)  # (the tree's rows, the leaf's: a big one takes a while)
    pi.keys("Up", "Enter")  # from the leaf ("ok echo 2") up to "echo second"
    # (then `seance tree --json` of 12,004 entries, and pi's migration of them, under CI load:
    # seen blank for over 20 s once, the screen cleared for seance and not drawn again yet)
    pi.wait_for("Resumed session", timeout=60)
    pi.wait_for(lambda _screen: pi.editor_text() == "echo second")  # pi's /tree: before it, its text offered
    pi.keys("C-c")
    pi.wait_for(lambda _screen: pi.editor_text() == "")
    pi.command("/name e2e-v1")
    items = pi.wait_for_file(v1, named("e2e-v1"))  # (pi rewrote the file with its ids)
    by_id = {item.get("id"): item for item in items}
    parent = items[-1]["parentId"]
    while by_id[parent]["type"] != "message":  # past what pi appended on resume
        parent = by_id[parent]["parentId"]
    assert by_id[parent]["message"]["content"][0]["text"] == "ok echo"


UNANSWERED = """
const [piDir, cwd] = process.argv.slice(2);
const { SessionManager } = await import(`${piDir}/dist/index.js`);
const usage = { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
const user = (text) => ({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
const sm = SessionManager.create(cwd);
const ids = [sm.appendMessage(user("gamma first"))];
ids.push(sm.appendMessage({ role: "assistant", content: [{ type: "text", text: "ok gamma" }], provider: "anthropic",
  model: "claude-test", api: "anthropic-messages", stopReason: "stop", usage, timestamp: Date.now() }));
ids.push(sm.appendMessage(user("gamma unanswered")));
console.log(JSON.stringify({ file: sm.getSessionFile(), ids }));
"""


def test_the_last_prompt_chosen_in_the_tree_stays_in_the_context(pi: Pi) -> None:
    """A session that ends with an unanswered prompt: seance resumes at it (pi's /tree: "Already
    at this point") and its preview shows it in the context.  pi appends a thinking level on
    resume to a file without one, after which navigateTree(prompt) resumed *before* it, the
    prompt in the editor: not what seance showed."""
    made = json.loads(pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=UNANSWERED))
    path, prompt = Path(made["file"]), made["ids"][-1]
    known = ids(path)
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance gamma")
    pi.wait_for(lambda screen: "› gamma first" in screen and "Sort:" in screen)
    pi.keys("C-t")
    pi.wait_for("Session Tree")
    pi.keys("Enter")  # the tree opens on the leaf: the unanswered prompt
    pi.wait_for("Resumed session")
    pi.wait_for(lambda _screen: pi.editor_text() == "")
    pi.command("/name e2e-leaf")
    assert resumed_at(pi.wait_for_file(path, named("e2e-leaf")), known) == prompt


def test_print_mode_says_the_ui_is_needed(pi: Pi) -> None:
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    env = {**os.environ, **pi.env}
    result = subprocess.run(
        ["node", str(PI_CLI), "-p", "/seance"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=pi.project,
        timeout=60,
    )
    assert "/seance needs pi's interactive terminal UI" in result.stderr


# -- after a sweep of the extension (0.7.14) ---------------------------------------------------------


def _fake_seance(pi: Pi, script: str) -> str:
    """A stand-in `seance` (a shell script) for what the real one cannot be made to do on cue."""
    fake = pi.tmp / "fake-seance"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return str(fake)


def test_the_session_pi_has_open_is_never_moved_to_the_trash_from_seance(pi: Pi) -> None:
    """The extension names the file pi has open (`--open-session`): Ctrl+D on it says so and
    moves nothing (pi's own picker refuses it too).  It went to the Trash, and pi's next line
    made a new file at the path holding that line alone: no header, everything after it lost."""
    made = json.loads(pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=WRITE_SESSIONS))
    beta = Path(made["beta"]["file"])
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance beta")  # pi has beta open from here on
    pi.wait_for(lambda screen: "› beta" in screen and "1 of" in screen)
    pi.keys("Enter")
    pi.wait_for("Resumed session")
    pi.command("/name open-one")
    pi.wait_for_file(beta, named("open-one"))
    quiet = time.time() - 600  # (written ten minutes ago: no "in use" question either)
    os.utime(beta, (quiet, quiet))
    pi.command("/seance open-one")
    pi.wait_for(lambda screen: "› open-one" in screen and "1 of" in screen)
    pi.keys("C-d")
    pi.wait_for("Cannot delete the currently active")  # (the status line cuts the rest at 120 columns)
    pi.keys("Escape", "Escape")
    pi.wait_for(lambda _screen: pi.editor_text() is not None)
    pi.command("/name still-here")
    assert pi.wait_for_file(beta, named("still-here"))[0]["type"] == "session"


def test_ctrl_c_while_seance_starts_leaves_pi_running(pi: Pi) -> None:
    """pi's TUI is stopped while seance runs: until seance takes the terminal (its start-up),
    Ctrl+C is a SIGINT to pi's whole process group, and pi, with no handler, died of it."""
    log = pi.tmp / "fake.log"
    fake = _fake_seance(pi, f"echo started >> {shlex.quote(str(log))}\nsleep 3\n")
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=fake)
    pi.wait_for("seance.ts")
    pi.command("/seance")
    deadline = time.monotonic() + 10
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pi.keys("C-c")  # the user changes their mind while seance is still starting
    pi.wait_for("seance exited with status SIGINT")
    time.sleep(1.5)  # (the SIGINT pi caught is handled on a later turn of its loop: it died then)
    pi.type("still alive")
    pi.wait_for(lambda _screen: pi.editor_text() == "still alive")


def test_what_seance_prints_never_drives_pis_terminal(pi: Pi) -> None:
    """A seance that prints no JSON (exit 0): its stdout went raw into pi's notice, escape
    sequences and all (an OSC set the terminal's title, `ESC[2J` cleared the screen)."""
    fake = _fake_seance(pi, "printf 'oops \\033]2;PWNED-TITLE\\007 \\033[2J after'\n")
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=fake)
    pi.wait_for("seance.ts")
    pi.command("/seance")
    pi.wait_for("after")
    time.sleep(0.5)
    assert "PWNED" not in pi.tmux("display-message", "-p", "-t", "pi", "#{pane_title}")


def test_a_picked_file_pi_cannot_open_is_a_notice_not_a_new_empty_session(pi: Pi) -> None:
    """A session file whose name is not UTF-8: `pick --json` names it with the byte escaped, Node
    spells it with U+FFFD, and pi's switchSession started a new, empty session at that other
    path, saying "Resumed session".  The extension says the file cannot be opened instead."""
    made = json.loads(pi.node("--input-type=module", "-", str(PI_PACKAGE), str(pi.project), stdin=WRITE_SESSIONS))
    alpha = Path(made["alpha"]["file"])
    odd = os.fsencode(alpha.parent) + b"/caf\xe9.jsonl"
    Path(os.fsdecode(odd)).write_bytes(alpha.read_bytes())
    from seance.app.results import PickResult

    pick = PickResult("resume", Path(os.fsdecode(odd)), session_id="x", cwd=str(pi.project)).to_json()
    answer = pi.tmp / "answer.json"
    answer.write_bytes(json.dumps(pick, ensure_ascii=False).encode("utf-8", "backslashreplace"))
    fake = _fake_seance(pi, f"cat {shlex.quote(str(answer))}\n")
    before = set(os.listdir(os.fsencode(alpha.parent)))
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=fake)
    pi.wait_for("seance.ts")
    pi.command("/seance")
    pi.wait_for("no such session file")
    assert "Resumed session" not in pi.screen()
    assert set(os.listdir(os.fsencode(alpha.parent))) == before  # no blank session made beside it


HOSTILE_NAME = "t\x1b]2;PWNED-TITLE\x07\u202eevil\u2066"  # an OSC title write and bidi marks in a folder's name


def test_pis_refusal_to_fork_a_hostile_path_never_drives_its_terminal(pi: Pi) -> None:
    """An oh-my-pi session (its first line a title slot) under a folder whose name holds an
    escape sequence: Ctrl+F forks it, pi's forkFrom refuses it ("Cannot fork: source session
    file is empty or invalid: <path>"), and that message went into the notice raw: the OSC set
    the terminal's title.  Every notice is made visible text now, bidi marks too."""
    folder = pi.home / ".omp" / "agent" / "sessions" / f"--{HOSTILE_NAME}--"
    folder.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "omp-fork-1", "timestamp": "2026-01-01T10:00:00.000Z"}
    lines = [
        {"type": "title", "v": 1, "title": "", "updatedAt": "2026-01-01T10:00:00.000Z"},
        {**header, "cwd": str(pi.project)},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": "2026-01-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "omp forkable"}], "timestamp": 1},
        },
    ]
    (folder / "2026-01-01T10-00-00-000Z_omp-fork-1.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    pi.node(str(PI_CLI), "install", str(EXTENSION))
    pi.start(SEANCE_COMMAND=f"{shlex.quote(sys.executable)} -m seance")
    pi.wait_for("seance.ts")
    pi.command("/seance forkable")
    pi.wait_for(lambda screen: "› omp forkable" in screen and "1 session" in screen)
    pi.keys("C-f")
    screen = pi.wait_for("Cannot fork")
    time.sleep(0.5)
    assert "PWNED" not in pi.tmux("display-message", "-p", "-t", "pi", "#{pane_title}")
    assert "\u202e" not in screen and "\u2066" not in screen, screen
