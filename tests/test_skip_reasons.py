"""A skipped test says why in the run's summary (issue 13): in a clone without
`../shared/corpus`, the corpus tests skip with "the shared corpus is not at …" listed, not
silently (pyproject's `addopts` has `-rs`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_corpus_skips_are_listed_with_their_reason(tmp_path: Path) -> None:
    missing = tmp_path / "no-corpus-here"
    environment = {**os.environ, "SEANCE_CORPUS": str(missing)}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "tests/test_corpus.py"],
        cwd=REPO_ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    summary = result.stdout[result.stdout.index("short test summary info") :]
    assert f"the shared corpus is not at {missing}" in summary
    assert "SKIPPED" in summary and "skipped" in result.stdout.splitlines()[-1]
