"""Exports from the window: File -> Export frame / Export lesson / Copy frame, the dialog's
preview, and a place that cannot be written."""

from pptx import Presentation
from PySide6.QtGui import QImage
from teacher import distinct_colours

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
    assert list((tmp_path / "cancelled").iterdir()) == []
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


def test_window_export_to_an_unwritable_place_is_reported(window, tmp_path):
    from explorer.ui.shell.export_actions import FrameChoice
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    window.ask_export_frame = lambda: FrameChoice(blocker / "slide.png")
    window.actions["export_frame"].trigger()
    assert window.errors and "file.txt" in window.errors[-1]
