"""The catalog benchmark: floors, seance's listings, the index, queries, peak RSS, and pi.

    python bench/run.py                       # 10,000 sessions, ~600 MB, into bench/out (gitignored)
    python bench/run.py --sessions 1000       # a quicker look
    python bench/run.py --only query --base /tmp/base   # only `ls --query` vs rg, A/B with another seance
    python bench/run.py --only query --watch            # the same with `seance index --watch` serving
    python bench/run.py --only query --cache C --base B --base-cache D   # the other seance on its own cache

Every measurement is the wall time of a child process (Python start-up included, as a
user would see it); peak RSS comes from each child's rusage (`os.wait4`).  Each seance
command runs right after its floor, `--repeat` times, and the ratio is the median of those
back-to-back pairs: on a shared machine the load changes by the minute, and a ratio of two
numbers taken at different times would measure the neighbours.  The generated corpus is
kept and reused when the parameters match.  The OS page cache is warm for every run
(dropping it needs root); the first floor run warms it.  Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
PI_PACKAGE = REPO / "tests" / "oracle" / "node_modules" / "@mariozechner" / "pi-coding-agent"

FULL_TEXT_QUERY = """
import json, sys, time
from pathlib import Path
from seance.core.catalog import Catalog
catalog = Catalog([Path(sys.argv[1])])
timings = []
for term in sys.argv[2:]:
    best = None
    for _ in range(5):
        started = time.perf_counter()
        hits = catalog.search_text(term)  # seance's query language; up to 500 sessions
        snippets = [hit.snippet for hit in hits[:50]]  # what a screenful of rows shows
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    timings.append({"query": term, "ms": best * 1000, "hits": len(hits)})
print(json.dumps(timings))
"""

WARM_IN_PROCESS = """
import json, sys, time
from pathlib import Path
from seance.core.catalog import Catalog
catalog = Catalog([Path(sys.argv[1])])
def best_of(call):
    call()
    best = None
    for _ in range(5):
        started = time.perf_counter()
        call()
        elapsed = time.perf_counter() - started
        best = elapsed if best is None else min(best, elapsed)
    return best
print(json.dumps({"json": best_of(catalog.list_pi_json), "summaries": best_of(catalog.exact)}))
"""

FUZZY_QUERY = """
import json, sys, time, statistics
from pathlib import Path
from seance.core.catalog import Catalog
catalog = Catalog([Path(sys.argv[1])])
summaries = catalog.quick()
try:
    from seance.core.search import SearchCache, search
    cache = SearchCache()  # as the picker keeps one: the sessions are folded once
    def run(query):
        return len(search(summaries, query, paths=True, cache=cache))
    engine = "seance.core.search"
except ImportError:
    from rapidfuzz import fuzz, process
    titles = [summary.title for summary in summaries]
    def run(query):
        return len(process.extract(query, titles, scorer=fuzz.WRatio, limit=100, score_cutoff=60))
    engine = "rapidfuzz WRatio"
run("warm up the caches")
import gc
gc.freeze()  # as seance's own picker does once the list is loaded and searched
timings = []
for word in sys.argv[2:]:
    for end in range(1, len(word) + 1):
        started = time.perf_counter()
        count = run(word[:end])
        timings.append((time.perf_counter() - started) * 1000)
print(json.dumps({"engine": engine, "sessions": len(summaries), "median_ms": statistics.median(timings),
                  "max_ms": max(timings), "keystrokes": len(timings)}))
"""


@dataclass
class Run:
    seconds: float
    rss_mb: float
    stdout: str
    cpu: float = 0.0  # user + system seconds of the child


def run(command: list[str], env: dict[str, str] | None = None, capture: bool = False, drain: bool = False) -> Run:
    """Run a child to completion; its wall time and its own peak RSS (os.wait4).  `drain`:
    its stdout is a pipe read as a consumer reads it (`jq`, `wc`, a file's writer: into one
    reused buffer), not kept: `capture`'s growing buffer of a 71 MB answer costs the reader
    more than the child takes to write it."""
    started = time.perf_counter()
    piped = capture or drain
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE if piped else subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO
    )
    stdout = b""
    if capture:
        assert process.stdout is not None
        stdout = process.stdout.read()
    elif drain:
        assert process.stdout is not None
        buffer, descriptor = bytearray(1 << 20), process.stdout.fileno()
        while os.readv(descriptor, [buffer]):
            pass
    assert process.stderr is not None
    stderr = process.stderr.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{command[:4]} failed ({process.returncode}): {stderr.decode(errors='replace')[-2000:]}")
    return Run(elapsed, usage.ru_maxrss / 1024, stdout.decode(), usage.ru_utime + usage.ru_stime)


def best(
    command: list[str], repeat: int, env: dict[str, str] | None = None, fresh_cache: bool = False, capture: bool = False
) -> Run:
    runs = []
    for _ in range(repeat):
        if fresh_cache and env is not None:
            shutil.rmtree(env["SEANCE_CACHE_DIR"], ignore_errors=True)
        runs.append(run(command, env, capture))
    fastest = min(runs, key=lambda item: item.seconds)
    return Run(fastest.seconds, max(item.rss_mb for item in runs), fastest.stdout, fastest.cpu)


def corpus(out: Path, sessions: int, projects: int, seed: int, mean_bytes: int, huge: int) -> Path:
    """Generate (or reuse) the corpus; returns the sessions root."""
    key = f"{sessions}-{projects}-{seed}-{mean_bytes}-{huge}"
    root = out / f"corpus-{key}" / "sessions"
    stamp = root.parent / "complete"
    if not stamp.exists():
        shutil.rmtree(root.parent, ignore_errors=True)
        # In a child, so this process stays small (a child's peak RSS starts at its parent's).
        subprocess.run(
            [
                sys.executable,
                str(Path(__file__).resolve().parent / "generate.py"),
                str(root),
                "--sessions",
                str(sessions),
                "--projects",
                str(projects),
                "--seed",
                str(seed),
                "--mean-bytes",
                str(mean_bytes),
                "--huge",
                str(huge),
            ],
            check=True,
            cwd=REPO,
        )
        stamp.write_text(key)
    return root


# (word, fastest run, median ratio to rg, hits, fastest rg, base's (fastest, median ratio) or
# None, and the first run's seconds: the word's first asking in this run)
QueryPair = tuple[str, Run, float, int, Run, tuple[Run, float] | None, float]


def _query_pairs(
    root: Path,
    rare: str,
    ls_all: list[str],
    env: dict[str, str],
    repeat: int,
    base: str | None = None,
    base_env: dict[str, str] | None = None,
) -> list[QueryPair]:
    """A warm `ls --query` against `rg -l` on the same words, back to back: a word in nearly
    every session, a phrase, and a rare word (one session's id prefix).  (word, fastest run,
    median ratio to rg, hits, fastest rg, and with `base` (a PYTHONPATH holding another
    seance, e.g. a worktree of main) that seance's fastest run and median ratio to rg) each.
    `base_env`: the base's environment (its own cache: `--base-cache`), else `env`'s."""
    base_env = {**(base_env or env), "PYTHONPATH": base or ""}
    out = []
    for word in ("sqlite", '"fix the"', rare):
        ratios, results, greps, base_ratios, base_results = [], [], [], [], []
        for _ in range(repeat):
            grep = run(["rg", "-l", "-i", "-F", word.strip('"'), str(root)], env)
            result = run([*ls_all, "--query", word], env, drain=True)  # (rg's paths go to /dev/null)
            ratios.append(result.seconds / grep.seconds)
            results.append(result)
            greps.append(grep)
            if base is not None:
                other = run([*ls_all, "--query", word], base_env, drain=True)
                base_ratios.append(other.seconds / grep.seconds)
                base_results.append(other)
        fastest = min(results, key=lambda item: item.seconds)
        base_row = (min(base_results, key=lambda item: item.seconds), statistics.median(base_ratios)) if base else None
        grep_best = min(greps, key=lambda item: item.seconds)
        out.append((word, fastest, statistics.median(ratios), 0, grep_best, base_row, results[0].seconds))
    # the hits, counted after every timed run (a child's peak RSS starts at this process's:
    # the 70 MB answer at 100k read here would be in every later child's)
    return [
        (word, fastest, ratio, len(json.loads(run([*ls_all, "--query", word], env, capture=True).stdout)), *rest)
        for word, fastest, ratio, _hits, *rest in out
    ]


@contextlib.contextmanager
def _watcher(seance: list[str], root: Path, cache: Path, env: dict[str, str]) -> Iterator[None]:
    """`seance index --watch` on `root` and the index in `cache` while the block runs (the
    listing then comes from it: no stat per file), stopped after."""
    env = {key: value for key, value in env.items() if key != "SEANCE_NO_WATCH"}
    log = cache / "watchd-run.log"
    with open(log, "wb") as log_file:
        daemon = subprocess.Popen([*seance, "index", "--watch", "--root", str(root)], env=env, stderr=log_file)
    try:
        while b"watching (" not in log.read_bytes():
            if daemon.poll() is not None:
                raise SystemExit(log.read_text())
            time.sleep(0.05)
        print(log.read_text().splitlines()[0], file=sys.stderr)
        _wait_until_served(root, env)
        yield
    finally:
        subprocess.run([*seance, "index", "--unwatch"], env=env, capture_output=True)
        daemon.wait(30)


SERVED_PROBE = """
import sys, time
from pathlib import Path
from seance.core.index import default_cache_dir
from seance.core.watchclient import synced_listing
deadline = time.monotonic() + 120
while synced_listing(default_cache_dir(), [Path(sys.argv[1])], True) is None and time.monotonic() < deadline:
    time.sleep(0.5)
print(round(120 - (deadline - time.monotonic()), 1))
"""


def _wait_until_served(root: Path, env: dict[str, str]) -> None:
    """Wait until the watcher answers a sync for `root` (at most 2 minutes): a fresh one is
    busy checking every file against the index (~20 s at 100,000) and a query meanwhile
    stats the files itself, which is not the mode the rows measure."""
    probe = subprocess.run([sys.executable, "-c", SERVED_PROBE, str(root)], env=env, capture_output=True, text=True)
    print(f"the watcher answered after {probe.stdout.strip() or '?'} s", file=sys.stderr)


def _query_rows(queries: list[QueryPair]) -> list[tuple]:
    rows = []
    for word, result, ratio_to_rg, hits, grep, base, first in queries:
        versus = ""
        if base is not None:
            other, other_ratio = base
            versus = f"; base {other.seconds:.3f} s, cpu {other.cpu:.2f} s, {other.rss_mb:.0f} MB: {other_ratio:.2f}×"
        rows.append(
            (
                f"`ls --all --json --query {word}` ({hits} sessions) vs `rg -l -i -F`",
                f"{result.seconds:.3f} s (cpu {result.cpu:.2f} s)",
                f"{result.rss_mb:.0f} MB",
                f"≤ 1.5× rg at 10k, ≤ 0.1× at 100k: {ratio_to_rg:.2f}× (median of back-to-back pairs; "
                f"rg {grep.seconds:.3f} s, cpu {grep.cpu:.2f} s{versus}); its first run {first:.3f} s, "
                f"{first / grep.seconds:.2f}× the fastest rg (a word's first and second asking rank it, "
                "its answer is kept from the third)",
            )
        )
    return rows


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        total_kb = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {total_kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} CPUs{memory}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mean-bytes", type=int, default=40_000)
    parser.add_argument("--huge", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument("--no-pi", action="store_true", help="skip pi's own listAll")
    parser.add_argument(
        "--only", choices=("all", "query"), default="all", help="query: only the warm `ls --query` rows against rg"
    )
    parser.add_argument(
        "--cache", type=Path, help="with --only query: keep the index in this directory (reused when it is there)"
    )
    parser.add_argument("--base", help="also time `ls --query` of the seance on this PYTHONPATH (A/B, same pairs)")
    parser.add_argument(
        "--base-cache",
        type=Path,
        help="with --base: its own index in this directory (and its own watcher with --watch): for a base "
        "whose stored answers are of another layout, which the two would otherwise rewrite in turns",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="with --only query: a resident watcher (`seance index --watch`) serves the listing meanwhile",
    )
    args = parser.parse_args()
    if args.cache is not None and args.only != "query":
        parser.error("--cache is for --only query (the full run empties its cache for the cold runs)")
    if args.watch and args.only != "query":
        parser.error("--watch is for --only query")
    if args.base_cache is not None and (args.base is None or args.only != "query"):
        parser.error("--base-cache is for --only query with --base")

    root = corpus(args.out, args.sessions, args.projects, args.seed, args.mean_bytes, args.huge)
    files = sorted(root.glob("*/*.jsonl"))
    total_bytes = sum(path.stat().st_size for path in files)
    count, rare = len(files), files[len(files) // 2].stem.rpartition("_")[2][:8]  # a session's id prefix
    del files  # a child's peak RSS starts at this process's (100,000 paths)
    python = sys.executable
    script = Path(python).parent / "seance"
    seance = [str(script)] if script.exists() else [python, "-m", "seance"]
    cache = args.cache if args.cache is not None else Path(tempfile.mkdtemp(prefix="seance-bench-cache-"))
    # Byte-code caching on, as in any installed package (this sandbox sets PYTHONDONTWRITEBYTECODE).
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["SEANCE_CACHE_DIR"] = str(cache)
    run([*seance, "ls", "--help"], env)  # writes the .pyc files
    ls_all = [*seance, "ls", "--all", "--json", "--root", str(root)]
    rows: list[tuple[str, str, str, str]] = []

    def add(name: str, result: Run, target: str = "") -> None:
        rows.append((name, f"{result.seconds:.3f} s", f"{result.rss_mb:.0f} MB", target))
        print(f"{name}: {result.seconds:.3f} s, {result.rss_mb:.0f} MB", file=sys.stderr)

    if args.only == "query":
        if not shutil.which("rg"):
            raise SystemExit("--only query compares with rg, which is not installed")
        run([*seance, "index", "--root", str(root)], env)  # the index, text included (reused if there)
        base_env = None
        if args.base and args.base_cache:
            base_env = {**env, "PYTHONPATH": args.base, "SEANCE_CACHE_DIR": str(args.base_cache)}
            run([*seance, "index", "--root", str(root)], base_env)
        with contextlib.ExitStack() as watchers:
            if args.watch:
                watchers.enter_context(_watcher(seance, root, cache, env))
                if base_env is not None:
                    watchers.enter_context(_watcher(seance, root, args.base_cache, base_env))
            pairs = _query_pairs(root, rare, ls_all, env, args.repeat, args.base, base_env)
            query_rows = _query_rows(pairs)
        if args.cache is None:
            shutil.rmtree(cache, ignore_errors=True)
        _print_table(count, total_bytes, args.projects, query_rows)
        return 0

    floors = [python, str(BENCH / "floors.py")]
    run([*floors, "full", str(root)], env)  # warm the page cache
    prefix_cmd, full_cmd = [*floors, "prefix", str(root)], [*floors, "full", str(root)]
    ratios: dict[str, list[float]] = {}
    times: dict[str, list[Run]] = {}

    def pair(name: str, floor: list[str], command: list[str], fresh: bool = False) -> None:
        """Run the floor and then the command back to back, so both see the same machine load."""
        base = run(floor, env)
        if fresh:
            shutil.rmtree(cache, ignore_errors=True)
        result = run(command, env)
        times.setdefault(name, []).append(result)
        times.setdefault(floor[-2], []).append(base)
        ratios.setdefault(name, []).append(result.seconds / base.seconds)

    run(ls_all, env)  # build the index once so `warm` is warm
    for _ in range(args.repeat):
        pair("quick", prefix_cmd, [*ls_all, "--quick"])
        pair("warm", prefix_cmd, ls_all)
        pair("cold", full_cmd, ls_all, fresh=True)
    pair("index", full_cmd, [*seance, "index", "--rebuild", "--root", str(root)])
    queries = _query_pairs(root, rare, ls_all, env, args.repeat, args.base) if shutil.which("rg") else []

    def fastest(name: str) -> Run:
        return min(times[name], key=lambda item: item.seconds)

    def ratio(name: str) -> str:
        return f"{statistics.median(ratios[name]):.2f}× (median of {len(ratios[name])} back-to-back pairs)"

    add("prefix floor (stat + 4 KB + orjson, one process)", fastest("prefix"))
    add("full floor (read all + orjson every line, one process)", fastest("full"))
    add("seance ls --quick", fastest("quick"), f"≤ 2× prefix floor: {ratio('quick')}")
    add("seance ls, cold (empty index)", fastest("cold"), f"≤ 2× full floor: {ratio('cold')}")
    add("seance ls, warm", fastest("warm"), f"≤ 0.5× prefix floor: {ratio('warm')}")
    inside = json.loads(run([python, "-c", WARM_IN_PROCESS, str(root)], env, capture=True).stdout)
    rows.append(
        (
            "… the same in-process (no interpreter start-up or imports)",
            f"{inside['json']:.3f} s",
            "",
            f"{inside['json'] / fastest('prefix').seconds:.2f}× the fastest prefix floor",
        )
    )
    rows.append(
        (
            "… the picker's exact refresh in-process (`Catalog.exact()`, summaries decoded)",
            f"{inside['summaries']:.3f} s",
            "",
            "what the UI pays when the index is warm",
        )
    )
    add("seance index --rebuild (metadata + full text)", fastest("index"), f"≤ 5× full floor: {ratio('index')}")
    cold, warm = fastest("cold"), fastest("warm")

    text = json.loads(
        run(
            [python, "-c", FULL_TEXT_QUERY, str(root), '"sqlite"', '"fts5" "cursor"', "bench", '"exception retry"'],
            env,
            capture=True,
        ).stdout
    )
    worst = max(item["ms"] for item in text)
    rows.append(
        (
            "full-text query (FTS5, ≤500 sessions + 50 snippets)",
            f"{worst:.1f} ms (worst of {len(text)})",
            "",
            "≤ 50 ms: " + ", ".join(f"{item['query']} {item['ms']:.1f} ms/{item['hits']} hits" for item in text),
        )
    )
    fuzzy = json.loads(
        run([python, "-c", FUZZY_QUERY, str(root), "sqlite", "thread worker", "refactr"], env, capture=True).stdout
    )
    rows.append(
        (
            f"keystroke fuzzy query ({fuzzy['engine']}, {fuzzy['sessions']} prefix titles)",
            f"{fuzzy['median_ms']:.1f} ms median",
            "",
            f"≤ 30 ms; max {fuzzy['max_ms']:.1f} ms over {fuzzy['keystrokes']} keystrokes",
        )
    )
    rows.extend(_query_rows(queries))
    peak = max(item.rss_mb for name in ("quick", "cold", "warm", "index") for item in times[name])
    rows.append(("peak RSS of any seance child", f"{peak:.0f} MB", "", "≤ 300 MB"))

    if not args.no_pi and shutil.which("node") and PI_PACKAGE.is_dir():
        agent = Path(tempfile.mkdtemp(prefix="seance-bench-pi-"))
        (agent / "sessions").symlink_to(root)
        pi = best(
            ["node", str(BENCH / "pi_list.mjs")],
            max(args.repeat - 1, 1),
            {**os.environ, "PI_CODING_AGENT_DIR": str(agent)},
        )
        add(
            "pi 0.73.1 SessionManager.listAll (node)",
            pi,
            f"seance ls cold is {pi.seconds / cold.seconds:.1f}× faster, warm {pi.seconds / warm.seconds:.0f}× faster",
        )
        shutil.rmtree(agent, ignore_errors=True)
    if args.cache is None:
        shutil.rmtree(cache, ignore_errors=True)
    _print_table(count, total_bytes, args.projects, rows)
    return 0


def _print_table(count: int, total_bytes: int, projects: int, rows: list[tuple]) -> None:
    print(f"\n{count} sessions, {total_bytes / 1e6:.0f} MB, {projects} projects; {machine()}\n")
    print("| measurement | time | peak RSS | target / notes |")
    print("|---|---|---|---|")
    for name, seconds, rss, target in rows:
        print(f"| {name} | {seconds} | {rss} | {target} |")


if __name__ == "__main__":
    raise SystemExit(main())
