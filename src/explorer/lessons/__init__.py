"""Lessons: the course's worked examples as data (TOML files in resources/lessons/, format in
its README.md), loaded and checked by `load_lesson`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..core.errors import ExplorerError
from ..resources import resources_dir
from .glossary import glossary_terms
from .lesson import Check, Lesson
from .problems import Problem
from .reader import LessonError, Text
from .schema import lesson_problems, parse_lesson

__all__ = ["Check", "Lesson", "LessonError", "Problem", "Text", "lesson_problems", "lessons_dir", "lesson_names", "load_lesson", "all_lessons",
           "default_lesson", "builds_on_names", "DEFAULT_LESSON_ID"]

DEFAULT_LESSON_ID = "wo-ai-to-eos"


def lessons_dir() -> Path:
    return resources_dir() / "lessons"


def lesson_names() -> list[str]:
    """Ids of the shipped lessons, in teaching order."""
    return [lesson.id for lesson in all_lessons()]


@cache
def all_lessons() -> tuple[Lesson, ...]:
    lessons = [_shipped(path) for path in sorted(lessons_dir().glob("*.toml"))]
    return tuple(sorted(lessons, key=lambda l: (l.order, l.id)))


@cache
def _shipped(path: Path) -> Lesson:
    """A shipped lesson file, read (and built, to check it) once per process."""
    return parse_lesson(path)


def load_lesson(name_or_path: str | Path) -> Lesson:
    """A shipped lesson by id, or a lesson file by path (LessonError names what is wrong).
    A shipped lesson is read from its own file (its id is the file name): the window
    starts without reading every lesson."""
    text = str(name_or_path)
    if text.endswith(".toml") or "/" in text or "\\" in text:
        return parse_lesson(Path(text))
    path = lessons_dir() / f"{text}.toml"
    if path.is_file():
        return _shipped(path)
    raise ExplorerError(f"lesson {text!r} not found (known: {', '.join(lesson_names())})")


def default_lesson() -> Lesson:
    return load_lesson(DEFAULT_LESSON_ID)


def builds_on_names(lesson: Lesson, lang: str) -> list[str]:
    """A lesson's `builds_on` entries as words: a glossary term, an earlier lesson's title,
    or the entry itself when it is neither."""
    terms = {t.id: t for t in glossary_terms()}
    names = []
    for item in lesson.builds_on:
        if item in terms:
            names.append(terms[item].term[lang])
            continue
        earlier = next((l for l in all_lessons() if l.id == item), None)   # read only when needed
        names.append(item if earlier is None else f"“{earlier.title_in(lang)}”")
    return names
