"""`--style window`: the whole window as on the desk (menus, prompt bar, every panel), laid
out for the slide's width and drawn above the caption strip. The window is one of its own,
never the one on screen; its class comes from the caller (this package imports no window)."""

from __future__ import annotations

import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QPoint, QRectF, Qt, qInstallMessageHandler
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from ...export.spec import ExportSpec
from ...session import Session
from ..settings import Settings
from ..theme import framed_style_in_use, use_framed_style
from .compose import BLANK, ReusedCanvas, SlideText, image_painter, paint_caption, settle
from .layout import SlideGeometry


@contextmanager
def export_window(window_class, session: Session, spec: ExportSpec):
    """A `window_class` (the app's MainWindow) over `session`, in the export's language and
    theme, with nothing that differs between two exports (timings, status, text cursor). The
    window sets the application's type size, style and palette: they are given back after."""
    font, framed, palette = QApplication.font(), framed_style_in_use(), QApplication.palette()
    with tempfile.TemporaryDirectory() as tmp, quiet_harmless_qt_messages():
        window = window_class.for_slide(session, Settings(str(Path(tmp) / "export.ini")), spec.width)
        try:
            window.set_lang(spec.lang)
            window.set_theme(spec.theme)
            window.prepare_for_export()
            yield window
        finally:
            window.close()
            window.deleteLater()
            use_framed_style(framed)
            QApplication.setPalette(palette)
            QApplication.setFont(font)


class WindowPicture(ReusedCanvas):
    """Slides of the window: drawn at the slide's width (taller and smaller as a whole when
    its panels need more height than the slide has), the caption strip under it."""

    def __init__(self, window, geometry: SlideGeometry):
        self.window, self.geometry = window, geometry
        window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        window.show()
        self.lay_out()                  # fonts and layouts settle before the first frame is drawn

    @property
    def theme(self):
        return self.window.theme

    def shown_text(self, text: SlideText) -> SlideText:
        """The words the slide writes: no title of its own (the window shows the frame's), a
        caption naming the lesson and the frame."""
        return BLANK if text == BLANK else SlideText("", f"{text.lesson}  ·  {text.title}", text.counter, text.line)

    def room(self) -> int:
        return round(self.geometry.caption_strip.top())

    def lay_out(self) -> None:
        """Sized afresh from the same start for every frame, so a frame looks the same
        exported alone or in a range."""
        window, width, room = self.window, self.geometry.width, self.room()
        window.desk_layout.show_frame_tabs()
        settle()
        window.resize(width, room)
        settle()
        need = window.minimumSizeHint().height()
        if need > room:
            window.resize(round(width * need / room), need)
            settle()
        window.desk_layout.spread_desk()            # the panels in their proportions at this size
        settle()

    def paint(self, painter: QPainter, text: SlideText) -> None:
        g, theme = self.geometry, self.window.theme
        self.lay_out()
        painter.fillRect(QRectF(0, 0, g.width, g.height), QColor(theme.background))
        scale = min(1.0, self.room() / max(1, self.window.height()))
        painter.save()
        painter.scale(scale, scale)
        self.window.render(painter, QPoint(0, 0))
        painter.restore()
        if g.caption:
            paint_caption(painter, g, theme, self.shown_text(text))

    def paint_image(self, image: QImage, text: SlideText, scale: int) -> None:
        painter = image_painter(image, scale)
        self.paint(painter, text)
        painter.end()

    def close(self) -> None:
        """The window belongs to `export_window`, which closes it."""


HARMLESS = ("gradient between colors of different spec",   # PDF: a styled button drawn flat
            "does not support propagateSizeHints")           # offscreen: no window manager to tell


@contextmanager
def quiet_harmless_qt_messages():
    """Qt warnings that say nothing about the slides are not printed; every other one is."""
    def handler(kind, context, message):
        if not any(text in message for text in HARMLESS):
            previous(kind, context, message) if previous else print(message, file=sys.stderr)
    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)
