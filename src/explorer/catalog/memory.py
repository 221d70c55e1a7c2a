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


def check_memory(summary: Summary, available: int | None = None) -> None:
    """NotEnoughMemory if the model of `summary` needs more than `available` bytes (default:
    what is available now)."""
    available = available_memory() if available is None else available
    if available is not None and summary.memory > available:
        raise NotEnoughMemory(
            f"{summary.path}: needs about {byte_size(summary.memory)} of memory here (its weights as this "
            f"explorer keeps them and the K/V cache of a {CONTEXT:,}-token run), but only "
            f"{byte_size(available)} is available; close other programs or choose a smaller model")
