"""Hostile session files as pi can write them (and a few it cannot), for tests/test_hostile_bytes.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

STAMP = "2025-01-01T00:00:00.000Z"
DEEP = 10_000


def _header(sid: str, version: str = "3", cwd: str = '"/p"') -> str:
    return f'{{"type":"session","version":{version},"id":"{sid}","cwd":{cwd},"timestamp":"{STAMP}"}}'


def _user(text: str, entry_id: str = "u1", parent: str = "null") -> str:
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent},"timestamp":"{STAMP}",'
        f'"message":{{"role":"user","content":"{text}","timestamp":1735689600000}}}}'
    )


def _assistant(extra: str, entry_id: str = "a1", parent: str = '"u1"') -> str:
    return (
        f'{{"type":"message","id":"{entry_id}","parentId":{parent},"timestamp":"{STAMP}",'
        f'"message":{{"role":"assistant","content":[{{"type":"text","text":"ok"}}],{extra}}}}}'
    )


BIG = "9" * 400
NESTED = "[" * DEEP + "]" * DEEP

# name -> JSONL text.  Raw JSON text on purpose: json.dumps cannot write most of these.
HOSTILE: dict[str, str] = {
    "surrogate-user-text": "\n".join([_header("h-user"), _user("output \\ud83c")]),
    "surrogate-tool-output": "\n".join(
        [
            _header("h-tool"),
            _user("run it"),
            _assistant('"stopReason":"toolUse"'),
            '{"type":"message","id":"t1","parentId":"a1","timestamp":"' + STAMP + '","message":{"role":"toolResult",'
            '"toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":"cut \\udc00 here \\ud83d"}]}}',
        ]
    ),
    "surrogate-name": "\n".join(
        [_header("h-name"), _user("named"), '{"type":"session_info","id":"i1","parentId":"u1","name":"\\ud83c"}']
    ),
    "surrogate-cwd": "\n".join([_header("h-cwd", cwd='"/p\\ud83c"'), _user("cwd")]),
    "surrogate-id": "\n".join([_header("h-id\\udfff"), _user("ids", entry_id="u\\ud800")]),
    "huge-int-usage": "\n".join(
        [
            _header("h-usage"),
            _user("tokens"),
            _assistant(f'"usage":{{"input":{BIG},"output":-{BIG},"cost":{{"total":{BIG}}}}}'),
            _assistant(f'"usage":{{"input":{(1 << 63) - 1},"output":1,"cost":{{"total":1e308}}}}', "a2", '"a1"'),
            _assistant(f'"usage":{{"input":{(1 << 63) - 1},"output":1,"cost":{{"total":1e308}}}}', "a3", '"a2"'),
        ]
    ),
    "version-1e400": "\n".join([_header("h-v1e400", "1e400"), _user("v")]),
    "version-5000-digits": "\n".join([_header("h-v5000", "9" * 5000), _user("v")]),
    "version-5000-digit-string": "\n".join([_header("h-vs5000", '"' + "9" * 5000 + '"'), _user("v")]),
    "version-string-3": "\n".join([_header("h-v3s", '"3"'), _user("v")]),
    "version-negative-huge": "\n".join([_header("h-vneg", "-1e400"), _user("v")]),
    "version-object": "\n".join([_header("h-vobj", '{"a":1}'), _user("v")]),
    "infinity-in-entry": "\n".join(
        [_header("h-inf"), _user("before"), '{"type":"custom","id":"x","parentId":"u1","data":Infinity}']
    ),
    "timestamp-1e400": "\n".join(
        [
            _header("h-ts"),
            '{"type":"message","id":"u1","parentId":null,"timestamp":"' + STAMP + '",'
            '"message":{"role":"user","content":"late","timestamp":1e400}}',
        ]
    ),
    "deep-nesting": "\n".join(
        [
            _header("h-deep"),
            _user("deep"),
            _assistant(f'"model":{NESTED},"provider":{NESTED}'),
            '{"type":"custom","id":"c1","parentId":"a1","data":' + NESTED + "}",
            '{"type":"model_change","id":"m1","parentId":"c1","provider":' + NESTED + ',"modelId":' + NESTED + "}",
            '{"type":"thinking_level_change","id":"k1","parentId":"m1","thinkingLevel":' + NESTED + "}",
        ]
    ),
    "deep-tool-arguments": "\n".join(
        [
            _header("h-deep-args"),
            '{"type":"message","id":"a0","parentId":null,"timestamp":"' + STAMP + '","message":{"role":"assistant",'
            '"content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":' + NESTED + "}}],"
            '"stopReason":"toolUse"}}',
            '{"type":"message","id":"r0","parentId":"a0","timestamp":"' + STAMP + '","message":{"role":"toolResult",'
            '"toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"done"}],"isError":false}}',
            '{"type":"message","id":"u1","parentId":"r0","timestamp":"' + STAMP + '",'
            '"message":{"role":"user","content":"deep arguments above"}}',
        ]
    ),
}

# Each ends with an assistant reply: pi (and `seance rename`) names a session only after one.
HOSTILE = {name: text + "\n" + _assistant('"stopReason":"stop"', "z9", '"u1"') for name, text in HOSTILE.items()}

# Lines JSON.parse refuses: pi lists nothing for these; seance must still say so in one line.
NOT_SESSIONS: dict[str, str] = {
    "version-nan": '{"type":"session","version":NaN,"id":"h-nan","cwd":"/p","timestamp":"' + STAMP + '"}',
    "version-infinity": '{"type":"session","version":Infinity,"id":"h-infl","cwd":"/p","timestamp":"' + STAMP + '"}',
}


def write_good(root: Path, sid: str, text: str) -> Path:
    path = root / "--p--" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_header(sid) + "\n" + _user(text) + "\n")
    return path


def write_hostile(root: Path, names: list[str] | None = None) -> dict[str, Path]:
    """The hostile files (all, or `names`) in `root`'s `--p--` bucket, with two good sessions."""
    bucket = root / "--p--"
    bucket.mkdir(parents=True, exist_ok=True)
    write_good(root, "good-1", "first good")
    write_good(root, "good-2", "second good")
    paths = {}
    for name, text in {**HOSTILE, **NOT_SESSIONS}.items():
        if names is None or name in names:
            paths[name] = bucket / f"{name}.jsonl"
            paths[name].write_bytes(text.encode() + b"\n")
            # written an hour ago: no agent is writing it, so rename's migration and rm go ahead
            stamp = time.time() - 3600
            os.utime(paths[name], (stamp, stamp))
    return paths
