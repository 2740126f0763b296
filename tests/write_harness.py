"""Shared pieces of the write-race and write-fault tests: sessions, an agent, a file audit."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from conftest import ORACLE_DIR

STAMP = "2025-01-01T00:00:00.000Z"
AT_REST = 1_735_689_600
SEANCE_TYPES = frozenset({"label", "session_info"})


def lines(*objs: dict) -> bytes:
    return b"".join(orjson.dumps(obj) + b"\n" for obj in objs)


def append_user_message(path: Path, text: str) -> None:
    """A user message appended to the session at `path` as an agent appends it (one write,
    parented on the last line's entry)."""
    *_, last = path.read_bytes().splitlines()
    line = {
        "type": "message",
        "id": os.urandom(4).hex(),
        "parentId": orjson.loads(last)["id"],
        "timestamp": "2026-11-27T02:00:00.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1_795_000_000_000},
    }
    with path.open("ab") as handle:
        handle.write(orjson.dumps(line) + b"\n")


def v3_entries(sid: str) -> list[dict]:
    user = {"type": "message", "id": f"{sid[:4]}u001", "parentId": None, "timestamp": STAMP}
    user["message"] = {"role": "user", "content": f"question {sid}"}
    reply = {"type": "message", "id": f"{sid[:4]}a001", "parentId": user["id"], "timestamp": STAMP}
    reply["message"] = {"role": "assistant", "content": [{"type": "text", "text": "answer"}]}
    return [user, reply]


def write_v3(path: Path, sid: str) -> Path:
    header = {"type": "session", "version": 3, "id": sid, "timestamp": STAMP, "cwd": "/proj"}
    path.write_bytes(lines(header, *v3_entries(sid)))
    return path


def write_omp_unslotted(path: Path, sid: str) -> Path:
    """An oh-my-pi file from before its title slot: its name is its header's `title`, and
    a rename rewrites that header line (the whole file)."""
    header = {"type": "session", "version": 3, "id": sid, "title": "Old title", "timestamp": STAMP, "cwd": "/proj"}
    path.write_bytes(lines(header, *v3_entries(sid)))
    return path


def write_v2(path: Path, sid: str) -> Path:
    """A v2 file (ids and parents, the legacy `hookMessage` role): its migration is a rewrite."""
    header = {"type": "session", "version": 2, "id": sid, "timestamp": STAMP, "cwd": "/proj"}
    entries = v3_entries(sid)
    hook = {"type": "message", "id": f"{sid[:4]}h001", "parentId": entries[-1]["id"], "timestamp": STAMP}
    hook["message"] = {"role": "hookMessage", "customType": "note", "content": "hook", "display": True}
    path.write_bytes(lines(header, *entries, hook))
    return path


def write_v1(path: Path, sid: str, *, messages: int = 3) -> Path:
    """A v1 file: no version, entries without ids (migration gives them ids and a chain)."""
    header = {"type": "session", "id": sid, "timestamp": STAMP, "cwd": "/proj"}
    entries = []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        content = f"v1 line {n}" if role == "user" else [{"type": "text", "text": f"v1 reply {n}"}]
        entries.append({"type": "message", "timestamp": STAMP, "message": {"role": role, "content": content}})
    path.write_bytes(lines(header, *entries))
    return path


@dataclass
class Audit:
    """What a session file looks like after a race: every rule the writes must keep."""

    lost: list[str] = field(default_factory=list)
    blank_lines: int = 0
    torn_lines: int = 0
    stale_parents: list[str] = field(default_factory=list)
    seance_entries: int = 0

    @property
    def clean(self) -> bool:
        return not (self.lost or self.blank_lines or self.torn_lines or self.stale_parents)


def audit(path: Path, appended_ids: list[str]) -> Audit:
    """Lost agent ids, blank and torn lines, seance entries whose parent is not the line before."""
    result = Audit()
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        result.torn_lines += 1
    previous_id: str | None = None
    ids: set[str] = set()
    for raw in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
        if not raw.strip():
            result.blank_lines += 1
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            result.torn_lines += 1
            previous_id = None
            continue
        if value.get("type") in SEANCE_TYPES:
            result.seance_entries += 1
            if value.get("parentId") != previous_id:
                stale = f"{value.get('id')} -> {value.get('parentId')} (line before: {previous_id})"
                result.stale_parents.append(stale)
        if value.get("type") != "session" and isinstance(value.get("id"), str):
            ids.add(value["id"])
            previous_id = value["id"]
    result.lost = [entry_id for entry_id in appended_ids if entry_id not in ids]
    return result


class Agent:
    """tests/oracle/append_loop.mjs: pi's SessionManager (or a held fd) appending to files."""

    def __init__(self, files: list[Path], stop: Path, *, held_fd: bool = False, interval_us: int = 300) -> None:
        args = ["node", str(ORACLE_DIR / "append_loop.mjs"), *map(str, files), "--count", "1000000"]
        args += ["--interval-us", str(interval_us), "--keep-format", "--until-file", str(stop)]
        if held_fd:
            args.append("--held-fd")
        self.stop = stop
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline()
        if ready.strip() != "ready":
            raise AssertionError(f"append_loop did not start: {ready!r} {self.process.stderr.read()[-2000:]}")

    def finish(self) -> dict[str, list[str]]:
        """Stop the agent; return the ids it appended, per file."""
        self.stop.touch()
        out, err = self.process.communicate(timeout=60)
        if self.process.returncode != 0:
            raise AssertionError(f"append_loop failed: {err[-2000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        return result.get("byFile") or {}
