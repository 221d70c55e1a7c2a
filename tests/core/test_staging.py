"""Staging folders are recognised without doubt: only a folder this program made (its marker
holds a process id and the random token its name ends with), of a process that is gone, is
ever removed; decoys stay."""

from __future__ import annotations

import os
import subprocess
import sys

from paths import SRC

from explorer.core.staging import MARKER, make_staging, remove_stale, staging_folder

PREFIX = ".explorer-export-"


def made_by_a_process_that_is_gone(base) -> str:
    """The name of a staging folder made by a process that has exited."""
    code = f"from explorer.core.staging import make_staging; print(make_staging({str(base)!r}, {PREFIX!r}).name)"
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(SRC)),
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_only_the_folder_of_a_process_that_is_gone_is_removed(tmp_path):
    gone = made_by_a_process_that_is_gone(tmp_path)
    marker = (tmp_path / gone / MARKER).read_text()
    token = gone[len(PREFIX):]
    (tmp_path / gone / "01-input.png").write_bytes(b"half")
    live = make_staging(tmp_path, PREFIX)                         # this process runs: kept
    pid = marker.split("\n")[1]
    other = "a" * len(token)
    decoys = {                                                    # folder name -> (marker text, mode)
        f"{PREFIX}copied{other}": (marker, 0o700),                # a copy: its token is not the name's
        f"{PREFIX}wide{token}": (marker, 0o755),                  # a marker in a folder anyone may enter
        f"{PREFIX}parent{token}": (marker.replace(f"\n{pid}\n", f"\n{os.getppid()}\n"), 0o700),   # runs
        f"{PREFIX}long{token}": (marker + "x" * 500, 0o700),      # not a marker's size
        f"{PREFIX}user{token}": ("my notes\n", 0o700),            # a file of that name, not a marker
    }
    for name, (text, mode) in decoys.items():
        (tmp_path / name).mkdir()
        (tmp_path / name).chmod(mode)
        (tmp_path / name / MARKER).write_text(text)
    user = tmp_path / "mine"
    user.mkdir()
    (user / "thesis.txt").write_text("keep")
    (tmp_path / f"{PREFIX}link").symlink_to(tmp_path / gone, target_is_directory=True)   # a link to a stale one
    (tmp_path / f"{PREFIX}file.txt").write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert remove_stale(tmp_path, PREFIX) == [tmp_path / gone]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(before) - {gone})
    assert live.is_dir() and (user / "thesis.txt").read_text() == "keep"


def test_a_marker_that_is_a_link_is_not_believed(tmp_path):
    gone = made_by_a_process_that_is_gone(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes((tmp_path / gone / MARKER).read_bytes())
    (tmp_path / gone / MARKER).unlink()
    (tmp_path / gone / MARKER).symlink_to(elsewhere)
    assert remove_stale(tmp_path, PREFIX) == []
    assert (tmp_path / gone).is_dir() and elsewhere.exists()


def test_a_staging_folder_goes_on_the_way_out_whatever_happens(tmp_path):
    try:
        with staging_folder(tmp_path, PREFIX) as folder:
            (folder / "part").write_bytes(b"x")
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert list(tmp_path.iterdir()) == []
