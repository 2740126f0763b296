"""The tree screen of one huge session in a real terminal: first rows, then how fast it answers keys.

    python bench/tree_keys.py /tmp/msgs3/m/entries.jsonl                      # every key, every delay
    python bench/tree_keys.py FILE --trials 5 --key esc --delays 0.2,0.5,1,2

The file is hard-linked (copied across file systems) into a scratch root of its own and
indexed there (HOME and the cache in the scratch directory); then, per trial, `seance pick
--root` runs in a detached tmux server (`bench/latency.py`'s `Terminal`, 160×45), Ctrl+T opens
the tree of the one session, and once its rows are drawn (the "first rows" figure, from
Ctrl+T) the key is sent `delay` seconds later:

* esc: Esc → the list is back (no "Session Tree" header, the list's rows and status line);
  Textual waits `ESCDELAY` (100 ms) after a lone Esc byte before it is a key: that is in it;
* down: Down → the tree's position line `(N/M)` changes (from the leaf it wraps to the top);
* type: a letter → the search line shows it.

Each key at each delay is its own opening (a fresh picker).

These are what the tree's background work (the preview's totals, the search index) can hold
up: a worker in pure Python delays every turn of the event loop.  The peak RSS (VmHWM) is
read once the last key answered.  Times are medians / maxima in ms over the trials; the
capture loop costs CPU of its own on a 2-core machine: the figures are upper bounds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from latency import Terminal, tree_drawn, wait_for  # noqa: E402  (bench/ imports by path)

POSITION = re.compile(r"\((\d+)/([\d,]+)\)")
KEYS = ("esc", "down", "type")


def position(lines: list[str]) -> str | None:
    """The tree's `(N/M)` position, None when not shown."""
    return next((found.group(0) for line in lines if (found := POSITION.search(line))), None)


def list_shown(lines: list[str]) -> bool:
    """The list's cursor row and status line (`latency.rows_shown` wants "sessions": here one)."""
    return any(line.startswith("› ") for line in lines) and any("Current Folder" in line for line in lines)


def back_to_list(lines: list[str]) -> bool:
    return bool(lines) and "Session Tree" not in lines[0] and list_shown(lines)


def peak_rss_mb(terminal: Terminal) -> float | None:
    """seance's peak resident memory (VmHWM) so far, in MB."""
    try:
        shell = int(terminal.tmux("list-panes", "-t", "bench", "-F", "#{pane_pid}").split()[0])
        child = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()[0]
        for line in Path(f"/proc/{child}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def open_tree(terminal: Terminal, log: Path) -> float:
    """Start the picker, wait for its row, Ctrl+T: seconds to the tree's first rows."""
    started = terminal.start(log)
    wait_for(terminal, list_shown, started, "rows", timeout=60)
    time.sleep(1.0)  # (the launch's own refresh settles)
    sent = terminal.send("C-t")
    return wait_for(terminal, tree_drawn, sent, "tree", timeout=60)


def answer(terminal: Terminal, key: str, typed: str) -> float:
    """Send `key` (esc / down / type, `typed` the search so far) and time the screen's answer."""
    if key == "esc":
        sent = terminal.send("Escape")
        return wait_for(terminal, back_to_list, sent, "list")
    if key == "down":
        before = position(terminal.screen())
        sent = terminal.send("Down")
        return wait_for(terminal, lambda lines: position(lines) not in (before, None), sent, "move")
    sent = terminal.send(typed[-1], literal=True)
    return wait_for(terminal, lambda lines: f"Type to search: {typed}" in "\n".join(lines[:4]), sent, "echo")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--key", action="append", choices=KEYS, help="repeatable (default: all)")
    parser.add_argument("--delays", default="0.2,0.5,1,2", help="seconds after the first draw, comma separated")
    parser.add_argument("--size", default="160x45")
    parser.add_argument("--scratch", type=Path, help="keep the root, cache and index here and reuse them")
    parser.add_argument("--raw", type=Path, help="append the figures (seconds) as one JSON line here (A/B in turns)")
    args = parser.parse_args()
    keys = args.key or list(KEYS)
    delays = [float(part) for part in args.delays.split(",")]
    width, height = (int(part) for part in args.size.split("x"))
    seance = shutil.which("seance") or f"{sys.executable} -m seance"
    scratch = args.scratch.resolve() if args.scratch else Path(tempfile.mkdtemp(prefix="seance-treekeys-"))
    results: dict[str, list[float]] = {}
    terminal: Terminal | None = None
    try:
        root = scratch / "root" / "project"
        root.mkdir(parents=True, exist_ok=True)
        target = root / "2026-01-01T00-00-00-000Z_huge.jsonl"
        if not target.exists():
            try:
                os.link(args.file, target)
            except OSError:
                shutil.copyfile(args.file, target)
        (scratch / "home").mkdir(exist_ok=True)
        env = {"HOME": str(scratch / "home"), "SEANCE_CACHE_DIR": str(scratch / "cache"), "TERM": "xterm-256color"}
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        child_env = {**os.environ, **env}
        child_env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([*seance.split(), "index", "--root", str(root.parent)], env=child_env, check=True)
        with open(target, "rb") as handle:  # (the session's own folder: the list's default scope shows it)
            cwd = orjson.loads(handle.readline()).get("cwd") or "/"
        command = [*seance.split(), "pick", "--root", str(root.parent), "--cwd", cwd]
        terminal = Terminal(command, env, width, height, ["-u", "PYTHONDONTWRITEBYTECODE"])
        log = scratch / "stderr.log"
        for trial in range(args.trials):
            for key in keys:
                for marks in ([delay] for delay in delays):
                    first = open_tree(terminal, log)
                    drawn = time.perf_counter()
                    results.setdefault("first rows", []).append(first)
                    typed = ""
                    for delay in marks:
                        time.sleep(max(0.0, delay - (time.perf_counter() - drawn)))
                        typed += "x"
                        results.setdefault(f"{key} at {delay:g} s", []).append(answer(terminal, key, typed))
                    time.sleep(max(0.0, 3.0 - (time.perf_counter() - drawn)))
                    if (rss := peak_rss_mb(terminal)) is not None:
                        results.setdefault("peak RSS MB", []).append(rss / 1000)
                    terminal.stop()
            print(f"trial {trial + 1}/{args.trials} done", file=sys.stderr)
    finally:
        if terminal is not None:
            terminal.stop()
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    if args.raw is not None:
        with args.raw.open("ab") as handle:
            handle.write(orjson.dumps(results) + b"\n")
    print("| figure | median | max | n |\n|---|---:|---:|---:|")
    for name, values in results.items():
        scale = 1000
        print(f"| {name} | {statistics.median(values) * scale:,.0f} | {max(values) * scale:,.0f} | {len(values)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
