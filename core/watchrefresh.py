"""The resident watcher's refresh of the kept stores, in a process of its own
(`command`: this module's `main` in a new interpreter, started by `Watcher._start_refresh`).

A fresh interpreter, never a fork of the watcher: SQLite keeps a per-process table of the
database files it has open and the POSIX locks it holds on them, and a forked child
inherits it, so the child's own connection took no lock of its own on the index
(<https://sqlite.org/howtocorrupt.html>, 2.6).  Once the watcher died mid-refresh, an `ls`
closing the last connection it saw deleted the WAL under the child, which then read mixed
pages, found the index "malformed" and rebuilt the shared index empty.  Started with
fork+exec (`subprocess.Popen`, no Python run between them) it holds its locks like any `ls`.

It gets the listing as any `ls` does: a sync over the watcher's socket
(`watchclient.synced_listing`), so its files and their key are byte for byte what a query
asking the watcher then gets.  The watcher's loop answers it like any client and never
waits on this process (it reads the pipe this process writes its one line to when select
says so).  It dies with the watcher (`scanpool.die_with_parent`), a SIGTERM interrupts it
(its temporary files removed), and it never heals the shared index (`Catalog(heal=False)`):
a damaged or locked index is left to the next foreground command.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

LISTING_WAIT_S = 10.0  # the watcher answers this process's sync as any client's, but it may be discovering


def command(
    parent: int, watch_dir: Path, cache_dir: Path | None, roots: list[Path], explicit: bool, answers: int
) -> list[str]:
    """The command line that runs the refresh for the watcher `parent` (its socket in
    `watch_dir`) of the index in `cache_dir` (None: the default one) of `roots`
    (`explicit`: given, not the default ones), making the `answers` last kept answers again.
    This interpreter, its import path first: the very `seance` the watcher runs."""
    boot = f"import sys; sys.path[:0] = {sys.path!r}; from {__name__} import main; sys.exit(main(sys.argv[1:]))"
    where = os.fspath(cache_dir) if cache_dir is not None else ""
    flags = [str(parent), os.fspath(watch_dir), where, "1" if explicit else "0", str(answers)]
    return [sys.executable, "-c", boot, *flags, *(os.fspath(root) for root in roots)]


def environment() -> dict[str, str]:
    """The refresh process's environment: this one, asking the watcher (`SEANCE_NO_WATCH`
    dropped) and waiting for its answer longer than an interactive `ls` does."""
    env = dict(os.environ)
    env.pop("SEANCE_NO_WATCH", None)
    env["SEANCE_WATCH_TIMEOUT"] = str(LISTING_WAIT_S)
    return env


def refresh(watch_dir: Path, cache_dir: Path | None, roots: list[Path], explicit: bool, answers: int) -> str:
    """Bring the kept stores up to date for the watcher's listing now, and make the last
    `answers` kept answers again; what was done, in one line ("" when nothing was)."""
    from .catalog import Catalog
    from .watchclient import synced_listing

    pending = synced_listing(watch_dir, roots, explicit)
    if pending is None:
        raise RuntimeError("the watcher gave no listing")
    listing, key = pending(), pending.head().key
    catalog = Catalog(roots if explicit else None, cache_dir=cache_dir, heal=False)
    try:
        refreshed = catalog.refresh_kept(listing.infos, key=key, vouch=True)
        if refreshed is None:
            return ""
        objects = " and their objects" if refreshed.keep_objects is not None else ""
        said = f"kept rows of {refreshed.sessions} sessions{objects} brought up to date"
        # (the texts are not said: a query's text is the user's, never written to a terminal)
        made = catalog.remake_answers(listing, key, answers)
        return said + (f", {len(made)} kept answer(s) made again" if made else "")
    finally:
        catalog.close()


def main(argv: list[str]) -> int:
    """`command`'s arguments: the refresh, its line written to stdout (the watcher's pipe)."""
    from .scanpool import die_with_parent

    parent, watch_dir, cache_dir, explicit, answers, *roots = argv
    die_with_parent(int(parent))  # (its watcher gone, nobody reads what it makes)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # (stopped: its temporary files removed)
    try:
        said = refresh(
            Path(watch_dir),
            Path(cache_dir) if cache_dir else None,
            [Path(root) for root in roots],
            explicit == "1",
            int(answers),
        )
    except BaseException as error:  # (any: said, never a traceback)
        os.write(1, f"could not bring the kept rows up to date: {error!r}"[:400].encode(errors="replace"))
        return 1
    os.write(1, said.encode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
