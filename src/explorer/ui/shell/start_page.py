"""Start page: every shipped lesson with its summary and an Open button, shown at the
first start and from Lessons ▸ All lessons…. A non-blocking dialog: the class can keep
looking at the window behind it."""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QFrame, QHBoxLayout, QLabel, QPushButton,
                               QScrollArea, QVBoxLayout, QWidget)

from ...core.errors import ExplorerError
from ...i18n import add_messages, tr
from ...lessons import Lesson, all_lessons, builds_on_names, lessons_dir
from ...lessons.schema import parse_lesson
from ...catalog.registry import MODELS
from ...session import Session
from ...units import byte_size

add_messages({
    "start.title": {"en": "Token Explorer: lessons", "zh": "Token 探索器：课程"},
    "start.intro": {"en": "Each lesson is one of the course's worked examples, played step by step. "
                          "Pick one to open it; you can switch at any time from the Lessons menu.",
                    "zh": "每一课都是课程中的一个例题，一步一步地演示。选一课打开；之后随时可以从“课程”菜单切换。"},
    "start.open": {"en": "Open", "zh": "打开"},
    "start.current": {"en": "Open (current)", "zh": "打开（当前）"},
    "start.frames": {"en": "{n} frames · {checks} self-check questions", "zh": "{n}步 · {checks}道自测题"},
    "start.close": {"en": "Close", "zh": "关闭"},
    "start.runs_on": {"en": "Runs on the real model {label}.", "zh": "使用真实模型{label}。"},
    "start.missing": {"en": "{label} is not installed yet. “Install and open” downloads it once ({size}); "
                            "or run in a terminal:\n{command}",
                      "zh": "{label}尚未安装。“安装并打开”会下载一次（{size}）；也可以在终端里执行：\n{command}"},
    "start.install": {"en": "Install and open…", "zh": "安装并打开…"},
    "start.absent": {"en": "Its model is not here: {why}.", "zh": "本机没有这节课的模型：{why}。"},
})


def shipped_lessons() -> tuple[tuple[Lesson, ...], list[str]]:
    """(the lessons that load, a message for each lesson file that does not). A broken
    file leaves the others usable."""
    try:
        return all_lessons(), []
    except ExplorerError:
        pass
    lessons, errors = [], []
    for path in sorted(lessons_dir().glob("*.toml")):
        try:
            lessons.append(parse_lesson(path))
        except ExplorerError as exc:
            errors.append(str(exc))
    return tuple(sorted(lessons, key=lambda l: (l.order, l.id))), errors


class StartPage(QDialog):
    def __init__(self, parent: QWidget, session: Session, open_lesson: Callable[[Lesson], bool]):
        """open_lesson(lesson): opens it (installing its models first), False if nothing started."""
        super().__init__(parent)
        self._open = open_lesson
        lang = session.lang
        self.setWindowTitle(tr("start.title", lang))
        self.setObjectName("start-page")
        self.open_buttons: dict[str, QPushButton] = {}
        lessons, errors = shipped_lessons()
        intro = QLabel(tr("start.intro", lang), wordWrap=True)
        rows = QWidget()
        column = QVBoxLayout(rows)
        current = session.content.id if session.content is not None else None
        for lesson in lessons:
            column.addWidget(self._row(lesson, lang, lesson.id == current))
        for message in errors:
            column.addWidget(QLabel(f"⚠ {message}", wordWrap=True))
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(rows)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.button(QDialogButtonBox.StandardButton.Close).setText(tr("start.close", lang))
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        # 760 x 620 at the usual 12-point type, larger with the type (presentation mode), within the screen
        grow = self.font().pointSizeF() / 12.0
        room = parent.screen().availableGeometry()
        self.resize(min(int(760 * grow), int(0.9 * room.width())), min(int(620 * grow), int(0.9 * room.height())))

    def _row(self, lesson: Lesson, lang: str, current: bool) -> QFrame:
        frame = QFrame()
        frame.setFrameShape(QFrame.Shape.StyledPanel)
        title = QLabel(lesson.title_in(lang), wordWrap=True)
        font = title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        title.setFont(font)
        summary = QLabel(lesson.summary[lang], wordWrap=True)
        facts = QLabel(tr("start.frames", lang, n=len(lesson.plans), checks=len(lesson.checks)))
        names = builds_on_names(lesson, lang)
        prerequisites = [QLabel(tr("lesson.builds_on", lang, items=" · ".join(names)), wordWrap=True)] if names else []
        if prerequisites:
            prerequisites[0].setObjectName(f"builds-on-{lesson.id}")
        button = QPushButton(tr("start.current" if current else "start.open", lang))
        button.clicked.connect(lambda _c=False, l=lesson: self.open_lesson(l))
        self.open_buttons[lesson.id] = button
        text = QVBoxLayout()
        for w in (title, summary, *prerequisites, facts, *self._model_notes(lesson, lang, button)):
            text.addWidget(w)
        row = QHBoxLayout(frame)
        row.addLayout(text, 1)
        row.addWidget(button, 0, Qt.AlignmentFlag.AlignVCenter)
        return frame

    def _model_notes(self, lesson: Lesson, lang: str, button: QPushButton) -> list[QLabel]:
        """Which real model the lesson runs on; for one not installed, how to install it (the
        Open button becomes "Install and open…")."""
        notes = []
        missing = lesson.missing_models()
        for name in lesson.installed_models:
            s = MODELS[name]
            if name in missing:
                note = QLabel(tr("start.missing", lang, label=s.label, size=byte_size(s.size),
                                 command=s.install_command), wordWrap=True)
                note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)   # to copy the command
            else:
                note = QLabel(tr("start.runs_on", lang, label=s.label), wordWrap=True)
            notes.append(note)
        for key in lesson.real_models:
            if key in lesson.installed_models:
                continue
            why = lesson.absent_models().get(key)
            note = QLabel(tr("start.absent", lang, why=why) if why else tr("start.runs_on", lang, label=key),
                          wordWrap=True)
            note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            notes.append(note)
        if missing:
            button.setText(tr("start.install", lang))
        return notes

    def open_lesson(self, lesson: Lesson) -> None:
        """Open the lesson; one whose models are missing installs them first (once the
        teacher agrees), then opens."""
        if self._open(lesson):
            self.accept()
