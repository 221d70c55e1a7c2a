"""Zoom, presentation mode and high contrast reach every widget: the whole widget tree is
walked after each and every visible text widget's type size and colours are checked
(a widget styled with a style sheet, say, would keep the size it was built with)."""

import numpy as np
import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import (QAbstractButton, QAbstractItemView, QAbstractSpinBox, QApplication, QComboBox,
                               QLabel, QLineEdit, QMenuBar, QStyle, QStyleOptionButton, QTabBar, QTextEdit, QWidget)

from explorer.ui.theme import FRAME_ROLE, THEMES, FramedStyle

TEXT_WIDGETS = (QLabel, QAbstractButton, QLineEdit, QComboBox, QAbstractSpinBox, QTextEdit, QTabBar,
                QAbstractItemView, QMenuBar)


def text_widgets(window) -> list[QWidget]:
    """Every widget of the window that shows text and is on screen (a dock's float button too)."""
    return [w for w in window.findChildren(QWidget) if isinstance(w, TEXT_WIDGETS) and w.isVisible()]


def type_scales(window) -> dict[QWidget, float]:
    """Each text widget's point size as a multiple of the application's (headings are larger)."""
    app_size = QApplication.font().pointSizeF()
    return {w: w.font().pointSizeF() / app_size for w in text_widgets(window)}


def describe(w: QWidget) -> str:
    text = w.text() if isinstance(w, (QLabel, QAbstractButton, QLineEdit)) else ""
    return f"{type(w).__name__} {text[:30]!r} in {type(w.parent()).__name__}"


def assert_type_follows(window, scales: dict[QWidget, float]) -> None:
    """Every text widget keeps its multiple of the application's type size (0.9 to 1.3 times).
    Qt hands a new application font to the widgets in posted events: call it in waitUntil."""
    now = type_scales(window)
    assert len(now) > 60
    wrong = [f"{describe(w)}: {w.font().pointSizeF():.2f} pt" for w, scale in now.items()
             if not 0.85 <= scale <= 1.35 or (w in scales and scale != pytest.approx(scales[w], abs=0.02))]
    assert not wrong, f"at {QApplication.font().pointSizeF():.2f} pt: {wrong}"


def luminance(c: QColor) -> float:
    def channel(v):
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue())


def contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def assert_text_readable(window, at_least: float) -> None:
    """Every enabled text widget's text colour against its own background colour."""
    poor = []
    for w in text_widgets(window):
        if w.isEnabled():
            fg, bg = w.palette().color(w.foregroundRole()), w.palette().color(w.backgroundRole())
            if contrast(fg, bg) < at_least:
                poor.append(f"{describe(w)}: {fg.name()} on {bg.name()}")
    assert not poor


def dominant_colour(widget: QWidget) -> str:
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32).reshape(image.height(), -1)[:, :image.width()]  # [h, w]
    values, counts = np.unique(pixels & 0xFFFFFF, return_counts=True)
    return f"#{int(values[np.argmax(counts)]):06x}"


def press(qtbot, window, key, modifier=Qt.KeyboardModifier.NoModifier, times=1):
    for _ in range(times):
        qtbot.keyClick(window, key, modifier)


def test_zoom_reaches_every_text_widget(qtbot, window):
    window.session.go(2)                         # a pick: the distribution's chart and hints are shown
    scales = type_scales(window)
    assert_type_follows(window, scales)          # at the start too: nothing built at another size
    base = QApplication.font().pointSizeF()
    press(qtbot, window, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier, times=4)
    assert QApplication.font().pointSizeF() == pytest.approx(base + 4)
    qtbot.waitUntil(lambda: window.panels["distribution"].font().pointSizeF() == pytest.approx(base + 4))
    qtbot.waitUntil(lambda: assert_type_follows(window, scales))
    press(qtbot, window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier, times=4)
    assert QApplication.font().pointSizeF() == pytest.approx(base)
    qtbot.waitUntil(lambda: assert_type_follows(window, scales))


def test_presentation_mode_reaches_every_text_widget_and_leaves_none_behind(qtbot, window):
    window.session.go(2)
    scales = type_scales(window)
    base = QApplication.font().pointSizeF()
    qtbot.keyClick(window, Qt.Key.Key_F11)
    assert window.desk_layout.presenting
    larger = base * window.desk_layout.presentation_scale()
    assert larger > base
    assert QApplication.font().pointSizeF() == pytest.approx(larger)
    qtbot.waitUntil(lambda: window.panels["controls"].font().pointSizeF() == pytest.approx(larger))
    qtbot.waitUntil(lambda: assert_type_follows(window, scales))
    qtbot.keyClick(window, Qt.Key.Key_Escape)
    assert not window.desk_layout.presenting and QApplication.font().pointSizeF() == pytest.approx(base)
    qtbot.waitUntil(lambda: assert_type_follows(window, scales))


@pytest.mark.parametrize("name", ["high-contrast", "light"])
def test_high_contrast_turns_every_widget_and_panel_white_on_black(qtbot, window, name):
    window.session.go(2)
    if name == "high-contrast":
        window.actions["high_contrast"].trigger()
    theme = THEMES[name]
    assert window.theme is theme and window.actions["high_contrast"].isChecked() is (name == "high-contrast")
    # the application's palette reaches the widgets through posted events
    qtbot.waitUntil(lambda: window.panels["controls"].palette().color(window.backgroundRole())
                    == QColor(theme.background if name == "high-contrast" else "#efefef"))
    qtbot.waitUntil(lambda: assert_text_readable(window, at_least=7.0 if name == "high-contrast" else 4.5))
    painted = {"kv": window.panels["kv"], "distribution": window.panels["distribution"].chart,
               "timeline": window.panels["timeline"]}
    if name == "high-contrast":
        assert window.palette().color(window.backgroundRole()) == QColor(theme.background)
        for pid, panel in {**window.panels, **painted}.items():
            assert dominant_colour(panel) == theme.background, pid
        hint = window.panels["controls"].findChildren(QLabel, options=Qt.FindChildOption.FindChildrenRecursively)
        muted = [label for label in hint if label.isVisible()
                 and label.palette().color(label.foregroundRole()) == QColor(theme.muted)]
        assert muted                                           # the "0 = off" hints, readable on black
    else:
        assert luminance(window.palette().color(window.backgroundRole())) > 0.5
        for pid, panel in painted.items():
            assert luminance(QColor(dominant_colour(panel))) > 0.5, pid


def frame_contrast(widget: QWidget, rect: QRect, background: QColor) -> float:
    """The strongest contrast against `background` painted on the left edge of `rect` (a
    field's or a check box's frame), at the middle of its height, as the widget draws itself."""
    image = widget.grab().toImage()
    y = rect.center().y()
    return max(contrast(image.pixelColor(x, y), background) for x in range(rect.left(), rect.left() + 3))


@pytest.mark.parametrize("name", ["high-contrast", "light"])
def test_high_contrast_keeps_the_frames_of_fields_and_check_boxes_visible(qtbot, window, name):
    from explorer.ui.shell.export_actions import ExportDialog
    if name == "high-contrast":
        window.actions["high_contrast"].trigger()
    background = QColor(THEMES[name].background) if name == "high-contrast" else QApplication.palette().window().color()
    controls = window.panels["controls"]
    qtbot.waitUntil(lambda: controls.palette().color(controls.backgroundRole()) == background)
    fields = {"prompt": window.prompt_bar.edit,
              **{type(w).__name__: w for w in controls.findChildren(QWidget)
                 if isinstance(w, (QAbstractSpinBox, QLineEdit, QComboBox)) and w.isVisible()
                 and not isinstance(w.parent(), (QAbstractSpinBox, QComboBox))}}     # not a spin box's own edit
    assert {"prompt", "QSpinBox", "QDoubleSpinBox", "QComboBox", "QLineEdit"} <= set(fields)
    dialog = ExportDialog(window, lesson=True)
    qtbot.addWidget(dialog)
    dialog.show()
    box = dialog.formats["png"]
    option = QStyleOptionButton()
    box.initStyleOption(option)
    indicator = box.style().subElementRect(QStyle.SubElement.SE_CheckBoxIndicator, option, box)
    window.activateWindow()                    # no field has the focus (a focused one is framed highlighted)
    measured = {kind: frame_contrast(w, w.rect(), background) for kind, w in fields.items() if not w.hasFocus()}
    measured["check box"] = frame_contrast(box, indicator, background)
    if name == "high-contrast":
        assert contrast(QApplication.palette().color(FRAME_ROLE), background) >= 3
        assert min(measured.values()) >= 3, measured
    else:
        assert isinstance(QApplication.style(), QStyle) and not isinstance(QApplication.style(), FramedStyle)
