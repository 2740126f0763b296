"""A test's watcher whose refresh process is held mid-refresh (tests/test_watch_refresh_process.py).

`python refresh_hold.py ARGS...`: the CLI (`seance ARGS...`, an `index --watch`) with
`watchrefresh.command` changed to start this file as the refresh (`refresh ARGS...`):
`watchrefresh.main` with `Catalog.remake_answers` held at its start (the kept rows made, the
index open) until `$HOLD_DIR/go` exists; it writes `$HOLD_DIR/ready` (its pid) first and
`$HOLD_DIR/done` (what it did) after.  Nothing else differs from the real watcher and refresh.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HOLD_DIR = Path(os.environ["HOLD_DIR"])


def _held_refresh(argv: list[str]) -> int:
    from seance.core import watchrefresh
    from seance.core.catalog import Catalog

    remake = Catalog.remake_answers

    def held(self: Catalog, *args: object, **kwargs: object) -> list[str]:
        (HOLD_DIR / "ready").write_text(str(os.getpid()))
        while not (HOLD_DIR / "go").exists():
            time.sleep(0.01)
        try:
            made = remake(self, *args, **kwargs)  # type: ignore[arg-type]
        except BaseException as error:
            (HOLD_DIR / "done").write_text(repr(error))
            raise
        (HOLD_DIR / "done").write_text(f"made {len(made)}; index problem: {self.index_problem!r}")
        return made

    Catalog.remake_answers = held  # type: ignore[method-assign]
    return watchrefresh.main(argv)


def _watch(argv: list[str]) -> int:
    from seance.cli.main import main
    from seance.core import watchrefresh

    real = watchrefresh.command

    def held_command(*args: object, **kwargs: object) -> list[str]:
        command = real(*args, **kwargs)  # type: ignore[arg-type]
        return [command[0], __file__, "refresh", *command[3:]]  # (not `-c` that runs `watchrefresh.main`)

    watchrefresh.command = held_command  # type: ignore[assignment]
    return main(argv)


if __name__ == "__main__":
    sys.exit(_held_refresh(sys.argv[2:]) if sys.argv[1] == "refresh" else _watch(sys.argv[1:]))
