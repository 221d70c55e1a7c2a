"""Plain-Python change events: `emitter.subscribe(event, callback)`, `emitter.emit(event, ...)`.

The events are members of an Enum; a name given as a string is looked up in it when it is
subscribed, so a typo ("run_chagned") raises at once instead of never being called."""

from __future__ import annotations

from collections import defaultdict
from enum import Enum
from typing import Callable


class SessionEvent(str, Enum):
    RUN_CHANGED = "run_changed"         # a new Run (settings, prompt, model, lesson): everything redraws
    CURSOR_CHANGED = "cursor_changed"   # the player moved to another frame of the same Run
    LANG_CHANGED = "lang_changed"       # the interface language changed


class Emitter:
    def __init__(self, events: type[Enum] = SessionEvent):
        self._events = events
        self._subscribers: dict[Enum, list[Callable]] = defaultdict(list)

    def _known(self, event: str | Enum) -> Enum:
        try:
            return self._events(event)
        except ValueError:
            names = ", ".join(e.value for e in self._events)
            raise ValueError(f"no event {event!r}: the events are {names}") from None

    def subscribe(self, event: str | Enum, callback: Callable) -> Callable[[], None]:
        """Call `callback(*args)` on every `event`; returns a function that unsubscribes."""
        known = self._known(event)
        self._subscribers[known].append(callback)
        return lambda: self._subscribers[known].remove(callback)

    def emit(self, event: str | Enum, *args) -> None:
        for callback in list(self._subscribers[self._known(event)]):
            callback(*args)
