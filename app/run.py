"""Run seance's own app on the controlling terminal: the UI entry points of the `seance` command.

    run_picker(catalog, cwd=..., scope=..., query=..., enter="resume")   the picker / browser
    run_tree(session)                                                    one session's tree view

Each checks for a terminal first (`TerminalUnavailable`, before Textual is imported: most of
a second) and returns what the user chose, or None when they left without choosing.  The
UI reads keys from and draws on `/dev/tty` (see `terminal`): stdin, stdout and stderr stay
the caller's, so the caller prints the answer after the UI has closed.

These run seance's own app, which owns the process (`SeanceApp` alone tunes the garbage
collector); an agent embedding the picker pushes `SessionPickerScreen` instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from seance.core import gcpause

from .results import PickResult
from .terminal import check_terminal, controlling_terminal, driver_for

if TYPE_CHECKING:  # Textual is imported only once a terminal is known to be there
    from seance.core.catalog import Catalog
    from seance.core.listing import ChildMode
    from seance.core.session import Session

    from .app import SeanceApp


def run_picker(
    catalog: Catalog,
    *,
    cwd: str,
    scope: Literal["project", "all"] = "project",
    query: str = "",
    enter: Literal["resume", "tree"] = "resume",
    children: ChildMode = "threaded",
    save_children: Callable[[ChildMode], object] | None = None,
    confirm_missing_cwd: bool = True,
    open_session: str | None = None,
) -> PickResult | None:
    """The session picker over `catalog` (`enter="tree"`: the browser, Enter opens the tree view);
    `children`/`save_children`/`confirm_missing_cwd`/`open_session`: see `PickerOptions`."""
    check_terminal()
    gcpause.pause_launch()  # until the first frame (`SeanceApp`), or the app's end
    prefetch = getattr(catalog, "prefetch_stored", None)  # the first rows, made before Textual is imported
    if prefetch is not None:
        # Not in a thread beside the import: on a warm index the listing is CPU (~25 ms at 10,000
        # sessions), so the thread waited for the GIL behind the import, was not done when the
        # screen mounted (which then waited 30-50 ms for it), and cost ~40 ms more CPU in all.
        prefetch(str(Path(cwd).resolve()) if scope == "project" else None, background=False)
    from .app import SeanceApp
    from .screens.session_list import PickerOptions, SessionPickerScreen

    options = PickerOptions(
        enter=enter,
        children=children,
        save_children=save_children,
        confirm_missing_cwd=confirm_missing_cwd,
        open_session=open_session,
    )

    def make_screen() -> SessionPickerScreen:
        return SessionPickerScreen(catalog, cwd=cwd, scope=scope, query=query, options=options)

    result = _run_app(SeanceApp(make_screen))
    return result if isinstance(result, PickResult) else None


def run_tree(session: Session) -> PickResult | None:
    """The tree view of a loaded `session`; a chosen resume point (or fork) as a `PickResult`."""
    check_terminal()
    gcpause.pause_launch()
    from .app import SeanceApp
    from .screens.session_tree import SessionTreeScreen

    path = Path(session.path).resolve()

    result = _run_app(SeanceApp(lambda: SessionTreeScreen(path, standalone=True, session=session)))
    if result is None or getattr(result, "action", None) not in ("resume", "fork"):
        return None
    return PickResult.from_tree(result, path=path, session_id=session.id, cwd=session.cwd)


def _run_app(app: SeanceApp) -> Any:
    """Run `app` on the controlling terminal (see `terminal`): stdin, stdout and stderr stay the caller's."""
    try:
        with controlling_terminal() as fd:
            app.driver_class = driver_for(fd)
            return app.run()
    finally:
        gcpause.end_launch()  # (a no-op once the first frame ended it)


__all__ = ["check_terminal", "run_picker", "run_tree"]
