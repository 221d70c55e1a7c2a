"""A blank screen, as a presenter's B key gives: black over the whole window, so the class
looks at the teacher; any key or click brings the window back as it was."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QApplication, QWidget

from .keys import MODIFIER_KEYS


class BlankScreen(QWidget):
    """Black over `window`; `toggle()` shows or hides it. While shown it holds the keys."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.setObjectName("blank-screen")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._before: QWidget | None = None         # where the keys were before the blank
        window.installEventFilter(self)
        self.hide()

    @property
    def blanked(self) -> bool:
        return self.isVisible()

    def toggle(self) -> None:
        if self.blanked:
            self.unblank()
        else:
            self._before = QApplication.focusWidget()
            self.setGeometry(self.parentWidget().rect())
            self.show()
            self.raise_()
            self.setFocus(Qt.FocusReason.OtherFocusReason)

    def unblank(self) -> None:
        self.hide()
        before, self._before = self._before, None
        if before is not None and before.isVisible() and before.isEnabled():
            before.setFocus(Qt.FocusReason.OtherFocusReason)
        else:
            self.parentWidget().setFocus(Qt.FocusReason.OtherFocusReason)

    def paintEvent(self, event) -> None:
        QPainter(self).fillRect(self.rect(), QColor("black"))

    def keyPressEvent(self, event) -> None:
        if event.key() not in MODIFIER_KEYS:      # Shift alone is no answer
            self.unblank()

    def mousePressEvent(self, event) -> None:
        self.unblank()

    def eventFilter(self, obj: QObject, event) -> bool:
        if event.type() == QEvent.Type.Resize and self.blanked:
            self.setGeometry(self.parentWidget().rect())
        return False
