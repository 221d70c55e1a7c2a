"""A composed slide of the current frame: its title, the panels it points to (copies made
for the slide, drawn by their own code with slide-sized type) and the caption strip."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace

from PySide6.QtCore import QPoint, QPointF, QRectF, QSize, QSizeF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QFontMetricsF, QImage, QPainter, QPalette, QPen, QRegion
from PySide6.QtWidgets import QApplication, QGraphicsScene, QWidget

from ...session import Session
from ...session.text_so_far import shows_output, text_so_far
from ..panels.attention import AttentionPanel
from ..panels.beam import BeamPanel
from ..panels.distribution import DistributionPanel
from ..panels.kv import KVGridPanel
from ..panels.lens import LensPanel
from ..panels.transcript import TranscriptPanel
from ..panels.versus import VersusPanel
from ..panels.panel import Panel
from ..panels.text_line import TextLine
from ..theme import Theme, text_on
from ..panels.timeline import TimelinePanel
from .layout import BODY_PX, CAPTION_PX, TITLE_PX, SlideGeometry

SLIDE_PANEL_CLASSES = {cls.panel_id: cls for cls in
                       (TimelinePanel, KVGridPanel, AttentionPanel, DistributionPanel, BeamPanel, LensPanel,
                                     TranscriptPanel, VersusPanel)}
TEXT_PANELS = ("timeline", "kv", "distribution")    # a slide of these shows the text so far, once there is output
SMALLEST_DRAWING = 0.6     # a panel whose content needs more than its room is drawn at least this large
TITLE_SHRINK = 0.8         # a long title may be set this much smaller before it is cut short with "…"


@dataclass(frozen=True)
class SlideText:
    """The words around the panels."""
    title: str       # the frame's title
    lesson: str      # lesson title
    counter: str     # "3 / 10"
    line: str        # one line of the explanation


BLANK = SlideText("", "", "", "")     # a picture without its words (a PowerPoint slide writes them in text boxes)


def settle(rounds: int = 4) -> None:
    """Run the posted events until fonts, sizes and layouts have settled: a widget shown or
    restyled posts layout requests, and laying one out can post the next."""
    for _ in range(rounds):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


def settle_panels(panels, rounds: int = 2) -> None:
    """Deliver the events posted to `panels` and the widgets and chart scenes in them
    (layout requests, queued signals; not to their layouts, actions or text documents,
    which nothing on a slide waits for), deepest first, until their fonts, sizes and layouts have settled;
    nothing else in the application runs meanwhile (not the window's own panels)."""
    for _ in range(rounds):
        for panel in panels:
            for obj in reversed([panel, *panel.findChildren(QWidget), *panel.findChildren(QGraphicsScene)]):
                QApplication.sendPostedEvents(obj, 0)


def slide_palette(theme: Theme) -> QPalette:
    """Labels, tables and trees in the theme's colours (high contrast: light on black)."""
    palette = QPalette(QApplication.palette())
    bg, fg = QColor(theme.background), QColor(theme.text)
    for role in (QPalette.ColorRole.Window, QPalette.ColorRole.Base, QPalette.ColorRole.AlternateBase,
                 QPalette.ColorRole.Button):
        palette.setColor(role, bg)
    for role in (QPalette.ColorRole.WindowText, QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText):
        palette.setColor(role, fg)
    palette.setColor(QPalette.ColorRole.Highlight, QColor(theme.processed))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor(text_on(theme.processed)))
    palette.setColor(QPalette.ColorRole.PlaceholderText, QColor("#6e6e6e" if theme.name == "light" else "#a8a8a8"))
    return palette


def pixel_font(px: float, bold: bool = False) -> QFont:
    font = QFont(QApplication.font())
    font.setPixelSize(max(1, round(px)))
    font.setBold(bold)
    return font


class ReusedCanvas:
    """One slide image, drawn over for every slide of an export: a fresh 8 MB image a slide
    paid for its memory's first touch every time (page faults: up to 4 ms a slide)."""
    _canvas: QImage | None = None

    def canvas(self, width: int, height: int) -> QImage:
        """The image the next slide is drawn into (the last slide's, when of this size)."""
        if self._canvas is None or self._canvas.size() != QSize(width, height):
            self._canvas = QImage(width, height, QImage.Format.Format_RGB32)
        return self._canvas


class SlideComposer(ReusedCanvas):
    """Slides of `session`'s current frame. `panel`: that one panel fills the body of every
    slide; else each frame's own panels (`Frame.slide_panels`)."""

    def __init__(self, session: Session, geometry: SlideGeometry, theme: Theme, panel: str | None = None):
        self.session, self.geometry, self.theme, self.panel = session, geometry, theme, panel
        self._panels: dict[str, Panel] = {}
        self._laid_out = (None, [], geometry)    # (what the layout was made for, its placed panels, geometry)
        self._text_line: TextLine | None = None

    def shown_text(self, text: SlideText) -> SlideText:
        """The words the slide writes where: its title above, the caption below."""
        return text

    def panel_ids(self) -> tuple[str, ...]:
        """The panels on the current frame's slide."""
        if self.panel is not None:
            return (self.panel,)
        s = self.session
        return s.frame.slide_panels(has_layers=bool(s.run.steps[0].trace.layers), has_beam=s.beam is not None)

    def panel_copy(self, pid: str) -> Panel:
        """The slide's copy of a panel: its own widget, never shown on screen."""
        if pid not in self._panels:
            panel = SLIDE_PANEL_CLASSES[pid](self.session)
            panel.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
            panel.setPalette(slide_palette(self.theme))
            panel.set_theme(self.theme)
            panel.show()
            panel.show_on_slide()
            panel.setUpdatesEnabled(False)        # never on screen: drawn only by `paint`, never repainted
            self._panels[pid] = panel
        return self._panels[pid]

    def frame_geometry(self) -> SlideGeometry:
        """The slide's geometry for the current frame: with the text so far under the title
        on a slide of the timeline, the cache or the distribution once the model wrote a token."""
        s = self.session
        line = shows_output(s.frame, s.run) and any(p in TEXT_PANELS for p in self.panel_ids())
        return replace(self.geometry, text_line=line)

    def text_line(self) -> TextLine:
        """The slide's text-so-far line (its own widget, never shown on screen)."""
        if self._text_line is None:
            self._text_line = TextLine()
            self._text_line.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
            self._text_line.show()
        return self._text_line

    def close(self) -> None:
        for widget in [*self._panels.values(), *([self._text_line] if self._text_line else [])]:
            widget.close()
            widget.deleteLater()
        self._panels.clear()
        self._text_line = None

    # ------------------------------------------------------------------ layout
    def lay_out(self) -> list[tuple[Panel, QRectF, float]]:
        """(panel, its place, the scale it is drawn at) for every panel of the current
        frame, each sized for its place: the slide's body type,
        larger where the content has room to fill (up to the panel's SLIDE_GROWTH); a panel
        whose content needs more than its room is laid out larger and drawn smaller."""
        s = self.session
        made_for, (before, placed, _) = (s.run, s.cursor, s.lang, s.asking), self._laid_out
        if before is not None and before[0] is s.run and before[1:] == made_for[1:]:
            return placed                         # a PNG and a PDF page of one frame: laid out once
        g, ids = self.frame_geometry(), self.panel_ids()
        base = g.px(BODY_PX)
        panels = {pid: self.panel_copy(pid) for pid in ids}
        for pid, panel in panels.items():
            _set_type(panel, base)
            if isinstance(panel, TimelinePanel):
                panel.set_secondary(len(ids) > 1 and ids[0] != pid)
        settle_panels(panels.values())            # the frame's content laid out (a table keeps the rows it has room for)
        # what a table or grid beside others needs at the body type; a lone panel takes the whole body
        wants = {pid: QSizeF(p.slide_content_size(g.body.width()) if isinstance(p, TimelinePanel)   # it spans the body
                             else p.slide_content_size()) for pid, p in panels.items()
                 if len(ids) > 1 and not p.SLIDE_STRETCHES}
        rects = g.panel_rects(ids, wants, {pid: _least_height(panels[pid]) for pid in ids if len(ids) > 1})
        for pid, rect in zip(ids, rects):
            panels[pid].resize(rect.size().toSize())
        settle_panels(panels.values())
        for panel in panels.values():
            panel.fit_card()
        placed = [(panels[pid], rect, _fit(panels[pid], rect.size(), base)) for pid, rect in zip(ids, rects)]
        self._laid_out = (made_for, placed, g)
        return placed

    # ------------------------------------------------------------------ painting
    def paint(self, painter: QPainter, text: SlideText) -> None:
        """The whole slide of the current frame, in slide pixels (lays the panels out)."""
        placed = self.lay_out()
        self._paint_frame(painter, text)
        for panel, rect, scale in placed:
            _paint_panel(painter, panel, rect, scale)

    def paint_image(self, image: QImage, text: SlideText, scale: int) -> None:
        """The slide into `image`, `scale` image pixels a slide pixel. A panel drawn at its
        own size paints itself straight into the image at its place, as grab() paints a
        pixmap; one drawn smaller (or a scaled slide) goes through a scaling painter."""
        placed = self.lay_out()
        painter = image_painter(image, scale)
        self._paint_frame(painter, text)
        straight = []
        for panel, rect, drawn in placed:
            if scale == 1 and drawn == 1.0 and rect.toRect() == rect:
                straight.append((panel, rect.toRect().topLeft()))
            else:
                _paint_panel(painter, panel, rect, drawn)
        painter.end()
        for panel, at in straight:
            with _drawable(panel):
                panel.render(image, at, QRegion(), QWidget.RenderFlag.DrawChildren)

    def _paint_frame(self, painter: QPainter, text: SlideText) -> None:
        """Background, title, the text so far and caption strip: everything but the panels
        (after `lay_out`)."""
        g, theme = self._laid_out[2], self.theme
        painter.fillRect(QRectF(0, 0, g.width, g.height), QColor(theme.background))
        self._paint_title(painter, text.title)
        if g.text_line:
            self._paint_text_line(painter, g.text_line_rect)
        if g.caption:
            paint_caption(painter, g, theme, text)

    def _paint_text_line(self, painter: QPainter, rect: QRectF) -> None:
        """The text so far in the body type, drawn by the window's own line."""
        s, line = self.session, self.text_line()
        line.setFont(pixel_font(self.geometry.px(BODY_PX)))
        line.set_parts(text_so_far(s.frame, s.run, s.model.vocab), s.lang, self.theme)
        line.resize(rect.size().toSize())
        _paint_panel(painter, line, rect, 1.0)

    def _paint_title(self, p: QPainter, title: str) -> None:
        rect = self.geometry.title
        font = pixel_font(self.geometry.px(TITLE_PX), bold=True)
        width = QFontMetricsF(font).horizontalAdvance(title)
        if width > rect.width():
            font.setPixelSize(round(font.pixelSize() * max(TITLE_SHRINK, rect.width() / width)))
        p.setFont(font)
        p.setPen(QColor(self.theme.text))
        elided = p.fontMetrics().elidedText(title, Qt.TextElideMode.ElideRight, int(rect.width()))
        p.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)


def image_painter(image: QImage, scale: int) -> QPainter:
    """A painter on a slide image, in slide pixels."""
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.scale(scale, scale)
    return painter


@contextmanager
def _drawable(panel: Panel):
    """A slide copy takes no updates (it is never on screen), and render() draws nothing of
    a widget that takes none: drawable while it is drawn."""
    panel.setUpdatesEnabled(True)
    try:
        yield
    finally:
        panel.setUpdatesEnabled(False)


def _paint_panel(painter: QPainter, panel: Panel, rect: QRectF, scale: float) -> None:
    """`panel` drawn by `painter` at `rect`, `scale` times its size."""
    painter.save()
    painter.translate(rect.topLeft())
    painter.scale(scale, scale)
    with _drawable(panel):
        panel.render(painter, QPoint(0, 0), QRegion(), QWidget.RenderFlag.DrawChildren)
    painter.restore()


def paint_caption(p: QPainter, g: SlideGeometry, theme: Theme, text: SlideText) -> None:
    """The strip along the bottom: lesson and "n / N", then one line of the explanation."""
    strip = g.caption_strip
    p.save()
    p.fillRect(strip, QColor(theme.background))
    p.setPen(QPen(QColor(theme.accent), g.px(5)))
    p.drawLine(strip.topLeft(), strip.topRight())
    top, bottom = caption_lines(g)
    p.setFont(pixel_font(g.px(CAPTION_PX), bold=True))
    room = top.width() - counter_room(g, text.counter)
    p.setPen(QColor(theme.text))
    p.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
               p.fontMetrics().elidedText(text.lesson, Qt.TextElideMode.ElideRight, int(room)))
    p.drawText(top, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, text.counter)
    p.setFont(pixel_font(g.px(CAPTION_PX)))
    p.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
               p.fontMetrics().elidedText(text.line, Qt.TextElideMode.ElideRight, int(bottom.width())))
    p.restore()


def _least_height(panel: Panel):
    """The panel's least height at a width: what it needs with all it can leave out left out,
    and never under its layout's minimum (which `_fit` keeps it at)."""
    return lambda width: max(panel.slide_least_height(width), panel.minimumSizeHint().height())


def caption_lines(g: SlideGeometry) -> tuple[QRectF, QRectF]:
    """The caption strip's two lines: lesson and "n / N" (bold), then the explanation's line."""
    strip, pad, line = g.caption_strip, g.px(36), g.px(CAPTION_PX * 1.5)
    top = QRectF(QPointF(strip.left() + pad, strip.top() + g.px(12)), QSizeF(strip.width() - 2 * pad, line))
    return top, top.translated(0, line + g.px(4))


def counter_room(g: SlideGeometry, counter: str) -> float:
    """The width the caption's "n / N" takes at the right of its first line, a space included."""
    metrics = QFontMetrics(pixel_font(g.px(CAPTION_PX), bold=True))     # whole pixels, as the painter measures
    return metrics.horizontalAdvance(counter) + metrics.height()


def _set_type(panel: Panel, px: float) -> None:
    """The panel's type at `px` slide pixels (in points, which the panels scale from)."""
    font = QFont(QApplication.font())
    font.setPointSizeF(px * 72.0 / panel.logicalDpiY())
    if panel.font() != font:
        panel.setFont(font)


def _fit(panel: Panel, room: QSizeF, base: float) -> float:
    """Type and size of `panel`, laid out at the body type for a place of `room`; returns
    the scale it is drawn at."""
    if panel.SLIDE_GROWTH > 1:
        need = panel.slide_growth_size()
        ratio = min(room.width() / max(1, need.width()), room.height() / max(1, need.height()))
        if ratio > 1.05:
            for grow in (min(panel.SLIDE_GROWTH, 0.95 * ratio), 1.0):    # content grows about as the type
                _set_type(panel, base * max(1.0, grow))
                settle_panels([panel])
                need = panel.slide_growth_size()
                if need.width() <= room.width() and need.height() <= room.height():
                    break
    need = panel.slide_minimum_size() if panel.SLIDE_ELIDES else panel.slide_content_size()
    # a panel stays at least as large as its layout's minimum, whatever room it is given
    need = need.expandedTo(panel.minimumSizeHint())
    scale = max(SMALLEST_DRAWING, min(1.0, room.width() / max(1, need.width()), room.height() / max(1, need.height())))
    if scale < 1.0:
        panel.resize((room / scale).toSize())
        settle_panels([panel])
    return min(scale, room.width() / panel.width(), room.height() / panel.height())
