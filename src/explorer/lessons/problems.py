"""A problem of a TOML file with the line it is on, and the lines of a file's keys.

tomllib gives values, not positions: `key_lines` scans the text for the table headers
(`[model]`, `[[frames]]`, `[frames.explain]`) and `key =` lines a key path such as
`frames[3].explain.what` comes from, so a teacher's editor can jump to the line."""

from __future__ import annotations

import re
from dataclasses import dataclass

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_INDEX = re.compile(r"\[\d+\]$")


@dataclass(frozen=True)
class Problem:
    file: str                 # the file as the reader names it
    line: int | None          # 1-based; None for a problem of the whole file (not found, too big)
    message: str              # "frames[3].step: expected ..." (the key path, then what is wrong)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


def line_of(lines: dict[str, int], where: str) -> int:
    """The line of key path `where`, else of the nearest table or key holding it (a missing
    key is reported where its table starts; `title.en` of an inline table on the title's
    line); 1, the top of the file, when nothing of it is written."""
    while where:
        if where in lines:
            return lines[where]
        where = where[:m.start()] if (m := _INDEX.search(where)) else where.rpartition(".")[0]
    return 1


def key_lines(text: str) -> dict[str, int]:
    """{key path: 1-based line} of every table header and `key =` line of a TOML text: a
    header `[[frames]]` is `frames[i]` (the i-th so far), `[frames.explain]` is
    `frames[i].explain`, and a key is its table's path, a dot, and the key (dotted keys give
    every prefix). Lines inside multi-line strings and arrays are skipped."""
    lines: dict[str, int] = {}
    arrays: dict[str, int] = {}         # array-of-tables path -> how many headers so far
    table, inside = "", None            # the current table's path; what is open (see _rest)
    for number, line in enumerate(text.splitlines(), 1):
        if inside is not None:
            inside = _rest(line, inside)
            continue
        stripped = line.strip()
        if stripped.startswith("["):
            new_array = stripped.startswith("[[")
            parts = _key_parts(stripped[2 if new_array else 1:])
            table = _resolve(parts, arrays, new_array)
            lines.setdefault(table, number)
            lines.setdefault(_INDEX.sub("", table), number)
            continue
        if not stripped or stripped.startswith("#") or "=" not in stripped:
            continue
        parts = _key_parts(stripped)
        path = table
        for part in parts:
            path = f"{path}.{part}" if path else part
            lines.setdefault(path, number)
        inside = _rest(stripped[stripped.index("=", _key_end(stripped)) + 1:], None)
    return lines


def _resolve(parts: list[str], arrays: dict[str, int], new_array: bool) -> str:
    """A header's path with the index of every array of tables it passes through."""
    path = ""
    for k, part in enumerate(parts):
        path = f"{path}.{part}" if path else part
        if new_array and k == len(parts) - 1:
            arrays[path] = arrays.get(path, 0) + 1
            path = f"{path}[{arrays[path] - 1}]"
        elif path in arrays:
            path = f"{path}[{arrays[path] - 1}]"
    return path


def _key_end(s: str) -> int:
    """Where the key of `key = value` (or a header's key) ends: at the first `=` or `]`
    outside quotes."""
    quote = None
    for i, c in enumerate(s):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "=]":
            return i
    return len(s)


def _key_parts(s: str) -> list[str]:
    """The parts of a dotted key (`a."b.c".d` -> a, b.c, d), up to its `=` or `]`."""
    key = s[:_key_end(s)]
    parts, i = [], 0
    while i < len(key):
        c = key[i]
        if c in "\"'":
            end = key.index(c, i + 1) if c in key[i + 1:] else len(key)
            parts.append(key[i + 1:end])
            i = end + 1
        elif m := _BARE.match(key, i):
            parts.append(m.group())
            i = m.end()
        else:
            i += 1
    return parts


def _rest(s: str, inside: tuple | None) -> tuple | None:
    """What is still open after reading `s` from state `inside`: None, or (the delimiter of
    an open multi-line string or None, the depth of unclosed brackets of a multi-line array)."""
    delim, depth = inside or (None, 0)
    i = 0
    if delim:                                        # in a multi-line string: look for its end
        end = s.find(delim)
        if end < 0:
            return inside
        i, delim = end + 3, None
    while i < len(s):
        c = s[i]
        if c == "#":
            break
        if s.startswith('"""', i) or s.startswith("'''", i):
            end = s.find(s[i:i + 3], i + 3)
            if end < 0:
                return s[i:i + 3], depth
            i = end + 3
            continue
        if c in "\"'":
            i += 1
            while i < len(s) and s[i] != c:
                i += 2 if c == '"' and s[i] == "\\" else 1
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return (None, depth) if depth > 0 else None
