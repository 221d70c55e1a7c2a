"""Reading and writing the project's JSON files: readable layout, atomic writes,
errors that name the file and the line."""

from __future__ import annotations

import json
import math
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .errors import ExplorerError
from .limits import MAX_PARAMS_BYTES
from .userfile import check_nesting, check_replaceable, parse_problem, read_user_text


def read_json(path, error=ExplorerError, limit: int = MAX_PARAMS_BYTES, what: str = "parameter file"):
    """Parse a JSON file of at most `limit` bytes (a regular file, nested at most
    MAX_NESTING deep); any problem raises `error` naming the file."""
    path = Path(path)
    text = read_user_text(path, limit, what, error)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except (RecursionError, ValueError) as exc:
        if (problem := parse_problem(exc)) is None:
            raise
        raise error(f"{path}: {problem}") from None
    check_nesting(value, str(path), error)
    return value


def dumps_readable(value, indent: int = 0) -> str:
    """JSON text with every list of numbers on one line, so a matrix reads row by row.

    The same value always gives the same bytes."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {dumps_readable(v, indent + 2)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return "[" + ", ".join(_scalar(v) for v in value) + "]"
        items = [inner + dumps_readable(v, indent + 2) for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return _scalar(value)


def _scalar(v) -> str:
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"cannot write {v} to JSON")
        return repr(v)
    return json.dumps(v, ensure_ascii=False)


@contextmanager
def atomic_file(path, staging=None):
    """`with atomic_file(path) as f:` writes bytes to a temporary file beside `path` (or in
    the folder `staging`, on the same file system) and renames it into place when the block
    ends; an exception (a failed check, a full disk) removes it and leaves whatever was at
    `path` before. Only a regular file or a new path is written (`check_replaceable`)."""
    path = check_replaceable(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=staging or path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)           # mkstemp makes it private; give it the usual mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path, text: str) -> None:
    """Write UTF-8 text with Unix line ends atomically (see atomic_file)."""
    with atomic_file(path) as f:
        f.write(text.encode("utf-8"))
