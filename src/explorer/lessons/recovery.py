"""Edits of a lesson that are not saved yet, kept in a file as they are made (the window's
lesson editor writes it after every edit, undo and redo, and removes it once they are saved
or discarded), so that after a crash or a killed process the next start can offer them back.

One file per settings folder, as there is one window per user and settings folder. It holds
the lesson's text as it was opened or last saved and its text with the edits, so a restored
lesson still knows it has edits to save and where it would save them."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import read_json, write_text_atomic
from ..core.limits import MAX_LESSON_BYTES
from ..core.staging import process_runs

FILE_NAME = "unsaved-lesson.json"
FORMAT = "token-explorer/unsaved-lesson"
VERSION = 1


class RecoveryError(ExplorerError):
    """The recovery file cannot be written or read: the message names it and why."""


@dataclass(frozen=True)
class Unsaved:
    """A lesson with edits not saved."""
    path: Path              # where it is read from (its relative model files are found beside it)
    file: Path | None       # where Save writes without asking (None: it asks where)
    saved: str              # its TOML text as opened or last saved
    text: str               # its TOML text with the edits
    pid: int = 0            # the process that made the edits
    written: float = 0.0    # when they were last kept (seconds since the epoch)


def recovery_path(folder) -> Path:
    return Path(folder) / FILE_NAME


def keep(folder, unsaved: Unsaved) -> None:
    """Write `unsaved` (as made by this process, now) atomically: a crash while writing
    leaves the edits kept before. RecoveryError naming the file when it cannot be written."""
    path = recovery_path(folder)
    record = {"format": FORMAT, "version": VERSION, "pid": os.getpid(), "written": time.time(),
              "path": str(unsaved.path), "file": None if unsaved.file is None else str(unsaved.file),
              "saved": unsaved.saved, "text": unsaved.text}
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    except (OSError, ExplorerError) as exc:
        raise RecoveryError(f"{path}: the unsaved edits cannot be kept there "
                            f"({getattr(exc, 'strerror', None) or exc})") from None


def drop(folder) -> None:
    """The edits were saved or discarded: nothing to offer at the next start."""
    path = recovery_path(folder)
    if not path.exists():
        return
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise RecoveryError(f"{recovery_path(folder)}: cannot be removed ({exc.strerror or exc}); "
                            "the next start may offer edits that were saved") from None


def left_behind(folder) -> Unsaved | None:
    """The edits a window that ended without saving them left in `folder`, or None (none,
    or they belong to a window of this user that still runs). RecoveryError naming the file
    and the field when it is not one this program wrote."""
    path = recovery_path(folder)
    if not path.exists():
        return None
    data = read_json(path, RecoveryError, limit=4 * MAX_LESSON_BYTES, what="recovery file")

    def field(name: str, kind, what: str, optional: bool = False):
        value = data.get(name)
        if (value is None and optional) or (isinstance(value, kind) and not isinstance(value, bool)):
            return value
        raise RecoveryError(f"{path}: {name}: expected {what}, not {str(value)[:40]!r}")

    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise RecoveryError(f"{path}: not a recovery file of this version of Token Explorer "
                            f"(expected format {FORMAT!r}, version {VERSION})")
    file = field("file", str, "the path Save writes to, or null", optional=True)
    unsaved = Unsaved(Path(field("path", str, "the lesson's path")), None if file is None else Path(file),
                      field("saved", str, "the lesson's text as saved"), field("text", str, "the edited text"),
                      field("pid", int, "a process id"), float(field("written", (int, float), "a time")))
    return None if _maker_runs(unsaved.pid) else unsaved


def _maker_runs(pid: int) -> bool:
    """Whether the process that kept the edits still runs: this one (another of its windows
    holds them), or another process of this id."""
    if pid == os.getpid():
        return True
    return pid > 0 and process_runs(pid)
