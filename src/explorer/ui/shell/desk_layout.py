"""Where the panels sit: a dock per panel, the desk and presentation layouts (presentation
mode's chrome and title strip in presentation.py), a panel popped out full screen, the docks
a lesson frame points to marked, and the window kept within its screen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (QDockWidget, QFrame, QHBoxLayout, QLabel, QMainWindow, QScrollArea, QStyle,
                               QToolButton, QWidget)

from ...i18n import tr
from ...session import Session
from ...session.changes import badge_text
from ...session.narration import frame_title
from ...session.panels import DEFAULT_SLIDE_PANELS
from ..settings import Settings
from ..theme import THEMES, text_on
from .presentation import Chrome, FrameTitleBar

PRESENTATION_SCALE = 1.4      # presentation mode enlarges type by this factor on a 1080-line screen,
PRESENTATION_LINES = 1080     # and in proportion to the screen's height on others: the same size on
                              # the wall, and the presentation layout fits a 768-line projector too
PRESENTED = ("distribution", "attention", "kv", "beam", "lens", "transcript", "versus")   # presentation mode's large place, as tabs
MAIN_SHARE = 0.68             # of the width: presentation mode's large place, the rest a column beside it
SIDE_COLUMN = {"timeline": 0.3, "explanation": 0.4, "controls": 0.3}    # that column, top to bottom
LOWER_ROW = {"controls": 330, "attention": 560, "distribution": 700, "explanation": 360}   # desk widths, px
COMPACT_WIDTH = 1700          # px: a narrower screen or slide gets the compact desk layout (`arrange`)
FIT_AFTER_MS = 150            # a window relaid out this long ago checks it still fits its screen
MATTERS_MARK = "● "           # dock titles of the panels a lesson frame points to (text, not colour alone)


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


def _dock(window: QMainWindow, panel) -> QDockWidget:
    dock = QDockWidget(window)
    dock.setObjectName(f"dock-{panel.panel_id}")
    if panel.panel_id == "controls":          # a long form: scroll rather than clip at large type
        scroller = QScrollArea()
        scroller.setWidgetResizable(True)
        scroller.setFrameShape(QFrame.Shape.NoFrame)
        scroller.setWidget(panel)
        scroller.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroller.setMinimumWidth(panel.sizeHint().width() + scroller.verticalScrollBar().sizeHint().width())
        dock.setWidget(scroller)
    else:
        dock.setWidget(panel)
    dock.setProperty("matters", False)
    dock.setTitleBarWidget(DockTitle(dock))
    dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                     | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
    return dock


def _popped_out(dock) -> bool:
    return dock.isFloating() and dock.isFullScreen()


class DeskLayout(QObject):
    """The docks of `window` (one per panel, in `docks`) and their layouts. Presentation mode
    is full screen with larger type (`apply_font_size` reads `presenting`); `settings`
    remember the presentation layout."""

    # a check that the window fits its screen ran and changed nothing: its size is settled
    # until the next change of type, language, run, frame or screen
    fit_settled = Signal()
    presenting_changed = Signal(bool)

    def __init__(self, window: QMainWindow, panels: dict, session: Session, settings: Settings,
                 compact: bool, apply_font_size: Callable[[], None],
                 reveal_keys: Callable[[], list[QKeySequence]]):
        """reveal_keys: the keys that bring the chrome back in presentation mode (`Chrome`)."""
        super().__init__(window)
        self.window, self.panels, self.session, self.settings = window, panels, session, settings
        self.compact, self.apply_font_size = compact, apply_font_size
        self.presenting = False
        self.docks = {pid: _dock(window, panel) for pid, panel in panels.items()}
        self.chrome = Chrome(window, self.docks["player"], reveal_keys)
        self.title_bar: FrameTitleBar | None = None    # made on entering presentation mode
        self._theme = THEMES["light"]                  # the window's, as `mark_docks` last had it
        self._spread_pending = False   # the presentation layout waits for the full-screen size
        self._spread_timer = QTimer(self, singleShot=True, interval=0)
        self._spread_timer.timeout.connect(lambda: self.presenting and self._spread_presentation())
        window.installEventFilter(self)
        self.arrange()
        self.default_state = window.saveState()
        self._desk_state = self.default_state      # the layout outside presentation mode
        self._desk_geometry = window.saveGeometry()   # and the window's place, taken on entering it
        self._desk_rect = window.geometry()
        # leaving presentation mode restores the desk layout once the smaller type is applied
        self._desk_timer = QTimer(self, singleShot=True, interval=0)
        self._desk_timer.timeout.connect(self._restore_desk)
        # what may change the panels' minimum sizes (the type, the language, a run, a frame,
        # the screen) asks the window to check, once things settle, that it fits its screen
        self._fit_timer = QTimer(self, singleShot=True, interval=FIT_AFTER_MS)
        self._fit_timer.timeout.connect(self.fit_to_screen)
        self._pushed_past_screen = False
        # Escape puts a popped-out panel back, else leaves presentation mode; it is taken from
        # the widgets only then (one shortcut: a floating dock shares its window's shortcuts,
        # and two for one key would both be ambiguous and do nothing)
        self.escape = QShortcut(QKeySequence("Escape"), window, activated=self._escape_pressed)
        self.escape.setEnabled(False)

    def arrange(self) -> None:
        """The desk layout: the player across the top; the timeline, the KV cache and the
        lesson (glossary, beam tree, logit lens, transcript and A/B as its tabs) in the upper row; the sampling controls,
        attention, distribution and explanation in the lower row. Compact (a narrow screen),
        attention and distribution are tabs of one dock, so the chart and the explanation
        keep a readable width."""
        w, d = self.window, self.docks
        for corner, area in ((Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.TopDockWidgetArea),
                             (Qt.Corner.TopRightCorner, Qt.DockWidgetArea.TopDockWidgetArea),
                             (Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea),
                             (Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)):
            w.setCorner(corner, area)
        w.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, d["player"])
        w.splitDockWidget(d["player"], d["timeline"], Qt.Orientation.Vertical)
        w.splitDockWidget(d["timeline"], d["kv"], Qt.Orientation.Horizontal)
        # the lesson, its glossary, the beam tree, the logit lens, the transcript and A/B: tabs in a third column of the top area
        w.splitDockWidget(d["kv"], d["lesson"], Qt.Orientation.Horizontal)
        w.tabifyDockWidget(d["lesson"], d["glossary"])
        w.tabifyDockWidget(d["glossary"], d["beam"])
        w.tabifyDockWidget(d["beam"], d["lens"])
        w.tabifyDockWidget(d["lens"], d["transcript"])
        w.tabifyDockWidget(d["transcript"], d["versus"])
        # the lower row is one dock area: with the central widget hidden, docks in the left or
        # right area next to it drift by a few pixels on every relayout (any label change)
        w.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, d["controls"])
        row = self._lower_row()
        for left, right in zip(row, row[1:]):
            w.splitDockWidget(d[left], d[right], Qt.Orientation.Horizontal)
        if self.compact:
            w.tabifyDockWidget(d["distribution"], d["attention"])   # after the splits
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
        w, d, row = self.window, self.docks, self._lower_row()
        w.resizeDocks([d[pid] for pid in row], [LOWER_ROW[pid] for pid in row], Qt.Orientation.Horizontal)
        w.resizeDocks([d["timeline"], d["kv"], d["lesson"]], [800, 620, 500], Qt.Orientation.Horizontal)
        w.resizeDocks([d["player"], d["timeline"], d["attention"]], [90, 340, 520], Qt.Orientation.Vertical)

    def arrange_for_presentation(self) -> None:
        """The projector layout: the panel the frame is about owns the screen. The large
        place on the left holds the distribution, attention, the KV cache, the beam tree, the logit lens, the transcript and
        A/B as tabs (`present_frame` brings the frame's one forward); the column on the right the
        timeline, the explanation (lesson and glossary as its tabs) and the sampling
        controls, so a slider and the bars it moves are both in sight. The player, at the
        bottom, is chrome: hidden until called for (`Chrome`)."""
        w, d = self.window, self.docks
        v, h = Qt.Orientation.Vertical, Qt.Orientation.Horizontal
        for dock in d.values():                  # from whatever the teacher made of the layout
            dock.setFloating(False)
            w.removeDockWidget(dock)
        big = d[PRESENTED[0]]
        w.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, big)
        w.splitDockWidget(big, d["timeline"], h)
        w.splitDockWidget(d["timeline"], d["explanation"], v)
        w.splitDockWidget(d["explanation"], d["controls"], v)
        w.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, d["player"])
        # tabs after the splits: a dock split off a tabbed one would join its tabs instead
        for first, second in (*zip(PRESENTED, PRESENTED[1:]), ("explanation", "lesson"), ("lesson", "glossary")):
            w.tabifyDockWidget(d[first], d[second])
        for dock in d.values():
            dock.show()
        d["explanation"].raise_()
        self._spread_pending = True
        self._spread_presentation()
        self.present_frame()

    def _spread_presentation(self) -> None:
        """The presentation layout's proportions at the window's size; again when the window
        reaches its full-screen size (which a window manager may give it only later)."""
        w, d = self.window, self.docks
        size = w.size()
        w.resizeDocks([d[PRESENTED[0]], d["timeline"]], [int(MAIN_SHARE * size.width()),
                                                         int((1 - MAIN_SHARE) * size.width())], Qt.Orientation.Horizontal)
        w.resizeDocks([d[pid] for pid in SIDE_COLUMN], [int(share * size.height()) for share in SIDE_COLUMN.values()],
                      Qt.Orientation.Vertical)
        self._spread_pending = size != w.screen().geometry().size()

    def eventFilter(self, obj, event) -> bool:
        if (obj is self.window and event.type() == QEvent.Type.Resize and self.presenting
                and self._spread_pending):
            self._spread_timer.start()            # once the layout has the new size
        return False

    def main_panel(self) -> str | None:
        """The panel presentation mode gives the large place on this frame: the first the frame
        points to (naming none, the first its kind shows on a slide) that belongs there and
        has something to show, else the first there that has (None: none has)."""
        frame = self.session.frame
        named = [pid for pid in (*frame.panels, *DEFAULT_SLIDE_PANELS[frame.kind]) if pid in PRESENTED]
        return next((pid for pid in (*named, *PRESENTED) if self.panels[pid].has_content()), None)

    def present_frame(self) -> None:
        """Presentation mode on the current frame: a panel with nothing to show (attention for
        a model without layers, the cache before a forward) leaves the screen, one that has
        comes back; the frame's main panel in front; its title across the top; the chrome as
        the teacher asked."""
        for pid, dock in self.docks.items():
            wanted = self.panels[pid].has_content()
            if pid != "player" and dock.isHidden() == wanted:      # the player is the chrome's
                dock.setVisible(wanted)
        self.chrome.sync()
        main = self.main_panel()
        if main is not None:
            self.docks[main].raise_()
        s = self.session
        badge = badge_text(s.frame.changed, s.lang)
        self._title_bar().show_title(frame_title(s.frame, s.run, s.model.vocab, s.lang), badge, self._theme.error)

    def _title_bar(self) -> FrameTitleBar:
        """The strip with the frame's title, on its own row under the prompt bar."""
        if self.title_bar is None:
            self.title_bar = FrameTitleBar(self.window)
            self.window.addToolBarBreak(Qt.ToolBarArea.TopToolBarArea)
            self.window.addToolBar(Qt.ToolBarArea.TopToolBarArea, self.title_bar)
        if self.title_bar.isHidden() == self.presenting:
            self.title_bar.setVisible(self.presenting)
        return self.title_bar

    def reset(self) -> None:
        """The default layout of the mode shown, every dock back in the window."""
        self._desk_state = self.default_state
        if self.presenting:
            self.arrange_for_presentation()
        else:
            self.window.restoreState(self.default_state)
            for dock in self.docks.values():
                if dock.isFloating():
                    dock.setFloating(False)

    def remember(self) -> None:
        """Both layouts into the settings; the next start opens at the desk."""
        w, st = self.window, self.settings
        if self.presenting:
            st["presentation_state"] = w.saveState()
            st["geometry"], st["window_state"] = self._desk_geometry, self._desk_state
        else:
            st["geometry"], st["window_state"] = w.saveGeometry(), w.saveState()

    # ------------------------------------------------------------------ the screen
    def check_fit(self) -> None:
        """Check, once things settle, that the window fits its screen."""
        self._fit_timer.start()

    def fit_to_screen(self) -> None:
        """The window never asks for more height than its screen has. When the panels'
        minimums add up to more (a 768-line screen, Chinese, many sampling stages), the
        distribution chart, whose rows can get shorter, asks for less; when there is room
        again, it asks for more, up to what its content needs. A window its minimum had made
        taller than the screen is brought back. Only on screen: an export sizes its window
        to the slide."""
        w = self.window
        if not w.isVisible() or w.testAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen):
            self.fit_settled.emit()
            return
        room = self.screen_room()
        minimum = w.minimumSizeHint().height()
        excess = minimum - room
        if excess > 0 and w.height() <= minimum:
            self._pushed_past_screen = True     # by its minimum, not by the teacher's hand
        if excess:
            chart = self.panels["distribution"].chart
            if chart.set_height_cap(max(0, chart.minimumSizeHint().height() - excess)):
                self._fit_timer.start()         # once the layout took it in: check again
        if self._pushed_past_screen and not w.isFullScreen():   # as far back as it now can
            if w.height() > max(minimum, room):
                w.resize(w.width(), max(minimum, room))
            self._pushed_past_screen = excess > 0
        if not self._fit_timer.isActive():
            self.fit_settled.emit()

    def screen_room(self) -> int:
        """The height the window may have on its screen: all of it in full screen, else the
        available height less the window manager's title bar."""
        w = self.window
        screen = w.screen()
        if w.isFullScreen():
            return screen.geometry().height()
        return screen.availableGeometry().height() - (w.frameGeometry().height() - w.height())

    # ------------------------------------------------------------------ frames' hints
    def mark_docks(self, theme) -> None:
        """The docks of the panels the current lesson frame points to: "● " before the title
        and a highlighted, bold title bar; a tabbed one is raised. In presentation mode, the
        frame presented (`present_frame`)."""
        self._theme = theme
        matters = set(self.session.frame.panels)
        lang = self.session.lang
        for pid, dock in self.docks.items():
            on = pid in matters
            title = (MATTERS_MARK if on else "") + tr(self.panels[pid].title_key, lang)
            if dock.windowTitle() != title:
                dock.setWindowTitle(title)
            dock.titleBarWidget().show_title(title, on, theme)
            if bool(dock.property("matters")) != on:
                dock.setProperty("matters", on)
                if on and self.window.tabifiedDockWidgets(dock) and dock.visibleRegion().isEmpty():
                    dock.raise_()
        if self.presenting:
            self.present_frame()

    def show_frame_tabs(self) -> None:
        """In every group of tabbed panels, the one the current frame points to (the first
        it names), else the group's first panel: the same tabs for the same frame whatever
        was shown before (an exported frame looks the same alone and in a range)."""
        matters, seen = self.session.frame.panels, set()
        for pid, dock in self.docks.items():                   # PANELS order
            if pid in seen:
                continue
            tabbed = self.window.tabifiedDockWidgets(dock)
            group = [pid] + [other for other, d in self.docks.items() if d in tabbed]
            seen.update(group)
            if tabbed:
                self.docks[next((p for p in matters if p in group), pid)].raise_()

    # ------------------------------------------------------------------ presentation, full screen
    def presentation_scale(self) -> float:
        """How much presentation mode enlarges the type on this window's screen."""
        return PRESENTATION_SCALE * self.window.screen().availableGeometry().height() / PRESENTATION_LINES

    def toggle_presentation(self) -> None:
        """Full screen, larger type and the presentation layout (as the teacher last left it,
        or `arrange_for_presentation`); leaving puts the desk layout back."""
        w = self.window
        self.presenting = not self.presenting
        self.presenting_changed.emit(self.presenting)
        for panel in self.panels.values():
            panel.set_presenting(self.presenting)
        if self.presenting:
            for pid, dock in self.docks.items():
                if _popped_out(dock):
                    self.panel_full_screen(pid)        # a popped-out panel goes back first
            self._desk_state, self._desk_geometry = w.saveState(), w.saveGeometry()
            self._desk_rect = w.geometry()
            w.showFullScreen()
            self.apply_font_size()
            self.chrome.start()
            if w.restoreState(self.settings["presentation_state"]):
                self.present_frame()
            else:
                self.arrange_for_presentation()
        else:
            self.settings["presentation_state"] = w.saveState()
            self._spread_pending = False
            self.chrome.stop()
            self._title_bar()
            w.showNormal()
            w.setGeometry(self._desk_rect)           # where and how large it was at the desk
            self.apply_font_size()
            # once the widgets have the smaller type (posted events): restored under the larger
            # one, docks would keep heights sized for it
            self._desk_timer.start()
        self._sync_escape()

    def _restore_desk(self) -> None:
        if not self.presenting:                 # F11 may have been pressed again meanwhile
            self.window.restoreState(self._desk_state)

    def panel_full_screen(self, panel_id: str) -> None:
        """Pop one panel out to fill the screen; Escape (or the same action) puts it back."""
        dock = self.docks[panel_id]
        if _popped_out(dock):
            dock.showNormal()
            dock.setFloating(False)
            self.window.activateWindow()          # keys (Escape, arrows) go to the window again
        else:
            dock.setFloating(True)
            dock.showFullScreen()
        self._sync_escape()

    def _escape_pressed(self) -> None:
        popped = next((pid for pid, dock in self.docks.items() if _popped_out(dock)), None)
        if popped is not None:
            self.panel_full_screen(popped)
        elif self.presenting:
            self.toggle_presentation()

    def _sync_escape(self) -> None:
        self.escape.setEnabled(self.presenting or any(_popped_out(d) for d in self.docks.values()))
