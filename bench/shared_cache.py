"""One root's warm costs in an index cache shared with other roots (issue 14, `Index(roots=...)`).

    python bench/shared_cache.py                          # 10,000 sessions under three roots
    python bench/shared_cache.py --base /tmp/base --rounds 7   # A/B with the seance on that PYTHONPATH

The cache holds the bench corpus (`run.corpus`, the same one `bench/run.py` uses) under three
roots, as users come to have it: the corpus itself (A), the same directory through a symbolic
link (B: seance keeps a root's spelling, so these are rows of their own), and a copy made of
hard links (C).  It is built once into `--work` (`seance index --root` each) and copied
afresh for each seance measured, so neither writes the other's stored answers.  Then, in
turns (one seance, then the other, `--rounds` times), each a child process timed by its own
CPU (user + sys, `os.wait4`) and wall:

* in-process, one catalog on root A (a second call of each, as a resident picker makes it):
  `refresh()`, `exact(cwd)`, `search_text(WORD)`, `stored(None)`, and a new catalog's
  first `text_hits(WORD)` (the picker's first key: the index's path table, then FTS5);
* `seance ls --all --json --root C` right after a new session file appeared in C (the
  stored answer is not valid: every row of the roots is checked);
* `seance ls --all --json --root A --query WORD` and `seance resolve ID --root A`.

Prints a Markdown table of medians.  The picker's Tab on the same cache:
`python bench/latency.py --cache WORK/cache-new --out <the corpus's out dir> --only tab`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import corpus  # noqa: E402  (bench/ is not a package: its modules import each other by path)

IN_PROCESS = r"""
import json, sys, time
from pathlib import Path
from seance.core.catalog import Catalog
from seance.core.search import parse_query

root, cache, word = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
catalog = Catalog([root], cache_dir=cache)
catalog.refresh()
cwd = catalog.refresh()[0].cwd
query = parse_query(word)
steps = {
    "refresh()": catalog.refresh,
    "exact(cwd)": lambda: catalog.exact(cwd),
    "search_text(WORD)": lambda: catalog.search_text(query),
    "a new catalog's text_hits(WORD)": lambda: Catalog([root], cache_dir=cache).text_hits(query),
    "stored(None)": lambda: catalog.stored(None),
}
out = {}
for name, step in steps.items():
    step()
    started = time.process_time()
    step()
    out[name] = time.process_time() - started
print(json.dumps(out))
"""


def run_timed(command: list[str], pythonpath: str, cache: Path) -> tuple[float, float, str, float]:
    """`command` with this seance and cache: (CPU seconds of the child, wall seconds, stdout,
    its peak RSS in MB)."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "SEANCE_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    stdout = process.stdout.read()
    stderr = process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:5]} failed: {stderr.decode(errors='replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime, wall, stdout.decode(), usage.ru_maxrss / 1024


def build(work: Path, root: Path, pythonpath: str) -> tuple[list[Path], Path]:
    """The three roots and the cache that holds them all (made once, kept in `work`)."""
    link, copy, cache = work / "link", work / "copy" / "sessions", work / "cache-new"
    work.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(root, target_is_directory=True)
    if not copy.is_dir():
        shutil.copytree(root, copy, copy_function=os.link)  # new names, the same files: nothing copied
    roots = [root, link, copy]
    if not (cache / "complete").exists():
        shutil.rmtree(cache, ignore_errors=True)
        for each in roots:
            run_timed([sys.executable, "-m", "seance", "index", "--root", str(each)], pythonpath, cache)
        (cache / "complete").write_text("A, B, C indexed\n")
    return roots, cache


def fresh_copy(cache: Path, into: Path) -> Path:
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    for name in os.listdir(cache):
        if name.startswith("index") and ".sqlite" in name:
            shutil.copy2(cache / name, into / name)
    return into


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--work", type=Path, default=Path("/tmp/seance-shared-cache"))
    parser.add_argument("--base", help="also time the seance on this PYTHONPATH (A/B, in turns)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--word", default="sqlite")
    args = parser.parse_args()
    mine = os.environ.get("PYTHONPATH", "")  # this side: the seance this interpreter imports
    root = corpus(args.out, args.sessions, 200, 1, 40_000, 0)
    roots, cache = build(args.work, root, mine)
    sides = {"this": mine, **({"base": args.base} if args.base else {})}
    caches = {name: fresh_copy(cache, args.work / f"cache-{name}") for name in sides}
    first = json.loads((next(root.glob("*/*.jsonl"))).read_bytes().split(b"\n", 1)[0])
    key = first["id"][:8]
    sample = min(root.glob("*/*.jsonl"), key=lambda path: path.stat().st_size)
    ls = ["-m", "seance", "ls", "--all", "--json", "--root"]
    commands = {
        "ls --json, a new file in C": [*ls, str(roots[2])],
        f"ls --json --query {args.word}": [*ls, str(root), "--query", args.word],
        "resolve ID": ["-m", "seance", "resolve", key, "--root", str(root)],
    }
    new_files = roots[2] / sample.parent.name
    for old in new_files.glob("new-*.jsonl"):  # made by an earlier run (copies, never the corpus's own files)
        old.unlink()
    cpu: dict[tuple[str, str], list[float]] = {}
    wall: dict[tuple[str, str], list[float]] = {}
    peak: dict[tuple[str, str], float] = {}
    outputs: dict[tuple[str, str], set[str]] = {}
    for number in range(args.rounds + 1):  # the first round warms each cache: not counted
        for side, pythonpath in sides.items():
            script = [sys.executable, "-c", IN_PROCESS, str(root), str(caches[side]), args.word]
            _used, _elapsed, stdout, _rss = run_timed(script, pythonpath, caches[side])
            for name, seconds in json.loads(stdout.strip().splitlines()[-1]).items():
                if number:
                    cpu.setdefault((name, side), []).append(seconds)
            for name, command in commands.items():
                if name.startswith("ls --json, a new"):
                    shutil.copy(sample, new_files / f"new-{side}-{number}.jsonl")
                used, elapsed, stdout, rss = run_timed([sys.executable, *command], pythonpath, caches[side])
                if number:
                    cpu.setdefault((name, side), []).append(used)
                    wall.setdefault((name, side), []).append(elapsed)
                    peak[name, side] = max(peak.get((name, side), 0.0), rss)
                    if not name.startswith("ls --json, a new"):
                        outputs.setdefault((name, side), set()).add(stdout)
    load = os.getloadavg()[0]
    print(f"{args.sessions:,} sessions under each of 3 roots in one cache; {args.rounds} rounds; load {load:.1f}")
    print()
    print("| root A's, median | " + " | ".join(f"{side}: CPU (wall; peak RSS)" for side in sides) + " |")
    print("|---|" + "---|" * len(sides))
    for name in dict.fromkeys(name for name, _side in cpu):
        cells = []
        for side in sides:
            walls = wall.get((name, side))
            cell = f"{statistics.median(cpu[name, side]) * 1000:.0f} ms"
            if walls:
                cell += f" ({statistics.median(walls) * 1000:.0f} ms; {peak[name, side]:.0f} MB)"
            cells.append(cell)
        print(f"| {name} | {' | '.join(cells)} |")
    if args.base:
        same = all(outputs[key] == outputs[(key[0], "base")] for key in outputs if key[1] == "this")
        print(f"\nthe same answers on both sides: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
