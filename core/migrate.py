"""Migrations v1 -> v2 -> v3, exactly as pi applies them on open — but in memory.

pi rewrites the file the moment it opens an old session; seance never writes while
browsing.  Persisting a migration is the separate, explicit `persist_migration` call in
`core.writes`.

v1 -> v2: every entry gets an 8-hex id and the previous entry as parent (one linear chain);
a compaction's `firstKeptEntryIndex` (an index into the whole file, header = 0) becomes
`firstKeptEntryId`.  v2 -> v3: message role `hookMessage` becomes `custom`.

pi draws random ids; seance derives them from the session id and the entry's position, so
the same unchanged file always yields the same ids and `seance tree` ids can be fed back
to `seance show --leaf`.
"""

from __future__ import annotations

import math
import re
from typing import Any

CURRENT_VERSION = 3


_JS_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def header_version(header: dict[str, Any]) -> int | float:
    """The header's version as pi compares it (`header.version ?? 1` against 2 and 3).

    JavaScript compares a string by its numeric value ("3" is 3, a 5,000-digit one is
    Infinity, "abc" is NaN) and every number as a double: a finite version is returned as an
    int (truncated: the same answers against 2 and 3), `inf`/`nan` as floats, for which
    every comparison answers as JavaScript's would.  Never raises.
    """
    version = header.get("version", 1)
    if version is None:
        return 1
    if isinstance(version, bool):
        return int(version)
    if isinstance(version, str):
        text = version.strip()
        if not text:
            return 0  # Number("") is 0
        if _JS_NUMBER.fullmatch(text):
            version = float(text)  # no digit limit (int() has one); huge -> inf
        elif text.lstrip("+-") == "Infinity":
            return float("-inf") if text.startswith("-") else float("inf")
        else:
            return float("nan")
    if isinstance(version, int):
        return version
    if isinstance(version, float):
        return int(version) if math.isfinite(version) else version
    return float("nan")  # an object or array: NaN, no comparison holds


def _stable_id(seed: str, index: int, taken: set[str]) -> str:
    import hashlib  # here: only an old file's migration needs it, and every reader imports this module

    salt = 0
    while True:
        digest = hashlib.blake2b(f"{seed}\0{index}\0{salt}".encode(), digest_size=4).hexdigest()
        if digest not in taken:
            taken.add(digest)
            return digest
        salt += 1


def migrate_v1_to_v2(header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Give every entry an id and chain them linearly in file order (mutates)."""
    seed = str(header.get("id", ""))
    taken: set[str] = set()
    previous: str | None = None
    for index, entry in enumerate(entries):
        entry["id"] = _stable_id(seed, index, taken)
        entry["parentId"] = previous
        previous = entry["id"]
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            kept = entry.pop("firstKeptEntryIndex")
            # The index counts the header as 0.  Like pi, only an entry that already has
            # its new id (one at or before this compaction) can be named.
            if isinstance(kept, int) and not isinstance(kept, bool) and 1 <= kept <= index + 1:
                entry["firstKeptEntryId"] = entries[kept - 1]["id"]
    header["version"] = 2


def migrate_v2_to_v3(header: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    """Rename the legacy `hookMessage` role to `custom` (mutates)."""
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
    header["version"] = 3


def migrate(header: dict[str, Any], entries: list[dict[str, Any]], *, has_ids: bool) -> list[str]:
    """Bring header and entries to v3 in place; return the steps applied (empty if none).

    `has_ids` guards the Python port, whose headers carry no version but whose entries
    already have ids: re-chaining them would destroy their tree.
    """
    version = header_version(header)
    steps: list[str] = []
    if version >= CURRENT_VERSION or version != version:  # NaN: pi applies no step either
        return steps
    if version < 2:
        if has_ids:
            header["version"] = 2
        else:
            migrate_v1_to_v2(header, entries)
            steps.append("v1→v2")
    migrate_v2_to_v3(header, entries)
    steps.append("v2→v3")
    return steps
