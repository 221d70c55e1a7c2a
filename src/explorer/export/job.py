"""One export run: every chosen frame of a session as PNG / SVG files and one PDF deck,
plus the Run as CSV / JSON. Everything is written into a hidden staging folder first and
moved into place at the end, so a failure or a cancel leaves the output folder as it was."""

from __future__ import annotations

import os
import re
import sys
from contextlib import contextmanager
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

from PySide6.QtCore import (QBuffer, QByteArray, QIODevice, QMarginsF, QRect, QSize, QSizeF, Qt, QUuid,
                            qInstallMessageHandler)
from PySide6.QtGui import QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QApplication

from ..core.errors import ExplorerError
from ..core.jsonfile import dumps_readable
from ..session import Session
from ..session.narration import frame_explanation, frame_title
from .handouts import run_csv, run_json
from .render import Caption, content_height, paint_slide, slide_image
from .spec import ExportSpec

Progress = Callable[[int, int, str], bool]    # (done, total, what) -> False to cancel
FIXED_DATE = b"D:20000101000000Z"             # PDF dates are fixed so equal input gives equal bytes
FIXED_XMP_DATE = b"2000-01-01T00:00:00+00:00"


class ExportCancelled(ExplorerError):
    """The user cancelled; nothing was written."""


def file_stem(index: int, frame, total: int) -> str:
    """'03-pick-step0': numbered like the player (1-based), zero-padded to sort."""
    width = max(2, len(str(total)))
    step = "" if frame.step is None else f"-step{frame.step}"
    return f"{index + 1:0{width}d}-{frame.kind}{step}"


class ExportJob:
    def __init__(self, window, spec: ExportSpec, lesson_id: str, lesson_title: str):
        self.window, self.spec = window, spec
        self.session: Session = window.session
        self.lesson_id, self.lesson_title = lesson_id, lesson_title

    # ------------------------------------------------------------------ what is drawn
    def target(self):
        """The widget drawn on each slide, sized to the slide (minus the caption)."""
        s = self.spec
        widget = self.window if s.panel is None else self.window.panels[s.panel]
        if s.panel is not None:
            widget = type(widget)(self.session)     # a standalone copy: only that panel on the slide
            widget.set_theme(self.window.theme)
        widget.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
        widget.show()
        self.fit_to_slide(widget)
        return widget

    def fit_to_slide(self, widget) -> None:
        """The widget at the slide's width and the height above the caption. One whose
        panels need more height (a 1280x720 slide in Chinese) is laid out taller, and wider
        in proportion, and drawn smaller as a whole (`paint_slide`): nothing cut, nothing
        squeezed. Sized afresh from the same start for every frame, so a frame looks the
        same exported alone or in a range."""
        s = self.spec
        room = content_height(s.height, s.caption)
        widget.resize(s.width, room)
        settle()
        need = widget.minimumSizeHint().height()
        if need > room:
            widget.resize(round(s.width * need / room), need)
            settle()
        if widget is self.window:               # the panels in their proportions at this size
            widget.spread_desk()
            settle()

    def caption(self, index: int) -> Caption | None:
        if not self.spec.caption:
            return None
        s, lang = self.session, self.spec.lang
        frame = s.frames[index]
        what = frame_explanation(frame, s.run, s.model.vocab, lang)["what"]
        t = self.window.theme
        return Caption(self.lesson_title, frame_title(frame, s.run, s.model.vocab, lang),
                       f"{index + 1} / {len(s.frames)}", what, (t.background, t.text, t.accent))

    # ------------------------------------------------------------------ running
    def run(self, progress: Progress | None = None) -> list[Path]:
        s = self.spec
        s.out_dir.mkdir(parents=True, exist_ok=True)
        indexes = s.frames if s.frames is not None else tuple(range(len(self.session.frames)))
        staging = Path(tempfile.mkdtemp(prefix=".explorer-export-", dir=s.out_dir))
        try:
            written = self._write_all(staging, indexes, progress)
            final = []
            for path in sorted(written, key=lambda p: p.name):
                target = s.out_dir / path.name
                os.replace(path, target)
                final.append(target)
            return final
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _write_all(self, staging: Path, indexes, progress) -> list[Path]:
        s = self.spec
        pictures = [f for f in s.formats if f in ("png", "svg")]
        data_files = len(self.session.scenarios) * (("csv" in s.formats) + ("json" in s.formats))
        total = len(indexes) * (len(pictures) + ("pdf" in s.formats)) + data_files
        done, written = 0, []

        def tick(what):
            nonlocal done
            done += 1
            if progress is not None and progress(done, total, what) is False:
                raise ExportCancelled("export cancelled: nothing was written")

        widget = self.target() if pictures or "pdf" in s.formats else None
        suffix = "" if s.panel is None else f"-{s.panel}"
        pdf = (_PdfDeck(staging / f"{self.lesson_id}{suffix}.pdf", s, self.lesson_title)
               if "pdf" in s.formats else None)
        encoder = ThreadPoolExecutor(max_workers=1)   # PNG compression overlaps the next drawing
        pending = []
        try:
            for index in indexes:
                self.session.go(index)
                self.window.show_frame_tabs()
                settle()
                if widget is not None:
                    self.fit_to_slide(widget)
                caption = self.caption(index)
                stem = file_stem(index, self.session.frames[index], len(self.session.frames)) + suffix
                if "png" in s.formats:
                    image = slide_image(widget, s.width, s.height, s.scale, caption)
                    pending.append(encoder.submit(_write_png, staging / f"{stem}.png", image))
                    tick(f"{stem}.png")
                if "svg" in s.formats:
                    written.append(_write_svg(staging / f"{stem}.svg", widget, s, caption))
                    tick(f"{stem}.svg")
                if pdf is not None:
                    pdf.add(widget, caption)
                    tick(f"page {index + 1}")
            written.extend(f.result() for f in pending)     # re-raises an encoding/writing error
        finally:
            encoder.shutdown(wait=True)
            if pdf is not None:
                pdf.close()
            if widget is not None and widget is not self.window:
                widget.deleteLater()
        if pdf is not None:
            written.append(pdf.finish())
        results = self.session.scenario_results()
        for k, ((run, _beam), scenario) in enumerate(zip(results, self.session.scenarios), start=1):
            stem = f"{self.lesson_id}-run" + (f"-{k}" if len(results) > 1 else "")
            vocab = scenario.model.vocab
            if "csv" in s.formats:
                written.append(_write(staging / f"{stem}.csv", run_csv(run, vocab).encode("utf-8")))
                tick(f"{stem}.csv")
            if "json" in s.formats:
                data = run_json(run, vocab, s.intermediates)
                written.append(_write(staging / f"{stem}.json", (dumps_readable(data) + "\n").encode("utf-8")))
                tick(f"{stem}.json")
        return written


def _write_png(path: Path, image) -> Path:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise ExplorerError(f"{path.name}: PNG encoding failed")
    return _write(path, bytes(data.data()))


def _write(path: Path, data: bytes) -> Path:
    with open(path, "wb") as f:
        f.write(data)
    return path


def _write_svg(path: Path, widget, spec: ExportSpec, caption) -> Path:
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(QSize(spec.width, spec.height))
    generator.setViewBox(QRect(0, 0, spec.width, spec.height))
    painter = QPainter(generator)
    paint_slide(painter, widget, spec.width, spec.height, caption)
    painter.end()
    return path


class _PdfDeck:
    """A 16:9 PDF, one frame per page, drawn as vectors (text stays sharp at any zoom)."""

    def __init__(self, path: Path, spec: ExportSpec, title: str):
        self.path, self.spec, self.pages = path, spec, 0
        self.writer = QPdfWriter(str(path))
        self.writer.setPageSize(QPageSize(QSizeF(spec.width, spec.height), QPageSize.Unit.Point, "slide"))
        self.writer.setPageMargins(QMarginsF(0, 0, 0, 0))
        self.writer.setResolution(72)                          # 1 slide pixel = 1 point
        self.writer.setDocumentId(QUuid("{00000000-0000-4000-8000-000000000000}"))
        self.writer.setCreator("Token Explorer")
        self.writer.setTitle(title)              # launcher issue #22: the deck names its lesson
        self.painter = QPainter()

    def add(self, widget, caption) -> None:
        if self.pages == 0:
            self.painter.begin(self.writer)
        else:
            self.writer.newPage()
        paint_slide(self.painter, widget, self.spec.width, self.spec.height, caption)
        self.pages += 1

    def close(self) -> None:
        if self.painter.isActive():
            self.painter.end()

    def finish(self) -> Path:
        """Fix the dates Qt writes, so two exports of the same input are byte-identical."""
        data = self.path.read_bytes()
        data = re.sub(rb"D:\d{14}Z", FIXED_DATE, data)
        data = re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", FIXED_XMP_DATE, data)
        self.path.write_bytes(data)
        return self.path


@contextmanager
def _export_job(session: Session, spec: ExportSpec, lesson_id: str, lesson_title: str):
    """An ExportJob over a window of its own (never the one on screen)."""
    from ..ui.settings import Settings
    from ..ui.window import MainWindow, is_compact_width

    with tempfile.TemporaryDirectory() as tmp, _quiet_harmless_qt_messages():
        # the layout follows the slide's width, never the screen of the machine exporting
        window = MainWindow(session, Settings(str(Path(tmp) / "export.ini")),
                            compact=is_compact_width(spec.width))
        try:
            window.set_lang(spec.lang)
            window.set_theme(spec.theme)
            window.prepare_for_export()
            yield ExportJob(window, spec, lesson_id, lesson_title)
        finally:
            window.close()
            window.deleteLater()


def settle(rounds: int = 4) -> None:
    """Run the posted events until fonts, sizes and layouts have settled: a widget shown
    or redrawn posts layout requests, and laying one out can post the next (a slide drawn
    before that has its text in one size and its layout measured for another)."""
    for _ in range(rounds):
        QApplication.sendPostedEvents()
        QApplication.processEvents()


def export_session(session: Session, spec: ExportSpec, lesson_id: str, lesson_title: str,
                   progress: Progress | None = None) -> list[Path]:
    """Render `session`'s frames and write them. Needs a QApplication with the fonts registered."""
    with _export_job(session, spec, lesson_id, lesson_title) as job:
        return job.run(progress)


def frame_image(session: Session, spec: ExportSpec, lesson_title: str):
    """The current frame of `session` as a slide image (the clipboard copy)."""
    with _export_job(session, spec, "frame", lesson_title) as job:
        job.window.show_frame_tabs()
        widget = job.target()
        try:
            return slide_image(widget, spec.width, spec.height, spec.scale, job.caption(session.cursor))
        finally:
            if widget is not job.window:
                widget.deleteLater()


HARMLESS = ("gradient between colors of different spec",   # PDF: a styled button drawn flat
            "does not support propagateSizeHints")           # offscreen: no window manager to tell


@contextmanager
def _quiet_harmless_qt_messages():
    """Qt warnings that say nothing about the slides are not printed; every other one is."""
    def handler(kind, context, message):
        if not any(text in message for text in HARMLESS):
            previous(kind, context, message) if previous else print(message, file=sys.stderr)
    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)
