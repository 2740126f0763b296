"""What a user feels in the live picker, measured in a real terminal (tmux), as issue 14 states it.

    python bench/latency.py --sessions 10000            # generate (or reuse) the corpus, index it, measure
    python bench/latency.py --sessions 100000 --trials 20
    python bench/latency.py --sessions 10000 --only launch    # launches only (iterate faster)

seance runs `pick` inside a detached tmux server of its own (`-L seance-latency-<pid>`, 160×45 by
default, `TERM=xterm-256color`), on a generated corpus (`bench/generate.py`, the same one
`bench/run.py` uses) with a warm index, HOME and the cache in a temporary directory.  Keys
are sent with `tmux send-keys`; the screen is read with `capture-pane` as fast as tmux
answers (every few ms; the issue polled every 20 ms).  A time is from just before the key is
sent to the first capture that shows the result:

* launch → rows: the tmux session is created → a cursor row and the status line's count.
* key → echo: one character typed → the query line shows it (the UI thread was free).
* key → settled: the same key → the screen stops changing (the last change seen before a
  quiet period of `--quiet` seconds).
* Tab → rows: the scope switch → the status line shows the other scope, screen settled;
  and → its first rows (other rows than before, under the other scope's status): a Tab
  while the launch's exact refresh runs shows the stored rows, which the refresh replaces.
* Ctrl+T → tree rows: the tree screen's header and its position line are drawn.
* new file → listed: a new session file (its first message a unique word) is written into
  the current project's folder → the word is on screen.

Like an installed seance (pip writes bytecode), the modules' bytecode is cached (in the
scratch directory, written by one import before the first launch), even where the
environment says PYTHONDONTWRITEBYTECODE; `--no-pyc` compiles them on every launch instead
(~0.1 s more per launch).  The launch row also gives seance's CPU time (user+sys, from
/proc) until its rows were seen: on a shared machine it moves much less than the wall time.

The typing row also gives seance's CPU time per key typed and its resident memory before and
after the typing; `--keys` prints each key's figures and when it was sent (wall clock, ms
modulo 1000 s, to match with a log of the process).

Medians and 95th percentiles are printed as a Markdown table (paste into docs/benchmarks.md).
The capture loop costs CPU of its own on a 2-core machine: the figures are upper bounds.
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
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from run import corpus  # noqa: E402  (bench/ is not a package: its modules import each other by path)

SOCKET = f"seance-latency-{os.getpid()}"  # our own server: two runs at once must not kill each other
SESSION = "bench"
WORDS = ("sqlite", "deadline", "fts5 cursor", "refactor")
PHASES = ("launch", "typing", "tab", "tree", "new")
STATUS = re.compile(r"(◉|○) Current Folder \| (◉|○) All .* ([\d,]+) sessions")


class Terminal:
    """One tmux server of our own, one window running `seance pick`."""

    def __init__(
        self, command: list[str], env: dict[str, str], width: int, height: int, unset: list[str] | None = None
    ) -> None:
        self.command, self.env, self.width, self.height = command, env, width, height
        self.unset = unset or []  # `env` options that remove a variable (`-u NAME`)

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", SOCKET, "-f", "/dev/null", *args], capture_output=True, text=True, check=False
        ).stdout

    def start(self, log: Path) -> float:
        self.stop()
        line = " ".join(f"{name}={value!s}" for name, value in self.env.items())
        shell = f"env {' '.join(self.unset)} {line} {' '.join(self.command)} 2>>{log}; sleep 600"
        for _attempt in range(50):  # a server still shutting down refuses the new session: retry
            started = time.perf_counter()
            made = subprocess.run(
                ["tmux", "-L", SOCKET, "-f", "/dev/null", "new-session", "-d", "-x", str(self.width),
                 "-y", str(self.height), "-s", SESSION, shell],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if made.returncode == 0:
                return started
            time.sleep(0.1)
        raise TimeoutError(f"tmux would not start a session: {made.stderr.strip()}")

    def screen(self) -> list[str]:
        return self.tmux("capture-pane", "-p", "-t", SESSION).splitlines()

    def send(self, *keys: str, literal: bool = False) -> float:
        started = time.perf_counter()
        self.tmux("send-keys", "-t", SESSION, *(["-l"] if literal else []), *keys)
        return started

    def _stat(self) -> list[str] | None:
        """The fields of /proc/PID/stat after the command name, for the pane's command (seance,
        the shell's child); None when it cannot be read."""
        try:
            shell = int(self.tmux("list-panes", "-t", SESSION, "-F", "#{pane_pid}").split()[0])
            children = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
            return Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError, IndexError):
            return None

    def cpu_seconds(self) -> float | None:
        """user+sys CPU seconds seance has used so far: on a shared machine the wall time moves
        with the others' load, this much less."""
        fields = self._stat()
        return None if fields is None else (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float | None:
        """seance's resident memory now, in MB (None: not readable)."""
        fields = self._stat()
        return None if fields is None else int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 1e6

    def stop(self) -> None:
        """End the server and wait until it is gone (a new session must not reach a dying one)."""
        self.tmux("kill-server")
        alive = ["tmux", "-L", SOCKET, "-f", "/dev/null", "has-session"]
        while subprocess.run(alive, capture_output=True).returncode == 0:
            time.sleep(0.05)


def wait_for(
    terminal: Terminal, shown: Callable[[list[str]], bool], since: float, what: str, timeout: float = 30.0
) -> float:
    """Seconds from `since` to the first capture for which `shown` holds."""
    while True:
        lines = terminal.screen()
        now = time.perf_counter()
        if shown(lines):
            return now - since
        if now - since > timeout:
            raise TimeoutError(f"timed out waiting for {what}; the screen was:\n" + "\n".join(lines))


def list_part(lines: list[str]) -> list[str]:
    """The screen without the preview pane (right of its `▏` border): the list, the query and
    the status line, which is what "the list settled" means; the preview loads after its own
    debounce (`context_preview.DEBOUNCE_SECONDS`) once the highlighted session changes."""
    return [line.split("▏", 1)[0] for line in lines]


def rows_part(lines: list[str]) -> list[str]:
    """The list's rows alone: `list_part` without the status line, the footer and the
    scrollbar's column (a search that shows its first page of rows before the whole ranking
    changes only these once the rows are right)."""
    return [line[:-1] for line in list_part(lines[:-1]) if not STATUS.search(line)]


def settle(terminal: Terminal, since: float, quiet: float, timeout: float = 30.0) -> float:
    """Seconds from `since` to the last change of the screen before it stayed the same for `quiet`."""
    return settle_both(terminal, since, quiet, timeout)[1]


def settle_both(terminal: Terminal, since: float, quiet: float, timeout: float = 30.0) -> tuple[float, float, float]:
    """`settle`, and the same for the list alone (`list_part`) and its rows (`rows_part`):
    (list, whole screen, rows) seconds."""
    previous = terminal.screen()
    changed = list_changed = rows_changed = time.perf_counter()
    while time.perf_counter() - changed < quiet:
        lines = terminal.screen()
        if lines != previous:
            now = time.perf_counter()
            if list_part(lines) != list_part(previous):
                list_changed = now
            if rows_part(lines) != rows_part(previous):
                rows_changed = now
            previous, changed = lines, now
        if changed - since > timeout:
            break
    return max(0.0, list_changed - since), max(0.0, changed - since), max(0.0, rows_changed - since)


def record_settled(results: dict[str, list[float]], name: str, terminal: Terminal, sent: float, quiet: float) -> None:
    """`settle_both` from `sent`: the list's time as `name`, the whole screen's as "`name`
    screen", the rows' alone as "`name` rows"."""
    listed, screen, rows = settle_both(terminal, sent, quiet)
    results[name].append(listed)
    results[f"{name} screen"].append(screen)
    results[f"{name} rows"].append(rows)


def status(lines: list[str]) -> re.Match[str] | None:
    return next((found for line in lines if (found := STATUS.search(line))), None)


def rows_shown(lines: list[str]) -> bool:
    return status(lines) is not None and any(line.startswith("› ") for line in lines)


def query_line(lines: list[str]) -> str:
    return lines[1] if len(lines) > 1 else ""


def echoes(typed: str) -> Callable[[list[str]], bool]:
    return lambda lines: typed in query_line(lines)


def scope_differs(before: re.Match[str] | None) -> Callable[[list[str]], bool]:
    def shown(lines: list[str]) -> bool:
        now = status(lines)
        return now is not None and (before is None or now.group(1) != before.group(1))

    return shown


def other_rows(before: list[str]) -> Callable[[list[str]], bool]:
    """The other scope's status, with a cursor row, and rows other than before the Tab (the
    first rows of the other scope, which an exact listing may replace later)."""
    differs = scope_differs(status(before))
    return lambda lines: differs(lines) and rows_shown(lines) and rows_part(lines) != rows_part(before)


def tree_drawn(lines: list[str]) -> bool:
    return bool(lines) and "Session Tree" in lines[0] and any("filter:" in line for line in lines)


def shows(word: str) -> Callable[[list[str]], bool]:
    return lambda lines: any(word in line for line in lines)


def write_probe(bucket: Path, cwd: str, word: str) -> Path:
    """A new pi session whose first message is `word`: what an agent writes when it starts."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    session_id = str(uuid.uuid4())
    entries = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": stamp, "cwd": cwd},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": stamp,
         "message": {"role": "user", "content": f"{word} appeared while the picker was open"}},
    ]  # fmt: skip
    path = bucket / f"{stamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
    return path


def percentiles(values: list[float], *, count: bool = True) -> str:
    """Median / p95 in ms (and how many values, with `count`)."""
    if not values:
        return "–"
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    counted = f" (n={len(ordered)})" if count else ""
    return f"{statistics.median(ordered) * 1000:,.0f} ms / {p95 * 1000:,.0f} ms{counted}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=200)
    parser.add_argument("--mean-bytes", type=int, default=40_000)
    parser.add_argument("--trials", type=int, default=10, help="launches, Tabs, Ctrl+Ts and new files")
    parser.add_argument("--quiet", type=float, default=0.4, help="seconds without change that mean settled")
    parser.add_argument(
        "--after-launch",
        type=float,
        default=0.0,
        help="seconds to wait after the launch settled before the keys (0: at once, while the exact "
        "refresh that follows the first paint may still run; e.g. 5 for the steady state)",
    )
    parser.add_argument(
        "--tab-after-rows",
        type=float,
        help="with --only tab: press Tab this many seconds after the launch's rows were seen, without "
        "waiting for the screen to settle (e.g. 0.3: while the exact refresh after the first paint runs)",
    )
    parser.add_argument("--size", default="160x45")
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    parser.add_argument(
        "--no-pyc",
        action="store_true",
        help="no bytecode cache: seance's modules are compiled on every launch (PYTHONDONTWRITEBYTECODE)",
    )
    parser.add_argument("--cache", type=Path, help="keep the index here and reuse it (default: a fresh one, removed)")
    parser.add_argument(
        "--only",
        choices=PHASES,
        action="append",
        help="measure only these (repeatable; launch is measured on every trial anyway): faster to iterate",
    )
    parser.add_argument("--keys", action="store_true", help="print each typed key's settled times (stderr)")
    args = parser.parse_args()
    wanted = set(args.only or PHASES)
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    root = corpus(args.out, args.sessions, args.projects, 1, args.mean_bytes, 0)
    buckets = sorted(path for path in root.iterdir() if path.is_dir())
    bucket = max(buckets, key=lambda path: sum(1 for _ in path.iterdir()))  # the busiest project
    with open(next(bucket.glob("*.jsonl")), "rb") as handle:
        cwd = orjson.loads(handle.readline())["cwd"]
    width, height = (int(part) for part in args.size.split("x"))
    seance = shutil.which("seance") or f"{sys.executable} -m seance"
    scratch = Path(tempfile.mkdtemp(prefix="seance-latency-"))
    (scratch / "home").mkdir()
    cache = args.cache.resolve() if args.cache else scratch / "cache"
    env = {"HOME": str(scratch / "home"), "SEANCE_CACHE_DIR": str(cache), "TERM": "xterm-256color"}
    if not args.no_pyc:  # as installed (pip compiles): bytecode cached, in the scratch directory
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
    child_env = {**os.environ, **env}
    if not args.no_pyc:
        child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    probes: list[Path] = []
    names = ("launch", "launch cpu", "echo", "settled", "settled screen", "settled rows", "tab", "tab screen")
    names = (*names, "tab rows", "tab first", "tree", "new", "typing cpu")
    results: dict[str, list[float]] = {name: [] for name in names}
    try:
        subprocess.run([*seance.split(), "index", "--root", str(root)], env=child_env, check=True)
        if not args.no_pyc:  # the bytecode of everything a launch imports, written before the first one
            modules = ("cli.ui", "app.app", "app.screens.session_list", "app.widgets.context_preview")
            warm = "import " + ", ".join(f"seance.{module}" for module in modules)
            subprocess.run([sys.executable, "-c", warm], env=child_env, check=True)
        unset = [] if args.no_pyc else ["-u", "PYTHONDONTWRITEBYTECODE"]
        terminal = Terminal([*seance.split(), "pick", "--root", str(root), "--cwd", cwd], env, width, height, unset)
        for trial in range(args.trials):
            started = terminal.start(scratch / "stderr.log")
            results["launch"].append(wait_for(terminal, rows_shown, started, "rows"))
            cpu = terminal.cpu_seconds()
            if cpu is not None:
                results["launch cpu"].append(cpu)
            if args.tab_after_rows is None:
                settle(terminal, time.perf_counter(), args.quiet)
                time.sleep(args.after_launch)
            else:  # the launch's exact refresh is (most likely) still running
                time.sleep(max(0.0, args.tab_after_rows - (time.perf_counter() - started - results["launch"][-1])))
            if trial == 0 and "typing" in wanted:  # every key of every word, each after the previous one settled
                cpu_before, rss_before, keys = terminal.cpu_seconds(), terminal.rss_mb(), 0
                for word in WORDS:
                    typed = ""
                    for char in word:
                        typed += char
                        sent = terminal.send(char, literal=True)
                        results["echo"].append(wait_for(terminal, echoes(typed), sent, "echo"))
                        record_settled(results, "settled", terminal, sent, args.quiet)
                        if args.keys:  # each key's figures, to tell the slow keys from the rest
                            wall = (time.time() - (time.perf_counter() - sent)) % 1000 * 1000  # (ms, as a log's)
                            settled, rows = results["settled"][-1] * 1000, results["settled rows"][-1] * 1000
                            print(f"key {typed!r} at {wall:9.1f}: settled {settled:.0f} ms, rows {rows:.0f} ms",
                                  file=sys.stderr)  # fmt: skip
                    terminal.send("Escape")
                    settle(terminal, time.perf_counter(), args.quiet)
                    keys += len(word) + 1
                cpu_after = terminal.cpu_seconds()
                if cpu_before is not None and cpu_after is not None:  # steadier than the walls on a shared machine
                    results["typing cpu"].append((cpu_after - cpu_before) / keys)
                rss_after = terminal.rss_mb()
                if rss_before is not None and rss_after is not None:
                    print(
                        f"resident memory {rss_before:,.0f} MB before typing, {rss_after:,.0f} after", file=sys.stderr
                    )
            if "tab" in wanted:
                before_lines = terminal.screen()
                before = status(before_lines)
                sent = terminal.send("Tab")
                wait_for(terminal, scope_differs(before), sent, "scope")
                results["tab first"].append(wait_for(terminal, other_rows(before_lines), sent, "other rows"))
                record_settled(results, "tab", terminal, sent, args.quiet)
                terminal.send("Tab")
                settle(terminal, time.perf_counter(), args.quiet)
            if "tree" in wanted:
                sent = terminal.send("C-t")
                results["tree"].append(wait_for(terminal, tree_drawn, sent, "tree"))
                terminal.send("Escape")
                settle(terminal, time.perf_counter(), args.quiet)
            if "new" in wanted:
                word = f"probe{uuid.uuid4().hex[:10]}"
                written = time.perf_counter()
                probes.append(write_probe(bucket, cwd, word))
                results["new"].append(wait_for(terminal, shows(word), written, "new row"))
            print(f"trial {trial + 1}/{args.trials} done", file=sys.stderr)
        terminal.stop()
    except TimeoutError as error:
        log = scratch / "stderr.log"
        raise SystemExit(f"{error}\nseance's stderr:\n{log.read_text() if log.exists() else ''}") from None
    finally:
        for probe in probes:
            probe.unlink(missing_ok=True)
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    labels = {
        "launch": "launch → rows visible (warm index)",
        "launch cpu": "… seance's CPU time (user+sys) until then",
        "echo": "key → its character echoed",
        "settled": "key → list settled for the new query",
        "settled rows": "… its rows alone (the status line's count and the scrollbar aside)",
        "settled screen": "… and the preview of the new top session drawn",
        "typing cpu": "… seance's CPU time (user+sys) per key typed (Esc included), preview and all",
        "tab first": "Tab (scope switch) → the other scope's first rows shown",
        "tab": "Tab (scope switch) → rows settled",
        "tab screen": "… and the preview of the new top session drawn",
        "tree": "Ctrl+T → tree rows drawn",
        "new": "new session file → listed",
    }
    print(f"\n{args.sessions:,} sessions, {width}×{height}; median / p95\n")
    print("| what the user does | median / p95 |\n|---|---|")
    for name, label in labels.items():
        print(f"| {label} | {percentiles(results[name])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
