"""Index.search_by_path keeps each term's answer for the index state it was asked in
(`Index._term_files`): a query's earlier words, asked again on every key, come from there; the
answers are the same as asked afresh, and a write makes them be asked again."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from ui_sessions import PROJECT, Spec, make_root, write_session

from seance.core.catalog import Catalog
from seance.core.index import Index
from seance.core.search import parse_query

QUERIES = ("the", "fix", "fix auth", "fix auth !token", "fix", "auth", "fix the", "fix !auth", "fix", "user:fix", "fix")


def answer(index: Index, text: str, within: list[str] | None = None) -> dict[str, str | None]:
    full_text = parse_query(text).full_text()
    assert full_text is not None
    hits = index.search_by_path(full_text, include_cwd=False, within=within)
    return {path: hits.field(path) for path in hits}


def test_kept_term_answers_equal_fresh_ones_in_any_order_of_queries(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    index = catalog.index
    assert index is not None
    paths = [summary.path for summary in catalog.exact()]
    for within in (None, paths[: len(paths) // 2]):
        for text in QUERIES:  # the same terms again and again, with exclusions between
            fresh = Index(tmp_path / "cache")  # no kept answers
            try:
                assert answer(index, text, within) == answer(fresh, text, within), (text, within)
            finally:
                fresh.close()
    assert answer(index, "fix")  # (not vacuous)
    assert len(index._terms) <= Index.TERMS_KEPT


def test_a_write_asks_the_terms_again(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    catalog = Catalog([root], cache_dir=tmp_path / "cache")
    catalog.refresh()
    index = catalog.index
    assert index is not None
    before = answer(index, "quokka fix")
    assert before == {}
    answer(index, "fix")  # kept
    path = write_session(root, Spec("s-new", PROJECT, ("quokka and fix the build",), timedelta(minutes=1)))
    catalog.refresh()
    after_fix = answer(index, "fix")
    assert str(path) in after_fix
    assert set(answer(index, "quokka fix")) == {str(path)}


def test_hits_within_given_paths_are_keyed_by_those_very_strings(tmp_path: Path) -> None:
    """A lookup with the caller's own string is a pointer comparison: the picker looks 40,000
    paths up twice per key; the answer is the unscoped one, restricted to `within`."""
    catalog = Catalog([make_root(tmp_path)], cache_dir=tmp_path / "cache")
    catalog.refresh()
    index = catalog.index
    assert index is not None
    paths = ["".join(summary.path) for summary in catalog.exact()]  # (fresh string objects)
    half = paths[::2]
    for text in ("fix", "the", "fix auth", "auth !token"):
        everywhere = answer(index, text)
        scoped = answer(index, text, half)
        assert scoped == {path: field for path, field in everywhere.items() if path in set(half)}
        full_text = parse_query(text).full_text()
        assert full_text is not None
        mine = {id(path) for path in half}
        assert all(id(path) in mine for path in index.search_by_path(full_text, include_cwd=False, within=half))
    assert answer(index, "fix", half) and answer(index, "fix", half) != answer(index, "fix")  # (not vacuous)
