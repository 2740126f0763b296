"""Withdrawing seance's own toasts when what they say no longer stands.

Textual has no public call to remove one notification (only `App.clear_notifications`,
which would also clear a host app's toasts): `withdraw_toasts` removes the ones with a
given title through `App._unnotify`, the method Textual's own toast uses when it is
dismissed; on a Textual without it, the toasts simply time out as before.
"""

from __future__ import annotations

from textual.app import App


def withdraw_toasts(app: App, title: str) -> int:
    """Remove the notifications titled `title` that are still shown; returns how many."""
    notifications = getattr(app, "_notifications", None)
    unnotify = getattr(app, "_unnotify", None)
    if notifications is None or unnotify is None:
        return 0
    gone = [notification for notification in notifications if notification.title == title]
    for notification in gone:
        unnotify(notification, refresh=False)
    if gone:
        app._refresh_notifications()  # the toast rack redrawn once, without them
    return len(gone)
