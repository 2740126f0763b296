"""The UI commands behind `seance`, `seance pick`, `seance --demo` and `seance tree SESSION`.

Contract (like fzf): the UI reads keys from and draws on the controlling terminal (`/dev/tty`,
see `terminal`), never on stdin, stdout or stderr; after it closes, the answer alone is printed
on stdout.  No terminal (or `TERM=dumb`): one line on stderr, exit 2.

    seance pick    Enter: the session's absolute path, exit 0; with --json the `PickResult`
                   object {"action", "path", "id", "leafId", "cwd", "prefill", "reset",
                   "entryId"}.  Ctrl+F (fork) prints the same path as Enter: only --json
                   ("action": "fork") tells them apart.  Esc on an empty query / Ctrl+C:
                   nothing, exit 130.  No session file under the roots at all: a message on
                   stderr, exit 1.
    seance         the browser: Enter opens the selected session's tree; resuming from there
                   prints the path as `pick` does (so `pi --session "$(seance)"` works; the
                   chosen entry is only in --json's "entryId"); leaving without choosing
                   prints nothing, exit 130.
    seance --demo  the browser on a generated sessions root in a temporary directory.
    seance tree S  (on a terminal) the tree view of one session; Enter prints its path.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seance.core.catalog import Catalog
from seance.core.cli_args import put_path, say, write_json_bytes

from .results import PickResult
from .terminal import check_terminal, controlling_terminal, driver_for

if TYPE_CHECKING:  # Textual is imported only once a terminal is known to be there (see `run_ui`)
    from .app import SeanceApp
    from .screens.session_list import PickerOptions

EXIT_OK, EXIT_NOT_FOUND, EXIT_CANCELLED = 0, 1, 130
DEMO_SESSIONS, DEMO_PROJECTS = 80, 6


def run_ui(args: argparse.Namespace) -> int:
    """Run the UI command in `args`; print the result after the UI has closed; return the exit code."""
    if getattr(args, "tree_session", None) is not None:
        check_terminal()
        return _run_tree(args)
    if getattr(args, "demo", False):
        return _run_demo(args)
    roots = [Path(root).expanduser() for root in args.root] if getattr(args, "root", None) else None
    catalog = Catalog(roots)
    found = catalog.discover()
    skipped = list(found.skipped)
    if not _any_session(found.infos, skipped):
        where = ", ".join(str(root) for root in catalog.roots) or "(no sessions root)"
        say(f"seance: no sessions found under {where}")
        for path, reason in skipped[:5]:
            say(f"seance: skipped {path}: {reason}")
        if len(skipped) > 5:
            say(f"seance: ... and {len(skipped) - 5} more skipped")
        return EXIT_NOT_FOUND
    check_terminal()  # before importing Textual (most of a second): no terminal is exit 2 at once
    from .screens.session_list import PickerOptions

    picking = getattr(args, "command", None) == "pick"
    options = PickerOptions(enter="resume" if picking else "tree")
    return _pick(catalog, args, options)


def _any_session(infos: list[Any], skipped: list[tuple[str, str]], batch: int = 64) -> bool:
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


def _pick(catalog: Catalog, args: argparse.Namespace, options: PickerOptions) -> int:
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if getattr(args, "cwd", None) else os.getcwd()
    scope = "all" if getattr(args, "all", False) else "project"
    query = getattr(args, "query", "") or ""
    from .app import SeanceApp
    from .screens.session_list import SessionPickerScreen

    def make_screen() -> SessionPickerScreen:
        return SessionPickerScreen(catalog, cwd=cwd, scope=scope, query=query, options=options)

    return _print_result(_run_app(SeanceApp(make_screen)), as_json=getattr(args, "json", False))


def _run_app(app: SeanceApp) -> Any:
    """Run `app` on the controlling terminal (see `terminal`): stdin, stdout and stderr stay the caller's."""
    with controlling_terminal() as fd:
        app.driver_class = driver_for(fd)
        return app.run()


def _print_result(result: Any, *, as_json: bool) -> int:
    if not isinstance(result, PickResult):
        return EXIT_CANCELLED
    if as_json:
        write_json_bytes(json.dumps(result.to_json(), ensure_ascii=False).encode("utf-8", "backslashreplace"))
    else:
        put_path(result.path)
    return EXIT_OK


def _run_tree(args: argparse.Namespace) -> int:
    from .app import SeanceApp
    from .screens.session_tree import SessionTreeScreen

    session = args.tree_session
    path = Path(session.path).resolve()

    result = _run_app(SeanceApp(lambda: SessionTreeScreen(path, standalone=True, session=session)))
    if result is None or getattr(result, "action", None) not in ("resume", "fork"):
        return EXIT_CANCELLED
    pick = PickResult.from_tree(result, path=path, session_id=session.id, cwd=session.cwd)
    return _print_result(pick, as_json=getattr(args, "json", False))


def _run_demo(args: argparse.Namespace) -> int:
    """Browse a freshly generated demo root, so a new user sees seance work on any machine."""
    check_terminal()  # before generating and importing Textual: no terminal is exit 2 at once
    from seance.core.generate import generate_corpus

    from .screens.session_list import PickerOptions

    with tempfile.TemporaryDirectory(prefix="seance-demo-") as tmp:
        root = Path(tmp) / "sessions"
        say(f"seance: generating demo sessions in {root} (removed on exit)…")
        corpus = generate_corpus(
            root,
            sessions=DEMO_SESSIONS,
            projects=DEMO_PROJECTS,
            seed=7,
            mean_bytes=20_000,
            now_ms=int(time.time() * 1000),
            cleared_names=False,
        )
        catalog = Catalog([root], cache_dir=Path(tmp) / "cache")
        args.cwd = str(_busiest_project(catalog)) if corpus.files else None
        return _pick(catalog, args, PickerOptions(enter="tree"))


def _busiest_project(catalog: Catalog) -> str | None:
    """The demo's "current folder": the project with the most sessions."""
    counts: dict[str, int] = {}
    for summary in catalog.quick(None):
        counts[summary.cwd] = counts.get(summary.cwd, 0) + 1
    return max(counts, key=lambda cwd: counts[cwd]) if counts else None
