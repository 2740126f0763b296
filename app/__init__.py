"""seance's Textual UI: the session picker, the tree view, and the standalone app.

An embedding agent needs only:

    from seance.app import SessionPickerScreen, PickerOptions, PickResult
    from seance.core.catalog import Catalog

    result = await self.push_screen_wait(SessionPickerScreen(Catalog(), cwd=os.getcwd()))

The `seance` command runs the UI through `run_picker` and `run_tree` (`run.py`): seance's own
app on the controlling terminal.  Names are imported lazily, so `import seance.app` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "PickResult": ".results",
    "PickerOptions": ".screens.session_list",
    "SessionPickerScreen": ".screens.session_list",
    "SessionTreeScreen": ".screens.session_tree",
    "TreeResult": ".screens.session_tree",
    "SeanceApp": ".app",
    "TerminalUnavailable": ".terminal",
    "check_terminal": ".terminal",
    "run_picker": ".run",
    "run_tree": ".run",
    "use_fresh_contexts": ".thread_context",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value
