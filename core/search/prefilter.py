"""Which sessions a query could match, from their folded titles alone: a superset, never a rank.

A query over every session (`Catalog.matching`, behind `seance ls --query`) must not decode
and fold ten thousand summaries to find the few hundred that match.  The index stores each
session's folded id, name and first message (`haystack.folded_title`) and the full-text hits
come from FTS5; `Prefilter.keeps` says, from those and the path and cwd, whether a session
*may* match every positive term.  Only the sessions it keeps are decoded and ranked by
`rank.search`, which alone decides (filters, negations, `tag:`/`is:`, tiers, order).

It must never drop a session `rank` would match: each check below mirrors one way `rank`
lets a term match (title substring or fuzzy, id prefix, the index's hit, path and cwd in
the all-projects scope, a regex on the same strings).  It may keep more.  Exact summaries
carry no message text of their own (`session_text` is empty), so titles, paths and the
index's hits are all there is.  tests/test_cli_query.py compares it with the slow path.
"""

from __future__ import annotations

from collections.abc import Collection

from .fuzzy import MIN_FUZZY, fuzzy_match, fuzzy_pattern
from .query import Query, Term, fold


class Prefilter:
    """`keeps(...)` for one query, the index's hits (paths) and the scope (`paths`: all projects)."""

    def __init__(self, query: Query, text_hit_paths: Collection[str], paths: bool) -> None:
        self.terms = query.positive
        self.hits = text_hit_paths
        self.paths = paths
        self._patterns = {
            term.text: fuzzy_pattern(term.text)
            for term in self.terms
            if term.kind == "fuzzy" and len(term.text) >= MIN_FUZZY
        }

    def keeps(self, path: str, title: tuple[str, str, str], cwd: str) -> bool:
        """Whether the session at `path` (its folded `title`, its header `cwd`) may match."""
        if not self.terms:
            return True
        hit = path in self.hits
        folded_path = folded_cwd = None
        for term in self.terms:
            if hit and term.kind != "regex":
                continue  # the index found the query there: rank counts it as a full-text hit
            if self.paths and folded_path is None:
                folded_path, folded_cwd = fold(path), fold(cwd)
            if not self._term_may_match(term, title, folded_path, folded_cwd):
                return False
        return True

    def _term_may_match(self, term: Term, title: tuple[str, str, str], path: str | None, cwd: str | None) -> bool:
        ident, name, first = title
        places = [ident, name, first] if path is None or cwd is None else [ident, name, first, cwd, path]
        if term.kind == "regex":
            assert term.pattern is not None
            found = term.pattern.found
            if found(ident) or found(name) or found(first):
                return True
            return cwd is not None and path is not None and (term.pattern.found_shared(cwd) or found(path))
        if term.within:
            return False  # narrowed to an index field: only the index's hits match it
        text = term.text
        if ident.startswith(text) or any(text in place for place in places[1:]):
            return True
        pattern = self._patterns.get(text) if term.kind == "fuzzy" else None
        return pattern is not None and fuzzy_match(pattern, name or first, len(text)) is not None
