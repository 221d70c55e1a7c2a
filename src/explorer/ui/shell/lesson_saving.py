"""File → Save as lesson… (Ctrl+S): what the window shows written as a lesson file
(lessons/writer.py), named after the prompt, written atomically. A file that changed on disk
since the window opened or saved it, or one it never knew, is replaced only when the teacher
says so; a failed write names the file and changes nothing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

from ...i18n import add_messages, tr
from ...lessons import lessons_dir
from ...lessons.writer import SUFFIX, file_digest, lesson_document, save_lesson
from ...session import SessionEvent
from .export_actions import closing_dialog, export_name, start_folder

add_messages({
    "save_lesson.title": {"en": "Save as lesson", "zh": "另存为课程"},
    "save_lesson.filter": {"en": "Lessons (*.lesson.toml *.toml)", "zh": "课程 (*.lesson.toml *.toml)"},
    "save_lesson.wrote": {"en": "Saved the lesson {path}", "zh": "课程已保存：{path}"},
    "save_lesson.changed": {"en": "{path} has changed on disk since it was opened or saved here.\n\n"
                                  "Replace it with this lesson? The changes made there are lost.",
                            "zh": "{path} 在打开或保存之后已在磁盘上被修改。\n\n要用这个课程替换它吗？那里的修改会丢失。"},
    "save_lesson.exists": {"en": "{path} already exists.\n\nReplace it with this lesson?",
                           "zh": "{path} 已存在。\n\n要用这个课程替换它吗？"},
})


class LessonSaving:
    """The window's Save as lesson, and what it knows of the lesson files on disk: the bytes
    of each file it opened or wrote (a file that differs has been changed by someone else)."""

    def __init__(self, window):
        self.window = window
        self.known: dict[Path, str] = {}          # resolved path -> SHA-256 of its bytes when last seen
        window.session.subscribe(SessionEvent.RUN_CHANGED, lambda _s: self._note_opened())
        self._note_opened()                       # the lesson the window was opened on

    def _note_opened(self) -> None:
        """A lesson file opened in the window: its bytes as they were when it was opened."""
        lesson = self.window.session.content
        if lesson is None or lesson.path.parent.resolve() == lessons_dir().resolve():
            return
        path = lesson.path.resolve()
        if path not in self.known:
            digest = file_digest(path)
            if digest is not None:
                self.known[path] = digest

    def save(self) -> Path | None:
        """Ask where, then write; None when the teacher cancels or keeps a file that is there.
        ExplorerError (shown by the window's `guarded`) when it cannot be saved: nothing changes."""
        w = self.window
        return self.write(lesson_document(w.session), None, export_name(w) + SUFFIX)   # the lesson's id, or the prompt

    def write(self, text: str, path: Path | None, proposed: str) -> Path | None:
        """`text` written to `path` (None: to the file the teacher picks, `proposed` offered),
        asking before it replaces a file that changed since it was read or written here;
        the path written, or None when the teacher cancels or keeps a file that is there."""
        w = self.window
        if path is None:
            chosen = w.ask_lesson_file(proposed)
            if chosen is None:
                return None
            path = Path(chosen)
            if not path.name.endswith(".toml"):
                path = path.with_name(path.name + SUFFIX)
        key = path.resolve()
        digest = save_lesson(path, text, self.known.get(key), w.ask_replace_lesson)
        if digest is None:
            return None
        self.known[key] = digest
        w.show_status(tr("save_lesson.wrote", w.session.lang, path=path), 10000)
        return path


def ask_lesson_file(window, name: str) -> Path | None:
    """The save dialog, `name` proposed, where the teacher last saved (else Documents). It
    does not ask about replacing: `save_lesson` does, knowing whether the file changed."""
    lang = window.session.lang
    dialog = QFileDialog(window, tr("save_lesson.title", lang),
                         str(start_folder(window, QStandardPaths.StandardLocation.DocumentsLocation)),
                         tr("save_lesson.filter", lang))
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setOption(QFileDialog.Option.DontConfirmOverwrite, True)
    dialog.setDefaultSuffix(SUFFIX.lstrip("."))
    dialog.selectFile(name)
    with closing_dialog(dialog):
        if dialog.exec() != QDialog.DialogCode.Accepted or not dialog.selectedFiles():
            return None
        path = Path(dialog.selectedFiles()[0])
    window.settings["export_folder"] = str(path.parent)
    return path


def ask_replace(window, path: Path, changed: bool) -> bool:
    """Replace `path`? changed: it is a file the window knew, changed on disk since."""
    lang = window.session.lang
    answer = QMessageBox.question(window, tr("save_lesson.title", lang),
                                  tr("save_lesson.changed" if changed else "save_lesson.exists", lang, path=path),
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
