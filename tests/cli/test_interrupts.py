"""Ctrl+C, SIGTERM and a closed pipe end the command line and the window with one line
(or none) and the shell's usual status, never a traceback. Each case runs in its own
process, the signal sent by the process itself at a known point (no timing)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from paths import SRC as PATHS_SRC

SRC = str(PATHS_SRC)

# a command whose work is replaced by "the signal arrives in the middle of it"
COMMAND_INTERRUPTED = """
import os, signal, sys, time
from explorer.cli import main as cli, {module}
def run(args):
    os.kill(os.getpid(), signal.{signal})
    time.sleep(60)                       # never reached the end: the signal stops it
{module}.run = run
sys.exit(cli.main({argv!r}))
"""

# the window, the signal sent once its event loop runs
WINDOW_INTERRUPTED = """
import os, signal, sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
exec_ = QApplication.exec
def exec_then_signal():
    QTimer.singleShot(0, lambda: os.kill(os.getpid(), signal.{signal}))
    return exec_()
QApplication.exec = staticmethod(exec_then_signal)
from explorer.cli import main as cli
sys.exit(cli.main([]))
"""


def run_python(code: str, tmp_path, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path),
               XDG_CONFIG_HOME=str(tmp_path / "config"))     # the window's settings stay in tmp_path
    return subprocess.run([sys.executable, "-c", code], env=env, text=True, timeout=120, **kwargs)


@pytest.mark.parametrize("module, argv, sig, status, word", [
    ("trace", ["trace"], "SIGINT", 130, "interrupted"),
    ("sample", ["sample", "--logits", "2,1,0"], "SIGTERM", 143, "terminated"),
    ("fit", ["fit", "--out", "teaching.json"], "SIGINT", 130, "interrupted"),
])
def test_a_signal_ends_a_command_with_one_line(tmp_path, module, argv, sig, status, word):
    done = run_python(COMMAND_INTERRUPTED.format(module=module, signal=sig, argv=argv), tmp_path,
                      capture_output=True, cwd=tmp_path)
    assert done.returncode == status
    assert done.stderr.strip() == f"token-explorer {argv[0]}: {word}"


@pytest.mark.parametrize("sig, status, word", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")])
def test_a_signal_closes_the_window_with_one_line(tmp_path, sig, status, word):
    done = run_python(WINDOW_INTERRUPTED.format(signal=sig), tmp_path, capture_output=True)
    assert done.returncode == status
    assert f"token-explorer: {word}" in done.stderr and "Traceback" not in done.stderr


def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)                       # as `| head` after its lines: nobody reads
    try:
        done = run_python("import sys; from explorer.cli import main as cli; sys.exit(cli.main(['trace', '--lesson', 'beam']))",
                          tmp_path, stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert done.stderr == ""
    assert done.returncode == 128 + signal.SIGPIPE
