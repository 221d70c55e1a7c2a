"""Quantities written for people: sizes in bytes."""

from __future__ import annotations


def byte_size(n: int) -> str:
    """A byte count in decimal units, as download sizes are given: "128 B", "276 kB", "98.4 MB",
    "1.54 GB"."""
    if n < 1000:
        return f"{n} B"
    if n < 1000 ** 2:
        return f"{n / 1000:.0f} kB"
    if n < 1000 ** 3:
        return f"{n / 1000 ** 2:.1f} MB"
    return f"{n / 1000 ** 3:.2f} GB"
