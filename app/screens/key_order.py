"""Keys that act on the list act on it as the keys typed before them made it (issue 14).

The picker's keys (Enter, Ctrl+T, Ctrl+F, Ctrl+D, the arrows, Tab...) are priority bindings of
the screen: Textual runs them in the app's queue as the key arrives, while the characters typed
before them in the same burst (a fast typist, `tmux send-keys 'fix sqlite' Enter`, pi's
`/resume` driving `seance pick`, a busy frame) still wait in the query input's queue, and the
search of the query they make runs in a worker whose rows land later still.  So "zebra" then
Enter in one write resumed the row highlighted *before* the query: the wrong session, which
the agent then appends to.

`KeyOrder` is mixed into `SessionPickerScreen`.  An action decorated with `in_key_order`
decides in the input's queue, after the keys typed before it (`_after_typed_keys`), and joins
a queue of keys.  A key that acts on the rows (`rows=True`: Enter, Ctrl+T/F/D/R/Y, the marks,
Space, the cursor keys) runs once the list shows the rows of the query as typed: the query
the model searched is the input's value and the newest rows request has landed (a search's
first page counts: it is a prefix of the final order, whose rows keep the cursor).  Until
then it waits, without blocking the UI thread, and the keys behind it wait in order ("zebra",
Down, Down, Enter: the third hit).  A key that only changes the list (Tab, Ctrl+S, Ctrl+N,
Alt+C) runs as soon as the keys before it have.  What is typed into the query while a key
waits (characters, Backspace, Ctrl+U...) is held and typed once the keys before it have run:
into the query as they left it, or nowhere if one left the picker or opened a dialog (pi's
picker, synchronous, would have typed it there; a dialog typed into unseen is not seance's
way).  One exception: a key that opens a screen built to take keys pressed ahead of it
(`TAKES_KEYS_AHEAD`: the tree, which holds them while it loads) hands the keys behind it on
to that screen, as the terminal would have sent them there: Ctrl+T, Down, Enter in one burst
opens the tree, moves its cursor and resumes there.  Esc cancels the waiting keys and what is
held (and does nothing else); so does leaving the screen otherwise.  A query with no rows (none match, invalid, or its
search failed): the key does nothing, and Enter says so (the cursor keys still move over the
rows an invalid query leaves on screen, as before).  This is fzf's `wait` action
(junegunn/fzf#4842: the keys after it wait for the search, Esc cancels them) made the rule for
the keys that pick, and what pi's `/resume` does by construction (it filters synchronously on
every key).  Keys pressed one at a time find the list settled and act at once, as before.
"""

from __future__ import annotations

import functools
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from textual import events

from seance.core.text import display_text

if TYPE_CHECKING:
    from textual.app import App
    from textual.binding import BindingsMap
    from textual.screen import Screen
    from textual.timer import Timer, TimerCallback
    from textual.widgets import Input

    from ..picker_model import PickerModel
    from ..widgets.session_list import SessionList
    from ..widgets.status_bar import StatusBar

WAIT_NOTICE = 0.2  # seconds a key waits for its rows before the status line says so
_KEY_CHARACTERS = {"enter": "\r", "tab": "\t", "space": " ", "question_mark": "?", "escape": "\x1b"}
RowsState = Literal["ready", "waiting", "none"]

Action = TypeVar("Action", bound=Callable[..., None])


@dataclass
class _Held:
    """A key typed (or text pasted: `key` "paste", `character` the text) into the query while a
    key before it waits: typed once that key has run."""

    key: str
    character: str | None


@dataclass
class _Waiting:
    """A key's action, to `run` once its turn comes."""

    run: Callable[[], object]
    rows: bool  # it acts on the rows: they must be the query's
    moves: bool  # it only moves the cursor: it moves it too over rows that are not the query's (invalid)
    pressed: tuple[str, str | None] | None = None  # its key, to hand on to a screen opened before it


def in_key_order(*, rows: bool = True, moves: bool = False) -> Callable[[Action], Action]:
    """Make a screen action run in the order typed, on the list as the keys before it made it
    (`rows`: once the query's rows have landed).  `moves`: a cursor key, which moves the cursor
    over the rows left on screen by a query that has none (invalid, or its search failed), as
    it always did; the others do nothing there.  Called from inside another such action (Enter
    opening the tree), it runs at once: it is part of that key."""

    def wrap(action: Action) -> Action:
        @functools.wraps(action)
        def ordered(self: KeyOrder, *args: Any) -> None:
            pressed = None if self._key_running else self._key_of(action.__name__, args)
            self._in_key_order(lambda: action(self, *args), rows=rows, moves=moves, pressed=pressed)

        return ordered  # type: ignore[return-value]

    return wrap


class KeyOrder:
    """The queue of keys waiting for the keys typed before them and for their query's rows."""

    _landed_generation: int = 0  # the newest rows request whose rows (or first page) are on screen
    _failed_generation: int = -1  # a rows request whose search failed: its rows never come
    _unparsed: str | None = None  # the query that did not parse (its search never ran)
    _key_running: bool = False
    _draining: bool = False
    _wait_timer: Timer | None = None
    _wait_said: str | None = None  # the status line's "waiting" notice, while it is shown
    _rebuild_after_keys: bool = False  # the watcher's changes, merged, shown once no key waits
    # a screen a waiting key opened, which takes the keys behind it (weakly: closed, it is freed)
    _keys_to: weakref.ref[Screen[Any]] | None = None

    if TYPE_CHECKING:  # what the mixin uses of the screen it is mixed into
        model: PickerModel
        _rows_generation: int
        _bindings: BindingsMap
        app: App[Any]

        @property
        def is_active(self) -> bool: ...

        @property
        def search_input(self) -> Input: ...

        @property
        def session_list(self) -> SessionList: ...

        @property
        def status(self) -> StatusBar: ...

        def set_timer(
            self, delay: float, callback: TimerCallback | None = None, *, name: str | None = None, pause: bool = False
        ) -> Timer: ...

        def _rebuild(self, *, top: bool = False) -> None: ...

    @property
    def _waiting_keys(self) -> deque[_Waiting | _Held]:
        return self.__dict__.setdefault("_key_queue", deque())

    @property
    def _replayed_keys(self) -> list[events.Key | events.Paste]:
        """Held keys posted to the input again, their turn come: it takes them as typed."""
        return self.__dict__.setdefault("_key_replays", [])

    def _holds_typed_key(self, event: events.Key | events.Paste) -> bool:
        """Whether the query input leaves `event` (a character or an editing key, in its own
        queue) to the queue, to be typed after the keys waiting before it (True: held).  Typed
        while Enter waits for "zebra"'s rows, "x" is typed after the Enter has run (into no
        query, the picker gone), not into the query Enter then acts on; after a Down, into the
        query as the Down left it."""
        replayed = self._replayed_keys
        if any(event is key for key in replayed):  # (typed now, its turn come)
            replayed.remove(event)
            return False
        if not self._waiting_keys:
            return False
        if isinstance(event, events.Paste):
            self._waiting_keys.append(_Held("paste", event.text))
        else:
            self._waiting_keys.append(_Held(event.key, event.character))
        return True

    def _after_typed_keys(self, decide: Callable[[], object]) -> None:
        """Run `decide` in the query input's own queue, after the keys that arrived before the
        one being handled.  A priority binding runs in the app's queue, as the key arrives; the
        characters before it in the same burst (typed fast, pasted, a busy frame) are still
        waiting in the input's queue, so the query it would read or set is not the user's yet.
        `decide` checks that this screen is still on top: a priority key after this one (a
        second Esc, Enter, F1) may have acted before it runs."""
        self.search_input.call_later(decide)

    def _in_key_order(
        self,
        run: Callable[[], object],
        *,
        rows: bool,
        moves: bool = False,
        pressed: tuple[str, str | None] | None = None,
    ) -> None:
        if self._key_running:  # (called by the key being run: part of it)
            run()
            return

        def decided() -> None:
            if self.is_active:  # (a priority key after it may have left already)
                self._keys_to = None
                self._waiting_keys.append(_Waiting(run, rows, moves, pressed))
                self._run_waiting_keys()
            elif pressed is not None:
                self._hand_on(*pressed)

        self._after_typed_keys(decided)

    def _key_of(self, action: str, args: tuple[Any, ...]) -> tuple[str, str | None] | None:
        """The key (and its character) bound to screen action method `action` with `args`:
        the key that ran it, to hand on if a key before it opens a screen (`_hand_on`)."""
        from textual.actions import parse

        name = action.removeprefix("action_")
        for key, bindings in self._bindings.key_to_bindings.items():
            for binding in bindings:
                if parse(binding.action)[1:] == (name, args):
                    return key, _KEY_CHARACTERS.get(key)
        return None

    def _hand_on(self, key: str, character: str | None) -> bool:
        """Press `key` again for the screen a key before it opened (`TAKES_KEYS_AHEAD`: the
        tree), as the terminal would have sent it there once that screen was on top: True when
        handed on.  False for any other screen: a dialog takes no key pressed before it showed."""
        target = self._keys_to() if self._keys_to is not None else None
        if target is None or self.app.screen is not target:
            return False
        event = events.Paste(character or "") if key == "paste" else events.Key(key, character)
        event.set_sender(self.app)  # (a key from the terminal, not one bubbling up: the app dispatches it)
        self.app.post_message(event)
        return True

    def _rows_state(self) -> RowsState:
        """Whether the list shows the rows of the query as typed ("none": it has none to show)."""
        typed = self.search_input.value
        if typed != self.model.query:  # (its change has not reached the screen yet)
            return "waiting"
        if not self.model.loaded_scope:  # (searched over no sessions: its rows come with the listing)
            return "waiting"
        if self.model.searching and self._unparsed == typed:
            return "none"
        if self._failed_generation == self._rows_generation:
            return "none"
        return "ready" if self._landed_generation >= self._rows_generation else "waiting"

    def _rows_landed(self, generation: int) -> None:
        """Rows request `generation`'s rows (or its first page) are on screen: the keys waiting
        for them run."""
        self._landed_generation = max(self._landed_generation, generation)
        self._run_waiting_keys()

    def _rows_failed(self, generation: int) -> None:
        """Rows request `generation`'s search failed (said on the status line)."""
        self._failed_generation = generation
        self._run_waiting_keys()

    def _query_unparsed(self, text: str | None) -> None:
        """`text` did not parse (None: the query did): its search never runs."""
        self._unparsed = text
        if text is not None:
            self._run_waiting_keys()

    def _run_waiting_keys(self) -> None:
        """Run the waiting keys in order, up to one whose query's rows have not landed yet."""
        if self._draining:  # (a key's action made rows at once: the loop below goes on)
            return
        self._draining = True
        try:
            queue = self._waiting_keys
            while queue:
                key = queue[0]
                if not self.is_active:
                    self._hand_on_waiting_keys()
                    break
                if isinstance(key, _Held):  # typed behind a key that has run: typed now, the rest after it
                    self._type_held_keys()
                    self._after_typed_keys(self._run_waiting_keys)
                    return
                state = self._rows_state() if key.rows else "ready"
                if state == "waiting":
                    self._notice_waiting()
                    return
                queue.popleft()
                if state == "ready" or key.moves:
                    self._key_running = True
                    try:
                        key.run()
                    finally:
                        self._key_running = False
                    if not self.is_active and getattr(self.app.screen, "TAKES_KEYS_AHEAD", False):
                        self._keys_to = weakref.ref(self.app.screen)  # (it opened it: the keys behind it are its)
            self._waited()
        finally:
            self._draining = False

    def _hand_on_waiting_keys(self) -> None:
        """This screen was left or covered: the keys waiting behind the one that did it go to the
        screen it opened, if it takes them (`_hand_on`), else nowhere."""
        keys = list(self._waiting_keys)
        self._waiting_keys.clear()
        for key in keys:
            if isinstance(key, _Held):
                self._hand_on(key.key, key.character)
            elif key.pressed is not None:
                self._hand_on(*key.pressed)

    def _type_held_keys(self) -> None:
        """Post the held keys at the head of the queue to the input, as the app forwards a key
        (if one bubbles back, the app does not take it for a new key from the terminal)."""
        queue = self._waiting_keys
        while queue and isinstance(held := queue[0], _Held):
            queue.popleft()
            replay: events.Key | events.Paste
            if held.key == "paste":
                replay = events.Paste(held.character or "")
            else:
                replay = events.Key(held.key, held.character)
                replay._set_forwarded()
            self._replayed_keys.append(replay)
            self.search_input.post_message(replay)

    def _notice_waiting(self) -> None:
        if self._wait_timer is None:
            self._wait_timer = self.set_timer(WAIT_NOTICE, self._say_waiting)

    def _say_waiting(self) -> None:
        self._wait_timer = None
        if self._waiting_keys:
            query = display_text(self.search_input.value, 40)
            self.status.show_message(f"Waiting for the rows of “{query}” · esc: cancel")
            self._wait_said = self.status.message

    def _waited(self) -> None:
        """No key waits any more: the notice goes, and the watcher's changes held back for
        them are shown."""
        if self._wait_timer is not None:
            self._wait_timer.stop()
            self._wait_timer = None
        said, self._wait_said = self._wait_said, None
        if said is not None and self.status.message == said:
            self.status.show_message("")
        if self._rebuild_after_keys and self.is_active:  # (covered: `_rebuild_held_back` on its return)
            self._rebuild_after_keys = False
            self._rebuild()

    def _rebuild_held_back(self) -> None:
        """Back on top: the watcher's changes held back for keys since dropped are shown."""
        if self._rebuild_after_keys and not self._waiting_keys:
            self._rebuild_after_keys = False
            self._rebuild()

    def _run_next(self, action: Callable[[], object]) -> None:
        """Run `action` as the next key, in the place of the key being run (Space on an empty
        query selects: before the keys typed after it, once its query's rows are here)."""
        self._waiting_keys.appendleft(_Waiting(action, rows=True, moves=False))

    def on_screen_suspend(self) -> None:
        """Another screen covers the picker (help, a dialog, the tree): the keys that waited
        for its rows, and what was typed behind them, are dropped, not run on its return."""
        if self._waiting_keys:
            self._waiting_keys.clear()
            self._waited()

    def _cancel_waiting_keys(self) -> bool:
        """Esc: drop the keys waiting for their rows (True: there were some)."""
        queue = self._waiting_keys
        if not queue:
            return False
        queue.clear()
        self._waited()
        self.status.show_message("Cancelled: the keys that waited for the search")
        return True

    def _no_row_here(self) -> None:
        """A key that acts on a row found none: the query as typed matches nothing."""
        if self.model.searching and self._rows_state() == "ready":
            query = display_text(self.model.query, 40)
            self.status.show_message(f"No session matches “{query}”: nothing to open")


__all__ = ["KeyOrder", "in_key_order"]
