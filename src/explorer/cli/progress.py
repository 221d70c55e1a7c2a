"""Progress of long work as one line redrawn in place on a terminal (stderr): an install's
bytes, an export's files. Elsewhere (a log, a pipe) nothing is drawn, and the command's own
messages are printed as they are."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

REDRAW_SECONDS = 0.2      # the progress line on a terminal is redrawn at most this often


class ProgressLine:
    """`show(stage, done, total)` redraws the line `describe(stage, done, total)` gives, at
    most every REDRAW_SECONDS (the last value always); `print` writes a message on a line of
    its own; `clear` removes the line (before the command's output)."""

    def __init__(self, describe: Callable[[str, int, int], str], stream=None):
        self.describe = describe
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.drawn = ""                   # the progress line on screen, if any
        self.last = (None, 0.0)           # (stage, when) of the last redraw

    def show(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if not self.live or (stage == self.last[0] and now - self.last[1] < REDRAW_SECONDS and done < total):
            return
        self.last = (stage, now)
        text = self.describe(stage, done, total)
        self.stream.write("\r" + text.ljust(len(self.drawn)))
        self.stream.flush()
        self.drawn = text

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r" + " " * len(self.drawn) + "\r")
            self.stream.flush()
            self.drawn = ""

    def print(self, text: str, file=None) -> None:
        """A message on a line of its own (the progress line, if drawn, is cleared first)."""
        self.clear()
        print(text, file=file or sys.stdout, flush=True)


def percent(done: int, total: int) -> str:
    return f"{100 * done // max(1, total)}%"
