"""One huge session: wall time, CPU time and peak RSS of show / tree on millions of entries,
and of a listing beside a single line of hundreds of MB.

    python bench/huge.py                                   # 2,000,000 entries (~100 MB), a 256 MB line
    python bench/huge.py --entries 200000 --entry-bytes 1000 --no-long-line   # issue 14: ~200 MB
    python bench/huge.py --entries 200000 --entry-bytes 1000 --no-long-line --messages   # every entry a message

Each command runs in a child process (Python start-up included); wall and CPU time and peak
RSS come from the child's rusage (`os.wait4`).  The tree screen row is timed inside its child
(headless Textual, `SeanceApp` as the picker runs it, 160×45): from the screen being made, as
Ctrl+T makes it, to its first tree rows drawn; its RSS is the child's peak.  The next row is
the whole opening: to its first preview shown and its search index built.  The cursor-move row opens the same
screen, lets its first preview and the search index finish, then presses Up 20 times, each
until the preview shows the new entry: wall and CPU per move (the UI thread's own CPU in
the label; the rest is the preview worker's).  CPU time is printed next to wall time
because on a shared machine the wall time mostly measures the neighbours.  The first row is
the floor every figure is compared with: a child that reads the file and orjson-parses every
line once (`bench/floors.py file`, no seance code); the last column is each command's CPU
time as a multiple of the floor's.  The files are written to a temporary directory and
deleted afterwards (never commit them).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
STAMP = "2025-01-01T00:00:00.000Z"


def write_entries(path: Path, entries: int, entry_bytes: int = 0, messages: bool = False) -> None:
    """A linear chain: one user message in a hundred, the rest small `custom` entries (each
    padded with a `data` string to about `entry_bytes` bytes when that is given).  With
    `messages`, every entry is a message instead, in turns of three: a user prompt, an
    assistant reply with a bash call, and its tool result (the result padded as above)."""
    pad = "x" * max(0, entry_bytes - 60)
    _write_chain(path, entries, _message_entry if messages else _custom_entry, pad)


def _custom_entry(index: int, pad: str) -> dict:
    """One user message in a hundred, the rest `custom` entries padded with `data`."""
    if index % 100 == 0:
        return {"type": "message", "message": {"role": "user", "content": f"prompt {index}"}}
    return {"type": "custom", "data": pad} if pad else {"type": "custom"}


def _message_entry(index: int, pad: str) -> dict:
    """Turns of three messages: a prompt, a reply with a bash call, the call's padded result."""
    turn, step = divmod(index, 3)
    if step == 0:
        message: dict = {"role": "user", "content": f"prompt {turn}"}
    elif step == 1:
        arguments = {"command": f"ls {turn}"}
        call = {"type": "toolCall", "id": f"call-{turn}", "name": "bash", "arguments": arguments}
        text = {"type": "text", "text": f"reply {turn}"}
        message = {"role": "assistant", "content": [text, call], "stopReason": "toolUse", "model": "m"}
    else:
        content = [{"type": "text", "text": pad or "out"}]
        message = {"role": "toolResult", "toolCallId": f"call-{turn}", "toolName": "bash", "content": content}
    return {"type": "message", "timestamp": STAMP, "message": message}


def _write_chain(path: Path, entries: int, make: Callable[[int, str], dict], pad: str) -> None:
    """A header, then `entries` entries from `make`, each the child of the one before."""
    import orjson

    with open(path, "wb") as handle:
        header = {"type": "session", "version": 3, "id": "huge", "cwd": "/p", "timestamp": STAMP}
        handle.write(orjson.dumps(header) + b"\n")
        previous = None
        lines = []
        for index in range(entries):
            entry_id = f"{index:x}"
            fields = make(index, pad)
            entry = {"type": fields.pop("type"), "id": entry_id, "parentId": previous, **fields}
            lines.append(orjson.dumps(entry))
            previous = entry_id
            if len(lines) >= 100_000:
                handle.write(b"\n".join(lines) + b"\n")
                lines.clear()
        handle.write(b"\n".join(lines) + b"\n" if lines else b"")


def write_long_line(root: Path, megabytes: int) -> None:
    bucket = root / "--p--"
    bucket.mkdir(parents=True, exist_ok=True)
    for name in ("good-1", "good-2"):
        (bucket / f"{name}.jsonl").write_text(
            f'{{"type":"session","version":3,"id":"{name}","cwd":"/p","timestamp":"{STAMP}"}}\n'
            f'{{"type":"message","id":"u","parentId":null,"message":{{"role":"user","content":"{name}"}}}}\n'
        )
    with open(bucket / "long-line.jsonl", "wb") as handle:
        handle.write(f'{{"type":"session","version":3,"id":"long","cwd":"/p","timestamp":"{STAMP}"}}\n'.encode())
        handle.write(b'{"type":"message","id":"u","parentId":null,"message":{"role":"user","content":"')
        block = b"x" * (1 << 20)
        for _ in range(megabytes):
            handle.write(block)
        handle.write(b'"}}\n')


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of `python ARGS`."""
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def time_tree_screen(path: str) -> None:
    """The child that opens the tree screen on PATH: prints `wall CPU` seconds from the screen
    being made to its first rows drawn (the load worker's CPU included: one process).  The
    end is when the tree view's first lines of rows were rendered (its first `render_lines`
    with rows returned): this child's poll for them may wait for the GIL behind a worker
    started after that frame (the search index), whose CPU is not the screen's opening."""
    import asyncio

    from seance.app.app import SeanceApp
    from seance.app.screens.session_tree import SessionTreeScreen
    from seance.app.widgets.tree_view import TreeView

    started: list[tuple[float, float]] = []
    drawn: list[tuple[float, float]] = []
    render_lines = TreeView.render_lines

    def render_lines_timed(view: TreeView, crop: Any) -> Any:
        strips = render_lines(view, crop)
        if not drawn and view.model is not None and view.model.rows:
            drawn.append((time.perf_counter(), time.process_time()))
        return strips

    TreeView.render_lines = render_lines_timed  # type: ignore[method-assign]

    def make_screen() -> SessionTreeScreen:
        started.append((time.perf_counter(), time.process_time()))
        return SessionTreeScreen(Path(path), standalone=True, confirm_missing_cwd=False)

    async def run() -> None:
        app = SeanceApp(make_screen)
        async with app.run_test(size=(160, 45)):
            while True:
                await asyncio.sleep(0.002)
                screen = app.screen
                model = screen.model if isinstance(screen, SessionTreeScreen) else None
                if model is not None and screen.query_one(TreeView)._lines:  # a row was rendered (its line cache)
                    break
            wall, cpu = drawn[0][0] - started[0][0], drawn[0][1] - started[0][1]
        print(f"{wall:.3f} {cpu:.3f}")

    asyncio.run(run())


MOVES = 20


def time_tree_moves(path: str) -> None:
    """The child that opens the tree screen on PATH, waits for its first preview and its
    workers (the search index), then moves the cursor up `MOVES` times, each time until the
    preview shows the new entry: prints `wall CPU UI-thread-CPU` seconds per move (the
    preview worker's CPU is the difference; the 0.12 s debounce is in the wall time), then
    `wall CPU` seconds from the screen being made to that settled state (its opening whole:
    the first rows, the first preview, the search index)."""
    import asyncio

    from seance.app.app import SeanceApp
    from seance.app.screens.session_tree import SessionTreeScreen
    from seance.app.widgets.context_preview import ContextPreview
    from seance.app.widgets.tree_view import TreeView

    async def settled(app: SeanceApp, preview: ContextPreview) -> None:
        while preview.pending or any(worker.is_running for worker in app.workers):
            await asyncio.sleep(0.005)

    made: list[tuple[float, float]] = []

    def make_screen() -> SessionTreeScreen:
        made.append((time.perf_counter(), time.process_time()))
        return SessionTreeScreen(Path(path), standalone=True, confirm_missing_cwd=False)

    async def run() -> None:
        app = SeanceApp(make_screen)
        async with app.run_test(size=(160, 45)) as pilot:
            while True:
                await asyncio.sleep(0.01)
                screen = app.screen
                if isinstance(screen, SessionTreeScreen) and screen.model and screen.query_one(TreeView)._lines:
                    break
            preview = screen.query_one(ContextPreview)
            await settled(app, preview)
            wall, cpu, ui = time.perf_counter(), time.process_time(), time.thread_time()
            opened = (wall - made[0][0], cpu - made[0][1])
            for _ in range(MOVES):
                await pilot.press("up")
                await settled(app, preview)
            await pilot.pause()
            wall, cpu, ui = time.perf_counter() - wall, time.process_time() - cpu, time.thread_time() - ui
        print(f"{wall / MOVES:.4f} {cpu / MOVES:.4f} {ui / MOVES:.4f} {opened[0]:.3f} {opened[1]:.3f}")

    asyncio.run(run())


def _child_figures(mode: str, session: Path, env: dict[str, str], count: int) -> tuple[list[float], int, int]:
    """The `count` figures a child run in `mode` (`--tree-screen`, `--tree-moves`) prints
    (NaN each when it printed none), its peak RSS MB and exit code."""
    child = subprocess.Popen(
        [sys.executable, __file__, mode, str(session)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert child.stdout is not None
    output = child.stdout.read().decode()
    _pid, status, usage = os.wait4(child.pid, 0)
    figures = [float(part) for part in output.split()] if output.strip() else [float("nan")] * count
    return figures, usage.ru_maxrss // 1024, os.waitstatus_to_exitcode(status)


def measure_tree_moves(session: Path, env: dict[str, str]) -> tuple[float, float, float, float, float, int, int]:
    """(wall s, CPU s, UI-thread CPU s per cursor move, wall s and CPU s from the screen made
    to its first preview and search index ready, peak RSS MB, exit code) in the tree screen."""
    (wall, cpu, ui, settled_wall, settled_cpu), rss, code = _child_figures("--tree-moves", session, env, 5)
    return wall, cpu, ui, settled_wall, settled_cpu, rss, code


def measure_tree_screen(session: Path, env: dict[str, str]) -> tuple[float, float, int, int]:
    """(wall s, CPU s, peak RSS MB, exit code) of opening the tree screen on `session`."""
    (wall, cpu), rss, code = _child_figures("--tree-screen", session, env, 2)
    return wall, cpu, rss, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=2_000_000)
    parser.add_argument("--entry-bytes", type=int, default=0, help="pad each custom entry to about this size")
    parser.add_argument("--line-mb", type=int, default=256)
    parser.add_argument("--no-long-line", action="store_true", help="measure only the many-entries session")
    parser.add_argument(
        "--messages", action="store_true", help="every entry a message (user, assistant + bash call, result)"
    )
    parser.add_argument("--write", metavar="DIR", help=argparse.SUPPRESS)  # the child that writes the files
    parser.add_argument("--tree-screen", metavar="PATH", help=argparse.SUPPRESS)  # the child that opens the tree
    parser.add_argument("--tree-moves", metavar="PATH", help=argparse.SUPPRESS)  # the child that moves its cursor
    options = parser.parse_args()
    if options.tree_screen:
        time_tree_screen(options.tree_screen)
        return
    if options.tree_moves:
        time_tree_moves(options.tree_moves)
        return
    if options.write:
        write_entries(Path(options.write) / "entries.jsonl", options.entries, options.entry_bytes, options.messages)
        if not options.no_long_line:
            write_long_line(Path(options.write) / "long", options.line_mb)
        return
    with tempfile.TemporaryDirectory(prefix="seance-huge-") as temp:
        base = Path(temp)
        # Byte-code caching on, as in any installed package (as bench/run.py: this sandbox sets
        # PYTHONDONTWRITEBYTECODE, which would compile every module of every command timed).
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        # (a PYTHONPATH given, e.g. a worktree of another version for an A/B, comes first)
        python_path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO.parent)]))
        env |= {"PYTHONPATH": python_path, "SEANCE_CACHE_DIR": str(base / "cache")}
        # Written by a child: Linux counts a forked child's peak RSS from before its exec, so
        # the process that measures must stay small.
        sizes = ["--entries", str(options.entries), "--entry-bytes", str(options.entry_bytes)]
        sizes += ["--line-mb", str(options.line_mb)] + (["--no-long-line"] if options.no_long_line else [])
        sizes += ["--messages"] if options.messages else []
        subprocess.run([sys.executable, __file__, *sizes, "--write", temp], check=True, env=env)
        session = base / "entries.jsonl"
        size_mb = session.stat().st_size / (1 << 20)
        long_root = base / "long"
        floor = measure([str(REPO / "bench" / "floors.py"), "file", str(session)], env)
        print(f"{options.entries:,} entries, {size_mb:.0f} MB")
        print("| command | wall s | CPU s | peak RSS MB | exit | CPU × floor |")
        print("|---|---:|---:|---:|---:|---:|")
        wall, cpu, rss, code = floor
        print(f"| floor: read + orjson every line once | {wall:.1f} | {cpu:.2f} | {rss} | {code} | 1.0 |")
        rows = [
            ("show", ["show", str(session)]),
            ("show --json", ["show", "--json", str(session)]),
            ("tree --json", ["tree", "--json", str(session)]),
            ("tree --text", ["tree", "--text", str(session)]),
        ]
        if not options.no_long_line:
            long_line = str(long_root / "--p--" / "long-line.jsonl")
            rows.append((f"ls --all (one {options.line_mb} MB line)", ["--root", str(long_root), "ls", "--all"]))
            rows.append((f"show (one {options.line_mb} MB line)", ["show", long_line]))
        for label, args in rows:
            wall, cpu, rss, code = measure(["-m", "seance", *args], env)
            print(f"| {label} | {wall:.1f} | {cpu:.2f} | {rss} | {code} | {cpu / floor[1]:.1f} |", flush=True)
        wall, cpu, rss, code = measure_tree_screen(session, env)
        label = "tree screen: made → first rows drawn"
        print(f"| {label} | {wall:.1f} | {cpu:.2f} | {rss} | {code} | {cpu / floor[1]:.1f} |", flush=True)
        wall, cpu, ui, settled_wall, settled_cpu, rss, code = measure_tree_moves(session, env)
        label = "tree screen: made → first preview and search index ready"
        print(f"| {label} | {settled_wall:.1f} | {settled_cpu:.2f} | {rss} | {code} | {settled_cpu / floor[1]:.1f} |")
        label = f"tree screen: one cursor move (mean of {MOVES}; UI thread {1000 * ui:.0f} ms CPU)"
        print(f"| {label} | {wall:.3f} | {cpu:.3f} | {rss} | {code} | {cpu / floor[1]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
