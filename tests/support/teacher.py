"""What a teacher does with the window, as input events (keys, typed text, clicks where a
thing is drawn), and what a teacher reads on it: label texts, painted text, tooltips, colours.
Shared by the UI tests (imported as a plain module from tests/)."""

import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import (QColor, QHelpEvent, QImage, QKeyEvent, QMouseEvent, QPainter, QPaintDevice, QPaintEngine, QRegion,
                           QTextCharFormat)
from PySide6.QtWidgets import QApplication, QLabel, QToolTip, QWidget

from explorer.ui.panels.distribution_chart import BAR_WIDTH

CTRL = Qt.KeyboardModifier.ControlModifier
CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


def type_text(widget, text: str) -> None:
    """Key presses that carry `text`, as a keyboard or input method delivers them (QTest's
    keyClicks only knows ASCII)."""
    for key_type in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        QApplication.sendEvent(widget, QKeyEvent(key_type, Qt.Key.Key_unknown, Qt.KeyboardModifier.NoModifier, text))


def enter_prompt(qtbot, window, text: str) -> None:
    """Click into the prompt box, replace its text with `text` and press Return."""
    box = window.prompt_bar.edit
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    box.setFocus()
    qtbot.keyClick(box, Qt.Key.Key_A, CTRL)            # select all
    qtbot.keyClick(box, Qt.Key.Key_Delete)
    type_text(box, text)
    qtbot.keyClick(box, Qt.Key.Key_Return)


def click_at(qtbot, widget, point: QPointF) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton, pos=QPoint(round(point.x()), round(point.y())))


def hover_at(widget, point: QPoint) -> None:
    """The mouse moved over `widget` to `point` with no button held, delivered to it alone:
    the global pointer (which window it is over, a button some earlier test left pressed)
    plays no part."""
    at = QPointF(point)
    QApplication.sendEvent(widget, QMouseEvent(QEvent.Type.MouseMove, at, QPointF(widget.mapToGlobal(point)),
                                               Qt.MouseButton.NoButton, Qt.MouseButton.NoButton,
                                               Qt.KeyboardModifier.NoModifier))


def click_chip(qtbot, timeline, index: int) -> None:
    """Click the timeline's chip `index` (0 = Prefill, -1 = the stop chip) where it is drawn."""
    strip = timeline.strip
    click_at(qtbot, strip, strip.chip_rects()[index].center())


def click_bar(qtbot, distribution, row: int, column: int) -> None:
    """Click a distribution bar (row of the chart, candidate column) where it is drawn."""
    chart = distribution.chart
    click_at(qtbot, chart, chart.bar_center(row, column))


def shown_texts(widget) -> list[str]:
    """The text of every label `widget` shows (hidden ones left out), as a reader sees them."""
    return [label.text() for label in widget.findChildren(QLabel) if label.isVisibleTo(widget) and label.text()]


def shows(widget, fragment: str) -> bool:
    """Does one of the labels `widget` shows hold `fragment`?"""
    return any(fragment in text for text in shown_texts(widget))


def label_showing(widget, fragment: str) -> QLabel:
    """The one label of `widget` on show whose text holds `fragment`."""
    (label,) = [label for label in widget.findChildren(QLabel)
                if label.isVisibleTo(widget) and fragment in label.text()]
    return label


def tooltip_at(widget, point: QPoint) -> str:
    """The tooltip `widget` shows when the mouse rests at `point` (empty: none)."""
    for tip in QApplication.topLevelWidgets():     # one still up (QToolTip.hideText takes 300 ms)
        if tip.inherits("QTipLabel"):
            tip.hide()
    QApplication.sendEvent(widget, QHelpEvent(QEvent.Type.ToolTip, point, widget.mapToGlobal(point)))
    return QToolTip.text() if QToolTip.isVisible() else ""


def main_colour(picture: QImage, rect: QRect) -> QColor:
    """The colour covering most of `rect` in `picture` (a widget's grab)."""
    rect = rect.intersected(picture.rect())
    if rect.isEmpty():
        return QColor()
    counts = Counter(picture.pixel(x, y) for x in range(rect.left(), rect.right() + 1)
                     for y in range(rect.top(), rect.bottom() + 1))
    return QColor.fromRgb(counts.most_common(1)[0][0])


@dataclass(frozen=True)
class Drawn:
    text: str
    box: QRectF         # where it is drawn, in the widget's pixels
    point_size: float   # its font's size

    def center(self) -> QPoint:
        return self.box.center().toPoint()


class _TextEngine(QPaintEngine):
    """Keeps the text painted through it (and draws nothing)."""

    def __init__(self):
        super().__init__(QPaintEngine.PaintEngineFeature.AllFeatures)
        self.drawn: list[Drawn] = []

    def drawTextItem(self, p, item) -> None:
        transform = self.painter().transform()
        box = transform.mapRect(          # from the baseline's start; upright text stands up
            QRectF(p.x(), p.y() - item.ascent(), item.width(), item.ascent() + item.descent()))
        last = self.drawn[-1] if self.drawn else None
        if last and not transform.isRotating() and abs(last.box.bottom() - box.bottom()) < 4 and abs(last.box.right() - box.left()) < 0.5:
            self.drawn[-1] = Drawn(last.text + item.text(), last.box.united(box), last.point_size)  # two fonts
        else:
            self.drawn.append(Drawn(item.text(), box, item.font().pointSizeF()))

    def begin(self, _device) -> bool:
        return True

    def end(self) -> bool:
        return True

    def updateState(self, _state) -> None:
        pass

    def drawPath(self, _path) -> None:
        pass

    def drawPolygon(self, *_args) -> None:
        pass

    def drawPixmap(self, *_args) -> None:
        pass

    def drawImage(self, *_args) -> None:
        pass

    def type(self):
        return QPaintEngine.Type.User


class _TextDevice(QPaintDevice):
    def __init__(self, size):
        super().__init__()
        self.size, self.engine = size, _TextEngine()

    def paintEngine(self):
        return self.engine

    def metric(self, metric) -> int:
        m = QPaintDevice.PaintDeviceMetric
        dpi = QApplication.primaryScreen().logicalDotsPerInch()
        return {m.PdmWidth: self.size.width(), m.PdmHeight: self.size.height(), m.PdmDpiX: dpi, m.PdmDpiY: dpi,
                m.PdmPhysicalDpiX: dpi, m.PdmPhysicalDpiY: dpi, m.PdmDepth: 32, m.PdmNumColors: 2 ** 31 - 1,
                m.PdmDevicePixelRatio: 1, m.PdmDevicePixelRatioScaled: 1,
                m.PdmWidthMM: self.size.width(), m.PdmHeightMM: self.size.height()}.get(metric, 0)


def drawn_texts(widget: QWidget) -> list[Drawn]:
    """Every line of text `widget` paints itself (its child widgets left out), in the order
    painted: what a reader sees of a widget that paints its words rather than holding labels."""
    device = _TextDevice(widget.size())
    widget.render(device, QPoint(), QRegion(), QWidget.RenderFlag(0))
    return device.engine.drawn


def texts_within(widget: QWidget, rect: QRect) -> str:
    """The lines of text `widget` paints inside `rect`, top to bottom, one a line."""
    inside = [d for d in drawn_texts(widget) if rect.contains(d.center())]
    return "\n".join(d.text for d in sorted(inside, key=lambda d: d.box.top()))


# ---------------------------------------------------------------- the KV cache grid, as drawn

def kv_cell_rect(panel, row: int, col: int) -> QRect:
    """Where the KV grid draws cell (row, col) (row -1: the column's header), in its viewport's
    pixels: the grid's label column, header and cell sizes, scrolled as the user sees it."""
    view = panel.grid_view()
    x = view.label_w + col * view.cell_w - view.horizontalScrollBar().value()
    if row < 0:
        return QRect(x, 0, view.cell_w, view.header_h)
    y = view.header_h + row * view.cell_h - view.verticalScrollBar().value()
    return QRect(x, y, view.cell_w, view.cell_h)


def kv_states(panel, row: int = 0) -> list[str]:
    """The state each position's cell in `row` shows by its colour: processed and pending
    filled with their colours, selected left empty (the background); None: out of view."""
    theme, picture = panel.theme, panel.grid_view().viewport().grab().toImage()
    names = {QColor(theme.processed).rgb(): "processed", QColor(theme.background).rgb(): "selected",
             QColor(theme.pending).rgb(): "pending"}
    inner = [kv_cell_rect(panel, row, col).adjusted(4, 4, -4, -4) for col in range(panel.session.frame.visible_count)]
    return [names.get(main_colour(picture, rect).rgb(), "?") if picture.rect().contains(rect) else None
            for rect in inner]


def kv_cell_text(panel, row: int, col: int) -> str:
    """The lines drawn in a KV grid cell (row -1: the column's header, its token and position)."""
    return texts_within(panel.grid_view().viewport(), kv_cell_rect(panel, row, col))


def kv_row_cells(panel, row: int) -> list[str]:
    """Every position's cell text in `row`, read while scrolling along the row as a reader does."""
    view = panel.grid_view()
    bar, start = view.horizontalScrollBar(), view.horizontalScrollBar().value()
    cells = []
    for col in range(panel.session.frame.visible_count):
        bar.setValue(col * view.cell_w)
        cells.append(kv_cell_text(panel, row, col))
    bar.setValue(start)
    return cells


def kv_column_heads(panel) -> list[str]:
    """Every position's header as drawn: "token·position"."""
    return [kv_cell_text(panel, -1, col).replace("\n", "·") for col in range(panel.session.frame.visible_count)]


def kv_row_heads(panel, every: bool = False) -> list[str]:
    """The row labels drawn left of the cells ("L0 K", "L0 V", ...), those in view; `every`:
    all of them, read while scrolling down the grid page by page as a reader does."""
    view = panel.grid_view()
    bar, start = view.verticalScrollBar(), view.verticalScrollBar().value()
    heads = []
    step = max(1, bar.pageStep() - view.header_h - view.cell_h)     # the rows shown below the header
    for value in range(0, bar.maximum() + step, step) if every else (start,):
        bar.setValue(value)
        heads += [d.text for d in drawn_texts(view.viewport()) if d.text not in heads
                  and re.match(r"L\d+ [KV]\b", d.text) and d.box.center().y() > view.header_h]
    bar.setValue(start)
    return heads


def kv_written(panel) -> list[int]:
    """The positions outlined as written by this forward: the accent's thick line runs along
    the top of their headers."""
    picture, accent = panel.grid_view().viewport().grab().toImage(), QColor(panel.theme.color("accent")).rgb()
    return [col for col in range(panel.session.frame.visible_count)
            if main_colour(picture, kv_cell_rect(panel, -1, col).adjusted(6, 2, -6, 0).intersected(
                QRect(0, 2, picture.width(), 3))).rgb() == accent]


# ---------------------------------------------------------------- the distribution chart, as drawn

def chart_rows(panel) -> dict:
    """Stage ("raw", a stage's name, "final") -> the row of bars the distribution chart draws:
    its `values` (the probability of each column), the `labels` on the bars, the `names` under
    them, its `title`; empty while the panel shows a message instead of the chart."""
    return {row.name: row for row in panel.chart.rows} if panel.chart.isVisibleTo(panel) else {}


def painted_bar_height(chart, row: int, column: int) -> int:
    """How tall the bar is painted, in pixels: up from the row's axis to the background."""
    image = chart.grab().toImage()
    background = image.pixelColor(2, 2)
    foot = chart.bar_center(row, column)                        # 3 px above the axis
    column_width = chart.bar_center(row, 1).x() - chart.bar_center(row, 0).x()
    x, top = round(foot.x() - column_width * BAR_WIDTH / 2) + 3, round(foot.y())
    while image.pixelColor(x, top - 1) != background:
        top -= 1
    return round(foot.y()) + 3 - top


def first_row_height(chart) -> float:
    """The first row's bar area runs from the chart's top to its axis."""
    return chart.bar_center(0, 0).y() + 3


def chart_ruler(panel):
    """The ruler drawn under the bars (`u`, the intervals `ids`, `lo`, `hi`, the `note` above
    it, the id `chosen` drawn in the chosen colour), or None while no chart is shown."""
    return panel.chart.ruler if panel.chart.isVisibleTo(panel) else None


def column_names(panel) -> list[str]:
    """The name under each column of bars: a token's piece, "other (n)" for the rest."""
    rows = list(chart_rows(panel).values())
    return [next((row.names[c] for row in reversed(rows) if row.names[c]), "")
            for c in range(len(rows[0].values))] if rows else []


def column_ids(panel) -> list[int]:
    """The token each column of bars stands for, read from its name (the "other" column left out)."""
    vocab = panel.session.model.vocab
    names = {vocab.display_piece(i): i for i in range(len(vocab))}
    return [names[name] for name in column_names(panel) if name in names]


def marked_id(panel) -> int | None:
    """The token drawn as the chosen one (None before the pick is shown)."""
    ruler = chart_ruler(panel)
    return None if ruler is None else ruler.chosen


# ---------------------------------------------------------------- the timeline, as drawn

def table_texts(table) -> list[list[str]]:
    """Every cell's text of a table view, row by row."""
    model = table.model()
    return [[model.index(r, c).data() or "" for c in range(model.columnCount())] for r in range(model.rowCount())]


def chips_in_view(strip) -> list[str]:
    """The step chips drawn wholly inside the timeline's strip, left to right ("›" and the
    "…" mark over slid-out chips left out)."""
    return [d.text for d in drawn_texts(strip)
            if d.text not in ("›", "…") and d.box.left() >= 0 and d.box.right() <= strip.width()]


def current_chip(strip) -> str | None:
    """The chip filled in the current step's colour: the one chip whose colour no other shares."""
    picture = strip.grab().toImage()
    chips = [d for d in drawn_texts(strip) if d.text not in ("›", "…") and d.box.right() <= strip.width()]
    colours = [main_colour(picture, d.box.toAlignedRect().adjusted(-6, 0, 6, 0)).rgb() for d in chips]
    odd = [d.text for d, colour in zip(chips, colours) if colours.count(colour) == 1]
    return odd[0] if len(odd) == 1 and len(chips) > 1 else None


# ---------------------------------------------------------------- lists, documents, choices

def listed(list_widget, role=Qt.ItemDataRole.DisplayRole) -> list:
    """What each item a list widget shows (not filtered out) holds in `role`, top to bottom."""
    return [list_widget.item(i).data(role) for i in range(list_widget.count()) if not list_widget.item(i).isHidden()]


def fragments_of(document):
    """Every run of text a QTextDocument shows in one format, in reading order."""
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            yield it.fragment()
            it += 1
        block = block.next()


def links_in(document, scheme: str) -> list[str]:
    """The targets of the `scheme:` links a text shows, in reading order (one per linked run)."""
    hrefs = [f.charFormat().anchorHref() for f in fragments_of(document)]
    return [href.removeprefix(f"{scheme}:") for href in hrefs if href.startswith(f"{scheme}:")]


def dotted_in(document) -> list[str]:
    """The runs of text drawn with a dotted underline."""
    return [f.text() for f in fragments_of(document)
            if f.charFormat().underlineStyle() == QTextCharFormat.UnderlineStyle.DotLine]


def choice_enabled(combo, data) -> bool:
    """Can the entry of a combo box holding `data` be chosen (not greyed out)?"""
    i = combo.findData(data)
    return i >= 0 and bool(combo.model().flags(combo.model().index(i, 0)) & Qt.ItemFlag.ItemIsEnabled)


# ---------------------------------------------------------------- the attention heatmap, as drawn

def plot_view(panel):
    """The pyqtgraph view a panel draws its plot in."""
    return panel.findChild(pg.PlotWidget)


def plot_items(panel, kind, visible: bool = True) -> list:
    """The items of type `kind` on the panel's plot (those on show)."""
    return [item for item in plot_view(panel).scene().items()
            if isinstance(item, kind) and (item.isVisible() or not visible)]


def heatmap(panel) -> np.ndarray:
    """[r, t] the weights the heatmap image draws (NaN: a masked cell); empty before a run."""
    (image,) = plot_items(panel, pg.ImageItem, visible=False)
    return np.empty((0, 0)) if image.image is None else np.array(image.image)


def plot_texts(panel) -> dict[tuple[int, int], str]:
    """(row, col) of the cell -> the text written over it (a weight; a message sits in cell (0, 0))."""
    return {(int(item.pos().y()), int(item.pos().x())): item.toPlainText()
            for item in plot_items(panel, pg.TextItem) if item.toPlainText()}


def cell_point(panel, row: int, col: int) -> QPoint:
    """Where the middle of heatmap cell (row, col) is drawn, in the plot view's pixels."""
    (image,) = plot_items(panel, pg.ImageItem, visible=False)
    scene = image.getViewBox().mapViewToScene(QPointF(col + 0.5, row + 0.5))   # the image spans cols x rows
    return plot_view(panel).mapFromScene(scene)


def axis_labels(axis) -> list[tuple[QRectF, str]]:
    """(box, text) of the tick labels an axis draws (it leaves out those with no room), top to
    bottom, left to right."""
    image = QImage(1, 1, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    if specs is None:
        return []
    return [(QRectF(rect), text) for rect, _flags, text in sorted(specs[2], key=lambda spec: (spec[0].top(), spec[0].left()))]


def axis_texts(axis) -> list[str]:
    """The tick labels an axis draws, top to bottom, left to right."""
    QApplication.processEvents()               # as a reader sees it: the axis follows its view's range in the event loop
    return [text for _box, text in axis_labels(axis)]


def boundary_row(panel) -> int | None:
    """The row where the heatmap's line divides Prefill rows from Decode rows (None: no line)."""
    lines = [line for line in plot_items(panel, pg.InfiniteLine) if line.angle == 0]
    return int(lines[0].value()) if lines else None


def distinct_colours(image, step: int = 7) -> int:
    """How many colours a QImage shows on a grid of every `step`-th pixel: a blank picture has one or two."""
    return len({image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)})


def at_rest(window) -> bool:
    """Nothing computes or loads behind the window: its runner is idle (the Cancel button gone)
    and no model is loading (the model picker enabled again)."""
    return not window.runner.busy and window.model_switcher.loading is None


def wait_idle(qtbot, window, timeout: int = 180_000) -> None:
    """Until the window is at rest and shows every change asked for (a generous bound in ms
    for a shared machine, never a speed claim)."""
    qtbot.waitUntil(lambda: at_rest(window) and not window.session.behind, timeout=timeout)


def pick(window, key) -> None:
    """What choosing an item of the model combo does."""
    i = window.model_switcher.picker.findData(key)
    assert i >= 0, window.model_switcher.picker.keys()
    window.model_switcher.picker.setCurrentIndex(i)
    window.model_switcher.picker.activated.emit(i)
