"""Writing an export's files into a folder: every file whole, and all of them or none."""

from __future__ import annotations

import os
import re
import shutil
import stat
import unicodedata
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.userfile import check_replaceable, file_kind

STAGING_PREFIX = ".explorer-export-"
NAME_CHARS = 40            # characters of a file name made from a prompt (Chinese is 3 bytes each: 120 of 255)
_UNSAFE = re.compile(r'[\\/:*?"<>|\s]+')     # separators, what Windows refuses, and white space
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{d}{n}" for d in ("COM", "LPT") for n in range(1, 10))}


def safe_file_name(text: str, fallback: str) -> str:
    """A file or folder name made from `text` (a prompt, a lesson id): no path separators, no
    control or format characters, nothing Windows refuses, at most NAME_CHARS characters,
    no leading dot; letters of any script kept ("我爱" stays 我爱). `fallback` when nothing is left."""
    spaced = _UNSAFE.sub("-", unicodedata.normalize("NFC", text))          # a line break parts words too
    name = "".join(c for c in spaced if unicodedata.category(c)[0] != "C").strip("-.")[:NAME_CHARS].rstrip("-.")
    return name if name and name.upper().split(".")[0] not in _RESERVED else fallback


def check_target(path: Path) -> None:
    """Refuse to replace anything but a regular file or a new name (`check_replaceable`)."""
    try:
        check_replaceable(path)
    except ExplorerError as exc:
        raise ExplorerError(f"{exc}; nothing was written") from None


def check_out_folder(folder: Path) -> None:
    """ExplorerError unless `folder` is a writable folder or can be made one: names what is
    there instead ("/dev/full is a character device") and what is expected (a folder)."""
    folder = Path(folder)
    for path in (folder, *folder.parents):            # the folder, or its nearest part that exists
        try:
            st = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):   # below a file: the file is named further up
            continue
        except OSError as exc:
            raise ExplorerError(f"--out {folder}: {path} cannot be looked at ({exc.strerror})") from None
        if not stat.S_ISDIR(st.st_mode):
            what = "a regular file" if stat.S_ISREG(st.st_mode) else file_kind(st.st_mode)
            where = "" if path == folder else f" (part of the path {folder})"
            raise ExplorerError(f"--out {folder}: {path} is {what}{where}; expected a folder (an existing one, or a "
                                f"new name to create)")
        if not os.access(path, os.W_OK | os.X_OK):
            doing = "write into it" if path == folder else f"create {folder} in it"
            raise ExplorerError(f"--out {folder}: the folder {path} is not writable (no permission to {doing})")
        return


def remove_stale_staging(folder: Path) -> None:
    """Remove what an export killed before it could clean up left in `folder`: temporary
    files (and the staging folders of older versions) of processes that no longer run."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or _owner_runs(entry.name):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            Path(entry.path).unlink(missing_ok=True)


def _owner_runs(name: str) -> bool:
    pid = name[len(STAGING_PREFIX):].split("-", 1)[0]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True            # someone else's process: leave its files alone
    return True


class StagedFiles:
    """`with StagedFiles(folder) as files: files.add(name, data); ...; paths = files.commit()`.

    Each file is written beside its target under a temporary name (".explorer-export-<pid>-
    <name>") and the names are swapped in together at the end; a failure, a cancel or Ctrl+C
    removes the temporary files on the way out. Nothing but a regular file (or a new name)
    is ever replaced. Temporary files a killed export left behind are removed by the next
    export into the same folder."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._staged: dict[str, Path] = {}      # final name -> temporary path

    def __enter__(self) -> StagedFiles:
        remove_stale_staging(self.folder)
        return self

    def __exit__(self, *exc) -> None:
        for tmp in self._staged.values():       # not committed: a failure, a cancel, Ctrl+C
            tmp.unlink(missing_ok=True)
        self._staged.clear()

    def add(self, name: str, data: bytes) -> None:
        check_target(self.folder / name)
        tmp = self.folder / f"{STAGING_PREFIX}{os.getpid()}-{name}"
        self._staged[name] = tmp
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def commit(self) -> list[Path]:
        """Swap every file into place, in name order; returns the final paths."""
        for name in self._staged:
            check_target(self.folder / name)      # nothing became a link or a folder meanwhile
        done = []
        for name in sorted(self._staged):
            os.replace(self._staged.pop(name), self.folder / name)
            done.append(self.folder / name)
        return done
