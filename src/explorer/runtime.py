"""Process-wide settings the app makes once, at start-up (`explorer` and its sub-commands)."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TOP_PAD = -2               # glibc's mallopt parameter: bytes kept at the top of the heap
TOP_PAD_BYTES = 16 << 20     # room for a few dozen (V,)-sized temporaries of a 49k vocabulary


def tune_allocator() -> bool:
    """Keep 16 MB at the top of the C heap instead of handing memory back after every
    large free.

    A sampling step on a 49,152-id vocabulary makes a few dozen 400 KB numpy
    temporaries. With glibc's defaults the heap shrinks when they are freed and grows
    again for the next ones, and every regrown page faults: a draw then takes three times
    as long (benchmarks/bench_sampling.py). Linux with glibc only; elsewhere nothing
    changes. Returns whether the setting was applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(M_TOP_PAD, TOP_PAD_BYTES))
