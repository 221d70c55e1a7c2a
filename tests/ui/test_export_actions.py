"""Exports from the window: File -> Export frame / Export lesson / Copy frame, the dialog's
preview, and a place that cannot be written."""

from pathlib import Path

import pytest
from pptx import Presentation
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QPushButton
from teacher import distinct_colours, enter_prompt

from explorer.ui.shell import export_actions

PARAMS = Path(__file__).resolve().parents[2] / "params" / "teaching.json"

N_FRAMES = 10         # the default lesson, 我爱 to EOS
DECK = "wo-ai-to-eos"

def test_window_export_frame_of_one_panel(window, tmp_path):
    from explorer.ui.shell.export_actions import FrameChoice
    window.session.go(4)
    target = tmp_path / "slide.png"
    window.ask_export_frame = lambda: FrameChoice(target, panel="distribution", scale=2)
    window.actions["export_frame"].trigger()
    image = QImage(str(target))
    assert (image.width(), image.height()) == (3840, 2160)
    assert window.session.cursor == 4                        # the window on screen did not move
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.ini", "slide.png"]


def test_window_export_lesson_and_cancel(window, tmp_path):
    from explorer.ui.shell.export_actions import LessonChoice
    window.ask_export_folder = lambda: LessonChoice(tmp_path / "deck", ("png", "pdf", "pptx"))
    window.actions["export_lesson"].trigger()
    assert len(list((tmp_path / "deck").glob("*.png"))) == N_FRAMES
    assert (tmp_path / "deck" / f"{DECK}.pdf").exists()
    assert len(Presentation(str(tmp_path / "deck" / f"{DECK}.pptx")).slides) == N_FRAMES

    window.ask_export_folder = lambda: LessonChoice(tmp_path / "cancelled")
    from explorer.ui.shell import export_actions
    real = export_actions.QProgressDialog

    class CancelAtOnce(real):
        def wasCanceled(self):
            return self.value() >= 2
    export_actions.QProgressDialog = CancelAtOnce
    try:
        window.actions["export_lesson"].trigger()
    finally:
        export_actions.QProgressDialog = real
    assert not (tmp_path / "cancelled").exists()                 # not even the folder: it is made on success
    assert "cancelled" in window.statusBar().currentMessage()


def test_window_copy_frame_to_clipboard_is_the_composed_slide(window, qapp, tmp_path):
    from explorer.ui.shell.export_actions import FrameChoice
    window.session.go(2)
    window.actions["copy_frame"].trigger()
    image = qapp.clipboard().image()
    assert (image.width(), image.height()) == (1920, 1080)
    window.ask_export_frame = lambda: FrameChoice(tmp_path / "slide.png")
    window.actions["export_frame"].trigger()
    assert image == QImage(str(tmp_path / "slide.png")).convertToFormat(image.format())
    assert window.errors == []


def test_export_dialog_previews_the_slide_it_will_write(window, qtbot):
    from PySide6.QtWidgets import QDialogButtonBox
    from explorer.ui.shell.export_actions import PREVIEW_WIDTH, ExportDialog
    window.session.go(2)
    dialog = ExportDialog(window, lesson=True)
    qtbot.addWidget(dialog)
    slide = dialog.preview.pixmap().toImage()
    assert slide.width() == PREVIEW_WIDTH and distinct_colours(slide, 3) > 20
    dialog.style.setCurrentIndex(dialog.style.findData("window"))
    assert dialog.preview.pixmap().toImage() != slide and dialog.chosen_style() == "window"
    for box in dialog.formats.values():
        box.setChecked(False)
    assert not dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()
    dialog.formats["pptx"].setChecked(True)
    assert dialog.chosen_formats() == ("pptx",)
    frame = ExportDialog(window, lesson=False)
    qtbot.addWidget(frame)
    frame.what.setCurrentIndex(frame.what.findData("kv"))
    assert frame.chosen_style() == "slide" and not frame.style.isEnabled()


def test_export_lesson_offers_the_web_page_for_students(window, qtbot, tmp_path):
    from explorer.ui.shell.export_actions import ExportDialog, LessonChoice
    dialog = ExportDialog(window, lesson=True)
    qtbot.addWidget(dialog)
    assert dialog.formats["html"].text() == "Web page for students" and not dialog.formats["html"].isChecked()
    for fmt, box in dialog.formats.items():
        box.setChecked(fmt == "html")
    assert dialog.chosen_formats() == ("html",)
    window.ask_export_folder = lambda: LessonChoice(tmp_path / "page", dialog.chosen_formats())
    window.actions["export_lesson"].trigger()
    assert [p.name for p in (tmp_path / "page").iterdir()] == [f"{DECK}.html"] and window.errors == []
    page = (tmp_path / "page" / f"{DECK}.html").read_text(encoding="utf-8")
    assert page.count("data:image/webp;base64,") == 2 * N_FRAMES          # every frame, in both languages


def test_window_export_to_an_unwritable_place_is_reported(window, tmp_path):
    from explorer.ui.shell.export_actions import FrameChoice
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    window.ask_export_frame = lambda: FrameChoice(blocker / "slide.png")
    window.actions["export_frame"].trigger()
    assert window.errors and "file.txt" in window.errors[-1]


# ---------------------------------------------------------------------------- the save dialogs

def answer(*steps):
    """Answer the modal dialogs the next action opens: each step, (dialog class, what to do
    with it), gets the first active modal dialog of its class, in turn. A dialog left
    unanswered (a test gone wrong) is rejected after a while: nothing hangs. Returns the steps
    not taken."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    todo, polls = list(steps), [0]

    def poll():
        dialog = QApplication.activeModalWidget()
        polls[0] += 1
        if todo or dialog is not None:     # first: a step may open a dialog of its own (a question)
            QTimer.singleShot(20, poll)
        if dialog is not None and todo and isinstance(dialog, todo[0][0]) and dialog.isVisible():
            todo.pop(0)[1](dialog)
        elif dialog is not None and polls[0] > 500:        # 10 s
            dialog.reject()
    QTimer.singleShot(0, poll)
    return todo


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home folder of this test's own, with a Pictures and a Documents folder."""
    home = tmp_path / "home"
    for name in ("Pictures", "Documents"):
        (home / name).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))     # no user-dirs.dirs: the standard names
    return home


def test_the_frame_dialog_opens_in_pictures_then_where_the_teacher_saved_last(window, qtbot, home, tmp_path):
    from PySide6.QtWidgets import QFileDialog, QMessageBox
    from explorer.ui.shell.export_actions import ExportDialog
    window.ask_export_frame = lambda: export_actions.ask_frame_choice(window)
    window.session.go(2)
    seen = []

    def save(dialog, into=None):
        assert isinstance(dialog, QFileDialog)
        seen.append((Path(dialog.directory().absolutePath()), Path(dialog.selectedFiles()[0]).name))
        if into is not None:
            dialog.setDirectory(str(into))
            dialog.selectFile(seen[-1][1])
        dialog.accept()

    elsewhere = tmp_path / "slides"
    elsewhere.mkdir()
    left = answer((ExportDialog, ExportDialog.accept), (QFileDialog, lambda d: save(d, into=elsewhere)))
    window.actions["export_frame"].trigger()
    assert left == [] and window.errors == []
    assert seen == [(home / "Pictures", f"{DECK}-03-pick-step0.png")]       # named as a lesson export names it
    assert (elsewhere / f"{DECK}-03-pick-step0.png").is_file()
    assert window.settings["export_folder"] == str(elsewhere)
    left = answer((ExportDialog, ExportDialog.accept), (QFileDialog, save),
                  (QMessageBox, lambda box: box.button(QMessageBox.StandardButton.Yes).click()))   # replace it
    window.actions["export_frame"].trigger()
    assert left == [] and seen[-1][0] == elsewhere                           # where it saved last


def test_the_lesson_dialog_opens_in_documents_and_writes_into_a_folder_named_after_the_lesson(window, qtbot, home):
    from PySide6.QtWidgets import QFileDialog
    from explorer.ui.shell.export_actions import ExportDialog
    window.ask_export_folder = lambda: export_actions.ask_lesson_choice(window)
    opened = []

    def choose(dialog):
        opened.append(Path(dialog.directory().absolutePath()))
        dialog.accept()                   # the folder it opened in
    answer((ExportDialog, ExportDialog.accept), (QFileDialog, choose))
    window.actions["export_lesson"].trigger()
    assert opened == [home / "Documents"] and window.errors == []
    assert len(list((home / "Documents" / DECK).glob("*.png"))) == N_FRAMES
    assert window.settings["export_folder"] == str(home / "Documents")


def test_free_exploration_names_exports_after_the_prompt(qtbot, tmp_path):
    from explorer.ui.app import build_window
    from explorer.ui.shell.export_actions import export_name
    w = build_window(settings_path=str(tmp_path / "settings.ini"), params_path=str(PARAMS), compact=False)
    qtbot.addWidget(w)
    assert w.lesson is None
    w.show()
    enter_prompt(qtbot, w, "我爱学习！")
    qtbot.waitUntil(lambda: w.session.prompt_ids == (1, 2, 3, 5))
    assert export_name(w) == "我爱学习！"


@pytest.mark.parametrize("text, name", [
    ("我爱", "我爱"), ("The capital of France is", "The-capital-of-France-is"), ("../../etc/passwd", "etc-passwd"),
    ("a\x00b\nc\u200bd", "ab-cd"), ('x:y*z?"<>|', "x-y-z"), ("CON", "fallback"), ("...", "fallback"),
    ("今天天气很好，我们去" * 5, ("今天天气很好，我们去" * 4)),
])
def test_a_prompt_becomes_a_safe_file_name(text, name):
    from explorer.export.files import safe_file_name
    assert safe_file_name(text, "fallback") == name


def test_export_lesson_writes_only_the_picked_frames_numbered_as_in_the_lesson(window, qtbot, tmp_path):
    from PySide6.QtWidgets import QDialogButtonBox
    from explorer.ui.shell.export_actions import ExportDialog
    dialog = ExportDialog(window, lesson=True)
    qtbot.addWidget(dialog)
    dialog.show()
    frames, ok = dialog.frames, dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert frames.count() == N_FRAMES and dialog.chosen_frames() is None and ok.isEnabled()
    assert frames.item(2).text().startswith(" 3  ")                         # numbered as the player counts
    none, = [b for b in dialog.findChildren(QPushButton) if b.text() == "None"]
    qtbot.mouseClick(none, Qt.MouseButton.LeftButton)
    assert not ok.isEnabled() and dialog.reason.isVisible() and dialog.reason.text() == "Pick at least one frame"
    assert ok.toolTip() == "Pick at least one frame"
    for row in (2, 6):
        rect = frames.visualItemRect(frames.item(row))
        frames.scrollToItem(frames.item(row))
        rect = frames.visualItemRect(frames.item(row))
        check = QPoint(rect.left() + rect.height() // 2, rect.center().y())   # the check box at the row's start
        qtbot.mouseClick(frames.viewport(), Qt.MouseButton.LeftButton, pos=check)
    assert dialog.chosen_frames() == (2, 6) and ok.isEnabled() and not dialog.reason.isVisible()
    from explorer.ui.shell.export_actions import LessonChoice
    window.ask_export_folder = lambda: LessonChoice(tmp_path / "picked", ("png", "pdf", "pptx"),
                                                    frames=dialog.chosen_frames())
    window.actions["export_lesson"].trigger()
    written = sorted(p.name for p in (tmp_path / "picked").iterdir())
    assert written == ["03-pick-step0.png", "07-pick-step2.png", f"{DECK}.pdf", f"{DECK}.pptx"]
    assert len(Presentation(str(tmp_path / "picked" / f"{DECK}.pptx")).slides) == 2
