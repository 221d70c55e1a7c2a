"""One export run: the chosen frames of a session as slides (PNG, SVG, PDF, PowerPoint)
and its runs as CSV / JSON handouts, all written together at the end or not at all."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRect, QRectF, QSize, QSizeF, QUuid
from PySide6.QtGui import QFontMetricsF, QImage, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgGenerator

from ...core.errors import ExplorerError
from ...core.jsonfile import dumps_readable
from ...i18n import add_messages, tr
from ...export.files import StagedFiles
from ...export.handouts import run_csv, run_json
from ...export.pptx_deck import TextBox, pptx_bytes, speaker_notes
from ...export.spec import CANCELLED, ExportCancelled, ExportSpec, deck_slides
from ...session import Session
from ...session.narration import frame_caption, frame_explanation, frame_title, question_text
from ..theme import THEMES
from .compose import BLANK, SlideComposer, SlideText, caption_lines, counter_room, pixel_font
from .layout import CAPTION_PX, TITLE_PX, SlideGeometry
from .student_slides import page_languages, student_page_bytes
from .window_style import WindowPicture, export_window, quiet_harmless_qt_messages

Progress = Callable[[int, int, str], bool]    # (done, total, what) -> False to cancel
Checks = tuple[tuple[str, str, str], ...]     # the lesson's self-checks: (when, question, answer)
FIXED_DATE = b"D:20000101000000Z"             # PDF dates are fixed so equal input gives equal bytes
FIXED_XMP_DATE = b"2000-01-01T00:00:00+00:00"
PNG_QUALITY = 80      # zlib's fastest levels: half the time of Qt's default, files as small (flat slide colours)
WEBP_LOSSLESS = 100   # Qt's WebP quality 100: lossless
LINE_SHRINK = 0.7     # a PowerPoint caption line may be set this much smaller to hold its whole text

add_messages({"question.caption": {"en": "Think first: the answer is on the next slide.",
                                   "zh": "先想一想：答案在下一页。"}})


def file_stem(index: int, frame, total: int, asking: bool = False) -> str:
    """'03-pick-step0': numbered like the player (1-based), zero-padded to sort; a question
    frame's first slide '03-pick-step0-question' (it sorts before its answer's)."""
    width = max(2, len(str(total)))
    step = "" if frame.step is None else f"-step{frame.step}"
    return f"{index + 1:0{width}d}-{frame.kind}{step}" + ("-question" if asking else "")


def slide_text(session: Session, index: int, lang: str, lesson_title: str) -> SlideText:
    """The words on frame `index`'s slide (the session is on that frame). A question slide
    says only that it asks: its card writes the question large over the hidden panel (a
    title line would cut a long question short), and the frame's title and explanation
    tell the answer."""
    frame = session.frames[index]
    run, model = session.run_at(index)
    counter = f"{index + 1} / {len(session.frames)}"
    if session.asking:
        return SlideText(tr("section.question", lang), lesson_title, counter, tr("question.caption", lang))
    return SlideText(frame_title(frame, run, model.vocab, lang), lesson_title, counter,
                     frame_caption(frame, run, model.vocab, lang))


def slide_pictures(session: Session, spec: ExportSpec, window=None):
    """What draws the slides (in the export's language): a composer, or (`--style window`)
    the given export window."""
    session.set_lang(spec.lang)
    geometry = SlideGeometry(spec.width, spec.height, spec.caption)
    if spec.style == "window":
        return WindowPicture(window, geometry)
    return SlideComposer(session, geometry, THEMES[spec.theme], spec.panel)


def text_boxes(pictures, text: SlideText) -> tuple[TextBox, ...]:
    """The words the picture writes (`shown_text`), as PowerPoint text boxes where it writes
    them: the picture under them is drawn BLANK. Each holds its whole text on one line, set
    smaller where the picture would shorten it with "…" (the explanation's line at most to
    LINE_SHRINK, past which PowerPoint runs it on)."""
    g, shown, colour = pictures.geometry, pictures.shown_text(text), pictures.theme.text
    family = pixel_font(1).family()

    def box(rect: QRectF, words: str, px: float, bold: bool, align: str = "left", least: float = 0.0) -> TextBox:
        wide = QFontMetricsF(pixel_font(px, bold)).horizontalAdvance(words)
        fitted = px * max(least, min(1.0, rect.width() / wide)) if wide else px
        return TextBox(rect.left(), rect.top(), rect.width(), rect.height(), words, fitted, bold, align, colour, family)

    boxes = [box(g.title, shown.title, g.px(TITLE_PX), True)] if shown.title else []
    if g.caption:
        top, bottom = caption_lines(g)
        room = counter_room(g, shown.counter)
        boxes += [box(QRectF(top.left(), top.top(), top.width() - room, top.height()), shown.lesson, g.px(CAPTION_PX), True),
                  box(QRectF(top.right() - room, top.top(), room, top.height()), shown.counter, g.px(CAPTION_PX), True,
                      "right"),
                  box(bottom, shown.line, g.px(CAPTION_PX), False, least=LINE_SHRINK)]
    return tuple(b for b in boxes if b.text)


def pptx_slide(pictures, text: SlideText, spec: ExportSpec, notes: str) -> tuple[bytes, str, tuple[TextBox, ...]]:
    """A PowerPoint slide: the picture without its words, the words as text boxes, the notes."""
    return png_bytes(slide_image(pictures, BLANK, spec)), notes, text_boxes(pictures, text)


def slide_image(pictures, text: SlideText, spec: ExportSpec) -> QImage:
    """The slide as pixels: width*scale x height*scale, drawn (not enlarged) at that size,
    into the pictures' own image (`ReusedCanvas`): the next slide draws over it."""
    image = pictures.canvas(spec.width * spec.scale, spec.height * spec.scale)
    pictures.paint_image(image, text, spec.scale)
    return image


class ExportJob:
    def __init__(self, session: Session, spec: ExportSpec, lesson_id: str, lesson_title: str,
                 checks: Checks = (), window=None):
        self.session, self.spec = session, spec
        self.lesson_id, self.lesson_title, self.checks = lesson_id, lesson_title, checks
        self.pictures = slide_pictures(session, spec, window)

    def run(self, progress: Progress | None = None) -> list[Path]:
        s = self.spec
        indexes = s.frames if s.frames is not None else tuple(range(len(self.session.frames)))
        with StagedFiles(s.out_dir) as files:
            self._write_all(files, deck_slides(self.session, indexes), progress)
            return files.commit()

    def _write_all(self, files: StagedFiles, slides: list[tuple[int, bool]], progress) -> None:
        s = self.spec
        runs = self.session.scenario_results()
        per_frame = ("png" in s.formats) + ("svg" in s.formats) + any(f in s.formats for f in ("pdf", "pptx"))
        page_frames = tuple(dict.fromkeys(index for index, _ in slides))
        page_pictures = len(page_frames) * len(page_languages(self.session, s.lang)) + 1 if "html" in s.formats else 0
        total = len(slides) * per_frame + ("pdf" in s.formats) + ("pptx" in s.formats) + len(runs) * (
            ("csv" in s.formats) + ("json" in s.formats)) + page_pictures
        done = 0

        def tick(what: str) -> None:
            nonlocal done
            done += 1
            if progress is not None and progress(done, total, what) is False:
                raise ExportCancelled(CANCELLED)

        suffix = "" if s.panel is None else f"-{s.panel}"
        deck = f"{self.lesson_id}{suffix}"
        pdf = _PdfDeck(s, self.lesson_title) if "pdf" in s.formats else None
        notes_slides: list[tuple[bytes, str, tuple[TextBox, ...]]] = []
        try:
            for page, (index, asking) in enumerate(slides, start=1):
                self.session.go(index, revealed=not asking)
                text = slide_text(self.session, index, s.lang, self.lesson_title)
                stem = file_stem(index, self.session.frames[index], len(self.session.frames), asking) + suffix
                if "png" in s.formats:
                    files.add(f"{stem}.png", png_bytes(slide_image(self.pictures, text, s)))
                    tick(f"{stem}.png")
                if "pptx" in s.formats:
                    notes_slides.append(pptx_slide(self.pictures, text, s, self.notes(index, asking)))
                if "svg" in s.formats:
                    files.add(f"{stem}.svg", svg_bytes(self.pictures, text, s))
                    tick(f"{stem}.svg")
                if pdf is not None:
                    pdf.add(self.pictures, text)
                if pdf is not None or ("pptx" in s.formats and "png" not in s.formats):
                    tick(f"{stem}: page {page}")
            if pdf is not None:
                files.add(f"{deck}.pdf", pdf.finish())
                tick(f"{deck}.pdf")
            if notes_slides:
                files.add(f"{deck}.pptx", pptx_bytes(notes_slides, s.width, s.height, self.lesson_title))
                tick(f"{deck}.pptx")
            if "html" in s.formats:
                files.add(f"{deck}.html", student_page_bytes(self.session, s, deck, page_frames, tick, page_picture,
                                                             self.checks))
                tick(f"{deck}.html")
        finally:
            if pdf is not None:
                pdf.close()
            self.pictures.close()
        for k, ((run, _beam), scenario) in enumerate(zip(runs, self.session.scenarios), start=1):
            stem = f"{self.lesson_id}-run" + (f"-{k}" if len(runs) > 1 else "")
            vocab = scenario.model.vocab
            if "csv" in s.formats:
                files.add(f"{stem}.csv", run_csv(run, vocab, s.top).encode("utf-8"))
                tick(f"{stem}.csv")
            if "json" in s.formats:
                data = run_json(run, vocab, s.intermediates, s.top)
                files.add(f"{stem}.json", (dumps_readable(data) + "\n").encode("utf-8"))
                tick(f"{stem}.json")

    def notes(self, index: int, asking: bool = False) -> str:
        """Speaker notes: the frame's explanation; the lesson's self-checks on the first
        slide (before class) and the last (after class). A question frame's question slide
        (`asking`) has the question only, its answer slide the explanation marked "Answer"."""
        frame = self.session.frames[index]
        run, model = self.session.run_at(index)
        last = len(self.session.frames) - 1
        first_slide, last_slide = index == 0 and (asking or not frame.ask), index == last and not asking
        checks = [c for c in self.checks if (c[0] == "before" and first_slide) or (c[0] == "after" and last_slide)]
        lang = self.spec.lang
        question = question_text(frame, run, model.vocab, lang) if frame.ask else None
        return speaker_notes(frame_explanation(frame, run, model.vocab, lang), checks, lang, question, asking)


def page_picture(pictures, spec: ExportSpec, session: Session, index: int, lang: str, lesson_title: str) -> bytes:
    """Frame `index`'s slide on the student page, as lossless WebP: the PNG's very pixels in a
    third of its bytes (a 10-frame lesson in two languages is 0.9 MB of pictures, not 2.6),
    shown by every current browser (Safari since 14)."""
    image = slide_image(pictures, slide_text(session, index, lang, lesson_title), spec)
    return image_bytes(image, "WEBP", WEBP_LOSSLESS)


def png_bytes(image: QImage) -> bytes:
    return image_bytes(image, "PNG", PNG_QUALITY)


def image_bytes(image: QImage, fmt: str, quality: int) -> bytes:
    """`image` encoded as `fmt` ("PNG", "WEBP") at Qt's `quality` for that format."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, fmt, quality):
        raise ExplorerError(f"{fmt} encoding failed")
    buffer.close()
    return bytes(data.data())


def svg_bytes(pictures, text: SlideText, spec: ExportSpec) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    generator = QSvgGenerator()
    generator.setOutputDevice(buffer)
    generator.setSize(QSize(spec.width, spec.height))
    generator.setViewBox(QRect(0, 0, spec.width, spec.height))
    painter = QPainter(generator)
    pictures.paint(painter, text)
    painter.end()
    buffer.close()
    return bytes(data.data())


class _PdfDeck:
    """A 16:9 PDF, one frame per page, drawn as vectors (text stays sharp at any zoom)."""

    def __init__(self, spec: ExportSpec, title: str):
        self.data = QByteArray()
        self.buffer = QBuffer(self.data)
        self.buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        self.writer = QPdfWriter(self.buffer)
        self.writer.setPageSize(QPageSize(QSizeF(spec.width, spec.height), QPageSize.Unit.Point, "slide"))
        self.writer.setPageMargins(QMarginsF(0, 0, 0, 0))
        self.writer.setResolution(72)                          # 1 slide pixel = 1 point
        self.writer.setDocumentId(QUuid("{00000000-0000-4000-8000-000000000000}"))
        self.writer.setCreator("Token Explorer")
        self.writer.setTitle(title)              # the deck names its lesson in its metadata
        self.painter = QPainter()
        self.pages = 0

    def add(self, pictures, text: SlideText) -> None:
        if self.pages == 0:
            self.painter.begin(self.writer)
        else:
            self.writer.newPage()
        pictures.paint(self.painter, text)
        self.pages += 1

    def close(self) -> None:
        if self.painter.isActive():
            self.painter.end()

    def finish(self) -> bytes:
        """The document, with the dates Qt writes fixed (equal input, equal bytes)."""
        self.close()
        data = bytes(self.data.data())
        data = re.sub(rb"D:\d{14}Z", FIXED_DATE, data)
        return re.sub(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", FIXED_XMP_DATE, data)


def export_session(session: Session, spec: ExportSpec, lesson_id: str, lesson_title: str,
                   progress: Progress | None = None, checks: Checks = (), window_class=None) -> list[Path]:
    """Draw `session`'s frames and write them. Needs a QApplication with the fonts registered;
    `window_class` (the app's MainWindow) only for `--style window`."""
    with quiet_harmless_qt_messages():
        if spec.style == "window":
            with export_window(window_class, session, spec) as window:
                return ExportJob(session, spec, lesson_id, lesson_title, checks, window).run(progress)
        return ExportJob(session, spec, lesson_id, lesson_title, checks).run(progress)


def frame_image(session: Session, spec: ExportSpec, lesson_title: str, window_class=None) -> QImage:
    """The current frame of `session` as a slide image (the clipboard copy, the dialog's preview)."""
    with quiet_harmless_qt_messages():
        text = slide_text(session, session.cursor, spec.lang, lesson_title)
        if spec.style == "window":
            with export_window(window_class, session, spec) as window:
                return slide_image(WindowPicture(window, SlideGeometry(spec.width, spec.height, spec.caption)),
                                   text, spec)
        pictures = slide_pictures(session, spec)
        try:
            return slide_image(pictures, text, spec)
        finally:
            pictures.close()


def frame_file_bytes(session: Session, spec: ExportSpec, fmt: str, lesson_title: str, checks: Checks = (),
                     window_class=None) -> bytes:
    """The current frame of `session` as one file of `fmt` (png, svg, pdf or a one-slide pptx)."""
    with quiet_harmless_qt_messages():
        if spec.style == "window":
            with export_window(window_class, session, spec) as window:
                return _frame_bytes(session, spec, fmt, lesson_title, checks, window)
        return _frame_bytes(session, spec, fmt, lesson_title, checks)


def _frame_bytes(session, spec, fmt, lesson_title, checks, window=None) -> bytes:
    job = ExportJob(session, spec, "frame", lesson_title, checks, window)
    text = slide_text(session, session.cursor, spec.lang, lesson_title)
    try:
        if fmt == "svg":
            return svg_bytes(job.pictures, text, spec)
        if fmt == "pdf":
            pdf = _PdfDeck(spec, lesson_title)
            pdf.add(job.pictures, text)
            return pdf.finish()
        if fmt == "pptx":
            return pptx_bytes([pptx_slide(job.pictures, text, spec, job.notes(session.cursor, session.asking))],
                              spec.width,
                              spec.height, lesson_title)
        return png_bytes(slide_image(job.pictures, text, spec))
    finally:
        job.pictures.close()
