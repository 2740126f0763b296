"""The picker's pure model: merge of loaded + changed + dropped, undo, scope, sort, filter, "new".

No Pilot: real session files in a tmp root, read by a real `Catalog`, searched by the real
ranking; the model is driven directly, as the screen drives it from its messages.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from ui_sessions import OTHER, PROJECT, Spec, make_root, session_path, write_session

from seance.app.picker_model import EMPTY, UNDO_KEPT, PickerModel
from seance.core.catalog import Catalog, in_project
from seance.core.model import SessionSummary
from seance.core.search import search


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_root(tmp_path)


def exact(root: Path) -> list[SessionSummary]:
    catalog = Catalog([root], cache_dir=root.parent / "cache")
    try:
        return catalog.exact(None)
    finally:
        catalog.close()


def one(root: Path, spec: Spec) -> SessionSummary:
    path = write_session(root, spec)
    [summary] = [summary for summary in exact(root) if summary.path == str(path)]
    return summary


def loaded_model(root: Path, *, scope: str = "project") -> PickerModel:
    """A model as the screen has it after the exact refresh: both scopes loaded."""
    everything = exact(root)
    model = PickerModel(PROJECT, scope=scope)  # type: ignore[arg-type]
    model.loaded("all", everything, exact=True)
    model.loaded("project", in_project(everything, PROJECT), exact=True)
    return model


def ids(rows) -> list[str]:
    return [row.summary.id for row in rows]


def test_the_model_imports_no_textual() -> None:
    code = (
        "import sys, seance.app.picker_model\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""


def test_quick_then_exact_replaces_and_reports_the_first_listing(root: Path) -> None:
    catalog = Catalog([root], cache_dir=root.parent / "cache")
    model = PickerModel(PROJECT)
    assert model.rows() == [] and not model.loaded_scope
    assert model.loaded("project", catalog.quick(PROJECT), exact=False) is True
    assert model.loaded_scope
    assert model.loaded("project", catalog.exact(PROJECT), exact=True) is False
    assert all(row.summary.exact for row in model.rows())
    assert ids(model.rows()) == ["s-auth", "s-fork", "s-named", "s-docs", "s-old"]
    assert [row.prefix for row in model.rows()][:2] == ["", "└─ "], "threaded: the fork under its parent"
    catalog.close()


def test_merge_of_loaded_changed_and_dropped(root: Path) -> None:
    model = loaded_model(root)
    fresh = one(root, Spec("s-fresh", PROJECT, ("brand new",), timedelta(seconds=5)))
    elsewhere = one(root, Spec("s-away", OTHER, ("another project",), timedelta(seconds=4)))
    docs = one(root, Spec("s-docs", PROJECT, ("update the README", "more", "and more"), timedelta(days=2)))
    gone = str(session_path(root, Spec("s-old", PROJECT)))

    model.changed([fresh, elsewhere, docs], [gone])

    assert ids(model.rows()) == ["s-fresh", "s-auth", "s-fork", "s-named", "s-docs"], "added, updated, dropped"
    assert next(row for row in model.rows() if row.summary.id == "s-docs").summary.message_count == 6
    assert len(model.summaries["project"]) == 5, "the update replaced the row, it did not add one"
    assert {summary.id for summary in model.summaries["all"]} >= {"s-fresh", "s-away"}
    assert all(summary.path != gone for summaries in model.summaries.values() for summary in summaries)
    assert gone not in model.known and fresh.path in model.known and elsewhere.path in model.known


def test_new_counter_counts_arrivals_above_the_viewport_in_scope_only(root: Path) -> None:
    model = loaded_model(root)
    fresh = one(root, Spec("s-fresh", PROJECT, ("brand new",), timedelta(seconds=5)))
    away = one(root, Spec("s-away", OTHER, ("another project",), timedelta(seconds=4)))
    model.changed([fresh], at_top=True)
    assert model.new_count == 0, "at the top the user sees it arrive"
    second = one(root, Spec("s-second", PROJECT, ("second",), timedelta(seconds=3)))
    model.changed([second, away], at_top=False)
    assert model.new == {second.path}, "another project's session is not new in this folder"
    model.changed([second], at_top=False)
    assert model.new_count == 1, "a session seen again is no new one"
    model.changed([], [second.path])
    assert model.new_count == 0, "the counter is the new sessions present"
    third = one(root, Spec("s-third", PROJECT, ("third",), timedelta(seconds=2)))
    model.changed([third], at_top=False)
    model.toggle_scope()
    assert model.new_count == 0, "a scope switch starts the count again"


def test_bookkeeping_stays_bounded_by_the_files_present(root: Path) -> None:
    """The merge half of tests/test_ui_list_live.py's 2000-file test, without the watcher:
    2000 distinct sessions come and go, the sets track what is present."""
    model = loaded_model(root)
    template = model.summaries["project"][0]
    present = len(model.known)
    for round_number in range(20):
        batch = [replace(template, path=f"/gone/r{round_number}n{number}.jsonl") for number in range(100)]
        model.changed(batch, at_top=False)
        assert model.new_count == 100 and len(model.known) == present + 100
        model.changed([], [summary.path for summary in batch])
        assert model.new_count == 0 and len(model.known) == present
    assert all(len(summaries) <= present for summaries in model.summaries.values())


def test_an_exact_listing_of_everything_forgets_paths_that_are_gone(root: Path) -> None:
    model = loaded_model(root)
    ghost = "/nowhere/ghost.jsonl"
    model.known.add(ghost)
    model.loaded("all", exact(root), exact=True)
    assert ghost not in model.known


def test_deleted_then_undone(root: Path) -> None:
    model = loaded_model(root)
    named = next(summary for summary in model.summaries["project"] if summary.id == "s-named")
    assert not model.can_undo and model.undo_next() is None
    model.trashed("receipt-1", named)
    assert "s-named" not in ids(model.rows()) and named.path not in model.known and model.can_undo
    deleted = model.undo_next()
    assert deleted is not None and deleted.receipt == "receipt-1" and deleted.summary is named
    assert not model.can_undo
    model.changed([named], restored=True, at_top=False)
    assert "s-named" in ids(model.rows())
    assert model.new_count == 0, "a restored session is not new"


def test_the_undo_stack_keeps_the_latest_deletions(root: Path) -> None:
    model = loaded_model(root)
    summary = model.summaries["project"][0]
    for number in range(UNDO_KEPT + 5):
        model.trashed(number, summary)
    assert len(model.deleted) == UNDO_KEPT
    assert model.undo_next().receipt == UNDO_KEPT + 4


def test_scope_switch(root: Path) -> None:
    model = PickerModel(PROJECT)
    everything = exact(root)
    model.loaded("project", in_project(everything, PROJECT), exact=True)
    assert model.toggle_scope() == "all" and not model.loaded_scope, "all projects is listed on demand"
    model.loaded("all", everything, exact=True)
    assert len(model.rows()) == 8 and model.empty_text == EMPTY[("all", False)]
    assert model.toggle_scope() == "project" and len(model.rows()) == 5


def test_sort_cycle_without_and_with_a_query(root: Path) -> None:
    model = loaded_model(root)
    assert model.sort == "threaded"
    assert model.cycle_sort() == "recent"
    assert ids(model.rows()) == ["s-auth", "s-fork", "s-named", "s-docs", "s-old"]
    assert all(row.prefix == "" for row in model.rows())
    assert model.cycle_sort() == "created"
    assert ids(model.rows())[0] == "s-auth"
    assert model.cycle_sort() == "relevance"
    assert model.cycle_sort() == "threaded"

    assert model.hit_rows() is None, "no query: nothing to re-order, the screen rebuilds"
    model.query = "auth"
    hits = search(model.visible(), model.query)
    assert model.searched("a stale query", hits) is None, "a newer query is running"
    rows = model.searched("auth", hits)
    assert rows is not None and {row.summary.id for row in rows} == {"s-auth", "s-fork"}
    assert all(row.hit is not None for row in rows)
    model.cycle_sort()
    assert ids(model.hit_rows()) == ["s-auth", "s-fork"], "recent re-orders the hits"
    model.drop([rows[0].path])
    assert len(model.hit_rows()) == 1, "a dropped session leaves the hits too"
    model.query = ""
    model.rows()
    assert model.hits is None


def test_named_filter(root: Path) -> None:
    model = loaded_model(root)
    assert model.toggle_named() is True
    assert ids(model.rows()) == ["s-named"]
    assert model.empty_text == EMPTY[("project", True)]
    model.toggle_scope()
    assert model.empty_text == EMPTY[("all", True)]
    blank = one(root, Spec("s-blank", PROJECT, ("x",), timedelta(seconds=5), name="   "))
    model.toggle_scope()
    model.changed([blank])
    assert ids(model.rows()) == ["s-named"], "a blank name is no name"
    assert model.toggle_named() is False and len(model.rows()) == 6


def test_plain_rows_are_remembered_until_the_list_sort_or_marks_change(root: Path) -> None:
    """Tab back, Esc after a query, a sort seen before: the same listing's rows are not made
    again (0.7 s of CPU at 100,000 sessions); a changed list, sort or marks makes new ones."""
    from seance.core.marks import Mark

    model = loaded_model(root)
    project = model.rows()
    model.toggle_scope()
    every = model.rows()
    model.toggle_scope()
    assert model.rows() is project and every is not project
    model.cycle_sort()
    resorted = model.rows()
    assert resorted is not project
    for _ in range(3):  # back to the first sort
        model.cycle_sort()
    assert model.rows() is project
    first = project.summaries()[0]
    model.marks = {first.id: Mark(pinned=True)}  # replaced whole, as the screen does
    pinned = model.rows()
    assert pinned is not project and pinned[0].mark.pinned
    model.changed([replace(first, name="renamed")])
    assert model.rows() is not pinned
    assert any(row.summary.name == "renamed" for row in model.rows())


def test_an_exact_listing_equal_to_the_listed_one_keeps_the_listed_list(root: Path) -> None:
    """The exact refresh found nothing changed since the stored listing: the model keeps its
    list (whose rows are made), and takes the exact one when any session differs."""
    model = PickerModel(PROJECT)
    stored = exact(root)
    model.loaded("all", stored, exact=False)
    again = exact(root)  # equal summaries, other objects
    assert again is not stored and model.as_listed("all", again) is stored
    changed = [replace(again[0], name="renamed since"), *again[1:]]
    assert model.as_listed("all", changed) is changed
    fewer = again[1:]
    assert model.as_listed("all", fewer) is fewer
    assert model.as_listed("project", again) is again, "a scope not listed yet"
