"""seance writing while an agent appends: no line lost, no blank or torn line, no stale parent.

The agent is pi 0.73.1's real `SessionManager` (tests/oracle/append_loop.mjs: reopen per
line, or one held-open descriptor).  A trial is one seance write (migrate, label, rename)
while the agent runs; each node start serves many files and trials.  A refusal
(`FileChangedError`: the agent is writing) is allowed, but a good share must write, or the
test would prove nothing: the rewrite's quiet period is turned off here
(`SEANCE_WRITE_QUIET_SECONDS=0`) so the race reaches the rename itself.

The short deterministic tests pin each interleaving the adversarial pass found (findings 1
and 7): they fail on the code before this change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import node_oracle_available, run_node
from write_harness import Agent, audit, write_omp_unslotted, write_v2, write_v3

from seance.core import appendline, safefile
from seance.core.session import load_session
from seance.core.writes import FileChangedError, load_for_write, rename_session, set_label

needs_node = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)


@pytest.fixture
def no_quiet_period(monkeypatch):
    monkeypatch.setenv("SEANCE_WRITE_QUIET_SECONDS", "0")


def _one_write(path: Path, op: str, n: int, outcomes: Counter) -> None:
    if op == "migrate" and not load_session(path).needs_migration:
        return  # done by an earlier trial: not a trial
    try:
        if op == "migrate":
            load_for_write(path)
        elif op == "label":
            target = load_session(path).entries[0]["id"]
            set_label(path, target, f"label {n}")
        else:
            rename_session(path, f"name {n}")
        outcomes[f"{op} written"] += 1
    except FileChangedError as error:
        outcomes[f"{op} refused"] += 1
        outcomes[f"{op} refused: {str(error).partition(': ')[2]}"] += 1


def _race(
    tmp_path: Path, *, rounds: int, files: int, ops: list[str], held_fd: bool, old: bool, make: Any = None
) -> Counter:
    """`rounds` node starts; per round `files` sessions (`make`'s, else v2 or v3 ones), each
    given `ops` while the agent appends."""
    outcomes: Counter = Counter()
    make = make or (write_v2 if old else write_v3)
    for round_no in range(rounds):
        folder = Path(tempfile.mkdtemp(prefix=f"round{round_no}-", dir=tmp_path))
        paths = [make(folder / f"s{n}.jsonl", f"{round_no:02d}{n:02d}-sess") for n in range(files)]
        agent = Agent(paths, folder / "stop", held_fd=held_fd)
        try:
            for n, path in enumerate(paths):
                for op in ops:
                    _one_write(path, op, n, outcomes)
        finally:
            appended = agent.finish()
        for path in paths:
            result = audit(path, appended[str(path)])
            assert result.clean, f"{path.name}: {result}"
            assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
        outcomes["agent lines"] += sum(len(ids) for ids in appended.values())
    return outcomes


@pytest.fixture
def fast_dir(tmp_path):
    """A tmpfs directory where there is one (/dev/shm): fsync is cheap there and the race is
    the same (it is about the order of syscalls, not durability); else tmp_path."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = Path(tempfile.mkdtemp(prefix="seance-race-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@needs_node
@pytest.mark.slow
def test_reopen_per_line_agent_vs_migrate_label_rename_1000_trials(fast_dir, no_quiet_period) -> None:
    ops = ["migrate"] * 3 + ["label", "rename"] * 4
    outcomes = _race(fast_dir, rounds=2, files=60, ops=ops, held_fd=False, old=True)
    print(dict(outcomes), dict(safefile.STATS), dict(appendline.STATS))
    trials = sum(count for key, count in outcomes.items() if key.endswith(("written", "refused")))
    written = sum(count for key, count in outcomes.items() if key.endswith("written"))
    assert trials >= 1000
    assert written >= trials // 2, outcomes
    assert outcomes["migrate written"] >= 20, "the migration race was barely exercised"


@needs_node
@pytest.mark.slow
def test_held_fd_agent_vs_migrate_label_rename_250_trials(fast_dir, no_quiet_period) -> None:
    """An agent holding its descriptor open: a rewrite is refused (it would orphan every later
    line of the agent); appends go on."""
    outcomes = _race(fast_dir, rounds=1, files=50, ops=["migrate"], held_fd=True, old=True)
    assert outcomes["migrate refused"] == 50
    appends = _race(fast_dir, rounds=1, files=20, ops=["label", "rename"] * 5, held_fd=True, old=False)
    print(dict(outcomes), dict(appends))
    assert appends["label written"] + appends["rename written"] == 200


@needs_node
@pytest.mark.slow
def test_reopen_per_line_agent_vs_omp_header_title_rename_300_trials(fast_dir, no_quiet_period) -> None:
    """An oh-my-pi file without a title slot is renamed by rewriting its header line (the
    whole file, `write_header_title`): no line the agent appends is lost, none torn, and
    the header that stays is the one read, with the last written name."""
    outcomes = _race(
        fast_dir, rounds=2, files=30, ops=["rename"] * 5, held_fd=False, old=False, make=write_omp_unslotted
    )
    print(dict(outcomes), dict(safefile.STATS))
    trials = outcomes["rename written"] + outcomes["rename refused"]
    assert trials >= 300
    assert outcomes["rename written"] >= trials // 10, outcomes
    for path in fast_dir.glob("round*/s*.jsonl"):
        session = load_session(path)
        assert session.dialect == "omp" and session.header["cwd"] == "/proj", path
        assert session.name == "Old title" or session.name.startswith("name "), path


@needs_node
def test_held_fd_agent_vs_omp_header_title_rename_40_trials(fast_dir, no_quiet_period) -> None:
    """An agent holding the file open: the header's rewrite is refused every time (it would
    orphan the agent's later lines), and nothing the agent wrote is lost."""
    outcomes = _race(
        fast_dir, rounds=1, files=20, ops=["rename"] * 2, held_fd=True, old=False, make=write_omp_unslotted
    )
    assert outcomes["rename refused"] == 40, outcomes


# ---------------------------------------------------------------------------- deterministic interleavings

AGENT = r"""
import os, sys
fd = None
for command in sys.stdin:
    command = command.strip()
    if command == "open":
        fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    elif command.startswith("write "):
        os.write(fd, command[6:].encode() + b"\n")
    elif command == "close":
        os.close(fd)
    print("ok", flush=True)
"""


class ScriptedAgent:
    """A process that opens, writes and closes the session exactly when told to."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", AGENT, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def do(self, command: str) -> None:
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "ok"

    def do_later(self, command: str, delay: float) -> threading.Thread:
        thread = threading.Thread(target=lambda: (time.sleep(delay), self.do(command)))
        thread.start()
        return thread

    def end(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=10)


def _agent_line(entry_id: str, parent: str) -> str:
    entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "x"}
    entry["message"] = {"role": "user", "content": "agent"}
    return orjson.dumps(entry).decode()


def test_finding1_line_of_an_agent_that_opened_before_the_rename_is_carried_over(
    tmp_path, monkeypatch, no_quiet_period
) -> None:
    """pi's appendFileSync opens the file just before seance's rename and writes just after it:
    the line reaches the replaced inode.  Before: lost.  Now: carried over into the new file."""
    path = write_v2(tmp_path / "s.jsonl", "race-carry")
    agent = ScriptedAgent(path)
    real_replace = os.replace
    closing: list[threading.Thread] = []

    def replace_while_the_agent_has_it_open(src, dst, *args, **kwargs):
        if os.path.realpath(dst) == str(path) and not closing:
            agent.do("open")
            real_replace(src, dst, *args, **kwargs)
            agent.do("write " + _agent_line("late0001", "race-h001"))
            closing.append(agent.do_later("close", 0.05))  # still open for a moment after the rename
            return None
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace_while_the_agent_has_it_open)
    load_for_write(path)
    closing[0].join()
    agent.end()
    session = load_session(path)
    assert session.disk_version == 3
    assert "late0001" in session.tree.by_id, "the agent's line was lost with the replaced file"
    assert audit(path, ["late0001"]).clean


def test_finding1_agent_holding_the_file_open_blocks_a_rewrite(tmp_path, no_quiet_period) -> None:
    """Before: the rewrite went ahead and every later line of the agent went to the orphaned inode."""
    path = write_v2(tmp_path / "s.jsonl", "race-held")
    agent = ScriptedAgent(path)
    agent.do("open")
    try:
        with pytest.raises(FileChangedError, match="open in process"):
            load_for_write(path)
        agent.do("write " + _agent_line("held0001", "race-h001"))
    finally:
        agent.do("close")
        agent.end()
    assert "held0001" in load_session(path).tree.by_id


def test_finding1_recently_written_file_is_not_rewritten(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SEANCE_WRITE_QUIET_SECONDS", raising=False)
    path = write_v2(tmp_path / "s.jsonl", "race-busy")
    before = path.read_bytes()
    with pytest.raises(FileChangedError, match="s ago"):
        load_for_write(path)
    assert path.read_bytes() == before
    os.utime(path, (1_735_689_600, 1_735_689_600))  # quiet for long enough
    assert load_for_write(path).disk_version == 3


def test_finding7_agent_line_landing_just_before_the_label_write_is_its_parent(tmp_path, monkeypatch) -> None:
    """An agent line lands between seance's last look and its write().  Before: the label kept
    the stale parent (pi would resume at the label and drop the agent's message).  Now the
    landing is checked after the write and the label's parent is repaired in place."""
    path = write_v3(tmp_path / "s.jsonl", "race-stale")
    agent_line = (_agent_line("agnt0001", "race" + "a001") + "\n").encode()
    real_write = os.write
    injected: list[bool] = []

    def agent_first(fd, data):
        if b'"type":"label"' in bytes(data) and not injected:
            injected.append(True)
            with open(path, "ab") as handle:
                handle.write(agent_line)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", agent_first)
    entry = set_label(path, "raceu001", "mine")
    monkeypatch.setattr(os, "write", real_write)
    assert injected
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    assert last["type"] == "label" and last["parentId"] == "agnt0001" == entry["parentId"]
    result = audit(path, ["agnt0001"])
    assert result.clean and result.seance_entries == 1
    (pi,) = orjson.loads(run_node("context_of.mjs", str(path))) if node_oracle_available() else [None]
    if pi is not None:  # pi resumes at the label and its context keeps the agent's message
        assert pi["leafId"] == last["id"] and pi["messages"][-1]["text"] == "agent"


def test_finding7_half_written_agent_line_makes_no_blank_line(tmp_path) -> None:
    """An agent's line is on disk only in part when seance looks.  Before: seance saw no final
    newline, started its line with one, and the agent's completion left a blank line (or a torn
    one).  Now the unfinished line is waited for, and becomes the label's parent."""
    path = write_v3(tmp_path / "s.jsonl", "race-half")
    line = _agent_line("half0001", "racea001").encode() + b"\n"
    with open(path, "ab") as handle:
        handle.write(line[:40])

    def finish_the_line() -> None:
        time.sleep(0.1)
        with open(path, "ab") as handle:
            handle.write(line[40:])

    finisher = threading.Thread(target=finish_the_line)
    finisher.start()
    entry = set_label(path, "raceu001", "mine")
    finisher.join()
    result = audit(path, ["half0001"])
    assert result.clean, result
    assert entry["parentId"] == "half0001"


def test_line_appended_between_the_readers_stat_and_read_is_not_a_rewrite(tmp_path) -> None:
    """The reader's size comes from fstat before read(): a line landing in between is in the
    digest but not the size.  Found by the held-fd race under load; the append goes on."""
    from seance.core.session import _build, _read_records
    from seance.core.writes import append_entry

    path = write_v3(tmp_path / "s.jsonl", "stmp-sess")
    before_read = os.stat(path)
    with open(path, "ab") as handle:
        handle.write((_agent_line("late0001", "stmpa001") + "\n").encode())
    descriptor = os.open(path, os.O_RDONLY)
    try:  # the reader's own steps, with the stat it took before the line landed
        session = _build(path, *_read_records(descriptor, before_read))
    finally:
        os.close(descriptor)
    entry = {"type": "label", "id": "lbl00001", "parentId": session.leaf_id, "timestamp": "x", "targetId": "stmpu001"}
    append_entry(session, entry)
    assert entry["parentId"] == "late0001" and audit(path, ["late0001"]).clean


def test_an_agent_line_with_a_lone_surrogate_escape_is_the_parent(tmp_path) -> None:
    """pi cuts a long tool output mid surrogate pair; `JSON.stringify` writes the half as
    `\\ud83d`, which `JSON.parse` reads (orjson refuses it).  An agent line like that appended
    since seance read the file is pi's leaf: the label must hang from it, not from the one before."""
    from seance.core.writes import append_entry

    path = write_v3(tmp_path / "s.jsonl", "surr-sess")
    session = load_session(path)
    line = _agent_line("surr0001", session.leaf_id or "").replace('"agent"', '"cut \\ud83d"')
    with open(path, "ab") as handle:
        handle.write((line + "\n").encode())
    assert load_session(path).leaf_id == "surr0001"  # (seance reads it, as pi does)
    entry = {"type": "label", "id": "lbl00002", "parentId": session.leaf_id, "timestamp": "x", "targetId": "surru001"}
    append_entry(session, entry)
    assert entry["parentId"] == "surr0001"
    after = load_session(path)
    assert after.leaf_id == "lbl00002" and after.entries[-1]["parentId"] == "surr0001"
    # (json, not orjson: pi's reading holds the lone surrogate)
    (pi,) = json.loads(run_node("context_of.mjs", str(path))) if node_oracle_available() else [None]
    if pi is not None:  # pi resumes at the label, the agent's message still in its context
        assert pi["leafId"] == "lbl00002" and pi["messages"][-1]["text"].startswith("cut ")
