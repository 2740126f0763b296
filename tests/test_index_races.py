"""The index reads files pi is appending to (issue 14's write path: incremental continuation
from a saved offset, text scanned in the workers' code, bulk commits).

pi's own SessionManager (tests/oracle/append_loop.mjs, one line per open/append/close)
appends to every file while seance refreshes its index again and again, in normal and in
bulk mode.  A refresh may catch a line half-written: it must never keep it.  Once the agent
stops, the warm index must say exactly what a cold read of the files says, and the full
text must find the agent's last line in every file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import node_oracle_available
from write_harness import Agent, write_v3

from seance.core import catalog as catalog_module
from seance.core.catalog import Catalog

needs_node = pytest.mark.skipif(
    not node_oracle_available(), reason="node or tests/oracle/node_modules missing: run `npm ci` in tests/oracle"
)

FILES = 6


def _store(root: Path) -> list[Path]:
    bucket = root / "--proj--"
    bucket.mkdir(parents=True)
    return [write_v3(bucket / f"s{number}.jsonl", f"{number:04d}aaaa-race-session") for number in range(FILES)]


def _comparable(summaries: list) -> list[tuple]:
    return sorted((s.path, s.id, s.modified, s.message_count, s.first_message, s.size) for s in summaries)


@needs_node
@pytest.mark.slow
@pytest.mark.parametrize("bulk", [False, True], ids=["normal", "bulk"])
def test_refresh_while_pi_appends_150_trials_ends_equal_to_a_cold_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk: bool
) -> None:
    if bulk:  # every refresh that reads a file writes in `Index.bulk` mode
        monkeypatch.setattr(catalog_module, "_BULK_FILES", 1)
    root = tmp_path / "sessions"
    files = _store(root)
    warm = Catalog([root], cache_dir=tmp_path / "warm")
    agent = Agent(files, tmp_path / "stop", interval_us=200)
    try:
        counts = {str(path): 0 for path in files}
        for _trial in range(150):
            for summary in warm.refresh():
                assert summary.message_count >= counts[summary.path], "a count went back: a line was lost"
                counts[summary.path] = summary.message_count
    finally:
        appended = agent.finish()
    assert all(appended.get(str(path)) for path in files), "the agent appended to every file"
    after = warm.refresh()
    cold = Catalog([root], cache_dir=tmp_path / "cold")
    try:
        assert _comparable(after) == _comparable(cold.refresh())
        last = {summary.path: summary.message_count for summary in after}
        for path in files:  # every line landed, none twice: 2 of our own, then the agent's
            assert last[str(path)] == 2 + len(appended[str(path)])
        hits = {hit.path for hit in warm.search_text('"agent"')}
        assert hits == {str(path) for path in files}, "the appended text is searchable"
    finally:
        cold.close()
        warm.close()
