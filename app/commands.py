"""The session list's command palette: every picker action, with plain Content prompts."""

from __future__ import annotations

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

# (action, title, help) — the action runs on the screen that owns this provider.  The first
# one is what Enter does: resume in the picker, open the tree in the standalone browser.
RESUME_COMMAND = ("select", "Resume session", "Resume the selected session (Enter)")
OPEN_COMMAND = ("open", "Open session", "Open the selected session's tree, resume from there (Enter)")
PICKER_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("fork", "Fork session", "Pick the selected session to fork it into a new one (Ctrl+F)"),
    ("tree", "Open tree view", "Browse the selected session's tree and resume at any entry (Ctrl+T)"),
    ("toggle_scope", "Toggle scope", "Current folder ↔ all projects (Tab)"),
    ("cycle_sort", "Cycle sort", "Threaded → recent → created → relevance (Ctrl+S)"),
    ("toggle_named", "Toggle named only", "Show only sessions with a name (Ctrl+N)"),
    ("toggle_paths", "Toggle file paths", "Show each session's file path (Ctrl+P / F4)"),
    ("delete", "Delete session", "Move the selected session to the Trash (Ctrl+D)"),
    ("undo_delete", "Undo delete", "Restore the last deleted session (Ctrl+Z)"),
    ("rename", "Rename session", "Give the selected session a name (Ctrl+R)"),
    ("toggle_pin", "Pin / unpin session", "Pinned sessions come first in every sort (Alt+P)"),
    ("edit_tags", "Edit tags", "Tag the selected session; search with tag:x (Alt+T)"),
    ("toggle_preview", "Toggle preview", "Show or hide the context preview (Ctrl+O / F3)"),
    ("help", "Show keys", "List every key of the session list (F1)"),
    ("show_skipped", "Show skipped files", "The files that were not listed, and why (Alt+S)"),
    ("cancel", "Clear query / cancel", "Clear the query, or close the picker (Esc)"),
)


class PickerCommands(Provider):
    """Offers the picker's actions; plain substring matching on the titles (never markup)."""

    def _commands(self):
        screen = self.screen
        options = getattr(screen, "options", None)
        enter = OPEN_COMMAND if getattr(options, "enter", "resume") == "tree" else RESUME_COMMAND
        for action, title, help_text in (enter, *PICKER_COMMANDS):

            async def run(action: str = action) -> None:
                await screen.run_action(action)

            yield title, help_text, run

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
