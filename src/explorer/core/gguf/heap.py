"""Settings of this process's C allocator (glibc's malloc, under numpy) for a big model:
keep freed per-step arrays for reuse, give a load's freed memory back (no-ops off glibc);
and Python's cyclic garbage collector held off while a model loads."""

from __future__ import annotations

import ctypes
import gc
import threading
from contextlib import contextmanager

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3       # mallopt parameters (malloc.h)
MMAP_THRESHOLD = 8 << 20     # arrays below this reuse freed heap memory (262,144 float64: 2 MB)
TRIM_THRESHOLD = 64 << 20    # freed memory kept for reuse before glibc returns it


def _libc():
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:                                  # not glibc (macOS, Windows, musl)
        return None


def keep_freed_arrays() -> None:
    # a Gemma 3 sampling step makes a dozen 2 MB arrays; as fresh pages each (glibc's default
    # above 128 kB) they cost ~500 page faults apiece: 11 ms a step instead of 0.9 ms
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def return_freed_memory() -> None:
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_paused = {"loads": 0, "was_enabled": False}
_pausing = threading.Lock()


@contextmanager
def collector_paused():
    """No cyclic garbage collection inside: a load makes a few hundred thousand objects
    that live on (numba's types and loops, a vocabulary's lists), and the collector,
    counting them as they came, walked them again and again, full passes included: a
    tenth of a SmolLM2 load. Collection resumes after the last of the loads in progress
    (on any thread) ends, if it was on when the first began, with the one pass over the
    young objects that the next allocation would start anyway (here, so that a load's
    time holds it and the first Prefill after it does not): about half the collector's
    time before. A load leaves little cyclic garbage."""
    with _pausing:
        if _paused["loads"] == 0:
            _paused["was_enabled"] = gc.isenabled()
            gc.disable()
        _paused["loads"] += 1
    try:
        yield
    finally:
        with _pausing:
            _paused["loads"] -= 1
            if _paused["loads"] == 0 and _paused["was_enabled"]:
                gc.enable()
                gc.collect(0)
