"""Plain-Python change events: `emitter.subscribe(name, callback)`, `emitter.emit(name, ...)`."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable


class Emitter:
    def __init__(self):
        self._subscribers: dict[str, list[Callable]] = defaultdict(list)

    def subscribe(self, event: str, callback: Callable) -> Callable[[], None]:
        """Call `callback(*args)` on every `event`; returns a function that unsubscribes."""
        self._subscribers[event].append(callback)
        return lambda: self._subscribers[event].remove(callback)

    def emit(self, event: str, *args) -> None:
        for callback in list(self._subscribers[event]):
            callback(*args)
