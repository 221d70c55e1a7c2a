"""Keys that always drive the player unless the teacher is typing in a text field.

One place decides where a key goes. Qt lets the focused widget claim a key before the
window's shortcuts see it: a button, a slider, a chart or a read-only text would take the
arrows, Page Up / Page Down (what presentation clickers send) or Space for itself. Here
those keys go to the window's actions instead, from every widget that is not a text field
being edited. In a text field they edit the text; Escape leaves the field (a first
Escape; a second one then leaves presentation mode). Focus that lands in a text field by
itself, because the button holding it was disabled (Last, on the last frame), goes back to
the window, as does focus that lands nowhere; a closed dialog hands the keys back to the
window also where no window manager does."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QKeyCombination, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (QAbstractSpinBox, QApplication, QLineEdit, QMainWindow, QPlainTextEdit,
                               QTextEdit, QWidget)


# keys that are no answer on their own (Shift alone does not bring a blank screen back)
MODIFIER_KEYS = (Qt.Key.Key_Shift, Qt.Key.Key_Control, Qt.Key.Key_Alt, Qt.Key.Key_Meta, Qt.Key.Key_AltGr)
# how a teacher puts the keys into a text field on purpose
CHOSEN = (Qt.FocusReason.MouseFocusReason, Qt.FocusReason.TabFocusReason, Qt.FocusReason.BacktabFocusReason,
          Qt.FocusReason.ShortcutFocusReason)


def is_text_field(widget: QObject | None) -> bool:
    """Is `widget` a field the teacher types into (the prompt, a number box)?"""
    if isinstance(widget, (QLineEdit, QAbstractSpinBox, QTextEdit, QPlainTextEdit)):
        return not widget.isReadOnly()
    return False


def key_combinations(sequences: Iterable[QKeySequence]) -> frozenset[QKeyCombination]:
    """The single keys (with modifiers) of one-key sequences."""
    return frozenset(seq[0] for seq in sequences if seq.count() == 1)


class KeyRouter(QObject):
    """Routes `player_keys` (one-key combinations of the window's player actions) to the
    window's shortcuts from any widget of `window` that is not a text field; `blocked()`
    True (the screen is blanked) lets every key through to the focused widget instead."""

    field_left = Signal(QWidget)        # Escape took the keys out of this text field

    def __init__(self, window: QMainWindow, player_keys: frozenset[QKeyCombination],
                 blocked: Callable[[], bool]):
        super().__init__(window)
        self.window, self.player_keys, self.blocked = window, player_keys, blocked
        self._chosen: QWidget | None = None      # the text field the teacher last clicked or tabbed into
        window.setFocusPolicy(Qt.FocusPolicy.ClickFocus)      # the keys' home when no widget has them
        app = QApplication.instance()
        app.installEventFilter(self)
        app.focusChanged.connect(self._focus_changed)

    def _ours(self, widget) -> bool:
        """The window, or a widget whose parents lead to it: also in a dialog, a menu or a
        popped-out panel (QWidget.isAncestorOf stops at a window's edge)."""
        return isinstance(widget, QWidget) and (widget is self.window or self._owned(widget))

    def _owned(self, widget: QWidget) -> bool:
        parent = widget.parentWidget()
        while parent is not None and parent is not self.window:
            parent = parent.parentWidget()
        return parent is self.window

    def give_back(self) -> None:
        """The keys go to the window: its player actions answer them."""
        self.window.setFocus(Qt.FocusReason.OtherFocusReason)

    def eventFilter(self, obj, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.FocusIn and is_text_field(obj) and self._ours(obj):
            self._focus_in(obj, event.reason())
            return False
        if kind == QEvent.Type.Hide and isinstance(obj, QWidget) and obj.isWindow() and self._ours(obj) \
                and obj is not self.window:
            QTimer.singleShot(0, self._after_dialog)         # a dialog, a menu or a popped-out panel went
            return False
        if kind != QEvent.Type.ShortcutOverride or not self._ours(obj):
            return False
        if self.blocked():
            event.accept()                  # the blank screen takes every key itself
            return True
        key = event.keyCombination()
        if is_text_field(obj):
            if key.key() == Qt.Key.Key_Escape and key.keyboardModifiers() == Qt.KeyboardModifier.NoModifier:
                self.give_back()
                self.field_left.emit(obj)
                event.accept()              # this Escape only leaves the field
                return True
            return False                    # typing: the field edits
        # not a text field: the widget does not get to claim a player key, the shortcut fires
        return key in self.player_keys

    def _after_dialog(self) -> None:
        """A window of ours closed and no window is active (no window manager handed the
        focus back): the explorer's window becomes active again, the keys the player's."""
        app = QApplication.instance()
        if app.activeWindow() is None and app.activePopupWidget() is None and self.window.isVisible():
            self.window.activateWindow()
            if self.window.focusWidget() is None:
                self.give_back()

    def _focus_in(self, field: QWidget, reason: Qt.FocusReason) -> None:
        """A text field the teacher clicks or tabs into is theirs; one the window hands the
        focus to as it becomes active (the first in the tab chain, at the first click on the
        window) is not, unless it was theirs before."""
        if reason in CHOSEN:
            self._chosen = field
        elif reason == Qt.FocusReason.ActiveWindowFocusReason and field is not self._chosen:
            QTimer.singleShot(0, self.give_back)       # not from inside the focus change

    def _focus_changed(self, old: QWidget | None, new: QWidget | None) -> None:
        stranded = old is not None and self._ours(old) and not old.isEnabled()
        if stranded and (new is None or (is_text_field(new) and self._ours(new))):
            self._chosen = None
            self.give_back()
