"""The explorer window: every panel in a dock the teacher can move, enlarge or pop out
full screen; menus built from one action table; language, theme, zoom and presentation
mode; errors always shown, never swallowed.

The prompt bar picks the model (the Model menu too) and, for a model with a chat
template, wraps the typed text in it. A big model computes off the UI thread (see
worker.py): a progress bar and a Cancel button in the status bar while it works."""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import (QAction, QActionGroup, QColor, QFont, QGuiApplication, QKeySequence, QPalette,
                           QShortcut)
from PySide6.QtWidgets import (QApplication, QCheckBox, QDockWidget, QFileDialog, QFrame, QHBoxLayout, QLabel,
                               QLineEdit, QMainWindow, QMessageBox, QProgressBar, QPushButton, QScrollArea,
                               QStyle, QToolBar, QToolButton, QWidget)

from ..core.bpe import chat_message, chat_turn, speaks_chatml
from ..core.errors import ExplorerError
from ..core.params_io import load_params
from ..core.sampling import SamplingConfig
from ..i18n import add_messages, tr
from ..lessons import Lesson, load_lesson
from ..lessons.lesson_models import CONTEXT, CONTEXT_ID, logits_model
from ..model_install import ASSEMBLE, InstallCancelled, fetch_terms, install, terms_html
from ..model_registry import MODELS, TEACHING, default_prompt, installed_path, load_model
from ..session import Session
from ..session.narration import frame_title
from ..session.session import Scenario
from . import export_actions
from .app_icon import app_icon
from .attention import AttentionPanel
from .beam_panel import BeamPanel
from .controls import SamplingControls
from .distribution import DistributionPanel
from .explanation import ExplanationPanel
from .glossary_panel import GlossaryPanel
from .install_dialog import InstallDialog
from .kv_grid import KVGridPanel
from .lesson_panel import LessonPanel
from .model_picker import OTHER, ModelPicker, model_choices
from .player import PlayerPanel
from .settings import Settings
from .start_page import StartPage, shipped_lessons
from .theme import THEMES, text_on, widget_palette
from .timeline import TimelinePanel
from .units import byte_size
from .worker import Jobs, SessionRunner, error_message, is_big

PANELS = (PlayerPanel, TimelinePanel, KVGridPanel, AttentionPanel, DistributionPanel,
          SamplingControls, ExplanationPanel, LessonPanel, GlossaryPanel, BeamPanel)
PRESENTATION_SCALE = 1.4      # presentation mode enlarges type by this factor on a 1080-line screen,
PRESENTATION_LINES = 1080     # and in proportion to the screen's height on others: the same size on
                              # the wall, and the presentation layout fits a 768-line projector too
LOWER_ROW = {"controls": 330, "attention": 560, "distribution": 700, "explanation": 360}   # desk widths, px
COMPACT_WIDTH = 1700          # px: a narrower screen or slide gets the compact desk layout (`_arrange`)
FIT_AFTER_MS = 150            # a window relaid out this long ago checks it still fits its screen
MATTERS_MARK = "● "           # dock titles of the panels a lesson frame points to (text, not colour alone)
NEW_PIECES = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
REUSED_STEP_SECONDS = 0.001   # a step reported faster than this was taken from the last Run, not computed
INSTALL_STEPS = 1000          # an install's progress bar counts in these steps over its two stages
WORK_SHOWN_AFTER_MS = 300     # a computation shorter than this never shows the progress bar (no flicker,
                              # and a progress bar repaints itself at once on every value: costly while dragging)

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
    "gguf.filter": {"en": "GGUF models (*.gguf)", "zh": "GGUF模型 (*.gguf)"},
    "model.picker": {"en": "Model:", "zh": "模型："},
    "model.loading": {"en": "Loading {name}…", "zh": "正在加载{name}…"},
    "model.loaded": {"en": "Model: {name}", "zh": "模型：{name}"},
    "chat.label": {"en": "Chat template", "zh": "对话模板"},
    "chat.tip": {"en": "Wrap the typed text in the model's chat template (a system turn, your text as the "
                       "user's turn, then the assistant's turn begins). The box keeps showing your text.",
                 "zh": "用模型的对话模板包装输入的文字（系统消息、你的文字作为用户消息，然后是助手的回答）。"
                       "输入框里仍然显示你的文字。"},
    "work.computing": {"en": "Computing…", "zh": "正在计算…"},
    "work.progress": {"en": "%v / %m tokens", "zh": "%v / %m 个Token"},
    "work.rate": {"en": "{n} tokens · {rate:.1f} tok/s", "zh": "{n}个Token · 每秒{rate:.1f}个Token"},
    "work.steps": {"en": "{n} tokens", "zh": "{n}个Token"},
    "work.cancel": {"en": "Cancel", "zh": "取消"},
    "work.cancel.tip": {"en": "Stop generating after the current step (the run ends as cancelled)",
                        "zh": "在当前这一步之后停止生成（结束原因为“已取消”）"},
    "work.cancelled": {"en": "Cancelled after {n} tokens", "zh": "已取消：生成了{n}个Token"},
    "menu.view": {"en": "&View", "zh": "视图(&V)"},
    "menu.lessons": {"en": "&Lessons", "zh": "课程(&L)"},
    "action.all_lessons": {"en": "All lessons…", "zh": "全部课程…"},
    "action.open_lesson": {"en": "Open lesson file…", "zh": "打开课程文件…"},
    "lesson.filter": {"en": "Lesson files (*.toml)", "zh": "课程文件 (*.toml)"},
    "lesson.opened": {"en": "Opened the lesson “{title}”", "zh": "已打开课程“{title}”"},
    "lesson.opening": {"en": "Opening “{title}”…", "zh": "正在打开“{title}”…"},
    "action.install_model": {"en": "Install {label} ({size})…", "zh": "安装{label}（{size}）…"},
    "model.installing": {"en": "Installing {label} (downloading {size})…", "zh": "正在安装{label}（下载{size}）…"},
    "model.downloading": {"en": "Downloading {label}: {done} of {total}", "zh": "正在下载{label}：{done} / {total}"},
    "model.assembling": {"en": "Joining and checking {label}: {done} of {total}",
                         "zh": "正在拼接并校验{label}：{done} / {total}"},
    "model.installed": {"en": "Installed {label}: {path}", "zh": "已安装{label}：{path}"},
    "install.cancel.tip": {"en": "Stop the download; nothing is written", "zh": "停止下载；不会写入任何文件"},
    "install.cancelled": {"en": "Install of {label} cancelled; nothing was written",
                          "zh": "已取消安装{label}；没有写入任何文件"},
    "work.busy": {"en": "A model or lesson is still loading; try again when it is ready.",
                  "zh": "还有模型或课程正在加载；请等它完成后再试。"},
    "logits.label": {"en": "Logits:", "zh": "Logits："},
    "logits.tip": {"en": "One number per candidate, separated by commas (e.g. 2, 1, 0); press Enter to "
                         "rebuild the model. More numbers add candidates named A, B, …",
                   "zh": "每个候选一个数，用逗号分隔（例如 2, 1, 0）；按回车重建模型。多写几个数会增加名为A、B…的候选"},
    "logits.bad": {"en": "logits {text!r}: {problem}", "zh": "logits {text!r}：{problem}"},
    "logits.not_number": {"en": "{item!r} is not a number", "zh": "{item!r}不是数字"},
    "logits.not_finite": {"en": "{item!r} is not a finite number", "zh": "{item!r}不是有限的数"},
    "logits.empty": {"en": "expected at least one number", "zh": "至少需要一个数"},
    "logits.too_many": {"en": "at most {n} numbers", "zh": "最多{n}个数"},
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
    "prompt.label": {"en": "Prompt:", "zh": "提示："},
    "prompt.tip": {"en": "Type a prompt the model's vocabulary can encode and press Enter",
                   "zh": "输入模型词表能编码的提示，按回车"},
    "model.label": {"en": "{n} tokens in the vocabulary", "zh": "词表{n}项"},
    "error.title": {"en": "Token Explorer: problem", "zh": "Token 探索器：出现问题"},
    "error.kept": {"en": "{message}\n\nNothing was changed; the explorer keeps what it had.",
                   "zh": "{message}\n\n没有做任何更改，探索器保留原来的状态。"},
    "params.filter": {"en": "Parameter files (*.json)", "zh": "参数文件 (*.json)"},
    "params.loaded": {"en": "Loaded {path}", "zh": "已加载 {path}"},
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
    # until the next change of type, language, run, frame or screen
    fit_settled = Signal()

    def __init__(self, session: Session, settings: Settings, lesson: Lesson | None = None,
                 compact: bool = False):
        """compact: the desk layout for a narrow screen or slide (`is_compact_width`)."""
        super().__init__()
        self.compact = compact
        self.session = session
        self.settings = settings
        self.errors: list[str] = []              # the last 100 problems shown, newest last
        self.ask_params_path = self._ask_params_path   # dialogs are attributes: tests replace them
        self.ask_export_frame = lambda: export_actions.ask_frame_choice(self)
        self.ask_export_folder = lambda: export_actions.ask_lesson_choice(self)
        self.ask_lesson_path = self._ask_lesson_path
        self.ask_gguf_path = self._ask_gguf_path
        self.confirm_install = self._confirm_install          # (ModelSpec) -> bool; tests answer it
        self.install_dialog: InstallDialog | None = None      # while the question is asked
        self._install_cancel: threading.Event | None = None   # set: the running install stops
        self.load_model = load_model                 # (key) -> model; runs off the UI thread
        self._models: dict[str, object] = {}         # key -> loaded model (the teaching one, the last big one)
        self._opened: tuple[str, ...] = ()           # GGUF files opened here, offered in the picker
        self._models_synced_for = None               # what the picker last showed
        self._loading: str | None = None             # key of the model being loaded (or a lesson's, prepared)
        self._lesson_request: Lesson | None = None   # the lesson asked for last (one may be in preparation)
        self._prompt_synced_for = (None, None)       # (model, prompt ids) the prompt box last showed
        self._chat_message_for = (None, None, None)  # (vocabulary, prompt ids, its chat message)
        self.jobs = Jobs(self)
        self.runner = SessionRunner(session, self.jobs, self)
        # the start page opens by itself once, on a window a person looks at; headless runs
        # (tests, exports) do not get it unless they ask
        self.start_page_at_first_start = QGuiApplication.platformName() != "offscreen"
        self.start_page: StartPage | None = None
        self._lesson_actions: dict[str, QAction] | None = None     # built with the Lessons menu
        self.lesson = lesson          # None: a free session, not a lesson
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
        self._build_toolbar()
        self._build_work_status()
        self._choose_runner()
        self.lesson = self._lesson           # the lesson panel and the Lessons menu follow
        self.session.subscribe("lang_changed", lambda _s: self.retranslate())
        self.session.subscribe("run_changed", lambda _s: self._choose_runner())
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
        self._check_lesson_action()
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
            "open_params": lambda: self.open_params(), "quit": self.close,
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
            "all_lessons": self.show_start_page, "open_lesson": lambda: self.open_lesson_file(),
            "open_gguf": self.open_gguf,
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
        self.menus["lessons"].aboutToShow.connect(lambda: self.lesson_actions)
        self.model_actions: dict[str, QAction] = {}
        self._menu_choices: tuple = ()
        self._model_group = QActionGroup(self)
        self._model_group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)
        self._model_separator = self.menus["model"].addSeparator()
        for name, (_key, _shortcut, menu) in ACTIONS.items():
            self.menus[menu].addAction(self.actions[name])
        self.install_actions: dict[str, QAction] = {}          # shown while the model is not installed
        for name in MODELS:
            action = self.menus["model"].addAction("")
            action.triggered.connect(lambda _c=False, n=name: self.install_model(n))
            self.install_actions[name] = action
        self.panel_menu = self.menus["view"].addMenu("")
        self.fullscreen_actions = {}
        for pid, dock in self.docks.items():
            action = self.panel_menu.addAction("")
            action.triggered.connect(lambda _c=False, p=pid: self.panel_full_screen(p))
            self.fullscreen_actions[pid] = action

    @property
    def lesson_actions(self) -> dict[str, QAction]:
        """One checkable item per shipped lesson in the Lessons menu (the one playing is
        checked). The shipped lessons are read when the menu first opens (or this is first
        asked for), not while the window starts."""
        if self._lesson_actions is None:
            self._build_lesson_actions()
        return self._lesson_actions

    def _build_lesson_actions(self) -> None:
        menu = self.menus["lessons"]
        first = menu.actions()[0] if menu.actions() else None
        group = QActionGroup(self)
        group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)
        lessons, _errors = shipped_lessons()         # the start page lists the broken ones
        self._lesson_actions = {}
        for lesson in lessons:
            action = QAction(lesson.title_in(self.session.lang), self)
            action.setCheckable(True)
            action.triggered.connect(lambda _c=False, l=lesson: self.switch_lesson(l))
            group.addAction(action)
            menu.insertAction(first, action)
            self._lesson_actions[lesson.id] = action
        menu.insertSeparator(first)
        self._lessons_listed = {lesson.id: lesson for lesson in lessons}
        self._check_lesson_action()

    def _check_lesson_action(self) -> None:
        current = self.lesson.id if self.lesson is not None and self.session.in_lesson else None
        for lid, action in (self._lesson_actions or {}).items():
            action.setChecked(lid == current and self._lessons_listed[lid].path == self.lesson.path)

    def _build_toolbar(self) -> None:
        bar = QToolBar(self)
        bar.setObjectName("prompt-bar")
        bar.setMovable(False)
        self.prompt_label = QLabel()
        self.prompt_edit = QLineEdit()
        self.prompt_edit.setMinimumWidth(260)
        self.prompt_edit.returnPressed.connect(self._prompt_entered)
        self.chat_check = QCheckBox()
        self.chat_check.toggled.connect(self._chat_toggled)
        self.model_picker_label = QLabel()
        self.model_picker = ModelPicker()
        self.model_picker.chosen.connect(self.choose_model)
        self.model_label = QLabel()
        bar.addWidget(self.prompt_label)
        bar.addWidget(self.prompt_edit)
        self._chat_action = bar.addWidget(self.chat_check)     # shown for a model with a chat template
        bar.addSeparator()
        bar.addWidget(self.model_picker_label)
        bar.addWidget(self.model_picker)
        bar.addWidget(self.model_label)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, bar)
        self._sync_prompt()

    def _build_work_status(self) -> None:
        """Status bar: what the background is doing, how far it got, and a Cancel button."""
        self.work_label = QLabel()
        self.work_bar = QProgressBar()
        self.work_bar.setMaximumWidth(260)
        self.cancel_button = QPushButton()
        self.cancel_button.clicked.connect(self.cancel_work)
        for widget in (self.work_label, self.work_bar, self.cancel_button):
            self.statusBar().addPermanentWidget(widget)
            widget.hide()
        self._work_last, self._work_intervals = (0, 0.0), []
        self._work_timer = QTimer(self, singleShot=True, interval=WORK_SHOWN_AFTER_MS)
        self._work_timer.timeout.connect(lambda: self._set_work_visible(True, self.runner.busy))
        self.runner.started.connect(self._work_started)
        self.runner.progress.connect(self._work_progress)
        self.runner.idle.connect(self._work_idle)
        self.runner.failed.connect(self.report_error)

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

    def _prompt_entered(self) -> None:
        changed = (self.guarded(self._logits_entered, self.prompt_edit.text()) if self.editing_logits
                   else self.guarded(self.set_prompt_text, self.prompt_edit.text()))
        if changed:
            self.prompt_edit.setModified(False)      # entered: no longer a pending edit
        else:
            self._sync_prompt(force=True)

    def chat_available(self, model=None) -> bool:
        """Does the model's vocabulary have the ChatML template's turn markers (SmolLM2's)?"""
        model = self.session.requested_model if model is None else model
        return speaks_chatml(model.vocab)

    def _wrapped(self, model, text: str) -> tuple[int, ...]:
        """Prompt ids of the typed text, in the chat template when it is ticked."""
        chat = self.chat_check.isChecked() and self.chat_available(model)
        return tuple(model.vocab.encode(chat_turn(model.vocab, text) if chat else text))

    def set_prompt_text(self, text: str) -> None:
        """The typed prompt, in the chat template when it is ticked; the box keeps the text."""
        self.session.set_prompt_ids(self._wrapped(self.session.requested_model, text))

    def _chat_toggled(self, _checked: bool) -> None:
        """Wraps (or unwraps) the text in the box, also a question typed and not yet entered."""
        if self.chat_available() and not self.editing_logits:
            if not self.guarded(self.set_prompt_text, self.prompt_edit.text()):
                self._sync_prompt(force=True)

    def _chat_message(self) -> str | None:
        """The user's text when the shown prompt is one chat-template turn, else None
        (worked out once per prompt: a slider tick reruns the same one)."""
        vocab, ids = self.session.model.vocab, self.session.prompt_ids
        known_vocab, known_ids, message = self._chat_message_for
        if known_vocab is not vocab or known_ids != ids:
            message = chat_message(vocab, ids)
            self._chat_message_for = (vocab, ids, message)
        return message

    def _shown_prompt_text(self) -> str:
        """What the prompt box shows: the user's text of a chat-template prompt, else the prompt."""
        message = self._chat_message()
        return message if message is not None else self.session.model.vocab.decode(self.session.prompt_ids)

    @property
    def editing_logits(self) -> bool:
        """A logits lesson's model: the prompt bar edits its logits instead of the prompt."""
        model = self.session.model
        return (model.name == "logits" and hasattr(model, "default")
                and tuple(model.vocab.pieces[:1]) == (CONTEXT,))

    def _logits_text(self) -> str:
        return ", ".join(f"{v:g}" for v in self.session.model.default[1:])

    def _logits_entered(self, text: str) -> None:
        """Rebuild the logits model from the typed numbers; a bad list changes nothing."""
        lang = self.session.lang
        items = [t for t in re.split(r"[,，;；\s]+", text.strip()) if t]
        values = []
        for item in items:
            try:
                value = float(item)
            except ValueError:
                raise ExplorerError(tr("logits.bad", lang, text=text,
                                       problem=tr("logits.not_number", lang, item=item))) from None
            if not math.isfinite(value):
                raise ExplorerError(tr("logits.bad", lang, text=text,
                                       problem=tr("logits.not_finite", lang, item=item)))
            values.append(value)
        pieces = list(self.session.model.vocab.pieces[1:])
        spare = [p for p in NEW_PIECES if p not in pieces]
        if not values:
            raise ExplorerError(tr("logits.bad", lang, text=text, problem=tr("logits.empty", lang)))
        if len(values) > len(pieces) + len(spare):
            raise ExplorerError(tr("logits.bad", lang, text=text,
                                   problem=tr("logits.too_many", lang, n=len(pieces) + len(spare))))
        pieces = (pieces + spare)[:len(values)]
        self._choose_runner(small=True)
        # its prompt is its context token, also after a prompt typed on another scenario's
        # frame (a lesson that mixes a logits model with the teaching one)
        self.session.set_model(logits_model(tuple(pieces), tuple(values)), prompt_ids=(CONTEXT_ID,))

    def _sync_prompt(self, force: bool = False) -> None:
        vocab, lang = self.session.model.vocab, self.session.lang
        logits = self.editing_logits
        self.prompt_label.setText(tr("logits.label" if logits else "prompt.label", lang))
        self.prompt_edit.setToolTip(tr("logits.tip" if logits else "prompt.tip", lang))
        # text being typed, or typed and not yet entered, stays while a slider or another
        # control reruns the same prompt; a new prompt or model (a lesson's frame, a logits
        # lesson's other numbers) replaces it
        model, ids = self.session.model, tuple(self.session.prompt_ids)
        synced_model, synced_ids = self._prompt_synced_for
        edited = self.prompt_edit.hasFocus() or self.prompt_edit.isModified()
        if force or model is not synced_model or ids != synced_ids or not edited:
            self._prompt_synced_for = (model, ids)
            text = self._logits_text() if logits else self._shown_prompt_text()
            if text != self.prompt_edit.text():          # a line edit repaints even for the same text
                self.prompt_edit.setText(text)
            self.prompt_edit.setModified(False)
        self.model_label.setText(tr("model.label", lang, n=f"{len(vocab):,}"))
        self.chat_check.setText(tr("chat.label", lang))
        if not self.session.behind:      # while asked-for changes compute, it shows what was asked
            self.chat_check.blockSignals(True)
            self.chat_check.setChecked(self._chat_message() is not None)
            self.chat_check.blockSignals(False)
        self.chat_check.setToolTip(tr("chat.tip", lang))
        self._chat_action.setVisible(self.chat_available(self.session.model) and not logits)
        self.model_picker_label.setText(tr("model.picker", lang))
        # the choices look at the model files: only when something they show has changed,
        # not on every slider tick
        key = (self.session.requested_model, lang, self._opened, self._loading is None)
        if key != self._models_synced_for:
            self._models_synced_for = key
            self._sync_models()

    # ------------------------------------------------------------------ models
    def _current_model_key(self) -> str:
        model = self.session.requested_model
        for key, known in self._models.items():
            if known is model:
                return key
        return model.name if model.name == TEACHING or model.name in MODELS else OTHER

    def remember_model(self, key: str, model) -> None:
        """`model` was loaded from `key` (a name or a .gguf path): the picker offers and marks it.
        Big models are not kept once another is loaded (hundreds of MB each)."""
        self._models = {k: m for k, m in self._models.items() if not is_big(m) or m is self.session.model}
        self._models[key] = model
        if key != TEACHING and key not in MODELS and key not in self._opened:
            self._opened = self._opened + (key,)

    def _sync_models(self) -> None:
        """The picker and the Model menu list the choices and mark the current model."""
        lang = self.session.lang
        choices = model_choices(lang, self._opened)
        current = self._current_model_key()
        self.model_picker.show_choices(choices, current, self.session.requested_model.name, lang)
        self.model_picker.setEnabled(self._loading is None)
        if tuple(choices) != self._menu_choices:
            self._menu_choices = tuple(choices)
            for action in self.model_actions.values():
                self.menus["model"].removeAction(action)
                self._model_group.removeAction(action)
            self.model_actions = {}
            for c in choices:
                action = QAction(c.label, self)
                action.setCheckable(True)
                action.setToolTip(c.tooltip)
                action.triggered.connect(lambda _c=False, k=c.key: self.choose_model(k))
                self._model_group.addAction(action)
                self.menus["model"].insertAction(self._model_separator, action)
                self.model_actions[c.key] = action
            self.menus["model"].setToolTipsVisible(True)
        for c in choices:
            self.model_actions[c.key].setChecked(c.key == current)
            self.model_actions[c.key].setEnabled(c.enabled and self._loading is None)
        self.actions["open_gguf"].setEnabled(self._loading is None)
        for name, action in self.install_actions.items():
            s = MODELS[name]
            action.setText(tr("action.install_model", lang, label=s.label, size=byte_size(s.size)))
            action.setVisible(installed_path(name) is None)
            action.setEnabled(self._loading is None)

    def choose_model(self, key: str) -> None:
        """Switch to a model by key; a big one loads off the UI thread. A model that cannot be
        loaded (not installed, a broken file) is reported and the current one stays."""
        if self._loading is not None or key == self._current_model_key():
            self._sync_models()
            return
        if key in self._models:
            self._model_loaded(key, self._models[key])
            return
        if key == TEACHING:                 # built in and instant
            try:
                model = self.load_model(TEACHING)
            except ExplorerError as exc:
                self.report_error(str(exc))
                return
            self._model_loaded(key, model)
            return
        self._loading = key
        name = self.model_picker.itemText(max(0, self.model_picker.findData(key))) or key
        self._show_work(tr("model.loading", self.session.lang, name=name), cancel=False)
        self._sync_models()
        loader = self.load_model
        self.jobs.start(lambda _report: loader(key), lambda model: self._model_loaded(key, model),
                        self._work_failed)

    def _work_failed(self, exc, tb: str) -> None:
        """A model load, a model install or a lesson's preparation failed: said, nothing changes."""
        self._loading = None
        self._hide_work()
        self._sync_models()
        self.report_error(error_message(exc, tb))

    def _model_loaded(self, key: str, model) -> None:
        """Switch the session to a loaded model, on its default prompt. A lesson playing is
        left first (its frames' words would be wrong about another model)."""
        was_loading, self._loading = self._loading, None
        if was_loading is not None:
            self._hide_work()
        text = default_prompt(model)
        try:
            ids = self._wrapped(model, text)
        except ExplorerError as exc:
            self.report_error(str(exc))
            self._sync_models()
            return
        if self.session.in_lesson:
            # the lesson's words are about its own model: leave it for a free run, settings kept
            s = self.session
            s.play((Scenario(s.model, s.prompt_ids, s.config),))
            self.lesson = None
        old = dict(self._models), self._opened
        self.remember_model(key, model)
        self._choose_runner(model=model)
        big = is_big(model)
        if not self.guarded(self.session.set_model, model, ids, not big):
            self._models, self._opened = old
            self._choose_runner()
        else:
            self._check_lesson_action()
            self.statusBar().showMessage(tr("model.loaded", self.session.lang, name=model.name), 8000)
        self._sync_models()

    def install_model(self, name: str, then: Callable[[], object] | None = None) -> bool:
        """Download and install a known real model in the background, as `explorer model
        install NAME` does, once the teacher agrees (and, for a model under terms, has
        accepted them); `then()` runs when it is installed. Cancel stops it and nothing is
        written. False if nothing started (declined, or other work is running)."""
        s = MODELS[name]
        if self._loading is not None:
            self.statusBar().showMessage(tr("work.busy", self.session.lang), 8000)
            return False
        if not self.confirm_install(s):
            return False
        lang = self.session.lang
        self._loading = name
        cancel = self._install_cancel = threading.Event()
        self._show_work(tr("model.installing", lang, label=s.label, size=byte_size(s.size)), cancel=True)
        self.cancel_button.setToolTip(tr("install.cancel.tip", lang))
        self._sync_models()

        def work(report):
            def progress(stage, done, total):      # both stages on one bar: [download | join and check]
                report(INSTALL_STEPS * ((stage == ASSEMBLE) * total + done) // (2 * total), INSTALL_STEPS)
            return install(name, accept_terms=True, log=lambda _line: None, progress=progress,
                           cancelled=cancel.is_set)

        self.jobs.start(work, lambda path: self._model_installed(s, path, then),
                        lambda exc, tb: self._install_failed(s, exc, tb),
                        lambda done, total: self._install_progress(s, done, total))
        return True

    def _install_progress(self, s, done: int, total: int) -> None:
        """The bar over both stages; the label says which and how far, in bytes."""
        self.work_bar.setRange(0, total)
        self.work_bar.setValue(done)
        self.work_bar.setFormat("%p%")
        self.work_bar.setTextVisible(True)
        half = total / 2
        stage = "model.assembling" if done >= half else "model.downloading"
        bytes_done = round(s.size * (done - half if done >= half else done) / half)
        self.work_label.setText(tr(stage, self.session.lang, label=s.label, done=byte_size(bytes_done),
                                   total=byte_size(s.size)))

    def _model_installed(self, s, path, then) -> None:
        self._loading = self._install_cancel = None
        self._hide_work()
        self._sync_models()                               # the picker offers it now
        self.statusBar().showMessage(tr("model.installed", self.session.lang, label=s.label, path=str(path)), 15000)
        if then is not None:
            then()

    def _install_failed(self, s, exc, tb: str) -> None:
        """Cancelled: said in the status bar; any other failure is reported."""
        self._install_cancel = None
        if not isinstance(exc, InstallCancelled):
            self._work_failed(exc, tb)
            return
        self._loading = None
        self._hide_work()
        self._sync_models()
        self.statusBar().showMessage(tr("install.cancelled", self.session.lang, label=s.label), 15000)

    def _confirm_install(self, s) -> bool:
        """Ask (InstallDialog, modal). A model's terms are fetched while it is open."""
        dialog = self.install_dialog = InstallDialog(self, s, self.session.lang)
        closed = threading.Event()
        if s.terms is not None:
            shown = lambda: self.install_dialog is dialog         # not closed meanwhile
            self.jobs.start(lambda _report: fetch_terms(s.name, cancelled=closed.is_set),
                            lambda _path: shown() and dialog.show_terms(terms_html(s.name)),
                            lambda exc, tb: shown() and dialog.terms_unavailable(error_message(exc)))
        try:
            return dialog.exec() == InstallDialog.DialogCode.Accepted
        finally:
            closed.set()
            self.install_dialog = None
            dialog.deleteLater()

    def _ask_gguf_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, tr("action.open_gguf", self.session.lang), "",
                                              tr("gguf.filter", self.session.lang))
        return path

    def open_gguf(self) -> None:
        """Open a .gguf model file; a bad one (truncated, wrong magic, unsupported quantisation,
        missing tensors) is reported by name and the current model stays."""
        path = self.ask_gguf_path()
        if path:
            self.choose_model(str(path))

    # ------------------------------------------------------------------ background work
    def _choose_runner(self, model=None, small: bool = False) -> None:
        """A big model computes off the UI thread, and the teacher's changes to it are not
        compared with a full recompute (seconds per step: a slider would lag); a small one
        computes at once, every step checked."""
        model = self.session.requested_model if model is None else model
        big = not small and is_big(model)
        self.session.runner = self.runner if big else None
        self.session.set_check_recompute(not big)

    @property
    def working(self) -> bool:
        """Is something computing or loading in the background?"""
        return self.runner.busy or self._loading is not None

    def cancel_work(self) -> None:
        """Stop the running generation after its current step (it ends as "cancelled"), or the
        running install (nothing is written)."""
        self.runner.cancel()
        if self._install_cancel is not None:
            self._install_cancel.set()

    def _show_work(self, text: str, cancel: bool, delayed: bool = False) -> None:
        """The status bar's work widgets, at once or (`delayed`) only if the work is still
        running WORK_SHOWN_AFTER_MS later."""
        self.work_label.setText(text)
        self.work_bar.setRange(0, 0)                 # busy until the first step is reported
        self.work_bar.setTextVisible(False)
        self.cancel_button.setText(tr("work.cancel", self.session.lang))
        self.cancel_button.setToolTip(tr("work.cancel.tip", self.session.lang))
        if delayed:
            self._work_timer.start()
        else:
            self._set_work_visible(True, cancel)

    def _set_work_visible(self, visible: bool, cancel: bool = False) -> None:
        for widget in (self.work_label, self.work_bar):
            widget.setVisible(visible)
        self.cancel_button.setVisible(visible and cancel)
        self.cancel_button.setEnabled(visible and cancel)

    def _hide_work(self) -> None:
        self._work_timer.stop()
        self._set_work_visible(False)

    def _work_started(self) -> None:
        self._work_last = (0, time.perf_counter())      # (steps done, when)
        self._work_intervals: list[float] = []          # seconds per step of the last computed steps
        self._show_work(tr("work.computing", self.session.lang), cancel=True, delayed=True)

    def _work_progress(self, done: int, total: int) -> None:
        """The bar, and a live rate over the last steps. Steps taken from the previous Run
        (no forward pass) arrive within microseconds: they do not count."""
        lang = self.session.lang
        self.work_bar.setRange(0, max(1, total))
        self.work_bar.setValue(min(done, total))
        self.work_bar.setFormat(tr("work.progress", lang))
        self.work_bar.setTextVisible(True)
        now, (last_done, last_time) = time.perf_counter(), self._work_last
        if done > last_done and now - last_time >= REUSED_STEP_SECONDS:
            self._work_intervals = (self._work_intervals + [(now - last_time) / (done - last_done)])[-8:]
        self._work_last = (done, now)
        if self._work_intervals:
            rate = len(self._work_intervals) / sum(self._work_intervals)
            self.work_label.setText(tr("work.rate", lang, n=done, rate=rate))
        else:
            self.work_label.setText(tr("work.steps", lang, n=done))

    def _work_idle(self) -> None:
        self._hide_work()
        if self.runner.cancelled:
            self.statusBar().showMessage(tr("work.cancelled", self.session.lang,
                                            n=len(self.session.run.output_ids)), 15000)

    def _ask_params_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, tr("action.open_params", self.session.lang), "",
                                              tr("params.filter", self.session.lang))
        return path

    def open_params(self, path: str | None = None) -> None:
        """Load a parameter file (`path`, else the one the teacher picks); a bad one is
        reported by name and the current model stays."""
        path = path or self.ask_params_path()
        if not path:
            return
        try:
            model = load_params(path)
        except (ExplorerError, OSError) as exc:
            self.report_error(str(exc))
            return
        self._choose_runner(model=model)
        if self.guarded(self.session.set_model, model):
            self.statusBar().showMessage(tr("params.loaded", self.session.lang, path=path), 8000)
        else:
            self._choose_runner()

    # ------------------------------------------------------------------ lessons
    def _ask_lesson_path(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, tr("action.open_lesson", self.session.lang), "",
                                              tr("lesson.filter", self.session.lang))
        return path

    def open_lesson_file(self, path: str | None = None) -> None:
        """Open a lesson file (`path`: one a later start or the file manager handed over, else
        the one the teacher picks); a bad one is reported (file and key) and the current
        lesson stays."""
        path = path or self.ask_lesson_path()
        if not path:
            return
        try:
            lesson = load_lesson(str(path))
        except (ExplorerError, OSError) as exc:
            self.report_error(str(exc))
            return
        self.switch_lesson(lesson)

    def switch_lesson(self, lesson: Lesson) -> bool:
        """Play `lesson` in this window's session (every panel follows); False if it failed.
        A lesson on a real model is prepared off the UI thread (its model loaded, its
        scenarios run), as the model picker loads a model, and opens when it is ready; the
        latest lesson asked for wins."""
        self._lesson_request = lesson
        if not lesson.installed_models or lesson.missing_models():   # at once (a missing model: by name)
            if not self.guarded(lesson.play_in, self.session):
                self._check_lesson_action()
                return False
            self._lesson_opened(lesson)
            return True
        self._loading = lesson.installed_models[0]
        self._show_work(tr("lesson.opening", self.session.lang, title=lesson.title_in(self.session.lang)),
                        cancel=False)
        self._sync_models()
        session = self.session
        self.jobs.start(lambda _report: lesson.prepare_play(session),
                        lambda prepared: self._lesson_prepared(lesson, prepared), self._work_failed)
        return True

    def install_and_open(self, lesson: Lesson) -> bool:
        """Open `lesson`, installing first each real model it runs on that is missing (one
        after the other, each once the teacher agrees); False if nothing started."""
        missing = lesson.missing_models()
        if not missing:
            return self.switch_lesson(lesson)
        return self.install_model(missing[0], then=lambda: self.install_and_open(lesson))

    def _lesson_prepared(self, lesson: Lesson, prepared: tuple) -> None:
        self._loading = None
        self._hide_work()
        if self._lesson_request is lesson:               # not overtaken by another choice
            self.session.install_play(prepared, content=lesson)
            self._lesson_opened(lesson)
        self._sync_models()

    def _lesson_opened(self, lesson: Lesson) -> None:
        self.lesson = lesson
        self.statusBar().showMessage(tr("lesson.opened", self.session.lang,
                                        title=lesson.title_in(self.session.lang)), 8000)

    def show_start_page(self) -> StartPage:
        """The list of lessons, non-blocking (open(), not exec())."""
        if self.start_page is not None:
            self.start_page.close()
            self.start_page.deleteLater()
        page = self.start_page = StartPage(self)
        page.open()
        return page

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
        self.show_start_page()

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
        self._hide_work()                                       # no progress bar or Cancel button
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
        self._check_lesson_action()
        for lid, action in (self._lesson_actions or {}).items():
            action.setText(self._lessons_listed[lid].title_in(lang))
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

