"""The command line reads the same whichever side of the subcommand a global flag stands."""

from __future__ import annotations

import pytest
from seance.core.cli import build_parser


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--all", "pick"], (True, None, None)),
        (["pick", "--all"], (True, None, None)),
        (["pick"], (False, None, None)),
        (["--root", "r", "--cwd", "/w", "pick"], (False, ["r"], "/w")),
        (["pick", "--root", "r", "--cwd", "/w"], (False, ["r"], "/w")),
    ],
)
def test_pick_flags_before_or_after_the_subcommand(argv: list[str], expected: tuple) -> None:
    args = build_parser().parse_args(argv)
    assert (args.all, args.root, args.cwd) == expected


def test_every_command_is_registered() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # argparse keeps them here
    for name in ("show", "tree", "ls", "index", "resolve", "continue", "rm", "rename", "pick"):
        assert name in commands
