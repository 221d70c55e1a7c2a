"""Drawing one frame of the window (or of one panel) as a slide: into an image for PNG,
onto a PDF page or into an SVG, with an optional caption strip along the bottom."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPoint, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPen
from PySide6.QtWidgets import QApplication, QWidget

CAPTION_HEIGHT = 96          # px of a 1080-high slide: two lines readable on a projector


@dataclass(frozen=True)
class Caption:
    lesson: str      # lesson title
    frame: str       # frame title
    counter: str     # "3 / 10"
    line: str        # one-line explanation
    colors: tuple    # (background, text, accent)


def content_height(height: int, with_caption: bool) -> int:
    """Height left for the window or panel above the caption strip."""
    return height - (CAPTION_HEIGHT if with_caption else 0)


def paint_slide(painter: QPainter, widget: QWidget, width: int, height: int,
                caption: Caption | None) -> None:
    """Paint the widget at the top and the caption under it, in slide coordinates. A
    widget taller than the room above the caption is drawn smaller, as a whole."""
    scale = min(1.0, content_height(height, caption is not None) / max(1, widget.height()))
    painter.save()
    painter.scale(scale, scale)
    widget.render(painter, QPoint(0, 0))
    painter.restore()
    if caption is not None:
        _paint_caption(painter, QRectF(0, content_height(height, True), width, CAPTION_HEIGHT), caption)


def _paint_caption(p: QPainter, rect: QRectF, c: Caption) -> None:
    background, text, accent = (QColor(x) for x in c.colors)
    p.save()
    p.fillRect(rect, background)
    p.setPen(QPen(accent, 4))
    p.drawLine(rect.topLeft(), rect.topRight())
    base = QApplication.font()
    title = QFont(base)
    title.setPixelSize(30)
    title.setBold(True)
    body = QFont(base)
    body.setPixelSize(24)
    pad = 24
    top = QRectF(rect.left() + pad, rect.top() + 8, rect.width() - 2 * pad, 44)
    bottom = QRectF(rect.left() + pad, rect.top() + 50, rect.width() - 2 * pad, 38)
    p.setPen(text)
    p.setFont(title)
    p.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
               caption_heading(p.fontMetrics(), c, top.width()))
    p.setPen(accent)
    p.drawText(top, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, c.counter)
    p.setPen(text)
    p.setFont(body)
    elided = p.fontMetrics().elidedText(c.line, Qt.TextElideMode.ElideRight, int(bottom.width()))
    p.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, elided)
    p.restore()


def caption_heading(metrics, c: Caption, width: float) -> str:
    """"lesson  ·  frame title", cut short ("…") where it would run into the counter."""
    room = width - metrics.horizontalAdvance(c.counter) - metrics.height()
    return metrics.elidedText(f"{c.lesson}  ·  {c.frame}", Qt.TextElideMode.ElideRight, int(room))


def slide_image(widget: QWidget, width: int, height: int, scale: int, caption: Caption | None) -> QImage:
    """The slide as pixels: width*scale x height*scale, drawn (not scaled up) at that size."""
    image = QImage(width * scale, height * scale, QImage.Format.Format_RGB32)
    image.fill(QColor(caption.colors[0]) if caption else QColor("white"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    painter.scale(scale, scale)
    paint_slide(painter, widget, width, height, caption)
    painter.end()
    return image
