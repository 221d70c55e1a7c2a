"""Lesson panel: what the lesson is, what it builds on, which panels matter on this frame,
and the self-check questions with their answers."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget

from ...i18n import add_messages, tr
from ...lessons import Check, Lesson, builds_on_names
from ...session import Session
from ...session.panels import PANELS, panel_title
from .panel import Panel

add_messages({
    "lesson.none": {"en": "No lesson is open: the explorer plays a free run of the current prompt.\n"
                          "Choose a lesson from the Lessons menu (or Lessons ▸ All lessons…).",
                    "zh": "当前没有打开课程：探索器正在自由运行当前的提示。\n"
                          "请从“课程”菜单中选择一课（或“课程 ▸ 全部课程…”）。"},
    "lesson.builds_on": {"en": "Builds on: {items}", "zh": "前置知识：{items}"},
    "lesson.matters": {"en": "● On this frame, look at: {panels}", "zh": "● 这一步请看：{panels}"},
    "lesson.matters_none": {"en": "This frame names no panel in particular.", "zh": "这一步没有指定特别要看的面板。"},
    "lesson.before": {"en": "Before you start", "zh": "课前自测"},
    "lesson.after": {"en": "After class", "zh": "课后自测"},
    "lesson.show_answer": {"en": "Show answer", "zh": "显示答案"},
    "lesson.hide_answer": {"en": "Hide answer", "zh": "隐藏答案"},
    "lesson.answer": {"en": "Answer: {text}", "zh": "答案：{text}"},
    "lesson.no_checks": {"en": "This lesson has no self-check questions.", "zh": "这一课没有自测题。"},
    # a lesson not written (or not all translated) in the window's language: its texts show in another
    "lesson.only_in": {"en": "Written in {language} only: its texts are shown in {language}.",
                       "zh": "本课只有{language}文本，以{language}显示。"},
    "lesson.some_in": {"en": "{n} of its texts are in {language} only.", "zh": "本课有{n}段文本只有{language}。"},
    "lesson.model_differs": {"en": "Not the model it was saved with: {name} is now another file ({path}, "
                                   "SHA-256 {digest}…; saved with {expected}…). The lesson plays on this file, "
                                   "so its numbers and picks may differ from the saved run.",
                             "zh": "不是保存时的模型：{name} 现在是另一个文件（{path}，SHA-256 {digest}…；"
                                   "保存时为 {expected}…）。课程在这个文件上播放，数字和选中的词元可能与保存时不同。"},
    "lesson.language.en": {"en": "English", "zh": "英文"},
    "lesson.language.zh": {"en": "Chinese", "zh": "中文"},
    "lesson.only_mark": {"en": "(English only)", "zh": "（仅有中文）"},   # in the language the texts have
})


def panel_titles(lang: str) -> dict[str, str]:
    """Panel id -> its dock title in `lang`."""
    return {pid: panel_title(pid, lang) for pid in PANELS}


class CheckView(QFrame):
    """One self-check: the question, a Show/Hide answer button, the answer (hidden at first)."""

    def __init__(self, check: Check, parent=None):
        super().__init__(parent)
        self.check = check
        self.lang = "en"
        self.question = QLabel(wordWrap=True)
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.button = QPushButton()
        self.button.setCheckable(True)
        self.button.toggled.connect(self._toggled)
        self.answer = QLabel(wordWrap=True)
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.answer.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 8)
        layout.addWidget(self.question)
        layout.addWidget(self.button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.answer)

    @property
    def revealed(self) -> bool:
        return self.button.isChecked()

    def set_lang(self, lang: str, number: int) -> None:
        self.lang = lang
        self.question.setText(f"{number}. {self.check.question[lang]}")
        self.answer.setText(tr("lesson.answer", lang, text=self.check.answer[lang]))
        self.button.setText(tr("lesson.hide_answer" if self.revealed else "lesson.show_answer", lang))

    def _toggled(self, shown: bool) -> None:
        self.answer.setVisible(shown)
        self.button.setText(tr("lesson.hide_answer" if shown else "lesson.show_answer", self.lang))


class LessonPanel(Panel):
    panel_id = "lesson"
    title_key = "lesson.title"

    def __init__(self, session: Session, parent=None):
        super().__init__(session, parent)
        self._built_for: Lesson | None = None
        self.heading = self.emphasised(QLabel(wordWrap=True), 1.2)
        self.summary = QLabel(wordWrap=True)
        self.fallback_note = QLabel(wordWrap=True)    # in italics: a note about the texts, not a text
        italic = self.fallback_note.font()
        italic.setItalic(True)
        self.fallback_note.setFont(italic)
        self.model_note = QLabel(wordWrap=True)       # in italics too: the model is not the one saved
        self.model_note.setFont(italic)
        self.builds_on = QLabel(wordWrap=True)
        self.matters = QLabel(wordWrap=True)
        self.none_note = QLabel(wordWrap=True)
        self.headers = {"before": QLabel(), "after": QLabel()}
        for label in self.headers.values():
            bold = label.font()
            bold.setBold(True)
            label.setFont(bold)
        self.no_checks = QLabel(wordWrap=True)
        self.check_views: list[CheckView] = []
        self._check_box = QVBoxLayout()
        self._check_box.setContentsMargins(0, 0, 0, 0)
        content = QWidget()
        column = QVBoxLayout(content)
        for w in (self.none_note, self.heading, self.model_note, self.fallback_note, self.summary, self.builds_on,
                  self.matters):
            column.addWidget(w)
        column.addLayout(self._check_box)
        column.addWidget(self.no_checks)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(scroll)
        self.refresh()

    @property
    def lesson(self) -> Lesson | None:
        """The lesson the session plays (also in a window made for an export)."""
        content = self.session.content
        return content if isinstance(content, Lesson) else None

    def checks(self, when: str) -> list[CheckView]:
        return [v for v in self.check_views if v.check.when == when]

    def _rebuild(self, lesson: Lesson | None) -> None:
        """New check widgets for another lesson (answers start hidden)."""
        self._built_for = lesson
        while self._check_box.count():
            item = self._check_box.takeAt(0)
            if item.widget() is not None and item.widget() not in self.headers.values():
                item.widget().hide()            # gone now: the deferred delete comes later
                item.widget().deleteLater()
        self.check_views = []
        for label in self.headers.values():
            label.hide()
        if lesson is None:
            return
        for when in ("before", "after"):
            views = [CheckView(c) for c in lesson.checks if c.when == when]
            if views:
                self._check_box.addWidget(self.headers[when])
                self.headers[when].show()
            for v in views:
                self._check_box.addWidget(v)
            self.check_views += views

    def refresh(self) -> None:
        lang, lesson = self.session.lang, self.lesson
        if lesson is not self._built_for:
            self._rebuild(lesson)
        self.none_note.setVisible(lesson is None)
        self.fallback_note.setVisible(False)
        self.model_note.setVisible(False)
        for w in (self.heading, self.summary, self.builds_on, self.matters):
            w.setVisible(lesson is not None)
        self.no_checks.setVisible(lesson is not None and not lesson.checks)
        if lesson is None:
            self.none_note.setText(self.tr("lesson.none"))
            return
        self.heading.setText(lesson.title_in(lang))
        self.summary.setText(lesson.summary[lang])
        self._note_fallbacks(lesson, lang)
        self._note_model(lesson)
        names = builds_on_names(lesson, lang)
        self.builds_on.setVisible(bool(names))
        self.builds_on.setText(self.tr("lesson.builds_on", items=" · ".join(names)))
        titles = panel_titles(lang)
        panels = [titles.get(p, p) for p in self.session.frame.panels]
        self.matters.setText(self.tr("lesson.matters", panels=self.tr("list.names").join(panels)) if panels
                             else self.tr("lesson.matters_none"))
        for when, label in self.headers.items():
            label.setText(self.tr(f"lesson.{when}"))
        for when in ("before", "after"):
            for n, view in enumerate(self.checks(when), 1):
                view.set_lang(lang, n)
        self.no_checks.setText(self.tr("lesson.no_checks"))

    def _note_fallbacks(self, lesson: Lesson, lang: str) -> None:
        """Under the title, a line in italics when texts of the lesson are not written in `lang`
        (shown in the language they have), in the window's language and marked in theirs."""
        shown = lesson.fallbacks(lang)
        self.fallback_note.setVisible(bool(shown))
        if not shown:
            return
        total = len(lesson.texts())
        lines = []
        for other, n in shown.items():
            language = self.tr(f"lesson.language.{other}")
            said = (self.tr("lesson.only_in", language=language) if n == total
                    else self.tr("lesson.some_in", n=n, language=language))
            lines.append(f"{said} {tr('lesson.only_mark', other)}")
        self.fallback_note.setText("\n".join(lines))

    def _note_model(self, lesson: Lesson) -> None:
        """Under the title, when a model file the lesson was saved with has been replaced: the
        lesson plays on the file that is there, and its numbers are that file's."""
        lines = [self.tr("lesson.model_differs", name=d.name, path=str(d.path), digest=d.digest[:12],
                         expected=d.expected[:12]) for d in lesson.model_differences()]
        self.model_note.setVisible(bool(lines))
        self.model_note.setText("\n".join(lines))

    def text(self) -> str:
        """Everything the panel shows as plain text, top to bottom (for tests)."""
        parts = [w.text() for w in (self.none_note, self.heading, self.model_note, self.fallback_note, self.summary,
                                    self.builds_on, self.matters)
                 if not w.isHidden()]
        for when in ("before", "after"):
            if not self.headers[when].isHidden():
                parts.append(self.headers[when].text())
            for v in self.checks(when):
                parts += [v.question.text(), v.button.text()] + ([v.answer.text()] if v.revealed else [])
        return "\n".join(parts)
