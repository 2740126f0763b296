"""Time as pi writes and reads it: epoch milliseconds <-> JavaScript `toISOString()` text.

One home for the conversions every part of seance needs (listing, tree ordering, the Python
port's float timestamps, new entries): `parse_time_ms` is `new Date(value).getTime()` for the
values sessions hold, `iso_ms` is `Date.prototype.toISOString()`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

# The years `toISOString()` prints as YYYY (0001..9999): anything outside is a bogus time,
# treated as unparseable (and it would overflow gmtime and SQLite's 64-bit integers).
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_999

_DAYS: dict[int, str] = {}
_TWO = [f"{number:02d}" for number in range(60)]
_THREE = [f"{number:03d}" for number in range(1000)]


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as JavaScript's `Date.prototype.toISOString()` prints them.

    Called for every session of a listing, so the date part is cached per day and the time
    is assembled from lookup tables (several times faster than strftime or format specs).
    """
    ms = int(ms)
    if not MIN_MS <= ms <= MAX_MS:  # callers pass checked times; never let a bogus one raise
        ms = MIN_MS if ms < MIN_MS else MAX_MS
    seconds, millis = divmod(ms, 1000)
    day, second = divmod(seconds, 86400)
    date = _DAYS.get(day)
    if date is None:
        t = time.gmtime(day * 86400)
        date = _DAYS[day] = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
    hour, second = divmod(second, 3600)
    minute, second = divmod(second, 60)
    return f"{date}{_TWO[hour]}:{_TWO[minute]}:{_TWO[second]}.{_THREE[millis]}Z"


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)


def parse_time_ms(value: Any) -> int | None:
    """`new Date(value).getTime()` for the values sessions hold: ISO strings, epoch ms/seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        ms = value * 1000 if abs(value) < 1e11 else value
        return int(ms) if MIN_MS <= ms <= MAX_MS else None
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def now_iso() -> str:
    """The current time as pi stamps new entries."""
    return iso_ms(now_ms())
