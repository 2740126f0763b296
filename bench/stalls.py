"""How long the picker's UI thread works without a break, per event-loop callback, in-process.

    python bench/stalls.py --sessions 10000          # the corpus bench/run.py and latency.py use

The picker runs headless (Textual's `run_test`, 160×45) on the generated corpus with a warm
index; every asyncio callback on the event loop (a message handler, a screen update, a key)
is timed twice: its wall time, and the UI thread's own CPU time (`time.thread_time`), which
leaves out waiting for the GIL and for a busy machine's other processes — the figure to
compare between two versions on a shared machine (its sum over a phase, per key, is the UI
thread's whole share of a keystroke: echo, rows, frames, the preview).  Phases: typing two words (each key, then
settled), Esc, Tab ×4, Ctrl+S ×4, Alt+C ×3.  One frame is ~16 ms: a callback longer than that
is a frame the user did not get.  (bench/latency.py measures the same from a real terminal.)

A second table times each key until the work it started is done (its workers finished and
their results handled): an in-process "key → settled" that, unlike a screen that stopped
changing, cannot miss a search slower than latency.py's quiet period.  Its process CPU time
(all threads) is the figure to compare on a shared machine; its wall time includes Pilot's
own pauses (~150 ms even for a key that starts no work).  `SEANCE_CACHE_DIR` reuses an index.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from latency import percentiles  # noqa: E402  (bench/ is not a package)
from run import corpus  # noqa: E402

PHASES = {
    "typing": [*"sqlite", "escape", *"deadline", "escape"],
    "tab": ["tab"] * 4,
    "ctrl+s": ["ctrl+s"] * 4,
    "alt+c": ["alt+c"] * 3,
}


class Timings:
    """Wall and UI-thread CPU seconds of every event-loop callback while `on`."""

    def __init__(self) -> None:
        self.on = False
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.keys: list[tuple[float, float]] = []  # per key: wall and process CPU until its work is done

    def install(self) -> None:
        original = self._original = asyncio.events.Handle._run
        timings = self

        def timed(handle: asyncio.events.Handle) -> None:
            if not timings.on:
                return original(handle)
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(handle)
            finally:
                timings.wall.append(time.perf_counter() - wall)
                timings.cpu.append(time.thread_time() - cpu)

        asyncio.events.Handle._run = timed  # type: ignore[method-assign]

    def uninstall(self) -> None:
        self.on = False
        asyncio.events.Handle._run = self._original  # type: ignore[method-assign]


def summary(values: list[float]) -> str:
    if not values:
        return "–"
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    over = sum(1 for value in ordered if value > 0.016)
    return f"{ordered[-1] * 1000:.0f} ms / {p99 * 1000:.0f} ms / {over}"


async def measure(root: Path, cwd: str, cache: Path) -> dict[str, tuple[Timings, int]]:
    from textual.pilot import Pilot

    from seance.app.app import SeanceApp
    from seance.app.screens.session_list import PickerOptions, SessionPickerScreen
    from seance.core.catalog import Catalog

    catalog = Catalog([root], cache_dir=cache)
    app = SeanceApp(lambda: SessionPickerScreen(catalog, cwd=cwd, options=PickerOptions(watch=False)))

    async def settle(pilot: Pilot) -> None:
        for _ in range(2):
            await pilot.pause()
            for worker in list(pilot.app.workers):
                if not worker.is_finished:
                    await worker.wait()
            await pilot.pause(0.05)

    async def done(pilot: Pilot) -> None:
        """Every worker the key started has finished and its result is handled."""
        for _ in range(2):
            await pilot.pause()
            for worker in list(pilot.app.workers):
                if not worker.is_finished:
                    await worker.wait()
        await pilot.pause()

    results: dict[str, tuple[Timings, int]] = {}
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        for phase, keys in PHASES.items():
            timings = Timings()
            timings.install()
            timings.on = True
            try:
                for key in keys:
                    wall, cpu = time.perf_counter(), time.process_time()
                    await pilot.press(key)
                    await done(pilot)
                    timings.keys.append((time.perf_counter() - wall, time.process_time() - cpu))
                    await settle(pilot)
            finally:
                timings.uninstall()
            results[phase] = (timings, len(keys))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--mean-bytes", type=int, default=40_000)
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    args = parser.parse_args()
    root = corpus(args.out, args.sessions, args.projects, 1, args.mean_bytes, 0)
    bucket = max((path for path in root.iterdir() if path.is_dir()), key=lambda path: sum(1 for _ in path.iterdir()))
    with open(next(bucket.glob("*.jsonl")), "rb") as handle:
        cwd = orjson.loads(handle.readline())["cwd"]
    cache = Path(os.environ.get("SEANCE_CACHE_DIR") or tempfile.mkdtemp(prefix="seance-stalls-"))
    from seance.core.catalog import Catalog

    Catalog([root], cache_dir=cache).refresh()  # a warm index, as the picker usually finds it
    results = asyncio.run(measure(root, cwd, cache))
    print(f"\n{args.sessions:,} sessions; per event-loop callback: longest / p99 / callbacks over 16 ms\n")
    print("| phase (keys) | UI-thread CPU | wall | UI-thread CPU per key (all its callbacks) |\n|---|---|---|---|")
    for phase, (timings, keys) in results.items():
        per_key = f"{sum(timings.cpu) / keys * 1000:.1f} ms"
        print(f"| {phase} ({keys}) | {summary(timings.cpu)} | {summary(timings.wall)} | {per_key} |")
    print("\nKey → its work done (every worker finished, its result handled), in-process: median / p95\n")
    print("| phase (keys) | wall | process CPU (all threads) |\n|---|---|---|")
    for phase, (timings, keys) in results.items():
        walls, cpus = [wall for wall, _ in timings.keys], [cpu for _, cpu in timings.keys]
        print(f"| {phase} ({keys}) | {percentiles(walls, count=False)} | {percentiles(cpus, count=False)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
