"""Switching lessons: the Lessons menu, the start page, opening a lesson file, and a lesson
on a real model prepared off the UI thread."""

from __future__ import annotations

from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QFileDialog, QMenu

from ...core.errors import ExplorerError
from ...i18n import add_messages, tr
from ...lessons import Lesson, load_lesson
from ...session import Session
from ...session.session import PreparedPlay
from .host import Host
from .model_switcher import ModelSwitcher
from .start_page import StartPage, shipped_lessons
from .work_status import WorkStatus
from .worker import Jobs

add_messages({
    "lesson.filter": {"en": "Lesson files (*.toml)", "zh": "课程文件 (*.toml)"},
    "lesson.opened": {"en": "Opened the lesson “{title}”", "zh": "已打开课程“{title}”"},
    "lesson.opened_differs": {"en": "Opened the lesson “{title}” on another model file than it was saved with "
                                    "(the lesson panel says which)",
                              "zh": "已打开课程“{title}”，但模型文件与保存时不同（课程面板中有说明）"},
    "lesson.opening": {"en": "Opening “{title}”…", "zh": "正在打开“{title}”…"},
})


class LessonSwitcher:
    """Plays a lesson in `session` (every panel follows, the window's title too); one
    checkable item per shipped lesson in `menu`. A real model's lesson is prepared with
    `jobs`, shown in `work`, while `models` is busy (one load at a time) and installs a
    missing model first. The `host` (the window) shows status and problems and runs changes
    guarded."""

    def __init__(self, host: Host, session: Session, jobs: Jobs, work: WorkStatus,
                 models: ModelSwitcher, menu: QMenu):
        self.host, self.session, self.jobs, self.work, self.models = host, session, jobs, work, models
        self.menu = menu
        self.ask_path = self._ask_path                # a dialog is an attribute: tests replace it
        self.start_page: StartPage | None = None
        self._request: Lesson | None = None           # the lesson asked for last (one may be in preparation)
        self._actions: dict[str, QAction] | None = None     # built when the menu first opens
        self._listed: dict[str, Lesson] = {}
        menu.aboutToShow.connect(lambda: self.actions)

    @property
    def actions(self) -> dict[str, QAction]:
        """One checkable item per shipped lesson in the Lessons menu (the one playing is
        checked). The shipped lessons are read when the menu first opens (or this is first
        asked for), not while the window starts."""
        if self._actions is None:
            self._build_actions()
        return self._actions

    def _build_actions(self) -> None:
        menu = self.menu
        first = menu.actions()[0] if menu.actions() else None
        group = QActionGroup(self.host.window())
        group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)
        lessons, _errors = shipped_lessons()         # the start page lists the broken ones
        self._actions = {}
        for lesson in lessons:
            action = QAction(lesson.title_in(self.session.lang), self.host.window())
            action.setCheckable(True)
            action.triggered.connect(lambda _c=False, l=lesson: self.switch_lesson(l))
            group.addAction(action)
            menu.insertAction(first, action)
            self._actions[lesson.id] = action
        menu.insertSeparator(first)
        self._listed = {lesson.id: lesson for lesson in lessons}
        self.check_action()

    def check_action(self) -> None:
        """The Lessons menu checks the lesson playing."""
        lesson = self.session.content
        current = lesson.id if lesson is not None and self.session.in_lesson else None
        for lid, action in (self._actions or {}).items():
            action.setChecked(lid == current and self._listed[lid].path == lesson.path)

    def retranslate(self) -> None:
        self.check_action()
        for lid, action in (self._actions or {}).items():
            action.setText(self._listed[lid].title_in(self.session.lang))

    def _ask_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self.host.window(), tr("action.open_lesson", self.session.lang), "",
                                              tr("lesson.filter", self.session.lang))
        return path

    def open_lesson_file(self, path: str | None = None) -> None:
        """Open a lesson file (`path`: one a later start or the file manager handed over, else
        the one the teacher picks); a bad one is reported (file and key) and the current
        lesson stays."""
        path = path or self.ask_path()
        if not path:
            return
        try:
            lesson = load_lesson(str(path))
        except (ExplorerError, OSError) as exc:
            self.host.report_error(str(exc))
            return
        self.switch_lesson(lesson)

    def switch_lesson(self, lesson: Lesson) -> bool:
        """Play `lesson`; False if it failed. A lesson on a real model is prepared off the UI
        thread (its model loaded, its scenarios run), as the model picker loads a model, and
        opens when it is ready; the latest lesson asked for wins."""
        self._request = lesson
        if not lesson.real_models or lesson.missing_models() or lesson.absent_models():   # at once (a missing model: by name)
            if not self.host.guarded(lesson.play_in, self.session):
                self.check_action()
                return False
            self._opened(lesson)
            return True
        lang = self.session.lang
        self.models.loading = lesson.real_models[0]
        self.work.show(tr("lesson.opening", lang, title=lesson.title_in(lang)), cancel=False)
        self.models.sync()
        session = self.session
        self.jobs.start(lambda _report: lesson.prepare_play(session),
                        lambda prepared: self._prepared(lesson, prepared), self.models.work_failed)
        return True

    def install_and_open(self, lesson: Lesson) -> bool:
        """Open `lesson`, installing first each real model it runs on that is missing (one
        after the other, each once the teacher agrees); False if nothing started."""
        missing = lesson.missing_models()
        if not missing:
            return self.switch_lesson(lesson)
        return self.models.install_model(missing[0], then=lambda: self.install_and_open(lesson))

    def _prepared(self, lesson: Lesson, prepared: PreparedPlay) -> None:
        self.models.loading = None
        self.work.hide()
        if self._request is lesson:               # not overtaken by another choice
            self.session.install_play(prepared, content=lesson)
            self._opened(lesson)
        self.models.sync()

    def _opened(self, lesson: Lesson) -> None:
        key = "lesson.opened_differs" if lesson.model_differences() else "lesson.opened"
        self.host.show_status(tr(key, self.session.lang, title=lesson.title_in(self.session.lang)), 8000)

    def show_start_page(self) -> StartPage:
        """The list of lessons, non-blocking (open(), not exec())."""
        if self.start_page is not None:
            self.start_page.close()
            self.start_page.deleteLater()
        page = self.start_page = StartPage(self.host.window(), self.session, self.install_and_open)
        page.open()
        return page
