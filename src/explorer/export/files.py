"""Writing an export's files into a folder: every file whole, and all of them or none."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.staging import make_staging, remove_stale, remove_staging
from ..core.userfile import check_replaceable, file_kind

STAGING_PREFIX = ".explorer-export-"     # the private staging folders (`core.staging`)
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


def nearest_folder(folder: Path) -> Path:
    """`folder`, or its nearest part that exists (where its staging folder is made, on the
    same file system as the folders `commit` creates below it)."""
    folder = Path(folder).absolute()
    return next(p for p in (folder, *folder.parents) if p.is_dir())


class StagedFiles:
    """`with StagedFiles(folder) as files: files.add(name, data); ...; paths = files.commit()`.

    Each file is written into a private staging folder (`core.staging`: a marker with this
    process's id and a random token) beside the target folder, or beside its nearest part
    that exists; `commit` creates the target folder if missing and renames the files in
    together. A failure, a cancel or Ctrl+C removes the staging folder on the way out, and
    a target folder that did not exist is not created: a failed export leaves nothing.
    Nothing but a regular file (or a new name) is ever replaced. Staging folders a killed
    export left behind are removed by the next export into the same place; nothing else is."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._staged: dict[str, Path] = {}      # final name -> staged path
        self._staging: Path | None = None

    def __enter__(self) -> StagedFiles:
        base = nearest_folder(self.folder)
        remove_stale(base, STAGING_PREFIX)
        self._staging = make_staging(base, STAGING_PREFIX)
        return self

    def __exit__(self, *exc) -> None:
        self._staged.clear()
        if self._staging is not None:           # not committed, or committed: the folder goes
            remove_staging(self._staging)
            self._staging = None

    def add(self, name: str, data: bytes) -> None:
        if self.folder.is_dir():                # a folder still to create has nothing to replace
            check_target(self.folder / name)
        tmp = self._staging / f"{len(self._staged):05d}"    # staged under a number: any name fits
        self._staged[name] = tmp
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)

    def commit(self) -> list[Path]:
        """Create the folder if missing, swap every file into place, in name order; returns
        the final paths."""
        created = [p for p in (self.folder, *self.folder.parents) if not p.exists()]
        self.folder.mkdir(parents=True, exist_ok=True)
        done = []
        try:
            for name in self._staged:
                check_target(self.folder / name)      # nothing became a link or a folder meanwhile
            for name in sorted(self._staged):
                os.replace(self._staged.pop(name), self.folder / name)
                done.append(self.folder / name)
        except BaseException:
            if not done:                              # nothing moved in: the folders made go again
                for path in created:
                    try:
                        path.rmdir()
                    except OSError:
                        break
            raise
        return done
