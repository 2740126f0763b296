"""The UI commands behind `seance`, `seance pick`, `seance --demo` and `seance tree SESSION`.

Contract (like fzf): the UI reads keys from and draws on the controlling terminal (`/dev/tty`,
see `seance.app.terminal`), never on stdin, stdout or stderr; after it closes, the answer alone
is printed on stdout.  No terminal (or `TERM=dumb`): one line on stderr, exit 2.

    seance pick    Enter: the session's absolute path, exit 0; with --json the `PickResult`
                   object {"action", "path", "id", "leafId", "cwd", "prefill", "reset",
                   "entryId"}.  Ctrl+F (fork) prints the same path as Enter: only --json
                   ("action": "fork") tells them apart.  Esc on an empty query / Ctrl+C
                   / SIGTERM: nothing, exit 130.  No session file under the roots at all: a message on
                   stderr, exit 1.
    seance         the browser: Enter opens the selected session's tree; resuming from there
                   prints the path as `pick` does (so `pi --session "$(seance)"` works; the
                   chosen entry is only in --json's "entryId"); leaving without choosing
                   prints nothing, exit 130.
    seance --demo  the browser on a generated sessions root in a temporary directory (with its
                   own index and Trash); kept, and said so, when a session is chosen.
    seance tree S  (on a terminal) the tree view of one session; Enter prints its path.

The UI itself runs through `seance.app`'s public entry points (`run_picker`, `run_tree`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from seance.app import PickResult, check_terminal, run_picker, run_tree
from seance.core.catalog import Catalog
from seance.core.firstpaint import known_session
from seance.core.listing import CHILD_MODES, ChildMode, child_mode
from seance.core.settings import load_settings, save_setting

from .errors import ExitCode
from .output import put_path, say, write_json_bytes
from .scope import Scope, scope_options

if TYPE_CHECKING:
    from seance.core.session import Session

DEMO_SESSIONS, DEMO_PROJECTS = 80, 6
DEMO_COMPACT_ABOVE = 15_000  # demo sessions are small (~20 KB): compact them anyway, so it shows compactions


def register(commands: argparse._SubParsersAction) -> None:
    pick = commands.add_parser("pick", help="pick a session (fzf-like: path on stdout, exit code)")
    scope_options(pick, all_projects=True)  # `seance --all pick` and `seance pick --all` mean the same
    pick.add_argument("--query", "-q", default="", help="initial query")
    children_option(pick, default=argparse.SUPPRESS)
    pick.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print a JSON object instead of the path"
    )
    pick.add_argument(
        "--no-cwd-prompt",
        action="store_true",
        default=argparse.SUPPRESS,
        help="resume a session whose working directory is gone without asking (--json's cwdMissing "
        "still says so): for a host that asks itself, as pi's switchSession does",
    )
    pick.add_argument(
        "--open-session",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="the session the host agent has open: never moved to the Trash from the picker "
        "(pi's /resume refuses it too; the host would go on writing to a file that is gone)",
    )
    pick.set_defaults(handler=run_ui)


def run_ui(args: argparse.Namespace) -> int:
    """Run the picker or the browser as `args` say; print the result after the UI has closed; return the exit code."""
    if getattr(args, "demo", False):
        return _run_demo(args)
    scope = Scope.of(args)
    catalog = Catalog(scope.roots)
    if not known_session(catalog) and not _found_session(catalog):
        return ExitCode.NOT_FOUND
    picking = getattr(args, "command", None) == "pick"
    return _pick(catalog, args, scope.cwd, enter="resume" if picking else "tree")


def _found_session(catalog: Catalog) -> bool:
    """Whether the roots hold a session, found by discovering every file (the index knew none
    still there); if not, say so on stderr, with what was skipped."""
    found = catalog.discover()
    skipped: list[tuple[Path | str, str]] = list(found.skipped)
    if not _any_session(found.infos, skipped):
        where = ", ".join(str(root) for root in catalog.roots) or "(no sessions root)"
        say(f"seance: no sessions found under {where}")
        for path, reason in skipped[:5]:
            say(f"seance: skipped {path}: {reason}")
        if len(skipped) > 5:
            say(f"seance: ... and {len(skipped) - 5} more skipped")
        return False
    return True


def run_tree_ui(session: Session, *, as_json: bool) -> int:
    """`seance tree SESSION` on a terminal: the tree view; a chosen resume point is printed like `pick`'s."""
    return _print_result(run_tree(session), as_json=as_json)


def _any_session(infos: list[Any], skipped: list[tuple[Path | str, str]], batch: int = 64) -> bool:
    """Is any candidate file a session?  Newest first, a batch of 4 KB prefixes at a time, so a
    normal root answers after the first batch; non-session files found on the way go to `skipped`."""
    from seance.core.prefix import quick_summaries

    newest = sorted(infos, key=lambda info: info.mtime_ns, reverse=True)
    for start in range(0, len(newest), batch):
        problems: list[tuple[str, str]] = []
        if quick_summaries(newest[start : start + batch], problems, text=False):
            return True
        skipped.extend(problems)
    return False


def children_option(parser: argparse.ArgumentParser, default: Any = None) -> None:
    """`--children MODE` of the picker and the browser (Alt+C cycles it there)."""
    parser.add_argument(
        "--children",
        choices=CHILD_MODES,
        default=default,
        help="child sessions (forks, subagents): hidden (default, or the saved setting), "
        "threaded under their parent, or flat rows",
    )


def _children(args: argparse.Namespace) -> ChildMode:
    """`--children`, else the setting Alt+C saved, else hidden; a broken settings file is said."""
    chosen = child_mode(getattr(args, "children", None))
    if chosen is not None:
        return chosen
    settings = load_settings()
    if settings.problem:
        say(f"seance: settings ignored: {settings.problem}")
    return settings.children


def _save_children(mode: ChildMode) -> None:
    save_setting("children", mode)


def _pick(catalog: Catalog, args: argparse.Namespace, cwd: str, *, enter: Literal["resume", "tree"]) -> int:
    scope: Literal["project", "all"] = "all" if Scope.of(args).all_projects else "project"
    query = getattr(args, "query", "") or ""
    result = run_picker(
        catalog,
        cwd=cwd,
        scope=scope,
        query=query,
        enter=enter,
        children=_children(args),
        save_children=_save_children,
        confirm_missing_cwd=not getattr(args, "no_cwd_prompt", False),
        open_session=getattr(args, "open_session", None),
    )
    return _print_result(result, as_json=getattr(args, "json", False))


def _print_result(result: Any, *, as_json: bool) -> int:
    if not isinstance(result, PickResult):
        return ExitCode.CANCELLED
    if as_json:
        write_json_bytes(json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8", "backslashreplace"))
    else:
        put_path(result.path)
    return ExitCode.OK


def _run_demo(args: argparse.Namespace) -> int:
    """Browse a freshly generated demo root, so a new user sees seance work on any machine.

    Everything lives in one temporary directory: the sessions, the index and the demo's own
    Trash (a delete in the demo never reaches the user's Trash).  It is removed on exit,
    unless a session was chosen: then its path is printed and the directory kept (and said
    so), so `pi --session "$(seance --demo)"` opens a file that is still there.
    """
    check_terminal()  # before generating and importing Textual: no terminal is exit 2 at once
    tmp = Path(tempfile.mkdtemp(prefix="seance-demo-"))
    code: int = ExitCode.CANCELLED
    try:
        catalog = make_demo(tmp)
        cwd = _busiest_project(catalog) or Scope.of(args).cwd
        code = _pick(catalog, args, cwd, enter="tree")
        catalog.close()
    finally:
        if code == ExitCode.OK:
            say(f"seance: the demo sessions are kept in {tmp} (remove it when done)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return code


def make_demo(tmp: Path) -> Catalog:
    """Generate the demo under `tmp` (sessions/, its index in cache/, its Trash in trash/) and
    return a catalog over it."""
    from seance.core.generate import generate_corpus

    root = tmp / "sessions"
    say(f"seance: generating demo sessions in {root} (removed on exit unless you pick one)…")
    generate_corpus(
        root,
        sessions=DEMO_SESSIONS,
        projects=DEMO_PROJECTS,
        seed=7,
        mean_bytes=20_000,
        now_ms=int(time.time() * 1000),
        cleared_names=False,
        compact_above=DEMO_COMPACT_ABOVE,
    )
    return Catalog([root], cache_dir=tmp / "cache", trash_dir=tmp / "trash")


def _busiest_project(catalog: Catalog) -> str | None:
    """The demo's "current folder": the project with the most sessions."""
    counts: dict[str, int] = {}
    for summary in catalog.quick(None):
        counts[summary.cwd] = counts.get(summary.cwd, 0) + 1
    return max(counts, key=lambda cwd: counts[cwd]) if counts else None
