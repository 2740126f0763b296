"""Child sessions: forks and subagents found, tied to their parent, hidden / threaded / flat.

Real files in temp dirs (pi v3 and oh-my-pi's title-slot files, oh-my-pi's subagent and
advisor folders, pi subagent extensions' run folders), pi's own forks through the oracle,
the shared corpus read in place, the picker through Pilot and the CLI through `main`.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from test_pick_cli import Terminal
from ui_harness import SIZE, picker_app, screen_of, settle, titles, visible_text
from ui_sessions import NOW, PROJECT, Spec, make_root, session_path

from seance.app.screens.session_list import PickerOptions
from seance.cli.main import main
from seance.core import listing
from seance.core.catalog import Catalog
from seance.core.resume import continue_session
from seance.core.settings import load_settings, save_setting, settings_path
from seance.core.writes import title_slot_bytes

BUCKET = "--" + PROJECT.strip("/").replace("/", "-") + "--"


def write(path: Path, sid: str, prompt: str, age: timedelta, *, parent: str | None = None, omp: bool = False) -> Path:
    """One real session: header, a user prompt and a reply `age` before NOW (file mtime too)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    when = NOW - age
    stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    header: dict = {"type": "session", "version": 3, "id": sid, "timestamp": stamp, "cwd": PROJECT}
    if parent is not None:
        header["parentSession"] = parent
    user = {"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": int(when.timestamp() * 1000)}
    reply = {"role": "assistant", "content": [{"type": "text", "text": "done"}], "stopReason": "stop"}
    lines = [
        orjson.dumps(header),
        orjson.dumps({"type": "message", "id": f"{sid}-u", "parentId": None, "timestamp": stamp, "message": user}),
        orjson.dumps(
            {"type": "message", "id": f"{sid}-a", "parentId": f"{sid}-u", "timestamp": stamp, "message": reply}
        ),
    ]
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(title_slot_bytes("", stamp) + data if omp else data)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


@pytest.fixture
def family(tmp_path: Path) -> dict[str, Path]:
    """An oh-my-pi session with subagents, a nested subagent and advisors; a pi fork of another
    session; a pi subagent-extension run; and a plain session."""
    root = tmp_path / "sessions"
    bucket = root / BUCKET
    hours, minutes = timedelta(hours=1), timedelta(minutes=1)
    files: dict[str, Path] = {"root": root}
    files["omp"] = write(bucket / "2026-05-01T10-00-00-000Z_omp1.jsonl", "omp1", "build the parser", hours, omp=True)
    folder = bucket / "2026-05-01T10-00-00-000Z_omp1"  # oh-my-pi's artifacts folder of that session
    files["alpha"] = write(folder / "Alpha.jsonl", "alpha", "subagent Alpha", 50 * minutes, omp=True)
    files["gamma"] = write(folder / "Alpha" / "Alpha.Gamma.jsonl", "gamma", "subagent Gamma", 45 * minutes, omp=True)
    files["advisor"] = write(folder / "__advisor.jsonl", "adv", "advisor notes", 40 * minutes, omp=True)
    files["alpha-advisor"] = write(
        folder / "Alpha" / "__advisor.jsonl", "adv2", "alpha's advisor", 44 * minutes, omp=True
    )
    (folder / "1.bash.log").write_text("not a session")
    files["pi"] = write(bucket / "2026-05-01T09-00-00-000Z_pi1.jsonl", "pi1", "fix the login bug", 3 * hours)
    fork = bucket / "2026-05-01T11-00-00-000Z_fork1.jsonl"
    files["fork"] = write(fork, "fork1", "fix the login bug", 2 * hours, parent=str(files["pi"]))
    run = bucket / "2026-05-01T09-00-00-000Z_pi1" / "3d9b3c4e" / "run-0" / "session.jsonl"
    files["run"] = write(run, "run1", "scout the repo", 150 * minutes)
    files["plain"] = write(bucket / "2026-04-01T09-00-00-000Z_plain.jsonl", "plain", "update the README", 48 * hours)
    return files


def _ids(rows) -> list[str]:
    return [row.summary.id for row in rows]


# -- core ----------------------------------------------------------------------------------------


def test_every_child_is_found_and_tied_to_its_parent(family: dict[str, Path]) -> None:
    summaries = Catalog([family["root"]]).exact(None)
    parent_of = listing.parents(summaries)
    assert parent_of == {
        str(family["alpha"]): str(family["omp"]),
        str(family["gamma"]): str(family["alpha"]),  # a subagent's own subagent: under Alpha
        str(family["advisor"]): str(family["omp"]),
        str(family["alpha-advisor"]): str(family["alpha"]),
        str(family["fork"]): str(family["pi"]),  # pi's header: the parent's path
        str(family["run"]): str(family["pi"]),  # a subagent extension's run folder
    }
    counts = listing.descendants(parent_of)
    assert counts == {str(family["omp"]): 4, str(family["alpha"]): 2, str(family["pi"]): 2}


def test_the_three_modes_in_every_sort(family: dict[str, Path]) -> None:
    summaries = Catalog([family["root"]]).exact(None)
    hidden = listing.arrange(summaries, "threaded", "hidden")
    assert _ids(hidden) == ["omp1", "pi1", "plain"]
    assert [row.children for row in hidden] == [4, 2, 0]
    assert _ids(listing.arrange(summaries, "created", "hidden")) == ["omp1", "pi1", "plain"]

    threaded = listing.arrange(summaries, "threaded", "threaded")  # pi's picker
    assert [(row.summary.id, row.prefix) for row in threaded] == [
        ("omp1", ""),
        ("adv", "├─ "),
        ("alpha", "└─ "),
        ("adv2", "   ├─ "),
        ("gamma", "   └─ "),
        ("pi1", ""),
        ("fork1", "├─ "),
        ("run1", "└─ "),
        ("plain", ""),
    ]
    assert all(row.children == 0 for row in threaded), "the tree shows them: no count"
    recent = listing.arrange(summaries, "recent", "threaded")  # pi: the other sorts list children as they come
    assert all(row.prefix == "" for row in recent) and len(recent) == 9

    flat = listing.arrange(summaries, "threaded", "flat")
    assert _ids(flat) == ["adv", "adv2", "gamma", "alpha", "omp1", "fork1", "run1", "pi1", "plain"]
    assert all(row.prefix == "" for row in flat)
    assert {row.summary.id: row.children for row in flat if row.children} == {"omp1": 4, "alpha": 2, "pi1": 2}


def test_parent_session_forms_pi_omp_and_moved_files(tmp_path: Path) -> None:
    """pi writes a path, oh-my-pi an id; a store copied from another machine keeps the old
    absolute paths, still found by bucket and file name or by the id in `<ts>_<id>.jsonl`."""
    root = tmp_path / "sessions"
    parent = write(root / "--p--" / "2026-05-26T05-30-28-297Z_019e62c3.jsonl", "019e62c3", "parent", timedelta(hours=5))
    by_id = write(root / "--p--" / "a.jsonl", "a", "omp fork", timedelta(hours=4), parent="019e62c3")
    moved = write(
        root / "--p--" / "b.jsonl",
        "b",
        "fork",
        timedelta(hours=3),
        parent="/Users/someone/.pi/agent/sessions/--p--/2026-05-26T05-30-28-297Z_019e62c3.jsonl",
    )
    renamed_bucket = write(
        root / "--p--" / "c.jsonl",
        "c",
        "fork",
        timedelta(hours=2),
        parent="C:\\Users\\x\\.pi\\agent\\sessions\\--q--\\2026-05-26T05-30-28-297Z_019e62c3.jsonl",
    )
    twin_a = write(root / "--x--" / "same.jsonl", "twa", "a", timedelta(hours=9))
    write(root / "--y--" / "same.jsonl", "twb", "b", timedelta(hours=9))
    ambiguous = write(root / "--p--" / "d.jsonl", "d", "fork", timedelta(hours=1), parent="/old/same.jsonl")
    gone = write(root / "--p--" / "e.jsonl", "e", "fork", timedelta(hours=1), parent="/old/--p--/deleted.jsonl")
    parent_of = listing.parents(Catalog([root]).exact(None))
    assert parent_of[str(by_id)] == str(parent)
    assert parent_of[str(moved)] == str(parent)
    assert parent_of[str(renamed_bucket)] == str(parent), "the id in pi's file name"
    assert str(ambiguous) not in parent_of, "two files share the name: no guess"
    assert str(gone) not in parent_of and str(twin_a) not in parent_of


def test_pi_forks_written_by_pi_are_children_of_their_source(pi_oracle: Path) -> None:
    """pi's own SessionManager (createBranchedSession, forkFrom) wrote the forks."""
    records = json.loads((pi_oracle / "expected.json").read_text())["sessions"]
    summaries = Catalog([pi_oracle / "sessions"]).exact(None)
    parent_of = listing.parents(summaries)
    listed = {record["path"] for record in records}
    forks = [record for record in records if record["parentSession"] in listed]  # pi may name an unsaved parent
    assert len(forks) >= 5
    for record in forks:
        assert parent_of.get(record["path"]) == record["parentSession"], record["path"]
    assert len(parent_of) == len(forks), "no other session became a child"
    hidden = listing.arrange(summaries, "threaded", "hidden")
    assert {row.summary.path for row in hidden} == listed - {record["path"] for record in forks}


def test_the_corpus_subagent_runs_and_fork(corpus: Path) -> None:
    """A real pi store (frinfo702/dotfiles, read in place): four subagent-extension runs nested
    in their parent's folder, and a fork whose header names the parent by its original path."""
    store = corpus / "wild" / "frinfo702__dotfiles"
    summaries = Catalog([store]).exact(None)
    parent_of = listing.parents(summaries)
    bucket = store / "--Users-ken702-ghq-github.com-frinfo702-dotfiles--"
    runs = sorted(bucket.glob("*/*/run-0/session.jsonl"))
    assert len(runs) == 4
    for run in runs:
        assert parent_of[str(run)] == str(run.parents[2]) + ".jsonl"
    fork = bucket / "2026-05-26T05-31-47-080Z_019e62c4-8608-7353-8fe3-c8e944c9e00a.jsonl"
    assert parent_of[str(fork)] == str(bucket / "2026-05-26T05-30-28-297Z_019e62c3-5249-7057-9390-c72853be72e9.jsonl")
    assert len(parent_of) == 5


def test_continue_never_picks_a_subagent_transcript(family: dict[str, Path]) -> None:
    """The advisor wrote last, but `--continue` opens the newest session, not its folder's files."""
    os.utime(family["advisor"])  # now: the newest file of all
    summaries = Catalog([family["root"]]).exact(PROJECT)
    assert continue_session(PROJECT, summaries, []) == family["omp"]


def test_settings_file_round_trip_and_a_broken_file_is_kept(tmp_path: Path) -> None:
    assert load_settings().children == "hidden" and load_settings().problem is None  # nothing saved yet
    path = save_setting("children", "flat")
    assert path == settings_path() and load_settings().children == "flat"
    path.write_text('{"children": "sideways", "other": 1}')
    assert load_settings().children == "hidden", "an unknown value is the default"
    save_setting("children", "threaded")
    assert json.loads(path.read_text()) == {"children": "threaded", "other": 1}, "other keys are kept"
    path.write_text("{not json")
    assert "not JSON" in (load_settings().problem or "")
    with pytest.raises(OSError):
        save_setting("children", "flat")
    assert path.read_text() == "{not json", "a file the user is editing is never overwritten"


# -- the picker ----------------------------------------------------------------------------------


async def test_alt_c_cycles_hidden_threaded_flat_and_saves_it(family: dict[str, Path]) -> None:
    saved: list[str] = []

    def save(mode: str) -> None:
        save_setting("children", mode)
        saved.append(mode)

    options = PickerOptions(watch=False, children="hidden", save_children=save)
    async with picker_app(family["root"], options=options).run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(pilot)
        assert titles(pilot) == ["build the parser", "fix the login bug", "update the README"]
        lines = visible_text(pilot)
        assert "4 children" in lines[0] and "2 children" in lines[1] and "child" not in lines[2]
        assert "3 of 9 sessions" in screen.status.render().plain, "the hidden ones are counted"

        await pilot.press("alt+c")
        await settle(pilot)
        assert screen.model.children == "threaded"
        assert [row.prefix for row in screen.session_list.rows][:3] == ["", "├─ ", "└─ "]
        assert len(screen.session_list.rows) == 9
        assert any("Threaded: 6 child sessions under their parent" in str(n.message) for n in pilot.app._notifications)

        await pilot.press("alt+c")
        await settle(pilot)
        assert screen.model.children == "flat"
        assert all(row.prefix == "" for row in screen.session_list.rows) and len(screen.session_list.rows) == 9
        assert titles(pilot)[0] == "advisor notes", "flat: the newest first, children among the rest"

        await pilot.press("alt+c")
        await settle(pilot)
        assert screen.model.children == "hidden" and len(screen.session_list.rows) == 3, screen.status.message
        assert saved == ["threaded", "flat", "hidden"], screen.status.message
    assert load_settings().children == "hidden"


async def test_hidden_children_stay_hidden_while_searching(family: dict[str, Path]) -> None:
    options = PickerOptions(watch=False, children="hidden")
    async with picker_app(family["root"], query="subagent", options=options).run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert titles(pilot) == []
        await pilot.press("alt+c")  # threaded: the hits are listed (the tree is dropped while searching)
        await settle(pilot)
        assert sorted(titles(pilot)) == ["subagent Alpha", "subagent Gamma"]


# -- the command line ----------------------------------------------------------------------------


def _ls(root: Path, capsys, *args: str) -> list[dict]:
    assert main(["ls", "--all", "--json", "--root", str(root), *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_ls_children_option(family: dict[str, Path], capsys) -> None:
    root = family["root"]
    default = _ls(root, capsys)
    assert len(default) == 9 and "children" not in default[0], "pi's list(): every session, pi's keys"
    hidden = _ls(root, capsys, "--children", "hidden")
    assert [(item["id"], item["children"]) for item in hidden] == [("omp1", 4), ("pi1", 2), ("plain", 0)]
    threaded = _ls(root, capsys, "--sort", "threaded")
    assert [item["depth"] for item in threaded] == [0, 1, 1, 2, 2, 0, 1, 1, 0]
    flat = _ls(root, capsys, "--sort", "threaded", "--children", "flat")
    assert "depth" not in flat[0] and flat[0]["id"] == "adv"
    searched = _ls(root, capsys, "--children", "hidden", "--query", "login")
    assert [item["id"] for item in searched] == ["pi1"], "the fork matches too, but is hidden"
    assert main(["ls", "--all", "--root", str(root), "--children", "hidden"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and "· 4 children" in out[0] and "· 2 children" in out[1] and "child" not in out[2]
    with pytest.raises(SystemExit):
        main(["ls", "--children", "sideways"])


def test_pick_and_browse_take_children(family: dict[str, Path]) -> None:
    from seance.cli.main import build_parser
    from seance.cli.ui import _children

    parser = build_parser(["pick"])
    assert _children(parser.parse_args(["pick", "--children", "flat"])) == "flat"
    assert _children(parser.parse_args(["--children", "threaded", "pick"])) == "threaded"
    assert _children(parser.parse_args(["pick"])) == "hidden", "no setting saved: hidden"
    save_setting("children", "threaded")
    assert _children(parser.parse_args(["pick"])) == "threaded", "the saved setting"
    assert _children(build_parser([]).parse_args(["--children", "flat"])) == "flat"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_seance_pick_hides_children_by_default_and_takes_the_option(tmp_path: Path) -> None:
    """The real command in a real terminal: no setting saved, the fork is hidden and its parent
    says so; `--children threaded` shows it under the parent."""
    root = make_root(tmp_path)  # the standard sessions: s-auth and its fork s-fork
    for args, shown, marker in (((), "4 of 5 sessions", "1 child"), (("--children", "threaded"), "5 sessions", "└─ ")):
        workdir = tmp_path / f"run-{len(args)}"  # its own out.txt and rc.txt
        workdir.mkdir()
        terminal = Terminal(workdir, f"seance-children-{os.getpid()}-{tmp_path.name}-{len(args)}")
        try:
            terminal.start("pick", "--root", str(root), "--cwd", PROJECT, *args)
            terminal.wait_for(shown)
            terminal.wait_for(marker)
            terminal.keys("Enter")
            terminal.continue_missing_cwd()
            code, out = terminal.result()
            assert code == 0 and out == f"{session_path(root, Spec('s-auth', PROJECT))}\n"
        finally:
            terminal.tmux("kill-server")
