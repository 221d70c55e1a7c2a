"""The logit lens of the frame a session shows, computed once per step shown."""

from __future__ import annotations

from threading import Lock

from ..core.models.lens import Lens, LensMemo

_MEMO = LensMemo()   # keyed by the Step records themselves: shared by every session and its copies
_LOCK = Lock()       # an export's copy may ask from another thread


def frame_lens(session) -> Lens | None:
    """The raw logit lens of the session's current step (None before the first forward, or
    for a model without layers: a table model)."""
    return lens_of(session.model, session.step)


def lens_of(model, step) -> Lens | None:
    """The lens of Run step `step` of `model` (None for no step or a model without layers)."""
    with _LOCK:
        return _MEMO.of(model, step)
