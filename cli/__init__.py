"""seance's command line: the `seance` console script and `python -m seance`.

A layer of its own beside `core/` (headless reading and writing) and `app/` (the Textual UI):
it parses arguments, runs one command, prints the answer and maps failures to exit codes.
Nothing below it imports it.

    main.py     the parser, the lazy command registry, dispatch, errors -> exit codes
    errors.py   `ExitCode` and `CliError`
    scope.py    the scope flags (--root, --all, --cwd) and the SESSION resolver
    output.py   every line the CLI prints (sanitised: session text is data)
    catalog.py  ls, index
    session.py  show, tree
    actions.py  resolve, continue, rm, rename
    ui.py       bare `seance`, --demo, pick, tree on a terminal (through `seance.app`'s entry points)
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
