"""Tiny pi-session writer for the UI tests: real JSONL files in a tmp sessions root.

Timestamps are fixed (relative to `NOW`) so relative ages and sort orders are deterministic.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

NOW = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)


def clock() -> datetime:
    return NOW


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class Spec:
    sid: str
    cwd: str
    prompts: tuple[str, ...] = ("hello",)
    age: timedelta = timedelta(hours=1)
    name: str | None = None
    parent: str | None = None  # sid of the parent session (same root)
    replies: bool = True


def session_path(root: Path, spec: Spec) -> Path:
    bucket = "--" + spec.cwd.strip("/").replace("/", "-") + "--"
    return root / bucket / f"{spec.sid}.jsonl"


def write_session(root: Path, spec: Spec, *, mtime: bool = True) -> Path:
    """Write one pi v3 session: header, user/assistant turns, optional name and parent."""
    path = session_path(root, spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    step = 90 if spec.replies else 60  # seconds per turn: the last message lands at NOW - age
    start = NOW - spec.age - timedelta(seconds=step * len(spec.prompts))
    header = {"type": "session", "version": 3, "id": spec.sid, "timestamp": iso(start), "cwd": spec.cwd}
    if spec.parent:
        header["parentSession"] = str(session_path(root, Spec(spec.parent, spec.cwd)))
    lines = [header]
    parent_id = None
    moment = start
    for number, prompt in enumerate(spec.prompts):
        moment = moment + timedelta(minutes=1)
        user_id = f"u{number:04d}"
        lines.append(
            {
                "type": "message",
                "id": user_id,
                "parentId": parent_id,
                "timestamp": iso(moment),
                "message": {
                    "role": "user",
                    "content": [{"type": "text", "text": prompt}],
                    "timestamp": int(moment.timestamp() * 1000),
                },
            }
        )
        parent_id = user_id
        if spec.replies:
            moment = moment + timedelta(seconds=30)
            reply_id = f"a{number:04d}"
            lines.append(
                {
                    "type": "message",
                    "id": reply_id,
                    "parentId": parent_id,
                    "timestamp": iso(moment),
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"ok: {prompt}"}],
                        "provider": "anthropic",
                        "model": "claude-test",
                        "stopReason": "stop",
                        "usage": {
                            "input": 10,
                            "output": 5,
                            "cacheRead": 0,
                            "cacheWrite": 0,
                            "totalTokens": 15,
                            "cost": {"total": 0.001},
                        },
                        "timestamp": int(moment.timestamp() * 1000),
                    },
                }
            )
            parent_id = reply_id
    if spec.name:
        lines.append(
            {"type": "session_info", "id": "n0000", "parentId": parent_id, "timestamp": iso(moment), "name": spec.name}
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if mtime:
        stamp = (NOW - spec.age).timestamp()
        os.utime(path, (stamp, stamp))
    return path


PROJECT = "/work/demo/project"
OTHER = "/work/demo/other"


def standard_specs() -> list[Spec]:
    """Eight sessions: two projects, a named one, a fork, and text for full-text search."""
    return [
        Spec("s-auth", PROJECT, ("fix the auth bug in login", "also the token refresh"), timedelta(minutes=5)),
        Spec(
            "s-fork",
            PROJECT,
            ("fix the auth bug in login", "try another approach"),
            timedelta(minutes=30),
            parent="s-auth",
        ),
        Spec("s-named", PROJECT, ("write the release notes",), timedelta(hours=3), name="Release 1.0"),
        Spec("s-docs", PROJECT, ("update the README", "mention the zebra crossing feature"), timedelta(days=2)),
        Spec("s-old", PROJECT, ("ancient history",), timedelta(days=400)),
        Spec("s-other1", OTHER, ("refactor the parser",), timedelta(hours=2)),
        Spec("s-other2", OTHER, ("benchmark the index",), timedelta(days=10)),
        Spec("s-inject", OTHER, ("[bold]x[/] and [@click=app.quit]quit[/] \x1b[31mred\u202e",), timedelta(days=40)),
    ]


def make_root(tmp: Path, specs: list[Spec] | None = None) -> Path:
    root = tmp / "sessions"
    for spec in specs if specs is not None else standard_specs():
        write_session(root, spec)
    return root
