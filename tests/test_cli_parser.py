"""The command line reads the same whichever side of the subcommand a global flag stands."""

from __future__ import annotations

import argparse

import pytest

from seance.cli.main import COMMAND_MODULES, _command_in, build_parser, parse_args, quick_ls_args


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


def test_each_command_is_registered_by_its_module() -> None:
    """`COMMAND_MODULES` (what `seance CMD` imports) names the module that really registers CMD."""
    import importlib

    for command, module in COMMAND_MODULES.items():
        parser = argparse.ArgumentParser()
        importlib.import_module(f"seance.cli.{module}").register(parser.add_subparsers())
        assert command in parser._subparsers._group_actions[0].choices, (command, module)


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["ls", "--all"], "ls"),
        (["--root", "ls", "index"], "index"),  # "ls" is --root's value
        (["--ro", "show", "--cwd=x", "rm", "k"], "rm"),  # an abbreviated option takes its value too
        (["--all", "--cwd", "/w", "pick"], "pick"),
        (["--all"], None),
        (["--", "ls"], None),
    ],
)
def test_the_command_is_found_past_global_options(argv: list[str], command: str | None) -> None:
    assert _command_in(argv) == command
    args = build_parser(argv).parse_args(argv) if command else None
    assert args is None or args.command == command


def test_an_unknown_command_is_refused_with_every_command_listed(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser(["nope"]).parse_args(["nope"])
    error = capsys.readouterr().err
    assert "invalid choice: 'nope'" in error and all(name in error for name in COMMAND_MODULES)


@pytest.mark.parametrize(
    "argv",
    [
        ["ls"],
        ["ls", "--all", "--json", "--root", "/r", "--query", "sqlite"],
        ["ls", "--json", "--root=/a", "--root", "b", "-q", '"fix the" re:x|y'],
        ["ls", "--query=a=b", "--query", "last wins", "--all", "--all"],
        ["ls", "-q", "ls", "--root", "index", "--json"],  # values that are commands' names
        ["ls", "--root", "~/s p", "--query", "  "],
    ],
)
def test_a_plain_ls_is_read_without_argparse_as_argparse_reads_it(argv: list[str]) -> None:
    """`quick_ls_args` (no argparse imported, no parser built) gives every attribute
    argparse gives, with the same values: a new option of `ls` or of the top level is
    in argparse's namespace and fails this until `_LS_DEFAULTS` has it."""
    quick = quick_ls_args(argv)
    assert quick is not None
    assert vars(quick) == vars(parse_args(build_parser(argv), argv))


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["show", "x"],
        ["--all", "ls"],  # a top-level option first
        ["ls", "--help"],
        ["ls", "--jso"],  # an abbreviation
        ["ls", "--qu", "x"],
        ["ls", "--cwd", "/w"],
        ["ls", "--sort", "recent"],
        ["ls", "--quick"],
        ["ls", "x"],  # a stray positional argument: argparse's error
        ["ls", "--", "-q"],
        ["ls", "-q"],  # no value
        ["ls", "--query="],
        ["ls", "-q", ""],
        ["ls", "-q", "-1"],  # a value argparse may read as an option
        ["ls", "--root", "-r"],
        ["ls", "-qx"],
        ["ls", "-q=x"],
    ],
)
def test_anything_else_after_ls_is_left_to_argparse(argv: list[str]) -> None:
    assert quick_ls_args(argv) is None


def test_500_random_command_lines_read_without_argparse_are_read_as_argparse_reads_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Whatever `quick_ls_args` reads (random lines of `ls`'s options with values, odd
    values and near misses among them), argparse reads the same, without an error."""
    import random

    values = ["x", "re:a|b", '"fix the"', "!not", "ls", " ", "a=b", "~/r", "-", "-x", "--", "", "-1", "--all"]
    junk = ["--cwd", "--jso", "--quick", "-qx", "-q=x", "x", "--", "-h"]
    parser = build_parser(["ls"])
    chance = random.Random(14)
    read = []
    for _ in range(500):
        argv = ["ls"]
        for _unit in range(chance.randrange(6)):
            kind = chance.randrange(8)
            if kind < 2:
                argv.append(("--all", "--json")[kind])
            elif kind < 7:
                option, value = chance.choice(["--root", "--query", "-q"]), chance.choice(values)
                argv += [f"{option}={value}"] if option != "-q" and chance.random() < 0.3 else [option, value]
            else:
                argv.append(chance.choice(junk))
        quick = quick_ls_args(argv)
        if quick is not None:
            read.append(argv)
            assert vars(quick) == vars(parse_args(parser, argv)), argv
    assert len(read) > 100 and sum(len(argv) > 5 for argv in read) > 20  # (not only the trivial lines)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "x\x1b]0;PWNED\x07y"],  # argparse: "unrecognized arguments: ..."
        ["show", "s", "--x\x1b[2J"],
        ["--al\u202e", "ls"],
    ],
)
def test_argparse_errors_show_an_arguments_controls_as_escapes(argv: list[str], capsys) -> None:
    """An argument is often session text (a name or id a script passes on): argparse's own
    errors, which echo it, go through the one sanitiser as every other message does."""
    from seance.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "error:" in error
    assert not any(char in error for char in "\x1b\x07\u202e"), error
    assert "\\e" in error or "\\u202e" in error, error


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "--all", "--root", ""],
        ["ls", "--root="],
        ["--root", "", "ls", "--json"],
        ["index", "--root", ""],
        ["stats", "--all", "--root", ""],
        ["ls", "--cwd", ""],
        ["pick", "--root", ""],
        ["resolve", "x", "--root", ""],
    ],
)
def test_an_empty_root_or_cwd_is_refused_not_read_as_the_current_directory(
    argv: list[str], tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--root "$DIR"` with DIR unset: listing (and indexing) whatever the working directory
    holds instead would be a wrong answer given silently."""
    from seance.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.jsonl").write_text('{"type":"session","version":3,"id":"here","cwd":"/p"}\n')
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and "empty" in err and len(err.splitlines()) == 1, err
