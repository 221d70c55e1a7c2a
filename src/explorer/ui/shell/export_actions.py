"""The window's export actions: the current frame to a file or the clipboard and the whole
lesson to a folder, as composed slides, with a preview and a cancellable progress dialog."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths, Qt
from PySide6.QtGui import QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressDialog,
    QPushButton,
)

from ...core.errors import ExplorerError
from ...export.files import StagedFiles, safe_file_name
from ...export.spec import ExportCancelled, ExportSpec
from ...i18n import add_messages, tr
from ...session.narration import frame_title
from ...session.panels import SLIDE_PANELS
from ..theme import tint_text

PREVIEW_WIDTH = 560          # px of the dialog's slide preview
LESSON_FORMATS = ("png", "pdf", "pptx", "html")
FRAME_LIST_ROWS = (5, 8)     # rows of the frame list shown at least, and at most before it scrolls
STANDARD = QStandardPaths.StandardLocation

add_messages({
    "export.frame_title": {"en": "Export frame", "zh": "导出当前步骤"},
    "export.lesson_title": {"en": "Export lesson", "zh": "导出整课"},
    "export.what": {"en": "What", "zh": "内容"},
    "export.slide": {"en": "Slide: this frame's panels, large", "zh": "幻灯片：本步骤的面板，大字号"},
    "export.panel": {"en": "Slide of one panel: {panel}", "zh": "单个面板的幻灯片：{panel}"},
    "export.style": {"en": "Style", "zh": "样式"},
    "export.style.slide": {"en": "Slides for a projector", "zh": "投影用幻灯片"},
    "export.style.window": {"en": "The whole window, as on the desk", "zh": "整个窗口（与桌面上一样）"},
    "export.formats": {"en": "Files", "zh": "文件"},
    "export.format.png": {"en": "PNG per frame", "zh": "每步一张PNG"},
    "export.format.pdf": {"en": "PDF deck", "zh": "PDF文稿"},
    "export.format.pptx": {"en": "PowerPoint deck with speaker notes", "zh": "带演讲者备注的PowerPoint文稿"},
    "export.format.html": {"en": "Web page for students", "zh": "给学生的网页"},
    "export.preview": {"en": "Preview of this frame", "zh": "本步骤预览"},
    "export.scale": {"en": "Size", "zh": "尺寸"},
    "export.caption": {"en": "Caption strip (lesson, counter, one line of explanation)",
                       "zh": "底部说明条（课程、计数、一句说明）"},
    "export.file_filter": {"en": "PNG image (*.png);;PDF page (*.pdf);;PowerPoint slide (*.pptx);;SVG drawing (*.svg)",
                           "zh": "PNG图片 (*.png);;PDF页面 (*.pdf);;PowerPoint幻灯片 (*.pptx);;SVG矢量图 (*.svg)"},
    "export.folder": {"en": "Export lesson into folder", "zh": "把整课导出到文件夹"},
    "export.progress": {"en": "Exporting {what}…", "zh": "正在导出 {what}…"},
    "export.done": {"en": "Wrote {n} files to {folder}", "zh": "已写入 {n} 个文件到 {folder}"},
    "export.wrote": {"en": "Wrote {path}", "zh": "已写入 {path}"},
    "export.cancelled": {"en": "Export cancelled: nothing was written", "zh": "已取消导出：没有写入任何文件"},
    "export.copied": {"en": "Frame copied to the clipboard", "zh": "已把当前步骤复制到剪贴板"},
    "export.bad_suffix": {"en": "{path}: expected a .png, .pdf, .pptx or .svg file name",
                          "zh": "{path}：文件名应以 .png、.pdf、.pptx 或 .svg 结尾"},
    "export.no_format": {"en": "Choose at least one kind of file", "zh": "请至少选择一种文件"},
    "export.frames": {"en": "Frames", "zh": "步骤"},
    "export.frames.all": {"en": "All", "zh": "全选"},
    "export.frames.none": {"en": "None", "zh": "全不选"},
    "export.frames.numbers": {"en": "Files keep the lesson's frame numbers (03-pick-step0.png is frame 3)",
                              "zh": "文件保留课程中的步骤编号（03-pick-step0.png 就是第3步）"},
    "export.no_frame": {"en": "Pick at least one frame", "zh": "请至少选择一个步骤"},
    "export.into": {"en": "The files go into a folder named “{name}” inside the folder you choose",
                    "zh": "文件会写入你所选文件夹中名为“{name}”的文件夹"},
})


@dataclass(frozen=True)
class FrameChoice:
    path: Path
    panel: str | None = None    # None: the frame's own panels
    scale: int = 1
    caption: bool = True
    style: str = "slide"


@dataclass(frozen=True)
class LessonChoice:
    folder: Path
    formats: tuple[str, ...] = ("png", "pdf")
    style: str = "slide"
    scale: int = 1
    caption: bool = True
    frames: tuple[int, ...] | None = None    # 0-based, numbered as in the lesson; None = every frame


def export_name(window) -> str:
    """What exports are named after: the lesson's id, or in free exploration the prompt."""
    if window.lesson is not None:
        return window.lesson.id
    session = window.session
    return safe_file_name(session.model.vocab.decode(session.prompt_ids), fallback=window.lesson_names()[0])


def start_folder(window, *places: QStandardPaths.StandardLocation) -> Path:
    """Where a save dialog opens: where the teacher saved last, else the first of `places`
    (their Documents, Pictures) that exists, else their home."""
    last = window.settings["export_folder"]
    found = [Path(last)] if last else []
    found += [Path(p) for p in map(QStandardPaths.writableLocation, places) if p]
    return next((p for p in found if p.is_dir()), Path.home())


def ask_path(window, title: str, start: Path, name: str = "", file_filter: str = "") -> Path | None:
    """A save dialog for a file (`name` proposed), or for a folder when `name` is ""; the
    folder it was left in is remembered for the next export."""
    dialog = QFileDialog(window, title, str(start), file_filter)
    if name:
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.setDefaultSuffix("png")
        dialog.selectFile(name)
    else:
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
    with closing_dialog(dialog):
        if dialog.exec() != QDialog.DialogCode.Accepted or not dialog.selectedFiles():
            return None
        path = Path(dialog.selectedFiles()[0])
    window.settings["export_folder"] = str(path.parent if name else path)
    return path


def spec_for(window, out_dir: Path, **changes) -> ExportSpec:
    return ExportSpec(out_dir=out_dir, lang=window.session.lang, theme=window.theme.name, **changes)


def lesson_checks(window) -> tuple[tuple[str, str, str], ...]:
    """The lesson's self-checks in the window's language, for the speaker notes."""
    lang = window.session.lang
    return () if window.lesson is None else tuple((c.when, c.question[lang], c.answer[lang])
                                                  for c in window.lesson.checks)


class ExportDialog(QDialog):
    """The choices of an export and a preview of the current frame's slide with them."""

    def __init__(self, window, lesson: bool):
        super().__init__(window)
        self.window_, lang = window, window.session.lang
        self.setWindowTitle(tr("export.lesson_title" if lesson else "export.frame_title", lang))
        form = QFormLayout(self)
        self.what = QComboBox()
        self.what.addItem(tr("export.slide", lang), None)
        for pid in SLIDE_PANELS:
            self.what.addItem(tr("export.panel", lang, panel=tr(window.panels[pid].title_key, lang)), pid)
        self.style = QComboBox()
        for style in ("slide", "window"):
            self.style.addItem(tr(f"export.style.{style}", lang), style)
        self.formats = {fmt: QCheckBox(tr(f"export.format.{fmt}", lang)) for fmt in LESSON_FORMATS}
        for fmt in ("png", "pdf"):
            self.formats[fmt].setChecked(True)
        self.scale = QComboBox()
        self.scale.addItem("1920 × 1080", 1)
        self.scale.addItem("3840 × 2160 (2×)", 2)
        self.caption = QCheckBox(tr("export.caption", lang))
        self.caption.setChecked(True)
        self.preview = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.preview.setFixedSize(PREVIEW_WIDTH, PREVIEW_WIDTH * 9 // 16)
        self.frames = self._frame_list() if lesson else QListWidget()
        self.reason = self._tinted(QLabel())        # why OK is disabled (hidden when it is not)
        if lesson:
            form.addRow(tr("export.style", lang), self.style)
            row = QHBoxLayout()
            for box in self.formats.values():
                row.addWidget(box)
            form.addRow(tr("export.formats", lang), row)
            form.addRow(tr("export.frames", lang), self.frames)
            picks = QHBoxLayout()
            for key, state in (("all", Qt.CheckState.Checked), ("none", Qt.CheckState.Unchecked)):
                button = QPushButton(tr(f"export.frames.{key}", lang))
                button.clicked.connect(lambda _=False, s=state: self._check_every_frame(s))
                picks.addWidget(button)
            picks.addStretch(1)
            form.addRow(picks)
            form.addRow(QLabel(tr("export.frames.numbers", lang), wordWrap=True))
            form.addRow(QLabel(tr("export.into", lang, name=export_name(window)), wordWrap=True))
        else:
            form.addRow(tr("export.what", lang), self.what)
            form.addRow(tr("export.style", lang), self.style)
        form.addRow(tr("export.scale", lang), self.scale)
        form.addRow(self.caption)
        form.addRow(QLabel(tr("export.preview", lang)))
        form.addRow(self.preview)
        form.addRow(self.reason)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        for combo in (self.what, self.style):
            combo.currentIndexChanged.connect(self.update_preview)
        self.caption.toggled.connect(self.update_preview)
        for box in self.formats.values():
            box.toggled.connect(self._check_ok)
        self.frames.itemChanged.connect(self._check_ok)
        self._check_ok()
        self.update_preview()

    def _tinted(self, label: QLabel) -> QLabel:
        label.setWordWrap(True)
        tint_text(label, self.window_.theme.error)
        return label

    def _frame_list(self) -> QListWidget:
        """Every frame of the lesson, numbered and titled as the player shows them, checked."""
        session, lang = self.window_.session, self.window_.session.lang
        frames = QListWidget()
        for index, frame in enumerate(session.frames):
            run, model = session.run_at(index)
            item = QListWidgetItem(f"{index + 1:>2}  {frame_title(frame, run, model.vocab, lang)}")
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
            item.setData(Qt.ItemDataRole.UserRole, index)
            frames.addItem(item)
        least, most = (frames.sizeHintForRow(0) * rows + 2 * frames.frameWidth() for rows in FRAME_LIST_ROWS)
        frames.setMinimumHeight(min(least, frames.sizeHintForRow(0) * frames.count() + 2 * frames.frameWidth()))
        frames.setMaximumHeight(most)
        return frames

    def _check_every_frame(self, state: Qt.CheckState) -> None:
        for row in range(self.frames.count()):
            self.frames.item(row).setCheckState(state)

    def chosen_frames(self) -> tuple[int, ...] | None:
        """The checked frames' indexes (0-based, as in the lesson); None when every one is."""
        items = [self.frames.item(row) for row in range(self.frames.count())]
        picked = tuple(i.data(Qt.ItemDataRole.UserRole) for i in items if i.checkState() == Qt.CheckState.Checked)
        return None if len(picked) == len(items) else picked

    def chosen_style(self) -> str:
        return "window" if self.what.currentData() is None and self.style.currentData() == "window" else "slide"

    def chosen_formats(self) -> tuple[str, ...]:
        return tuple(fmt for fmt, box in self.formats.items() if box.isChecked())

    def _check_ok(self) -> None:
        """OK only with something to write; else the reason, beside it and in its tooltip."""
        problems = [key for key, missing in (("export.no_format", not self.chosen_formats()),
                                             ("export.no_frame", self.chosen_frames() == ())) if missing]
        reason = " · ".join(tr(key, self.window_.session.lang) for key in problems)
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(not reason)
        ok.setToolTip(reason)
        self.reason.setText(reason)
        self.reason.setVisible(bool(reason))

    def update_preview(self) -> None:
        """The current frame's slide with these choices, as it will be written (drawn at the
        slide's full size, shown smaller)."""
        self.style.setEnabled(self.what.currentData() is None)
        image = slide_picture(self.window_, spec_for(self.window_, Path("."), style=self.chosen_style(),
                                                     panel=self.what.currentData(), caption=self.caption.isChecked()))
        self.preview.setPixmap(QPixmap.fromImage(image).scaled(self.preview.size(), Qt.AspectRatioMode.KeepAspectRatio,
                                                               Qt.TransformationMode.SmoothTransformation))


def slide_picture(window, spec: ExportSpec):
    """The window's current frame as a slide image, drawn from a copy of its session."""
    from ..slides.job import frame_image
    return frame_image(window.session.copy(), spec, window.lesson_names()[1], window_class=type(window))


def ask_frame_choice(window) -> FrameChoice | None:
    """The export-frame dialog, then the file dialog; None when the teacher cancels."""
    from ..slides.job import file_stem
    with closing_dialog(ExportDialog(window, lesson=False)) as dialog:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        what, scale, caption, style = (dialog.what.currentData(), dialog.scale.currentData(),
                                       dialog.caption.isChecked(), dialog.chosen_style())
    s, lang = window.session, window.session.lang
    name = f"{export_name(window)}-{file_stem(s.cursor, s.frames[s.cursor], len(s.frames), s.asking)}.png"     # as a lesson export names it
    path = ask_path(window, tr("export.frame_title", lang), start_folder(window, STANDARD.PicturesLocation,
                                                                          STANDARD.DocumentsLocation),
                    name, tr("export.file_filter", lang))
    return None if path is None else FrameChoice(path, what, scale, caption, style)


def ask_lesson_choice(window) -> LessonChoice | None:
    """The export-lesson dialog, then the folder dialog; None when the teacher cancels."""
    with closing_dialog(ExportDialog(window, lesson=True)) as dialog:
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        choices = (dialog.chosen_formats(), dialog.chosen_style(), dialog.scale.currentData(),
                   dialog.caption.isChecked(), dialog.chosen_frames())
    folder = ask_path(window, tr("export.folder", window.session.lang),
                      start_folder(window, STANDARD.DocumentsLocation, STANDARD.PicturesLocation))
    if folder is None:
        return None
    name = export_name(window)
    return LessonChoice(folder if folder.name == name else folder / name, *choices)


@contextmanager
def closing_dialog(dialog: QDialog):
    """A dialog used once: deleted when done with (a dialog left to its parent, the window,
    lives until the window goes, and at exit Qt and Python would both delete its picture)."""
    try:
        yield dialog
    finally:
        dialog.deleteLater()


def export_frame(window) -> Path | None:
    """Write the current frame's slide to the chosen file (format from its suffix), atomically."""
    choice = window.ask_export_frame()
    if choice is None:
        return None
    fmt = choice.path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg", "pdf", "pptx"):
        raise ExplorerError(tr("export.bad_suffix", window.session.lang, path=choice.path))
    from ..slides.job import frame_file_bytes
    spec = spec_for(window, choice.path.parent, formats=(fmt,), panel=choice.panel, scale=choice.scale,
                    caption=choice.caption, style=choice.style)
    data = frame_file_bytes(window.session.copy(), spec, fmt, window.lesson_names()[1], lesson_checks(window),
                            window_class=type(window))
    with StagedFiles(choice.path.parent) as files:
        files.add(choice.path.name, data)
        files.commit()
    window.show_status(tr("export.wrote", window.session.lang, path=choice.path), 8000)
    return choice.path


def export_lesson(window) -> list[Path]:
    """Every frame as slides in the chosen files, with a cancellable progress dialog."""
    choice = window.ask_export_folder()
    if choice is None:
        return []
    from ..slides.job import export_session
    lang = window.session.lang
    dialog = QProgressDialog(tr("export.progress", lang, what=""), tr("cancel", lang), 0, 1, window)
    dialog.setMinimumDuration(0)

    def progress(done: int, total: int, what: str) -> bool:
        dialog.setMaximum(total)
        dialog.setValue(done)
        dialog.setLabelText(tr("export.progress", lang, what=what))
        QApplication.processEvents()
        return not dialog.wasCanceled()

    window.progress_dialog = dialog
    spec = spec_for(window, choice.folder, formats=choice.formats, style=choice.style, scale=choice.scale,
                    caption=choice.caption, frames=choice.frames)
    try:
        written = export_session(window.session.copy(), spec, export_name(window), window.lesson_names()[1],
                                 progress=progress,
                                 checks=lesson_checks(window), window_class=type(window))
    except ExportCancelled:
        window.show_status(tr("export.cancelled", lang), 8000)
        return []
    finally:
        dialog.close()
    window.show_status(tr("export.done", lang, n=len(written), folder=choice.folder), 8000)
    return written


def copy_frame(window) -> None:
    """The current frame's slide on the clipboard, ready to paste into a presentation."""
    QApplication.clipboard().setImage(slide_picture(window, spec_for(window, Path("."))))
    window.show_status(tr("export.copied", window.session.lang), 5000)
