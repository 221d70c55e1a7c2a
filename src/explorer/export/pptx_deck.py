"""A PowerPoint deck: one 16:9 slide picture per frame, with the frame's explanation and the
lesson's self-check questions as speaker notes; byte-identical for the same input."""

from __future__ import annotations

import io
import zipfile
from datetime import datetime

from ..i18n import add_messages, tr
from ..session.narration import SECTIONS

SLIDE_WIDTH_EMU = 12192000        # 13.333 in: PowerPoint's own 16:9 slide
FIXED_DATE = datetime(2000, 1, 1)
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold

add_messages({
    "notes.before": {"en": "Self-check before class", "zh": "课前自测"},
    "notes.after": {"en": "Self-check after class", "zh": "课后自测"},
    "notes.question": {"en": "Q: {text}", "zh": "问：{text}"},
    "notes.answer": {"en": "A: {text}", "zh": "答：{text}"},
})


def speaker_notes(explanation: dict[str, str], checks: list[tuple[str, str, str]], lang: str) -> str:
    """The notes of one slide: each section of the explanation under its heading, then the
    self-checks given as (when, question, answer) in `lang`."""
    parts = [f"{tr(f'section.{key}', lang)}\n{explanation[key]}" for key in SECTIONS if explanation.get(key)]
    for when in ("before", "after"):
        block = [f"{tr('notes.question', lang, text=q)}\n{tr('notes.answer', lang, text=a)}"
                 for w, q, a in checks if w == when]
        if block:
            parts.append(tr(f"notes.{when}", lang) + "\n" + "\n".join(block))
    return "\n\n".join(parts)


def pptx_bytes(slides: list[tuple[bytes, str]], width: int, height: int, title: str) -> bytes:
    """A deck of (PNG bytes, speaker notes) slides, shaped `width` : `height`."""
    from pptx import Presentation        # imported only when a deck is written

    deck = Presentation()
    deck.slide_width = SLIDE_WIDTH_EMU
    deck.slide_height = round(SLIDE_WIDTH_EMU * height / width)
    blank = deck.slide_layouts[6]
    for png, notes in slides:
        slide = deck.slides.add_slide(blank)
        slide.shapes.add_picture(io.BytesIO(png), 0, 0, deck.slide_width, deck.slide_height)
        slide.notes_slide.notes_text_frame.text = notes
    props = deck.core_properties
    props.title, props.author, props.last_modified_by = title, "Token Explorer", "Token Explorer"
    props.created = props.modified = props.last_printed = FIXED_DATE
    props.revision = 1
    out = io.BytesIO()
    deck.save(out)
    return _fixed_zip_times(out.getvalue())


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
