"""Presentation mode's own parts: the window's chrome (menu bar, prompt bar, player) out of
the way, brought back by a key or by the mouse at the top or bottom edge; and a strip with
the frame's title, which the player shows at the desk."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, Qt, QTimer
from PySide6.QtGui import QCursor, QKeySequence
from PySide6.QtWidgets import (QApplication, QDockWidget, QHBoxLayout, QMainWindow, QSizePolicy, QToolBar,
                               QWidget)

from ..panels.player import FittedTitle, one_line_height
from ..theme import tint_text
from .keys import MODIFIER_KEYS

EDGE_PX = 3          # the mouse this close to the window's top or bottom edge brings the chrome back,
LEAVE_PX = 24        # and this far from every bar of it sends it away again
POLL_MS = 120        # how often presentation mode looks where the mouse is
TITLE_SCALE = 1.3    # the frame's title, this much larger than the text (as the player has it)


class Chrome(QObject):
    """The menu bar, the prompt bar and the player's dock of `window`, hidden while presenting.
    The reveal key (`toggle`) or the mouse at the top or bottom edge brings them back; they
    go again on the next key pressed outside them, or, brought by the mouse, once it has left
    them. `reveal_keys` gives the reveal key's sequences (that key does not count as "next")."""

    def __init__(self, window: QMainWindow, player: QWidget, reveal_keys: Callable[[], list[QKeySequence]]):
        super().__init__(window)
        self.window, self.player, self.reveal_keys = window, player, reveal_keys
        self.presenting = False
        self.shown_by: str | None = None       # None (hidden) | "key" | "mouse"
        self._timer = QTimer(self, interval=POLL_MS)
        self._timer.timeout.connect(self._follow_mouse)
        self._fit_player = QTimer(self, singleShot=True, interval=0)     # once the player is laid out
        self._fit_player.timeout.connect(self._fit_player_height)

    def widgets(self) -> list[QWidget]:
        bar = self.window.findChild(QToolBar, "prompt-bar")
        return [w for w in (self.window.menuBar(), bar, self.player) if w is not None]

    @property
    def shown(self) -> bool:
        return not self.presenting or self.shown_by is not None

    def start(self) -> None:
        """Presentation mode begins: the chrome goes."""
        self.presenting = True
        self._timer.start()
        self._show_by(None)

    def stop(self) -> None:
        """Presentation mode ends: the chrome is back for good."""
        self.presenting = False
        self._timer.stop()
        self._show_by(None)

    def toggle(self) -> None:
        """The reveal key: the chrome back, or away again."""
        if self.presenting:
            self._show_by(None if self.shown_by else "key")

    def sync(self) -> None:
        """Each bar shown or hidden as the state says (after a layout restored its own). The
        player comes back no taller than it needs: the panels keep the rest."""
        for widget in self.widgets():
            if widget.isHidden() == self.shown:
                widget.setVisible(self.shown)
                if widget is self.player and self.shown and self.presenting:
                    self._fit_player.start()

    def _fit_player_height(self) -> None:
        """The player's dock at its least height, the dock area above it taking the rest (a
        dock area's height moves only with a dock of the area beside it named too)."""
        w, player = self.window, self.player
        above = next((d for d in w.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()
                      and w.dockWidgetArea(d) == Qt.DockWidgetArea.TopDockWidgetArea), None)
        if player.isVisible() and above is not None:
            least = player.minimumSizeHint().height()
            w.resizeDocks([above, player], [above.height() + player.height() - least, least], Qt.Orientation.Vertical)

    def _show_by(self, how: str | None) -> None:
        self.shown_by = how
        app = QApplication.instance()     # the keys are watched only while the chrome is back
        if how is None:
            app.removeEventFilter(self)
        else:
            app.installEventFilter(self)
        self.sync()

    def _within(self, widget: QWidget | None) -> bool:
        """Whether `widget` is one of the bars or inside one (the teacher typing a prompt)."""
        return widget is not None and any(w is widget or w.isAncestorOf(widget) for w in self.widgets())

    def eventFilter(self, obj, event) -> bool:
        # a shortcut's key (Right, Space) arrives as ShortcutOverride only; any other as KeyPress
        if (self.shown_by is not None and event.type() in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride)
                and event.key() not in MODIFIER_KEYS and QApplication.activePopupWidget() is None
                and not self._within(QApplication.focusWidget())
                and QKeySequence(event.keyCombination()) not in self.reveal_keys()):
            self._show_by(None)
        return False

    def _follow_mouse(self) -> None:
        w = self.window
        if not w.isVisible():
            return
        pos = w.mapFromGlobal(QCursor.pos())
        # within EDGE_PX of the top or bottom edge, on either side of it
        at_edge = 0 <= pos.x() < w.width() and (abs(pos.y()) < EDGE_PX or abs(pos.y() - w.height()) <= EDGE_PX)
        if self.shown_by is None and at_edge:
            self._show_by("mouse")
        elif (self.shown_by == "mouse" and not at_edge and not self._near(pos)
              and QApplication.activePopupWidget() is None and not self._within(QApplication.focusWidget())):
            self._show_by(None)

    def _near(self, pos: QPoint) -> bool:
        """Whether `pos` (window pixels) is on a shown bar or within LEAVE_PX of it."""
        return any(QRect(widget.mapTo(self.window, QPoint(0, 0)), widget.size())
                   .adjusted(-LEAVE_PX, -LEAVE_PX, LEAVE_PX, LEAVE_PX).contains(pos)
                   for widget in self.widgets() if widget.isVisible())


class FrameTitleBar(QToolBar):
    """The current frame's title across the top of the window in presentation mode, one
    line (a longer one ends in "…", whole on hover), bold and larger than the text."""

    def __init__(self, parent: QMainWindow):
        super().__init__(parent)
        self.setObjectName("frame-title")
        self.setMovable(False)
        self.setFloatable(False)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.PreventContextMenu)
        self.label = FittedTitle()
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        # what the teacher changed from the lesson: the player's badge, which presenting hides
        self.badge = FittedTitle()
        self.badge.setObjectName("presentation-badge")
        self.badge.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.badge.hide()
        row = QWidget()                    # one item: the bar never moves the badge to its overflow menu
        row.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        layout = QHBoxLayout(row)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 3)
        layout.addWidget(self.badge, 2)
        self.addWidget(row)
        self._size_label()

    def show_title(self, text: str, badge: str = "", colour: str = "") -> None:
        """The frame's title; `badge` (in `colour`) beside it when the settings differ from the lesson's."""
        self.label.set_title(text)
        self.badge.set_title(badge)
        if badge and colour:
            tint_text(self.badge, colour)
        if self.badge.isHidden() == bool(badge):
            self.badge.setVisible(bool(badge))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:      # zoom, presentation mode
            self._size_label()

    def _size_label(self) -> None:
        font = self.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * TITLE_SCALE)
        self.label.setFont(font)
        self.label.setFixedHeight(one_line_height(self.label))
        self.badge.setFont(self.font())
        self.badge.setFixedHeight(one_line_height(self.badge))
