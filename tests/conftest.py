"""Shared fixtures: the real corpus in place, and snapshots in the top-level snapshots/."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_textual_snapshot
from syrupy.location import PyTestLocation

TESTS_ROOT = Path(__file__).resolve().parent
REPO_ROOT = TESTS_ROOT.parent
SNAPSHOT_ROOT = REPO_ROOT / "snapshots"
CORPUS = Path(os.environ.get("SEANCE_CORPUS", REPO_ROOT.parent / "shared" / "corpus")).resolve()
NO_CORPUS = f"the shared corpus is not at {CORPUS} (clone it there or set SEANCE_CORPUS)"
"""The reason every corpus test skips with when it is missing (listed in the summary: `-rs`)."""


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
    """No colour overrides from the developer's shell; caches, marks and settings never in the real home."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path_factory.mktemp("seance-cache")))
    monkeypatch.setenv("SEANCE_DATA_DIR", str(tmp_path_factory.mktemp("seance-data")))
    monkeypatch.setenv("SEANCE_CONFIG_DIR", str(tmp_path_factory.mktemp("seance-config")))


def corpus_files() -> list[Path]:
    """Every .jsonl file of the shared corpus (read in place, never copied)."""
    return sorted(CORPUS.rglob("*.jsonl")) if CORPUS.is_dir() else []


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    return CORPUS


ORACLE_DIR = TESTS_ROOT / "oracle"
PI_PACKAGE = ORACLE_DIR / "node_modules" / "@mariozechner" / "pi-coding-agent"


def node_oracle_available() -> bool:
    import shutil

    return shutil.which("node") is not None and PI_PACKAGE.is_dir()


def run_node(script: str, *args: str, timeout: float = 300) -> str:
    """Run one of tests/oracle's scripts with pi's real implementation; return stdout."""
    import subprocess

    result = subprocess.run(["node", str(ORACLE_DIR / script), *args], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(f"node {script} failed ({result.returncode}):\n{result.stderr[-4000:]}")
    return result.stdout


# Two oracle runs: a deterministic one (seeded fake clock and ids, reproducible failures)
# and a live one (real clock and randomness), so CI keeps exploring new shapes.
ORACLE_RUNS = {"seeded": ("--count", "60", "--seed", "7"), "live": ("--count", "30", "--seed", "11", "--live")}


@pytest.fixture(scope="session", params=sorted(ORACLE_RUNS))
def pi_oracle(request, tmp_path_factory) -> Path:
    """A directory where pi's own SessionManager wrote sessions/ and its reading, expected.json."""
    if not node_oracle_available():
        pytest.skip("node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle")
    out = tmp_path_factory.mktemp(f"pi-oracle-{request.param}")
    run_node("generate.mjs", str(out), *ORACLE_RUNS[request.param])
    # A live run is not reproducible from its seed: its files stay in pytest's basetemp
    # (the last three runs are kept), and this line in a failure's output says where.
    print(f"pi oracle ({request.param}) wrote {out}")
    return out


class IndexRowReads:
    """Counts `Index.query_rows` calls (every row read and checked, or a query that ranks):
    to tell an answer that was kept from one made again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from seance.core.index import Index

        self.count = 0
        self.rows = 0  # the rows they returned
        original = Index.query_rows

        def counted(index: Index, *args: object, **kwargs: object) -> object:
            self.count += 1
            found = original(index, *args, **kwargs)  # type: ignore[arg-type]
            self.rows += len(found or ())
            return found

        monkeypatch.setattr(Index, "query_rows", counted)


@contextlib.contextmanager
def read_only_trash_files(files: Path) -> Iterator[None]:
    """A Trash `files/` folder on a small read-only tmpfs (another file system that refuses
    what is moved into it), unmounted after; the test is skipped where nothing can be mounted."""
    files.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(files)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield
    finally:
        subprocess.run(["umount", str(files)], check=False)


def unfinished_folder_move(trash: Path, folder: Path, *, committed: bool = True) -> tuple[Path, Path]:
    """What a kill -9 left of a folder's move to a Trash on another filesystem: the copy (in
    `files/`, or not `committed`: still in `.seance-incoming/`), the folder renamed aside beside
    `folder` holding one more file written after the copy (`late.jsonl`), and the journal of
    the dead process.  Returns the aside folder and the journal."""
    import json
    import shutil

    from seance.core.trash import ASIDE_PREFIX, INCOMING

    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    token = f"{pid}-abcdefabcdef"
    for name in ("files", "info", INCOMING):
        (trash / name).mkdir(parents=True, exist_ok=True)
    aside = folder.parent / f"{ASIDE_PREFIX}{token}"
    aside.mkdir(parents=True)
    (aside / "draft.txt").write_text("draft")
    copy = trash / "files" / folder.name if committed else trash / INCOMING / f"{token}.data"
    shutil.copytree(aside, copy)
    (aside / "late.jsonl").write_text('{"type":"message","id":"late"}\n')
    journal = trash / INCOMING / f"{token}.json"
    state = {"pid": pid, "source": str(folder), "info": "", "name": folder.name, "copied": True, "aside": str(aside)}
    journal.write_text(json.dumps(state))
    return aside, journal
