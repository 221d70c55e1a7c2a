"""Whether a model fits in the memory this computer has left, asked before it is loaded:
a model too big is refused with its estimate instead of pushing the machine into swap."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import ExplorerError
from ..core.gguf.summary import CONTEXT, Summary
from ..units import byte_size

MEMINFO = Path("/proc/meminfo")        # Linux's; elsewhere nothing is refused


class NotEnoughMemory(ExplorerError):
    """A model whose estimated size exceeds the memory available; the message gives both."""


def available_memory(meminfo: Path = MEMINFO) -> int | None:
    """Bytes the kernel says a program can still have without swapping (MemAvailable), or
    None where there is no /proc/meminfo to ask."""
    try:
        for line in meminfo.read_text(encoding="ascii").splitlines():
            key, _, value = line.partition(":")
            if key == "MemAvailable":
                return int(value.split()[0]) * 1024       # "MemAvailable:  8124376 kB"
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_memory(summary: Summary, available: int | None = None) -> bool:
    """Whether the model of `summary` must be read in place from its file to fit in
    `available` bytes (default: what is available now): False when it fits as this explorer
    keeps its weights, True when it fits only read in place (slower Decode steps, about the
    file's size in memory); NotEnoughMemory, with both estimates, when it fits neither way."""
    available = available_memory() if available is None else available
    if available is None or summary.memory <= available:
        return False
    if 0 < summary.memory_in_place <= available:
        return True
    least = min(summary.memory, summary.memory_in_place or summary.memory)
    raise NotEnoughMemory(
        f"{summary.path}: needs about {byte_size(summary.memory)} of memory here (its weights as this "
        f"explorer keeps them and the K/V cache of a {CONTEXT:,}-token run; at least {byte_size(least)} with "
        f"its weights read in place from the file), but only {byte_size(available)} is available; close other "
        f"programs or choose a smaller model")
