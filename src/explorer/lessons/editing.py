"""A lesson being edited: its TOML data, the edits made to it as small records, undo and redo.

The lesson is held as the data its file parses to (`tomllib`), not as the Lesson record: an
edit changes that data, and the edited data is written back as TOML text and read by the
loader's own parser (`parse_lesson`), so an edit is checked exactly as a file is, with the
same messages (`FILE:LINE: frames[2].title.en: ...`, the line in the edited text). An edit
the loader refuses raises its LessonError and changes nothing. No Qt here: the window's
editor (ui/shell/lesson_editor.py) shows this and plays each edited lesson."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..session.narration import SECTIONS
from .lesson import Lesson
from .reader import LANGS, LessonError
from .schema import parse_lesson
from .writer import _key, _value

FRAME_TEXTS = ("title", *(f"explain.{s}" for s in SECTIONS), "ask")   # a frame's texts, by key path
CHECK_TEXTS = ("question", "answer")
LESSON_TEXTS = ("title", "summary")


# ---------------------------------------------------------------------------- TOML text of the data

def lesson_text(data: dict) -> str:
    """The TOML text of a lesson's data: top-level keys, then its tables ([model], [title]),
    then its arrays of tables ([[frames]], each with its [frames.explain])."""
    out: list[str] = []
    _table(out, data, "", top=True)
    return "\n".join(out).lstrip("\n") + "\n"


def _table(out: list[str], table: dict, path: str, top: bool) -> None:
    later = []
    for key, value in table.items():
        entries = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        nested = isinstance(value, dict) and (top or any(isinstance(v, dict) for v in value.values()))
        if (entries and top) or nested:
            later.append((key, value))
        else:
            out.append(f"{_key(key)} = {_value(value)}")
    for key, value in later:
        name = f"{path}.{_key(key)}" if path else _key(key)
        for entry in (value if isinstance(value, list) else [value]):
            out += ["", f"[[{name}]]" if isinstance(value, list) else f"[{name}]"]
            _table(out, entry, name, top=False)


# ---------------------------------------------------------------------------- texts in a language

def _set_text(holder: dict, key: str, lang: str, text: str) -> None:
    """`holder[key][lang] = text`; an empty text removes that language, and a text with no
    language left removes the key (a lesson may be written in one language)."""
    if lang not in LANGS:
        raise ValueError(f"language {lang!r}: expected one of {', '.join(LANGS)}")
    texts = dict(holder.get(key) or {})
    if text.strip():
        texts[lang] = text
    else:
        texts.pop(lang, None)
    if texts:
        holder[key] = {la: texts[la] for la in LANGS if la in texts}
    else:
        holder.pop(key, None)


def _frames(data: dict) -> list:
    return data.setdefault("frames", [])


def _checks(data: dict) -> list:
    return data.setdefault("checks", [])


def _index(items: list, i: int, what: str) -> int:
    if not 0 <= i < len(items):
        raise IndexError(f"{what} {i + 1}: expected 1 to {len(items)}")
    return i


# ---------------------------------------------------------------------------- the edits
# Each edit changes the data in place (`apply`) and names the frame to show after it (`shows`).
# Two edits of the same text one after the other are one for undo (`same_text`): typing a
# title is one step back, not one per key.

class _Edit:
    def shows(self) -> int | None:
        """The frame to show after it (None: where the player is: a lesson text, a check)."""
        return getattr(self, "frame", None)

    def same_text(self, other) -> bool:
        return False


@dataclass(frozen=True)
class SetFrameText(_Edit):
    frame: int
    field: str          # one of FRAME_TEXTS
    lang: str
    text: str

    def apply(self, data: dict) -> None:
        fd = _frames(data)[_index(_frames(data), self.frame, "frame")]
        if self.field not in FRAME_TEXTS:
            raise ValueError(f"{self.field!r}: expected one of {', '.join(FRAME_TEXTS)}")
        if self.field.startswith("explain."):
            explain = dict(fd.get("explain") or {})
            _set_text(explain, self.field.partition(".")[2], self.lang, self.text)
            if explain:             # in the sections' order (a key the loader does not know stays, last)
                fd["explain"] = {s: explain.pop(s) for s in SECTIONS if s in explain} | explain
            else:
                fd.pop("explain", None)
            return
        _set_text(fd, self.field, self.lang, self.text)
        if self.field == "ask" and "ask" not in fd:
            fd.pop("ask_panel", None)           # no question left: nothing to hide

    def same_text(self, other) -> bool:
        return isinstance(other, SetFrameText) and (other.frame, other.field, other.lang) == (
            self.frame, self.field, self.lang)


@dataclass(frozen=True)
class SetPanels(_Edit):
    frame: int
    panels: tuple[str, ...]     # none: the panels the frame's kind shows

    def apply(self, data: dict) -> None:
        fd = _frames(data)[_index(_frames(data), self.frame, "frame")]
        if self.panels:
            fd["panels"] = list(self.panels)
        else:
            fd.pop("panels", None)



@dataclass(frozen=True)
class DeleteFrame(_Edit):
    frame: int

    def apply(self, data: dict) -> None:
        frames = _frames(data)
        del frames[_index(frames, self.frame, "frame")]



@dataclass(frozen=True)
class DuplicateFrame(_Edit):
    frame: int

    def apply(self, data: dict) -> None:
        frames = _frames(data)
        frames.insert(self.frame + 1, copy.deepcopy(frames[_index(frames, self.frame, "frame")]))

    def shows(self) -> int:
        return self.frame + 1



@dataclass(frozen=True)
class MoveFrame(_Edit):
    frame: int          # from
    to: int

    def apply(self, data: dict) -> None:
        frames = _frames(data)
        _index(frames, self.frame, "frame"), _index(frames, self.to, "frame")
        frames.insert(self.to, frames.pop(self.frame))

    def shows(self) -> int:
        return self.to



@dataclass(frozen=True)
class AddFrame(_Edit):
    """A new frame at `at` showing `kind` at `step` (None for an input frame; -1 the last
    step) of `scenario` ("base" or a scenario's name), with the app's narration for texts."""
    at: int
    kind: str
    step: int | None
    scenario: str = "base"

    def apply(self, data: dict) -> None:
        frames = _frames(data)
        if not 0 <= self.at <= len(frames):
            raise IndexError(f"frame {self.at + 1}: expected 1 to {len(frames) + 1}")
        fd = {"show": self.kind} | ({} if self.step is None else {"step": self.step})
        frames.insert(self.at, fd | ({} if self.scenario == "base" else {"scenario": self.scenario}))

    def shows(self) -> int:
        return self.at



@dataclass(frozen=True)
class SetLessonText(_Edit):
    field: str          # "title" | "summary"
    lang: str
    text: str

    def apply(self, data: dict) -> None:
        if self.field not in LESSON_TEXTS:
            raise ValueError(f"{self.field!r}: expected one of {', '.join(LESSON_TEXTS)}")
        _set_text(data, self.field, self.lang, self.text)

    def same_text(self, other) -> bool:
        return isinstance(other, SetLessonText) and (other.field, other.lang) == (self.field, self.lang)


@dataclass(frozen=True)
class AddCheck(_Edit):
    """A self-check question with its answer, in `lang`, asked `when` ("before" | "after")."""
    at: int
    when: str
    lang: str
    question: str
    answer: str

    def apply(self, data: dict) -> None:
        checks = _checks(data)
        if not 0 <= self.at <= len(checks):
            raise IndexError(f"check {self.at + 1}: expected 1 to {len(checks) + 1}")
        check = {"when": self.when}
        _set_text(check, "question", self.lang, self.question)
        _set_text(check, "answer", self.lang, self.answer)
        checks.insert(self.at, check)



@dataclass(frozen=True)
class SetCheck(_Edit):
    """One of a check's texts (`field` "question" or "answer") in `lang`, or (`field` "when")
    when it is asked."""
    check: int
    field: str
    lang: str
    text: str

    def apply(self, data: dict) -> None:
        cd = _checks(data)[_index(_checks(data), self.check, "check")]
        if self.field == "when":
            cd["when"] = self.text
        elif self.field in CHECK_TEXTS:
            _set_text(cd, self.field, self.lang, self.text)
        else:
            raise ValueError(f"{self.field!r}: expected when, question or answer")

    def same_text(self, other) -> bool:
        return isinstance(other, SetCheck) and (other.check, other.field, other.lang) == (
            self.check, self.field, self.lang) and self.field != "when"


@dataclass(frozen=True)
class DeleteCheck(_Edit):
    check: int

    def apply(self, data: dict) -> None:
        checks = _checks(data)
        del checks[_index(checks, self.check, "check")]
        if not checks:
            data.pop("checks")



# ---------------------------------------------------------------------------- the lesson being edited

@dataclass(frozen=True)
class _Done:
    edit: object
    data: dict          # before it
    lesson: Lesson      # before it
    merges: bool        # a later edit of the same text joins it


class EditableLesson:
    """A lesson as data, each edit checked by the loader before it is kept, with undo and
    redo. `path` is where it is read from and saved to (its relative model files are found
    beside it); `text` what a save writes; `changed` whether it differs from what was last
    opened or saved."""

    def __init__(self, path: Path, text: str):
        """The lesson of TOML `text` (a file's, or `lesson_document`'s) read as from `path`:
        LessonError if the loader refuses it."""
        self.path = Path(path)
        self.lesson = parse_lesson(self.path, text)
        self._data = tomllib.loads(text)
        self._saved = lesson_text(self._data)
        self._done: list[_Done] = []
        self._undone: list[tuple[object, dict, Lesson]] = []    # (edit, data after, lesson after)

    @classmethod
    def open(cls, path: Path) -> EditableLesson:
        return cls(path, Path(path).read_text(encoding="utf-8"))

    @classmethod
    def recovered(cls, path: Path, saved: str, text: str) -> EditableLesson:
        """The lesson of `text`, with edits to save since `saved` (its text when it was opened
        or last saved): edits a recovery file kept (lessons/recovery.py). The undo history
        is not kept; LessonError if the loader refuses `text`."""
        lesson = cls(path, text)
        lesson._saved = saved
        return lesson

    @property
    def data(self) -> dict:
        """A copy of the data (changing it changes nothing here)."""
        return copy.deepcopy(self._data)

    @property
    def text(self) -> str:
        return lesson_text(self._data)

    @property
    def changed(self) -> bool:
        return self.text != self._saved

    @property
    def saved_text(self) -> str:
        """Its text as it was opened or last saved (`text` when nothing changed since)."""
        return self._saved

    can_undo = property(lambda self: bool(self._done))
    can_redo = property(lambda self: bool(self._undone))

    def apply(self, edit, check: Callable[[Lesson], object] | None = None, merge: bool = False):
        """Make `edit`; -> (the edited lesson, what `check(lesson)` returned). The edited data
        is read as the loader reads a file, then `check` (the window prepares its play: a
        lesson on a real model has its placeholders checked on its runs there); a LessonError
        from either leaves everything as it was. merge: the edit may join the last one for
        undo if it edits the same text (typing)."""
        data = copy.deepcopy(self._data)
        try:
            edit.apply(data)
        except (IndexError, ValueError) as exc:
            raise LessonError(f"{self.path.name}: {exc}") from None
        lesson = parse_lesson(self.path, lesson_text(data))
        checked = check(lesson) if check is not None else None
        last = self._done[-1] if self._done else None
        if merge and last is not None and last.merges and edit.same_text(last.edit):
            self._done[-1] = _Done(edit, last.data, last.lesson, True)
        else:
            self._done.append(_Done(edit, self._data, self.lesson, merge))
        self._undone.clear()
        self._data, self.lesson = data, lesson
        return lesson, checked

    def seal(self) -> None:
        """The next edit of the same text is an undo step of its own (the teacher left the field)."""
        if self._done and self._done[-1].merges:
            self._done[-1] = _Done(self._done[-1].edit, self._done[-1].data, self._done[-1].lesson, False)

    def undo(self):
        """Take back the last edit; -> the edit taken back (its `frame` is where it was), None if none."""
        if not self._done:
            return None
        done = self._done.pop()
        self._undone.append((done.edit, self._data, self.lesson))
        self._data, self.lesson = done.data, done.lesson
        return done.edit

    def redo(self):
        """Make the last edit taken back again; -> that edit, None if none."""
        if not self._undone:
            return None
        edit, data, lesson = self._undone.pop()
        self._done.append(_Done(edit, self._data, self.lesson, False))
        self._data, self.lesson = data, lesson
        return edit

    def saved(self, path: Path) -> None:
        """It was written to `path`: read from there from now on (its id and model files),
        and unchanged until the next edit."""
        path = Path(path)
        if path != self.path:
            self.path = path
            self.lesson = parse_lesson(path, self.text)
        self._saved = self.text
