"""Shared fixtures: the real corpus in place, and snapshots in the top-level snapshots/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import pytest_textual_snapshot
from syrupy.location import PyTestLocation

TESTS_ROOT = Path(__file__).resolve().parent
REPO_ROOT = TESTS_ROOT.parent
SNAPSHOT_ROOT = REPO_ROOT / "snapshots"
CORPUS = Path(os.environ.get("SEANCE_CORPUS", REPO_ROOT.parent / "shared" / "corpus")).resolve()


class TopLevelSVGExtension(pytest_textual_snapshot.SVGImageExtension):
    """Store SVG snapshots under <repo>/snapshots/<test module>/ instead of tests/__snapshots__/."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        relative = Path(test_location.filepath).resolve().relative_to(TESTS_ROOT).with_suffix("")
        return str(SNAPSHOT_ROOT / relative)


# snap_compare looks this module global up when the fixture runs.
pytest_textual_snapshot.SVGImageExtension = TopLevelSVGExtension


@pytest.fixture
def snap_app(snapshot):
    """Compare the running app's screen with a stored SVG, inside an async Pilot test."""
    svg = snapshot.use_extension(TopLevelSVGExtension)

    async def compare(pilot, name: str | None = None) -> bool:
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()
        return svg(name=name) == pilot.app.export_screenshot()

    return compare


@pytest.fixture(autouse=True)
def _deterministic_env(monkeypatch, tmp_path_factory):
    """No colour overrides from the developer's shell; caches never in the real home."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path_factory.mktemp("seance-cache")))


def corpus_files() -> list[Path]:
    """Every .jsonl file of the shared corpus (read in place, never copied)."""
    return sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is not at {CORPUS}")
    return CORPUS
