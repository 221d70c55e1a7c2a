"""Lesson → Edit lesson (E): a dock that edits the open lesson, or the free exploration
written as one (lessons/writer.py), while the window plays it.

The lesson being edited is an EditableLesson (lessons/editing.py): every edit is read by
the loader before it is kept, and one it refuses is shown with the loader's message and
changes nothing. Every edit that is kept plays at once: the session's content becomes the
edited lesson, the player stays on the frame edited, so the player's title, the
explanation, the slide preview and exports show the new text. Undo and redo (Ctrl+Z,
Ctrl+Shift+Z) take back the editor's edits while the keys are in the editor; elsewhere the
window's Ctrl+Z takes back a forced token. Save (Ctrl+S while the editor is open) writes
the edited lesson to its file; a shipped lesson, or an exploration never saved, asks where."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPixmap, QShortcut
from PySide6.QtWidgets import (QApplication, QCheckBox, QComboBox, QDockWidget, QFormLayout, QGridLayout,
                               QHBoxLayout, QLabel, QLineEdit, QListWidget, QMessageBox, QPlainTextEdit,
                               QPushButton, QScrollArea, QTabWidget, QVBoxLayout, QWidget)

from ...i18n import LANGS, MESSAGES, add_messages, tr
from ...lessons import LessonError, lessons_dir
from ...lessons.editing import (FRAME_TEXTS, AddCheck, AddFrame, DeleteCheck, DeleteFrame, DuplicateFrame,
                                EditableLesson, MoveFrame, SetCheck, SetFrameText, SetLessonText, SetPanels)
from ...lessons.writer import SUFFIX, lesson_document
from ...session import SessionEvent
from ...session.narration import frame_title
from ...session.panels import DEFAULT_SLIDE_PANELS, PANELS, panel_title
from .export_actions import export_name, slide_picture, spec_for

UNDO_KEYS = ("Ctrl+Z",)
PREVIEW_WIDTH = 480          # px of the slide preview under the texts
PREVIEW_DELAY_MS = 300       # the preview is redrawn this long after the last edit
REDO_KEYS = ("Ctrl+Shift+Z", "Ctrl+Y")

add_messages({
    "editor.title": {"en": "Lesson editor", "zh": "课程编辑器"},
    "editor.language": {"en": "Texts in", "zh": "编辑语言"},
    "editor.undo": {"en": "Undo", "zh": "撤销"},
    "editor.redo": {"en": "Redo", "zh": "重做"},
    "editor.save": {"en": "Save", "zh": "保存"},
    "editor.frames": {"en": "Frames", "zh": "帧"},
    "editor.lesson": {"en": "Lesson and checks", "zh": "课程与自测"},
    "editor.delete": {"en": "Delete", "zh": "删除"},
    "editor.duplicate": {"en": "Duplicate", "zh": "复制"},
    "editor.up": {"en": "Up", "zh": "上移"},
    "editor.down": {"en": "Down", "zh": "下移"},
    "editor.add_here": {"en": "Add frame here", "zh": "在此添加帧"},
    "editor.frame_title": {"en": "Title", "zh": "标题"},
    "editor.preview": {"en": "The slide of this frame", "zh": "这一帧的幻灯片"},
    "editor.panels": {"en": "Panels", "zh": "显示的面板"},
    "editor.ask": {"en": "Question", "zh": "提问"},
    "editor.lesson_title": {"en": "Lesson title", "zh": "课程标题"},
    "editor.summary": {"en": "Summary", "zh": "简介"},
    "editor.checks": {"en": "Self-check questions", "zh": "自测题"},
    "editor.when": {"en": "Asked", "zh": "时间"},
    "editor.when.before": {"en": "before class", "zh": "课前"},
    "editor.when.after": {"en": "after class", "zh": "课后"},
    "editor.question": {"en": "Question", "zh": "问题"},
    "editor.answer": {"en": "Answer", "zh": "答案"},
    "editor.add_check": {"en": "Add question", "zh": "添加题目"},
    "editor.delete_check": {"en": "Delete question", "zh": "删除题目"},
    "editor.new_question": {"en": "A new question?", "zh": "新的问题？"},
    "editor.new_answer": {"en": "Its answer.", "zh": "答案。"},
    "editor.not_translated": {"en": "not translated: {text}", "zh": "未翻译：{text}"},
    "editor.app_text": {"en": "the app's own text: {text}", "zh": "程序自带的文字：{text}"},
    "editor.no_ask": {"en": "none (a question hides the panel until Reveal)", "zh": "无（提问会在揭晓前隐藏面板）"},
    "editor.refused": {"en": "Not changed: {message}", "zh": "未更改：{message}"},
    "editor.unsaved": {"en": "The lesson “{title}” has edits that are not saved.\n\nSave them before closing?",
                       "zh": "课程“{title}”有未保存的修改。\n\n关闭前要保存吗？"},
})


class _EditorKeys(QObject):
    """Ctrl+Z and Ctrl+Shift+Z in the editor's text fields are the editor's undo and redo,
    not the field's own: the field does not claim them, so the shortcuts fire."""

    def eventFilter(self, obj, event) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride:
            pressed = QKeySequence(event.keyCombination())
            return any(pressed.matches(QKeySequence(k)) == QKeySequence.SequenceMatch.ExactMatch
                       for k in UNDO_KEYS + REDO_KEYS)
        return False


class LessonEditor(QWidget):
    """The editor of the lesson the window plays (`start`), in `window.session`."""

    played = Signal()           # the window plays the edited lesson (after an edit, an undo, a redo, a save)
    edits_changed = Signal()    # the edits to save changed (an edit, an undo, a redo, a save, a restore)
    refused = Signal(str)       # an edit the loader refused: its message

    def __init__(self, window):
        super().__init__()
        self.window, self.session = window, window.session
        self.model: EditableLesson | None = None
        self.file: Path | None = None        # where Save writes without asking (None: it asks)
        self.lang = self.session.lang        # the language of the texts edited
        self._loading = False                # the fields are being filled, not typed into
        self._keys = _EditorKeys(self)
        self._build()
        QShortcut(QKeySequence(REDO_KEYS[0]), self, self.redo, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        QShortcut(QKeySequence(REDO_KEYS[1]), self, self.redo, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        for event in (SessionEvent.RUN_CHANGED, SessionEvent.CURSOR_CHANGED):
            self.session.subscribe(event, lambda _s: self._followed())
        self.session.subscribe(SessionEvent.LANG_CHANGED, lambda _s: self.retranslate())
        self.retranslate()

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        self.language = QComboBox()
        for lang in LANGS:
            self.language.addItem(tr(f"action.lang_{lang}", lang), lang)
        self.language.setCurrentIndex(LANGS.index(self.lang))
        self.language.currentIndexChanged.connect(lambda i: self.set_lang(LANGS[i]))
        self.language_label = QLabel()
        self.undo_button, self.redo_button, self.save_button = QPushButton(), QPushButton(), QPushButton()
        self.undo_button.clicked.connect(self.undo)
        self.redo_button.clicked.connect(self.redo)
        self.save_button.clicked.connect(lambda: self.window.guarded(self.save))
        top = QHBoxLayout()
        for w in (self.language_label, self.language):
            top.addWidget(w)
        top.addStretch(1)
        for w in (self.undo_button, self.redo_button, self.save_button):
            top.addWidget(w)
        self.message = QLabel(wordWrap=True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setStyleSheet("color: #b00020;")      # and the words "Not changed": never colour alone
        self.message.hide()

        self.tabs = QTabWidget()
        self.tabs.addTab(self._frames_tab(), "")
        self.tabs.addTab(self._lesson_tab(), "")
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.message)
        layout.addWidget(self.tabs, 1)
        for kind in (QLineEdit, QPlainTextEdit):
            for field in self.findChildren(kind):
                field.installEventFilter(self._keys)

    def _frames_tab(self) -> QWidget:
        self.frame_list = QListWidget()
        self.frame_list.setMinimumHeight(120)
        self.frame_list.currentRowChanged.connect(self._row_chosen)
        self.frame_buttons = {}
        buttons = QGridLayout()
        for i, (name, handler) in enumerate((("delete", self.delete_frame), ("duplicate", self.duplicate_frame),
                                             ("up", lambda: self.move_frame(-1)), ("down", lambda: self.move_frame(+1)),
                                             ("add_here", self.add_frame))):
            button = self.frame_buttons[name] = QPushButton()
            button.clicked.connect(handler)
            buttons.addWidget(button, 0 if i < 4 else 1, i if i < 4 else 0, 1, 1 if i < 4 else 4)
        self.form = QFormLayout()
        self.form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.texts: dict[str, QLineEdit | QPlainTextEdit] = {}
        self.text_labels: dict[str, QLabel] = {}
        for field in FRAME_TEXTS:
            box = QLineEdit() if field in ("title", "ask") else QPlainTextEdit()
            if isinstance(box, QLineEdit):
                box.textEdited.connect(lambda text, f=field: self._frame_text(f, text))
            else:
                box.setTabChangesFocus(True)
                box.setFixedHeight(box.fontMetrics().lineSpacing() * 3 + 12)
                box.textChanged.connect(lambda f=field, b=box: self._frame_text(f, b.toPlainText()))
            self.texts[field] = box
            self.text_labels[field] = QLabel()
            if field == "ask":
                self.form.addRow(self._panels_label(), self._panel_boxes())
            self.form.addRow(self.text_labels[field], box)
        self.preview_label = QLabel()
        self.preview = QLabel(alignment=Qt.AlignmentFlag.AlignCenter)
        self.preview.setFixedSize(PREVIEW_WIDTH, PREVIEW_WIDTH * 9 // 16)
        self._preview_timer = QTimer(self, singleShot=True, interval=PREVIEW_DELAY_MS)
        self._preview_timer.timeout.connect(self.update_preview)
        self.played.connect(self._preview_timer.start)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addWidget(self.frame_list)
        layout.addLayout(buttons)
        layout.addLayout(self.form)
        layout.addWidget(self.preview_label)
        layout.addWidget(self.preview)
        layout.addStretch(1)
        return _scrolled(page)

    def update_preview(self) -> None:
        """The slide of the frame on screen, as an export would draw it now (redrawn a moment
        after the typing stops, not at every key)."""
        if self.model is None or not self.isVisible():
            return
        image = slide_picture(self.window, spec_for(self.window, Path(".")))
        self.preview.setPixmap(QPixmap.fromImage(image).scaled(self.preview.size(), Qt.AspectRatioMode.KeepAspectRatio,
                                                               Qt.TransformationMode.SmoothTransformation))

    def _panels_label(self) -> QLabel:
        self.panels_label = QLabel()
        return self.panels_label

    def _panel_boxes(self) -> QWidget:
        holder = QWidget()
        grid = QGridLayout(holder)
        grid.setContentsMargins(0, 0, 0, 0)
        self.panel_boxes = {}
        for i, pid in enumerate(PANELS):
            box = self.panel_boxes[pid] = QCheckBox()
            box.clicked.connect(lambda _c=False: self._panels_chosen())
            grid.addWidget(box, i // 2, i % 2)
        return holder

    def _lesson_tab(self) -> QWidget:
        self.lesson_title = QLineEdit()
        self.lesson_title.textEdited.connect(lambda t: self._apply(SetLessonText("title", self.lang, t), merge=True))
        self.summary = QPlainTextEdit()
        self.summary.setTabChangesFocus(True)
        self.summary.setFixedHeight(self.summary.fontMetrics().lineSpacing() * 4 + 12)
        self.summary.textChanged.connect(
            lambda: self._loading or self._apply(SetLessonText("summary", self.lang, self.summary.toPlainText()),
                                                 merge=True))
        self.check_list = QListWidget()
        self.check_list.setMinimumHeight(90)
        self.check_list.currentRowChanged.connect(lambda _r: self._show_check())
        self.when = QComboBox()
        self.when.addItems(["", ""])
        self.when.activated.connect(lambda i: self._check_edit("when", ("before", "after")[i]))
        self.question = QLineEdit()
        self.question.textEdited.connect(lambda t: self._check_edit("question", t))
        self.answer = QLineEdit()
        self.answer.textEdited.connect(lambda t: self._check_edit("answer", t))
        self.add_check_button, self.delete_check_button = QPushButton(), QPushButton()
        self.add_check_button.clicked.connect(self.add_check)
        self.delete_check_button.clicked.connect(self.delete_check)
        self.lesson_labels = {k: QLabel() for k in ("lesson_title", "summary", "checks", "when", "question", "answer")}
        form = QFormLayout()
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.addRow(self.lesson_labels["lesson_title"], self.lesson_title)
        form.addRow(self.lesson_labels["summary"], self.summary)
        form.addRow(self.lesson_labels["checks"], self.check_list)
        check_buttons = QHBoxLayout()
        check_buttons.addWidget(self.add_check_button)
        check_buttons.addWidget(self.delete_check_button)
        form.addRow(check_buttons)
        form.addRow(self.lesson_labels["when"], self.when)
        form.addRow(self.lesson_labels["question"], self.question)
        form.addRow(self.lesson_labels["answer"], self.answer)
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addLayout(form)
        layout.addStretch(1)
        return _scrolled(page)

    # ------------------------------------------------------------------ what it edits
    def start(self) -> None:
        """Edit what the window plays: the open lesson (kept, with its undo history, if it is
        the one being edited already), or the free exploration written as a lesson, which
        the window then plays. ExplorerError when it cannot be written as one."""
        s = self.session
        if self.model is not None and s.content is self.model.lesson:
            return
        if self.model is not None and self.model.changed and not self._leave_edits():
            return
        if s.in_lesson and s.content is not None:
            lesson = s.content
            self.model = EditableLesson(lesson.path, lesson.source or lesson.path.read_text(encoding="utf-8"))
            shipped = lesson.path.parent.resolve() == lessons_dir().resolve()
            self.file = None if shipped else lesson.path
        else:
            self.model = EditableLesson(Path(export_name(self.window) + SUFFIX), lesson_document(s))
            self.file = None
        self._replay(s.cursor)

    def _leave_edits(self) -> bool:
        """The window plays other content while the editor holds unsaved edits of a lesson,
        and the teacher asks to edit that content: save them, discard them, or (cancel, or a
        save that did not happen) go back to the edited lesson. True: edit the other content."""
        answer = self.window.ask_unsaved_edits()
        if answer == "discard" or (answer == "save" and self.save() is not None):
            return True
        self._replay(None)
        return False

    def restore(self, unsaved) -> None:
        """Edit the lesson a recovery file kept (lessons/recovery.py), its edits still to
        save: the window plays it. LessonError (the loader's message) if it cannot be read
        or played; the editor then holds what it held."""
        kept = self.model, self.file
        self.model, self.file = EditableLesson.recovered(unsaved.path, unsaved.saved, unsaved.text), unsaved.file
        try:
            self._replay(0)
        except LessonError:
            self.model, self.file = kept
            raise

    @property
    def changed(self) -> bool:
        """Edits not saved."""
        return self.model is not None and self.model.changed

    def has_focus(self) -> bool:
        focused = QApplication.focusWidget()
        return focused is not None and (focused is self or self.isAncestorOf(focused))

    def _followed(self) -> None:
        """The window moved to another frame (the list follows) or plays other content: an
        unchanged lesson being edited gives way to it (edits are kept until the next `start`)."""
        if self.model is not None and self.session.content is not self.model.lesson and not self.model.changed:
            self.model = None
        self.refresh()
        self._preview_timer.start()

    # ------------------------------------------------------------------ editing
    def _apply(self, edit, merge: bool = False) -> bool:
        """Make `edit` and play it; refused by the loader: its message shown, nothing changed."""
        if self._loading or self.model is None:
            return False
        try:
            lesson, prepared = self.model.apply(edit, lambda l: l.prepare_play(self.session), merge)
        except LessonError as exc:
            self.message.setText(tr("editor.refused", self.session.lang, message=str(exc)))
            self.message.show()
            self.refused.emit(str(exc))
            return False
        self.message.hide()
        self._install(lesson, prepared, edit.shows())
        return True

    def _install(self, lesson, prepared, frame: int | None) -> None:
        s = self.session
        cursor, revealed = (s.cursor if frame is None else frame), not s.asking
        s.install_play(prepared, content=lesson)
        s.go(min(cursor, len(s.frames) - 1), revealed=revealed and frame is None)
        self.refresh()
        self.played.emit()
        self.edits_changed.emit()

    def _replay(self, frame: int | None) -> None:
        lesson = self.model.lesson
        self._install(lesson, lesson.prepare_play(self.session), frame)

    def undo(self) -> None:
        if self.model is not None and (edit := self.model.undo()) is not None:
            self.message.hide()
            self._replay(edit.shows())

    def redo(self) -> None:
        if self.model is not None and (edit := self.model.redo()) is not None:
            self.message.hide()
            self._replay(edit.shows())

    def _row_chosen(self, row: int) -> None:
        """A frame chosen in the list: the window shows it."""
        if not self._loading and row >= 0:
            self.session.go(row)

    def _frame_text(self, field: str, text: str) -> None:
        self._apply(SetFrameText(self.session.cursor, field, self.lang, text), merge=True)

    def _panels_chosen(self) -> None:
        frame = self.model.data["frames"][self.session.cursor]
        checked = [pid for pid in PANELS if self.panel_boxes[pid].isChecked()]
        kept = [p for p in frame.get("panels", DEFAULT_SLIDE_PANELS[frame["show"]]) if p in checked]
        if not self._apply(SetPanels(self.session.cursor, tuple(kept + [p for p in checked if p not in kept]))):
            self.refresh()                           # the boxes show the frame's panels again

    def delete_frame(self) -> None:
        self._apply(DeleteFrame(self.session.cursor))

    def duplicate_frame(self) -> None:
        self._apply(DuplicateFrame(self.session.cursor))

    def move_frame(self, by: int) -> None:
        at = self.session.cursor
        if 0 <= at + by < len(self.session.frames):
            self._apply(MoveFrame(at, at + by))

    def add_frame(self) -> None:
        """A frame after the one shown, at its step (its kind and step, on its scenario)."""
        s, at = self.session, self.session.cursor
        frame = s.frames[at]
        scenario = self.model.data["frames"][at].get("scenario", "base")
        step = None if frame.kind == "input" else -1 if frame.kind == "stop" else frame.step
        self._apply(AddFrame(at + 1, frame.kind, step, scenario))

    def _check_edit(self, field: str, text: str) -> None:
        row = self.check_list.currentRow()
        if row >= 0:
            self._apply(SetCheck(row, field, self.lang, text), merge=True)

    def add_check(self) -> None:
        at = len(self.model.data.get("checks", []))
        lang = self.lang
        if self._apply(AddCheck(at, "after", lang, tr("editor.new_question", lang), tr("editor.new_answer", lang))):
            self.check_list.setCurrentRow(at)

    def delete_check(self) -> None:
        if (row := self.check_list.currentRow()) >= 0:
            self._apply(DeleteCheck(row))

    def set_lang(self, lang: str) -> None:
        self.lang = lang
        self.refresh()

    # ------------------------------------------------------------------ saving
    def save(self) -> Path | None:
        """Write the edited lesson to its file, or (a shipped lesson, an exploration) to the
        one the teacher picks; None when the teacher cancels or keeps a file there.
        ExplorerError when it cannot be written: the edits stay."""
        model = self.model
        if model is None:
            return None
        path = self.window.lesson_saving.write(model.text, self.file, model.lesson.id + SUFFIX)
        if path is None:
            return None
        moved = path != model.path
        model.saved(path)
        self.file = path
        if moved:
            self._replay(None)                  # the window plays the lesson of the new file
        self.refresh()
        self.edits_changed.emit()
        return path

    # ------------------------------------------------------------------ showing
    def refresh(self) -> None:
        """The list of frames, the chosen frame's texts and panels, the lesson's texts and
        checks, from the data being edited."""
        self._loading = True
        try:
            self._refresh()
        finally:
            self._loading = False

    def _refresh(self) -> None:
        model, s, ui = self.model, self.session, self.session.lang
        self.setEnabled(model is not None)
        self.undo_button.setEnabled(model is not None and model.can_undo)
        self.redo_button.setEnabled(model is not None and model.can_redo)
        self.save_button.setEnabled(model is not None)
        if model is None or s.content is not model.lesson:
            return
        data = model.data
        frames = data["frames"]
        labels = [f"{i + 1}. {fd['show']}{'' if fd.get('step') is None else ' ' + str(fd['step'])} — "
                  f"{frame_title(frame, *_run_and_vocab(s, i), ui)}" for i, (fd, frame) in enumerate(zip(frames, s.frames))]
        if [self.frame_list.item(i).text() for i in range(self.frame_list.count())] != labels:
            self.frame_list.clear()
            self.frame_list.addItems(labels)
        self.frame_list.setCurrentRow(s.cursor)
        at = s.cursor
        fd = frames[at]
        self.frame_buttons["up"].setEnabled(at > 0)
        self.frame_buttons["down"].setEnabled(at < len(frames) - 1)
        self.frame_buttons["delete"].setEnabled(len(frames) > 1)
        for field, box in self.texts.items():
            holder = fd.get("explain", {}) if field.startswith("explain.") else fd
            texts = holder.get(field.partition(".")[2] if field.startswith("explain.") else field) or {}
            _fill(box, texts.get(self.lang, ""), self._placeholder(texts, field, fd["show"]))
        shown = fd.get("panels", DEFAULT_SLIDE_PANELS[fd["show"]])
        for pid, box in self.panel_boxes.items():
            box.setChecked(pid in shown)
        lesson_texts = {k: data.get(k) or {} for k in ("title", "summary")}
        _fill(self.lesson_title, lesson_texts["title"].get(self.lang, ""), self._placeholder(lesson_texts["title"]))
        _fill(self.summary, lesson_texts["summary"].get(self.lang, ""), self._placeholder(lesson_texts["summary"]))
        checks = data.get("checks", [])
        names = [_in(c.get("question", {}), self.lang) for c in checks]
        row = self.check_list.currentRow()
        if [self.check_list.item(i).text() for i in range(self.check_list.count())] != names:
            self.check_list.clear()
            self.check_list.addItems(names)
        self.check_list.setCurrentRow(min(max(row, 0), len(checks) - 1) if checks else -1)
        self._show_check()

    def _show_check(self) -> None:
        if self.model is None:
            return
        checks = self.model.data.get("checks", [])
        row = self.check_list.currentRow()
        for w in (self.when, self.question, self.answer, self.delete_check_button):
            w.setEnabled(0 <= row < len(checks))
        if not 0 <= row < len(checks):
            return
        check, loading = checks[row], self._loading
        self._loading = True
        self.when.setCurrentIndex(("before", "after").index(check.get("when", "after")))
        for key, box in (("question", self.question), ("answer", self.answer)):
            texts = check.get(key) or {}
            _fill(box, texts.get(self.lang, ""), self._placeholder(texts))
        self._loading = loading

    def _placeholder(self, texts: dict, field: str | None = None, kind: str | None = None) -> str:
        """A text missing in the language edited: the other language's, marked "not
        translated"; none at all: the app's own narration the window shows instead."""
        ui = self.session.lang
        other = next((texts[la] for la in LANGS if la != self.lang and la in texts), None)
        if other is not None:
            return tr("editor.not_translated", ui, text=other)
        if field == "ask":
            return tr("editor.no_ask", ui)
        if field == "title":
            return tr("editor.app_text", ui, text=MESSAGES[f"frame.{kind}"][self.lang])
        if field is not None and field.startswith("explain."):
            return tr("editor.app_text", ui, text=MESSAGES[f"explain.{kind}.{field.partition('.')[2]}"][self.lang])
        return ""

    def retranslate(self) -> None:
        lang = self.session.lang
        self.language_label.setText(tr("editor.language", lang))
        for button, key in ((self.undo_button, "undo"), (self.redo_button, "redo"), (self.save_button, "save"),
                            (self.add_check_button, "add_check"), (self.delete_check_button, "delete_check")):
            button.setText(tr(f"editor.{key}", lang))
        for name, button in self.frame_buttons.items():
            button.setText(tr(f"editor.{name}", lang))
        self.tabs.setTabText(0, tr("editor.frames", lang))
        self.tabs.setTabText(1, tr("editor.lesson", lang))
        self.preview_label.setText(tr("editor.preview", lang))
        self._preview_timer.start()
        for field, label in self.text_labels.items():
            label.setText(tr(f"section.{field.partition('.')[2]}", lang) if field.startswith("explain.")
                          else tr(f"editor.{'frame_title' if field == 'title' else field}", lang))
        self.panels_label.setText(tr("editor.panels", lang))
        for pid, box in self.panel_boxes.items():
            box.setText(panel_title(pid, lang))
        for key, label in self.lesson_labels.items():
            label.setText(tr(f"editor.{key}", lang))
        self.when.setItemText(0, tr("editor.when.before", lang))
        self.when.setItemText(1, tr("editor.when.after", lang))
        self.refresh()


def _run_and_vocab(session, i: int):
    run, model = session.run_at(i)
    return run, model.vocab


def _in(texts: dict, lang: str) -> str:
    return texts.get(lang) or next(iter(texts.values()), "")


def _fill(box, text: str, placeholder: str) -> None:
    """Show `text` in a field without moving the teacher's cursor when it already shows it."""
    box.setPlaceholderText(placeholder)
    if isinstance(box, QLineEdit):
        if box.text() != text:
            box.setText(text)
    elif box.toPlainText() != text:
        box.setPlainText(text)


def _scrolled(page: QWidget) -> QScrollArea:
    scroller = QScrollArea()
    scroller.setWidgetResizable(True)
    scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroller.setWidget(page)
    return scroller


class LessonEditorDock:
    """The window's editor dock, made the first time it is opened (a window that never
    edits, and every export's window, has none)."""

    def __init__(self, window):
        self.window = window
        self.dock: QDockWidget | None = None
        self.editor: LessonEditor | None = None

    def open(self) -> LessonEditor:
        """Open the editor on what the window plays, its keys in the frame list."""
        self._made()
        self.editor.start()
        return self._shown()

    def restore(self, unsaved) -> LessonEditor:
        """Open the editor on edits a recovery file kept (LessonEditor.restore)."""
        self._made()
        self.editor.restore(unsaved)
        return self._shown()

    def _made(self) -> None:
        w = self.window
        if self.dock is None:
            self.editor = LessonEditor(w)
            self.dock = QDockWidget(w)
            self.dock.setObjectName("dock-lesson-editor")
            self.dock.setWidget(self.editor)
            w.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.dock)
            w.resizeDocks([self.dock], [520], Qt.Orientation.Horizontal)
            w.session.subscribe(SessionEvent.LANG_CHANGED, lambda _s: self._retitle())
            self.editor.edits_changed.connect(lambda: w.edits_recovery.follow(self.editor))
            self._retitle()

    def _shown(self) -> LessonEditor:
        self.dock.show()
        self.dock.raise_()
        self.editor.frame_list.setFocus(Qt.FocusReason.ShortcutFocusReason)
        return self.editor

    def _retitle(self) -> None:
        self.dock.setWindowTitle(tr("editor.title", self.window.session.lang))

    @property
    def active(self) -> bool:
        """Ctrl+S saves the edited lesson: the editor is open, or holds edits not saved."""
        return self.editor is not None and self.editor.model is not None and (
            self.dock.isVisible() or self.editor.changed)

    @property
    def changed(self) -> bool:
        return self.editor is not None and self.editor.changed

    def has_focus(self) -> bool:
        return self.editor is not None and self.editor.has_focus()

    def undo(self) -> None:
        self.editor.undo()


def ask_unsaved(window) -> str:
    """Closing with unsaved edits: "save", "discard" or "cancel"."""
    lang = window.session.lang
    editor = window.lesson_editor.editor
    box = QMessageBox(QMessageBox.Icon.Question, tr("editor.title", lang),
                      tr("editor.unsaved", lang, title=editor.model.lesson.title_in(lang)), parent=window)
    buttons = QMessageBox.StandardButton
    box.setStandardButtons(buttons.Save | buttons.Discard | buttons.Cancel)
    box.setDefaultButton(buttons.Save)
    answer = box.exec()
    return {buttons.Save: "save", buttons.Discard: "discard"}.get(buttons(answer), "cancel")
