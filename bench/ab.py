"""One seance command, this checkout against another, in turns: wall and CPU of each run.

    python bench/ab.py --base /tmp/base --rounds 20 -- ls --all --json --root DIR --query sqlite
    python bench/ab.py --base /tmp/base --rg sqlite --root DIR -- ls --all --json --root DIR

Each round runs the command with this checkout's parent directory on `PYTHONPATH`, then with
`--base` (a worktree's parent, e.g. `git worktree add --detach /tmp/base/seance main`), the
order swapped every other round, so both see the same machine load; `--rg WORD` also times
`rg -l -i -F WORD ROOT` in each round.  Prints the median and fastest wall time and the
median and least CPU (user + sys of the command and the children it waited for, from
`os.wait4`) of each: on a shared machine the CPU is the steadier figure.  The cache is the
caller's `SEANCE_CACHE_DIR` (both use the same one: pass a copy).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_PARENT = Path(__file__).resolve().parents[2]


def run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run, its output read and thrown away."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert process.stdout is not None
    while process.stdout.read(1 << 20):
        pass
    _pid, _status, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the other seance's parent directory (its PYTHONPATH)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--rg", metavar="WORD", help="also time `rg -l -i -F WORD --root` each round")
    parser.add_argument("--root", help="the sessions root rg searches (with --rg)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then seance's arguments")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or (args.rg and not args.root):
        parser.error("give the command after --, and --root with --rg")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    seance = [sys.executable, "-m", "seance"]
    variants = {"this": str(REPO_PARENT), "base": args.base}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in [*variants, *(["rg"] if args.rg else [])]}
    for round_number in range(args.rounds):
        if args.rg:
            results["rg"].append(run(["rg", "-l", "-i", "-F", args.rg, args.root], env))
        names = list(variants) if round_number % 2 == 0 else list(reversed(variants))
        for name in names:
            results[name].append(run([*seance, *command], {**env, "PYTHONPATH": variants[name]}))
    for name, runs in results.items():
        walls, cpus = [wall * 1000 for wall, _ in runs], [cpu * 1000 for _, cpu in runs]
        print(
            f"{name:5} wall median {statistics.median(walls):6.0f} ms, fastest {min(walls):6.0f}; "
            f"cpu median {statistics.median(cpus):6.0f} ms, least {min(cpus):6.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
