"""`ls --query` printed from a kept answer starts fast: it imports the query parser alone, not
the ranking, the haystack, the snippets, OpenSSL's hashlib or shutil (argparse's help width);
and a plain `ls` neither argparse (nor gettext and locale, which it asks) nor, when a
resident watcher serves it, the `socket` module (its enums): the C socket alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_query_objects import _corpus
from test_watchd import Daemon, _env

NOT_NEEDED = (
    "seance.core.search.rank",
    "seance.core.search.haystack",
    "seance.core.search.snippet",
    "seance.core.search.fuzzy",
    "hashlib",
    "shutil",
    "seance.core.listing",  # (its rows and sorts: an answer printed from the index arranges nothing)
)
# nor, on the path of a plain `ls` (`cli.main.quick_ls_args`) a watcher serves, these
NOT_NEEDED_WATCHED = (*NOT_NEEDED, "argparse", "gettext", "locale", "socket", "selectors")


def test_a_query_printed_from_its_kept_runs_imports_no_ranking_hashlib_or_shutil(
    tmp_path: Path, capsysbinary: object
) -> None:
    _root, roots = _corpus(tmp_path)
    script = (
        "import sys; from seance.core import catalog; catalog.ANSWER_BUDGET = 100; "
        "from seance.cli import main; code = main(sys.argv[1:]); "
        f"print(','.join(sorted(m for m in sys.modules if m in {NOT_NEEDED!r})), file=sys.stderr); "
        "sys.exit(code)"
    )
    command = [sys.executable, "-c", script, "ls", "--all", "--json", *roots, "--query", "the"]
    runs = [subprocess.run(command, capture_output=True, check=True, cwd=tmp_path) for _ in range(4)]
    assert runs[0].stderr.strip()  # ranked: the first answer needs them
    assert runs[-1].stdout == runs[0].stdout
    assert runs[-1].stderr.strip() == b""  # printed from the runs: none of them
    same_help = (
        "import argparse; from seance.cli.main import build_parser; "
        "parser = build_parser(['ls']); "
        "ls = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices['ls']; "
        "ours = ls.format_help(); ls.__class__ = argparse.ArgumentParser; print(ours == ls.format_help())"
    )
    for columns in ("60", "200"):  # the help as argparse sizes it with shutil
        env = {**os.environ, "COLUMNS": columns}
        done = subprocess.run([sys.executable, "-c", same_help], capture_output=True, check=True, env=env)
        assert done.stdout.strip() == b"True", columns


def test_a_kept_answer_a_watcher_serves_imports_no_argparse_or_socket(tmp_path: Path) -> None:
    root, roots = _corpus(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    env = _env(cache)
    script = (
        "import sys; from seance.core import catalog; catalog.ANSWER_BUDGET = 100; "
        "from seance.cli import main; code = main(sys.argv[1:]); "
        f"print(','.join(sorted(m for m in sys.modules if m in {NOT_NEEDED_WATCHED!r})), file=sys.stderr); "
        "print('asked the watcher' if '_socket' in sys.modules else 'no watcher', file=sys.stderr); "
        "sys.exit(code)"
    )
    command = [sys.executable, "-c", script, "ls", "--all", "--json", *roots, "--query", "the"]
    subprocess.run([sys.executable, "-m", "seance", "index", *roots], env=env, capture_output=True, check=True)
    daemon = Daemon(root, cache)
    try:
        runs = [subprocess.run(command, capture_output=True, check=True, cwd=tmp_path, env=env) for _ in range(4)]
    finally:
        daemon.stop()
    assert runs[-1].stdout == runs[0].stdout and runs[0].stdout.startswith(b"[{")
    assert runs[-1].stderr.strip() == b"asked the watcher"  # (and printed from the runs: none of those)


def test_a_first_asking_of_a_few_thousand_hits_reads_them_without_orjson(tmp_path: Path) -> None:
    """The index's hits come as one text of rowids: a few thousand are read by `int` (orjson's
    import, with uuid, platform and json, costs more than it saves below ~18,000), more by
    orjson; the answers are the same either way."""
    _root, roots = _corpus(tmp_path)
    printed = []
    for name, reads_from in (("few", "index._ORJSON_FROM"), ("many", "0")):
        cache = tmp_path / name
        cache.mkdir()
        env = _env(cache)
        script = (
            "import sys; from seance.core import index; "
            f"index._ORJSON_FROM = {reads_from}; "
            "from seance.cli import main; code = main(sys.argv[1:]); "
            "print('orjson' in sys.modules, file=sys.stderr); sys.exit(code)"
        )
        subprocess.run([sys.executable, "-m", "seance", "index", *roots], env=env, capture_output=True, check=True)
        command = [sys.executable, "-c", script, "ls", "--all", "--json", *roots, "--query", "the"]
        done = subprocess.run(command, capture_output=True, check=True, cwd=tmp_path, env=env)
        printed.append((done.stdout, done.stderr.strip()))
    assert printed[0][0] == printed[1][0] and printed[0][0].startswith(b"[{")
    assert [reads for _out, reads in printed] == [b"False", b"True"]
