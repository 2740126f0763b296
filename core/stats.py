"""What a session cost and did: tokens, cost, models, tools, files touched — in one pass.

`session_stats(session)` walks a loaded `Session`'s entries once (they are already
normalised: pi v1-v3, oh-my-pi, the Python port) and returns a `SessionStats`:

* tokens in / out / cache read / cache write and cost, summed from the `usage` pi records on
  every assistant message (`{input, output, cacheRead, cacheWrite, totalTokens, cost: {…,
  total}}`; oh-my-pi writes the same keys, sometimes without `totalTokens` and with an extra
  `reasoning`, which is part of `output` and not added again), and on oh-my-pi's
  `model_usage` entries (model calls outside the conversation, which omp's totals count;
  no message).  The total is the sum of the four counts, as pi's own `getSessionStats()`
  computes it.
* models used (`provider/model` → assistant messages and their usage), the tool-call
  histogram, the files touched (see `FILE_TOOLS`), message counts by role, leaves (branch
  count), branch points, compactions, and the first and last message timestamps (the
  duration: other entries may be written long after, e.g. oh-my-pi's `session_exit`).

**The whole tree counts**, every branch and everything before a compaction: that is what
was paid for, and what pi's footer sums (`sessionManager.getEntries()`, all entries).

Usage is also kept per UTC hour and model (`hours`), so `aggregate` can group many
sessions by model, project or local day and cut them at `--since` without reading a file
again; `statscache.py` stores a `SessionStats` per file stamp.  A time outside
`SANE_FROM_MS`..`SANE_UNTIL_MS` (a clock or a writer gone wrong: year 1000, 9999) dates
nothing: its usage counts as undated, and it is not part of the session's span.

**A fork counts only what it added.**  pi's `--fork` (`SessionManager.forkFrom`), its
`/fork` (`createBranchedSession`) and seance's Ctrl+F (`resume.fork_into`) copy the source's
entries as they are (same ids, same timestamps, usage included) under a header whose
`parentSession` names the source.  So every session keeps `keys`, a fingerprint of each
assistant message's (id, timestamp), and a fork (a header with `parentSession`) also keeps
its `ledger` (one row per assistant message); `count_copies_once` then skips a fork's
messages already counted in an earlier session of its family (a fork whose chain ends at a
deleted session joins the family holding the first answer it copied).
"""

from __future__ import annotations

import hashlib
import math
import os
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from .session import Session
from .timefmt import iso_ms, parse_time_ms

_INT64_MAX = (1 << 63) - 1
UNKNOWN_MODEL = "(unknown model)"
# Times outside [2000, 2100) are a broken clock or writer: they date no usage.  (One such
# stamp used to stretch `seance stats`'s day series over centuries: millions of rows.)
SANE_FROM_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
SANE_UNTIL_MS = 4_102_444_800_000  # 2100-01-01T00:00:00Z

# Tool name (lower case) → what it does to the file named in its arguments.  pi's built-in
# tools (read, edit, write), oh-my-pi's (the same names, plus `batch_read` with
# `{"o": [{"o": "read", "p": PATH}]}` and the short `p` / `file` argument names seen in real
# files) and Claude Code's names (`MultiEdit`, `file_path`).  Directory tools (ls, find,
# grep, search) name directories or patterns, not files: they are not counted.
FILE_TOOLS: dict[str, str] = {
    "read": "read",
    "batch_read": "read",
    "edit": "edit",
    "multiedit": "edit",
    "multi_edit": "edit",
    "write": "write",
}
_PATH_KEYS = ("path", "file_path", "file", "p")
FILE_OPS = ("read", "edit", "write")


@dataclass(slots=True)
class Usage:
    """Assistant messages and the usage they recorded."""

    messages: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: float = 0.0

    @property
    def tokens(self) -> int:
        """input + output + cache read + cache write (pi's `getSessionStats().tokens.total`), capped at
        64 bits as each of them is (JSON output refuses a bigger integer)."""
        return min(self.input + self.output + self.cache_read + self.cache_write, _INT64_MAX)

    def add_message(self, usage: Any) -> None:
        """Count one assistant message and its `usage` (ignored unless an object)."""
        self.messages += 1
        self.add_usage(usage)

    def add_usage(self, usage: Any) -> None:
        """Count a `usage` (ignored unless an object) with no message: oh-my-pi's `model_usage`."""
        if type(usage) is not dict:
            return
        self.input = _add_tokens(self.input, usage.get("input"))
        self.output = _add_tokens(self.output, usage.get("output"))
        self.cache_read = _add_tokens(self.cache_read, usage.get("cacheRead"))
        self.cache_write = _add_tokens(self.cache_write, usage.get("cacheWrite"))
        cost = usage.get("cost")
        total = cost.get("total") if type(cost) is dict else None
        if isinstance(total, int | float) and not isinstance(total, bool) and math.isfinite(self.cost + total):
            self.cost += total

    def merge(self, other: Usage) -> None:
        self.messages += other.messages
        self.input = min(self.input + other.input, _INT64_MAX)
        self.output = min(self.output + other.output, _INT64_MAX)
        self.cache_read = min(self.cache_read + other.cache_read, _INT64_MAX)
        self.cache_write = min(self.cache_write + other.cache_write, _INT64_MAX)
        if math.isfinite(self.cost + other.cost):
            self.cost += other.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "totalTokens": self.tokens,
            "cost": self.cost,
        }

    def to_row(self) -> list[Any]:
        return [self.messages, self.input, self.output, self.cache_read, self.cache_write, self.cost]

    @classmethod
    def from_row(cls, row: list[Any]) -> Usage:
        return cls(*row)


def _add_tokens(total: int, value: Any) -> int:
    """A token count from the file: a non-negative whole number (JSON may hold 12.0), capped at 64 bits."""
    if type(value) is int:
        return min(total + value, _INT64_MAX) if value > 0 else total
    if type(value) is float and math.isfinite(value) and value > 0:
        return min(total + int(value), _INT64_MAX)
    return total


@dataclass(slots=True)
class SessionStats:
    """Totals of one session file, every branch included."""

    path: str
    id: str
    cwd: str
    usage: Usage = field(default_factory=Usage)
    models: dict[str, Usage] = field(default_factory=dict)  # "provider/model" → usage
    tools: dict[str, int] = field(default_factory=dict)  # tool name → calls
    files: dict[str, dict[str, int]] = field(default_factory=dict)  # path → {read|edit|write: calls}
    roles: dict[str, int] = field(default_factory=dict)  # message role → message entries
    entries: int = 0
    leaves: int = 0
    branch_points: int = 0
    compactions: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    # (UTC hour as "YYYY-MM-DDTHH", model) → usage: the grain `aggregate` groups and cuts by.
    hours: dict[tuple[str, str], Usage] = field(default_factory=dict)
    parent: str | None = None  # the header's `parentSession`: this session is a fork
    # A fork's assistant messages, in file order: [key | None, hour | None, model, *Usage row].
    ledger: list[list[Any]] = field(default_factory=list)
    # Every assistant message's key (`message_key`), packed as signed 64-bit integers: what
    # a fork of this session copied.  Not in `to_storage`: the cache keeps it apart, read
    # only for the sessions forks were made from.
    keys: bytes = field(default=b"", compare=False)

    @property
    def duration_ms(self) -> int:
        if self.first_ms is None or self.last_ms is None:
            return 0
        return max(self.last_ms - self.first_ms, 0)

    @property
    def messages(self) -> int:
        return sum(self.roles.values())

    @property
    def tool_calls(self) -> int:
        return sum(self.tools.values())

    def to_json(self) -> dict[str, Any]:
        """The `seance show --stats --json` object (camelCase, as pi's JSON)."""
        return {
            "path": self.path,
            "id": self.id,
            "cwd": self.cwd,
            "scope": "tree",  # every branch of the file, not only the current one
            "tokens": {
                "input": self.usage.input,
                "output": self.usage.output,
                "cacheRead": self.usage.cache_read,
                "cacheWrite": self.usage.cache_write,
                "total": self.usage.tokens,
            },
            "cost": self.usage.cost,
            "models": [{"model": name, **usage.to_json()} for name, usage in _by_count(self.models)],
            "toolCalls": dict(sorted(self.tools.items(), key=lambda item: (-item[1], item[0]))),
            "files": [{"path": path, **ops} for path, ops in sorted(self.files.items())],
            "messages": {"total": self.messages, **dict(sorted(self.roles.items()))},
            "entries": self.entries,
            "leaves": self.leaves,
            "branchPoints": self.branch_points,
            "compactions": self.compactions,
            "first": iso_ms(self.first_ms) if self.first_ms is not None else None,
            "last": iso_ms(self.last_ms) if self.last_ms is not None else None,
            "durationMs": self.duration_ms,
        }

    def to_storage(self, *, brief: bool = False) -> dict[str, Any]:
        """Everything, for the stats cache (`from_storage` reads it back).  `brief`: only what
        `aggregate` needs (ids, cwd, span, usage by hour and model), a tenth of the size."""
        data: dict[str, Any] = {
            "path": self.path,
            "id": self.id,
            "cwd": self.cwd,
            "usage": self.usage.to_row(),
            "span": [self.first_ms, self.last_ms],
            "hours": [[hour, model, *usage.to_row()] for (hour, model), usage in self.hours.items()],
        }
        if self.parent is not None:
            data["parent"] = self.parent
            data["ledger"] = self.ledger
        if not brief:
            data["models"] = {name: usage.to_row() for name, usage in self.models.items()}
            data["tools"] = self.tools
            data["files"] = self.files
            data["roles"] = self.roles
            data["counts"] = [self.entries, self.leaves, self.branch_points, self.compactions]
        return data

    @classmethod
    def from_storage(cls, data: dict[str, Any]) -> SessionStats:
        entries, leaves, branch_points, compactions = data.get("counts", (0, 0, 0, 0))
        first_ms, last_ms = data["span"]
        return cls(
            path=data["path"],
            id=data["id"],
            cwd=data["cwd"],
            usage=Usage.from_row(data["usage"]),
            models={name: Usage.from_row(row) for name, row in data.get("models", {}).items()},
            tools=data.get("tools", {}),
            files=data.get("files", {}),
            roles=data.get("roles", {}),
            entries=entries,
            leaves=leaves,
            branch_points=branch_points,
            compactions=compactions,
            first_ms=first_ms,
            last_ms=last_ms,
            hours={(row[0], row[1]): Usage.from_row(row[2:]) for row in data["hours"]},
            parent=data.get("parent"),
            ledger=data.get("ledger", []),
        )


def _by_count(models: dict[str, Usage]) -> list[tuple[str, Usage]]:
    return sorted(models.items(), key=lambda item: (-item[1].messages, item[0]))


def model_name(message: dict[str, Any]) -> str:
    """`provider/model` of an assistant message (`UNKNOWN_MODEL` when it names none)."""
    model, provider = message.get("model"), message.get("provider")
    if not isinstance(model, str) or not model:
        return UNKNOWN_MODEL
    return f"{provider}/{model}" if isinstance(provider, str) and provider else model


def _sane_ms(stamp: Any) -> int | None:
    """An entry's timestamp as epoch ms, None when unreadable or outside the sane range."""
    ms = parse_time_ms(stamp)
    return ms if ms is not None and SANE_FROM_MS <= ms < SANE_UNTIL_MS else None


def _is_sane_iso(stamp: str) -> bool:
    """A toISOString() stamp (24 characters, `Z`) whose year is in the sane range."""
    return "2000" <= stamp[:4] < "2100"


def _hour_of(stamp: Any) -> str | None:
    """`YYYY-MM-DDTHH` (UTC) of an entry's timestamp (None: no sane time)."""
    if type(stamp) is str and len(stamp) == 24 and stamp[10] == "T" and stamp[23] == "Z":
        return stamp[:13] if _is_sane_iso(stamp) else None  # already toISOString()'s form: no parsing
    ms = _sane_ms(stamp)
    return iso_ms(ms)[:13] if ms is not None else None


def message_key(entry: dict[str, Any]) -> int | None:
    """A signed 64-bit fingerprint of an entry's (id, timestamp), which a fork copies as
    they are; None without a string id or a timestamp."""
    entry_id, stamp = entry.get("id"), entry.get("timestamp")
    if type(entry_id) is not str or stamp is None:
        return None
    digest = hashlib.blake2b(f"{entry_id}\0{stamp}".encode(errors="replace"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _file_paths(name: str, arguments: Any) -> Iterable[str]:
    """The file paths a recognised file tool's arguments name."""
    if type(arguments) is not dict:
        return ()
    if name == "batch_read":
        ops = arguments.get("o")
        return [
            path
            for op in (ops if type(ops) is list else ())
            if type(op) is dict and op.get("o", "read") == "read"
            for path in (_first_path(op),)
            if path
        ]
    path = _first_path(arguments)
    return (path,) if path else ()


def _first_path(arguments: dict[str, Any]) -> str | None:
    for key in _PATH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _count_background(stats: SessionStats, keys: array[int], entry: dict[str, Any], fork: bool) -> None:
    """oh-my-pi's `model_usage`: a model call outside the conversation (a title, a prediction,
    a classifier; `{purpose, provider, model, usage}`), paid for and counted in omp's own
    usage totals: its tokens and cost count here too, under its model, with no message."""
    name, raw_usage = model_name(entry), entry.get("usage")
    stats.usage.add_usage(raw_usage)
    per_model = stats.models.get(name)
    if per_model is None:
        per_model = stats.models[name] = Usage()
    per_model.add_usage(raw_usage)
    hour = _hour_of(entry.get("timestamp"))
    if hour is not None:
        bucket = stats.hours.get((hour, name))
        if bucket is None:
            bucket = stats.hours[(hour, name)] = Usage()
        bucket.add_usage(raw_usage)
    key = message_key(entry)  # (a fork copies it with the rest: counted once, as a copied reply is)
    if key is not None:
        keys.append(key)
    if fork:
        one = Usage()
        one.add_usage(raw_usage)
        stats.ledger.append([key, hour, name, *one.to_row()])


def normalise_path(path: str, cwd: str) -> str:
    """A touched file's path: relative ones joined to the session's cwd, then normalised
    (`~` is kept: whose home it was is not known here)."""
    if path.startswith("~") or not cwd or os.path.isabs(path):
        return os.path.normpath(path) if not path.startswith("~") else path
    return os.path.normpath(os.path.join(cwd, path))


def session_stats(session: Session) -> SessionStats:
    """The stats of a loaded session, in one pass over its entries."""
    stats = SessionStats(path=str(session.path), id=session.id, cwd=session.cwd)
    parent = session.header.get("parentSession")
    fork = type(parent) is str and bool(parent)
    stats.parent = parent if fork else None
    keys = array("q")
    first_ms: int | None = None
    last_ms: int | None = None
    first_iso = last_iso = None  # canonical ISO strings compare as times: parse only the extremes
    usage, models, tools, files, roles, hours = (
        stats.usage,
        stats.models,
        stats.tools,
        stats.files,
        stats.roles,
        stats.hours,
    )
    children: dict[str, int] = {}
    ids = 0
    cwd = session.cwd
    for entry in session.entries:
        ids += 1
        parent = entry.get("parentId")
        if parent is not None:
            children[parent] = children.get(parent, 0) + 1
        kind = entry.get("type")
        if kind == "compaction":
            stats.compactions += 1
            continue
        if kind == "model_usage":
            _count_background(stats, keys, entry, fork)
            continue
        if kind != "message":
            continue
        stamp = entry.get("timestamp")
        if type(stamp) is str and len(stamp) == 24 and stamp[23] == "Z":
            if _is_sane_iso(stamp):
                if first_iso is None or stamp < first_iso:
                    first_iso = stamp
                if last_iso is None or stamp > last_iso:
                    last_iso = stamp
        elif stamp is not None:
            ms = _sane_ms(stamp)
            if ms is not None:
                first_ms = ms if first_ms is None or ms < first_ms else first_ms
                last_ms = ms if last_ms is None or ms > last_ms else last_ms
        message = entry.get("message")
        if type(message) is not dict:
            continue
        role = message.get("role")
        role = role if isinstance(role, str) else "(no role)"
        roles[role] = roles.get(role, 0) + 1
        if role != "assistant":
            continue
        name = model_name(message)
        raw_usage = message.get("usage")
        usage.add_message(raw_usage)
        per_model = models.get(name)
        if per_model is None:
            per_model = models[name] = Usage()
        per_model.add_message(raw_usage)
        hour = _hour_of(stamp)
        if hour is not None:
            bucket = hours.get((hour, name))
            if bucket is None:
                bucket = hours[(hour, name)] = Usage()
            bucket.add_message(raw_usage)
        key = message_key(entry)
        if key is not None:
            keys.append(key)
        if fork:
            one = Usage()
            one.add_message(raw_usage)
            stats.ledger.append([key, hour, name, *one.to_row()])
        content = message.get("content")
        for block in content if type(content) is list else ():
            if type(block) is not dict or block.get("type") != "toolCall":
                continue
            tool = block.get("name")
            tool = tool if isinstance(tool, str) and tool else "(unnamed)"
            tools[tool] = tools.get(tool, 0) + 1
            op_name = tool.lower()
            op = FILE_TOOLS.get(op_name)
            if op is None:
                continue
            for path in _file_paths(op_name, block.get("arguments")):
                ops = files.setdefault(normalise_path(path, cwd), {})
                ops[op] = ops.get(op, 0) + 1
    by_id = session.tree.by_id
    stats.entries = ids
    with_children = [parent for parent in children if parent in by_id]
    stats.leaves = len(by_id) - len(with_children)
    stats.branch_points = sum(1 for parent in with_children if children[parent] > 1)
    stats.keys = keys.tobytes()
    for stamp in (first_iso, last_iso):
        ms = _sane_ms(stamp) if stamp is not None else None
        if ms is not None:
            first_ms = ms if first_ms is None or ms < first_ms else first_ms
            last_ms = ms if last_ms is None or ms > last_ms else last_ms
    if first_ms is None:  # no dated message: the header's time, a duration of 0
        first_ms = last_ms = _sane_ms(session.header.get("timestamp"))
    stats.first_ms, stats.last_ms = first_ms, last_ms
    return stats


# -- many sessions -----------------------------------------------------------------------------

GroupBy = Literal["model", "project", "day"]
GROUPINGS: tuple[str, ...] = ("day", "model", "project")


@dataclass(slots=True)
class Group:
    """One row of `seance stats`: a model, a project or a day, and what it used."""

    key: str
    usage: Usage = field(default_factory=Usage)
    sessions: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "sessions": self.sessions, **self.usage.to_json()}


@dataclass(slots=True)
class Aggregate:
    """Many sessions' stats grouped one way, with their totals."""

    by: str
    groups: list[Group]
    total: Usage
    sessions: int
    since_ms: int | None = None


def local_day(hour: str) -> str:
    """The local date (`YYYY-MM-DD`) of a UTC hour `YYYY-MM-DDTHH`."""
    ms = parse_time_ms(f"{hour}:00:00.000Z")
    return local_date(ms) if ms is not None else hour[:10]


def local_date(ms: int) -> str:
    """The local date (`YYYY-MM-DD`) of epoch ms; where that is no date from 0001 to 9999
    (`--since 999999999999999999999w` is before any), the nearest of those UTC dates."""
    try:
        return datetime.fromtimestamp(ms / 1000).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return iso_ms(ms)[:10]  # (clamped to 0001-01-01 .. 9999-12-31)


def aggregate(items: Iterable[SessionStats], by: str, since_ms: int | None = None) -> Aggregate:
    """Group sessions' usage by `model`, `project` (header cwd) or local `day`.

    With `since_ms`, only usage from that hour on counts (hour grain) and only sessions with
    usage or activity since then are counted.  Groups come largest cost first (days: in order).
    """
    since_hour = iso_ms(since_ms)[:13] if since_ms is not None else None
    groups: dict[str, Group] = {}
    total = Usage()
    sessions = 0
    days: dict[str, str] = {}
    for stats in items:
        if since_ms is not None and (stats.last_ms is None or stats.last_ms < since_ms):
            continue
        sessions += 1
        touched: set[str] = set()
        if by == "project":
            key = stats.cwd or "(no cwd)"
            group = groups.get(key) or groups.setdefault(key, Group(key))
            touched.add(key)
        for (hour, model), usage in stats.hours.items():
            if since_hour is not None and hour < since_hour:
                continue
            total.merge(usage)
            if by == "model":
                key = model
            elif by == "day":
                key = days.get(hour) or days.setdefault(hour, local_day(hour))
            else:
                key = stats.cwd or "(no cwd)"
            group = groups.get(key) or groups.setdefault(key, Group(key))
            group.usage.merge(usage)
            touched.add(key)
        if since_ms is None:  # usage without a readable timestamp still counts in the totals
            undated = _undated(stats)
            if undated.messages or undated.tokens:
                total.merge(undated)
                key = UNKNOWN_DAY if by == "day" else (stats.cwd or "(no cwd)")
                if by != "model":
                    group = groups.get(key) or groups.setdefault(key, Group(key))
                    group.usage.merge(undated)
                    touched.add(key)
        for key in touched:
            groups[key].sessions += 1
    if by == "day":
        ordered = sorted(groups.values(), key=lambda group: group.key)
    else:
        ordered = sorted(groups.values(), key=lambda group: (-group.usage.cost, -group.usage.tokens, group.key))
    return Aggregate(by, ordered, total, sessions, since_ms)


UNKNOWN_DAY = "(no date)"


def _undated(stats: SessionStats) -> Usage:
    """The session's usage that no hour bucket holds (assistant messages without a timestamp,
    oh-my-pi's `model_usage` without one: tokens and cost, no message)."""
    dated = Usage()
    for usage in stats.hours.values():
        dated.merge(usage)
    rest = Usage.from_row(stats.usage.to_row())
    rest.messages -= dated.messages
    rest.input -= dated.input
    rest.output -= dated.output
    rest.cache_read -= dated.cache_read
    rest.cache_write -= dated.cache_write
    rest.cost -= dated.cost
    if rest.messages <= 0 and rest.tokens <= 0:
        return Usage()
    rest.messages = max(rest.messages, 0)
    return rest


def parse_since(text: str, now_ms: int) -> int:
    """`30d`, `12h`, `2w`, `90m` (ago), a date `2026-01-31` (its local midnight, as the day
    rows are local days) or an ISO time → epoch ms; ValueError otherwise."""
    value = text.strip()
    units = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}
    if len(value) >= 2 and value[-1] in units and value[:-1].isdigit():
        return now_ms - int(value[:-1]) * units[value[-1]]
    if len(value) == 10 and value[4] == "-" and value[7] == "-":
        try:
            return int(datetime.strptime(value, "%Y-%m-%d").timestamp() * 1000)  # naive: local time
        except (ValueError, OverflowError, OSError):
            pass  # not a date: the error below
    moment = parse_time_ms(value)
    if moment is None or value.isdigit():
        raise ValueError(f"--since {text!r}: expected e.g. 30d, 12h, 2w or a date like 2026-01-31")
    return moment


# -- forks ----------------------------------------------------------------------------------------


def count_copies_once(
    counted: list[SessionStats],
    known: Iterable[SessionStats],
    keys_of: Callable[[list[str]], dict[str, bytes]],
) -> list[SessionStats]:
    """`counted` with each fork's copied usage left out: usage paid once is counted once.

    A fork family is a session and the forks made from it (chains of forks included,
    followed through `known`, every session found, counted or not; a parent not found as
    spelled is looked for as the same file spelled another way, e.g. under a symlinked
    root).  A chain that ends at a missing session or goes round a cycle leaves its forks
    loose: they join the family holding the first answer they copied (`_join_loose`).
    Counted members are taken ancestors first (then by start, then path), loose ones after
    the family they joined; a fork's assistant message whose key an earlier member holds is
    skipped.  So a fork of a counted session counts only what it added, and forks of a
    session that is gone count its history once.  `keys_of` gives the `keys` of sessions
    that are no fork (read from the cache: only for the sessions forks were made from, or
    may have been).  Only usage and hours are adjusted (what `aggregate` reads).
    """
    forks = [stats for stats in counted if stats.parent is not None]
    if not forks:  # (the usual listing: nothing to look up)
        return counted
    find_parent = _ParentFinder({stats.path: stats for stats in known})
    families: dict[str, list[tuple[int, SessionStats]]] = {}
    loose: set[str] = set()  # families whose chain ends at a missing session or in a cycle
    for stats in forks:
        family, depth, headed = _family_of(stats, find_parent)
        families.setdefault(family, []).append((depth, stats))
        if not headed:
            loose.add(family)
    for stats in counted:  # the sessions forks were made from, counted: each heads its family
        if stats.parent is None and stats.path in families:
            families[stats.path].append((0, stats))
    # (past LOOSE_JOIN_MAX loose families, forks naming sessions long gone by the thousand,
    # looking for what each copied would read most sessions' keys: their copies count as
    # they did before 0.7.14)
    keys = _join_loose(families, loose, counted, keys_of) if len(loose) <= LOOSE_JOIN_MAX else {}
    shared = [
        sorted(members, key=lambda item: (item[0], item[1].first_ms or 0, item[1].path))
        for members in families.values()
        if len(members) > 1 and any(stats.parent is not None for _, stats in members)
    ]
    roots = [stats.path for members in shared for _, stats in members if stats.parent is None]
    unread = [path for path in roots if path not in keys]
    if unread:
        keys.update(keys_of(unread))
    adjusted: dict[int, SessionStats] = {}
    for members in shared:
        held: set[int] = set()
        for _, stats in members:
            if stats.parent is None:
                held.update(array("q", keys.get(stats.path, b"")))
                continue
            kept = [row for row in stats.ledger if row[0] is None or row[0] not in held]
            held.update(row[0] for row in stats.ledger if row[0] is not None)
            if len(kept) < len(stats.ledger):
                adjusted[id(stats)] = _with_only(stats, kept)
    return [adjusted.get(id(stats), stats) for stats in counted] if adjusted else counted


class _ParentFinder:
    """A fork's parent among the sessions found: by its path as spelled, else by its session
    id (oh-my-pi's forks name their source by its header id), else (when that names a file
    that is there) by the same file under another spelling: `parentSession` holds the path
    pi was given, a root may be given through a symlink."""

    def __init__(self, by_path: dict[str, SessionStats]) -> None:
        self.by_path = by_path
        self._by_name: dict[str, list[SessionStats]] | None = None
        self._by_id: dict[str, SessionStats] | None = None
        self._found: dict[str, SessionStats | None] = {}

    def __call__(self, stats: SessionStats) -> SessionStats | None:
        path = _parent_path(stats)
        parent = self.by_path.get(path) or self._with_id(stats.parent)
        if parent is not None:
            return parent
        if path not in self._found:
            self._found[path] = self._same_file(path)
        return self._found[path]

    def _with_id(self, parent: str | None) -> SessionStats | None:
        """The session whose header id is `parent` (None for a path: ids have no separator)."""
        if not parent or os.sep in parent:
            return None
        if self._by_id is None:
            self._by_id = {}
            for stats in sorted(self.by_path.values(), key=lambda each: each.path):  # (a duplicated id: the first)
                self._by_id.setdefault(stats.id, stats)
        return self._by_id.get(parent)

    def _same_file(self, path: str) -> SessionStats | None:
        try:
            wanted = os.stat(path)
        except (OSError, ValueError):  # (gone: the usual case, nothing more to look at)
            return None
        if self._by_name is None:
            self._by_name = {}
            for stats in self.by_path.values():
                self._by_name.setdefault(os.path.basename(stats.path), []).append(stats)
        for stats in self._by_name.get(os.path.basename(path), ()):
            try:
                if os.path.samestat(wanted, os.stat(stats.path)):
                    return stats
            except (OSError, ValueError):
                continue
        return None


def _family_of(stats: SessionStats, find_parent: _ParentFinder) -> tuple[str, int, bool]:
    """A fork's family (the path of the session its chain starts from), its depth in the
    chain, and whether that session was found (else the family is loose: named by the
    missing path, or by the least path of the cycle the chain went round)."""
    chain = {stats.path: 0}
    top = stats
    while top.parent is not None:
        upper = find_parent(top)
        if upper is None:
            return _parent_path(top), len(chain) - 1, False
        if upper.path in chain:
            cycle = list(chain)[chain[upper.path] :]
            return min(cycle), len(chain) - 1, False
        chain[upper.path] = len(chain)
        top = upper
    return top.path, len(chain) - 1, True


LOOSE_JOIN_MAX = 200  # loose fork families joined to the family of what they copied (`_join_loose`)


def _join_loose(
    families: dict[str, list[tuple[int, SessionStats]]],
    loose: set[str],
    counted: list[SessionStats],
    keys_of: Callable[[list[str]], dict[str, bytes]],
) -> dict[str, bytes]:
    """Join each loose family to the family holding the first (dated) answer its shallowest
    fork copied (a fork copies its source's history from the start: that answer is the
    source's own): a counted session that is no fork, by its keys, asked for only from the
    sessions with usage in that answer's hour and model; else another family's fork, by its
    ledger.  The loose members go after the family's own.  Returns the keys read."""
    probes: dict[int, str] = {}  # a loose family's probe key → that family
    probe_hours: set[tuple[str, str]] = set()
    for name in sorted(loose):  # (a fixed order: a key two families copied goes to the least name)
        for _, member in sorted(families[name], key=lambda item: (item[0], item[1].path)):
            # each member's first dated answer (a fork made at the first message copied none)
            row = next((row for row in member.ledger if row[0] is not None and row[1] is not None), None)
            if row is not None:
                probes.setdefault(row[0], name)
                probe_hours.add((row[1], row[2]))
    if not probes:
        return {}
    joined: dict[str, str] = {}  # loose family → the family it joined

    def head_of(name: str) -> str:
        while name in joined:
            name = joined[name]
        return name

    def join(loose_name: str, other: str) -> None:
        head, other_head = head_of(loose_name), head_of(other)
        if head in loose and head != other_head:  # (a family headed by a session is never moved)
            joined[head] = other_head

    hours_ms = [parse_time_ms(f"{hour}:00:00.000Z") or 0 for hour, _ in probe_hours]
    low, high = min(hours_ms), max(hours_ms) + 3_600_000  # (the spans first: cheaper than the hours)
    candidates = [
        stats
        for stats in counted
        if stats.parent is None
        and stats.first_ms is not None
        and stats.first_ms < high
        and stats.last_ms is not None
        and stats.last_ms >= low
        and not stats.hours.keys().isdisjoint(probe_hours)
    ]
    keys = keys_of([stats.path for stats in candidates]) if candidates else {}
    for stats in candidates:
        for key in probes.keys() & set(array("q", keys.get(stats.path, b""))):
            families.setdefault(stats.path, [(0, stats)])
            join(probes[key], stats.path)
    for name, members in list(families.items()):
        for _, stats in members:
            for row in stats.ledger:
                if row[0] in probes:
                    join(probes[row[0]], name)
    for name in sorted(joined):  # (a fixed order: the same counts whichever way the files came)
        head = head_of(name)
        after = max(depth for depth, _ in families[head]) + 1
        families[head].extend((after + depth, stats) for depth, stats in families.pop(name))
    return keys


def _parent_path(stats: SessionStats) -> str:
    """A fork's `parentSession` as a normalised path (`pi --fork ../x.jsonl` writes it as
    typed: relative to the directory pi ran in, the fork's cwd)."""
    return os.path.normpath(os.path.join(stats.cwd, stats.parent or ""))


def _with_only(stats: SessionStats, rows: list[list[Any]]) -> SessionStats:
    """A fork's stats counting only these ledger rows' usage."""
    usage = Usage()
    hours: dict[tuple[str, str], Usage] = {}
    for _, hour, model, *row in rows:
        one = Usage.from_row(row)
        usage.merge(one)
        if hour is not None:
            bucket = hours.get((hour, model))
            if bucket is None:
                bucket = hours[(hour, model)] = Usage()
            bucket.merge(one)
    return replace(stats, usage=usage, hours=hours)
