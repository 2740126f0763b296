"""core/stats.py and core/statscache.py: one session's totals, many sessions grouped, the cache.

The oracle is pi itself: `tests/oracle/stats_of.mjs` opens each file with pi 0.73.1's
`SessionManager` and sums usage over `getEntries()` exactly as pi's footer does; seance's
totals must equal it (cost to the last bit: the same additions in the same order).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from pathlib import Path

import orjson
import pytest
from conftest import CORPUS, corpus_files, node_oracle_available, run_node

from seance.core import statscache
from seance.core.discovery import FileInfo
from seance.core.resume import fork_into
from seance.core.session import load_session
from seance.core.stats import (
    UNKNOWN_DAY,
    SessionStats,
    aggregate,
    count_copies_once,
    local_day,
    parse_since,
    session_stats,
)
from seance.core.statscache import DB_NAME, StatsCache, collect_stats, message_keys
from seance.core.statsformat import compact_lines, detail_lines

# pi's SessionManager reads pi's own files (v1 and v3); oh-my-pi's title slot it cannot.
PI_READABLE = [path for path in corpus_files() if "/omp/" not in str(path)]


def _info(path: Path) -> FileInfo:
    stat = path.stat()
    return FileInfo(str(path), stat.st_size, stat.st_mtime_ns)


def _write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _header(session_id: str = "s1", cwd: str = "/work/p") -> dict:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": cwd}


def _usage(tokens_in: int, tokens_out: int, cost: float, read: int = 0, write: int = 0) -> dict:
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": read,
        "cacheWrite": write,
        "totalTokens": tokens_in + tokens_out + read + write,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


def _msg(entry_id: str, parent: str | None, stamp: str, message: dict) -> dict:
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}


def _assistant(model: str, usage: dict, calls: list[tuple[str, dict]] = (), provider: str = "anthropic") -> dict:
    content = [{"type": "text", "text": "ok"}] + [
        {"type": "toolCall", "id": f"c{index}", "name": name, "arguments": arguments}
        for index, (name, arguments) in enumerate(calls)
    ]
    return {"role": "assistant", "content": content, "provider": provider, "model": model, "usage": usage}


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def _branched_session(path: Path) -> Path:
    """Two branches from the first answer, two models, tool calls naming files, a compaction."""
    return _write(
        path,
        [
            _header(),
            _msg("u1", None, "2026-03-01T10:00:01.000Z", _user("go")),
            _msg(
                "a1",
                "u1",
                "2026-03-01T10:00:05.000Z",
                _assistant(
                    "claude-sonnet-4-5",
                    _usage(100, 20, 0.5, read=1000, write=50),
                    [("read", {"path": "src/a.py"}), ("edit", {"path": "/abs/b.py", "oldText": "x", "newText": "y"})],
                ),
            ),
            _msg("u2", "a1", "2026-03-01T11:30:00.000Z", _user("branch one")),
            _msg(
                "a2",
                "u2",
                "2026-03-01T11:30:09.000Z",
                _assistant("claude-sonnet-4-5", _usage(10, 5, 0.25), [("bash", {"command": "ls"})]),
            ),
            {
                "type": "compaction",
                "id": "c1",
                "parentId": "a2",
                "timestamp": "2026-03-01T11:31:00.000Z",
                "summary": "s",
                "firstKeptEntryId": "a2",
                "tokensBefore": 5,
            },
            _msg("u3", "a1", "2026-03-02T09:00:00.000Z", _user("branch two")),
            _msg(
                "a3",
                "u3",
                "2026-03-02T09:00:10.000Z",
                _assistant(
                    "gpt-5",
                    _usage(7, 3, 0.125),
                    [
                        ("write", {"path": "src/a.py", "content": "z"}),
                        ("batch_read", {"o": [{"o": "read", "p": "README.md"}, {"o": "read", "p": "src/a.py"}]}),
                        ("ls", {"path": "src"}),
                    ],
                    provider="openai",
                ),
            ),
            # written long after the last message: not part of the duration
            {"type": "custom", "id": "x1", "parentId": "a3", "timestamp": "2026-09-01T00:00:00.000Z", "data": {}},
        ],
    )


# -- one session ---------------------------------------------------------------------------------


def test_one_session_counts_every_branch_model_tool_and_file(tmp_path: Path) -> None:
    stats = session_stats(load_session(_branched_session(tmp_path / "s.jsonl")))
    assert (stats.usage.input, stats.usage.output, stats.usage.cache_read, stats.usage.cache_write) == (
        117,
        28,
        1000,
        50,
    )
    assert stats.usage.tokens == 1195
    assert stats.usage.cost == 0.875
    assert {name: usage.messages for name, usage in stats.models.items()} == {
        "anthropic/claude-sonnet-4-5": 2,
        "openai/gpt-5": 1,
    }
    assert stats.models["openai/gpt-5"].cost == 0.125
    assert stats.tools == {"read": 1, "edit": 1, "bash": 1, "write": 1, "batch_read": 1, "ls": 1}
    assert stats.files == {
        "/work/p/src/a.py": {"read": 2, "write": 1},  # relative paths join the session's cwd
        "/abs/b.py": {"edit": 1},
        "/work/p/README.md": {"read": 1},
    }  # `ls` names a directory: not a file touched
    assert stats.roles == {"user": 3, "assistant": 3}
    assert (stats.leaves, stats.branch_points, stats.compactions) == (2, 1, 1)
    assert stats.duration_ms == (23 * 3600 + 9) * 1000  # 10:00:01 → next day 09:00:10
    payload = stats.to_json()
    assert payload["scope"] == "tree"
    assert payload["tokens"] == {"input": 117, "output": 28, "cacheRead": 1000, "cacheWrite": 50, "total": 1195}
    assert payload["models"][0]["model"] == "anthropic/claude-sonnet-4-5"
    assert payload["messages"] == {"total": 6, "assistant": 3, "user": 3}
    assert SessionStats.from_storage(orjson.loads(orjson.dumps(stats.to_storage()))) == stats


def test_omp_model_usage_entries_count_tokens_and_cost_but_no_message(tmp_path: Path) -> None:
    """oh-my-pi records a model call outside the conversation (a prediction, a classifier,
    a title) as a `model_usage` entry ({purpose, provider, model, usage}); its own usage
    totals count it.  So do seance's: tokens and cost, under its model and hour, no message;
    a fork copies it with the rest and counts it once."""
    background = {
        "type": "model_usage",
        "id": "b1",
        "parentId": "a1",
        "timestamp": "2026-03-01T12:00:00.000Z",
        "purpose": "composer-prediction",
        "role": "smol",
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-haiku-4-5",
        "usage": _usage(40, 4, 0.0625),
        "stopReason": "stop",
    }
    answer = _assistant("claude-sonnet-4-5", _usage(100, 20, 0.5))
    lines = [_header(), _msg("u1", None, "2026-03-01T10:00:01.000Z", _user("go"))]
    lines += [_msg("a1", "u1", "2026-03-01T10:00:05.000Z", answer), background]
    path = _write(tmp_path / "root" / "s.jsonl", lines)
    stats = session_stats(load_session(path))
    assert (stats.usage.messages, stats.usage.input, stats.usage.output, stats.usage.cost) == (1, 140, 24, 0.5625)
    haiku = stats.models["anthropic/claude-haiku-4-5"]
    assert (haiku.messages, haiku.input, haiku.cost) == (0, 40, 0.0625)
    assert stats.hours[("2026-03-01T12", "anthropic/claude-haiku-4-5")].cost == 0.0625
    fork = fork_into(path, "/work/p", tmp_path / "root")
    found = [stats, session_stats(load_session(fork))]

    def keys_of(wanted: list[str]) -> dict[str, bytes]:
        return {each: session_stats(load_session(each)).keys for each in wanted}

    assert aggregate(count_copies_once(found, found, keys_of), "day").total.cost == 0.5625


def test_an_undated_model_usage_counts_in_stats_totals_as_in_show(tmp_path: Path) -> None:
    """A `model_usage` entry without a readable timestamp: `show --stats` counted it and
    `seance stats` dropped it (undated usage needed an assistant message).  Now it counts
    under `(no date)`, and the model it alone used reads "no messages", not "×0"."""
    background = {"type": "model_usage", "id": "b1", "parentId": "a1", "provider": "anthropic"}
    background |= {"model": "claude-haiku-4-5", "usage": _usage(40, 4, 0.0625)}
    answer = _assistant("claude-sonnet-4-5", _usage(100, 20, 0.5))
    lines = [_header(), _msg("u1", None, "2026-03-01T10:00:01.000Z", _user("go"))]
    lines += [_msg("a1", "u1", "2026-03-01T10:00:05.000Z", answer), background]
    stats = session_stats(load_session(_write(tmp_path / "s.jsonl", lines)))
    assert stats.usage.cost == 0.5625
    for by in ("day", "project", "model"):
        report = aggregate([stats], by)
        assert (report.total.cost, report.total.input, report.total.messages) == (0.5625, 140, 1), by
    undated = {group.key: group for group in aggregate([stats], "day").groups}[UNKNOWN_DAY]
    assert (undated.sessions, undated.usage.messages, undated.usage.input, undated.usage.cost) == (1, 0, 40, 0.0625)
    shown = "\n".join(detail_lines(stats))
    assert "×0" not in shown
    assert "anthropic/claude-haiku-4-5 (no messages)" in compact_lines(stats)[1]
    assert any(line.startswith("  anthropic/claude-haiku-4-5  no messages  ") for line in detail_lines(stats))


def test_hostile_usage_values_never_raise_and_count_nothing(tmp_path: Path) -> None:
    bad_usages = [
        None,
        "lots",
        {"input": "12", "output": True, "cacheRead": -5, "cacheWrite": [1], "cost": {"total": "1"}},
        {"input": None, "cost": {"total": None}},
        {"input": 3, "output": 4.0, "cost": 7},
    ]
    lines = [_header()] + [
        _msg(
            f"a{index}",
            None if index == 0 else f"a{index - 1}",
            "2026-03-01T10:00:00.000Z",
            {
                "role": "assistant",
                "content": "not a list",
                "usage": usage,
                "model": ["not", "a", "string"],
            },
        )
        for index, usage in enumerate(bad_usages)
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    stats = session_stats(load_session(path))
    assert (stats.usage.messages, stats.usage.input, stats.usage.output, stats.usage.cost) == (5, 3, 4, 0.0)
    assert list(stats.models) == ["(unknown model)"]


def test_omp_and_v1_corpus_files_have_stats(corpus: Path) -> None:
    omp = session_stats(load_session(corpus / "omp" / "large-session.jsonl"))
    assert omp.usage.messages == omp.roles["assistant"] > 0 and omp.usage.cost > 0
    assert omp.tools["edit"] > 0 and omp.files
    # oh-my-pi's session_exit entry months later does not stretch the duration
    assert omp.duration_ms < 30 * 86_400_000
    v1 = session_stats(load_session(corpus / "pi" / "session.jsonl"))
    assert v1.leaves == 1 and v1.compactions == 1


@pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")
@pytest.mark.skipif(not PI_READABLE, reason="shared corpus not present")
def test_totals_equal_pis_footer_sum_on_every_pi_corpus_file(tmp_path: Path) -> None:
    copies = []
    for index, path in enumerate(PI_READABLE):  # pi migrates v1 files in place: give it copies
        copy = tmp_path / f"{index}.jsonl"
        shutil.copyfile(path, copy)
        copies.append(copy)
    expected = json.loads(run_node("stats_of.mjs", *map(str, copies)))
    assert len(expected) == len(PI_READABLE) > 10
    for original, pi in zip(PI_READABLE, expected, strict=True):
        stats = session_stats(load_session(original))
        name = original.relative_to(CORPUS)
        assert stats.to_json()["tokens"] == pi["tokens"], name
        assert stats.usage.cost == pi["cost"], name  # the same sum, in the same order
        assert stats.roles == pi["roles"], name
        assert {model: usage.messages for model, usage in stats.models.items()} == pi["models"], name
        assert stats.tool_calls == pi["toolCalls"], name
        assert stats.compactions == pi["compactions"], name
        assert stats.leaves == pi["leaves"], name


@pytest.mark.skipif(not node_oracle_available(), reason="node or tests/oracle/node_modules missing")
def test_totals_equal_pis_on_sessions_pi_wrote_with_branches(pi_oracle: Path) -> None:
    files = sorted((pi_oracle / "sessions").rglob("*.jsonl"))
    expected = {item["path"]: item for item in json.loads(run_node("stats_of.mjs", *map(str, files)))}
    assert any(item["leaves"] > 1 for item in expected.values())  # the oracle's files branch
    for path in files:
        stats = session_stats(load_session(path))
        pi = expected[str(path)]
        assert stats.to_json()["tokens"] == pi["tokens"]
        assert stats.usage.cost == pi["cost"]
        assert (stats.leaves, stats.compactions, stats.roles) == (pi["leaves"], pi["compactions"], pi["roles"])


# -- many sessions -------------------------------------------------------------------------------


def test_aggregate_by_model_project_and_day_and_since(tmp_path: Path) -> None:
    one = session_stats(load_session(_branched_session(tmp_path / "a.jsonl")))
    other = session_stats(
        load_session(
            _write(
                tmp_path / "b.jsonl",
                [
                    _header("s2", "/work/q"),
                    _msg(
                        "a", None, "2026-03-05T12:00:00.000Z", _assistant("gpt-5", _usage(1, 1, 1.0), provider="openai")
                    ),
                ],
            )
        )
    )
    by_model = aggregate([one, other], "model")
    assert [(group.key, group.sessions, group.usage.messages, group.usage.cost) for group in by_model.groups] == [
        ("openai/gpt-5", 2, 2, 1.125),
        ("anthropic/claude-sonnet-4-5", 1, 2, 0.75),
    ]
    assert by_model.total.cost == 1.875 and by_model.sessions == 2
    by_project = aggregate([one, other], "project")
    assert [(group.key, group.usage.cost) for group in by_project.groups] == [("/work/q", 1.0), ("/work/p", 0.875)]
    by_day = aggregate([one, other], "day")
    days = [local_day(hour) for hour in ("2026-03-01T10", "2026-03-01T11", "2026-03-02T09", "2026-03-05T12")]
    assert [group.key for group in by_day.groups] == sorted(set(days))
    assert sum(group.usage.cost for group in by_day.groups) == 1.875
    since = aggregate([one, other], "model", since_ms=parse_since("2026-03-02T00:00:00Z", 0))
    assert since.total.cost == 1.125 and since.sessions == 2  # the first day of `one` is cut
    later = aggregate([one, other], "model", since_ms=parse_since("2026-03-03T00:00:00Z", 0))
    assert later.total.cost == 1.0 and later.sessions == 1


def test_parse_since() -> None:
    now = 10 * 86_400_000
    assert parse_since("30d", now * 4) == now * 4 - 30 * 86_400_000
    assert parse_since("12h", now) == now - 12 * 3_600_000
    assert parse_since("2w", now) == now - 14 * 86_400_000
    for bad in ("", "soon", "30", "d", "-3d"):
        with pytest.raises(ValueError, match="--since"):
            parse_since(bad, now)


def test_parse_since_a_date_is_its_local_midnight(monkeypatch) -> None:
    """Day rows are local days, so a date means the start of that local day."""
    for zone, midnight in (("America/Los_Angeles", "2026-01-31T08:00:00Z"), ("Asia/Tokyo", "2026-01-30T15:00:00Z")):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        try:
            assert parse_since("2026-01-31", 0) == parse_since(midnight, 0)
        finally:
            monkeypatch.undo()
            time.tzset()
    with pytest.raises(ValueError, match="--since"):
        parse_since("2026-02-30", 0)


# -- the cache -----------------------------------------------------------------------------------


def test_cache_warm_reads_nothing_and_sees_a_changed_file(tmp_path: Path) -> None:
    root = tmp_path / "root"
    paths = [_branched_session(root / f"{index}.jsonl") for index in range(3)]
    (root / "junk.jsonl").write_text("not json\n")
    infos = [_info(path) for path in [*paths, root / "junk.jsonl"]]
    cache = StatsCache(tmp_path / "cache")
    cold = collect_stats(infos, cache)
    assert cold.read == 4 and len(cold.stats) == 3 and [path for path, _ in cold.skipped] == [str(root / "junk.jsonl")]
    warm = collect_stats(infos, cache)
    assert warm.read == 0 and warm.stats == cold.stats and warm.skipped == cold.skipped
    with paths[0].open("a") as handle:  # an agent appends
        handle.write(
            json.dumps(_msg("late", "x1", "2026-09-02T00:00:00.000Z", _assistant("m", _usage(1, 1, 2.0)))) + "\n"
        )
    infos[0] = _info(paths[0])
    changed = collect_stats(infos, cache)
    assert changed.read == 1 and changed.stats[0].usage.cost == 2.875
    cache.close()
    # a new process (a new cache object) finds them too
    again = StatsCache(tmp_path / "cache")
    assert collect_stats(infos, again).read == 0
    again.close()


def test_cache_damaged_row_or_other_version_is_recomputed(tmp_path: Path) -> None:
    infos = [_info(_branched_session(tmp_path / "root" / "a.jsonl"))]
    cache = StatsCache(tmp_path / "cache")
    expected = collect_stats(infos, cache).stats
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute("UPDATE stats SET data = replace(data, '0.5', '9.5')")  # a damaged page
    db.commit()
    db.close()
    cache = StatsCache(tmp_path / "cache")
    again = collect_stats(infos, cache)
    assert again.read == 1 and again.stats == expected
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute("UPDATE stats SET data = CAST(replace(CAST(data AS TEXT), '0.5', '9.5') AS BLOB)")  # still a blob
    db.commit()
    db.close()
    cache = StatsCache(tmp_path / "cache")
    assert collect_stats(infos, cache).stats == expected  # the checksum catches it
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute("PRAGMA user_version = 999")
    db.commit()
    db.close()
    cache = StatsCache(tmp_path / "cache")
    assert collect_stats(infos, cache).read == 1
    cache.close()


def test_cache_that_is_not_sqlite_is_replaced_and_an_unwritable_one_is_skipped(tmp_path: Path) -> None:
    infos = [_info(_branched_session(tmp_path / "root" / "a.jsonl"))]
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / DB_NAME).write_bytes(b"garbage, not a database" * 100)
    cache = StatsCache(tmp_path / "cache")
    assert cache.problem and "started again" in cache.problem
    assert len(collect_stats(infos, cache).stats) == 1
    cache.close()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache dir should be")
    unavailable = StatsCache(blocked)
    assert unavailable.problem and "without it" in unavailable.problem
    assert len(collect_stats(infos, unavailable).stats) == 1


def test_cache_damaged_after_it_opened_is_started_again_once(tmp_path: Path) -> None:
    """A page damaged under an intact first page: the file opened, but every read or write
    of the table failed, so every later run read every file again and warned "stats cache
    not written (database disk image is malformed)", never healing.  Now the damaged file is
    started again, once, and the next run reads nothing."""
    infos = [_info(_branched_session(tmp_path / "root" / f"{index}.jsonl")) for index in range(20)]
    cache = StatsCache(tmp_path / "cache")
    collect_stats(infos, cache)
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    (page_size,) = db.execute("PRAGMA page_size").fetchone()
    (root_page,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'stats'").fetchone()
    db.close()
    with (tmp_path / "cache" / DB_NAME).open("r+b") as handle:  # the table's root page, garbled
        handle.seek((root_page - 1) * page_size)
        handle.write(b"\xff" * page_size)
    runs = []
    for _ in range(2):
        cache = StatsCache(tmp_path / "cache")
        collected = collect_stats(infos, cache)
        runs.append((collected.read, len(collected.stats), cache.problem))
        cache.close()
    assert runs[0][:2] == (20, 20) and runs[0][2] and "started again" in runs[0][2]
    assert runs[1] == (0, 20, None)


def test_cache_locked_by_another_run_is_left_whole(tmp_path: Path, monkeypatch) -> None:
    """Another `seance stats` writing (its lock held past the busy timeout): this run goes
    without the cache and says so.  It deleted the other run's file instead, calling a
    locked file "unreadable", and every row that run had stored was lost."""
    infos = [_info(_branched_session(tmp_path / "root" / f"{index}.jsonl")) for index in range(3)]
    cache = StatsCache(tmp_path / "cache")
    collect_stats(infos, cache)
    cache.close()
    monkeypatch.setattr(statscache, "BUSY_TIMEOUT", 0.05)
    holder = sqlite3.connect(tmp_path / "cache" / DB_NAME, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        locked = StatsCache(tmp_path / "cache")
        assert locked.problem and "locked" in locked.problem and "without it" in locked.problem
        assert len(collect_stats(infos, locked).stats) == 3
        locked.close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    cache = StatsCache(tmp_path / "cache")
    assert collect_stats(infos, cache).read == 0 and cache.problem is None  # the rows are all there
    cache.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need fork")
def test_workers_give_the_same_answer_as_one_process(tmp_path: Path) -> None:
    from seance.core.generate import generate_corpus

    corpus = generate_corpus(tmp_path / "gen", 300, 6, seed=3, mean_bytes=4_000)
    infos = [_info(Path(path)) for path in sorted(map(str, corpus.files))]
    serial = collect_stats(infos, None, workers=1)
    forked = collect_stats(infos, None, workers=2)
    assert forked.stats == serial.stats and len(serial.stats) == 300


def test_cache_shared_by_roots_reads_and_prunes_only_each_roots_rows(tmp_path: Path) -> None:
    """`sessions` and `sessions2` in one stats cache: a run on one neither reads nor forgets
    the other's rows (a file gone from its own root is forgotten)."""
    roots = [tmp_path / "sessions", tmp_path / "sessions2"]
    infos = {root: [_info(_branched_session(root / f"{index}.jsonl")) for index in range(3)] for root in roots}
    for root in roots:
        cache = StatsCache(tmp_path / "cache", roots=[str(root)])
        assert collect_stats(infos[root], cache).read == 3
        assert cache.lookup(infos[roots[0]] + infos[roots[1]]).keys() == {info.path for info in infos[root]}
        cache.prune(infos[root][1:])  # the first is gone from this root
        cache.close()
    for root in roots:
        cache = StatsCache(tmp_path / "cache", roots=[str(root)])
        again = collect_stats(infos[root], cache)
        assert again.read == 1, "the other root's run kept this root's rows; the pruned one is read again"
        cache.close()
    assert len(StatsCache(tmp_path / "cache").lookup(infos[roots[0]] + infos[roots[1]])) == 6


def test_cache_keeps_each_sessions_message_keys_and_rereads_damaged_ones(tmp_path: Path) -> None:
    """The fingerprints forks are matched against: stored with their own check, read back only
    when asked for; a damaged row is read from the file again."""
    path = _branched_session(tmp_path / "root" / "a.jsonl")
    infos = [_info(path)]
    expected = session_stats(load_session(path)).keys
    assert len(expected) == 3 * 8  # three assistant messages
    cache = StatsCache(tmp_path / "cache")
    collect_stats(infos, cache)
    assert cache.keys(infos) == {str(path): expected}
    cache.close()
    db = sqlite3.connect(tmp_path / "cache" / DB_NAME)
    db.execute("UPDATE stats SET keys = substr(keys, 1, length(keys) - 8)")  # a damaged page: a key short
    db.commit()
    db.close()
    cache = StatsCache(tmp_path / "cache")
    assert cache.keys(infos) == {}
    assert message_keys([str(path)], infos, cache) == {str(path): expected}
    assert message_keys([str(path)], infos, None) == {str(path): expected}
    cache.close()


def test_a_forks_copies_are_matched_reading_only_the_keys_needed(tmp_path: Path) -> None:
    """Forks are matched to what they copied without reading every session's keys: none
    without a fork, only the source's for a fork whose source is there, and for a fork whose
    parent is gone only those of the sessions with usage in the hour of its first answer."""
    root = tmp_path / "root"
    paths = []
    for day in range(1, 21):  # one session a day, one paid answer each
        stamp = f"2026-03-{day:02d}T10:00:02.000Z"
        answer = _msg("a1", "u1", stamp, _assistant("m", _usage(10, 1, 1.0)))
        paths.append(_write(root / f"s{day}.jsonl", [_header(f"s{day}"), _msg("u1", None, stamp, _user("hi")), answer]))
    source = paths[4]
    middle = fork_into(source, "/work/p", root)
    fork = fork_into(middle, "/work/p", root)
    asked: list[list[str]] = []

    def keys_of(wanted: list[str]) -> dict[str, bytes]:
        asked.append(sorted(wanted))
        return {path: session_stats(load_session(path)).keys for path in wanted}

    def total_cost(paths: list[Path]) -> float:
        found = [session_stats(load_session(path)) for path in paths]
        return aggregate(count_copies_once(found, found, keys_of), "day").total.cost

    assert (total_cost(paths), asked) == (20.0, [])
    assert (total_cost([*paths, middle, fork]), asked) == (20.0, [[str(source)]])
    middle.unlink()
    asked.clear()
    assert (total_cost([*paths, fork]), asked) == (20.0, [[str(source)]])


def test_an_omp_fork_names_its_source_by_id_and_counts_only_what_it_added(tmp_path: Path, monkeypatch) -> None:
    """oh-my-pi's forks (`omp --fork`, its /fork) copy the source's entries under a header whose
    `parentSession` is the source's id, not its path.  Found by that id, the fork's family is
    its source's: no guess from what it copied (which stops past `LOOSE_JOIN_MAX` forks whose
    source is not found, leaving their copies counted twice), only the source's keys read."""
    import seance.core.stats as stats_module

    monkeypatch.setattr(stats_module, "LOOSE_JOIN_MAX", 0)
    root = tmp_path / "root"
    answer = _msg("a1", "u1", "2026-03-01T10:00:02.000Z", _assistant("m", _usage(10, 1, 1.0)))
    asked = [_msg("u1", None, "2026-03-01T10:00:01.000Z", _user("hi")), answer]
    source = _write(root / "-p" / "source.jsonl", [_header("0193-source"), *asked])
    added = _msg("a2", "a1", "2026-03-02T10:00:02.000Z", _assistant("m", _usage(10, 1, 0.5)))
    fork_header = {**_header("0193-fork"), "parentSession": "0193-source"}
    fork = _write(root / "-p" / "fork.jsonl", [fork_header, *asked, added])
    other = _write(root / "-p" / "other.jsonl", [_header("0193-other"), *asked[:1]])
    found = [session_stats(load_session(path)) for path in (source, fork, other)]
    wanted: list[list[str]] = []

    def keys_of(paths: list[str]) -> dict[str, bytes]:
        wanted.append(sorted(paths))
        return {path: session_stats(load_session(path)).keys for path in paths}

    assert aggregate(count_copies_once(found, found, keys_of), "day").total.cost == 1.5
    assert wanted == [[str(source)]]
