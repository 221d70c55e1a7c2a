"""What a room of the window shell needs from the window that holds it, and nothing more:
the model and lesson switchers take a `Host`, not the main window (MainWindow is one)."""

from __future__ import annotations

from typing import Callable, Protocol

from PySide6.QtWidgets import QWidget


class Host(Protocol):
    def window(self) -> QWidget:
        """The top-level widget that menus' actions belong to and dialogs open over."""

    def guarded(self, fn: Callable, *args) -> bool:
        """Run a change; a problem is shown (report_error) and False returned, nothing changed."""

    def report_error(self, message: str) -> None:
        """Show a problem without blocking the class."""

    def show_status(self, text: str, ms: int = 0) -> None:
        """A passing message in the status bar (ms: how long; 0 until the next)."""

    @property
    def settings(self):
        """The window's `ui.settings` store (the model folders the teacher added live there)."""
