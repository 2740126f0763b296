"""`pick --json` / `seance --json`: the chosen entry (`entryId`) and resume vs fork, for hosts.

An agent extension (integrations/pi) resumes with pi's `navigateTree(entryId)`, which derives
the leaf, the prefill and the reset itself; `leafId`/`prefill`/`reset` stay for hosts that set
the leaf by hand.  Pilot tests drive the picker and the tree; the tmux tests run the real
command line (`pick --json` and the bare browser's `--json`) and read stdout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_pick_cli import Terminal, terminal  # noqa: F401  (the fixture)
from ui_harness import SIZE, picker_app, settle
from ui_sessions import PROJECT, Spec, make_root, session_path

from seance.app.results import PickResult

KEYS = {"action", "path", "id", "leafId", "cwd", "prefill", "reset", "entryId", "cwdMissing"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


async def _pick(root: Path, *keys: str) -> PickResult:
    app = picker_app(root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
    result = app.return_value
    assert isinstance(result, PickResult)
    return result


async def test_list_enter_is_the_sessions_own_leaf_entry_id_null(root: Path) -> None:
    result = (await _pick(root, "enter")).to_json()
    assert set(result) == KEYS
    assert result == {
        "action": "resume",
        "path": str(session_path(root, Spec("s-auth", PROJECT))),
        "id": "s-auth",
        "leafId": None,
        "cwd": PROJECT,
        "prefill": None,
        "reset": False,
        "entryId": None,
        "cwdMissing": True,  # the test sessions' cwd exists on no machine
    }


async def test_ctrl_f_says_fork(root: Path) -> None:
    result = (await _pick(root, "ctrl+f")).to_json()
    assert (result["action"], result["id"], result["entryId"]) == ("fork", "s-auth", None)


async def test_tree_earlier_user_message_gives_its_id_parent_and_text(root: Path) -> None:
    # s-auth: u0000 a0000 u0001 a0001; the tree opens on the leaf a0001, Up is u0001
    result = (await _pick(root, "ctrl+t", "up", "enter")).to_json()
    assert result["action"] == "resume"
    assert (result["entryId"], result["leafId"], result["prefill"], result["reset"]) == (
        "u0001",
        "a0000",
        "also the token refresh",
        False,
    )


async def test_tree_first_prompt_is_a_reset(root: Path) -> None:
    result = (await _pick(root, "ctrl+t", "home", "enter")).to_json()
    assert (result["entryId"], result["leafId"], result["prefill"], result["reset"]) == (
        "u0000",
        None,
        "fix the auth bug in login",
        True,
    )


async def test_tree_assistant_entry_resumes_at_itself(root: Path) -> None:
    result = (await _pick(root, "ctrl+t", "up", "up", "enter")).to_json()
    assert (result["entryId"], result["leafId"], result["prefill"], result["reset"]) == ("a0000", "a0000", None, False)


@pytest.mark.parametrize("prompts", [("first prompt", "second prompt"), ("only prompt",)], ids=["later", "first"])
async def test_tree_leaf_user_message_stays_at_the_leaf_as_pi_does(tmp_path: Path, prompts: tuple[str, ...]) -> None:
    """A session that ends with an unanswered prompt (the agent was stopped): Enter on that
    leaf is pi's "Already at this point" — `navigateTree` does nothing for the leaf — so the
    derived fields say stay there: not its parent with the text offered back, nor (the only
    prompt) a reset to before everything, which a host setting the leaf by hand did."""
    root = make_root(tmp_path, [Spec("s-wait", PROJECT, prompts, replies=False)])
    leaf = f"u{len(prompts) - 1:04d}"
    result = (await _pick(root, "ctrl+t", "enter")).to_json()  # the tree opens on the leaf
    assert (result["entryId"], result["leafId"], result["prefill"], result["reset"]) == (leaf, leaf, None, False)
    if len(prompts) > 1:  # the earlier prompt is no leaf: before it, its text offered back
        result = (await _pick(root, "ctrl+t", "up", "enter")).to_json()
        assert (result["entryId"], result["leafId"], result["prefill"], result["reset"]) == (
            "u0000",
            None,
            "first prompt",
            True,
        )


# -- the real command line, in tmux ---------------------------------------------------------------


def test_pick_json_from_the_tree(terminal: Terminal, root: Path) -> None:  # noqa: F811
    terminal.start("pick", "--root", str(root), "--cwd", PROJECT, "--json")
    terminal.wait_for("5 sessions")
    terminal.keys("C-t")
    terminal.wait_for("Session Tree")
    terminal.keys("Up", "Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0
    result = json.loads(out)
    assert (result["action"], result["entryId"], result["leafId"], result["prefill"]) == (
        "resume",
        "u0001",
        "a0000",
        "also the token refresh",
    )


def test_bare_seance_json_tree_choice(terminal: Terminal, root: Path) -> None:  # noqa: F811
    """The browser: Enter opens the tree, Enter there resumes; --json carries the entry."""
    terminal.start("--json", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("Enter")
    terminal.wait_for("Session Tree")
    terminal.keys("Up", "Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0
    result = json.loads(out)
    assert set(result) == KEYS
    assert (result["action"], result["id"], result["entryId"], result["leafId"]) == (
        "resume",
        "s-auth",
        "u0001",
        "a0000",
    )


def test_bare_seance_json_ctrl_f_is_a_fork_plain_output_is_the_path(terminal: Terminal, root: Path) -> None:  # noqa: F811
    terminal.start("--json", "--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("C-f")
    code, out = terminal.result()
    assert code == 0
    assert json.loads(out)["action"] == "fork"

    # Without --json a fork prints the path, as resume does (documented: --json tells them apart).
    terminal.tmux("kill-server")
    terminal.rc.unlink()
    terminal.start("--root", str(root), "--cwd", PROJECT)
    terminal.wait_for("5 sessions")
    terminal.keys("C-f")
    assert terminal.result() == (0, f"{session_path(root, Spec('s-auth', PROJECT))}\n")


def test_tree_pick_carries_the_entry(terminal: Terminal, root: Path) -> None:  # noqa: F811
    """`seance tree S --pick` prints the same object (it shares `PickResult`)."""
    terminal.start("tree", str(session_path(root, Spec("s-auth", PROJECT))), "--pick")
    terminal.wait_for("Session Tree")
    terminal.keys("Up", "Enter")
    terminal.continue_missing_cwd()
    code, out = terminal.result()
    assert code == 0
    result = json.loads(out)
    assert (result["action"], result["entryId"], result["leafId"]) == ("resume", "u0001", "a0000")
