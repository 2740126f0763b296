"""The command palettes (F2) of the session list and of the tree view: every action of the
screen, with plain Content prompts.

Each command's help ends with the keys that run the same action, read from the bindings live
on the screen (as F1's help is): a key the host owns or a keymap moved is never misnamed.
"""

from __future__ import annotations

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.screen import Screen

from .screens.help import key_label

# (action, title, help) — the action runs on the screen that owns this provider.  The first
# one is what Enter does: resume in the picker, open the tree in the standalone browser.
RESUME_COMMAND = ("select", "Resume session", "Resume the selected session")
OPEN_COMMAND = ("open", "Open session", "Open the selected session's tree, resume from there")
PICKER_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("fork", "Fork session", "Pick the selected session to fork it into a new one"),
    ("tree", "Open tree view", "Browse the selected session's tree and resume at any entry"),
    ("toggle_scope", "Toggle scope", "Current folder ↔ all projects"),
    ("cycle_sort", "Cycle sort", "Threaded → recent → created → relevance"),
    ("toggle_named", "Toggle named only", "Show only sessions with a name"),
    ("cycle_children", "Cycle child sessions", "Forks and subagents: hidden → threaded → flat"),
    ("toggle_paths", "Toggle file paths", "Show each session's file path"),
    ("delete", "Delete session", "Move the selected session to the Trash"),
    ("undo_delete", "Undo delete", "Restore the last deleted session"),
    ("rename", "Rename session", "Give the selected session a name (an empty one clears it)"),
    ("copy", "Copy resume command, id or path", "To the clipboard, quoted for pasting into a shell"),
    ("export", "Export session", "The context it resumes with, as Markdown, HTML or JSON"),
    ("toggle_select", "Select / deselect row", "Select sessions for one bulk delete"),
    ("select_all", "Select all matching", "Select every session the query matches (pinned ones excepted)"),
    ("toggle_pin", "Pin / unpin session", "Pinned sessions come first in every sort"),
    ("edit_tags", "Edit tags", "Tag the selected session; search with tag:x"),
    ("toggle_preview", "Toggle preview", "Show or hide the context preview"),
    ("toggle_stats", "Toggle stats", "Tokens, cost, models, tools and files of the session, in the preview"),
    ("help", "Show keys", "List every key of the session list"),
    ("show_skipped", "Show skipped files", "The files that were not listed, and why"),
    ("cancel", "Clear query / cancel", "Clear the query, or close the picker"),
)


def _keys_by_action(screen: Screen) -> dict[str, str]:
    """action -> its keys as help shows them ("Ctrl+D"), from the bindings live on `screen`."""
    keys: dict[str, list[str]] = {}
    for key, active in screen.active_bindings.items():
        if active.node is not screen.app:
            keys.setdefault(active.binding.action, []).append(key_label(key))
    return {action: " / ".join(dict.fromkeys(labels)) for action, labels in keys.items()}


# The tree view's, in the order of its help (F1).
TREE_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("select", "Resume here", "Resume the session at the highlighted entry"),
    ("set_filter('default')", "Filter: default", "Hide bookkeeping entries (model and thinking changes, labels)"),
    ("set_filter('no-tools')", "Filter: no tool results", "Hide tool results too"),
    ("set_filter('user-only')", "Filter: user messages only", "Show only what the user typed"),
    ("set_filter('labeled-only')", "Filter: labeled entries only", "Show only entries with a label"),
    ("set_filter('all')", "Filter: all entries", "Show every entry"),
    ("edit_label", "Edit label", "Label the highlighted entry (an empty label removes it)"),
    ("toggle_label_times", "Toggle label times", "Show or hide when each label was set"),
    ("export", "Export context", "The context at the highlighted entry, as Markdown, HTML or JSON"),
    ("help", "Show keys", "List every key of the tree view"),
    ("back", "Back", "Clear the search, else leave the tree"),
)


class ScreenCommands(Provider):
    """Offers a screen's actions (`_entries`); plain substring matching on the titles (never markup)."""

    def _entries(self) -> tuple[tuple[str, str, str], ...]:
        """(action, title, help) of each command, the action run on the screen."""
        raise NotImplementedError

    def _commands(self):
        screen = self.screen
        keys = _keys_by_action(screen)
        for action, title, help_text in self._entries():
            # (the palette sets a filter; its key, the same filter, toggles it as pi's does)
            shown_keys = keys.get(action) or keys.get(action.replace("set_filter(", "filter(", 1))

            async def run(action: str = action) -> None:
                await screen.run_action(action)

            yield title, f"{help_text} ({shown_keys})" if shown_keys else help_text, run

    async def discover(self) -> Hits:
        for title, help_text, run in self._commands():
            yield DiscoveryHit(Content(title), run, help=help_text)

    async def search(self, query: str) -> Hits:
        needle = query.casefold().strip()
        for title, help_text, run in self._commands():
            position = title.casefold().find(needle)
            if needle and position < 0:
                continue
            prompt = Content(title)
            if needle:
                prompt = prompt.stylize("bold underline", position, position + len(needle))
            score = 1.0 if position == 0 else 0.5
            yield Hit(score, prompt, run, text=title, help=help_text)


class PickerCommands(ScreenCommands):
    """The session list's actions (Enter's first: resume, or open the tree in the browser)."""

    def _entries(self) -> tuple[tuple[str, str, str], ...]:
        options = getattr(self.screen, "options", None)
        enter = OPEN_COMMAND if getattr(options, "enter", "resume") == "tree" else RESUME_COMMAND
        return (enter, *PICKER_COMMANDS)


class TreeCommands(ScreenCommands):
    """The tree view's actions."""

    def _entries(self) -> tuple[tuple[str, str, str], ...]:
        return TREE_COMMANDS
