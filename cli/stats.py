"""`seance stats` (many sessions grouped) and `seance show S --stats` (one session).

    seance stats [--all | --cwd DIR] [--root DIR]... [--since 30d] [--by day|model|project] [--json]

Stats count a session's whole tree: every branch, everything before a compaction (what was
paid for; pi's footer counts the same).  A fork counts only what it added to the history it
copied (`core.stats.count_copies_once`).  Per-file stats are kept in the cache dir's
`stats.sqlite` (`core.statscache`), so a second run reads only the files that changed.

`--json` shapes (keys may be added, none removed):

    show --stats --json  `SessionStats.to_json()`: {"path", "id", "cwd", "scope": "tree",
                         "tokens": {"input", "output", "cacheRead", "cacheWrite", "total"}, "cost",
                         "models": [{"model", "messages", "input", …, "cost"}], "toolCalls": {name: n},
                         "files": [{"path", "read"?, "edit"?, "write"?}], "messages": {"total", role: n},
                         "entries", "leaves", "branchPoints", "compactions", "first", "last", "durationMs"}
    stats --json         {"by", "since", "sessions", "total": {usage}, "groups": [{"key", "sessions", usage}],
                         "days": [{"day", "cost"}], "skipped": n}
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from typing import Any

from seance.core.stats import GROUPINGS, aggregate, count_copies_once, parse_since

from .errors import CliError, ExitCode
from .output import ProgressBar, put_line, say, write_json
from .scope import Scope, scope_options


def register(commands: argparse._SubParsersAction) -> None:
    stats = commands.add_parser(
        "stats", help="tokens and cost across sessions, by day, model or project (a bar chart in the terminal)"
    )
    scope_options(stats, all_projects=True, exclusive=True)
    stats.add_argument("--since", metavar="WHEN", help="only usage since then: 30d, 12h, 2w, or a date (2026-01-31)")
    stats.add_argument("--by", choices=GROUPINGS, default="day", help="group by (default: day)")
    stats.add_argument("--json", action="store_true", help="print JSON")
    stats.set_defaults(handler=run_stats)


def _width() -> int:
    return max(shutil.get_terminal_size((80, 24)).columns, 40) if sys.stdout.isatty() else 80


def run_show_stats(session: Any, as_json: bool) -> int:
    """`seance show S --stats [--json]` for a loaded session."""
    from seance.core.stats import session_stats
    from seance.core.statsformat import detail_lines

    stats = session_stats(session)
    if as_json:
        write_json(stats.to_json())
        return ExitCode.OK
    for line in detail_lines(stats, _width()):
        put_line(line)
    return ExitCode.OK


def run_stats(args: argparse.Namespace) -> int:
    from seance.core.catalog import Catalog, same_dir
    from seance.core.scanpool import default_workers
    from seance.core.statscache import StatsCache, collect_stats, message_keys
    from seance.core.statsformat import day_series, report_lines
    from seance.core.timefmt import iso_ms

    scope = Scope.of(args)
    try:
        since_ms = parse_since(args.since, int(time.time() * 1000)) if args.since else None
    except ValueError as error:
        raise CliError(str(error)) from error
    catalog = Catalog(scope.roots)
    cache = StatsCache(roots=catalog.root_paths())
    progress = ProgressBar("reading sessions")
    project = scope.project
    try:
        found = catalog.discover()
        collected = collect_stats(found.infos, cache, workers=default_workers(), progress=progress)
        cache.prune(found.infos)  # files gone from these roots (another root's rows are not touched)
        chosen = [stats for stats in collected.stats if project is None or (stats.cwd and same_dir(stats.cwd, project))]
        chosen = count_copies_once(chosen, collected.stats, lambda paths: message_keys(paths, found.infos, cache))
    finally:
        progress.finish()
        cache.close()
        catalog.close()
    if cache.problem:
        say(f"seance: {cache.problem}")
    skipped = [(str(path), reason) for path, reason in found.skipped] + collected.skipped
    if skipped:
        shown = "; ".join(f"{path}: {reason}" for path, reason in skipped[:3])
        more = f" (+{len(skipped) - 3} more)" if len(skipped) > 3 else ""
        say(f"seance: skipped {len(skipped)} (not a session or not readable): {shown}{more}")
    report = aggregate(chosen, args.by, since_ms)
    days = report if args.by == "day" else aggregate(chosen, "day", since_ms)
    if args.json:
        keys, costs = day_series(days)
        write_json(
            {
                "by": args.by,
                "since": None if since_ms is None else iso_ms(since_ms),
                "sessions": report.sessions,
                "total": report.total.to_json(),
                "groups": [group.to_json() for group in report.groups],
                "days": [{"day": key, "cost": cost} for key, cost in zip(keys, costs, strict=True)],
                "skipped": len(skipped),
            }
        )
        return ExitCode.OK
    for line in report_lines(report, days, _width()):
        put_line(line)
    return ExitCode.OK
