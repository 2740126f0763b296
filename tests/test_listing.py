"""List orders shared by `seance ls` and the picker: pi's threaded fork tree, ages, paths."""

from __future__ import annotations

from seance.core.listing import threaded
from seance.core.model import SessionSummary
from seance.core.text import home_short, relative_age


def _summary(name: str, modified_ms: float, parent: str | None = None) -> SessionSummary:
    return SessionSummary(
        path=f"/s/{name}.jsonl",
        id=f"id-{name}",
        cwd="/p",
        name=None,
        parent_session=parent,
        created=None,
        modified="",
        modified_ms=modified_ms,
        message_count=1,
        first_message=name,
    )


def test_forks_under_parents_by_path_or_id_newest_first() -> None:
    rows = threaded(
        [
            _summary("root", 10),
            _summary("fork-old", 20, "/s/root.jsonl"),
            _summary("fork-new", 30, "id-root"),  # oh-my-pi writes the parent's id
            _summary("grandchild", 40, "/s/fork-old.jsonl"),
            _summary("other", 5),
            _summary("orphan", 50, "/s/deleted.jsonl"),
        ]
    )
    assert [(r.summary.first_message, r.depth, r.prefix) for r in rows] == [
        ("orphan", 0, ""),
        ("root", 0, ""),
        ("fork-new", 1, "├─ "),
        ("fork-old", 1, "└─ "),
        ("grandchild", 2, "   └─ "),
        ("other", 0, ""),
    ]


def test_parent_cycles_are_cut_and_long_chains_need_no_recursion() -> None:
    cycle = [_summary("a", 1, "/s/b.jsonl"), _summary("b", 2, "/s/a.jsonl")]
    assert sorted(r.summary.first_message for r in threaded(cycle)) == ["a", "b"]
    chain = [_summary("n0", 0)] + [_summary(f"n{i}", i, f"/s/n{i - 1}.jsonl") for i in range(1, 5000)]
    rows = threaded(chain)
    assert len(rows) == 5000 and rows[-1].depth == 4999


def test_relative_age_and_home_short(monkeypatch) -> None:
    now = 1_000_000_000_000.0
    assert [relative_age(now - m * 60_000, now) for m in (0, 59, 60, 1439, 1440, 10080, 43200, 525600)] == [
        "now",
        "59m",
        "1h",
        "23h",
        "1d",
        "1w",
        "1mo",
        "1y",
    ]
    assert relative_age(now + 5_000, now) == "now"  # a clock a bit ahead is not negative
    monkeypatch.setenv("HOME", "/home/me")
    assert home_short("/home/me/p") == "~/p" and home_short("/home/meow") == "/home/meow"
