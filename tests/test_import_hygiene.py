"""core/ must stay headless: importing any of its modules may not load Textual or Rich."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys

import pytest

import seance.core


def _core_modules() -> list[str]:
    return sorted(f"seance.core.{info.name}" for info in pkgutil.iter_modules(seance.core.__path__))


def test_core_has_modules() -> None:
    assert "seance.core.session" in _core_modules()


def test_core_imports_no_textual_or_rich() -> None:
    modules = _core_modules()
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"core pulled in: {result.stdout.strip()}"


def test_cli_ls_path_does_not_import_textual() -> None:
    code = (
        "import sys\n"
        "from seance.cli.main import build_parser\n"
        "build_parser()\n"
        "print(any(m.startswith('textual') for m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("flags", "absent"),
    [
        (["--quick"], ()),
        ([], ("orjson", "seance.core.metadata", "seance.core.prefix")),  # warm, nothing to read: no parser at all
    ],
)
def test_seance_ls_imports_only_what_listing_needs(tmp_path, flags: list[str], absent: tuple[str, ...]) -> None:
    """`seance ls` starts fast: no session reader, context, writers, Trash or fuzzy matcher."""
    heavy = (
        "rapidfuzz",
        "textual",
        "rich",
        "seance.core.session",
        "seance.core.jsonl",
        "seance.core.context",
        "seance.core.summary",
        "seance.core.writes",
        "seance.core.trash",
        "seance.core.resume",
        "seance.core.search",
        *absent,
    )
    code = (
        "import sys\n"
        "from seance.cli import main\n"
        f"code = main(['ls', '--all', '--json', *{flags!r}, '--root', {str(tmp_path)!r}])\n"
        f"print(code, ','.join(sorted(m for m in sys.modules if m.startswith({heavy!r}))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "SEANCE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.stdout.split("\n")[-2] == "0 ", result.stdout


def test_the_core_package_imports_its_names_lazily() -> None:
    code = (
        "import sys, seance.core\n"
        "print('seance.core.context' in sys.modules, seance.core.build_session_context.__module__)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "seance.core.context"]


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["tree", "--json"]])
def test_show_and_tree_json_import_no_summaries_stats_or_ui(tmp_path, command: list[str]) -> None:
    """`show` and `tree --json` on a huge session are bound by reading it: every module they
    import is start-up paid on each call (`tree --text` alone summarises entries)."""
    session = tmp_path / "s.jsonl"
    session.write_text(
        '{"type":"session","version":3,"id":"s","cwd":"/p","timestamp":"2026-01-01T00:00:00.000Z"}\n'
        '{"type":"message","id":"u","parentId":null,"message":{"role":"user","content":"hi"}}\n'
    )
    heavy = ("seance.core.summary", "seance.cli.stats", "seance.core.stats", "seance.app", "textual", "rich")
    code = (
        "import sys\n"
        "from seance.cli import main\n"
        f"code = main([*{command!r}, {str(session)!r}])\n"
        f"sys.stderr.write(f'{{code}} ' + ','.join(sorted(m for m in sys.modules if m.startswith({heavy!r}))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stderr.strip() == "0", result.stderr
