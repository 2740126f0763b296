"""`seance ls` and `seance index`.

`ls` prints newest `modified` first, pinned sessions before the rest (in every sort);
`--json` adds each session's `pinned` and `tags` (`core.marks`) to pi's keys.
Scope: the current project (header cwd equals `--cwd` or the working directory, wherever
the file lives) unless `--all`.  `--quick` reads only 4 KB prefixes (no index); otherwise
the index is brought up to date first.  `--skipped` lists the files under the roots that
are not listed, each with the reason.

Exit codes: 0 when the listing ran (an empty project is a valid, empty answer: `[]` with
`--json`, and a line on stderr saying where seance looked); 1 when `--query` matched nothing
(like grep); 2 for bad input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seance.core.childmodes import child_mode
from seance.core.gcpause import gc_paused
from seance.core.text import display_text, home_short, json_bytes, relative_age

from .errors import CliError, ExitCode
from .output import ProgressBar, put_line, put_lines, say, write_json_bytes, write_json_pieces, write_json_views
from .scope import Scope, scope_options

# The listing (its rows, sorts, threading) is imported where a listing is arranged: an answer
# printed from the index needs none of it.
# The catalog (SQLite, the index, the marks) is imported when a command runs, after the files
# are being found in a child process (`_catalog`): the imports and the stats overlap.
if TYPE_CHECKING:
    import argparse

    from seance.core import listing
    from seance.core.catalog import Catalog
    from seance.core.indexquery import Ranked
    from seance.core.marks import Marks
    from seance.core.model import SessionSummary


def register(commands: argparse._SubParsersAction) -> None:
    from seance.core import listing

    ls = commands.add_parser("ls", help="list sessions, newest first (pi's list() as JSON with --json)")
    scope_options(ls, all_projects=True, exclusive=True)
    ls.add_argument(
        "--query",
        "-q",
        metavar="Q",
        help='filter and rank: fuzzy words, "phrase", re:regex, !not, id: name: cwd: label: model: after: before: '
        "tag: is:pinned is:tagged",
    )
    ls.add_argument(
        "--sort", choices=listing.SORTS, default=None, help="order (default: recent; relevance with --query)"
    )
    ls.add_argument(
        "--children",
        choices=listing.CHILD_MODES,
        default=None,
        help="child sessions (forks, subagents): hidden; threaded (default, pi's: under their parent "
        "with --sort threaded); flat (never indented, each parent says how many it has)",
    )
    ls.add_argument("--quick", action="store_true", help="4 KB prefix metadata only: no index, no full reads")
    ls.add_argument(
        "--skipped",
        action="store_true",
        help="list the files that are skipped (not a session, unreadable...) and why, instead of the sessions",
    )
    ls.add_argument("--json", action="store_true", help="print a JSON array with pi's SessionInfo keys")
    ls.set_defaults(handler=run_ls)

    index = commands.add_parser("index", help="bring the session index (metadata and full text) up to date")
    scope_options(index, cwd=False)
    index.add_argument(
        "--rebuild",
        action="store_true",
        help="throw these roots' index away and build it again (other roots the cache holds keep theirs)",
    )
    index.add_argument(
        "--watch",
        action="store_true",
        help="stay running and keep the index exact as files change, so `ls` and `resolve` need not stat "
        "every file (huge histories; optional; Ctrl+C or --unwatch stops it)",
    )
    index.add_argument("--unwatch", action="store_true", help="stop the running `index --watch`")
    index.set_defaults(handler=run_index)


def _catalog(args: argparse.Namespace, *, ahead: bool = False, query: bool = False) -> Catalog:
    """The scope's catalog.  The CLI is single-threaded, so it may fork (big cold reads'
    scanning processes); with `ahead` (`ls`), the files are found in a child process from
    now on, while this one imports the catalog and reads the stored answer (or, for a
    `query`, reads and checks the index and searches it).  A query's child then checks the
    full-text index's signature (`ftscheck.fts_verdict`: counting its pages is 20-100 ms a
    query would otherwise spend before it searches), after its scan: a query whose answer
    is stored needs only the files' key and never waits for it.  `watched`: a resident
    watcher's listing, when one serves, replaces the discovery (`index --watch`)."""
    from seance.core.scanpool import default_workers

    roots, workers = Scope.of(args).roots, default_workers()
    found = None
    if ahead and workers > 1 and not _watcher_answers():
        from seance.core.discovery import discover_ahead

        found = discover_ahead(roots, fork=True, also=_fts_verdict if query else None)
    try:
        from seance.core.catalog import Catalog

        return Catalog(roots, workers=workers, found=found, watched=True)
    except BaseException:
        if found is not None:
            found.close()
        raise


def _watcher_answers() -> bool:
    """Whether a resident watcher serves the default index: its listing replaces the
    discovery, so no child is forked to find the files (one `open` and `flock` when none)."""
    from seance.core.userdirs import user_dir
    from seance.core.watchclient import will_ask

    return will_ask(user_dir("cache"))


def _fts_verdict() -> object:
    """`ftscheck.fts_verdict()` of the default index (run in the discovery child)."""
    from seance.core.ftscheck import fts_verdict

    return fts_verdict()


# -- ls ------------------------------------------------------------------------------------------


def apply_query(
    summaries: list[SessionSummary],
    query: str,
    catalog: Catalog | None,
    all_projects: bool = False,
    marks: Marks | None = None,
) -> list[SessionSummary]:
    """Filter and rank by `query` in seance's query language (`seance.core.search`), best first.

    With a catalog, full-text hits from the index take part; without one (`--quick`) only
    the prefix text is searched.  Raises `CliError` for an invalid query (a bad regex...).
    """
    from seance.core.search import parse_query, search

    try:
        parsed = parse_query(query)
        text_hits = None
        if catalog is not None:
            # the cwd only counts where paths do (`search(paths=...)`): there it may be the hit
            text_hits = {hit.path: hit for hit in catalog.search_text(parsed, include_cwd=all_projects)}
            excluded = catalog.text_excluded(parsed, include_cwd=all_projects)  # (`!wip` past the title)
            summaries = [summary for summary in summaries if summary.path not in excluded]
        hits = search(summaries, parsed, text_hits=text_hits, paths=all_projects, marks=marks)
    except ValueError as error:  # (a `re:` out of time too: `core.search.userregex`)
        raise CliError(f"bad query: {error}") from error
    return [hit.summary for hit in hits]


def run_ls(args: argparse.Namespace) -> int:
    if args.skipped:
        return run_ls_skipped(args)
    # A listing allocates one object or more per file and keeps them all to its end, and
    # none forms a cycle: the collector would scan them again and again (gen0 every 700).
    with gc_paused():
        return _run_ls(args)


def _run_ls(args: argparse.Namespace) -> int:
    catalog = _catalog(args, ahead=not args.quick, query=bool(args.query) and not args.quick)
    from seance.core.marks import annotate_pi_json, annotated_pieces, marked_pieces

    from .marks import listing_marks, marked_json

    marks = listing_marks()
    try:
        cwd = Scope.of(args).project
        sort = args.sort or ("relevance" if args.query else "recent")
        children: listing.ChildMode = child_mode(args.children) or "threaded"
        # (an explicit `--children` adds each object's "children": the fast paths print pi's keys only)
        if args.json and not args.query and sort == "recent" and not args.children:
            # the fast paths: no summary is decoded (warm) or built (quick)
            # parts of the answer: 70 MB at 100k sessions, never copied whole
            parts = [catalog.quick_pi_json(cwd)] if args.quick else catalog.ls_json_parts(cwd)
            _report_skipped(catalog, quick=args.quick)
            if len(parts) == 1 and parts[0].strip() == b"[]":
                _report_empty(catalog, cwd)
            write_json_pieces(annotated_pieces(parts, marks) if args.quick else marked_pieces(parts, marks))
            return ExitCode.OK
        if args.json and args.query and not args.quick and sort == "relevance" and not args.children:
            # a fresh index answers per hit, printed as it is read (`core.indexquery`)
            fresh = _ranked(catalog, args.query, cwd)
            if fresh is not None:
                _report_skipped(catalog)
                # pinned first with marks; the answer is kept for the same query on the same files
                if fresh.parts is not None and fresh.safe and not marks:  # views of stored objects
                    write_json_views(fresh.parts, fresh.spliced)
                elif (viewed := None if marks else catalog.query_json_views(fresh)) is not None:  # (a first asking's)
                    write_json_views(*viewed[:2])
                    catalog.keep_stored_answer(fresh, viewed[2])  # once it is all out, as below
                else:
                    write_json_pieces(marked_pieces(catalog.query_json_parts(fresh), marks))
                return ExitCode.OK if fresh.found() else ExitCode.NOT_FOUND
            # the stored objects of the hits, ranked from stored titles: no summary decoded
            ranked = _matching_pi_json(catalog, args.query, cwd)
            if ranked is not None:
                _report_skipped(catalog)
                write_json_bytes(annotate_pi_json(ranked, marks))  # pinned first, as below
                return ExitCode.NOT_FOUND if ranked == b"[]" else ExitCode.OK
        from seance.core import listing

        # A query searches full text, so its index is brought up to date too.
        if args.query and not args.quick and children == "threaded":
            # from the index: only the sessions that may match are decoded (no parent is needed)
            summaries = _matching(catalog, args.query, cwd, marks)
            rows = _arrange_hits(summaries, sort, children, marks, {})
        else:
            summaries = (
                catalog.quick(cwd, text=bool(args.query))
                if args.quick
                else catalog.exact(cwd, full_text=bool(args.query))
            )
            if args.query:
                rows = _query_rows(summaries, args, catalog, cwd is None, sort, children, marks)
            else:
                rows = listing.arrange(summaries, sort, children, _pinned(marks))
        _report_skipped(catalog, quick=args.quick)
        if not summaries and not args.query:
            _report_empty(catalog, cwd)
        if args.json:
            tree = children == "threaded" and sort == "threaded"
            payload: list[dict[str, Any]] = []
            for row in rows:
                item = marked_json(row.summary, marks)
                if tree:
                    item["depth"] = row.depth
                if args.children:
                    item["children"] = row.children
                payload.append(item)

            write_json_bytes(json_bytes(payload))  # compact, like the fast path (a non-UTF-8 name: U+FFFD)
        else:
            _print_rows(rows, show_cwd=cwd is None, marks=marks)
            if args.quick and rows:
                say(QUICK_LEGEND)
        sys.stdout.flush()
    finally:
        catalog.close()
    return ExitCode.NOT_FOUND if args.query and not rows else ExitCode.OK


QUICK_LEGEND = (
    "seance: --quick read 4 KB per file: ages are the files' modification times and N+ counts are "
    "lower bounds (`seance ls` without --quick gives the last message's age and exact counts)"
)


def _report_empty(catalog: Catalog, cwd: str | None) -> None:
    """An empty listing is an answer, but say where seance looked (as `pick` does): silence
    would read as "broken" or "wrong root"."""
    where = ", ".join(str(root) for root in catalog.roots) or "(no sessions root)"
    if cwd is None:
        say(f"seance: no sessions found under {where}")
    else:
        say(f"seance: no sessions for {cwd} under {where} (--all lists every project)")


def run_ls_skipped(args: argparse.Namespace) -> int:
    """`ls --skipped`: every file or root under the roots that is not listed, with the reason
    (discovery's skips, and files read and found not to be sessions); `--quick` reads prefixes."""
    if args.query or args.sort:
        raise CliError("--skipped lists files, not sessions: it takes no --query or --sort", ExitCode.BAD_INPUT)
    catalog = _catalog(args)
    try:
        if args.quick:
            catalog.quick(None, text=False)
        else:
            catalog.refresh(full_text=False)
        if catalog.index_problem:
            say(f"seance: {catalog.index_problem}")
        skipped = _skipped(catalog, quick=args.quick)
    finally:
        catalog.close()
    if args.json:
        write_json_bytes(json_bytes([{"path": str(path), "reason": reason} for path, reason in skipped]))
    else:
        for path, reason in skipped:
            put_line(f"{path}: {reason}")
        if not skipped:
            say("seance: nothing skipped")
    return ExitCode.OK


def _skipped(catalog: Catalog, *, quick: bool) -> list[tuple[Path, str]]:
    """What the last listing skipped: a refresh's stats hold discovery's skips plus the files
    read and found wanting; a quick listing's, discovery's and the prefixes found wanting."""
    if quick:
        return list(catalog.last_discovery.skipped) if catalog.last_discovery else []
    return list(catalog.last_stats.skipped)


def _pinned(marks: Marks) -> listing.Pinned | None:
    from seance.core.marks import NO_MARK

    if not any(mark.pinned for mark in marks.values()):
        return None
    return lambda summary: bool(summary.id) and marks.get(summary.id, NO_MARK).pinned


def _query_rows(
    summaries: list[SessionSummary],
    args: argparse.Namespace,
    catalog: Catalog,
    all_projects: bool,
    sort: str,
    children: listing.ChildMode,
    marks: Marks,
) -> list[listing.ThreadedRow]:
    """The sessions `--query` matches, best first (or in `sort`), pinned first; hidden
    children stay hidden."""
    from seance.core import listing

    parent_of = listing.parents(summaries)  # over the whole scope: a hit's parent need not match
    hits = apply_query(summaries, args.query, None if args.quick else catalog, all_projects, marks)
    return _arrange_hits(hits, sort, children, marks, parent_of)


def _matching(catalog: Catalog, query: str, cwd: str | None, marks: Marks) -> list[SessionSummary]:
    """`apply_query(catalog.exact(cwd, full_text=True), ...)`, answered from the index: by a
    fresh index per hit (`Catalog.ranked_summaries`, as `ls --json --query`), else with only
    the sessions that may match decoded (`Catalog.matching`)."""
    from seance.core.search import parse_query

    try:
        parsed = parse_query(query)
        with gc_paused():  # as in `_matching_pi_json`
            ranked = catalog.ranked_summaries(parsed, cwd)
            return ranked if ranked is not None else catalog.matching(parsed, cwd, marks=marks)
    except ValueError as error:
        raise CliError(f"bad query: {error}") from error


def _matching_pi_json(catalog: Catalog, query: str, cwd: str | None) -> bytes | None:
    """`_matching(...)` as the `ls --json` array without marks (`Catalog.matching_pi_json`),
    or None when that query needs the summaries."""
    from seance.core.search import parse_query

    try:
        with gc_paused():  # every hit's tuples survive: the collector would rescan them (a third at 100k)
            return catalog.matching_pi_json(parse_query(query), cwd)
    except ValueError as error:
        raise CliError(f"bad query: {error}") from error


def _ranked(catalog: Catalog, query: str, cwd: str | None) -> Ranked | None:
    """`Catalog.ranked`: the query's sessions from a fresh index, or None (the caller refreshes)."""
    from seance.core.search import parse_query

    try:
        with gc_paused():
            return catalog.ranked(parse_query(query), cwd, stored_as=query)
    except ValueError as error:
        raise CliError(f"bad query: {error}") from error


def _arrange_hits(
    hits: list[SessionSummary],
    sort: str,
    children: listing.ChildMode,
    marks: Marks,
    parent_of: dict[str, str],
) -> list[listing.ThreadedRow]:
    """Ranked hits as rows: in `sort` (relevance keeps the rank), pinned first; `parent_of`
    (path -> parent, over the whole scope) hides children and counts them."""
    from seance.core import listing

    if children == "hidden":
        hits = [summary for summary in hits if summary.path not in parent_of]
    if sort == "created":
        hits = listing.by_created(hits)
    elif sort == "recent":
        hits = listing.by_recent(hits)
    pinned = _pinned(marks)
    if sort == "threaded" and children == "threaded":
        return listing.threaded(hits, pinned)
    counts = listing.descendants(parent_of) if children != "threaded" else {}
    return [
        listing.ThreadedRow(summary, 0, "", counts.get(summary.path, 0))
        for summary in listing.pinned_first(hits, pinned)
    ]


def _print_rows(rows: list[listing.ThreadedRow], show_cwd: bool, marks: Marks) -> None:
    from seance.core.listing import children_label
    from seance.core.marks import NO_MARK

    now_ms = time.time() * 1000
    folders: dict[str, str] = {}  # cwd -> its part of the line (thousands of rows share a few)
    lines: list[str] = []
    for row in rows:
        summary = row.summary
        mark = marks.get(summary.id, NO_MARK) if summary.id else NO_MARK
        count = f"{summary.message_count}{'' if summary.exact else '+'}"
        parts = [
            f"{relative_age(summary.modified_ms, now_ms):>4}",
            f"{count:>6}",
            row.prefix + ("★ " if mark.pinned else "") + display_text(summary.title, 80),
        ]
        if mark.tags:
            parts.append(" ".join(f"#{tag}" for tag in mark.tags))
        if row.children:
            parts.append(f"· {children_label(row.children)}")
        if show_cwd:
            folder = folders.get(summary.cwd)
            if folder is None:
                folder = folders[summary.cwd] = f"  ({display_text(home_short(summary.cwd)) or '?'})"
            parts.append(folder)
        lines.append(" ".join(parts))
        if len(lines) >= _ROWS_PER_WRITE:
            put_lines(lines)
            lines.clear()
    put_lines(lines)


_ROWS_PER_WRITE = 4096


def _report_skipped(catalog: Catalog, *, quick: bool = False) -> None:
    problem = catalog.index_problem
    if problem:
        say(f"seance: {problem}")
    skipped = _skipped(catalog, quick=quick)
    if skipped:
        shown = "; ".join(f"{path}: {reason}" for path, reason in skipped[:3])
        more = f" (+{len(skipped) - 3} more: `seance ls --skipped` lists them)" if len(skipped) > 3 else ""
        say(f"seance: skipped {len(skipped)} (not a session or not readable): {shown}{more}")


# -- index ---------------------------------------------------------------------------------------


def run_index(args: argparse.Namespace) -> int:
    if args.watch or args.unwatch:
        from .watch import run_watch

        return run_watch(args)
    catalog = _catalog(args)
    bar = ProgressBar("indexing")
    try:
        if args.rebuild:
            catalog.rebuild_index()
        count = catalog.update_index(progress=bar)  # no summary kept: memory stays flat
        private = catalog.index_private  # (asked before `close` deletes it)
    finally:
        bar.finish()
        catalog.close()
    stats = catalog.last_stats
    _report_skipped(catalog)
    # (said just above, with the reason: a lock met at the open, a private index, or later,
    # a write that waited it out and answered from the files)
    if catalog.index_unavailable or private or catalog.lock_waits:
        raise CliError(f"nothing was indexed ({count} sessions read, none kept)")
    put_line(
        f"indexed {count} sessions in {stats.seconds:.2f}s "
        f"({stats.read} read, {stats.appended} appended, {stats.reused} unchanged, {len(stats.skipped)} skipped)"
        + (f"; {stats.healed} read again first for the current text rules" if stats.healed else "")
    )
    return ExitCode.OK
