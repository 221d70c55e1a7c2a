"""Ctrl+C, SIGTERM and a closed pipe, as a terminal user expects them: one line on stderr
and the shell's usual status (130, 143), never a traceback; a reader that goes away ends
the command quietly."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager

SIGPIPE_STATUS = 128 + 13       # what a shell reports for a process ended by SIGPIPE


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop as after Ctrl+C.

    SIGTERM turned into a KeyboardInterrupt (`sigterm_as_interrupt`), so code that cleans
    up after Ctrl+C (an export's staging files) cleans up after a kill too."""


def exit_status(signum: int) -> int:
    """The status a shell reports for a process stopped by signal `signum` (SIGINT: 130)."""
    return 128 + signum


def _raise_terminated(signum, frame):
    raise Terminated()


@contextmanager
def sigterm_as_interrupt():
    """Inside the block SIGTERM raises Terminated (in the main thread) instead of killing
    the process where it stands; the previous handler comes back afterwards."""
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupted_status(exc: KeyboardInterrupt, prog: str) -> int:
    """Say on stderr that `prog` was stopped; the exit status for it."""
    terminated = isinstance(exc, Terminated)
    print(f"{prog}: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
    return exit_status(signal.SIGTERM if terminated else signal.SIGINT)


def silence_stdout() -> int:
    """After a broken pipe: stdout goes to the null device (the interpreter's last flush
    then has nowhere to fail); the status of a process ended by SIGPIPE."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return SIGPIPE_STATUS
