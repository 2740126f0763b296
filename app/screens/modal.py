"""SeanceModal: the frame every seance dialog shares (confirm, prompt, help).

A dim backdrop (ModalScreen's) centring one box, `#seance-dialog`; the subclass composes what goes inside.
Its CSS (styles/modal.tcss) is the screen's `CSS`, which Textual scopes to the concrete
screen type, and every id it styles is `seance-` prefixed: nothing leaks into a host's own
dialogs and a host's `#dialog` rules never reach seance's.
"""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen

from ..line_caches import ReleasesLines
from ..paths import stylesheet

ResultType = TypeVar("ResultType")
SHORT_ROWS = 16  # fewer rows than this: a dialog with its padding and buttons lost its hint, or more


class SeanceModal(ReleasesLines, ModalScreen[ResultType]):
    """A centred dialog box; `compose_dialog` yields its content, `dialog_classes` styles the box."""

    CSS: ClassVar[str] = stylesheet("modal.tcss")
    # The one rule about the screen itself (centring the box): Textual scopes a screen's `CSS` to
    # the concrete type (ConfirmScreen...), so a rule naming the shared base lives in its DEFAULT_CSS.
    DEFAULT_CSS = "SeanceModal { align: center middle; }"
    dialog_classes: ClassVar[str] = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="seance-dialog", classes=self.dialog_classes):
            yield from self.compose_dialog()

    def on_mount(self) -> None:
        self._fit_height()

    def on_resize(self) -> None:
        self._fit_height()

    def _fit_height(self) -> None:
        """A short terminal: the box drops its padding, margins and buttons (modal.tcss
        `-short`), so the title, the text and the "Enter … · Esc …" hint still show."""
        self.query_one("#seance-dialog").set_class(self.size.height < SHORT_ROWS, "-short")
        self.call_after_refresh(self._fit_cut_box)

    def _fit_cut_box(self) -> None:
        """A box the terminal cuts at more rows drops them too (the copy dialog's six rows of
        choices at 16-18 rows took its hint, the only word of how to leave it)."""
        for dialog in self.query("#seance-dialog"):  # (none once the dialog is gone)
            if dialog.max_scroll_y > 0:
                dialog.add_class("-short")

    def compose_dialog(self) -> ComposeResult:
        yield from ()
