"""The rows selected in the session list for a bulk action (ctrl+d deletes them), without a UI.

Selection are kept by path with the summary as it was selected (its size for the confirm dialog, its
title for messages).  They outlive a new query or scope (select in several searches, delete once)
and are forgotten with the files that go (`drop`).  `PickerModel` owns one; tests drive it
directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seance.core.model import SessionSummary


class Selection:
    """A set of selected sessions, in the order they were selected."""

    def __init__(self) -> None:
        self._selected: dict[str, SessionSummary] = {}

    def __len__(self) -> int:
        return len(self._selected)

    def __contains__(self, path: object) -> bool:
        return path in self._selected

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._selected)

    @property
    def summaries(self) -> list[SessionSummary]:
        return list(self._selected.values())

    @property
    def total_bytes(self) -> int:
        return sum(summary.size for summary in self._selected.values())

    def toggle(self, summary: SessionSummary) -> bool:
        """Select the session, or deselect it if it was; returns whether it is selected now."""
        if self._selected.pop(summary.path, None) is not None:
            return False
        self._selected[summary.path] = summary
        return True

    def select_all(self, summaries: Sequence[SessionSummary]) -> int:
        """Select every one of `summaries`; if all of them were selected already, deselect them.
        Returns how many changed (negative: deselected)."""
        if summaries and all(summary.path in self._selected for summary in summaries):
            for summary in summaries:
                del self._selected[summary.path]
            return -len(summaries)
        added = 0
        for summary in summaries:
            if summary.path not in self._selected:
                self._selected[summary.path] = summary
                added += 1
        return added

    def drop(self, paths: Iterable[str]) -> None:
        """Forget sessions that are gone (deleted, or vanished from disk)."""
        for path in paths:
            self._selected.pop(path, None)

    def clear(self) -> None:
        self._selected.clear()


__all__ = ["Selection"]
