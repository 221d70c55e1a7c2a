"""A PowerPoint deck: one 16:9 slide picture per frame, its title and caption as editable text
boxes over it, with the frame's explanation and the lesson's self-check questions as speaker
notes; byte-identical for the same input."""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from datetime import datetime

from ..core.errors import ExplorerError
from ..i18n import add_messages, tr
from ..session.narration import SECTIONS

SLIDE_WIDTH_EMU = 12192000        # 13.333 in: PowerPoint's own 16:9 slide
FIXED_DATE = datetime(2000, 1, 1)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold
EMU_PER_POINT = 12700
EMU_PER_INCH = 914400
SLIDE_INCHES = (1, 56)            # what PowerPoint takes on each side of a slide (python-pptx checks it too)

add_messages({
    "notes.before": {"en": "Self-check before class", "zh": "课前自测"},
    "notes.after": {"en": "Self-check after class", "zh": "课后自测"},
    "notes.question": {"en": "Q: {text}", "zh": "问：{text}"},
    "notes.answer": {"en": "A: {text}", "zh": "答：{text}"},
    "notes.answer_slide": {"en": "Answer to: {question}", "zh": "答案，对应问题：{question}"},
    "notes.question_slide": {"en": "Ask the class; the answer is on the next slide.",
                             "zh": "先请大家回答；答案在下一页。"},
})


def speaker_notes(explanation: dict[str, str], checks: list[tuple[str, str, str]], lang: str,
                  question: str | None = None, asking: bool = False) -> str:
    """The notes of one slide: each section of the explanation under its heading, then the
    self-checks given as (when, question, answer) in `lang`. A question frame's two slides:
    `asking`, the question only (the explanation tells the answer); else, with its
    `question`, the explanation under the heading "Answer"."""
    if asking:
        parts = [f"{tr('section.question', lang)}\n{question}\n{tr('notes.question_slide', lang)}"]
    else:
        parts = [f"{tr(f'section.{key}', lang)}\n{explanation[key]}" for key in SECTIONS if explanation.get(key)]
        if question is not None:
            parts.insert(0, f"{tr('section.answer', lang)}\n{tr('notes.answer_slide', lang, question=question)}")
    for when in ("before", "after"):
        block = [f"{tr('notes.question', lang, text=q)}\n{tr('notes.answer', lang, text=a)}"
                 for w, q, a in checks if w == when]
        if block:
            parts.append(tr(f"notes.{when}", lang) + "\n" + "\n".join(block))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class TextBox:
    """Words over a slide's picture, editable: where (slide pixels), what and in which type."""
    left: float
    top: float
    width: float
    height: float
    text: str
    px: float          # type size in slide pixels
    bold: bool
    align: str         # "left" | "right"
    color: str         # "#rrggbb"
    font: str          # the family


def deck_slide_size(width: int, height: int) -> tuple[int, int]:
    """The EMU size of a slide `width` x `height` pixels: 13.333 in wide (PowerPoint's own
    16:9 width), as high as the shape asks; ExplorerError if PowerPoint cannot hold it."""
    emu_height = round(SLIDE_WIDTH_EMU * height / width)
    low, high = (n * EMU_PER_INCH for n in SLIDE_INCHES)
    if not low <= emu_height <= high:
        inches = SLIDE_WIDTH_EMU / EMU_PER_INCH
        raise ExplorerError(f"a deck's slide is {inches:.2f} in wide, so {width}x{height} would be "
                            f"{emu_height / EMU_PER_INCH:.2f} in high; PowerPoint takes {SLIDE_INCHES[0]} to "
                            f"{SLIDE_INCHES[1]} in on each side: expected a width from {inches / SLIDE_INCHES[1]:.2f} "
                            f"to {inches / SLIDE_INCHES[0]:.2f} times the height")
    return SLIDE_WIDTH_EMU, emu_height


def pptx_bytes(slides: list[tuple[bytes, str, tuple[TextBox, ...]]], width: int, height: int, title: str) -> bytes:
    """A deck of (PNG bytes, speaker notes, text boxes) slides, shaped `width` : `height`."""
    from pptx import Presentation        # imported only when a deck is written

    deck = Presentation()
    deck.slide_width, deck.slide_height = deck_slide_size(width, height)
    blank = deck.slide_layouts[6]
    for png, notes, boxes in slides:
        slide = deck.slides.add_slide(blank)
        slide.shapes.add_picture(io.BytesIO(png), 0, 0, deck.slide_width, deck.slide_height)
        for box in boxes:
            _add_text_box(slide, box, SLIDE_WIDTH_EMU / width)
        slide.notes_slide.notes_text_frame.text = notes
    props = deck.core_properties
    props.title, props.author, props.last_modified_by = title, "Token Explorer", "Token Explorer"
    props.created = props.modified = props.last_printed = FIXED_DATE
    props.revision = 1
    out = io.BytesIO()
    deck.save(out)
    return _fixed_zip_times(out.getvalue())


def _add_text_box(slide, box: TextBox, emu_per_px: float) -> None:
    """One line of text, without insets, centred on the height of its box as the picture's words are."""
    from pptx.dml.color import RGBColor
    from pptx.enum.text import MSO_ANCHOR, MSO_AUTO_SIZE, PP_ALIGN
    from pptx.util import Emu, Pt

    shape = slide.shapes.add_textbox(*(Emu(round(v * emu_per_px)) for v in (box.left, box.top, box.width, box.height)))
    frame = shape.text_frame
    frame.margin_left = frame.margin_right = frame.margin_top = frame.margin_bottom = 0
    frame.word_wrap = False
    frame.auto_size = MSO_AUTO_SIZE.NONE
    frame.vertical_anchor = MSO_ANCHOR.MIDDLE
    paragraph = frame.paragraphs[0]
    paragraph.alignment = PP_ALIGN.RIGHT if box.align == "right" else PP_ALIGN.LEFT
    run = paragraph.add_run()
    run.text = box.text
    font = run.font
    font.size = Pt(round(box.px * emu_per_px / EMU_PER_POINT, 1))
    font.bold = box.bold
    font.name = box.font
    font.color.rgb = RGBColor.from_string(box.color.lstrip("#").upper())


def _fixed_zip_times(data: bytes) -> bytes:
    """The same zip with every entry dated ZIP_TIME (python-pptx dates them now)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=ZIP_TIME)
            # the slide pictures are compressed PNGs already: stored, not deflated again
            entry.compress_type = zipfile.ZIP_STORED if info.filename.endswith(".png") else zipfile.ZIP_DEFLATED
            entry.external_attr = 0o644 << 16
            dst.writestr(entry, src.read(info.filename))
    return out.getvalue()
