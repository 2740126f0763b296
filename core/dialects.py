"""Normalise the pi family's dialects into pi's v3 entry shape.

* pi v1/v2/v3 — the reference shape (camelCase, ISO timestamps).
* oh-my-pi — a 256-byte `{"type":"title"}` slot line before the header, `model_change`
  with `"model": "provider/id"`, `blob:sha256:` image references, extra entry types.
* the Python port ("operator") — snake_case fields, float Unix-second timestamps,
  a `session_header` type and durable `leaf` entries.

Normalising never drops an entry: unknown types pass through untouched.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from .timefmt import iso_ms, parse_time_ms

HEADER_TYPES = frozenset({"session", "session_header"})
TITLE_SLOT_TYPE = "title"

_SNAKE = re.compile(r"_([a-z0-9])")


def camel(key: str) -> str:
    """`first_kept_entry_id` -> `firstKeptEntryId`."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), key) if "_" in key else key


def iso_timestamp(value: Any) -> Any:
    """Float/int Unix seconds (the Python port) become pi's ISO-8601 UTC strings."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    ms = parse_time_ms(value)  # seconds, or epoch ms as well
    return value if ms is None else iso_ms(ms)


def is_snake_dialect(header: dict[str, Any], sample: list[dict[str, Any]]) -> bool:
    """True for files written by the Python port (snake_case ids, `session_header`)."""
    if header.get("type") == "session_header":
        return True
    return any("parent_id" in entry for entry in sample[:20])


def camelise(obj: dict[str, Any]) -> dict[str, Any]:
    """Top-level snake_case keys to camelCase, and those of a nested `message`.

    Payloads (`data`, `details`) belong to extensions and keep their keys.
    """
    out: dict[str, Any] = {}
    for key, value in obj.items():
        new_key = camel(key)
        if new_key == "message" and isinstance(value, dict):
            value = {camel(k): v for k, v in value.items()}
        out[new_key] = value
    return out


def normalise_header(header: dict[str, Any], snake: bool) -> dict[str, Any]:
    """A header in pi's shape: `type: "session"`, camelCase keys, ISO timestamp."""
    if snake:
        header = camelise(header)
        header["type"] = "session"
        header["timestamp"] = iso_timestamp(header.get("timestamp"))
    return header


def normalise_entry(entry: dict[str, Any], snake: bool) -> dict[str, Any]:
    """One entry in pi's shape.  Returns the same dict when nothing needed changing."""
    if snake:
        entry = camelise(entry)
        entry["timestamp"] = iso_timestamp(entry.get("timestamp"))
        if entry.get("type") == "branch":  # the port's BranchEntry is pi's branch_summary
            entry["type"] = "branch_summary"
        elif entry.get("type") == "custom_info":
            entry["type"] = "custom"
    if entry.get("type") == "model_change" and "modelId" not in entry:
        spec = entry.get("model")
        if isinstance(spec, str):  # oh-my-pi: "provider/model-id"
            provider, _, model_id = spec.partition("/")
            entry["provider"], entry["modelId"] = (provider, model_id) if model_id else (None, provider)
    return entry


def slot_title(slot: dict[str, Any] | None) -> str | None:
    """The oh-my-pi title slot's title, or None when absent or empty."""
    if not slot:
        return None
    title = slot.get("title")
    return title if isinstance(title, str) and title.strip() else None


def _snake(key: str) -> str:
    return "".join(f"_{char.lower()}" if char.isupper() else char for char in key)


def denormalise_entry(entry: dict[str, Any], dialect: str) -> dict[str, Any]:
    """An entry seance writes, in the dialect of the file it goes into."""
    if dialect != "operator":
        return entry
    out = {_snake(key): value for key, value in entry.items()}
    stamp = out.get("timestamp")
    if isinstance(stamp, str):
        try:
            out["timestamp"] = datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            pass
    return out
