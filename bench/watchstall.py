"""How long setting up the picker's live watch keeps the UI thread from running, in-process.

    python bench/watchstall.py --sessions 100000     # the corpus bench/run.py generates (cached)

A ticker thread (standing in for the UI thread) sleeps 1 ms at a time and records its largest
overshoot while the watch is set up: the time it could not get the GIL back.  Two setups on
the same corpus: watchfiles' recursive watch of the root (what app/watcher.py did before: its
`RustNotify()` walks every entry under the root holding the GIL), and `RootWatcher` as it is
(non-recursive watches of each directory, in shards), from `start()` until it posts
`Watching`.  One frame is ~16 ms.  Each is run `--repeat` times; the worst stall, its median,
and the setup's wall time are printed.

`--latency` also times a new session file until `RootWatcher` posts it (a small generated
root in a temp dir: the cached corpus is never written to), in a folder watched from the
start and in a folder made just before the file (the new folder's watch is added then).
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import corpus  # noqa: E402  (bench/ is not a package)


class Ticker:
    """A thread that measures its largest wake-up delay (a 1 ms sleep) while running."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            before = time.perf_counter()
            time.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - before - 0.001)

    def __enter__(self) -> Ticker:
        self._thread.start()
        time.sleep(0.05)
        self.worst = 0.0
        return self

    def __exit__(self, *args: object) -> None:
        time.sleep(0.02)
        self._stop.set()
        self._thread.join()


def recursive(root: Path) -> Callable[[], None]:
    from watchfiles._rust_notify import RustNotify

    notify = RustNotify([str(root)], False, False, 0, True, False)
    return notify.close


def root_watcher(root: Path) -> Callable[[], None]:
    from seance.app.messages import Watching
    from seance.app.watcher import RootWatcher

    ready = threading.Event()
    source = SimpleNamespace(roots=[root])  # all the setup reads (summaries are read on changes only)
    watcher = RootWatcher(source, lambda message: ready.set() if isinstance(message, Watching) else None)  # type: ignore[arg-type]
    watcher.start()
    if not ready.wait(60):
        raise SystemExit("the watcher never posted Watching")

    def stop() -> None:
        watcher.stop()

    return stop


def measure(setup: Callable[[Path], Callable[[], None]], root: Path) -> tuple[float, float]:
    with Ticker() as ticker:
        started = time.perf_counter()
        close = setup(root)
        wall = time.perf_counter() - started
    close()
    return ticker.worst, wall


def latency(trials: int) -> None:
    """New file → `SessionsChanged` through a running `RootWatcher`, in old and new folders."""
    from seance.app.messages import SessionsChanged, Watching
    from seance.app.watcher import RootWatcher
    from seance.core.catalog import Catalog
    from seance.core.generate import generate_corpus

    temp = Path(tempfile.mkdtemp(prefix="seance-watch-"))
    try:
        generated = generate_corpus(temp / "sessions", 1000, 200, mean_bytes=2000)
        sample = generated.files[0].read_bytes()
        seen: dict[str, float] = {}
        arrived = threading.Condition()
        ready = threading.Event()

        def post(message: object) -> None:
            if isinstance(message, Watching):
                ready.set()
            elif isinstance(message, SessionsChanged):
                with arrived:
                    for summary in message.changed:
                        seen.setdefault(summary.path, time.perf_counter())
                    arrived.notify_all()

        watcher = RootWatcher(Catalog([generated.root], cache_dir=temp / "cache"), post)
        watcher.start()
        ready.wait(60)
        folders = sorted(path for path in generated.root.iterdir() if path.is_dir())

        def trial(path: Path) -> float:
            started = time.perf_counter()
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(sample)
            with arrived:
                arrived.wait_for(lambda: str(path) in seen, 10)
            return (seen.get(str(path), math.nan) - started) * 1000

        old_folders = [folders[i] / f"new-{i}.jsonl" for i in range(trials)]
        new_folders = [generated.root / f"--new-{i}--" / "s.jsonl" for i in range(trials)]
        for name, paths in (
            ("new file, folder watched from the start", old_folders),
            ("new file in a folder made just before", new_folders),
        ):
            times = [trial(path) for path in paths]
            found = [value for value in times if not math.isnan(value)]
            median = statistics.median(found) if found else math.nan
            worst = max(found, default=math.nan)
            missed = len(times) - len(found)
            print(f"{name:<42} median {median:6.0f} ms, max {worst:6.0f} ms, missed {missed} of {len(times)} (10 s)")
        watcher.stop()
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mean-bytes", type=int, default=40000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--latency", type=int, default=0, metavar="N", help="also time N new files until reported")
    args = parser.parse_args()
    root = corpus(args.out, args.sessions, args.projects, args.seed, args.mean_bytes, 0)
    print(f"{args.sessions} sessions, {args.projects} projects: {root}")
    print(f"{'setup':<34}{'worst stall ms (median, max)':>30}{'setup wall ms (median)':>26}")
    for name, setup in (("watchfiles recursive (before)", recursive), ("RootWatcher (non-recursive)", root_watcher)):
        runs = [measure(setup, root) for _ in range(args.repeat)]
        stalls = [stall * 1000 for stall, _ in runs]
        walls = [wall * 1000 for _, wall in runs]
        print(f"{name:<34}{statistics.median(stalls):>20.1f}, {max(stalls):>7.1f}{statistics.median(walls):>26.1f}")
    if args.latency:
        latency(args.latency)


if __name__ == "__main__":
    main()
