"""`!word` leaves out every session that says the word anywhere the index reads, not only in
its title (found by the sweep: `ls -q 'auth !wip'`, the README's example, listed sessions
whose later messages said "wip", while `ls -q wip` found them).  The CLI's rows, its JSON,
`--quick` (its 4 KB prefixes), `clean` and the picker give the same answer."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from ui_harness import SIZE, picker_app, searched, titles
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.cli import main

SPECS = [
    Spec("s-later", PROJECT, ("auth flow", "wip: the token part"), timedelta(minutes=5)),
    Spec("s-clean", PROJECT, ("auth flow done right",), timedelta(minutes=10)),
    Spec("s-title", PROJECT, ("auth wip in the title",), timedelta(minutes=20)),
    Spec("s-other", PROJECT, ("unrelated words",), timedelta(minutes=30)),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path, SPECS)


def _ids(capsys: pytest.CaptureFixture[str], root: Path, query: str, *extra: str) -> list[str]:
    code = main(["ls", "--root", str(root), "--all", "--json", "--query", query, *extra])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return sorted(row["id"] for row in json.loads(out or "[]"))


@pytest.mark.parametrize(
    ("query", "expected"),
    [("auth !wip", ["s-clean"]), ("!wip", ["s-clean", "s-other"]), ('auth !"the token"', ["s-clean", "s-title"])],
)
def test_a_negated_word_leaves_out_sessions_that_say_it_past_their_title(
    root: Path, capsys: pytest.CaptureFixture[str], query: str, expected: list[str]
) -> None:
    assert _ids(capsys, root, "wip") == ["s-later", "s-title"]  # (found in the text)
    assert _ids(capsys, root, query) == expected
    assert _ids(capsys, root, query, "--sort", "recent") == expected
    assert _ids(capsys, root, query, "--quick") == expected  # (the prefixes hold the text here)
    code = main(["ls", "--root", str(root), "--all", "--query", query])
    rows = capsys.readouterr().out.splitlines()
    assert code == 0 and len(rows) == len(expected)


def test_clean_never_selects_a_session_that_says_the_negated_word(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    code = main(["clean", "--root", str(root), "--all", "--query", "auth !wip", "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert sorted(row["id"] for row in json.loads(out)["sessions"]) == ["s-clean"]
    assert all(session_path(root, spec).exists() for spec in SPECS)  # (a dry run)


async def test_the_picker_leaves_them_out_too(root: Path) -> None:
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await searched(pilot, "auth !wip")
        assert titles(pilot) == ["auth flow done right"]
        await searched(pilot, "auth")
        assert len(titles(pilot)) == 3


def test_a_regex_reads_the_title_alike_in_every_listing(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`re:` reads the id, name and first message (the index has no regex): `--quick` read its
    4 KB prefixes' text too, so a quick listing (the picker's first paint) showed rows the exact
    one then took away (found by the sweep)."""
    for extra in ([], ["--quick"]):
        assert _ids(capsys, root, "re:tok.n", *extra) == []  # (said in s-later's second message)
        assert _ids(capsys, root, "re:fl[aeo]w$", *extra) == ["s-later"]
        assert _ids(capsys, root, "re:^auth", *extra) == ["s-clean", "s-later", "s-title"]
