"""What the tree screen shows of each session file, hashed, to compare two versions byte for byte.

    PYTHONPATH=<version> python bench/tree_screen_dump.py FILE_OR_DIR... > out.json

Per file and per read (by offset, as the tree view reads a big file, and decoded, as the
list's preview reads): the `TreeModel` rows under the five filters (each `Row`, its summary
and its prefix), every entry's search text, the preview header (`build_preview`) at the leaf,
before the first entry and at 30 seeded random entries, and `PathTotals.at` of every entry.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path
from typing import Any

import seance.core.session as session_module
from seance.app.tree_model import FILTERS, TreeModel
from seance.app.widgets.context_preview import DEFAULT, build_preview
from seance.core.context import CONTEXT_TYPES
from seance.core.pathtotals import PathTotals
from seance.core.session import Session, read_session


def _read(path: Path, how: str) -> Any:
    if how == "decoded":
        return read_session(path, digest=False, decoded=CONTEXT_TYPES)
    kept = session_module.BY_OFFSET_MIN_BYTES
    session_module.BY_OFFSET_MIN_BYTES = 0  # (every entry read back by offset, as of a big file)
    try:
        return read_session(path, digest=False)
    finally:
        session_module.BY_OFFSET_MIN_BYTES = kept


def dump(path: Path) -> dict[str, str]:
    """The hashes of what the screen shows of `path` (or why it is not a session)."""
    out: dict[str, str] = {}
    for how in ("by offset", "decoded"):
        session = _read(path, how)
        if not isinstance(session, Session):
            return {"not a session": str(session)}
        rows = hashlib.sha256()
        for mode in FILTERS:
            model = TreeModel(session.tree, filter_mode=mode)
            for row in model.rows:
                rows.update(repr((row, model.summary(row.id).plain(), model.prefix(row))).encode())
        model = TreeModel(session.tree)
        model.prepare_search()
        for entry_id in model.order:
            rows.update(model.search_text(entry_id).encode() + b"\0")
        out[f"{how}: rows and search texts"] = rows.hexdigest()
        rng = random.Random(14)
        ids = list(session.tree.entries.ids)
        preview = hashlib.sha256()
        for leaf in [DEFAULT, None, *rng.sample(ids, min(30, len(ids)))]:
            preview.update(repr(build_preview(session, leaf).header).encode())
        totals = PathTotals.of(session.tree)
        for entry_id in reversed(ids):
            preview.update(repr(totals.at(entry_id)).encode())
        out[f"{how}: preview headers and totals"] = preview.hexdigest()
        session.close()
    return out


def main() -> None:
    result: dict[str, dict[str, str]] = {}
    for name in sys.argv[1:]:
        given = Path(name)
        for path in sorted(given.rglob("*.jsonl")) if given.is_dir() else [given]:
            result[str(path)] = dump(path)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
