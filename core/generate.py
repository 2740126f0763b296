"""Generate realistic pi v3 session stores: for the benchmark, the tests and `seance --demo`.

`generate_corpus(root, sessions=N, projects=M, seed=S)` writes N sessions over M projects
into pi's layout (`root/--<cwd>--/<timestamp>_<uuid>.jsonl`) with plain JSON writing, the
way pi's SessionManager lays them out: a header, model/thinking changes, user prompts,
assistant replies with thinking, text, tool calls and `usage`, tool results with file
contents and command output, branches (a prompt re-sent from an earlier point, some with a
branch summary), labels, compactions, `session_info` names, forks with `parentSession`,
and a few huge files.  The same seed gives the same bytes (file mtimes are set to the last
message time, so they are deterministic too).
"""

from __future__ import annotations

import os
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .timefmt import iso_ms as iso

DEFAULT_NOW_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: fixed, so output is reproducible

_VOCABULARY = (
    "the session index tree branch label compact fork resume picker search query token cost model assistant user "
    "tool bash read edit write grep find test fixture parser header entry leaf root cache sqlite fts5 prefix offset "
    "append stat mtime size bucket project config textual widget screen render layout style theme worker thread "
    "message handler cursor scroll filter sort recent created python node rust go typescript function class method "
    "module import return error exception retry timeout deadline migrate version schema column row table join where "
    "select insert update delete refactor rename extract inline optimise benchmark profile memory latency fix"
)
_WORDS = tuple(_VOCABULARY.split())
_MODELS = (
    ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-opus-4-1"),
    ("openai", "gpt-5"),
    ("google", "gemini-2.5-pro"),
)
_FILES = (
    "src/main.py",
    "src/app.ts",
    "lib/session.rs",
    "core/index.py",
    "README.md",
    "tests/test_tree.py",
    "package.json",
    "docs/usage.md",
    "cmd/server/main.go",
    "web/src/App.tsx",
)
_COMMANDS = (
    "ls -la",
    "git status",
    "pytest -q tests",
    "npm test",
    "cargo build --release",
    "rg -n TODO src",
    "git diff --stat",
    "make lint",
    "python -m pip list",
    "go test ./...",
)
_PROJECTS = (
    "api-server",
    "web-client",
    "infra",
    "notes",
    "pi-mono",
    "seance",
    "dotfiles",
    "ml-experiments",
    "game-engine",
    "blog",
    "cli-tools",
    "data-pipeline",
)


def short_title(sentence: str, limit: int = 40) -> str:
    """A session name from a sentence: its first whole words, at most `limit` characters, no full stop."""
    title = ""
    for word in sentence.rstrip(".").split():
        if title and len(title) + 1 + len(word) > limit:
            break
        title = f"{title} {word}" if title else word
    return title[:limit]


def bucket_name(cwd: str) -> str:
    """pi's per-project directory: `--<cwd>--`, one leading slash dropped, `/ \\ :` as `-`."""
    body = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    for char in "/\\:":
        body = body.replace(char, "-")
    return f"--{body}--"


@dataclass
class GeneratedCorpus:
    root: Path
    files: list[Path] = field(default_factory=list)
    bytes: int = 0


class _Text:
    """Cheap deterministic prose and code: slices of pre-built pools."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.sentences = [
            " ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 18))).capitalize() + "." for _ in range(400)
        ]
        self.code_lines = [
            f"{'    ' * rng.randint(0, 3)}{rng.choice(['def', 'return', 'if', 'for', 'let', 'const', 'fn'])} "
            f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}({rng.choice(_WORDS)}, {rng.randint(0, 99)})"
            for _ in range(400)
        ]

    def prose(self, sentences: int) -> str:
        choice = self.rng.choice
        return " ".join(choice(self.sentences) for _ in range(max(sentences, 1)))

    def code(self, chars: int) -> str:
        start = self.rng.randrange(len(self.code_lines))
        lines = []
        total = 0
        index = start
        while total < chars:
            line = self.code_lines[index % len(self.code_lines)]
            lines.append(line)
            total += len(line) + 1
            index += 1
        return "\n".join(lines)


class _SessionWriter:
    """Builds one session's lines (pi's field order) while keeping a leaf pointer."""

    def __init__(self, rng: random.Random, text: _Text, cwd: str, start_ms: int, parent: str | None) -> None:
        self.rng = rng
        self.text = text
        self.cwd = cwd
        self.clock = start_ms
        self.session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        self.lines: list[bytes] = []
        self.size = 0
        self.leaf: str | None = None
        self.ids: list[str] = []
        self.user_entries: list[tuple[str, str | None]] = []  # (id, parentId) of user messages
        self.provider, self.model = rng.choice(_MODELS)
        header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": self.session_id,
            "timestamp": iso(start_ms),
            "cwd": cwd,
        }
        if parent:
            header["parentSession"] = parent
        self._line(header)

    def _line(self, value: dict[str, Any]) -> None:
        data = orjson.dumps(value)
        self.lines.append(data)
        self.size += len(data) + 1

    def _tick(self, low: int = 400, high: int = 20_000) -> int:
        self.clock += self.rng.randint(low, high)
        return self.clock

    def _entry_id(self) -> str:
        while True:
            entry_id = f"{self.rng.getrandbits(32):08x}"
            if entry_id not in self.ids:
                self.ids.append(entry_id)
                return entry_id

    def append(self, kind: str, body: dict[str, Any], parent: str | bool | None = True) -> str:
        entry_id = self._entry_id()
        parent_id = self.leaf if parent is True else parent
        self._line({"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": iso(self._tick()), **body})
        self.leaf = entry_id
        return entry_id

    def message(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        message.setdefault("timestamp", self.clock)
        return self.append("message", {"message": message}, parent)

    # -- a conversation turn -----------------------------------------------------------------

    def user(self, parent: str | bool | None = True) -> None:
        rng = self.rng
        prompt = self.text.prose(rng.randint(1, 4))
        if rng.random() < 0.2:
            prompt += "\n\n```\n" + self.text.code(rng.randint(100, 800)) + "\n```"
        content: Any = prompt if rng.random() < 0.6 else [{"type": "text", "text": prompt}]
        parent_id = self.leaf if parent is True else parent
        self._tick()
        entry_id = self.message({"role": "user", "content": content, "timestamp": self.clock}, parent)
        self.user_entries.append((entry_id, parent_id if isinstance(parent_id, str) else None))

    def assistant_turn(self) -> None:
        rng = self.rng
        for _step in range(rng.randint(0, 4)):
            calls = [self._tool_call() for _ in range(rng.randint(1, 3))]
            self._assistant(calls, "toolUse")
            for call in calls:
                self._tool_result(call)
        self._assistant([], rng.choices(("stop", "stop", "stop", "length", "aborted", "error"), k=1)[0])

    def _tool_call(self) -> dict[str, Any]:
        rng = self.rng
        name = rng.choice(("bash", "read", "read", "edit", "write", "grep"))
        path = f"{self.cwd}/{rng.choice(_FILES)}"
        arguments: dict[str, Any]
        if name == "bash":
            arguments = {"command": rng.choice(_COMMANDS)}
        elif name == "read":
            arguments = {"path": path}
        elif name == "edit":
            arguments = {"path": path, "oldText": self.text.code(120), "newText": self.text.code(160)}
        elif name == "write":
            arguments = {"path": path, "content": self.text.code(rng.randint(200, 3000))}
        else:
            arguments = {"pattern": rng.choice(_WORDS), "path": self.cwd}
        return {"type": "toolCall", "id": f"toolu_{rng.getrandbits(64):016x}", "name": name, "arguments": arguments}

    def _assistant(self, calls: list[dict[str, Any]], stop: str) -> None:
        rng = self.rng
        content: list[dict[str, Any]] = []
        if rng.random() < 0.5:
            content.append({"type": "thinking", "thinking": self.text.prose(rng.randint(1, 5))})
        if stop != "aborted" or rng.random() < 0.5:
            content.append({"type": "text", "text": self.text.prose(rng.randint(1, 8))})
        content.extend(calls)
        tokens_in, tokens_out = rng.randint(2_000, 150_000), rng.randint(50, 4_000)
        cost = round(tokens_in * 3e-6 + tokens_out * 15e-6, 6)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": "messages",
            "provider": self.provider,
            "model": self.model,
            "usage": {
                "input": tokens_in,
                "output": tokens_out,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": tokens_in + tokens_out,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
            },
            "stopReason": stop,
            "timestamp": self._tick(2_000, 60_000),
        }
        if stop == "error":
            message["errorMessage"] = "overloaded_error: the service is temporarily overloaded"
        self.message(message)

    def _tool_result(self, call: dict[str, Any]) -> None:
        rng = self.rng
        size = int(rng.lognormvariate(7.5, 1.2))
        output = self.text.code(min(size, 60_000)) if call["name"] != "edit" else "Applied 1 edit."
        self.message(
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": output}],
                "isError": rng.random() < 0.05,
                "timestamp": self._tick(50, 3_000),
            }
        )

    # -- extras ---------------------------------------------------------------------------------

    def branch(self) -> None:
        """Re-send from an earlier prompt's parent: a second child there (pi's /tree then type)."""
        _entry, parent = self.rng.choice(self.user_entries)
        if self.rng.random() < 0.5 and parent is not None:
            self.append("branch_summary", {"fromId": self.leaf, "summary": self.text.prose(3)}, parent)
            parent = self.leaf
        self.user(parent)

    def label(self) -> None:
        target = self.rng.choice(self.ids)
        self.append("label", {"targetId": target, "label": self.rng.choice(("checkpoint", "good", "bug", "todo"))})

    def compaction(self) -> None:
        keep = self.user_entries[-1][0] if self.user_entries else self.ids[0]
        self.append(
            "compaction",
            {
                "summary": self.text.prose(8),
                "firstKeptEntryId": keep,
                "tokensBefore": self.rng.randint(80_000, 190_000),
            },
        )


def _write(path: Path, lines: list[bytes], mtime_ms: int) -> int:
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return len(data)


def generate_corpus(
    root: Path,
    sessions: int = 60,
    projects: int = 6,
    *,
    seed: int = 1,
    mean_bytes: int = 60_000,
    huge: int = 0,
    huge_bytes: int = 12_000_000,
    now_ms: int = DEFAULT_NOW_MS,
    days: int = 90,
    cleared_names: bool = True,
    compact_above: int = 400_000,
) -> GeneratedCorpus:
    """Write `sessions` sessions over `projects` projects under `root` (pi's bucket layout).

    `cleared_names`: about 2% of sessions end with an empty `session_info` name, as pi writes
    a cleared name (realism for benchmarks and conformance); a demo turns it off.
    `compact_above`: sessions bigger than this many bytes are compacted half way (70% of
    them), as pi's auto-compaction would; a demo of small sessions lowers it.
    """
    rng = random.Random(seed)
    text = _Text(rng)
    root.mkdir(parents=True, exist_ok=True)
    cwds = [
        f"/home/dev/{_PROJECTS[index % len(_PROJECTS)]}{'' if index < len(_PROJECTS) else f'-{index}'}"
        for index in range(max(projects, 1))
    ]
    corpus = GeneratedCorpus(root)
    huge_slots = set(rng.sample(range(sessions), min(huge, sessions))) if sessions else set()
    starts = sorted(now_ms - rng.randint(0, days * 86_400_000) for _ in range(sessions))
    for number, start in enumerate(starts):
        cwd = cwds[min(int(rng.paretovariate(1.2)) - 1, len(cwds) - 1)] if rng.random() < 0.7 else rng.choice(cwds)
        parent = None
        if corpus.files and rng.random() < 0.08:
            parent = str(rng.choice(corpus.files[-20:]))
        writer = _SessionWriter(rng, text, cwd, start, parent)
        target = huge_bytes if number in huge_slots else int(min(rng.lognormvariate(0, 1.0), 40) * mean_bytes * 0.6)
        writer.append("model_change", {"provider": writer.provider, "modelId": writer.model})
        writer.append("thinking_level_change", {"thinkingLevel": rng.choice(("off", "low", "medium", "high"))})
        named = rng.random() < 0.25
        compacted_at = target // 2 if target > compact_above and rng.random() < 0.7 else None
        turns = 0
        while True:
            writer.user()
            writer.assistant_turn()
            turns += 1
            if named and turns == 1:
                writer.append("session_info", {"name": short_title(text.prose(1))})
            if rng.random() < 0.08:
                writer.label()
            if compacted_at is not None and writer.size > compacted_at:
                writer.compaction()
                compacted_at = None
            if writer.size >= target:
                break
            if turns > 1 and rng.random() < 0.1:
                writer.branch()
                writer.assistant_turn()
        if rng.random() < 0.02 and cleared_names:
            writer.append("session_info", {"name": ""})  # a cleared name, as pi writes it
        bucket = root / bucket_name(cwd)
        bucket.mkdir(exist_ok=True)
        stamp = iso(start).replace(":", "-").replace(".", "-")
        path = bucket / f"{stamp}_{writer.session_id}.jsonl"
        corpus.bytes += _write(path, writer.lines, writer.clock)
        corpus.files.append(path)
    return corpus
