"""`seance clean`: bulk clean-up, a dry run unless `--yes`.

    seance clean [--empty] [--older-than AGE] [--larger-than SIZE] [--query Q]
                 [--all | --cwd DIR] [--include-pinned] [--yes] [--json]

The criteria combine (AND; at least one is needed) and are `seance.core.clean`'s; `--query`
is `seance ls --query`.  Without `--yes` it prints what it would move (count, bytes, one line
per session) and changes nothing.  With `--yes` the same plan goes to the Trash as ONE batch:
`seance rm --undo` restores all of it.  Sessions an agent may have open and pinned ones
(without `--include-pinned`) are never moved: they are listed as kept.

Exit codes: 0 (also when nothing matched), 2 for bad input.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from seance.core.catalog import Catalog
from seance.core.clean import (
    CleanPlan,
    Criteria,
    human_size,
    last_activity_ms,
    parse_age,
    parse_size,
    pinned_ids,
    plan_clean,
)
from seance.core.listing import by_recent
from seance.core.model import SessionSummary
from seance.core.text import display_text, home_short, relative_age

from .errors import CliError, ExitCode
from .output import put_line, say, write_json
from .scope import Scope, scope_options


def register(commands: argparse._SubParsersAction) -> None:
    clean = commands.add_parser(
        "clean", help="move sessions matching criteria to the Trash as one undoable batch (a dry run unless --yes)"
    )
    clean.add_argument("--empty", action="store_true", help="no user message")
    clean.add_argument("--older-than", metavar="AGE", help="last activity longer ago than AGE (12h, 90d, 2w)")
    clean.add_argument("--larger-than", metavar="SIZE", help="file larger than SIZE (500K, 10M, 1G)")
    clean.add_argument("--query", "-q", metavar="Q", help="matching Q (the query language of `seance ls`)")
    scope_options(clean, all_projects=True, exclusive=True)
    clean.add_argument("--include-pinned", action="store_true", help="pinned sessions too")
    clean.add_argument("--yes", action="store_true", help="do it (undo: `seance rm --undo`)")
    clean.add_argument("--json", action="store_true", help="print a JSON object")
    clean.set_defaults(handler=run_clean)


def criteria_of(args: argparse.Namespace) -> Criteria:
    """The criteria on the command line; `CliError` if one is malformed or none is given."""
    try:
        criteria = Criteria(
            empty=args.empty,
            older_than=parse_age(args.older_than) if args.older_than is not None else None,
            larger_than=parse_size(args.larger_than) if args.larger_than is not None else None,
        )
    except ValueError as error:
        raise CliError(str(error)) from None
    if not criteria.given and not args.query:
        raise CliError("clean needs a criterion: --empty, --older-than AGE, --larger-than SIZE or --query Q")
    return criteria


def run_clean(args: argparse.Namespace) -> int:
    from .catalog import _catalog, _report_skipped, apply_query

    criteria = criteria_of(args)
    scope = Scope.of(args)
    catalog = _catalog(args)
    try:
        summaries = catalog.exact(scope.project, full_text=bool(args.query))
        if args.query:
            summaries = apply_query(summaries, args.query, catalog, scope.all_projects)
        _report_skipped(catalog)
        plan = plan_clean(by_recent(summaries), criteria, pinned=pinned_ids(), include_pinned=args.include_pinned)
        if not args.yes:
            _report(plan, None, args, show_cwd=scope.all_projects)
            return ExitCode.OK
        moved = _trash(plan, catalog)
    finally:
        catalog.close()
    _report(plan, moved, args, show_cwd=scope.all_projects)
    # A session chosen but not moved (said above, with the reason): not done, as `rm` would exit.
    return ExitCode.BAD_INPUT if moved["refused"] else ExitCode.OK


def _trash(plan: CleanPlan, catalog: Catalog) -> dict[str, Any]:
    """Move the plan's sessions to the Trash as one batch on the undo stack; what moved, what was refused."""
    from seance.core.trash import receipt_notes, trash_each

    from .actions import BatchRecord

    if not plan.selected:
        return {"trashed": {}, "refused": []}
    record = BatchRecord()
    try:
        outcome = trash_each(
            [summary.path for summary in plan.selected],
            lambda path: catalog.trash(path, on_reserved=record.reserved),  # refuses a busy session
        )
    except BaseException:  # interrupted (Ctrl+C): what moved stays undoable as one batch
        record.finish(record.journalled())
        raise
    record.finish(outcome.batch)
    for note in receipt_notes(outcome.batch.receipts):  # (a move left unfinished: what is where)
        say(f"seance: {note}")
    trashed = {str(receipt.session.original): str(receipt.session.trashed) for receipt in outcome.batch.receipts}
    return {"trashed": trashed, "refused": list(outcome.refused)}


def _report(plan: CleanPlan, moved: dict[str, Any] | None, args: argparse.Namespace, *, show_cwd: bool) -> None:
    if moved is None:
        listed = plan.selected
    else:
        listed = [summary for summary in plan.selected if summary.path in moved["trashed"]]
    total = sum(summary.size for summary in listed)
    refused = moved["refused"] if moved is not None else []
    if args.json:
        write_json(_json(plan, listed, total, moved, refused))
        return
    verb = "would move" if moved is None else "moved"
    put_line(f"{verb} {len(listed)} session{'' if len(listed) == 1 else 's'} ({human_size(total)}) to the Trash")
    now_ms = time.time() * 1000
    for summary in listed:
        put_line(_row(summary, now_ms, show_cwd))
    for summary, reason in plan.in_use:
        say(f"seance: kept (in use: {reason}): {summary.path}")
    for _path, reason in refused:  # the reason names the path
        say(f"seance: not moved: {reason}")
    if plan.pinned:
        say(f"seance: kept {len(plan.pinned)} pinned (--include-pinned to include them)")
    if moved is None and listed:
        say("seance: nothing was changed; run again with --yes to move them (undo: `seance rm --undo`)")
    elif listed:
        say("seance: undo all of it with `seance rm --undo`")


def _row(summary: SessionSummary, now_ms: float, show_cwd: bool) -> str:
    """age, size, messages, title (project), path: one sanitised line."""
    parts = [
        f"{relative_age(last_activity_ms(summary), now_ms):>4}",
        f"{human_size(summary.size):>9}",
        f"{summary.message_count:>5}",
        display_text(summary.title, 60),
    ]
    if show_cwd:
        parts.append(f"({display_text(home_short(summary.cwd)) or '?'})")
    parts.append(display_text(summary.path))
    return "  ".join(parts)


def _json(
    plan: CleanPlan,
    listed: list[SessionSummary],
    total: int,
    moved: dict[str, Any] | None,
    refused: list[tuple[Any, str]],
) -> dict[str, Any]:
    sessions = []
    for summary in listed:
        item = summary.to_pi_json()
        item["size"] = summary.size
        if moved is not None:
            item["trashed"] = moved["trashed"][summary.path]
        sessions.append(item)
    kept = [{"path": summary.path, "reason": f"in use: {reason}"} for summary, reason in plan.in_use]
    kept += [{"path": summary.path, "reason": "pinned"} for summary in plan.pinned]
    kept += [{"path": str(path), "reason": reason} for path, reason in refused]
    return {"dryRun": moved is None, "count": len(listed), "bytes": total, "sessions": sessions, "kept": kept}


__all__ = ["criteria_of", "register", "run_clean"]
