"""The resident watcher (`seance index --watch`) against none and against `rg -l`, on one store.

    python bench/watchd.py --root DIR --cache DIR [--repeat 3] [--idle 10] [--word W ...]

Starts a watcher on the index in `--cache` (brought up to date first), then for each word
runs, back to back, `rg -l -i -F WORD`, `seance ls --all --json --query WORD` with the watcher
and the same without it (`SEANCE_NO_WATCH=1`), checking both print the same bytes; reports
each one's fastest wall and CPU time (user+sys, from wait4) and the median ratio to rg.  Then
the split inside one process (`--split`): the freshness step (`Catalog.discover`: a stat per
file, or the watcher's sync) and the rest (ranking, printing), each its fastest of
`--repeat`.  And the watcher's start, its RSS, and its CPU while idle for `--idle` seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(command: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall s, cpu s, stdout) of a child run to completion."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    out = process.stdout.read()
    _pid, _status, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, out


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> dict[str, float]:
    """The process's RSS, peak RSS, and its anonymous (its own) and file-backed (the index's
    mapped pages, the page cache's to take back) parts, in MB."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(status[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM", "RssAnon", "RssFile")}


def split(root: str, word: str) -> None:
    """In this process: the freshness step and the rest of `ls --all --json --query WORD`."""
    from seance.core.catalog import Catalog
    from seance.core.discovery import Pending
    from seance.core.gcpause import gc_paused, own_collector
    from seance.core.search import parse_query

    own_collector()  # as the `seance` command does

    started = time.perf_counter()
    catalog = Catalog([Path(root)], watched=not os.environ.get("SEANCE_NO_WATCH"))
    spent = 0.0
    original = catalog.discover_ahead

    def timed():  # type: ignore[no-untyped-def]
        """The query's discovery (`discover_ahead`), made and waited for here (one process,
        no forked child: the split is of one core's work)."""
        nonlocal spent
        begun = time.perf_counter()
        found = original()()
        spent += time.perf_counter() - begun
        return Pending.of(found)

    catalog.discover_ahead = timed  # type: ignore[method-assign]
    with gc_paused():  # as `ls` does
        ranked = catalog.ranked(parse_query(word), None)
    assert ranked is not None
    size = sum(len(item) for chunk in catalog.pi_json_chunks(ranked) for item in chunk)
    total = time.perf_counter() - started
    print(json.dumps({"freshness": spent, "total": total, "hits": len(ranked.rows), "bytes": size}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path)
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--word", action="append")
    parser.add_argument("--split", nargs=2, metavar=("ROOT", "WORD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.split:
        split(*args.split)
        return 0
    if args.root is None or args.cache is None:
        parser.error("--root and --cache are required")
    root = str(args.root)
    words = args.word or ["sqlite", "fix the"]
    python = sys.executable
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "SEANCE_NO_WATCH")}
    env["SEANCE_CACHE_DIR"] = str(args.cache)
    env["PYTHONPATH"] = str(REPO.parent)
    without = {**env, "SEANCE_NO_WATCH": "1"}
    seance = [python, "-m", "seance"]
    subprocess.run([*seance, "index", "--root", root], env=env, check=True, capture_output=True)

    log = args.cache / "watchd-bench.log"
    started = time.perf_counter()
    with open(log, "wb") as log_file:
        daemon = subprocess.Popen([*seance, "index", "--watch", "--root", root], env=env, stderr=log_file)
    while b"watching (" not in log.read_bytes():
        if daemon.poll() is not None:
            raise SystemExit(log.read_text())
        time.sleep(0.05)
    start_s = time.perf_counter() - started
    try:
        rows = []
        for word in words:
            rg, on, off = [], [], []
            for _ in range(args.repeat):
                rg.append(run(["rg", "-l", "-i", "-F", word, root], env))
                on.append(run([*seance, "ls", "--all", "--json", "--root", root, "--query", word], env))
                off.append(run([*seance, "ls", "--all", "--json", "--root", root, "--query", word], without))
                if hashlib.sha256(on[-1][2]).digest() != hashlib.sha256(off[-1][2]).digest():
                    raise SystemExit(f"{word!r}: the answers with and without the watcher differ")
            hits = len(json.loads(on[0][2]))
            pieces = {}
            for name, mode_env in (("with", env), ("without", without)):
                runs = []
                for _ in range(args.repeat):
                    _wall, _cpu, out = run([python, __file__, "--split", root, word], mode_env)
                    runs.append(json.loads(out))
                pieces[name] = min(runs, key=lambda item: item["total"])
            rows.append((word, hits, rg, on, off, pieces))
        idle_from = cpu_of(daemon.pid)
        time.sleep(args.idle)
        idle_cpu = cpu_of(daemon.pid) - idle_from
        memory = rss_mb(daemon.pid)
    finally:
        subprocess.run([*seance, "index", "--unwatch"], env=env, capture_output=True)
        daemon.wait(30)

    def fastest(runs: list[tuple[float, float, bytes]]) -> str:
        wall, cpu, _ = min(runs, key=lambda item: item[0])
        return f"{wall:.3f} s (cpu {cpu:.2f} s)"

    def ratio(runs: list[tuple[float, float, bytes]], rg: list[tuple[float, float, bytes]]) -> str:
        return f"{statistics.median(run[0] / grep[0] for run, grep in zip(runs, rg, strict=True)):.2f}×"

    print(f"watcher: up in {start_s:.1f} s; RSS {memory['VmRSS']:.0f} MB (peak {memory['VmHWM']:.0f} MB", end="; ")
    print(f"its own {memory['RssAnon']:.0f} MB, the index's mapped pages {memory['RssFile']:.0f} MB)", end="; ")
    print(f"idle CPU {idle_cpu:.2f} s in {args.idle:.0f} s")
    print()
    print("| query | hits | `rg -l -i -F` | `ls --query`, watcher | ratio to rg | without watcher | ratio to rg |")
    print("|---|---|---|---|---|---|---|")
    for word, hits, rg, on, off, _pieces in rows:
        cells = [f"`{word}`", str(hits), fastest(rg), fastest(on), ratio(on, rg), fastest(off), ratio(off, rg)]
        print("| " + " | ".join(cells) + " |")
    print()
    print("| query, in one process | freshness with / without the watcher | the rest with / without |")
    print("|---|---|---|")
    for word, _hits, _rg, _on, _off, pieces in rows:
        on_piece, off_piece = pieces["with"], pieces["without"]
        rest_on, rest_off = on_piece["total"] - on_piece["freshness"], off_piece["total"] - off_piece["freshness"]
        print(
            f"| `{word}` | {on_piece['freshness']:.3f} s / {off_piece['freshness']:.3f} s "
            f"| {rest_on:.3f} s / {rest_off:.3f} s |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
