"""The student page of a session (`export/student_page.py`): its frames' composed slides
drawn in every language the lesson is written in, their texts, and the recorded logits
of every frame that shows a next-token distribution."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from ...core.decode.sampling import ORDER_PRESETS
from ...export.page_logits import page_entry, split_logits
from ...export.spec import ExportSpec
from ...export.student_page import PageFrame, StudentPage, page_html, page_langs, page_piece
from ...i18n import LANGS, tr
from ...session import Session
from ...session.narration import frame_caption, frame_explanation, frame_title, question_text
from ...session.text_so_far import own_run_caption
from ..theme import THEMES
from .compose import SlideComposer
from .layout import SlideGeometry

PAGE_SLIDE = (1280, 720)      # the page's pictures: a laptop screen's width (times --scale), half of 1920x1080's bytes
Picture = Callable[[SlideComposer, ExportSpec, Session, int, str, str], bytes]   # (..., index, lang, lesson title)


def page_languages(session: Session, first: str) -> tuple[str, ...]:
    """The export's language, and the other one when the lesson is written in it too."""
    content = session.content
    written = {lang: not content.fallbacks(lang) for lang in LANGS} if content is not None else {}
    return page_langs(first, written)


def lesson_title(session: Session, lang: str) -> str:
    if session.content is not None:
        return session.content.title_in(lang)
    return own_run_caption(session.run, session.model.name, session.model.vocab, lang)


def student_page_bytes(session: Session, spec: ExportSpec, lesson_id: str, indexes, tick: Callable[[str], None],
                       picture: Picture, checks=()) -> bytes:
    """The page of frames `indexes` (0-based), drawn by `picture` as `spec` asks (theme,
    --panel, the caption) at PAGE_SLIDE; `tick` after every picture (it raises to cancel)."""
    langs = page_languages(session, spec.lang)
    page_spec = replace(spec, width=PAGE_SLIDE[0], height=PAGE_SLIDE[1], style="slide")
    slides: dict[tuple[int, str], bytes] = {}
    try:
        for lang in langs:
            session.set_lang(lang)
            pictures = SlideComposer(session, SlideGeometry(page_spec.width, page_spec.height, page_spec.caption),
                                     THEMES[spec.theme], spec.panel)
            try:
                for index in indexes:
                    session.go(index, revealed=True)
                    slides[index, lang] = picture(pictures, page_spec, session, index, lang, lesson_title(session, lang))
                    tick(f"{lesson_id}.html: {index + 1} ({lang})")
            finally:
                pictures.close()
    finally:
        session.set_lang(spec.lang)
    dists: list[dict] = []
    where: dict[tuple[int, int], int] = {}
    frames = []
    for index in indexes:
        frame = session.frames[index]
        run, model = session.run_at(index)
        dist = None
        if frame.shows_distribution and frame.step is not None:
            key = (id(run), frame.step)
            if key not in where:
                where[key] = len(dists)
                dists.append(_step_entry(run, frame.step, model.vocab))
            dist = where[key]
        texts = {lang: _frame_texts(frame, run, model.vocab, lang) for lang in langs}
        frames.append(PageFrame(frame.kind, texts, {lang: slides[index, lang] for lang in langs}, dist))
    return page_html(StudentPage(lesson_id, {lang: lesson_title(session, lang) for lang in langs}, langs,
                                 tuple(frames), tuple(dists), _checks(session, checks, spec.lang, langs)))


def _frame_texts(frame, run, vocab, lang: str) -> dict:
    explain = frame_explanation(frame, run, vocab, lang)
    return {"title": frame_title(frame, run, vocab, lang),
            "question": question_text(frame, run, vocab, lang) if frame.ask else None,
            "alt": frame_caption(frame, run, vocab, lang),
            "explain": [[tr(f"section.{key}", lang), text] for key, text in explain.items() if text]}


def _step_entry(run, step: int, vocab) -> dict:
    """The recorded logits of `step` (as `page_logits` carries them), the ids seen before it
    and the run's settings, which the page starts from."""
    seen = run.prompt_ids + run.output_ids[:step]
    page = split_logits(run.steps[step].distribution.raw_logits, seen)
    c = run.config
    order = next((name for name, stages in ORDER_PRESETS.items() if stages == c.order), list(c.order))
    settings = {"temperature": c.temperature, "top_k": c.top_k, "top_p": c.top_p, "min_p": c.min_p,
                "repetition_penalty": c.repetition_penalty, "order": order}
    return page_entry(page, [page_piece(vocab.display_piece(int(i))) for i in page.ids], seen, settings,
                      int(run.steps[step].selected_id))


def _checks(session: Session, given, lang: str, langs) -> tuple[dict, ...]:
    """The lesson's self-checks in every language of the page (`given`, in the export's
    language, for content that is not a lesson)."""
    if session.content is not None:
        return tuple({"when": c.when, "question": {la: c.question[la] for la in langs},
                      "answer": {la: c.answer[la] for la in langs}} for c in session.content.checks)
    return tuple({"when": w, "question": {la: q for la in langs}, "answer": {la: a for la in langs}}
                 for w, q, a in given)
