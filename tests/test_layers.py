"""The layers import downwards only: `cli/` uses `app/` and `core/`, `app/` uses `core/`, and
`core/` uses neither (nor argparse: parsing a command line is the CLI's job).  Read from the
source with `ast`, so an import deferred into a function body counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # the repository root is the `seance` package


def imported_modules(source: str, path: Path) -> set[str]:
    """Every module `source` (the text of `path`) imports, as absolute names (relative resolved)."""
    package = ["seance", *path.parent.relative_to(PACKAGE_ROOT).parts]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # `from seance import app`
    return found


def violations(layer: str, forbidden: tuple[str, ...]) -> list[str]:
    files = sorted((PACKAGE_ROOT / layer).rglob("*.py"))
    assert len(files) > 5, files
    return sorted(
        f"{path.relative_to(PACKAGE_ROOT)}: {module}"
        for path in files
        for module in imported_modules(path.read_text(encoding="utf-8"), path)
        if any(module == name or module.startswith(f"{name}.") for name in forbidden)
    )


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("core", ("argparse", "seance.cli", "seance.app", "textual", "rich")),
        ("app", ("argparse", "seance.cli")),
    ],
)
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...]) -> None:
    assert violations(layer, forbidden) == []


@pytest.mark.parametrize(
    ("source", "where", "module"),
    [
        ("from ...cli import main\n", "core/search/query.py", "seance.cli"),
        ("from ..text import visible\n", "core/search/query.py", "seance.core.text"),
        ("from .. import app\n", "core/catalog.py", "seance.app"),
        ("def f():\n    import argparse\n", "core/catalog.py", "argparse"),
    ],
)
def test_the_reader_resolves_relative_and_deferred_imports(source: str, where: str, module: str) -> None:
    """The check above can fail: an upward relative import, or one inside a function, is seen."""
    assert module in imported_modules(source, PACKAGE_ROOT / where)
