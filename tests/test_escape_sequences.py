"""Escape sequences in session text are drawn as the terminal drew them: gone whole.

A tool's coloured output holds `\\x1b[32mForwarding HTTP traffic ...`.  Blanking only the ESC
(safe: nothing reaches the terminal) left `[32m` drawn as text in list snippets, previews, the
tree and `seance show`, and glued to the next word in search's fold.  The sanitisers that draw
text (`display_text`, `safe_multiline`, `blank_controls`) and search's fold (`one_line`) drop
each whole sequence (ECMA-48: CSI, OSC/DCS/SOS/PM/APC strings, other escapes, 8-bit forms);
`visible` still shows every control as an escape.  What is not a whole sequence leaves its ESC
to the control rule, so no ESC ever gets through.
"""

from __future__ import annotations

import json
import random
from itertools import chain
from pathlib import Path

import pytest
from test_hostile_text import rendered
from ui_harness import picker_app, settle

from seance.app.screens.session_list import PickerOptions
from seance.app.screens.session_tree import SessionTreeScreen
from seance.cli import main
from seance.core.search.haystack import one_line
from seance.core.text import _BLANK_RUN, CONTROL_CHARS, blank_controls, display_text, safe_multiline, visible

SERVEO = (
    "Warning: Permanently added 'serveo.net' (RSA) to the list of known hosts.\r\n"
    "\x1b[32mForwarding HTTP traffic from https://abc.serveo.net\x1b[0m\n"
)

# (text, what `display_text` makes of it)
CASES = [
    ("\x1b[32mok\x1b[0m", "ok"),  # SGR colour
    ("a\x1b[0mb", "ab"),  # a reset between two letters: the terminal shows them together
    ("\x1b[1m\x1b[31mX\x1b[0m\x1b[K", "X"),  # adjacent sequences
    ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),  # private parameters
    ("\x1b[2 qbar", "bar"),  # an intermediate byte (DECSCUSR)
    ("\x1b[2J\x1b[Hclear", "clear"),
    ("\x9b31mC1 CSI\x9b0m", "C1 CSI"),  # the 8-bit CSI
    ("\x1b]0;PWNED-TITLE\x07title", "title"),  # OSC ended by BEL
    ("\x1b]52;c;cHduZWQ=\x1b\\clip", "clip"),  # OSC 52 ended by ST
    ("\x1b]8;;https://e.vil\x1b\\link\x1b]8;;\x1b\\ text", "link text"),  # a hyperlink
    ("\x9d0;t\x9cC1 OSC", "C1 OSC"),
    ("\x1bPq#0;2;0;0;0\x1b\\dcs", "dcs"),  # DCS (sixel)
    ("\x1bXsos\x1b\\ \x1b^pm\x1b\\ \x1b_apc\x1b\\ end", "end"),  # SOS, PM, APC
    ("\x90qdcs\x9c8-bit", "8-bit"),
    ("\x1bcreset \x1b7saved\x1b8 \x1b(Bascii \x1b#8 \x1b=keypad", "reset saved ascii keypad"),  # other escapes
    ("lone ST\x1b\\ here", "lone ST here"),
    # Not whole: the ESC is a control like any other (a space), the rest stays text.
    ("cut \x1b[3", "cut [3"),
    ("\x1b]0;no end", "]0;no end"),
    ("\x1bPno end", "Pno end"),
    ("esc\x1b", "esc"),
    ("\x1b\x1b[31mX", "X"),  # ESC before a sequence
    ("\x1b]0;a\x1b[31mb\x07c", "]0;ab c"),  # a string holding a control is no string: its parts apply
]


@pytest.mark.parametrize(("text", "shown"), CASES)
def test_display_text_drops_whole_sequences_and_blanks_what_is_left(text: str, shown: str) -> None:
    assert display_text(text) == shown
    assert one_line(text) == shown  # search's fold: the same words
    multi = safe_multiline(text)  # (drops a control left over, where display_text puts a space)
    assert not CONTROL_CHARS.search(multi) and multi.replace(" ", "") == shown.replace(" ", "")
    blanked = blank_controls(text)  # a space for each character of a sequence and each control
    assert len(blanked) == len(text) and not CONTROL_CHARS.search(blanked)
    assert blanked.replace(" ", "") == shown.replace(" ", "")


def test_the_serveo_line_reads_as_the_terminal_showed_it() -> None:
    assert display_text(SERVEO) == (
        "Warning: Permanently added 'serveo.net' (RSA) to the list of known hosts. "
        "Forwarding HTTP traffic from https://abc.serveo.net"
    )
    assert safe_multiline(SERVEO) == SERVEO.replace("\r\n", "\n").replace("\x1b[32m", "").replace("\x1b[0m", "")
    blanked = blank_controls(SERVEO)
    assert len(blanked) == len(SERVEO) and "[32m" not in blanked and "[0m" not in blanked
    assert blanked.index("Forwarding") == SERVEO.index("Forwarding")  # offsets stay valid
    assert "http traffic" in one_line(SERVEO).lower() and "forwarding http" in one_line(SERVEO).lower()
    # `visible` (ids, names, paths) still shows each control as an escape
    assert visible("\x1b[32mok") == "\\e[32mok" and visible("\x9b1m") == "\\u009b1m"


_PIECES = [
    "\x1b", "\x1b", "\x9b", "\x9d", "\x90", "\x98", "\x9e", "\x9f", "\x9c", "\x07", "\x85", "\x00",
    "[", "]", "P", "X", "^", "_", "\\", "(", "#", " ", "?", ";", "0", "3", "1", "m", "J", "a", "é",
    "\n", "\t", "\r", "\u202e", "\x7f", "  ", "\x1b[31m", "\x1b]0;t\x07", "\x1b\\",
]  # fmt: skip


def test_no_control_survives_and_plain_text_is_unchanged_in_20000_random_strings() -> None:
    rng = random.Random(1414)
    for trial in range(20_000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 24)))
        shown, multi, blanked, folded = display_text(text), safe_multiline(text), blank_controls(text), one_line(text)
        assert not CONTROL_CHARS.search(shown), (trial, text, shown)
        assert not CONTROL_CHARS.search(multi.replace("\n", "")), (trial, text, multi)
        assert not CONTROL_CHARS.search(blanked), (trial, text, blanked)
        assert not CONTROL_CHARS.search(folded), (trial, text, folded)
        assert len(blanked) == len(text), (trial, text)
        # blanking only ever puts spaces where characters were: every kept character is where it was
        assert all(b == " " or b == t for b, t in zip(blanked, text, strict=True)), (trial, text, blanked)
        # what holds no ESC and no 8-bit introducer is cleaned as before
        plain = "".join(char for char in text if char not in "\x1b\x9b\x9d\x90\x98\x9e\x9f")
        assert display_text(plain) == _BLANK_RUN.sub(" ", plain).strip(), (trial, plain)
        assert blank_controls(plain) == CONTROL_CHARS.sub(" ", plain), (trial, plain)
        expected = CONTROL_CHARS.sub(
            lambda m: "\n" if m.group() == "\n" else "", plain.replace("\r\n", "\n").replace("\t", "    ")
        )
        assert safe_multiline(plain) == expected, (trial, plain)


def _chars(rng: random.Random, low: int, high: int, most: int) -> str:
    return "".join(chr(rng.randint(low, high)) for _ in range(rng.randint(0, most)))


def _sequence(rng: random.Random) -> str:
    """One whole escape sequence of a random kind, as ECMA-48 (and xterm's BEL-ended OSC) has them."""
    body = "".join(rng.choice("abc ;:=/.é0123漢") for _ in range(rng.randint(0, 12)))
    st = rng.choice(["\x1b\\", "\x9c"])
    kind = rng.randrange(4)
    if kind == 0:  # CSI: parameters, intermediates, a final byte
        return (
            rng.choice(["\x1b[", "\x9b"])
            + _chars(rng, 0x30, 0x3F, 4)
            + _chars(rng, 0x20, 0x2F, 2)
            + chr(rng.randint(0x40, 0x7E))
        )
    if kind == 1:  # OSC
        return rng.choice(["\x1b]", "\x9d"]) + body + rng.choice(["\x07", st])
    if kind == 2:  # DCS, SOS, PM, APC
        return rng.choice(["\x1bP", "\x1bX", "\x1b^", "\x1b_", "\x90", "\x98", "\x9e", "\x9f"]) + body + st
    final = rng.choice([chr(code) for code in range(0x30, 0x7F) if chr(code) not in "PX[]^_"])  # other escapes
    intermediates = _chars(rng, 0x20, 0x2F, 2)  # after one, any final byte (`ESC ( B`, `ESC # 8`)
    return "\x1b" + intermediates + (chr(rng.randint(0x30, 0x7E)) if intermediates else final)


def test_whole_sequences_vanish_from_what_is_drawn_in_20000_random_texts() -> None:
    """Text with whole sequences put anywhere is drawn as the text without them (as a terminal
    draws it); `blank_controls` puts a space for each of their characters, one for one."""
    rng = random.Random(1415)
    for trial in range(20_000):
        words = [rng.choice(["ab", "c", " ", "  ", "\n", "é", "[31m", "x;y", "漢"]) for _ in range(rng.randint(0, 8))]
        sequences = [_sequence(rng) for _ in words] + [_sequence(rng)]
        text = "".join(chain.from_iterable(zip(sequences, [*words, ""], strict=True)))
        plain = "".join(words)
        assert display_text(text) == display_text(plain), (trial, text)
        assert safe_multiline(text) == safe_multiline(plain), (trial, text)
        assert one_line(text) == one_line(plain), (trial, text)
        blanked = "".join(chain.from_iterable(zip([" " * len(part) for part in sequences], [*words, ""], strict=True)))
        assert blank_controls(text) == blank_controls(blanked), (trial, text)


# -- a session with serveo's coloured output, end to end -------------------------------------------


def _serveo_session(root: Path) -> Path:
    """A pi session whose bash tool result is serveo's coloured banner (issue 14's tmux check)."""
    stamp = "2026-06-01T11:00:00.000Z"
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}}
    lines = [
        {"type": "session", "version": 3, "id": "s-serveo", "timestamp": stamp, "cwd": "/work/demo/project"},
        {"type": "message", "id": "u1", "parentId": None, "timestamp": stamp,
         "message": {"role": "user", "content": "open a tunnel to port 3000", "timestamp": 1}},
        {"type": "message", "id": "a1", "parentId": "u1", "timestamp": stamp,
         "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                     "arguments": {"command": "ssh -R 80:localhost:3000 serveo.net"}}],
                     "provider": "anthropic", "model": "claude-test", "usage": usage, "stopReason": "toolUse",
                     "timestamp": 2}},
        {"type": "message", "id": "t1", "parentId": "a1", "timestamp": stamp,
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                     "content": [{"type": "text", "text": SERVEO}], "isError": False, "timestamp": 3}},
    ]  # fmt: skip
    path = root / "--work-demo-project--" / "2026-06-01T11-00-00-000Z_s-serveo.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_show_prints_the_coloured_output_without_its_sequences(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    path = _serveo_session(tmp_path / "sessions")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "known hosts. Forwarding HTTP traffic from https://abc.serveo.net" in out
    assert "[32m" not in out and "[0m" not in out and "\x1b" not in out


async def test_snippet_preview_and_tree_show_the_coloured_output_without_its_sequences(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    _serveo_session(root)
    options = PickerOptions(watch=False, enter="tree")
    app = picker_app(root, scope="all", query='"HTTP traffic"', cache_dir=tmp_path / "cache", options=options)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot, 5)
        await pilot.press("alt+i")  # without the stats block, the tool result comes into view
        await settle(pilot)
        text, _stream = rendered(app)
        assert text.count("Forwarding HTTP traffic") >= 2, text  # the list's snippet and the preview
        assert "[32m" not in text and "[0m" not in text, text
        await pilot.press("enter")
        await settle(pilot, 5)
        assert isinstance(app.screen, SessionTreeScreen)
        text, _stream = rendered(app)
        assert "Forwarding HTTP traffic" in text, text
        assert "[32m" not in text and "[0m" not in text, text


def test_a_phrase_across_a_coloured_outputs_sequences_is_found_in_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full-text index holds a coloured tool output's words as the terminal showed them
    (`fulltext.TextCollector` drops whole sequences): `"Forwarding HTTP traffic"` is found,
    where `32mForwarding` was one word and the phrase found nothing."""
    monkeypatch.setenv("SEANCE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SEANCE_NO_WATCH", "1")
    path = _serveo_session(tmp_path / "sessions")
    root = str(tmp_path / "sessions")
    for query in ('"Forwarding HTTP traffic"', '"known hosts. Forwarding"', "Forwarding"):
        assert main(["ls", "--all", "--json", "--root", root, "--query", query]) == 0, query
        found = json.loads(capsys.readouterr().out)
        assert [session["path"] for session in found] == [str(path)], query
    assert main(["ls", "--all", "--json", "--root", root, "--query", "32mForwarding"]) == 1
    assert json.loads(capsys.readouterr().out or "[]") == []


@pytest.mark.parametrize("limit", [5, 40, 100, 300])
def test_coloured_text_cut_to_a_limit_reads_as_its_plain_text_cut_so(limit: int) -> None:
    """A densely coloured text (more sequence than text) cut for a row: its sequences are
    dropped before the cut, so none is cut in half (`[38;5;` shown) and the "…" that says
    the text goes on is there, exactly as for the same text uncoloured."""
    coloured = "\x1b[38;5;208mA\x1b[0m " * 100
    plain = "A " * 100
    assert display_text(coloured, limit) == display_text(plain, limit)
    assert one_line(coloured, limit) == one_line(plain, limit)
    assert "[" not in display_text(coloured, limit) and "[" not in one_line(coloured, limit)


def test_a_markdown_fence_is_longer_than_every_backtick_run_of_the_text_it_writes() -> None:
    """Two backtick runs kept apart by a control or an escape sequence are one run once the
    sanitiser has dropped what was between them: the fence is counted on what it writes, so
    nothing in the session's text closes it early (an HTML tag after it would be live)."""
    from seance.core.export.md import fenced

    for text in ("a\n``\x1b[0m`\n<img src=x onerror=alert(1)>\n", "``\x07`\n<b>x</b>"):
        fence, *body, closing = fenced(text, "text")
        assert fence.startswith(closing) and closing == "`" * len(closing)
        assert all(closing not in line for line in body), (text, body)
