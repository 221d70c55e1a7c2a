"""Where the panels sit: a dock per panel, the desk and presentation layouts, a panel popped
out full screen, the docks a lesson frame points to marked, and the window kept within
its screen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (QDockWidget, QFrame, QHBoxLayout, QLabel, QMainWindow, QScrollArea, QStyle,
                               QToolButton, QWidget)

from ...i18n import tr
from ...session import Session
from ..settings import Settings
from ..theme import text_on

PRESENTATION_SCALE = 1.4      # presentation mode enlarges type by this factor on a 1080-line screen,
PRESENTATION_LINES = 1080     # and in proportion to the screen's height on others: the same size on
                              # the wall, and the presentation layout fits a 768-line projector too
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
                 compact: bool, apply_font_size: Callable[[], None]):
        super().__init__(window)
        self.window, self.panels, self.session, self.settings = window, panels, session, settings
        self.compact, self.apply_font_size = compact, apply_font_size
        self.presenting = False
        self.docks = {pid: _dock(window, panel) for pid, panel in panels.items()}
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
        lesson (glossary and beam tree as its tabs) in the upper row; the sampling controls,
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
        # the lesson, its glossary and the beam tree: tabs in a third column of the top area
        w.splitDockWidget(d["kv"], d["lesson"], Qt.Orientation.Horizontal)
        w.tabifyDockWidget(d["lesson"], d["glossary"])
        w.tabifyDockWidget(d["glossary"], d["beam"])
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
        """The projector layout: fewer, larger panels for the larger type. The player across
        the top; on the left the KV cache (wide: more positions in view) above distribution
        | attention (tabs: no lesson frame points to both); on the right the timeline, the
        explanation (lesson, glossary and beam tree as its tabs) and the sampling controls,
        so a slider and the bars it moves are both in sight. Each column's panels fit a
        1080-pixel screen at the larger type, in Chinese too. The panels the current frame
        points to come forward."""
        w, d = self.window, self.docks
        v, h = Qt.Orientation.Vertical, Qt.Orientation.Horizontal
        for dock in d.values():                  # from whatever the teacher made of the layout
            dock.setFloating(False)
            w.removeDockWidget(dock)
        w.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, d["player"])
        w.splitDockWidget(d["player"], d["kv"], v)
        w.splitDockWidget(d["kv"], d["timeline"], h)
        w.splitDockWidget(d["kv"], d["distribution"], v)
        w.splitDockWidget(d["timeline"], d["explanation"], v)
        w.splitDockWidget(d["explanation"], d["controls"], v)
        # tabs after the splits: a dock split off a tabbed one would join its tabs instead
        for first, second in (("distribution", "attention"), ("explanation", "lesson"),
                              ("lesson", "glossary"), ("glossary", "beam")):
            w.tabifyDockWidget(d[first], d[second])
        for dock in d.values():
            dock.show()
        for pid in ("distribution", "explanation", *self.session.frame.panels):
            d[pid].raise_()
        screen = w.screen().availableGeometry()
        width, height = screen.width(), screen.height()
        w.resizeDocks([d["kv"], d["timeline"]], [int(0.63 * width), int(0.37 * width)], h)
        w.resizeDocks([d["player"], d["kv"], d["distribution"]],
                      [int(0.12 * height), int(0.36 * height), int(0.52 * height)], v)
        w.resizeDocks([d["timeline"], d["explanation"], d["controls"]],
                      [int(0.28 * height), int(0.32 * height), int(0.28 * height)], v)

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
        and a highlighted, bold title bar; a tabbed one is raised."""
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
        if self.presenting:
            for pid, dock in self.docks.items():
                if _popped_out(dock):
                    self.panel_full_screen(pid)        # a popped-out panel goes back first
            self._desk_state, self._desk_geometry = w.saveState(), w.saveGeometry()
            self._desk_rect = w.geometry()
            w.showFullScreen()
            self.apply_font_size()
            if w.restoreState(self.settings["presentation_state"]):
                for pid in self.session.frame.panels:
                    self.docks[pid].raise_()
            else:
                self.arrange_for_presentation()
        else:
            self.settings["presentation_state"] = w.saveState()
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
