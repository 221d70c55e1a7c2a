"""What a teacher does with the window, as input events: keys, typed text, clicks where a
thing is drawn. Shared by the window tests (imported as a plain module from tests/)."""

from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QLabel

CTRL = Qt.KeyboardModifier.ControlModifier
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


def type_text(widget, text: str) -> None:
    """Key presses that carry `text`, as a keyboard or input method delivers them (QTest's
    keyClicks only knows ASCII)."""
    for key_type in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        QApplication.sendEvent(widget, QKeyEvent(key_type, Qt.Key.Key_unknown, Qt.KeyboardModifier.NoModifier, text))


def enter_prompt(qtbot, window, text: str) -> None:
    """Click into the prompt box, replace its text with `text` and press Return."""
    box = window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_A, CTRL)            # select all
    qtbot.keyClick(box, Qt.Key.Key_Delete)
    type_text(box, text)
    qtbot.keyClick(box, Qt.Key.Key_Return)


def click_at(qtbot, widget, point: QPointF) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=QPoint(round(point.x()), round(point.y())))


def click_chip(qtbot, timeline, index: int) -> None:
    """Click the timeline's chip `index` (0 = Prefill, -1 = the stop chip) where it is drawn."""
    strip = timeline.strip
    click_at(qtbot, strip, strip.chip_rects()[index].center())


def click_bar(qtbot, distribution, row: int, column: int) -> None:
    """Click a distribution bar (row of the chart, candidate column) where it is drawn."""
    chart = distribution.chart
    click_at(qtbot, chart, chart.bar_center(row, column))


def shown_texts(widget) -> list[str]:
    """The text of every label `widget` shows (hidden ones left out), as a reader sees them."""
    return [label.text() for label in widget.findChildren(QLabel) if label.isVisibleTo(widget) and label.text()]


def shows(widget, fragment: str) -> bool:
    """Does one of the labels `widget` shows hold `fragment`?"""
    return any(fragment in text for text in shown_texts(widget))


def label_showing(widget, fragment: str) -> QLabel:
    """The one label of `widget` on show whose text holds `fragment`."""
    (label,) = [label for label in widget.findChildren(QLabel)
                if label.isVisibleTo(widget) and fragment in label.text()]
    return label
