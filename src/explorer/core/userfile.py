"""Files a user names: read only regular ones, up to a size and a nesting depth (limits
in `limits`), and replace only a regular file or a new path, never what a link points to."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import ExplorerError
from .limits import MAX_NESTING

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a folder", "a character device", …)."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def check_replaceable(path) -> Path:
    """`path` if a write may put a new file there: a new name in an existing folder, or a
    regular file. ExplorerError naming the path and what it is for anything else: a folder,
    a device or a pipe (renaming onto /dev/null would replace the device itself), and a
    symbolic link (the file it points to is not replaced behind the user's back)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise ExplorerError(f"{path}: the folder {str(path.parent)!r} does not exist") from None
        return path                                # a new file
    if stat.S_ISREG(mode):
        return path
    what = _link_kind(path) if stat.S_ISLNK(mode) else file_kind(mode)
    raise ExplorerError(f"{path}: is {what}; refusing to replace it "
                        "(it is not a regular file; expected a regular file or a new path)")


def _link_kind(path: Path) -> str:
    target = os.readlink(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return f"a symbolic link to {target}, which does not exist"
    return f"a symbolic link to {target}, which is {'a regular file' if stat.S_ISREG(mode) else file_kind(mode)}"


def check_regular(path, st: os.stat_result, limit: int, what: str, error=ExplorerError) -> None:
    """`error` unless `st` (of `path`) is a regular file of at most `limit` bytes."""
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: is {file_kind(st.st_mode)}, expected a {what} (a regular file)")
    if st.st_size > limit:
        raise error(f"{path}: {st.st_size:,} bytes, more than a {what} may hold ({limit:,} bytes)")


def open_regular(path, limit: int, what: str, error=ExplorerError) -> int:
    """A read-only descriptor of `path` once it is known to be a regular file of at most
    `limit` bytes. Opened without blocking (a FIFO with no writer would wait forever) and
    checked on the descriptor, so the file cannot change kind in between."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        check_regular(path, os.fstat(fd), limit, what, error)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_user_text(path, limit: int, what: str, error=ExplorerError) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes (a BOM is dropped).
    `what` names the kind of file in messages ("lesson file")."""
    path = Path(path)
    fd = open_regular(path, limit, what, error)
    try:
        with os.fdopen(fd, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:                        # it grew after the check
        raise error(f"{path}: more than a {what} may hold ({limit:,} bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02X} at offset {exc.start})") from None


def parse_problem(exc: BaseException) -> str | None:
    """What a parser's RecursionError or ValueError means for a user, or None for another error."""
    if isinstance(exc, RecursionError):
        return f"nested too deeply (at most {MAX_NESTING} lists or tables inside each other)"
    if isinstance(exc, ValueError) and "digits" in str(exc):
        return "a number has more than 4300 digits"
    return None


def check_nesting(value, source: str, error=ExplorerError, limit: int = MAX_NESTING) -> None:
    """`error` naming `source` if lists and dicts sit more than `limit` deep in `value`."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= limit:
            raise error(f"{source}: nested too deeply (at most {limit} lists or tables inside each other)")
        stack.extend((child, depth + 1) for child in children)
