"""`seance index --watch` / `--unwatch`: the optional resident watcher (`core.watchd`).

`--watch` runs in the foreground until Ctrl+C, SIGTERM or `seance index --unwatch`: it takes
the index's watch lock (a second one refuses, naming the first's pid), brings the index up to
date, then keeps it and the listing exact while `ls` and `resolve` ask it for the files
instead of stat-ing each (`core.watchclient`).  Lines on stderr say what it watches.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import time
from types import FrameType

from seance.core.catalog import Catalog
from seance.core.index import default_cache_dir

from .errors import CliError, ExitCode
from .output import say
from .scope import Scope

STOP_WAIT_S = 10.0  # `--unwatch` waits this long for the watcher to let go of its lock


def run_watch(args: argparse.Namespace) -> int:
    cache_dir = default_cache_dir()
    if args.unwatch:
        return _unwatch(cache_dir)
    from seance.core.scanpool import default_workers
    from seance.core.watchd import AlreadyWatching, Watcher, available, release_lock, take_lock

    if not available():
        raise CliError("--watch needs Linux's inotify; `seance ls` works without it")
    try:
        lock = take_lock(cache_dir)
    except AlreadyWatching as error:
        holder = f" (pid {error})" if str(error) else ""
        raise CliError(
            f"a watcher already serves the index in {cache_dir}{holder}; `seance index --unwatch` stops it",
            ExitCode.BAD_INPUT,
        ) from None
    catalog = Catalog(Scope.of(args).roots, workers=default_workers())
    watcher: Watcher | None = None

    def interrupted(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupted)
    try:
        if args.rebuild:
            catalog.rebuild_index()
        watcher = Watcher(catalog, cache_dir, log=lambda line: say(f"seance: {line}"))
        watcher.serve(ready=lambda: say("seance: watching (Ctrl+C or `seance index --unwatch` stops it)"))
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        if watcher is not None:
            watcher.close()
        catalog.close()
        release_lock(lock)
    say("seance: stopped watching")
    return ExitCode.OK


def _unwatch(cache_dir) -> int:  # type: ignore[no-untyped-def]
    from seance.core.watchclient import request, watcher_running

    conn = request(cache_dir, b"STOP", 2.0)
    if conn is None:
        if watcher_running(cache_dir):
            raise CliError("the watcher did not answer; stop it with `kill` (its pid is in watchd.lock)")
        say("seance: no watcher is running")
        return ExitCode.NOT_FOUND
    with contextlib.closing(conn):
        try:
            conn.recv(16)
        except OSError:
            pass
    deadline = time.monotonic() + STOP_WAIT_S
    while watcher_running(cache_dir):
        if time.monotonic() > deadline:
            raise CliError("the watcher did not stop in time")
        time.sleep(0.05)
    say("seance: the watcher stopped")
    return ExitCode.OK
