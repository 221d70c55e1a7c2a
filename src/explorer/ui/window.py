"""The explorer window: every panel in a dock the teacher can move, enlarge or pop out
full screen; menus built from one action table; language, theme, zoom and presentation
mode; errors always shown, never swallowed.

The prompt bar picks the model (the Model menu too) and, for a model with a chat
template, wraps the typed text in it. A big model computes off the UI thread (see
worker.py): a progress bar and a Cancel button in the status bar while it works."""

from __future__ import annotations


from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import (QAction, QActionGroup, QColor, QFont, QGuiApplication, QKeySequence, QPalette,
                           QShortcut)
from PySide6.QtWidgets import (QApplication, QDockWidget, QFrame, QHBoxLayout, QLabel,
                               QMainWindow, QMessageBox, QScrollArea,
                               QStyle, QToolBar, QToolButton, QWidget)

from ..core.errors import ExplorerError
from ..core.sampling import SamplingConfig
from ..i18n import add_messages, tr
from ..lessons import Lesson
from ..session import Session
from ..session.narration import frame_title
from . import export_actions
from .app_icon import app_icon
from .attention import AttentionPanel
from .beam_panel import BeamPanel
from .controls import SamplingControls
from .distribution import DistributionPanel
from .explanation import ExplanationPanel
from .glossary_panel import GlossaryPanel
from .kv_grid import KVGridPanel
from .lesson_panel import LessonPanel
from .lesson_switcher import LessonSwitcher
from .model_switcher import ModelSwitcher
from .player import PlayerPanel
from .prompt_bar import PromptBar
from .settings import Settings
from .theme import THEMES, text_on, widget_palette
from .timeline import TimelinePanel
from .work_status import WorkStatus
from .worker import Jobs, SessionRunner, is_big

PANELS = (PlayerPanel, TimelinePanel, KVGridPanel, AttentionPanel, DistributionPanel,
          SamplingControls, ExplanationPanel, LessonPanel, GlossaryPanel, BeamPanel)
PRESENTATION_SCALE = 1.4      # presentation mode enlarges type by this factor on a 1080-line screen,
PRESENTATION_LINES = 1080     # and in proportion to the screen's height on others: the same size on
                              # the wall, and the presentation layout fits a 768-line projector too
LOWER_ROW = {"controls": 330, "attention": 560, "distribution": 700, "explanation": 360}   # desk widths, px
COMPACT_WIDTH = 1700          # px: a narrower screen or slide gets the compact desk layout (`_arrange`)
FIT_AFTER_MS = 150            # a window relaid out this long ago checks it still fits its screen
MATTERS_MARK = "● "           # dock titles of the panels a lesson frame points to (text, not colour alone)

# name -> (i18n key, shortcut or shortcuts, menu); one table for menus, shortcuts and tests
ACTIONS = {
    "open_params": ("action.open_params", QKeySequence.StandardKey.Open, "file"),
    "export_frame": ("action.export_frame", "Ctrl+E", "file"),
    "export_lesson": ("action.export_lesson", "Ctrl+Shift+E", "file"),
    "copy_frame": ("action.copy_frame", "Ctrl+Shift+C", "file"),
    "quit": ("action.quit", QKeySequence.StandardKey.Quit, "file"),
    "open_gguf": ("action.open_gguf", None, "model"),
    "first": ("action.first", "Home", "go"),
    "prev": ("action.prev", "Left", "go"),
    "play": ("action.play", "Space", "go"),
    "next": ("action.next", "Right", "go"),
    "last": ("action.last", "End", "go"),
    "undo_force": ("action.undo_force", QKeySequence.StandardKey.Undo, "go"),
    "all_lessons": ("action.all_lessons", "Ctrl+L", "lessons"),
    "open_lesson": ("action.open_lesson", "Ctrl+Shift+O", "lessons"),
    "lang_en": ("action.lang_en", None, "view"),
    "lang_zh": ("action.lang_zh", None, "view"),
    "high_contrast": ("action.high_contrast", None, "view"),
    "presentation": ("action.presentation", "F11", "view"),
    # the platform's Ctrl++ needs Shift on most keyboards: Ctrl+= is the key on the "+" key
    "zoom_in": ("action.zoom_in", (QKeySequence.StandardKey.ZoomIn, "Ctrl+="), "view"),
    "zoom_out": ("action.zoom_out", QKeySequence.StandardKey.ZoomOut, "view"),
    "reset_layout": ("action.reset_layout", None, "view"),
}

add_messages({
    "window.title": {"en": "Token Explorer", "zh": "Token 探索器"},
    "window.title.frame": {"en": "{lesson}{n} / {total}: {frame} — Token Explorer",
                           "zh": "{lesson}{n} / {total}：{frame} — Token 探索器"},
    "menu.file": {"en": "&File", "zh": "文件(&F)"},
    "menu.go": {"en": "&Go", "zh": "播放(&G)"},
    "menu.model": {"en": "&Model", "zh": "模型(&M)"},
    "action.open_gguf": {"en": "Open GGUF…", "zh": "打开GGUF文件…"},
    "menu.view": {"en": "&View", "zh": "视图(&V)"},
    "menu.lessons": {"en": "&Lessons", "zh": "课程(&L)"},
    "action.all_lessons": {"en": "All lessons…", "zh": "全部课程…"},
    "action.open_lesson": {"en": "Open lesson file…", "zh": "打开课程文件…"},
    "menu.panels": {"en": "Panel full screen", "zh": "面板全屏"},
    "action.open_params": {"en": "Open parameters…", "zh": "打开参数文件…"},
    "action.quit": {"en": "Quit", "zh": "退出"},
    "action.export_frame": {"en": "Export frame…", "zh": "导出当前步骤…"},
    "action.export_lesson": {"en": "Export lesson…", "zh": "导出整课…"},
    "action.copy_frame": {"en": "Copy frame to clipboard", "zh": "复制当前步骤到剪贴板"},
    "action.first": {"en": "First frame", "zh": "第一步"},
    "action.prev": {"en": "Previous frame", "zh": "上一步"},
    "action.play": {"en": "Play / pause", "zh": "播放/暂停"},
    "action.next": {"en": "Next frame", "zh": "下一步"},
    "action.last": {"en": "Last frame", "zh": "最后一步"},
    "action.undo_force": {"en": "Undo what-if choice", "zh": "撤销人为指定"},
    "action.lang_en": {"en": "English", "zh": "English"},
    "action.lang_zh": {"en": "中文", "zh": "中文"},
    "action.high_contrast": {"en": "High contrast", "zh": "高对比度"},
    "action.presentation": {"en": "Presentation mode", "zh": "演示模式"},
    "action.zoom_in": {"en": "Larger text", "zh": "放大文字"},
    "action.zoom_out": {"en": "Smaller text", "zh": "缩小文字"},
    "action.reset_layout": {"en": "Reset layout and settings", "zh": "恢复默认布局和设置"},
    "error.title": {"en": "Token Explorer: problem", "zh": "Token 探索器：出现问题"},
    "error.kept": {"en": "{message}\n\nNothing was changed; the explorer keeps what it had.",
                   "zh": "{message}\n\n没有做任何更改，探索器保留原来的状态。"},
})


class DockTitle(QWidget):
    """A dock's title bar: its title, marked ("● ", bold, highlighted) when the lesson frame
    points to the panel, and a float button. No style sheet: a styled dock would stop
    following the application font (zoom, presentation mode). Mouse presses fall through
    to the dock, which moves, floats and docks as usual."""

    def __init__(self, dock: QDockWidget):
        super().__init__(dock)
        self.label = QLabel()
        self.label.setContentsMargins(4, 1, 4, 1)     # no taller than Qt's own title bar
        self.float_button = QToolButton()
        self.float_button.setAutoRaise(True)
        self.float_button.setIconSize(QSize(10, 10))      # no style sheet: it would freeze its font
        self.float_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_TitleBarNormalButton))
        self.float_button.clicked.connect(lambda: dock.setFloating(not dock.isFloating()))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.float_button)
        self.marked = False
        self._shown = None

    def show_title(self, text: str, marked: bool, theme) -> None:
        if self.label.text() != text:
            self.label.setText(text)
        if (marked, theme) == self._shown:
            return
        self._shown = (marked, theme)
        font = QFont()                      # only the weight is set: the size follows the window
        font.setBold(marked)
        self.label.setFont(font)
        palette = self.label.palette()
        if marked:
            palette.setColor(QPalette.ColorRole.Window, QColor(theme.selected))
            palette.setColor(QPalette.ColorRole.WindowText, QColor(text_on(theme.selected)))
        else:
            palette = QPalette()
        self.label.setAutoFillBackground(marked)
        self.label.setPalette(palette)
        self.marked = marked


def is_compact_width(width: int) -> bool:
    """Whether a screen (or slide) this many pixels wide gets the compact desk layout: the
    lower row's four panels side by side need about 1,700 px to show a readable chart."""
    return width < COMPACT_WIDTH


class MainWindow(QMainWindow):
    # a check that the window fits its screen ran and changed nothing: its size is settled
    # until the next change of type, language, run, frame or screen (`fit_pending` meanwhile)
    fit_settled = Signal()

    def __init__(self, session: Session, settings: Settings, lesson: Lesson | None = None,
                 compact: bool = False):
        """compact: the desk layout for a narrow screen or slide (`is_compact_width`)."""
        super().__init__()
        self.compact = compact
        self.session = session
        self.settings = settings
        self.errors: list[str] = []              # the last 100 problems shown, newest last
        # dialogs are attributes: tests replace them
        self.ask_export_frame = lambda: export_actions.ask_frame_choice(self)
        self.ask_export_folder = lambda: export_actions.ask_lesson_choice(self)
        self.jobs = Jobs(self)
        self.runner = SessionRunner(session, self.jobs, self)
        # the start page opens by itself once, on a window a person looks at; headless runs
        # (tests, exports) do not get it unless they ask
        self.start_page_at_first_start = QGuiApplication.platformName() != "offscreen"
        self._lesson = lesson          # None: a free session, not a lesson
        self.presenting = False
        self.theme = THEMES["light"]
        self.setObjectName("explorer-main")
        self.setWindowIcon(app_icon())
        self.setDockNestingEnabled(True)
        self.setCentralWidget(QWidget())
        self.centralWidget().hide()
        self.panels = {cls.panel_id: cls(session) for cls in PANELS}
        self.docks = {pid: self._dock(panel) for pid, panel in self.panels.items()}
        self.panels["explanation"].term_clicked.connect(self.show_term)
        self._arrange()
        self._default_state = self.saveState()
        self._desk_state = self._default_state     # the layout outside presentation mode
        self._desk_geometry = self.saveGeometry()    # and the window's place, taken on entering it
        self._desk_rect = self.geometry()
        # leaving presentation mode restores the desk layout once the smaller type is applied
        self._desk_timer = QTimer(self, singleShot=True, interval=0)
        self._desk_timer.timeout.connect(self._restore_desk)
        # what may change the panels' minimum sizes (the type, the language, a run, a frame,
        # the screen) asks the window to check, once things settle, that it fits its screen
        self._fit_timer = QTimer(self, singleShot=True, interval=FIT_AFTER_MS)
        self._fit_timer.timeout.connect(self._fit_to_screen)
        self._pushed_past_screen = False
        # Escape puts a popped-out panel back, else leaves presentation mode; it is taken from
        # the widgets only then (one shortcut: a floating dock shares its window's shortcuts,
        # and two for one key would both be ambiguous and do nothing)
        self._escape = QShortcut(QKeySequence("Escape"), self, activated=self._escape_pressed)
        self._escape.setEnabled(False)
        self.actions = self._build_actions()
        self._build_menus()
        self.work_status = WorkStatus(self.statusBar(), self.runner, session, self.cancel_work)
        self.runner.failed.connect(self.report_error)
        self._build_toolbar()
        self.lesson_switcher = LessonSwitcher(self, session, self.jobs, self.work_status, self.model_switcher,
                                              self.menus["lessons"])
        # a big model computes off the UI thread, and the teacher's changes to it are not
        # compared with a full recompute (seconds per step: a slider would lag)
        self.session.set_background(self.runner, is_big)
        self.lesson = self._lesson           # the lesson panel and the Lessons menu follow
        self.session.subscribe("lang_changed", lambda _s: self.retranslate())
        self.session.subscribe("run_changed", lambda _s: self._sync_prompt())
        for event in ("run_changed", "cursor_changed"):
            self.session.subscribe(event, lambda _s: self._mark_docks())
            self.session.subscribe(event, lambda _s: self._show_title())
            self.session.subscribe(event, lambda _s: self._fit_timer.start())
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
        return self._lesson

    @lesson.setter
    def lesson(self, lesson: Lesson | None) -> None:
        self._lesson = lesson
        self.lesson_switcher.check_action()
        self._show_title()

    # ------------------------------------------------------------------ building
    def _dock(self, panel) -> QDockWidget:
        dock = QDockWidget(self)
        dock.setObjectName(f"dock-{panel.panel_id}")
        if panel.panel_id == "controls":          # a long form: scroll rather than clip at large type
            scroller = QScrollArea()
            scroller.setWidgetResizable(True)
            scroller.setFrameShape(QFrame.Shape.NoFrame)
            scroller.setWidget(panel)
            scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroller.setMinimumWidth(panel.sizeHint().width()
                                     + scroller.verticalScrollBar().sizeHint().width())
            dock.setWidget(scroller)
        else:
            dock.setWidget(panel)
        dock.setProperty("matters", False)
        dock.setTitleBarWidget(DockTitle(dock))
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        return dock

    def _arrange(self) -> None:
        """The desk layout: the player across the top; the timeline, the KV cache and the
        lesson (glossary and beam tree as its tabs) in the upper row; the sampling controls,
        attention, distribution and explanation in the lower row. Compact (a narrow screen),
        attention and distribution are tabs of one dock, so the chart and the explanation
        keep a readable width."""
        d = self.docks
        for corner, area in ((Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.TopDockWidgetArea),
                             (Qt.Corner.TopRightCorner, Qt.DockWidgetArea.TopDockWidgetArea),
                             (Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea),
                             (Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)):
            self.setCorner(corner, area)
        self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, d["player"])
        self.splitDockWidget(d["player"], d["timeline"], Qt.Orientation.Vertical)
        self.splitDockWidget(d["timeline"], d["kv"], Qt.Orientation.Horizontal)
        # the lesson, its glossary and the beam tree: tabs in a third column of the top area
        self.splitDockWidget(d["kv"], d["lesson"], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(d["lesson"], d["glossary"])
        self.tabifyDockWidget(d["glossary"], d["beam"])
        # the lower row is one dock area: with the central widget hidden, docks in the left or
        # right area next to it drift by a few pixels on every relayout (any label change)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, d["controls"])
        row = self._lower_row()
        for left, right in zip(row, row[1:]):
            self.splitDockWidget(d[left], d[right], Qt.Orientation.Horizontal)
        if self.compact:
            self.tabifyDockWidget(d["distribution"], d["attention"])   # after the splits
            d["distribution"].raise_()
        d["lesson"].raise_()
        self.spread_desk()

    def _lower_row(self) -> list[str]:
        """The desk layout's lower row, left to right (compact: attention is a tab)."""
        return [pid for pid in LOWER_ROW if not (self.compact and pid == "attention")]

    def spread_desk(self) -> None:
        """The desk layout's rows and columns in their default proportions (an export does
        this again once its window has the slide's size: the same sizes, whatever size the
        window had before)."""
        d, row = self.docks, self._lower_row()
        self.resizeDocks([d[pid] for pid in row], [LOWER_ROW[pid] for pid in row], Qt.Orientation.Horizontal)
        self.resizeDocks([d["timeline"], d["kv"], d["lesson"]], [800, 620, 500], Qt.Orientation.Horizontal)
        self.resizeDocks([d["player"], d["timeline"], d["attention"]], [90, 340, 520],
                         Qt.Orientation.Vertical)

    def _arrange_for_presentation(self) -> None:
        """The projector layout: fewer, larger panels for the larger type. The player across
        the top; on the left the KV cache (wide: more positions in view) above distribution
        | attention (tabs: no lesson frame points to both); on the right the timeline, the
        explanation (lesson, glossary and beam tree as its tabs) and the sampling controls,
        so a slider and the bars it moves are both in sight. Each column's panels fit a
        1080-pixel screen at the larger type, in Chinese too. The panels the current frame
        points to come forward."""
        d = self.docks
        v, h = Qt.Orientation.Vertical, Qt.Orientation.Horizontal
        for dock in d.values():                  # from whatever the teacher made of the layout
            dock.setFloating(False)
            self.removeDockWidget(dock)
        self.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, d["player"])
        self.splitDockWidget(d["player"], d["kv"], v)
        self.splitDockWidget(d["kv"], d["timeline"], h)
        self.splitDockWidget(d["kv"], d["distribution"], v)
        self.splitDockWidget(d["timeline"], d["explanation"], v)
        self.splitDockWidget(d["explanation"], d["controls"], v)
        # tabs after the splits: a dock split off a tabbed one would join its tabs instead
        for first, second in (("distribution", "attention"), ("explanation", "lesson"),
                              ("lesson", "glossary"), ("glossary", "beam")):
            self.tabifyDockWidget(d[first], d[second])
        for dock in d.values():
            dock.show()
        for pid in ("distribution", "explanation", *self.session.frame.panels):
            d[pid].raise_()
        screen = self.screen().availableGeometry()
        width, height = screen.width(), screen.height()
        self.resizeDocks([d["kv"], d["timeline"]], [int(0.63 * width), int(0.37 * width)], h)
        self.resizeDocks([d["player"], d["kv"], d["distribution"]],
                         [int(0.12 * height), int(0.36 * height), int(0.52 * height)], v)
        self.resizeDocks([d["timeline"], d["explanation"], d["controls"]],
                         [int(0.28 * height), int(0.32 * height), int(0.28 * height)], v)

    def _build_actions(self) -> dict[str, QAction]:
        s = self.session
        handlers = {
            "open_params": lambda: self.model_switcher.open_params(), "quit": self.close,
            "export_frame": lambda: self.guarded(export_actions.export_frame, self),
            "export_lesson": lambda: self.guarded(export_actions.export_lesson, self),
            "copy_frame": lambda: self.guarded(export_actions.copy_frame, self),
            "first": s.first, "prev": s.prev, "next": s.next, "last": s.last,
            "play": self.panels["player"].toggle_play,
            "undo_force": lambda: self.guarded(s.undo),
            "lang_en": lambda: self.set_lang("en"), "lang_zh": lambda: self.set_lang("zh"),
            "high_contrast": lambda: self.set_theme(
                "high-contrast" if self.actions["high_contrast"].isChecked() else "light"),
            "presentation": self.toggle_presentation,
            "zoom_in": lambda: self.zoom(+1), "zoom_out": lambda: self.zoom(-1),
            "reset_layout": self.reset_layout,
            "all_lessons": lambda: self.lesson_switcher.show_start_page(),
            "open_lesson": lambda: self.lesson_switcher.open_lesson_file(),
            "open_gguf": lambda: self.model_switcher.open_gguf(),
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
        self.menus = {m: self.menuBar().addMenu("") for m in ("file", "model", "go", "lessons", "view")}
        for name, (_key, _shortcut, menu) in ACTIONS.items():
            self.menus[menu].addAction(self.actions[name])
        self.panel_menu = self.menus["view"].addMenu("")
        self.fullscreen_actions = {}
        for pid, dock in self.docks.items():
            action = self.panel_menu.addAction("")
            action.triggered.connect(lambda _c=False, p=pid: self.panel_full_screen(p))
            self.fullscreen_actions[pid] = action

    def _build_toolbar(self) -> None:
        bar = QToolBar(self)
        bar.setObjectName("prompt-bar")
        bar.setMovable(False)
        self.prompt_bar = PromptBar(self.session, bar, self.guarded)
        bar.addSeparator()
        self.model_switcher = ModelSwitcher(self, self.session, self.jobs, self.work_status, self.prompt_bar,
                                            bar, self.menus["model"], self.actions["open_gguf"])
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self._sync_prompt()

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

    def report_error(self, message: str) -> None:
        """Show a problem without blocking the class: status bar + a non-modal box."""
        self.errors = (self.errors + [message])[-100:]
        lang = self.session.lang
        self.statusBar().showMessage(message, 15000)
        box = QMessageBox(QMessageBox.Icon.Warning, tr("error.title", lang),
                          tr("error.kept", lang, message=message), QMessageBox.StandardButton.Ok, self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.show()
        self._last_box = box

    def _sync_prompt(self) -> None:
        self.prompt_bar.sync()
        self.model_switcher.sync_shown()
    # ------------------------------------------------------------------ background work
    @property
    def working(self) -> bool:
        """Is something computing or loading in the background?"""
        return self.runner.busy or self.model_switcher.loading is not None

    def cancel_work(self) -> None:
        """Stop the running generation after its current step (it ends as "cancelled"), or the
        running install (nothing is written)."""
        self.runner.cancel()
        self.model_switcher.cancel_install()

    def _fit_to_screen(self) -> None:
        """The window never asks for more height than its screen has. When the panels'
        minimums add up to more (a 768-line screen, Chinese, many sampling stages), the
        distribution chart, whose rows can get shorter, asks for less; when there is room
        again, it asks for more, up to what its content needs. A window its minimum had made
        taller than the screen is brought back. Only on screen: an export sizes its window
        to the slide."""
        if not self.isVisible() or self.testAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen):
            self.fit_settled.emit()
            return
        room = self.screen_room()
        minimum = self.minimumSizeHint().height()
        excess = minimum - room
        if excess > 0 and self.height() <= minimum:
            self._pushed_past_screen = True     # by its minimum, not by the teacher's hand
        if excess:
            chart = self.panels["distribution"].chart
            if chart.set_height_cap(max(0, chart.minimumSizeHint().height() - excess)):
                self._fit_timer.start()         # once the layout took it in: check again
        if self._pushed_past_screen and not self.isFullScreen():   # as far back as it now can
            if self.height() > max(minimum, room):
                self.resize(self.width(), max(minimum, room))
            self._pushed_past_screen = excess > 0
        if not self._fit_timer.isActive():
            self.fit_settled.emit()

    def screen_room(self) -> int:
        """The height the window may have on its screen: all of it in full screen, else the
        available height less the window manager's title bar."""
        screen = self.screen()
        if self.isFullScreen():
            return screen.geometry().height()
        return screen.availableGeometry().height() - (self.frameGeometry().height() - self.height())

    @property
    def fit_pending(self) -> bool:
        """Will the window check again that it fits its screen (`fit_settled` once it is done)?"""
        return self._fit_timer.isActive()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._fit_timer.start()
        if not self._shown_once:
            self._shown_once = True
            self.windowHandle().screenChanged.connect(lambda _screen: self._fit_timer.start())
            if (self.start_page_at_first_start and not self.settings["start_page_shown"]
                    and not self.testAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen)):
                QTimer.singleShot(0, self._first_start)

    def _first_start(self) -> None:
        self.settings["start_page_shown"] = True
        self.lesson_switcher.show_start_page()

    def show_term(self, term_id: str) -> None:
        """A term clicked in the explanation: selected in the glossary, its dock brought forward."""
        if self.panels["glossary"].select_term(term_id):
            self.docks["glossary"].show()
            self.docks["glossary"].raise_()

    # ------------------------------------------------------------------ frames' hints
    def _mark_docks(self) -> None:
        """The docks of the panels the current lesson frame points to: "● " before the title
        and a highlighted, bold title bar; a tabbed one is raised."""
        matters = set(self.session.frame.panels)
        lang = self.session.lang
        for pid, dock in self.docks.items():
            on = pid in matters
            title = (MATTERS_MARK if on else "") + tr(self.panels[pid].title_key, lang)
            if dock.windowTitle() != title:
                dock.setWindowTitle(title)
            dock.titleBarWidget().show_title(title, on, self.theme)
            if bool(dock.property("matters")) != on:
                dock.setProperty("matters", on)
                if on and self.tabifiedDockWidgets(dock) and dock.visibleRegion().isEmpty():
                    dock.raise_()

    def show_frame_tabs(self) -> None:
        """In every group of tabbed panels, the one the current frame points to (the first
        it names), else the group's first panel: the same tabs for the same frame whatever
        was shown before (an exported frame looks the same alone and in a range)."""
        matters, seen = self.session.frame.panels, set()
        for pid, dock in self.docks.items():                   # PANELS order
            if pid in seen:
                continue
            tabbed = self.tabifiedDockWidgets(dock)
            group = [pid] + [other for other, d in self.docks.items() if d in tabbed]
            seen.update(group)
            if tabbed:
                self.docks[next((p for p in matters if p in group), pid)].raise_()

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
        palette = widget_palette(theme)
        if palette != QApplication.palette():        # a new palette repolishes every widget
            QApplication.setPalette(palette)
        for panel in self.panels.values():
            panel.set_theme(theme)
        self.actions["high_contrast"].setChecked(name == "high-contrast")
        if hasattr(self, "docks"):
            self._mark_docks()
        self.settings["theme"] = name

    def zoom(self, delta: int) -> None:
        size = max(8.0, min(40.0, self.settings["font_size"] + delta))
        self.settings["font_size"] = size
        self._apply_font_size()

    def presentation_scale(self) -> float:
        """How much presentation mode enlarges the type on this window's screen."""
        return PRESENTATION_SCALE * self.screen().availableGeometry().height() / PRESENTATION_LINES

    def _apply_font_size(self) -> None:
        size = self.settings["font_size"] * (self.presentation_scale() if self.presenting else 1.0)
        font = QApplication.font()
        font.setPointSizeF(size)
        QApplication.setFont(font)
        for panel in self.panels.values():
            panel.refresh()
        self._fit_timer.start()

    def toggle_presentation(self) -> None:
        """Full screen, larger type and the presentation layout (as the teacher last left it,
        or `_arrange_for_presentation`); leaving puts the desk layout back."""
        self.presenting = not self.presenting
        self.actions["presentation"].setChecked(self.presenting)
        if self.presenting:
            for pid, dock in self.docks.items():
                if self._popped_out(dock):
                    self.panel_full_screen(pid)        # a popped-out panel goes back first
            self._desk_state, self._desk_geometry = self.saveState(), self.saveGeometry()
            self._desk_rect = self.geometry()
            self.showFullScreen()
            self._apply_font_size()
            if self.restoreState(self.settings["presentation_state"]):
                for pid in self.session.frame.panels:
                    self.docks[pid].raise_()
            else:
                self._arrange_for_presentation()
        else:
            self.settings["presentation_state"] = self.saveState()
            self.showNormal()
            self.setGeometry(self._desk_rect)           # where and how large it was at the desk
            self._apply_font_size()
            # once the widgets have the smaller type (posted events): restored under the larger
            # one, docks would keep heights sized for it
            self._desk_timer.start()
        self._sync_escape()

    def _restore_desk(self) -> None:
        if not self.presenting:                 # F11 may have been pressed again meanwhile
            self.restoreState(self._desk_state)

    def panel_full_screen(self, panel_id: str) -> None:
        """Pop one panel out to fill the screen; Escape (or the same action) puts it back."""
        dock = self.docks[panel_id]
        if self._popped_out(dock):
            dock.showNormal()
            dock.setFloating(False)
            self.activateWindow()          # keys (Escape, arrows) go to the window again
        else:
            dock.setFloating(True)
            dock.showFullScreen()
        self._sync_escape()

    @staticmethod
    def _popped_out(dock) -> bool:
        return dock.isFloating() and dock.isFullScreen()

    def _escape_pressed(self) -> None:
        popped = next((pid for pid, dock in self.docks.items() if self._popped_out(dock)), None)
        if popped is not None:
            self.panel_full_screen(popped)
        elif self.presenting:
            self.toggle_presentation()

    def _sync_escape(self) -> None:
        self._escape.setEnabled(self.presenting or any(self._popped_out(d) for d in self.docks.values()))

    def lesson_names(self) -> tuple[str, str]:
        """(id, title in the current language) of what the window plays, for exports."""
        if self.lesson is None:
            return "explorer", tr("window.title", self.session.lang)
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
        self._desk_state = self._default_state
        if self.presenting:
            self._arrange_for_presentation()
        else:
            self.restoreState(self._default_state)
            for dock in self.docks.values():
                if dock.isFloating():
                    dock.setFloating(False)
        self.session.set_config(SamplingConfig(max_new_tokens=self.session.config.max_new_tokens))
        self.set_theme("light")
        self._apply_font_size()

    def retranslate(self) -> None:
        lang = self.session.lang
        self._fit_timer.start()
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
        self._sync_prompt()
        self._mark_docks()

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
        if self.presenting:        # both layouts are remembered; the next start opens at the desk
            self.settings["presentation_state"] = self.saveState()
            self.settings["geometry"], self.settings["window_state"] = self._desk_geometry, self._desk_state
        else:
            self.settings["geometry"], self.settings["window_state"] = self.saveGeometry(), self.saveState()
        self.settings.sync()
        self.panels["player"].timer.stop()
        self.cancel_work()                       # a generation stops after its step, an install at
                                                 # once; a load finishes
        self.jobs.wait()
        super().closeEvent(event)

