"""Bulk clean-up: which sessions the criteria of `seance clean` pick, and which are kept anyway.

The criteria combine (AND): `empty` (no user message: pi's `firstMessage` is "(no messages)"),
`older_than` (seconds since the last activity), `larger_than` (bytes).  A query (`--query`)
filters before this, with the same language as `seance ls`.

The last activity of a session is the later of its last message and its file's mtime: a session
whose messages are old but that was written a minute ago (renamed, labelled, an agent at work)
is not old.  Two kinds of sessions are never picked, and the plan says so:

* one an agent may have open (`core.trash.session_activity`: written in the last `ACTIVE_SECONDS`
  or held open by a process), the same refusal as `seance rm` without `--force`;
* a pinned one, unless `include_pinned`.  `pinned_ids()` is the one place the pins store
  reaches clean-up (both `seance clean` and the list's "select all matching" ask it).

The dry run and `--yes` both come from one `plan_clean`, so what the dry run lists is what
`--yes` moves (unless a session becomes busy in between: then it is refused and reported).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .holders import open_files
from .metadata import NO_MESSAGES
from .model import SessionSummary
from .trash import ACTIVE_SECONDS, session_activity

AGE_UNITS = {"h": 3600, "d": 86400, "w": 7 * 86400}
SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([hdw])\s*", re.IGNORECASE)
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def parse_age(text: str) -> float:
    """Seconds in "90d", "2w", "12h" (a number and a unit); `ValueError` otherwise."""
    found = _AGE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not an age (a number and a unit: 12h, 90d, 2w)")
    return float(found.group(1)) * AGE_UNITS[found.group(2).lower()]


def parse_size(text: str) -> int:
    """Bytes in "10M", "500k", "1G", "2MB", "4096" (binary units: K = 1024); `ValueError` otherwise."""
    found = _SIZE.fullmatch(text)
    if found is None:
        raise ValueError(f"{text!r} is not a size (a number and an optional unit: 500K, 10M, 1G)")
    return int(float(found.group(1)) * SIZE_UNITS[found.group(2).lower()])


def human_size(size: int) -> str:
    """1536 -> "1.5 KB" (binary units, as `parse_size` reads them)."""
    if size < 1024:
        return f"{size} B"
    value, unit = size / 1024, "KB"
    for bigger in ("MB", "GB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{value:.1f} {unit}"


@dataclass(frozen=True, slots=True)
class Criteria:
    """What `seance clean` picks; every criterion given must hold."""

    empty: bool = False
    older_than: float | None = None  # seconds since the last activity
    larger_than: int | None = None  # bytes

    @property
    def given(self) -> bool:
        return self.empty or self.older_than is not None or self.larger_than is not None


def is_empty(summary: SessionSummary) -> bool:
    """No user message with text (what pi's picker shows as "(no messages)")."""
    return summary.first_message == NO_MESSAGES


def last_activity_ms(summary: SessionSummary) -> float:
    """The later of the last message and the file's mtime (stat'ed if the summary lacks it)."""
    mtime_ns = summary.mtime_ns
    if not mtime_ns:
        try:
            mtime_ns = os.stat(summary.path).st_mtime_ns
        except OSError:
            mtime_ns = 0
    return max(summary.modified_ms, mtime_ns / 1e6)


def matches(summary: SessionSummary, criteria: Criteria, now_ms: float) -> bool:
    if criteria.empty and not is_empty(summary):
        return False
    if criteria.older_than is not None and now_ms - last_activity_ms(summary) <= criteria.older_than * 1000:
        return False
    return criteria.larger_than is None or summary.size > criteria.larger_than


def pinned_ids() -> frozenset[str]:
    """The ids of the pinned sessions, from the user's marks file (`core.marks`)."""
    from .marks import MarkStore

    return frozenset(session_id for session_id, mark in MarkStore().load().items() if mark.pinned)


@dataclass(frozen=True)
class CleanPlan:
    """What a clean-up would move (`selected`) and what it keeps though it matched."""

    selected: list[SessionSummary]
    in_use: list[tuple[SessionSummary, str]] = field(default_factory=list)  # with the reason
    pinned: list[SessionSummary] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(summary.size for summary in self.selected)


def plan_clean(
    summaries: Iterable[SessionSummary],
    criteria: Criteria,
    *,
    now: float | None = None,
    pinned: frozenset[str] = frozenset(),
    include_pinned: bool = False,
    busy: Callable[[str], str | None] | None = None,
) -> CleanPlan:
    """The sessions among `summaries` that match `criteria`, minus pinned (`pinned`: their ids,
    unless `include_pinned`) and busy ones (`busy(path)`: why an agent may have it open, or None;
    default `core.trash.activity`).  `now`: seconds since the epoch (default: the clock)."""
    now_ms = (time.time() if now is None else now) * 1000
    why_busy = busy if busy is not None else _busy_check()
    plan = CleanPlan([])
    for summary in summaries:
        if not matches(summary, criteria, now_ms):
            continue
        if summary.id in pinned and not include_pinned:
            plan.pinned.append(summary)
            continue
        reason = why_busy(summary.path)
        if reason is not None:
            plan.in_use.append((summary, reason))
            continue
        plan.selected.append(summary)
    return plan


def _busy_check() -> Callable[[str], str | None]:
    """`core.trash.session_activity` with the processes' open files read once, not once per session."""
    open_now = open_files() or {}

    def busy(path: str) -> str | None:
        return session_activity(path, active_seconds=ACTIVE_SECONDS, open_now=open_now)

    return busy


__all__ = [
    "CleanPlan",
    "Criteria",
    "human_size",
    "is_empty",
    "last_activity_ms",
    "matches",
    "parse_age",
    "parse_size",
    "pinned_ids",
    "plan_clean",
]
