"""The recovery file of unsaved lesson edits (lessons/recovery.py): kept atomically, offered
only when the process that kept it has ended, and a file this program did not write is
refused naming the field and what was expected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.lessons.recovery import FILE_NAME, RecoveryError, Unsaved, drop, keep, left_behind


def ended_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def rewritten(folder: Path, fields: dict) -> dict:
    """The recovery file in `folder` with `fields` changed, as another program might leave it."""
    record = json.loads((folder / FILE_NAME).read_text(encoding="utf-8")) | fields
    (folder / FILE_NAME).write_text(json.dumps(record), encoding="utf-8")
    return record


def test_edits_kept_by_an_ended_process_are_found_as_kept(tmp_path):
    unsaved = Unsaved(Path("/l/mine.toml"), Path("/l/mine.toml"), "saved = 1\n", "edited = 2\n")
    keep(tmp_path, unsaved)
    assert left_behind(tmp_path) is None                  # this process holds them
    pid = ended_pid()
    rewritten(tmp_path, {"pid": pid})
    found = left_behind(tmp_path)
    assert (found.path, found.file, found.saved, found.text, found.pid) == (
        unsaved.path, unsaved.file, unsaved.saved, unsaved.text, pid)
    drop(tmp_path)
    assert left_behind(tmp_path) is None and not (tmp_path / FILE_NAME).exists()
    drop(tmp_path)                                        # nothing there: nothing to do


@pytest.mark.parametrize("field, value, said", [
    ("pid", "12", "pid: expected a process id"), ("pid", True, "pid: expected a process id"),
    ("text", None, "text: expected the edited text"), ("saved", ["x"], "saved: expected the lesson's text"),
    ("path", 7, "path: expected the lesson's path"), ("file", {"a": 1}, "file: expected the path Save writes to"),
    ("written", "noon", "written: expected a time"), ("version", 2, "not a recovery file of this version"),
    ("format", "token-explorer/lesson", "not a recovery file of this version"),
])
def test_a_field_of_the_wrong_type_is_refused_by_name(tmp_path, field, value, said):
    keep(tmp_path, Unsaved(Path("/l/mine.toml"), None, "a = 1\n", "b = 2\n"))
    rewritten(tmp_path, {"pid": ended_pid(), field: value})
    with pytest.raises(RecoveryError, match=said) as caught:
        left_behind(tmp_path)
    assert FILE_NAME in str(caught.value)


def test_a_folder_that_cannot_hold_it_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(RecoveryError, match=rf"{FILE_NAME}: the unsaved edits cannot be kept there"):
        keep(blocker, Unsaved(Path("/l/mine.toml"), None, "a = 1\n", "b = 2\n"))
