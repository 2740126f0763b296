"""The rows marked in the session list for a bulk action (ctrl+d deletes them), without a UI.

Marks are kept by path with the summary as it was marked (its size for the confirm dialog, its
title for messages).  They outlive a new query or scope (mark in several searches, delete once)
and are forgotten with the files that go (`drop`).  `PickerModel` owns one; tests drive it
directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from seance.core.model import SessionSummary


class Marks:
    """A set of marked sessions, in the order they were marked."""

    def __init__(self) -> None:
        self._marked: dict[str, SessionSummary] = {}

    def __len__(self) -> int:
        return len(self._marked)

    def __contains__(self, path: object) -> bool:
        return path in self._marked

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._marked)

    @property
    def summaries(self) -> list[SessionSummary]:
        return list(self._marked.values())

    @property
    def total_bytes(self) -> int:
        return sum(summary.size for summary in self._marked.values())

    def toggle(self, summary: SessionSummary) -> bool:
        """Mark the session, or unmark it if it was; returns whether it is marked now."""
        if self._marked.pop(summary.path, None) is not None:
            return False
        self._marked[summary.path] = summary
        return True

    def mark_all(self, summaries: Sequence[SessionSummary]) -> int:
        """Mark every one of `summaries`; if all of them were marked already, unmark them.
        Returns how many changed (negative: unmarked)."""
        if summaries and all(summary.path in self._marked for summary in summaries):
            for summary in summaries:
                del self._marked[summary.path]
            return -len(summaries)
        added = 0
        for summary in summaries:
            if summary.path not in self._marked:
                self._marked[summary.path] = summary
                added += 1
        return added

    def drop(self, paths: Iterable[str]) -> None:
        """Forget sessions that are gone (deleted, or vanished from disk)."""
        for path in paths:
            self._marked.pop(path, None)

    def clear(self) -> None:
        self._marked.clear()


__all__ = ["Marks"]
