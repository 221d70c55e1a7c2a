"""Reading the course's TOML files (lessons, the glossary) key by key: every problem raises
an error naming the file and the key path (`wo-ai-to-eos.toml: frames[3].explain.why: missing "zh"`)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.limits import MAX_LESSON_BYTES
from ..core.userfile import check_nesting, parse_problem, read_user_text
from ..i18n import LANGS


class LessonError(ExplorerError):
    """A lesson file that cannot be used; the message names the file and the key."""


class TomlReader:
    """Key-by-key checks of a TOML file; every problem raises `error` naming the file and key."""

    error = LessonError

    def __init__(self, path: Path):
        self.name = path.name

    def fail(self, where: str, problem: str):
        raise self.error(f"{self.name}: {where}: {problem}" if where else f"{self.name}: {problem}")

    def read(self, path: Path, format_name: str, version: int, known: tuple, required: tuple) -> dict:
        """The parsed file, its top-level keys and its format line checked."""
        text = read_user_text(path, MAX_LESSON_BYTES, "lesson file", self.error)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.fail("", f"not valid TOML: {exc}")
        except (RecursionError, ValueError) as exc:
            if (problem := parse_problem(exc)) is None:
                raise
            self.fail("", problem)
        check_nesting(data, self.name, self.error)
        self.table(data, "", known, required)
        if data["format"] != format_name or data["version"] != version:
            self.fail("format", f"expected format = {format_name!r} and version = {version}")
        return data

    def table(self, value, where: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            self.fail(where, "expected a table")
        for key in value:
            if key not in known:
                self.fail(f"{where}.{key}" if where else key, f"unknown key (expected one of {', '.join(known)})")
        for key in required:
            if key not in value:
                self.fail(f"{where}.{key}" if where else key, "missing")
        return value

    def text(self, value, where: str) -> dict[str, str]:
        """A text in every language: {en = "...", zh = "..."}."""
        self.table(value, where, LANGS)
        for lang in LANGS:
            if not isinstance(value.get(lang), str) or not value[lang].strip():
                self.fail(where, f'missing "{lang}" text (every text needs {" and ".join(LANGS)})')
        return dict(value)

    def kind(self, value, where: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            self.fail(where, f"{value!r}: expected one of {', '.join(choices)}")
        return value

    def ints(self, value, where: str) -> tuple[int, ...]:
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            self.fail(where, "expected a list of integers")
        return tuple(value)
