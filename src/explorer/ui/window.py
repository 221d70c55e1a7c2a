"""The explorer window, a shell around its rooms: the panels in docks (desk_layout.py), the
prompt bar (prompt_bar.py), switching models (model_switcher.py) and lessons
(lesson_switcher.py), background work in the status bar (work_status.py); menus built from
one action table; language, theme and zoom; errors always shown, never swallowed."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox, QToolBar, QWidget

from ..core.errors import ExplorerError
from ..core.decode.sampling import SamplingConfig
from ..i18n import add_messages, tr
from ..lessons import Lesson
from ..session import Session, SessionEvent
from ..session.changes import changes_text
from ..session.narration import frame_title
from ..session.text_so_far import own_run_caption
from .shell import edits_recovery, export_actions, help, lesson_editor, lesson_saving
from .shell.blank import BlankScreen
from .shell.keys import KeyRouter, key_combinations
from .app_icon import app_icon
from .panels.attention import AttentionPanel
from .panels.beam import BeamPanel
from .panels.controls import SamplingControls
from .shell.desk_layout import DeskLayout, is_compact_width
from .panels.distribution import DistributionPanel
from .panels.explanation import ExplanationPanel
from .panels.glossary import GlossaryPanel
from .panels.kv import KVGridPanel
from .panels.lens import LensPanel
from .panels.transcript import TranscriptPanel
from .panels.versus import VersusPanel
from .panels.lesson import LessonPanel
from .shell.lesson_switcher import LessonSwitcher
from .shell.model_switcher import ModelSwitcher
from .panels.player import PlayerPanel
from .shell.prompt_bar import PromptBar
from .settings import Settings
from .theme import THEMES, apply_widget_theme
from .panels.timeline import TimelinePanel
from .shell.work_status import WorkStatus
from .shell.worker import Jobs, SessionRunner, error_message, is_big

PANELS = (PlayerPanel, TimelinePanel, KVGridPanel, AttentionPanel, DistributionPanel,
          SamplingControls, ExplanationPanel, LessonPanel, GlossaryPanel, BeamPanel, LensPanel,
          TranscriptPanel, VersusPanel)
# name -> (i18n key, shortcut or shortcuts, menu); one table for menus, shortcuts and tests
ACTIONS = {
    "open_params": ("action.open_params", QKeySequence.StandardKey.Open, "file"),
    "save_lesson": ("action.save_lesson", QKeySequence.StandardKey.Save, "file"),
    "export_frame": ("action.export_frame", "Ctrl+E", "file"),
    "export_lesson": ("action.export_lesson", "Ctrl+Shift+E", "file"),
    "copy_frame": ("action.copy_frame", "Ctrl+Shift+C", "file"),
    "quit": ("action.quit", QKeySequence.StandardKey.Quit, "file"),
    "open_gguf": ("action.open_gguf", None, "model"),
    # presentation clickers send Page Down / Page Up (some Down / Up)
    "first": ("action.first", "Home", "go"),
    "prev": ("action.prev", ("Left", "PgUp", "Up"), "go"),
    "play": ("action.play", "Space", "go"),
    "next": ("action.next", ("Right", "PgDown", "Down"), "go"),
    "last": ("action.last", "End", "go"),
    "reveal": ("action.reveal", "V", "go"),      # a question frame's answer (Next reveals it too)
    "blank": ("action.blank", ("B", "."), "go"),
    "undo_force": ("action.undo_force", QKeySequence.StandardKey.Undo, "go"),
    "lesson_settings": ("action.lesson_settings", "R", "go"),
    "all_lessons": ("action.all_lessons", "Ctrl+L", "lessons"),
    "open_lesson": ("action.open_lesson", "Ctrl+Shift+O", "lessons"),
    "edit_lesson": ("action.edit_lesson", "E", "lessons"),      # Ctrl+E exports the frame
    "lang_en": ("action.lang_en", None, "view"),
    "lang_zh": ("action.lang_zh", None, "view"),
    "high_contrast": ("action.high_contrast", None, "view"),
    "presentation": ("action.presentation", "F11", "view"),
    "show_chrome": ("action.show_chrome", "F10", "view"),     # F10: the menu bar's key on most desktops
    # the platform's Ctrl++ needs Shift on most keyboards: Ctrl+= is the key on the "+" key
    "zoom_in": ("action.zoom_in", (QKeySequence.StandardKey.ZoomIn, "Ctrl+="), "view"),
    "zoom_out": ("action.zoom_out", QKeySequence.StandardKey.ZoomOut, "view"),
    "reset_layout": ("action.reset_layout", None, "view"),
    "shortcuts": ("action.shortcuts", "F1", "help"),
    "about": ("action.about", None, "help"),
}
# the player's keys: from any widget but a text field they go to these actions (shell/keys.py)
PLAYER_ACTIONS = ("first", "prev", "play", "next", "last", "reveal", "blank", "presentation", "undo_force",
                  "lesson_settings")

add_messages({
    "window.title": {"en": "Token Explorer", "zh": "Token 探索器"},
    "window.title.frame": {"en": "{lesson}{n} / {total}: {frame} — Token Explorer",
                           "zh": "{lesson}{n} / {total}：{frame} — Token 探索器"},
    "menu.file": {"en": "&File", "zh": "文件(&F)"},
    "menu.go": {"en": "&Go", "zh": "播放(&G)"},
    "menu.model": {"en": "&Model", "zh": "模型(&M)"},
    "action.open_gguf": {"en": "Open model file…", "zh": "打开模型文件…"},
    "menu.view": {"en": "&View", "zh": "视图(&V)"},
    "menu.lessons": {"en": "&Lessons", "zh": "课程(&L)"},
    "menu.help": {"en": "&Help", "zh": "帮助(&H)"},
    "action.shortcuts": {"en": "Keyboard shortcuts…", "zh": "键盘快捷键…"},
    "action.about": {"en": "About Token Explorer…", "zh": "关于 Token 探索器…"},
    "action.blank": {"en": "Blank the screen / bring it back", "zh": "黑屏 / 恢复"},
    "action.all_lessons": {"en": "All lessons…", "zh": "全部课程…"},
    "action.open_lesson": {"en": "Open lesson file…", "zh": "打开课程文件…"},
    "action.edit_lesson": {"en": "Edit lesson…", "zh": "编辑课程…"},
    "menu.panels": {"en": "Panel full screen", "zh": "面板全屏"},
    "action.open_params": {"en": "Open parameters…", "zh": "打开参数文件…"},
    "action.save_lesson": {"en": "Save as lesson…", "zh": "另存为课程…"},
    "action.quit": {"en": "Quit", "zh": "退出"},
    "action.export_frame": {"en": "Export frame…", "zh": "导出当前步骤…"},
    "action.export_lesson": {"en": "Export lesson…", "zh": "导出整课…"},
    "action.copy_frame": {"en": "Copy frame to clipboard", "zh": "复制当前步骤到剪贴板"},
    "action.first": {"en": "First frame", "zh": "第一步"},
    "action.prev": {"en": "Previous frame", "zh": "上一步"},
    "action.play": {"en": "Play / pause", "zh": "播放/暂停"},
    "action.next": {"en": "Next frame", "zh": "下一步"},
    "action.last": {"en": "Last frame", "zh": "最后一步"},
    "action.reveal": {"en": "Reveal the answer", "zh": "揭晓答案"},
    "action.undo_force": {"en": "Undo what-if choice", "zh": "撤销人为指定"},
    "action.lesson_settings": {"en": "Back to the lesson's settings", "zh": "恢复课程设置"},
    "action.lang_en": {"en": "English", "zh": "English"},
    "action.lang_zh": {"en": "中文", "zh": "中文"},
    "action.high_contrast": {"en": "High contrast", "zh": "高对比度"},
    "action.presentation": {"en": "Presentation mode", "zh": "演示模式"},
    "action.show_chrome": {"en": "Show or hide menus, prompt and player (presentation mode)",
                           "zh": "显示或隐藏菜单、提示栏和播放器（演示模式）"},
    "action.zoom_in": {"en": "Larger text", "zh": "放大文字"},
    "action.zoom_out": {"en": "Smaller text", "zh": "缩小文字"},
    "action.reset_layout": {"en": "Reset layout and settings", "zh": "恢复默认布局和设置"},
    "error.title": {"en": "Token Explorer: problem", "zh": "Token 探索器：出现问题"},
    "error.kept": {"en": "{message}\n\nNothing was changed; the explorer keeps what it had.",
                   "zh": "{message}\n\n没有做任何更改，探索器保留原来的状态。"},
    "error.more": {"en": "(the latest of {n} problems; every one is in the status bar as it happens)",
                   "zh": "（{n}个问题中的最新一个；每个问题出现时都显示在状态栏中）"},
})


class MainWindow(QMainWindow):
    def __init__(self, session: Session, settings: Settings, compact: bool = False):
        """compact: the desk layout for a narrow screen or slide (`is_compact_width`). The
        lesson playing is the session's (`session.content`)."""
        super().__init__()
        self.compact = compact
        self.session = session
        session.frames_apply_their_settings = True      # a teacher steps through it (see Session.go)
        self.settings = settings
        self.errors: list[str] = []              # the last 100 problems shown, newest last
        # dialogs are attributes: tests replace them
        self.ask_export_frame = lambda: export_actions.ask_frame_choice(self)
        self.ask_export_folder = lambda: export_actions.ask_lesson_choice(self)
        self.ask_lesson_file = lambda name: lesson_saving.ask_lesson_file(self, name)
        self.ask_replace_lesson = lambda path, changed: lesson_saving.ask_replace(self, path, changed)
        self.lesson_saving = lesson_saving.LessonSaving(self)
        self.ask_unsaved_edits = lambda: lesson_editor.ask_unsaved(self)     # "save" | "discard" | "cancel"
        self.lesson_editor = lesson_editor.LessonEditorDock(self)
        self.edits_recovery = edits_recovery.EditsRecovery(self, settings.folder)
        self.ask_restore_edits = lambda unsaved: edits_recovery.ask_restore(self, unsaved)  # "restore" | …
        self.jobs = Jobs(self)
        self.runner = SessionRunner(session, self.jobs, self)
        # the start page opens by itself once, on a window a person looks at; headless runs
        # (tests, exports) do not get it unless they ask
        self.start_page_at_first_start = QGuiApplication.platformName() != "offscreen"
        self.theme = THEMES["light"]
        self.setObjectName("explorer-main")
        self.setWindowIcon(app_icon())
        self.setDockNestingEnabled(True)
        self.setCentralWidget(QWidget())
        self.centralWidget().hide()
        self.panels = {cls.panel_id: cls(session) for cls in PANELS}
        self.desk_layout = DeskLayout(self, self.panels, session, settings, compact, self._apply_font_size,
                                      lambda: self.actions["show_chrome"].shortcuts())
        self.docks = self.desk_layout.docks       # panel id -> its dock
        self.panels["explanation"].term_clicked.connect(self.show_term)
        self.blank = BlankScreen(self)
        self._said_set_aside = ()              # what arriving on a frame set aside, said once
        self.actions = self._build_actions()
        self.keys = KeyRouter(self, key_combinations(k for name in PLAYER_ACTIONS
                                                     for k in self.actions[name].shortcuts()),
                              lambda: self.blank.blanked)
        self.desk_layout.presenting_changed.connect(self.actions["presentation"].setChecked)
        self.desk_layout.presenting_changed.connect(self.actions["show_chrome"].setEnabled)
        self.actions["show_chrome"].setEnabled(False)
        self._build_menus()
        self.work_status = WorkStatus(self.statusBar(), self.runner, session, self.cancel_work)
        self.runner.failed.connect(self.report_error)
        self._build_toolbar()
        self.lesson_switcher = LessonSwitcher(self, session, self.jobs, self.work_status, self.model_switcher,
                                              self.menus["lessons"])
        # a big model computes off the UI thread, and the teacher's changes to it are not
        # compared with a full recompute (seconds per step: a slider would lag)
        self.session.set_background(self.runner, is_big)
        self.panels["versus"].compute_big_b_with(self.jobs.start, is_big, self._report_failure)
        self.session.subscribe(SessionEvent.RUN_CHANGED, lambda _s: self.lesson_switcher.check_action())
        self.session.subscribe(SessionEvent.LANG_CHANGED, lambda _s: self.retranslate())
        self.session.subscribe(SessionEvent.RUN_CHANGED, lambda _s: self._sync_bar())
        self.session.subscribe(SessionEvent.RUN_CHANGED, lambda _s: self._say_set_aside())
        for event in (SessionEvent.RUN_CHANGED, SessionEvent.CURSOR_CHANGED):
            self.session.subscribe(event, lambda _s: self.desk_layout.mark_docks(self.theme))
            self.session.subscribe(event, lambda _s: self._show_title())
            self.session.subscribe(event, lambda _s: self.desk_layout.check_fit())
        self._restore()
        self._shown_once = False
        self.retranslate()

    @classmethod
    def for_slide(cls, session: Session, settings: Settings, width: int) -> MainWindow:
        """A window of its own for `--style window` slides, laid out for the slide's width
        (never the screen of the machine exporting)."""
        return cls(session, settings, compact=is_compact_width(width))

    @property
    def lesson(self) -> Lesson | None:
        """The lesson playing, None in free exploration: the session's, which a lesson installs."""
        return self.session.content

    # ------------------------------------------------------------------ building
    def _build_actions(self) -> dict[str, QAction]:
        s = self.session
        handlers = {
            "open_params": lambda: self.model_switcher.open_params(), "quit": self.close,
            # while the lesson editor is open (or holds edits), Ctrl+S saves the edited lesson
            "save_lesson": lambda: self.guarded(self.lesson_editor.editor.save if self.lesson_editor.active
                                                else self.lesson_saving.save),
            "edit_lesson": lambda: self.guarded(self.lesson_editor.open),
            "export_frame": lambda: self.guarded(export_actions.export_frame, self),
            "export_lesson": lambda: self.guarded(export_actions.export_lesson, self),
            "copy_frame": lambda: self.guarded(export_actions.copy_frame, self),
            "first": s.first, "prev": s.prev, "next": s.next, "last": s.last, "reveal": s.reveal,
            "play": self.panels["player"].toggle_play,
            # Ctrl+Z in the lesson editor takes back its last edit, elsewhere the last forced token
            "undo_force": lambda: self.guarded(self.lesson_editor.undo if self.lesson_editor.has_focus() else s.undo),
            "lesson_settings": lambda: self.guarded(s.restore_lesson_settings),
            "lang_en": lambda: self.set_lang("en"), "lang_zh": lambda: self.set_lang("zh"),
            "high_contrast": lambda: self.set_theme(
                "high-contrast" if self.actions["high_contrast"].isChecked() else "light"),
            "presentation": lambda: self.desk_layout.toggle_presentation(),
            "show_chrome": lambda: self.desk_layout.chrome.toggle(),
            "zoom_in": lambda: self.zoom(+1), "zoom_out": lambda: self.zoom(-1),
            "reset_layout": self.reset_layout,
            "all_lessons": lambda: self.lesson_switcher.show_start_page(),
            "open_lesson": lambda: self.lesson_switcher.open_lesson_file(),
            "open_gguf": lambda: self.model_switcher.open_gguf(),
            "blank": lambda: self.blank.toggle(),
            "shortcuts": lambda: help.show_shortcuts(self, self.actions, self.session.lang),
            "about": lambda: help.show_about(self, self.session.lang),
        }
        actions = {}
        for name, (_key, shortcut, _menu) in ACTIONS.items():
            action = QAction(self)
            if shortcut is not None:
                action.setShortcuts([QKeySequence(key) for key in
                                     (shortcut if isinstance(shortcut, tuple) else (shortcut,))])
                action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            action.triggered.connect(lambda _checked=False, h=handlers[name]: h())
            self.addAction(action)
            actions[name] = action
        actions["high_contrast"].setCheckable(True)
        actions["presentation"].setCheckable(True)
        group = QActionGroup(self)
        for name in ("lang_en", "lang_zh"):
            actions[name].setCheckable(True)
            group.addAction(actions[name])
        return actions

    def _build_menus(self) -> None:
        self.menus = {m: self.menuBar().addMenu("") for m in ("file", "model", "go", "lessons", "view", "help")}
        for name, (_key, _shortcut, menu) in ACTIONS.items():
            self.menus[menu].addAction(self.actions[name])
        self.panel_menu = self.menus["view"].addMenu("")
        self.fullscreen_actions = {}
        for pid, dock in self.docks.items():
            action = self.panel_menu.addAction("")
            action.triggered.connect(lambda _c=False, p=pid: self.desk_layout.panel_full_screen(p))
            self.fullscreen_actions[pid] = action

    def _build_toolbar(self) -> None:
        bar = QToolBar(self)
        bar.setObjectName("prompt-bar")
        bar.setMovable(False)
        self.prompt_bar = PromptBar(self.session, bar, self.guarded, self.keys.give_back)
        self.keys.field_left.connect(self.prompt_bar.left)
        bar.addSeparator()
        self.model_switcher = ModelSwitcher(self, self.session, self.jobs, self.work_status, self.prompt_bar,
                                            bar, self.menus["model"], self.actions["open_gguf"])
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self._sync_bar()

    # ------------------------------------------------------------------ behaviour
    def guarded(self, fn, *args) -> bool:
        """Run a change; an ExplorerError (or a failed write) is shown and nothing changes."""
        try:
            fn(*args)
            return True
        except ExplorerError as exc:
            self.report_error(str(exc))
        except OSError as exc:
            self.report_error(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return False

    def show_status(self, text: str, ms: int = 0) -> None:
        self.statusBar().showMessage(text, ms)

    def _report_failure(self, exc: BaseException, tb: str) -> str:
        """Background work failed: show it (`report_error`); -> the message shown."""
        message = error_message(exc, tb)
        self.report_error(message)
        return message

    def report_error(self, message: str) -> None:
        """Show a problem without blocking the class: status bar + a non-modal box. One box
        at a time: a problem while it is open replaces its text (the box says how many it
        has shown), so a burst of failures (a script sending broken requests) costs nothing."""
        self.errors = (self.errors + [message])[-100:]
        lang = self.session.lang
        self.show_status(message, 15000)
        box = getattr(self, "_last_box", None)
        if box is not None and box.isVisible():
            box.shown += 1
            box.setText(tr("error.kept", lang, message=message) + "\n\n" + tr("error.more", lang, n=box.shown))
            return
        box = QMessageBox(QMessageBox.Icon.Warning, tr("error.title", lang),
                          tr("error.kept", lang, message=message), QMessageBox.StandardButton.Ok, self)
        box.shown = 1
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.finished.connect(lambda _r: setattr(self, "_last_box", None))
        box.show()
        self._last_box = box

    def _sync_bar(self) -> None:
        """The prompt bar shows the session's prompt and model."""
        self.prompt_bar.sync()
        self.model_switcher.sync_shown()

    # ------------------------------------------------------------------ background work
    def cancel_work(self) -> None:
        """Stop the running generation after its current step (it ends as "cancelled"), or the
        running install (nothing is written)."""
        self.runner.cancel()
        self.panels["versus"].cancel_b()
        self.model_switcher.cancel_install()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.desk_layout.check_fit()
        if not self._shown_once:
            self._shown_once = True
            self.keys.give_back()                # the first keys drive the player, not a text field
            QTimer.singleShot(0, lambda: self.guarded(self.edits_recovery.offer))   # edits a crash left
            self.windowHandle().screenChanged.connect(lambda _screen: self.desk_layout.check_fit())
            if (self.start_page_at_first_start and not self.settings["start_page_shown"]
                    and not self.testAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)):
                QTimer.singleShot(0, self._first_start)

    def _first_start(self) -> None:
        self.settings["start_page_shown"] = True
        self.lesson_switcher.show_start_page()

    def _say_set_aside(self) -> None:
        """Arriving on a frame with settings of its own set the teacher's aside: said once."""
        s = self.session
        if s.set_aside and s.set_aside is not self._said_set_aside:
            self._said_set_aside = s.set_aside
            self.show_status(tr("change.set_aside", s.lang, items=changes_text(s.set_aside, s.lang)), 10000)
        self.actions["lesson_settings"].setEnabled(s.in_lesson)

    def show_term(self, term_id: str) -> None:
        """A term clicked in the explanation: selected in the glossary, its dock brought forward."""
        if self.panels["glossary"].select_term(term_id):
            self.docks["glossary"].show()
            self.docks["glossary"].raise_()

    def _show_title(self) -> None:
        """The window's title (and task bar entry) names the lesson and the frame shown."""
        s = self.session
        lesson = f"{self.lesson.title_in(s.lang)} · " if self.lesson is not None and s.in_lesson else ""
        title = tr("window.title.frame", s.lang, lesson=lesson, n=s.cursor + 1, total=len(s.frames),
                   frame=frame_title(s.frame, s.run, s.model.vocab, s.lang))
        if self.windowTitle() != title:
            self.setWindowTitle(title)

    def set_lang(self, lang: str) -> None:
        self.session.set_lang(lang)
        self.settings["lang"] = lang

    def set_theme(self, name: str) -> None:
        """Colours of the painted panels and of every widget (the application's palette, as
        zoom sets the application's font: floating docks and dialogs follow too)."""
        theme = self.theme = THEMES[name]
        apply_widget_theme(theme)
        for panel in self.panels.values():
            panel.set_theme(theme)
        self.actions["high_contrast"].setChecked(name == "high-contrast")
        if hasattr(self, "desk_layout"):
            self.desk_layout.mark_docks(theme)
        self.settings["theme"] = name

    def zoom(self, delta: int) -> None:
        size = max(8.0, min(40.0, self.settings["font_size"] + delta))
        self.settings["font_size"] = size
        self._apply_font_size()

    def _apply_font_size(self) -> None:
        desk = self.desk_layout
        size = self.settings["font_size"] * (desk.presentation_scale() if desk.presenting else 1.0)
        font = QApplication.font()
        font.setPointSizeF(size)
        QApplication.setFont(font)
        for panel in self.panels.values():
            panel.refresh()
        desk.check_fit()

    def lesson_names(self) -> tuple[str, str]:
        """(id, title in the current language) of what the window plays, for exports."""
        if self.lesson is None:            # free exploration: the caption names the model and the prompt
            s = self.session
            return "explorer", own_run_caption(s.run, s.model.name, s.model.vocab, s.lang)
        return self.lesson.id, self.lesson.title_in(self.session.lang)

    def prepare_for_export(self) -> None:
        """Nothing that differs between two exports of the same input: no timings, no
        status messages, no blinking text cursor."""
        self.panels["timeline"].set_timings_visible(False)     # forward times and tokens per second
        self.work_status.hide()                                       # no progress bar or Cancel button
        self.statusBar().hide()
        focused = QApplication.focusWidget()
        if focused is not None:
            focused.clearFocus()

    def reset_layout(self) -> None:
        self.settings.reset()
        self.desk_layout.reset()
        self.session.set_config(SamplingConfig(max_new_tokens=self.session.config.max_new_tokens))
        self.set_theme("light")
        self._apply_font_size()

    def retranslate(self) -> None:
        lang = self.session.lang
        self.desk_layout.check_fit()
        self._show_title()
        for pid in self.docks:
            self.fullscreen_actions[pid].setText(tr(self.panels[pid].title_key, lang))
        for name, (key, _s, _m) in ACTIONS.items():
            self.actions[name].setText(tr(key, lang))
        for name, menu in self.menus.items():
            menu.setTitle(tr(f"menu.{name}", lang))
        self.panel_menu.setTitle(tr("menu.panels", lang))
        self.actions[f"lang_{lang}"].setChecked(True)
        self.lesson_switcher.retranslate()
        self._sync_bar()
        self.desk_layout.mark_docks(self.theme)

    def _saved_edits(self) -> bool:
        """Save the lesson editor's edits: False when they were not (the teacher cancelled the
        file dialog, or the write failed and said why), and the window stays open."""
        saved = []
        self.guarded(lambda: saved.append(self.lesson_editor.editor.save()))
        return bool(saved) and saved[0] is not None

    # ------------------------------------------------------------------ persistence
    def _restore(self) -> None:
        st = self.settings
        if not st["geometry"].isEmpty():
            self.restoreGeometry(st["geometry"])
        if not st["window_state"].isEmpty():
            self.restoreState(st["window_state"])
        self.session.set_lang(st["lang"] if st["lang"] in ("en", "zh") else "en")
        self.set_theme(st["theme"] if st["theme"] in THEMES else "light")
        self._apply_font_size()

    def closeEvent(self, event) -> None:
        if self.lesson_editor.changed:              # edits not saved: Save, Discard or Cancel
            answer = self.ask_unsaved_edits()
            if answer == "cancel" or (answer == "save" and not self._saved_edits()):
                event.ignore()
                return
            if answer == "discard":
                self.edits_recovery.discard()
        self.desk_layout.remember()
        self.settings.sync()
        self.panels["player"].timer.stop()
        self.cancel_work()                       # a generation stops after its step, an install at
                                                 # once; a load finishes
        self.jobs.wait()
        super().closeEvent(event)

