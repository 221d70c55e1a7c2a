"""The lesson editor's unsaved edits kept in a recovery file as they are made
(lessons/recovery.py, in the settings folder), and offered back at the next start after the
window ended without saving them (a crash, a killed process, a machine switched off)."""

from __future__ import annotations

import os
import time
import tomllib
from pathlib import Path

from PySide6.QtWidgets import QMessageBox

from ...i18n import add_messages, tr
from ...lessons import LessonError
from ...lessons.recovery import RecoveryError, Unsaved, drop, keep, left_behind, recovery_path

add_messages({
    "recovery.title": {"en": "Unsaved edits", "zh": "未保存的修改"},
    "recovery.offer": {"en": "Token Explorer ended on {when} without saving your edits of the lesson “{title}” "
                             "({path}).\n\nRestore them in the lesson editor?",
                       "zh": "Token Explorer 在 {when} 结束时没有保存你对课程“{title}”（{path}）的修改。\n\n"
                             "要在课程编辑器中恢复它们吗？"},
    "recovery.restore": {"en": "Restore", "zh": "恢复"},
    "recovery.discard": {"en": "Discard them", "zh": "放弃修改"},
    "recovery.later": {"en": "Not now", "zh": "以后再说"},
    "recovery.restored": {"en": "Restored the unsaved edits of “{title}”: Ctrl+S saves them",
                          "zh": "已恢复“{title}”未保存的修改：按 Ctrl+S 保存"},
    "recovery.not_restored": {"en": "The unsaved edits could not be restored: {message}\n\nThey are still "
                                    "in {path}.",
                              "zh": "未保存的修改无法恢复：{message}\n\n它们仍保存在 {path}。"},
    "recovery.unreadable": {"en": "{message}. It was put aside as {path}.", "zh": "{message}。它已被移到 {path}。"},
})


class EditsRecovery:
    """The recovery file of a window: `follow` keeps the editor's edits in it after every
    change (or removes it once there are none to save), `offer` asks about edits a window
    that ended left in it. A failure to keep them is said once, and editing goes on."""

    def __init__(self, window, folder: Path):
        self.window, self.folder = window, Path(folder)
        self._said_failure = False

    def follow(self, editor) -> None:
        model = editor.model
        try:
            if model is not None and model.changed:
                keep(self.folder, Unsaved(model.path, editor.file, model.saved_text, model.text))
            else:
                drop(self.folder)
        except RecoveryError as exc:
            if not self._said_failure:
                self._said_failure = True
                self.window.report_error(str(exc))

    def discard(self) -> None:
        """The teacher discarded the edits."""
        try:
            drop(self.folder)
        except RecoveryError as exc:
            self.window.report_error(str(exc))

    def offer(self) -> None:
        """Edits a window that ended left behind: restore them (the editor opens on them),
        discard them, or leave them for a later start. A recovery file this program cannot
        read is put aside under another name, never deleted."""
        w = self.window
        try:
            unsaved = left_behind(self.folder)
        except RecoveryError as exc:
            aside = recovery_path(self.folder).with_suffix(".unreadable.json")
            try:
                os.replace(recovery_path(self.folder), aside)
            except OSError:
                aside = recovery_path(self.folder)
            w.report_error(tr("recovery.unreadable", w.session.lang, message=str(exc), path=aside))
            return
        if unsaved is None:
            return
        answer = w.ask_restore_edits(unsaved)              # "restore" | "discard" | "later"
        if answer == "discard":
            self.discard()
        elif answer == "restore":
            try:
                w.lesson_editor.restore(unsaved)
            except LessonError as exc:
                w.report_error(tr("recovery.not_restored", w.session.lang, message=str(exc),
                                  path=recovery_path(self.folder)))
                return
            w.show_status(tr("recovery.restored", w.session.lang, title=title_of(unsaved, w.session.lang)), 15000)


def title_of(unsaved: Unsaved, lang: str) -> str:
    """The edited lesson's title in `lang` (else its other one), else its file's name."""
    try:
        title = tomllib.loads(unsaved.text).get("title")
    except tomllib.TOMLDecodeError:
        title = None
    if isinstance(title, dict):
        for text in (title.get(lang), *title.values()):
            if isinstance(text, str) and text:
                return text
    return unsaved.path.name


def ask_restore(window, unsaved: Unsaved) -> str:
    """Restore the edits a window that ended left behind? "restore", "discard" or "later"."""
    lang = window.session.lang
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(unsaved.written))
    box = QMessageBox(QMessageBox.Icon.Question, tr("recovery.title", lang),
                      tr("recovery.offer", lang, when=when, title=title_of(unsaved, lang), path=unsaved.path),
                      parent=window)
    restore = box.addButton(tr("recovery.restore", lang), QMessageBox.ButtonRole.AcceptRole)
    discard = box.addButton(tr("recovery.discard", lang), QMessageBox.ButtonRole.DestructiveRole)
    later = box.addButton(tr("recovery.later", lang), QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(restore)
    box.setEscapeButton(later)
    box.exec()
    return {restore: "restore", discard: "discard"}.get(box.clickedButton(), "later")
