"""Reading the course's TOML files (lessons, the glossary) key by key: every problem names
the file, the line and the key path (`wo-ai-to-eos.toml:42: frames[3].explain.why: ...`).
A lesson's reader goes on past a bad part to find the next (`each`), then raises the first
problem with all of them attached (`LessonError.problems`, what `lesson check` prints)."""

from __future__ import annotations

import re
import tomllib
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.limits import MAX_LESSON_BYTES
from ..core.userfile import check_nesting, parse_problem, read_user_text
from ..i18n import LANGS
from .problems import Problem, key_lines, line_of

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_KEY_PATH = re.compile(r"^([A-Za-z_][\w-]*(?:\[\d+\])?(?:\.[\w-]+(?:\[\d+\])?)*): (.*)$", re.DOTALL)


class LessonError(ExplorerError):
    """A lesson file that cannot be used; the message names the file, the line and the key
    of its first problem, `problems` holds every problem found."""

    def __init__(self, message: str, problems: tuple[Problem, ...] = ()):
        super().__init__(message)
        self.problems = tuple(problems)


class Text(dict):
    """A text by language ({en: ..., zh: ...}) holding every language: one the file left out
    is filled with a language it gives, and `fallback` says so (lang -> the language shown
    instead), so the window can mark it while slides simply show the text."""

    def __init__(self, given: dict[str, str]):
        shown = next(lang for lang in LANGS if lang in given)
        super().__init__({lang: given.get(lang, given[shown]) for lang in LANGS})
        self.fallback = {lang: shown for lang in LANGS if lang not in given}

    def __reduce__(self):
        return Text, ({lang: self[lang] for lang in LANGS if lang not in self.fallback},)


class TomlReader:
    """Key-by-key checks of a TOML file; every problem raises `error` naming the file, line
    and key. Every text needs every language."""

    error = LessonError
    collects = False            # a LessonReader notes problems and goes on (see `each`)
    one_language = False        # a LessonReader takes a text in one language (see `text`)

    def __init__(self, path: Path, text: str | None = None):
        """text: the file's text as it is being edited (the lesson editor), read instead of the file."""
        self.path = Path(path)
        self.name = self.path.name
        self.source = text
        self.problems: list[Problem] = []
        self._lines: dict[str, int] | None = None

    def line(self, where: str) -> int | None:
        """The line of key path `where` in the file (read for it if it was not read here)."""
        if self._lines is None:
            try:
                self._lines = key_lines(self._text(self.path))
            except ExplorerError:
                return None
        return line_of(self._lines, where)

    def _text(self, path: Path) -> str:
        if self.source is None:
            return read_user_text(path, MAX_LESSON_BYTES, "lesson file", self.error)
        if len(self.source.encode("utf-8")) > MAX_LESSON_BYTES:     # an edit in the window: the file it would save
            raise self.error(f"{path}: more than a lesson file may hold ({MAX_LESSON_BYTES:,} bytes)")
        return self.source

    def problem(self, where: str, problem: str, line: int | None = None) -> Problem:
        return Problem(self.name, self.line(where) if line is None else line,
                       f"{where}: {problem}" if where else problem)

    def fail(self, where: str, problem: str, line: int | None = None):
        p = self.problem(where, problem, line)
        raise self.error(str(p), (p,))

    def fail_with(self, message: str):
        """Fail with a message from elsewhere that may start with a key path (`frames[3].step: ...`)."""
        m = _KEY_PATH.match(message)
        self.fail(*(m.groups() if m else ("", message)))

    def note(self, where: str, problem: str) -> None:
        """A problem that does not stop the reading of what follows (an unknown key, a bad
        text): noted while collecting, raised otherwise."""
        if not self.collects:
            self.fail(where, problem)
        self._add(self.problem(where, problem))

    def _add(self, p: Problem) -> None:
        """One problem per key: a key that is bad for two reasons says the first."""
        if all(q.message.partition(": ")[0] != p.message.partition(": ")[0] or q.line != p.line
               for q in self.problems):
            self.problems.append(p)

    @contextmanager
    def each(self):
        """A part read on its own (a frame, a scenario, a top-level key): its problems are
        noted and the reading goes on with the next part. Without `collects` the first
        problem is raised as it is found."""
        try:
            yield
        except LessonError as exc:
            if not (self.collects and exc.problems):
                raise
            for p in exc.problems:
                self._add(p)

    def done(self) -> None:
        """Raise the first problem noted, with all of them."""
        if self.problems:
            raise self.error(str(self.problems[0]), tuple(self.problems))

    def read(self, path: Path, format_name: str, version: int, known: tuple, required: tuple) -> dict:
        """The parsed file, its format line and its top-level keys checked. A file written
        for a newer format says so first: its other keys may be new ones."""
        text = self._text(path)
        self._lines = key_lines(text)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            message = str(exc)
            at = _TOML_AT.search(message)
            self.fail("", f"not valid TOML: {_TOML_AT.sub(f' (column {at[2]})', message) if at else message}",
                      int(at[1]) if at else 1)
        except (RecursionError, ValueError) as exc:
            if (problem := parse_problem(exc)) is None:
                raise
            self.fail("", problem)
        check_nesting(data, self.name, self.error)
        given = data.get("version")
        if data.get("format") != format_name:
            self.fail("format", (f"{data['format']!r}" if "format" in data else "missing")
                      + f": expected format = {format_name!r}")
        if isinstance(given, int) and not isinstance(given, bool) and given > version:
            self.fail("version", f"written for a newer Token Explorer (format version {given}; "
                                 f"this one reads up to {version})")
        if given != version:
            self.fail("version", (f"{given!r}" if "version" in data else "missing") + f": expected version = {version}")
        with self.each():
            self.table(data, "", known, required)
        return data

    def table(self, value, where: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        """`value` as a table of known keys: an unknown key is noted and left out (the rest can
        still be read), a missing one stops the part (every missing key is noted)."""
        if not isinstance(value, dict):
            self.fail(where, "expected a table")
        at = (lambda key: f"{where}.{key}") if where else (lambda key: key)
        for key in value:
            if key not in known:
                self.note(at(key), f"unknown key (expected one of {', '.join(known)})")
        missing = [self.problem(at(key), "missing") for key in required if key not in value]
        if missing:
            raise self.error(str(missing[0]), tuple(missing))
        return {key: v for key, v in value.items() if key in known}

    def text(self, value, where: str) -> Text:
        """A text in every language: {en = "...", zh = "..."}; with `one_language`, in one of
        them or more (a missing language falls back to one given)."""
        self.table(value, where, LANGS)
        if not self.one_language:
            for lang in LANGS:
                if not isinstance(value.get(lang), str) or not value[lang].strip():
                    self.fail(where, f'missing "{lang}" text (every text needs {" and ".join(LANGS)})')
            return Text(value)
        for lang in value or LANGS[:1]:
            if not isinstance(value.get(lang), str) or not value[lang].strip():
                self.fail(where, f'missing "{lang}" text (a text needs {" or ".join(LANGS)} or both, '
                                 "each a non-empty string)")
        return Text(value)

    def kind(self, value, where: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            self.fail(where, f"{value!r}: expected one of {', '.join(choices)}")
        return value

    def ints(self, value, where: str) -> tuple[int, ...]:
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            self.fail(where, "expected a list of integers")
        return tuple(value)


class LessonReader(TomlReader):
    """A lesson file's reader: it collects every problem it can, and a text may be written in
    one language (a teacher's own lesson)."""

    collects = True
    one_language = True
