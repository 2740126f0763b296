"""`seance show S --stats [--json]` and `seance stats`, through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import CORPUS

from seance.cli import main
from seance.cli.errors import ExitCode
from seance.core.generate import bucket_name, generate_corpus
from seance.core.session import load_session
from seance.core.stats import session_stats
from seance.core.textchart import cell_width


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _usage(tokens_in: int, tokens_out: int, cost: float) -> dict:
    return {"input": tokens_in, "output": tokens_out, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}}


def _session(root: Path, cwd: str, session_id: str, model: str, cost: float, day: str) -> Path:
    path = root / bucket_name(cwd) / f"{day}T10-00-00-000Z_{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        {"type": "session", "version": 3, "id": session_id, "timestamp": f"{day}T10:00:00.000Z", "cwd": cwd},
        {
            "type": "message",
            "id": "u1",
            "parentId": None,
            "timestamp": f"{day}T10:00:01.000Z",
            "message": {"role": "user", "content": "hi"},
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": "u1",
            "timestamp": f"{day}T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "t", "name": "read", "arguments": {"path": "x.py"}}],
                "provider": "acme",
                "model": model,
                "usage": _usage(1000, 10, cost),
            },
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_show_stats_json_is_the_sessions_stats(capsys) -> None:
    path = CORPUS / "pi" / "session.jsonl"
    if not path.exists():
        pytest.skip("shared corpus not present")
    code, out, _err = run(capsys, "show", str(path), "--stats", "--json")
    assert code == ExitCode.OK
    payload = json.loads(out)
    assert payload == json.loads(json.dumps(session_stats(load_session(path)).to_json()))
    # an independent sum of the file's lines (what `jq` would add up)
    tokens_in = cost = 0.0
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # the corpus file has a torn line; pi skips it too
        message = entry.get("message") or {}
        if entry.get("type") == "message" and message.get("role") == "assistant":
            tokens_in += message["usage"]["input"]
            cost += message["usage"]["cost"]["total"]
    assert payload["tokens"]["input"] == tokens_in
    assert payload["cost"] == pytest.approx(cost, rel=1e-12)
    assert payload["scope"] == "tree" and payload["leaves"] >= 1


def test_show_stats_text_is_sanitised(tmp_path: Path, capsys) -> None:
    path = _session(tmp_path, "/p", "s1", "evil\x1b[31mred\x07", 0.5, "2026-03-01")
    code, out, _err = run(capsys, "show", str(path), "--stats")
    assert code == ExitCode.OK
    assert "\x1b" not in out and "\x07" not in out
    assert "tokens ↑1.0k ↓10 · $0.50" in out
    assert "acme/evilred" in out and "[31m" not in out  # the escape sequence is gone whole, BEL too
    assert "x.py  (read 1)" in out


def test_show_stats_refuses_leaf(tmp_path: Path, capsys) -> None:
    path = _session(tmp_path, "/p", "s1", "m", 0.5, "2026-03-01")
    code, out, err = run(capsys, "show", str(path), "--stats", "--leaf", "a1")
    assert code == ExitCode.BAD_INPUT and not out and "--leaf does not apply" in err


def test_stats_groups_by_model_project_and_day(tmp_path: Path, capsys) -> None:
    root = tmp_path / "root"
    _session(root, "/work/a", "s1", "m1", 1.0, "2026-03-01")
    _session(root, "/work/a", "s2", "m2", 2.0, "2026-03-03")
    _session(root, "/work/b", "s3", "m1", 4.0, "2026-03-03")
    (root / "junk.jsonl").write_text("not a session\n")
    code, out, err = run(capsys, "stats", "--root", str(root), "--all", "--by", "model", "--json")
    assert code == ExitCode.OK
    payload = json.loads(out)
    assert [(group["key"], group["sessions"], group["cost"]) for group in payload["groups"]] == [
        ("acme/m1", 2, 5.0),
        ("acme/m2", 1, 2.0),
    ]
    assert payload["total"]["cost"] == 7.0 and payload["sessions"] == 3 and payload["skipped"] == 1
    assert "skipped 1" in err
    assert [day["cost"] for day in payload["days"]] == [1.0, 0.0, 6.0]  # the gap day is there, at zero
    _code, out, _err = run(capsys, "stats", "--root", str(root), "--all", "--by", "project", "--json")
    groups = json.loads(out)["groups"]
    assert [(group["key"], group["cost"]) for group in groups] == [("/work/b", 4.0), ("/work/a", 3.0)]
    _code, out, _err = run(capsys, "stats", "--root", str(root), "--cwd", "/work/a", "--json")
    assert json.loads(out)["total"]["cost"] == 3.0  # the current project only, without --all
    _code, out, _err = run(capsys, "stats", "--root", str(root), "--all", "--since", "2026-03-02", "--json")
    assert json.loads(out)["total"]["cost"] == 6.0


def test_stats_text_report_fits_80_columns_and_has_bars(tmp_path: Path, capsys) -> None:
    root = tmp_path / "root"
    generate_corpus(root, 40, 4, seed=5, mean_bytes=3_000)
    _session(root, "/a/very/long/project/path/" + "deep/" * 30, "s1", "m" * 200, 1.0, "2026-03-01")
    for by in ("day", "model", "project"):
        code, out, _err = run(capsys, "stats", "--root", str(root), "--all", "--by", by)
        assert code == ExitCode.OK
        lines = out.splitlines()
        assert lines[0].startswith("41 sessions")
        assert any(line.startswith("cost/day ") and "█" in line for line in lines)
        assert any("█" in line for line in lines[4:])  # a bar per group
        assert max(cell_width(line) for line in lines) <= 80


def test_stats_bad_since_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    code, out, err = run(capsys, "stats", "--root", str(tmp_path), "--since", "yesterdayish")
    assert code == ExitCode.BAD_INPUT and not out
    assert err.count("\n") == 1 and "--since" in err


def test_stats_on_an_empty_root(tmp_path: Path, capsys) -> None:
    code, out, _err = run(capsys, "stats", "--root", str(tmp_path), "--all")
    assert code == ExitCode.OK
    assert out.splitlines() == ["0 sessions · 0 assistant messages", "tokens no tokens · $0", "no usage recorded"]
