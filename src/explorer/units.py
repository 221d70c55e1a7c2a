"""Quantities written for people: sizes in bytes."""

from __future__ import annotations


def byte_size(n: int) -> str:
    """A byte count in decimal units, as download sizes are given: "128 B", "276 kB", "98.4 MB"."""
    if n < 1000:
        return f"{n} B"
    if n < 1000 ** 2:
        return f"{n / 1000:.0f} kB"
    return f"{n / 1000 ** 2:.1f} MB"
