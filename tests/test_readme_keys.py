"""README's key tables are the app's help: generated from the same bindings, and checked here.

`python -m seance.app.keytable --write README.md` regenerates them; this test names every row
that drifted (a key added to a screen's BINDINGS with a help text shows up here first).
"""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO_ROOT

from seance.app import keytable


def test_readme_key_tables_match_the_apps_help() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    problems = keytable.differences(readme, keytable.tables())
    assert not problems, "\n".join([*problems, f"regenerate with: {keytable.REGENERATE}"])


def test_the_tables_hold_the_pi_keys_and_say_where_seance_differs() -> None:
    rows = {(row.keys, row.action): row.note for rows in keytable.tables().values() for row in rows}
    assert ("PgUp ← Ctrl+B", "page up") in rows and ("Ctrl+← / Alt+←", "fold, or jump up to the branch start") in rows
    assert ("T / Shift+T", "show / hide when labels were set") in rows
    assert "kitty keyboard protocol" in rows[("Ctrl+Shift+O", "previous filter")]
    assert rows[("F4 / Ctrl+P", "show file paths")].startswith("same key")


def test_a_drifted_row_is_named_and_check_exits_1(tmp_path) -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    drifted = readme.replace("| Ctrl+N | named sessions only |", "| Ctrl+N | named only |", 1)
    assert drifted != readme
    problems = keytable.differences(drifted, keytable.tables())
    assert len(problems) == 1 and "list table" in problems[0] and "named only" in problems[0]
    copy = tmp_path / "README.md"
    copy.write_text(drifted, encoding="utf-8")
    check = subprocess.run(
        [sys.executable, "-m", "seance.app.keytable", "--check", str(copy)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 1 and "named only" in check.stderr and keytable.REGENERATE in check.stderr
    subprocess.run([sys.executable, "-m", "seance.app.keytable", "--write", str(copy)], check=True)
    assert copy.read_text(encoding="utf-8") == readme


def test_every_pi_note_names_a_row_of_its_table() -> None:
    """A note is keyed by its row's help text: when that text was reworded ("…, tag:x, is:pinned",
    "(or the selected ones)"), the note for the search and for Ctrl+D (pi's Ctrl+Backspace) fell
    silently out of the README's "vs pi" column."""
    actions = {(name, row.action) for name, rows in keytable.tables().items() for row in rows}
    assert not [key for key in keytable.PI_NOTES if key not in actions]
    notes = {row.action: row.note for row in keytable.tables()["list"]}
    assert "Ctrl+Backspace" in notes["move the session (or the selected ones) to the Trash"]


def test_the_list_keys_pi_lacks_or_runs_otherwise_say_so() -> None:
    """pi 0.73.1's `/resume` cancels on Esc whatever the query and cycles threaded → recent →
    relevance; its keys end there (no selection, copy, stats, export, marks or child mode).
    The table said nothing of either: a pi user's Esc with a query typed, or two Ctrl+S
    for relevance, did what the table gave no reason to expect."""
    notes = {row.keys: row.note for row in keytable.tables()["list"]}
    assert notes["Esc"].startswith("pi cancels at once") and "created" in notes["Ctrl+S"]
    pi_keys = {"type", "↑ ↓ PgUp PgDn Home End", "Enter", "Ctrl+C", "Tab", "Ctrl+N", "Ctrl+R"}
    pi_keys |= {keys for keys in notes if keys.startswith("double-click")}  # (Enter's text: a note would go to both)
    assert not [keys for keys, note in notes.items() if keys not in pi_keys and "browser" not in keys and not note]
