"""A user's `re:` pattern always stops (`core.search.userregex`): every string one query
scans shares one budget, and `seance ls --query` says so in one line and exits non-zero;
the syntax and messages are `re`'s; case folds as the index folds.  Real files, real index."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from seance.cli import main
from seance.core.search import QueryError, TextMarks, parse_query, userregex
from seance.core.search.userregex import RegexTimeout, UserRegex

SLOW = r"\w*\w*\w*x"  # polynomial backtracking: `re` ran 2.4 s over "a" * 290 + " x", a minute at 700
LONG = "a" * 290 + " x"  # (within a title's 300 characters: the title tiers scan it)


def test_the_strings_of_one_query_share_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each string alone ends within the budget, twenty of them do not: the search stops."""
    monkeypatch.setattr(userregex, "QUERY_BUDGET", 0.3)
    pattern = UserRegex(SLOW)
    started = time.perf_counter()
    with pytest.raises(RegexTimeout) as stopped:
        for _ in range(20):
            assert pattern.search(LONG) is not None
    assert time.perf_counter() - started < 5
    assert isinstance(stopped.value, QueryError) and "took over 0.3 s" in str(stopped.value)
    with pytest.raises(RegexTimeout):  # spent: the next string is refused at once
        pattern.search("x")
    assert UserRegex(SLOW).search("x") is not None, "a query parsed again has its own budget"


def test_a_pattern_quick_on_every_string_is_never_stopped_however_many_it_scans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The budget grows with the strings scanned: no fixed sum of seconds stops an ordinary
    pattern over a big store (at 100,000 sessions one spent half of a fixed 3 s)."""
    monkeypatch.setattr(userregex, "QUERY_BUDGET", 0.05)  # (3,000 strings of ~10 us: 0.03 s, then 6 s allowed)
    monkeypatch.setattr(userregex, "STRING_ALLOWANCE", 0.002)
    pattern = UserRegex(r"\w+_\w+\(")  # not tame: every call runs with its timeout
    text = "a title of a session " * 20 + "call_it("
    assert sum(pattern.search(text) is not None for _ in range(3000)) == 3000
    slow = UserRegex(SLOW)  # ...while a slow one still stops at once
    with pytest.raises(RegexTimeout):
        for _ in range(20):
            slow.search(LONG)


def test_the_message_is_one_clean_line() -> None:
    error = UserRegex("a\x1b\\[31m\nb")._stopped()
    assert "\x1b" not in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("re:(", "re: missing ), unterminated subpattern at 0"),
        ("re:a{2,1}", "re: min repeat greater than max repeat at 2"),
    ],
)
def test_an_invalid_pattern_is_refused_as_re_refuses_it(query: str, message: str) -> None:
    with pytest.raises(QueryError) as refused:
        parse_query(query)
    assert str(refused.value) == message


def _index_fold(char: str) -> str:
    """`char` as the index's tokenizer folds it (FTS5 unicode61, remove_diacritics 2)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE w USING fts5(x, tokenize = 'unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(w, 'instance')")
    db.execute("INSERT INTO w(x) VALUES (?)", (char + "q",))
    (token,) = db.execute("SELECT term FROM v").fetchone()
    return token[:-1]


@pytest.mark.parametrize(
    ("typed", "text"),
    [("i", "İ"), ("i", "I"), ("i", "ı"), ("k", "\u212a"), ("σ", "ς"), ("ß", "ẞ"), ("ss", "ß"), ("fi", "ﬁ"), ("s", "ſ")],
)
def test_case_folds_as_the_index_folds(typed: str, text: str) -> None:
    """A lower-case pattern matches where the index's tokenizer folds the text to it (`re`
    also matched the dotless ı for i; full case folding would match ß for ss)."""
    assert (UserRegex(typed).search(text) is not None) is (_index_fold(text) == typed)


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a|aa)*$", "(?:x*y?)*z", "(.*a){12}", SLOW, r"(?>(a+)+b)", r"(x)?(?(1)y|(a+)+)b"]
)
def test_a_backtracking_pattern_marks_the_preview_and_a_slow_look_stops(pattern: str) -> None:
    """The nested repetitions `re` could not stop were left out of the preview's marks; each
    look is now bounded (`LOOK_TIMEOUT`): over a text where it backtracks it marks nothing,
    fast, and the pattern still marks what it finds at once."""
    marks = TextMarks.of(f"re:{pattern}")
    assert marks is not None
    started = time.perf_counter()
    marks.spans("a" * 400 + " x!", ("result",))  # `re`: 10 s or more for each
    assert time.perf_counter() - started < 2


def _session(root: Path, number: int, said: str) -> None:
    folder = root / "--work-demo--"
    folder.mkdir(parents=True, exist_ok=True)
    ident = f"0000000{number}-aaaa-bbbb-cccc-dddddddddddd"
    header = {"type": "session", "version": 3, "id": ident, "timestamp": "2026-05-01T00:00:00.000Z", "cwd": "/w"}
    entry = {
        "type": "message",
        "id": "e0",
        "parentId": None,
        "timestamp": "2026-05-01T00:00:01.000Z",
        "message": {"role": "user", "content": said, "timestamp": 1_777_593_601_000 + number},
    }
    (folder / f"2026-05-01T00-00-0{number}-000Z_{ident}.jsonl").write_text(
        json.dumps(header) + "\n" + json.dumps(entry) + "\n"
    )


def test_ls_stops_a_slow_pattern_with_one_line_and_a_non_zero_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    monkeypatch.setattr(userregex, "QUERY_BUDGET", 0.3)
    root = tmp_path / "sessions"
    for number in range(6):
        _session(root, number, LONG)
    _session(root, 7, "fix the sqlite index")
    for json_flag in (["--json"], []):
        code = main(["ls", "--all", "--root", str(root), *json_flag, "--query", f"re:{SLOW}"])
        captured = capsys.readouterr()
        assert code == 2, captured
        assert captured.err.count("\n") == 1 and "took over 0.3 s" in captured.err and "Traceback" not in captured.err
    assert main(["ls", "--all", "--json", "--root", str(root), "--query", "re:fix.*sqlite"]) == 0
    assert [row["firstMessage"] for row in json.loads(capsys.readouterr().out)] == ["fix the sqlite index"]


@pytest.mark.parametrize(
    ("pattern", "tame"),
    [
        ("fix.*sqlite", True),
        (r"\d{3}-\d+", True),
        (r"err(or)?s?\b", True),
        ("widget|sidebar", True),
        (r"(?=a.*b)c", True),
        (SLOW, False),
        (r"\w*\w*x", False),
        (".*.*=", False),
        ("(a|aa)*c", False),
        ("(a+)+$", False),
        ("(x+x+)+y", False),
        ("(a|a)(a|a)(a|a)(a|a)(a|a)x", False),  # 32 ways at each place
        (r"(a)\1", False),
        ("(?>a+)b", False),
        ("a{e<=1}", False),  # `regex`'s fuzzy match
        (r"(?:a|\w)*z", False),  # `re` folds the group into one set, `regex` tries both: seconds over 27 characters
        (r".*?a{300}b", False),  # a long fixed count: each start, each length, 300 steps more
    ],
)
def test_only_a_tame_pattern_runs_without_a_timeout_over_a_short_string(pattern: str, tame: bool) -> None:
    """`_tame` patterns skip `timeout=` (a system call each) over `TAME_CHARS`: the worst
    such pattern over such a string takes milliseconds; every pattern that backtracks more
    keeps its timeout."""
    assert userregex._tame(pattern) is tame
    worst = UserRegex("a?a?a?a?\\w*a{16}" + "a" * 40 + "b")
    assert userregex._tame(worst.pattern)
    started = time.perf_counter()
    assert worst.search("a" * userregex.TAME_CHARS) is None
    assert time.perf_counter() - started < 1


@pytest.mark.parametrize("pattern", ["a{4000000}", "(?:ab|cd){300000}", "(a|b){4000000}", "(?:x{1000}){1000}"])
def test_a_pattern_whose_counts_stand_for_too_much_text_is_refused_before_it_is_compiled(pattern: str) -> None:
    """`regex` writes counted repeats out when it compiles (on the UI thread, every key):
    1 GB and seconds for `a{4000000}`, a crash for `(?:ab|cd){300000}`."""
    started = time.perf_counter()
    with pytest.raises(QueryError, match="repeat counts too large"):
        parse_query(f"re:{pattern}")
    assert time.perf_counter() - started < 1
    assert UserRegex(r"\d{4}-\d{2}-\d{2}").search("on 2026-11-27") is not None


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("Error: {e}", 'print(f"Error: {e}")', True),
        ("Error: {e}", "Error: timeout while fetching", False),  # `regex` read {e} as "one error allowed"
        ("x{e}", "y", False),
        ("a{2}b", "aab", True),
        ("a{,2}b", "b", True),
        ("[{]x{2}", "{xx", True),
        (r"\N{EM DASH}{2}", "\u2014\u2014", True),
        ("a{}", "a{}", True),
        ("a{2,", "a{2,", True),
    ],
)
def test_a_brace_is_read_as_re_reads_it(pattern: str, text: str, found: bool) -> None:
    """`re` reads a `{` that starts no count as text; `regex` read `{e}` as fuzzy matching."""
    import re

    assert (re.search(pattern, text, re.IGNORECASE) is not None) is found  # (the reference)
    assert (UserRegex(pattern).search(text) is not None) is found


def test_counts_inside_an_atomic_group_are_counted_too() -> None:
    with pytest.raises(QueryError, match="repeat counts too large"):
        UserRegex("(?>a{1000}){1000}")


@pytest.mark.parametrize(
    ("pattern", "text"),
    [("(?#[)a{e}]", "b{e}]"), ("(?x)#[\na{e}]", "b{e}]"), ("(?#\\)[)a{e}", "a{e}")],
)
def test_a_comment_hides_no_brace_from_the_escaping(pattern: str, text: str) -> None:
    """A `[` in a comment opened a set that swallowed the rest: the `{e}` after it went to
    `regex` unescaped, a fuzzy match `re` never made."""
    import re

    assert (UserRegex(pattern).search(text) is not None) is (re.search(pattern, text, re.IGNORECASE) is not None)


@pytest.mark.parametrize("pattern", ["(?#[)(?:a|\\w)*z]", "(?x)#)\n(?:a|\\w)*z", "(?x)(?:a|\\w)*z"])
def test_a_pattern_with_a_comment_or_verbose_is_never_run_untimed(pattern: str) -> None:
    """A comment's `)` or `[` fooled the look for alternation in a group: `(?:a|\\w)*z` ran
    without its timeout, 20 s over 30 characters."""
    assert not UserRegex(pattern)._tame
