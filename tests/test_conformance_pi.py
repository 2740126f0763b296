"""Differential conformance: seance reads pi's own sessions exactly as pi does.

pi's real SessionManager (npm, pinned in tests/oracle) writes randomized sessions with
branches, compactions, labels, names, model/thinking changes, custom messages and forks,
and records its own buildSessionContext (at the leaf and at arbitrary entries), getTree and
getLeafId.  Every one must equal what `seance show/tree --json` says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from seance.cli.session import show_payload, tree_payload
from seance.core.session import load_session


def _expected(oracle: Path) -> dict:
    return json.loads((oracle / "expected.json").read_text())


def _contract_messages(payload: dict) -> list[dict]:
    return [{"role": m["role"], "text": m["text"]} for m in payload["messages"]]


def test_oracle_covers_the_interesting_shapes(pi_oracle: Path) -> None:
    sessions = _expected(pi_oracle)["sessions"]
    assert len(sessions) >= 20
    trees = [record["tree"] for record in sessions]
    assert any(len({n["parentId"] for n in tree}) < len(tree) - 1 for tree in trees), "no branches"
    assert any(n["label"] for tree in trees for n in tree), "no labels"
    assert any(n["type"] == "compaction" for tree in trees for n in tree), "no compactions"
    assert any(record["parentSession"] for record in sessions), "no forks"


def test_tree_and_leaf_equal_pi(pi_oracle: Path) -> None:
    for record in _expected(pi_oracle)["sessions"]:
        session = load_session(record["path"])
        payload = tree_payload(session)
        assert payload["id"] == record["id"]
        assert payload["leafId"] == record["leafId"], record["path"]
        ours = [{k: node[k] for k in ("id", "parentId", "type", "label")} for node in payload["nodes"]]
        assert ours == record["tree"], record["path"]
        # pi's own forks drop label entries that other entries hang off: those orphans
        # are reported (and placed as roots, like pi does), never anything else.
        assert all("is missing; shown as a root" in problem for problem in session.problems)


def test_context_at_leaf_and_arbitrary_entries_equals_pi(pi_oracle: Path) -> None:
    checked = 0
    for record in _expected(pi_oracle)["sessions"]:
        session = load_session(record["path"])
        for expected in record["contexts"]:
            payload = show_payload(session, expected["leaf"])
            where = f"{record['path']} at {expected['leaf']}"
            assert payload["thinkingLevel"] == expected["thinkingLevel"], where
            assert payload["model"] == expected["model"], where
            assert _contract_messages(payload) == expected["messages"], where
            checked += 1
    assert checked > 100


def test_session_names_equal_pi(pi_oracle: Path) -> None:
    for record in _expected(pi_oracle)["sessions"]:
        assert load_session(record["path"]).name == record["sessionName"], record["path"]


@pytest.mark.parametrize("command", ["show", "tree"])
def test_cli_json_contract_equals_pi(pi_oracle: Path, command: str) -> None:
    """The real console entry point, on a few files, prints exactly pi's reading."""
    for record in _expected(pi_oracle)["sessions"][:6]:
        result = subprocess.run(
            [sys.executable, "-m", "seance", command, record["path"], "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        payload = json.loads(result.stdout)
        assert payload["path"] == record["path"]
        assert payload["leafId"] == record["leafId"]
        if command == "show":
            default = next(c for c in record["contexts"] if c["leaf"] is None)
            assert _contract_messages(payload) == default["messages"]
            assert payload["model"] == default["model"]
        else:
            assert [n["id"] for n in payload["nodes"]] == [n["id"] for n in record["tree"]]


def test_cli_show_at_arbitrary_leaf(pi_oracle: Path) -> None:
    record = next(r for r in _expected(pi_oracle)["sessions"] if any(c["leaf"] for c in r["contexts"]))
    expected = next(c for c in record["contexts"] if c["leaf"])
    result = subprocess.run(
        [sys.executable, "-m", "seance", "show", record["path"], "--leaf", expected["leaf"], "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert _contract_messages(json.loads(result.stdout)) == expected["messages"]
