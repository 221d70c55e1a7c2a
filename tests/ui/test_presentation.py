"""Presentation mode on a 1920 x 1080 projector (the offscreen platform's second screen): the
panel the frame is about owns the screen, the chrome is out of the way until called for,
panels with nothing to show leave, and larger type keeps the chart readable."""

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QCursor, QGuiApplication
from PySide6.QtWidgets import QApplication, QToolBar

from explorer.lessons import load_lesson
from explorer.ui.app import build_window
from teacher import CTRL, drawn_texts

ROW_PX = 120            # the least height of a stage row at 1080 lines
MAIN_SHARE = 0.55       # and the least share of the window the frame's main panel takes
# the sampling lesson's first frame, T = 0.5 on logits [2, 1, 0] (the course's numbers):
# the raw softmax, then the tempered probabilities (the temperature row and the final row)
RAW = ("0.665", "0.245", "0.090")
TEMPERED = ("0.867", "0.117", "0.016")


def projector():
    screen = next(s for s in QGuiApplication.screens() if s.name() == "projector")
    assert screen.geometry().size().toTuple() == (1920, 1080)
    return screen


def open_on_projector(qtbot, tmp_path, lesson=None):
    """The window on `lesson`, shown on the projector, in presentation mode (F11)."""
    w = build_window(settings_path=str(tmp_path / "s.ini"), compact=False, lesson=lesson)
    qtbot.addWidget(w)
    screen = projector()
    w.setScreen(screen)
    w.move(screen.geometry().topLeft() + QPoint(40, 40))
    w.resize(1600, 960)
    w.show()
    qtbot.waitExposed(w)
    w.activateWindow()                  # the keys go to the window a teacher looks at
    qtbot.waitUntil(w.isActiveWindow)
    qtbot.keyClick(w, Qt.Key.Key_F11)
    qtbot.waitUntil(lambda: w.isFullScreen() and w.geometry() == screen.geometry())
    return w


def chrome(w):
    return {"menu": w.menuBar(), "prompt": w.findChild(QToolBar, "prompt-bar"), "player": w.docks["player"]}


def chrome_shown(w):
    return {name: widget.isVisible() for name, widget in chrome(w).items()}


def share(w, pid):
    dock = w.docks[pid]
    return dock.width() * dock.height() / (w.width() * w.height())


def rows_tall_enough(chart):
    heights = [plot.height() for plot in chart.row_plots()]
    return len(heights) >= 2 and min(heights) >= ROW_PX


def drawn(chart):
    return [d.text for d in drawn_texts(chart)]


def test_the_chart_owns_the_projector_and_writes_its_values(qtbot, tmp_path):
    w = open_on_projector(qtbot, tmp_path, "sampling")
    chart = w.panels["distribution"].chart
    assert w.desk_layout.main_panel() == "distribution"
    qtbot.waitUntil(lambda: share(w, "distribution") >= MAIN_SHARE and rows_tall_enough(chart))
    texts = drawn(chart)
    assert all(texts.count(v) == 1 for v in RAW)
    assert texts.count("0.117") == texts.count("0.016") == 2         # the temperature and the final row
    assert "0.867" in texts and "▼ chosen 0.867" in texts              # the final row marks the pick
    assert w.panels["player"].title.text() == w.desk_layout.title_bar.label.text()   # the title still on screen
    assert w.desk_layout.title_bar.isVisible()


def test_larger_type_grows_the_chart_with_its_text(qtbot, tmp_path):
    w = open_on_projector(qtbot, tmp_path, "sampling")
    chart = w.panels["distribution"].chart
    s = w.session
    while len(chart.rows) < 4:                   # the first frame with four stage rows (T, then top-p)
        qtbot.keyClick(w, Qt.Key.Key_Right)
    qtbot.waitUntil(lambda: rows_tall_enough(chart))
    small = min(d.point_size for d in drawn_texts(chart))
    for _ in range(3):
        qtbot.keyClick(w, Qt.Key.Key_Equal, CTRL)                 # Ctrl+= three times
    qtbot.waitUntil(lambda: min(d.point_size for d in drawn_texts(chart)) >= small + 3)
    qtbot.waitUntil(lambda: rows_tall_enough(chart) and share(w, "distribution") >= MAIN_SHARE)
    texts = drawn(chart)
    assert len(chart.rows) == 4 and s.frame.step == 0
    assert all(v in texts for v in RAW)
    assert all(label in texts for row in chart.rows for label in row.labels if label)   # every value written


def test_the_chrome_hides_and_comes_back_by_key_and_by_the_mouse(qtbot, tmp_path):
    w = open_on_projector(qtbot, tmp_path)
    s = w.session
    hidden = {"menu": False, "prompt": False, "player": False}
    shown = {"menu": True, "prompt": True, "player": True}
    assert chrome_shown(w) == hidden
    qtbot.keyClick(w, Qt.Key.Key_F10)
    assert chrome_shown(w) == shown
    player = w.docks["player"]                                   # no taller than it needs: the panels keep the rest
    qtbot.waitUntil(lambda: player.height() == player.minimumSizeHint().height())
    cursor = s.cursor
    qtbot.keyClick(w, Qt.Key.Key_Right)                          # the next key sends it away, and steps
    assert chrome_shown(w) == hidden and s.cursor == cursor + 1
    qtbot.keyClick(w, Qt.Key.Key_F10)
    qtbot.mouseClick(w.prompt_bar.edit, Qt.MouseButton.LeftButton)
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_End)             # typing in the prompt keeps it
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_Space)
    assert chrome_shown(w) == shown and w.prompt_bar.edit.text().endswith(" ")
    qtbot.keyClick(w.prompt_bar.edit, Qt.Key.Key_F10)             # and F10 sends it away again
    assert chrome_shown(w) == hidden
    middle = w.mapToGlobal(QPoint(w.width() // 2, w.height() // 2))
    for edge in (QPoint(w.width() // 2, 0), QPoint(w.width() // 3, w.height() - 1)):   # top, then bottom
        QCursor.setPos(w.mapToGlobal(edge))
        qtbot.waitUntil(lambda: chrome_shown(w) == shown)
        QCursor.setPos(middle)                                   # the mouse leaves them: they go
        qtbot.waitUntil(lambda: chrome_shown(w) == hidden)
    QCursor.setPos(w.mapToGlobal(QPoint(w.width() // 2, 0)))
    qtbot.waitUntil(lambda: chrome_shown(w) == shown)
    qtbot.keyClick(w, Qt.Key.Key_Escape)                         # leaving presentation mode: all back
    QCursor.setPos(middle)
    assert not w.desk_layout.presenting and not w.isFullScreen()
    assert chrome_shown(w) == shown and not w.desk_layout.title_bar.isVisible()
    qtbot.keyClick(w, Qt.Key.Key_Right)
    assert chrome_shown(w) == shown


def test_panels_with_nothing_to_show_leave_the_projector(qtbot, tmp_path):
    w = open_on_projector(qtbot, tmp_path, "sampling")            # a logits lesson: no layers, no beam
    gone = ("attention", "kv", "beam")
    qtbot.waitUntil(lambda: all(w.docks[pid].isHidden() for pid in gone))
    assert all(w.docks[pid].isVisible() for pid in ("distribution", "timeline", "explanation", "controls"))
    assert w.lesson_switcher.switch_lesson(load_lesson("prefill-decode"))    # a model with layers
    s = w.session
    s.go(0)                                                      # before any forward: no bars, no weights
    qtbot.waitUntil(lambda: w.docks["kv"].isVisible() and w.docks["distribution"].isHidden()
                    and w.docks["attention"].isHidden())
    assert w.desk_layout.main_panel() == "kv" and share(w, "kv") >= MAIN_SHARE
    pick = next(i for i, f in enumerate(s.frames) if f.kind == "pick")
    s.go(pick)                                                   # a pick: the chart is back, in front
    qtbot.waitUntil(lambda: w.docks["distribution"].isVisible() and not w.docks["distribution"].visibleRegion().isEmpty())
    assert not w.docks["attention"].isHidden() and not w.docks["kv"].isHidden()    # their tabs are back
    assert w.docks["beam"].isHidden()
    qtbot.keyClick(w, Qt.Key.Key_Escape)                         # the desk shows every panel again
    qtbot.waitUntil(lambda: not any(dock.isHidden() for dock in w.docks.values()))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_frame_title_follows_the_frame_and_the_language(qtbot, tmp_path, lang):
    w = open_on_projector(qtbot, tmp_path, "sampling")
    w.set_lang(lang)
    bar = w.desk_layout.title_bar
    for _ in range(3):
        assert bar.label.text() == w.panels["player"].title.text() and bar.label.text()
        assert bar.label.font().pointSizeF() == pytest.approx(1.3 * QApplication.font().pointSizeF())
        qtbot.keyClick(w, Qt.Key.Key_Right)
