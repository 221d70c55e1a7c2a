"""Numbers a user wrote in a file (JSON tensors, lesson logits and matrices) as checked
arrays: real numbers only, nested as deep as asked, rows of one length."""

from __future__ import annotations

import numpy as np

from .errors import ExplorerError


class NumbersError(ExplorerError):
    """Numbers that cannot be used: `where` (an index path such as "[2][0]", or "" for the
    whole value) and the `problem` there."""

    def __init__(self, where: str, problem: str):
        super().__init__(f"{where}: {problem}" if where else problem)
        self.where, self.problem = where, problem


def number_array(value, ndim: int) -> np.ndarray:  # nested lists -> float64 array of `ndim` dimensions
    """`value` (lists nested `ndim` deep, numbers inside) as a float64 array; otherwise a
    NumbersError saying where (`[2][0]`: "text '1.5', expected a number"). Finiteness is
    the caller's to check."""
    _check_nested(value, ndim, "")
    try:
        return np.array(value, dtype=np.float64)
    except ValueError:
        raise NumbersError("", "ragged: its rows have different lengths") from None
    except OverflowError:
        raise NumbersError("", "a number is too large for a float (more than about 1.8e308)") from None


def _check_nested(value, ndim: int, where: str) -> None:
    if ndim == 0:
        if not _is_number(value):
            raise NumbersError(where, f"{describe(value)}, expected a number")
        return
    if not isinstance(value, list):
        levels = "a list" if ndim == 1 else f"lists nested {ndim} deep"
        raise NumbersError(where, f"{describe(value)}, expected {levels} of numbers")
    if ndim == 1:
        if all(map(_is_number, value)):         # the common case, without a Python call per number
            return
    for i, item in enumerate(value):
        _check_nested(item, ndim - 1, f"{where}[{i}]")


def _is_number(value) -> bool:
    return type(value) in (int, float) or (isinstance(value, (int, float)) and not isinstance(value, bool))


def describe(value) -> str:
    """A value's kind in words, with the value when it is short: 'text "1.5"', 'true', 'a list'."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"text {value[:20]!r}" + ("…" if len(value) > 20 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    if value is None:
        return "null"
    return repr(value)[:40]
