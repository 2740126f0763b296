"""How child sessions are listed (`CHILD_MODES`; see `core.listing`), on their own so that
the CLI's parser names the choices without importing the listing (and its dataclasses): every
command, `show` and `tree` too, builds that parser."""

from __future__ import annotations

from typing import Literal, cast

ChildMode = Literal["hidden", "threaded", "flat"]
CHILD_MODES: tuple[ChildMode, ...] = ("hidden", "threaded", "flat")  # the picker's Alt+C cycle


def child_mode(value: object) -> ChildMode | None:
    """`value` as a child mode, or None if it is not one (a setting typed by hand)."""
    return cast(ChildMode, value) if isinstance(value, str) and value in CHILD_MODES else None
