"""The window's export actions: the current frame to a file, the whole lesson to a folder
(with a progress dialog that can cancel), and the current frame to the clipboard.
Dialogs are attributes of the window so tests can replace them. The export machinery
(PDF, SVG, handouts) is imported when an export starts, not while the window starts."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QProgressDialog,
)

from ..core.errors import ExplorerError
from ..core.jsonfile import writable_target
from ..export.spec import PANELS, ExportSpec
from ..i18n import add_messages, tr

add_messages({
    "export.frame_title": {"en": "Export frame", "zh": "导出当前步骤"},
    "export.what": {"en": "What", "zh": "内容"},
    "export.window": {"en": "Whole window", "zh": "整个窗口"},
    "export.scale": {"en": "Size", "zh": "尺寸"},
    "export.caption": {"en": "Caption strip (title, frame, counter)", "zh": "底部说明条（标题、步骤、计数）"},
    "export.file_filter": {"en": "PNG image (*.png);;SVG drawing (*.svg);;PDF page (*.pdf)",
                           "zh": "PNG图片 (*.png);;SVG矢量图 (*.svg);;PDF页面 (*.pdf)"},
    "export.folder": {"en": "Export lesson into folder", "zh": "把整课导出到文件夹"},
    "export.progress": {"en": "Exporting {what}…", "zh": "正在导出 {what}…"},
    "export.cancel": {"en": "Cancel", "zh": "取消"},
    "export.done": {"en": "Wrote {n} files to {folder}", "zh": "已写入 {n} 个文件到 {folder}"},
    "export.wrote": {"en": "Wrote {path}", "zh": "已写入 {path}"},
    "export.cancelled": {"en": "Export cancelled: nothing was written", "zh": "已取消导出：没有写入任何文件"},
    "export.copied": {"en": "Frame copied to the clipboard", "zh": "已把当前步骤复制到剪贴板"},
    "export.bad_suffix": {"en": "{path}: expected a .png, .svg or .pdf file name",
                          "zh": "{path}：文件名应以 .png、.svg 或 .pdf 结尾"},
})


@dataclass(frozen=True)
class FrameChoice:
    path: Path
    panel: str | None = None    # None: the whole window
    scale: int = 1
    caption: bool = True


def ask_frame_choice(window) -> FrameChoice | None:
    """The export-frame dialog, then the file dialog; None when the teacher cancels."""
    lang = window.session.lang
    dialog = QDialog(window)
    dialog.setWindowTitle(tr("export.frame_title", lang))
    what = QComboBox()
    what.addItem(tr("export.window", lang), None)
    for pid in PANELS:
        what.addItem(tr(window.panels[pid].title_key, lang), pid)
    scale = QComboBox()
    scale.addItem("1920 × 1080", 1)
    scale.addItem("3840 × 2160 (2×)", 2)
    caption = QCheckBox(tr("export.caption", lang))
    caption.setChecked(True)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
    buttons.accepted.connect(dialog.accept)
    buttons.rejected.connect(dialog.reject)
    form = QFormLayout(dialog)
    form.addRow(tr("export.what", lang), what)
    form.addRow(tr("export.scale", lang), scale)
    form.addRow(caption)
    form.addRow(buttons)
    if dialog.exec() != QDialog.DialogCode.Accepted:
        return None
    path, _ = QFileDialog.getSaveFileName(window, tr("export.frame_title", lang), "frame.png",
                                          tr("export.file_filter", lang))
    if not path:
        return None
    return FrameChoice(Path(path), what.currentData(), scale.currentData(), caption.isChecked())


def ask_folder(window) -> Path | None:
    path = QFileDialog.getExistingDirectory(window, tr("export.folder", window.session.lang))
    return Path(path) if path else None


def _spec(window, out_dir: Path, **changes) -> ExportSpec:
    return ExportSpec(out_dir=out_dir, lang=window.session.lang, theme=window.theme.name, **changes)


def export_frame(window) -> Path | None:
    """Write the current frame to the chosen file (format from its suffix), atomically."""
    choice = window.ask_export_frame()
    if choice is None:
        return None
    fmt = choice.path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf"):
        raise ExplorerError(tr("export.bad_suffix", window.session.lang, path=choice.path))
    from ..export.job import export_session
    target = writable_target(choice.path)        # a regular file or a new path, never a device
    folder = target.parent
    session = window.session.copy()
    with tempfile.TemporaryDirectory(prefix=".explorer-frame-", dir=folder) as tmp:
        spec = _spec(window, Path(tmp), formats=(fmt,), frames=(session.cursor,), panel=choice.panel,
                     scale=choice.scale, caption=choice.caption)
        written = export_session(session, spec, "frame", window.lesson_names()[1])
        os.replace(written[0], target)
    window.statusBar().showMessage(tr("export.wrote", window.session.lang, path=choice.path), 8000)
    return choice.path


def export_lesson(window) -> list[Path]:
    """Every frame as numbered PNGs plus one PDF deck, with a cancellable progress dialog."""
    folder = window.ask_export_folder()
    if folder is None:
        return []
    from ..export.job import ExportCancelled, export_session
    lang = window.session.lang
    dialog = QProgressDialog(tr("export.progress", lang, what=""), tr("export.cancel", lang), 0, 1, window)
    dialog.setMinimumDuration(0)

    def progress(done: int, total: int, what: str) -> bool:
        dialog.setMaximum(total)
        dialog.setValue(done)
        dialog.setLabelText(tr("export.progress", lang, what=what))
        QApplication.processEvents()
        return not dialog.wasCanceled()

    window.progress_dialog = dialog
    try:
        written = export_session(window.session.copy(), _spec(window, folder), *window.lesson_names(),
                                 progress=progress)
    except ExportCancelled:
        window.statusBar().showMessage(tr("export.cancelled", lang), 8000)
        return []
    finally:
        dialog.close()
    window.statusBar().showMessage(tr("export.done", lang, n=len(written), folder=folder), 8000)
    return written


def copy_frame(window) -> None:
    """The current frame as a slide image on the clipboard, ready to paste into a presentation."""
    from ..export.job import frame_image
    image = frame_image(window.session.copy(), _spec(window, Path(tempfile.gettempdir())),
                        window.lesson_names()[1])
    QApplication.clipboard().setImage(image)
    window.statusBar().showMessage(tr("export.copied", window.session.lang), 5000)
