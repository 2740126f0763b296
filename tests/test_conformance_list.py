"""`seance ls --all --json` equals pi 0.73.1's own `SessionManager.listAll()`.

Against files pi's real SessionManager wrote (the `pi_oracle` fixture), against the shared
corpus's pi files (values from pi.md §4), and against a generated store that pi lists live.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import CORPUS, NO_CORPUS, REPO_ROOT, corpus_files, node_oracle_available

from seance.cli import main
from seance.core.generate import generate_corpus

PI_KEYS = ("path", "id", "cwd", "name", "parentSession", "created", "modified", "messageCount", "firstMessage")


def seance_ls(capsys: pytest.CaptureFixture[str], root: Path, *extra: str) -> list[dict]:
    assert main(["ls", "--all", "--json", "--root", str(root), *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_ls_equals_pi_list_all(pi_oracle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = json.loads((pi_oracle / "expected.json").read_text())["list"]
    got = seance_ls(capsys, pi_oracle / "sessions")
    assert [{key: row[key] for key in PI_KEYS} for row in got] == [
        {key: row[key] for key in PI_KEYS} for row in expected
    ]
    # the quick listing finds the same sessions (its values are prefix-only approximations)
    quick = seance_ls(capsys, pi_oracle / "sessions", "--quick")
    assert sorted(row["path"] for row in quick) == sorted(row["path"] for row in expected)


def test_ls_equals_pi_on_the_corpus_pi_files(capsys: pytest.CaptureFixture[str]) -> None:
    root = CORPUS / "pi"
    if not root.is_dir():
        pytest.skip(NO_CORPUS)
    rows = {Path(row["path"]).name: row for row in seance_ls(capsys, root)}
    assert {name: row["messageCount"] for name, row in rows.items()} == {
        "before-compaction.jsonl": 990,
        "large-session.jsonl": 914,
        "compact.jsonl": 1010,
        "session.jsonl": 452,
    }
    assert rows["before-compaction.jsonl"]["firstMessage"].startswith("alright, read @packages/coding-agent/src/")
    assert rows["large-session.jsonl"]["firstMessage"] == "/mode"
    assert "\n" in rows["session.jsonl"]["firstMessage"]  # multi-line, not truncated
    for row in rows.values():
        assert row["name"] is None and row["parentSession"] is None
        assert row["cwd"] == "/Users/badlogic/workspaces/pi-mono"
    # v1 headers are listed raw; the header of before-compaction is later than its messages
    before = rows["before-compaction.jsonl"]
    assert before["modified"] < before["created"]


@pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")
@pytest.mark.parametrize("where", ["corpus", "generated"])
def test_ls_equals_pi_live(where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pi's listAll run now, over every file of the shared corpus or over a generated store.

    seance also lists what pi cannot read (oh-my-pi's title-slot files); every other row,
    and the order, must be pi's.
    """
    agent = tmp_path / "agent"
    agent.mkdir()
    if where == "corpus":
        files = corpus_files()
        if not files:
            pytest.skip(NO_CORPUS)
        for number, source in enumerate(files):
            bucket = agent / "sessions" / f"--bucket-{number:03d}--"
            bucket.mkdir(parents=True)  # a real directory: pi's listAll skips symlinked buckets
            (bucket / source.name).symlink_to(source)
    else:
        generate_corpus(agent / "sessions", sessions=25, projects=4, seed=5, mean_bytes=6_000)
    result = subprocess.run(
        ["node", str(REPO_ROOT / "bench" / "pi_list.mjs"), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(agent)},
        check=True,
    )
    expected = json.loads(result.stdout)
    assert expected, "pi listed nothing"
    got = [{key: row[key] for key in PI_KEYS} for row in seance_ls(capsys, agent / "sessions")]
    listed_by_pi = {row["path"] for row in expected}
    assert [row for row in got if row["path"] in listed_by_pi] == expected
    for row in got:
        if row["path"] not in listed_by_pi:
            assert json.loads(Path(row["path"]).read_bytes().split(b"\n", 1)[0])["type"] == "title"
