"""The README's key tables, generated from the rows F1 shows (the screens' live bindings).

    python -m seance.app.keytable --write README.md   rewrite the tables between their markers
    python -m seance.app.keytable --check README.md   exit 1 and name every row that differs

Help is built from the bindings live on a mounted screen (`help_rows`), so the tables come from
the same place: each screen runs headless in seance's own app (the session list as `seance pick`
and as the `seance` browser, the tree view on a two-entry session), and its help rows become the
table's rows.  A third column says where seance deliberately differs from pi 0.73.1 (`PI_NOTES`).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TABLES = ("list", "tree")
BEGIN = "<!-- keys:{name} (generated from the app's bindings: python -m seance.app.keytable --write README.md) -->"
END = "<!-- /keys:{name} -->"
HEADER = ("| key | action | vs pi 0.73.1 |", "|---|---|---|")
REGENERATE = "python -m seance.app.keytable --write README.md"

PI_NOTES: dict[tuple[str, str], str] = {
    # (table, help text) -> where seance deliberately differs from pi, and why
    ("list", 'search: words, "a phrase", re:regex, !not, label:x, tag:x, is:pinned'): "pi: words and `re:` over "
    "the id, name, every message and the cwd; seance's `re:` reads the id, name and first message only, "
    "`!`, the fields and the marks are seance's (see Search)",
    ("list", "clear the query, then cancel"): "pi cancels at once, whatever the query (as fzf does); seance "
    "clears a typed query first (Ctrl+C cancels at once)",
    ("list", "sort: threaded, recent, created, relevance"): 'pi: threaded → recent → relevance ("Fuzzy"); '
    "created is seance's",
    ("list", "child sessions (forks, subagents): hidden → threaded → flat"): "seance only (pi threads forks "
    "under their parent)",
    ("list", "select / deselect the row for ctrl+d (Space: empty query)"): "seance only",
    ("list", "select every row matching the query (again: deselect them)"): "seance only",
    ("list", "copy the resume command, the id or the path"): "seance only",
    ("list", "show or hide session stats"): "seance only",
    ("list", "export the context to a .md, .html or .json file"): "seance only",
    ("list", "the files that were skipped, and why"): "seance only",
    ("list", "pin or unpin the session (pinned sessions come first)"): "seance only",
    ("list", "edit the session's tags (tag:x in the search)"): "seance only",
    ("list", "show file paths"): "same key; only F4 when embedded in another Textual app (its Ctrl+P is the "
    "command palette)",
    ("list", "move the session (or the selected ones) to the Trash"): "pi also deletes with Ctrl+Backspace on an "
    "empty query (terminals rarely tell it from Backspace); seance moves the file to the freedesktop Trash",
    ("list", "undo the last delete (else undo typing)"): "seance only",
    ("list", "tree of the session (resume at any entry)"): "seance only (pi's `/tree` works on the open session)",
    ("list", "fork the session (pick it as a fork)"): "seance only (pi: `pi --fork`)",
    ("list", "show or hide the preview"): "seance only; below 100 columns it shows or hides the preview at that "
    "width only",
    ("list", "this help (? when the query is empty)"): "seance only",
    ("list", "command palette"): "seance only (Ctrl+P is pi's paths key, so the palette is on F2)",
    ("tree", "search (every word must match the entry's whole text)"): "pi searches the first 200 characters",
    ("tree", "previous filter"): "as pi; the terminal must report Shift with Ctrl (kitty keyboard protocol: "
    "kitty, WezTerm, foot, Ghostty); xterm and tmux 3.3 send it as Ctrl+O",
    ("tree", "resume at this entry"): "pi moves the open session there; seance hands the entry to the agent "
    "(`pick --json` `entryId`)",
    ("tree", "this help"): "seance only",
    ("tree", "command palette"): "seance only",
}


@dataclass(frozen=True)
class Row:
    keys: str
    action: str
    note: str = ""

    def markdown(self) -> str:
        return f"| {_cell(self.keys)} | {_cell(self.action)} | {_cell(self.note)} |"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


# -- the help rows, from the screens themselves -------------------------------------------------


async def _help_of(make_screen: Callable[[], Any], ready: Callable[[Any], bool]) -> list[tuple[str, str]]:
    """Mount `make_screen()` in seance's own app (headless) and return its help rows once `ready`."""
    from .app import SeanceApp

    app = SeanceApp(make_screen, theme="textual-dark")
    async with app.run_test(headless=True, size=(120, 40)) as pilot:
        for _ in range(200):
            await pilot.pause(0.01)
            if ready(app.screen):
                break
        else:
            raise RuntimeError(f"{type(app.screen).__name__} never became ready")
        screen: Any = app.screen  # a SessionPickerScreen or SessionTreeScreen: both have help_rows
        return list(screen.help_rows())


async def _all_help() -> dict[str, dict[str, list[tuple[str, str]]]]:
    from seance.core.catalog import Catalog

    from .screens.session_list import PickerOptions, SessionPickerScreen
    from .screens.session_tree import SessionTreeScreen
    from .widgets.tree_view import TreeView

    with tempfile.TemporaryDirectory(prefix="seance-keys-") as tmp:
        root = Path(tmp) / "sessions"
        root.mkdir()
        session = Path(tmp) / "s.jsonl"
        session.write_text(
            '{"type":"session","version":3,"id":"k","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
            '{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
            '"message":{"role":"user","content":"hi"}}\n'
        )
        modes: dict[str, list[tuple[str, str]]] = {}
        for enter in ("resume", "tree"):
            catalog = Catalog([root], cache_dir=Path(tmp) / "cache")
            try:
                options = PickerOptions(watch=False, enter=enter)  # type: ignore[arg-type]

                def picker(catalog: Catalog = catalog, options: PickerOptions = options) -> SessionPickerScreen:
                    return SessionPickerScreen(catalog, cwd=tmp, options=options)

                modes[enter] = await _help_of(picker, lambda screen: isinstance(screen, SessionPickerScreen))
            finally:
                catalog.close()

        def tree() -> SessionTreeScreen:
            return SessionTreeScreen(session, standalone=False)

        tree_help = await _help_of(tree, lambda screen: isinstance(getattr(screen, "focused", None), TreeView))
    return {"list": modes, "tree": {"resume": tree_help}}


def tables() -> dict[str, list[Row]]:
    """Each table's rows: the list as `seance pick` shows them (the browser's different rows after,
    marked), the tree view's as they are."""
    help_by_table = asyncio.run(_all_help())
    result: dict[str, list[Row]] = {}
    for name in TABLES:
        modes = help_by_table[name]
        rows = [Row(keys, what, PI_NOTES.get((name, what), "")) for keys, what in modes["resume"]]
        browser = modes.get("tree")
        if browser is not None:
            seen = set(modes["resume"])
            rows += [Row(f"{keys} (`seance` browser)", what) for keys, what in browser if (keys, what) not in seen]
        result[name] = rows
    return result


# -- the README ------------------------------------------------------------------------------


def render(rows: list[Row]) -> list[str]:
    return [*HEADER, *(row.markdown() for row in rows)]


def _block(lines: list[str], name: str) -> tuple[int, int]:
    begin, end = BEGIN.format(name=name), END.format(name=name)
    try:
        start = lines.index(begin)
        stop = lines.index(end, start)
    except ValueError:
        raise SystemExit(f"README: the markers of the {name!r} key table are missing ({begin} … {end})") from None
    return start + 1, stop


def differences(readme: str, generated: dict[str, list[Row]]) -> list[str]:
    """Every README row that is not what the app's help says, one line each (empty: up to date)."""
    lines = readme.splitlines()
    problems: list[str] = []
    for name, rows in generated.items():
        start, stop = _block(lines, name)
        have, want = lines[start:stop], render(rows)
        for number in range(max(len(have), len(want))):
            old = have[number] if number < len(have) else "(no row)"
            new = want[number] if number < len(want) else "(no row)"
            if old != new:
                problems.append(f"{name} table, row {number - 1}: README has {old!r}; the app's help gives {new!r}")
    return problems


def rewrite(readme: str, generated: dict[str, list[Row]]) -> str:
    lines = readme.splitlines()
    for name, rows in generated.items():
        start, stop = _block(lines, name)
        lines[start:stop] = render(rows)
    return "\n".join(lines) + "\n"


USAGE = "usage: python -m seance.app.keytable (--write | --check) README.md"


def main(argv: list[str] | None = None) -> int:
    """`--write README`: rewrite the tables; `--check README`: exit 1 naming each row that differs.

    (Two flags and a path: parsed by hand, since argparse belongs to the `cli` layer.)"""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("--write", "--check"):
        print(USAGE, file=sys.stderr)
        return 2
    mode, path = args[0], Path(args[1])
    try:
        readme = path.read_text(encoding="utf-8")
    except OSError as error:
        print(f"seance.app.keytable: {path}: {error.strerror or error}", file=sys.stderr)
        return 2
    generated = tables()
    if mode == "--write":
        path.write_text(rewrite(readme, generated), encoding="utf-8")
        return 0
    problems = differences(readme, generated)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"run: {REGENERATE}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
