"""`seance show S --stats [--json]` and `seance stats`, through the real CLI entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CORPUS, node_oracle_available, run_node

from seance.cli import main
from seance.cli.errors import ExitCode
from seance.core.generate import bucket_name, generate_corpus
from seance.core.resume import fork_into
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


def _stats_json(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> dict:
    code, out, _err = run(capsys, "stats", "--root", str(root), *args, "--json")
    assert code == ExitCode.OK
    return json.loads(out)


def _append_answer(path: Path, entry_id: str, stamp: str, cost: float) -> None:
    """The forked conversation goes on: one more paid answer at the end of the file."""
    parent = json.loads(path.read_text().splitlines()[-1])["id"]
    message = {"role": "assistant", "content": [], "provider": "acme", "model": "m", "usage": _usage(10, 1, cost)}
    line = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}
    with path.open("a") as handle:
        handle.write(json.dumps(line) + "\n")


@pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")
def test_stats_counts_the_history_pis_forks_copied_once(tmp_path: Path, capsys) -> None:
    """pi's `--fork` (forkFrom) and `/fork` (createBranchedSession) copy the source's entries,
    usage included, under a header naming it in `parentSession`: the copied answers were paid
    once and count once, whether the source is still there or not."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m1", 1.0, "2026-03-01")
    forked = Path(run_node("fork_of.mjs", "from", str(source), str(root / bucket_name("/work/forked")), "2"))
    leaf = json.loads(forked.read_text().splitlines()[-1])["id"]
    branched = Path(run_node("fork_of.mjs", "branch", str(forked), leaf, "4"))
    assert json.loads(branched.read_text().splitlines()[0])["parentSession"] == str(forked)
    for _warm in range(2):  # read, then from the cache
        payload = _stats_json(capsys, root, "--all")
        assert (payload["total"]["messages"], payload["total"]["cost"]) == (3, 7.0), payload["total"]
        day = time.strftime("%Y-%m-%d", time.localtime(1772359202))  # 2026-03-01T10:00:02Z, local
        assert payload["days"][0] == {"day": day, "cost": 1.0}
    by_project = _stats_json(capsys, root, "--all", "--by", "project")["groups"]
    assert [(group["key"], group["cost"]) for group in by_project] == [("/work/forked", 6.0), ("/work/a", 1.0)]
    source.unlink()  # the forks keep the history they copied: counted once, in the first fork
    payload = _stats_json(capsys, root, "--all")
    assert (payload["total"]["messages"], payload["total"]["cost"], payload["sessions"]) == (3, 7.0, 2)


def test_stats_counts_the_history_seances_forks_copied_once(tmp_path: Path, capsys) -> None:
    """Ctrl+F / `resolve --fork` (`fork_into`) into another project, then a fork of that fork:
    each counts only what it added; a project whose source is elsewhere counts the history
    it copied (there it is counted once)."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m1", 1.0, "2026-03-01")
    fork = fork_into(source, "/work/b", root)
    _append_answer(fork, "b1", "2026-03-02T10:00:00.000Z", 2.0)
    second = fork_into(fork, "/work/b", root)
    _append_answer(second, "c1", "2026-03-03T10:00:00.000Z", 4.0)
    payload = _stats_json(capsys, root, "--all")
    assert (payload["total"]["messages"], payload["total"]["cost"], payload["sessions"]) == (3, 7.0, 3)
    assert [day["cost"] for day in payload["days"]] == [1.0, 2.0, 4.0]
    by_project = _stats_json(capsys, root, "--all", "--by", "project")["groups"]
    assert [(group["key"], group["cost"]) for group in by_project] == [("/work/b", 6.0), ("/work/a", 1.0)]
    only_b = _stats_json(capsys, root, "--cwd", "/work/b")
    assert (only_b["total"]["messages"], only_b["total"]["cost"]) == (3, 7.0)  # /work/a is not counted here


def test_stats_resolves_a_parent_session_written_relative_to_the_forks_cwd(tmp_path: Path, capsys) -> None:
    """`pi --fork ../a/s1.jsonl` writes the path as typed, relative to where pi ran."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m1", 1.0, "2026-03-01")
    fork = fork_into(source, str(root), root)
    lines = fork.read_text().splitlines()
    header = json.loads(lines[0])
    header["parentSession"] = str(source.relative_to(root))
    fork.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    payload = _stats_json(capsys, root, "--all")
    assert (payload["total"]["messages"], payload["total"]["cost"]) == (1, 1.0)


@pytest.fixture
def los_angeles(monkeypatch):
    """Local time 8 hours behind UTC in January."""
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_stats_since_a_date_starts_at_its_local_midnight(tmp_path: Path, capsys, los_angeles) -> None:
    """Day rows are local days; `--since 2026-01-31` starts with that local day, not at UTC
    midnight (8 hours earlier here, which listed a 2026-01-30 row)."""
    root = tmp_path / "root"
    _session(root, "/work/a", "evening", "m1", 1.0, "2026-01-31")  # 10:00Z: 02:00 on the 31st, local
    path = _session(root, "/work/a", "before", "m1", 2.0, "2026-01-31")
    path.write_text(path.read_text().replace("2026-01-31T10:", "2026-01-31T02:"))  # 18:00 on the 30th, local
    payload = _stats_json(capsys, root, "--all", "--since", "2026-01-31")
    assert [(group["key"], group["cost"]) for group in payload["groups"]] == [("2026-01-31", 1.0)]
    assert payload["since"] == "2026-01-31T08:00:00.000Z"
    _code, out, _err = run(capsys, "stats", "--root", str(root), "--all", "--since", "2026-01-31")
    assert out.startswith("1 session since 2026-01-31 ·")


def test_stats_times_outside_a_sane_range_date_nothing(tmp_path: Path, capsys) -> None:
    """One answer stamped in the year 1000 (or 9999) by a broken clock or writer: its usage
    counts, undated, instead of stretching the day series over centuries (millions of rows)."""
    root = tmp_path / "root"
    _session(root, "/work/a", "real", "m1", 1.0, "2026-03-01")
    for year, cost in (("1000", 2.0), ("9999", 4.0)):
        path = _session(root, "/work/a", f"y{year}", "m1", cost, "2026-03-01")
        path.write_text(path.read_text().replace("2026-03-01T10:00:02.000Z", f"{year}-01-01T00:00:00.000Z"))
    payload = _stats_json(capsys, root, "--all")
    day = time.strftime("%Y-%m-%d", time.localtime(1772359202))  # 2026-03-01T10:00:02Z, local
    assert [(group["key"], group["cost"]) for group in payload["groups"]] == [("(no date)", 6.0), (day, 1.0)]
    assert payload["days"] == [{"day": day, "cost": 1.0}]
    assert payload["total"]["cost"] == 7.0
    code, out, _err = run(
        capsys, "show", str(root / bucket_name("/work/a") / "2026-03-01T10-00-00-000Z_y1000.jsonl"), "--stats", "--json"
    )
    assert code == ExitCode.OK
    assert (json.loads(out)["first"], json.loads(out)["last"]) == ("2026-03-01T10:00:01.000Z",) * 2


def test_token_totals_past_64_bits_print_as_json_not_a_traceback(tmp_path: Path, capsys) -> None:
    """Each token field is capped at 64 bits, but their sum was not: two capped fields (a
    writer's `1e20` and `1.7e308`) made `show --stats --json` and `stats --json` die in
    orjson ("Integer exceeds 64-bit range") with a traceback."""
    root = tmp_path / "root"
    path = _session(root, "/work/a", "big", "m1", 1.0, "2026-03-01")
    huge = {"input": 1, "output": 1e20, "cacheRead": 1.7e308, "cacheWrite": 2**70, "cost": {"total": 1.0}}
    path.write_text(path.read_text().replace(json.dumps(_usage(1000, 10, 1.0)), json.dumps(huge)))
    code, out, err = run(capsys, "show", str(path), "--stats", "--json")
    assert (code, err) == (ExitCode.OK, "")
    assert json.loads(out)["tokens"]["total"] == (1 << 63) - 1
    assert json.loads(out)["models"][0]["totalTokens"] == (1 << 63) - 1
    payload = _stats_json(capsys, root, "--all")
    assert payload["total"]["totalTokens"] == (1 << 63) - 1


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Tokyo"])
def test_stats_since_before_or_after_any_date_is_a_report_not_a_traceback(
    tmp_path: Path, capsys, monkeypatch, zone: str
) -> None:
    """`--since 999999999999999999999w` is before the year 1 (`time.localtime` overflowed
    writing the "since" line), and the first or last day there is may be no local date at
    all: the report says since 0001-01-01 or 9999-12-31, in text and JSON."""
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    root = tmp_path / "root"
    _session(root, "/work/a", "s1", "m1", 1.0, "2026-03-01")
    try:
        for since, shown, cost in (
            ("999999999999999999999w", "0001-01-01", 1.0),
            ("0001-01-01", "0001-01-01", 1.0),
            ("9999-12-31", "9999-12-31", 0.0),
        ):
            code, out, err = run(capsys, "stats", "--root", str(root), "--all", "--since", since)
            assert (code, err) == (ExitCode.OK, "")
            assert out.startswith(f"{1 if cost else 0} session{'' if cost else 's'} since {shown} ·"), out
            payload = _stats_json(capsys, root, "--all", "--since", since)
            assert payload["since"][:4] in ("0001", "9999") and payload["total"]["cost"] == cost
    finally:
        monkeypatch.undo()
        time.tzset()


def test_stats_counts_the_history_copied_through_a_deleted_fork_once(tmp_path: Path, capsys) -> None:
    """A paid 1; B, a fork of A, added 2; C, a fork of B, added 4; D, a fork of A, added 8.
    B is deleted: C's chain stops at the missing B, yet the answer it copied from A was paid
    once (it counted twice: C was not in A's family).  C joins A's family by that answer."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m", 1.0, "2026-03-01")
    middle = fork_into(source, "/work/a", root)
    _append_answer(middle, "b1", "2026-03-02T10:00:00.000Z", 2.0)
    grandchild = fork_into(middle, "/work/c", root)
    _append_answer(grandchild, "c1", "2026-03-03T10:00:00.000Z", 4.0)
    sibling = fork_into(source, "/work/a", root)
    _append_answer(sibling, "d1", "2026-03-04T10:00:00.000Z", 8.0)
    middle.unlink()
    for _warm in range(2):  # read, then the keys from the cache
        payload = _stats_json(capsys, root, "--all")
        assert (payload["total"]["messages"], payload["total"]["cost"]) == (4, 15.0), payload["total"]
    by_project = _stats_json(capsys, root, "--all", "--by", "project")["groups"]
    assert [(group["key"], group["cost"]) for group in by_project] == [("/work/a", 9.0), ("/work/c", 6.0)]
    source.unlink()  # C and D: loose both, the answer they share counted once
    payload = _stats_json(capsys, root, "--all")
    assert (payload["total"]["messages"], payload["total"]["cost"]) == (4, 15.0), payload["total"]


def test_stats_forks_naming_each_other_count_their_history_once(tmp_path: Path, capsys) -> None:
    """Two forks of a deleted session whose headers name each other (and one naming itself):
    no family heads them, no hang, and the history they share counts once."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m", 1.0, "2026-03-01")
    first, second, itself = (fork_into(source, "/work/a", root) for _ in range(3))
    for fork, parent in ((first, second), (second, first), (itself, itself)):
        lines = fork.read_text().splitlines()
        header = json.loads(lines[0])
        header["parentSession"] = str(parent)
        fork.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    _append_answer(second, "b1", "2026-03-02T10:00:00.000Z", 2.0)
    source.unlink()
    payload = _stats_json(capsys, root, "--all")
    assert (payload["total"]["messages"], payload["total"]["cost"]) == (2, 3.0), payload["total"]


def test_stats_through_a_symlinked_root_finds_the_parent_pi_named(tmp_path: Path, capsys) -> None:
    """`--root` given through a symlink: the files are found under the link, `parentSession`
    names the real path.  The same file is the same parent, even where its answer has no
    sane time to be looked up by (its copy counted twice)."""
    root = tmp_path / "root"
    link = tmp_path / "link"
    link.symlink_to(root)
    for cwd, stamp in (("/work/a", "2026-03-01T10:00:02.000Z"), ("/work/b", "1000-01-01T00:00:00.000Z")):
        source = _session(root, cwd, "s1", "m", 1.0, "2026-03-01")
        source.write_text(source.read_text().replace("2026-03-01T10:00:02.000Z", stamp))
        fork = fork_into(source, cwd, root)
        _append_answer(fork, "b1", "2026-03-02T10:00:00.000Z", 2.0)
        assert json.loads(fork.read_text().splitlines()[0])["parentSession"] == str(source)
        payload = _stats_json(capsys, link, "--cwd", cwd)
        assert (payload["total"]["messages"], payload["total"]["cost"]) == (2, 3.0), (cwd, payload["total"])


# -- after review: loose fork families joined the same way every run, by any copied answer --------


def _by_project(root: Path, seed: int) -> list:
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    code = "import sys; from seance.cli import main; sys.exit(main(sys.argv[1:]))"
    out = subprocess.run(
        [sys.executable, "-c", code, "stats", "--root", str(root), "--all", "--by", "project", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    payload = json.loads(out)
    return [(g["key"], g["cost"]) for g in payload["groups"]], payload["total"]["cost"]


def test_joined_loose_families_attribute_the_same_way_every_run(tmp_path: Path) -> None:
    """X paid 1 (cwd /work/x).  B forks X, C forks B (cwd /work/c, adds 4); D forks X
    (cwd /work/d, adds 8).  X and B are deleted: C is loose under 'B', D loose under 'X',
    both copied X's answer.  Which project the shared answer is billed to must not change
    from one run to the next."""
    root = tmp_path / "root"
    source = _session(root, "/work/x", "s1", "m", 1.0, "2026-03-01")
    middle = fork_into(source, "/work/x", root)
    grandchild = fork_into(middle, "/work/c", root)
    _append_answer(grandchild, "c1", "2026-03-03T10:00:00.000Z", 4.0)
    sibling = fork_into(source, "/work/d", root)
    _append_answer(sibling, "d1", "2026-03-04T10:00:00.000Z", 8.0)
    middle.unlink()
    source.unlink()
    results = {seed: _by_project(root, seed) for seed in range(8)}
    assert all(total == 13.0 for _, total in results.values()), results
    assert len({tuple(groups) for groups, _ in results.values()}) == 1, results


def _stats_total(root: Path) -> dict:
    return json.loads(_by_project_raw(root))["total"]


def _by_project_raw(root: Path, *extra: str) -> str:
    code = "import sys; from seance.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, "stats", "--root", str(root), "--all", "--json", *extra],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_a_sibling_fork_that_copied_no_answer_does_not_hide_the_copied_history(tmp_path: Path) -> None:
    """A paid 1; B, a fork of A, added 2; C, a fork of B, added 8.  F is a /fork of B made at
    B's first message (pi copies nothing before it), earlier than C, so its file name sorts
    first; it added 4.  B is deleted.  C copied A's answer: it must count once (1+2+8+4 = 15),
    as it does without F (the case 9b74b71 fixed)."""
    root = tmp_path / "root"
    source = _session(root, "/work/a", "s1", "m", 1.0, "2026-03-01")
    middle = fork_into(source, "/work/a", root)
    _append_answer(middle, "b1", "2026-03-02T10:00:00.000Z", 2.0)
    grandchild = fork_into(middle, "/work/c", root)
    _append_answer(grandchild, "c1", "2026-03-03T10:00:00.000Z", 8.0)
    without_f = _stats_total(root)
    assert (without_f["messages"], without_f["cost"]) == (3, 11.0), without_f
    early = root / grandchild.parent.name / "2026-03-02T11-00-00-000Z_f.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "f",
        "timestamp": "2026-03-02T11:00:00.000Z",
        "cwd": "/work/c",
        "parentSession": str(middle),
    }
    early.write_text(
        json.dumps(header)
        + "\n"
        + json.dumps(
            {
                "type": "message",
                "id": "fu",
                "parentId": None,
                "timestamp": "2026-03-02T11:00:01.000Z",
                "message": {"role": "user", "content": "again"},
            }
        )
        + "\n"
    )
    _append_answer(early, "f1", "2026-03-02T11:00:02.000Z", 4.0)
    assert early.name < grandchild.name
    middle.unlink()
    payload = _stats_total(root)
    assert (payload["messages"], payload["cost"]) == (4, 15.0), payload
