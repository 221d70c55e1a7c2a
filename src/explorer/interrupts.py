"""Ctrl+C, SIGTERM and a closed pipe, as a terminal user expects them: one line on stderr
and the shell's usual status (130, 143), never a traceback; a reader that goes away, or a
standard output closed from the start (`>&-`), ends the command quietly with 141."""

from __future__ import annotations

import errno
import io
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


class ClosedOutput(io.TextIOBase):
    """Standard output of a command started with it closed (`>&-`): the first write ends the
    command as a closed pipe does (BrokenPipeError, status 141); the process's descriptor 1
    is the null device meanwhile (`guard_standard_streams`)."""

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return 1                          # the null device, put there by `guard_standard_streams`

    def write(self, text: str) -> int:
        if text:
            raise BrokenPipeError(errno.EPIPE, "standard output is closed")
        return 0


def guard_standard_streams(command: bool) -> None:
    """Put the null device on each of the descriptors 0, 1, 2 that the process was started
    without, so that no file opened later takes a standard stream's number (a library writing
    to "standard output" would write into a slide being exported). For a `command` (not the
    window), a closed standard output then ends the command at its first line (ClosedOutput)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        if fd == 1:
            sys.stdout = ClosedOutput() if command else open(1, "w", closefd=False)
        elif fd == 2:
            sys.stderr = open(2, "w", closefd=False)   # None would send print(file=sys.stderr) to stdout


def os_error_text(exc: OSError) -> str:
    """An OS error in words, a full disk said as such ("the disk is full (No space left on device)")."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        reason = f"the disk is full ({reason})"
    return f"{exc.filename}: {reason}" if exc.filename else reason
