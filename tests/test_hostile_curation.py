"""Session text is data in the 0.3.0 commands and screens too: pins, tags, marks, stats,
export, clean, `ls --skipped`, copy, the skipped list and the missing-cwd question.

The hostile session of tests/test_hostile_text.py (escape sequences, C1, bidi, markup in every
field, the file's own name and directory) runs through each new exit, and what reaches the
terminal is checked the same way: no control, C1 or bidi character, markup shown literally.
"""

from __future__ import annotations

import os
import subprocess
import time

import orjson
from test_hostile_text import HOSTILE, MARKUP, SID, env, run, write_hostile_session, write_not_a_session

from seance.core.text import unsurrogate

__all__ = ["env"]  # the fixture, shared


def test_the_curation_commands_print_a_hostile_session_inertly(env, capsys) -> None:
    root = env / "sessions"
    path = write_hostile_session(root)
    write_not_a_session(root)
    r = ("--root", str(root))

    for by in ("day", "model", "project"):
        code, out, _err = run(capsys, "stats", "--all", "--by", by, *r)
        assert code == 0, by
    code, out, _err = run(capsys, "stats", "--all", "--by", "model", "--json", *r)
    assert code == 0 and orjson.loads(out)
    code, out, _err = run(capsys, "show", str(path), "--stats")
    assert code == 0 and MARKUP in out  # the model, shown as text
    code, out, _err = run(capsys, "show", str(path), "--stats", "--json")
    assert code == 0 and orjson.loads(out)

    for fmt in ("md", "json"):
        for tree in ((), ("--tree",)):
            code, out, _err = run(capsys, "export", str(path), "--format", fmt, *tree)
            assert code == 0 and MARKUP in out, (fmt, tree)

    code, out, err = run(capsys, "clean", "--all", "--query", "hostile", *r)
    assert code == 0 and "would" in (out + err).lower()
    code, out, _err = run(capsys, "clean", "--all", "--query", "hostile", "--json", *r)
    assert code == 0 and orjson.loads(out)

    code, out, _err = run(capsys, "ls", "--all", "--skipped", *r)
    assert code == 0 and out.count("\n") == 1 and "junk-" in out
    code, out, _err = run(capsys, "ls", "--all", "--skipped", "--json", *r)
    assert len(orjson.loads(out)) == 1

    code, out, err = run(capsys, "tag", str(path), "+café", "+[bold]x[/]")
    assert code == 0 and out.splitlines() == ["café", "[bold]x[/]"]
    code, out, err = run(capsys, "tag", str(path), "+bad\x1b[2J")
    assert code == 2 and err.count("\n") == 1
    code, out, err = run(capsys, "pin", str(path))
    assert code == 0 and out.count("\n") == 1
    code, out, _err = run(capsys, "marks", "export")
    assert SID in orjson.loads(out)["sessions"]  # the hostile id, whole, but its C1 and bidi escaped

    code, out, _err = run(capsys, "ls", "--all", "--json", *r)
    assert orjson.loads(out)[0]["pinned"] is True
    code, out, _err = run(capsys, "ls", "--all", *r)
    assert "café" in out
    code, out, _err = run(capsys, "resolve", "hostile", *r, "--cwd", f"/p/{HOSTILE}", "--command")
    assert code == 0 and out.count("\n") == 1

    stamp = time.time() - 3600
    os.utime(path, (stamp, stamp))
    code, out, err = run(capsys, "clean", "--all", "--query", "hostile", "--include-pinned", "--yes", *r)
    assert code == 0 and not path.exists()
    code, out, err = run(capsys, "rm", "--undo")
    assert code == 0 and path.exists()


def test_a_file_name_that_is_not_utf8_is_listed_counted_and_printed_as_json(env, capsys) -> None:
    """A file name need not be UTF-8 (Python holds its bytes as lone surrogates): the new
    commands' JSON and the stats cache took such a path and raised a traceback."""
    from hostile import write_good

    root = env / "sessions"
    good = write_good(root, "undecodable", "a session whose file name is not UTF-8")
    path = good.with_name("undecodable-\udcff.jsonl")
    good.rename(path)
    stamp = time.time() - 3600  # not being written: clean considers it
    os.utime(path, (stamp, stamp))
    (root / "--p--" / "junk-\udcfe.jsonl").write_bytes(b"not json\n")
    r = ("--root", str(root))

    for argv in (("stats", "--all"), ("stats", "--all", "--json"), ("stats", "--all", "--json")):  # cold, warm
        code, out, err = run(capsys, *argv, *r)
        assert code == 0 and "Traceback" not in err, err
    assert orjson.loads(out)["sessions"] == 1
    shown = unsurrogate(str(path))  # JSON text is Unicode: the undecodable byte is U+FFFD
    code, out, _err = run(capsys, "show", str(path), "--stats", "--json")
    assert code == 0 and orjson.loads(out)["path"] == shown
    code, out, _err = run(capsys, "clean", "--all", "--query", "whose", "--json", *r)
    assert code == 0 and [item["path"] for item in orjson.loads(out)["sessions"]] == [shown]
    code, out, _err = run(capsys, "ls", "--all", "--skipped", "--json", *r)
    assert code == 0 and orjson.loads(out)[0]["path"].endswith("junk-\ufffd.jsonl")
    code, out, _err = run(capsys, "resolve", "undecodable", *r, "--cwd", "/p", "--command", "--json")
    assert code == 0 and orjson.loads(out)["path"] == shown


def test_a_file_name_that_is_not_utf8_never_takes_the_index_down(env, capsys) -> None:
    """SQLite keeps paths as UTF-8 text: one such file made every `ls` say "the index could not
    be rebuilt" and list from the files, and `ls --json` (stored answer, quick, query), `tree
    --json` and `rm` raised tracebacks.  Now it is read from the file each run, the others stay
    indexed, and `rm` refuses it in one line (its receipt could not name it for undo)."""
    from hostile import write_good

    root = env / "sessions"
    odd = root / "--p--" / "odd-\udcff.jsonl"
    write_good(root, "odd", "a session whose file name is not UTF-8").rename(odd)
    write_good(root, "plain", "an ordinary session")
    r = ("--root", str(root), "--all")
    shown = unsurrogate(str(odd))
    for argv in (
        ("ls", "--json"),
        ("ls", "--json"),
        ("ls", "--json", "--quick"),
        ("ls", "--json", "--query", "session"),
    ):
        code, out, err = run(capsys, *argv, *r)  # the first `ls --json` stores the answer, the second serves it
        assert code == 0 and err == "", (argv, err)
        assert {item["path"] for item in orjson.loads(out)} >= {shown}, argv
    code, out, err = run(capsys, "index", *r[:2])
    assert code == 0 and "could not" not in err
    code, out, _ = run(capsys, "tree", str(odd), "--json")
    assert code == 0 and orjson.loads(out)["path"] == shown
    stamp = time.time() - 3600
    os.utime(odd, (stamp, stamp))
    code, out, err = run(capsys, "rm", str(odd))
    assert code == 2 and "not UTF-8" in err and odd.exists()


async def test_the_new_dialogs_rows_and_clipboard_draw_hostile_text_inertly(env) -> None:
    """Pins, tags, the copy dialog and what it copies, the export prompt, the bulk-delete
    dialog and pi's missing-cwd question, on the hostile session."""
    from test_hostile_text import assert_clean, assert_screen_clean
    from ui_harness import picker_app, settle

    from seance.app.screens.session_list import PickerOptions, SessionPickerScreen

    root = env / "sessions"
    write_hostile_session(root)
    app = picker_app(
        root, scope="all", cache_dir=env / "cache", options=PickerOptions(watch=False), confirm_missing_cwd=True
    )
    async with app.run_test(size=(160, 50), notifications=True) as pilot:
        await settle(pilot, 5)
        await pilot.press("alt+p")  # pin
        await settle(pilot)
        await pilot.press("alt+t")  # the tag prompt
        await settle(pilot)
        assert_screen_clean(app, "tag prompt")
        for key in ("[", "b", "]", "x", "[", "/", "]"):
            await pilot.press(key)
        await pilot.press("enter")
        await settle(pilot)
        text = assert_screen_clean(app, "pinned and tagged row")
        assert "#[b]x[/]" in text and "★" in text, text

        await pilot.press("ctrl+y")  # the copy dialog
        await settle(pilot)
        assert "Copy to the clipboard" in assert_screen_clean(app, "copy dialog")
        for key, what in (("i", "id"), ("p", "path"), ("c", "resume command")):
            await pilot.press(key)
            await settle(pilot)
            assert "hostile-" in app.clipboard or "[bold red]x" in app.clipboard, app.clipboard
            assert_clean(app.clipboard, f"the copied {what}")  # pasted into a shell, it must not act
            if key == "p":  # and bash turns the pasted path back into the file's path
                pasted = subprocess.run(["bash", "-c", f"printf %s {app.clipboard}"], capture_output=True, check=True)
                assert pasted.stdout == os.fsencode(app.screen.session_list.highlighted.path)
            assert_screen_clean(app, f"copied the {what}")
            if key != "c":
                await pilot.press("ctrl+y")
                await settle(pilot)

        await pilot.press("alt+e")  # the export prompt proposes a file name from the title
        await settle(pilot)
        assert ".html" in assert_screen_clean(app, "export prompt")
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("ctrl+@")  # ctrl+space: mark the row, then delete the marked set
        await settle(pilot)
        await pilot.press("ctrl+d")
        await settle(pilot)
        assert "Trash" in assert_screen_clean(app, "bulk delete dialog")
        await pilot.press("escape")
        await settle(pilot)

        assert isinstance(app.screen, SessionPickerScreen)
        await pilot.press("enter")  # /p/<hostile> does not exist: pi's question names it
        await settle(pilot)
        text = assert_screen_clean(app, "missing cwd dialog")
        assert "Session cwd not found" in text and MARKUP in text


def test_huge_usage_keeps_the_stats_report_in_its_width(env, capsys) -> None:
    """A cost of 1e308 (pi stores what the provider said) was printed with all its 309 digits,
    breaking the report's columns: a line must fit the 80 columns a pipe gets."""
    from hostile import write_hostile

    from seance.core.textchart import cell_width

    root = env / "sessions"
    paths = write_hostile(root, ["huge-int-usage"])
    for argv in (("stats", "--all", "--root", str(root)), ("show", str(paths["huge-int-usage"]), "--stats")):
        code, out, _err = run(capsys, *argv)
        assert code == 0
        too_wide = [line for line in out.splitlines() if cell_width(line) > 80 and str(root) not in line]  # paths whole
        assert not too_wide, too_wide
