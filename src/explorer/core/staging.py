"""Private staging folders: where an export or a model install writes before its files are
renamed into place. Each is made by this program with a marker file holding the process id
and a random token (the folder's own name ends with the token); a later run removes only
folders it can prove were made so by a process that no longer runs, and nothing else:
a user's file or folder with the same prefix, a copy whose token does not match, a marker
that is a link, a folder of another user all stay."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MARKER = ".token-explorer-staging"        # the file in each staging folder that says whose it is
_MAGIC = "token-explorer staging folder"  # the marker's first line
_TOKEN_CHARS = 24                         # hex digits of the random token
_MARKER_BYTES = 200                       # a marker is three short lines; a larger file is not one


def make_staging(base: Path, prefix: str) -> Path:
    """A new private folder `base/<prefix><token>` (mode 0700) holding its marker."""
    token = secrets.token_hex(_TOKEN_CHARS // 2)
    path = Path(base) / f"{prefix}{token}"
    os.mkdir(path, 0o700)
    fd = os.open(path / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, f"{_MAGIC}\n{os.getpid()}\n{token}\n".encode("ascii"))
    finally:
        os.close(fd)
    return path


def remove_staging(path: Path) -> None:
    """Remove a staging folder this process made, if it is still one (a real folder, not a
    link put in its place); its contents are unlinked, never followed."""
    if _marker_pid(Path(path)) == os.getpid():
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def staging_folder(base: Path, prefix: str) -> Iterator[Path]:
    """`with staging_folder(base, prefix) as folder:` a staging folder removed on the way
    out, whatever happens; stale ones of `prefix` in `base` are removed first."""
    remove_stale(base, prefix)
    path = make_staging(base, prefix)
    try:
        yield path
    finally:
        remove_staging(path)


def remove_stale(base: Path, prefix: str) -> list[Path]:
    """Remove the staging folders of `prefix` in `base` whose marker is valid and whose
    process is gone; the paths removed."""
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    removed = []
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = _marker_pid(Path(entry.path))
        if pid is not None and pid != os.getpid() and not process_runs(pid):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _marker_pid(folder: Path) -> int | None:
    """The process id in `folder`'s marker, if `folder` is a real folder of this user, mode
    0700, with a regular marker file of the expected form whose token ends the folder's
    name; else None."""
    try:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) != 0o700:
            return None
        fd = os.open(folder / MARKER, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, AttributeError):     # AttributeError: no getuid (not POSIX): nothing is ours for sure
        return None
    try:
        mst = os.fstat(fd)
        if not stat.S_ISREG(mst.st_mode) or mst.st_size > _MARKER_BYTES or mst.st_uid != os.getuid():
            return None
        lines = os.read(fd, _MARKER_BYTES).decode("ascii", "replace").split("\n")
    finally:
        os.close(fd)
    if (len(lines) != 4 or lines[0] != _MAGIC or lines[3] or not re.fullmatch(r"[1-9][0-9]{0,9}", lines[1])
            or not re.fullmatch(f"[0-9a-f]{{{_TOKEN_CHARS}}}", lines[2]) or not folder.name.endswith(lines[2])):
        return None
    return int(lines[1])


def process_runs(pid: int) -> bool:
    """Whether process `pid` runs (another user's process counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True
