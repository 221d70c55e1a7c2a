"""Base of every panel: takes the session in its constructor, subscribes to it, and
redraws from what it holds. Subclasses implement `refresh()`."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from ..i18n import tr
from ..session import Session
from .theme import THEMES, Theme


class Panel(QWidget):
    panel_id = "panel"            # stable name for layouts, exports and tests
    title_key = "panel.panel"     # i18n key of the dock title

    def __init__(self, session: Session, parent=None):
        super().__init__(parent)
        self.session = session
        self.theme: Theme = THEMES["light"]
        unsubscribe = [session.subscribe(e, self._on_change)
                       for e in ("run_changed", "cursor_changed", "lang_changed")]
        # a closure, not a method: the Python side may be half gone when Qt destroys the widget
        self.destroyed.connect(lambda *_: [u() for u in unsubscribe])

    def tr(self, key: str, **values) -> str:
        return tr(key, self.session.lang, **values)

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        self.refresh()

    def _on_change(self, _session) -> None:
        self.refresh()

    def refresh(self) -> None:  # pragma: no cover - every panel overrides it
        raise NotImplementedError
