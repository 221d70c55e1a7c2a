"""A lesson frame's plan picked from its scenario's derived frames, and what a frame asks the
session to compute on its scenario (a vote, a search): the lesson half of `Session._compute`."""

from __future__ import annotations

from dataclasses import replace

from ..core.decode.vote import self_consistency
from ..core.errors import SettingError
from .frames import Frame
from .lens import lens_of
from .versus import lesson_versus


def computed_frame(frame: Frame, s, done: dict, index: int) -> Frame:
    """A lesson frame with the vote and the search it asks for, computed on its scenario `s` as
    the teacher's changes left it (a slider moves the vote too)."""
    if frame.samples:
        key = ("vote", s, frame.samples)
        if key not in done:
            try:
                done[key] = self_consistency(s.model, s.prompt_ids, s.config, frame.samples, dict(s.overrides))
            except SettingError as exc:
                raise SettingError(f"frames[{index}].samples: {exc}") from None
        frame = replace(frame, vote=done[key])
    if frame.search is not None:
        key = ("search", s, frame.search)
        if key not in done:
            done[key] = frame.search.run(s.model, s.prompt_ids)
        frame = replace(frame, search_result=done[key])
    return frame


def pick_frame(derived: tuple[Frame, ...], plan, index: int, strict: bool) -> Frame:
    """The derived frame a plan names; without `strict`, the nearest one when a teacher's
    change made the Run too short for it."""
    steps = [f.step for f in derived if f.step is not None]
    step = (max(steps) if steps else None) if plan.step == -1 else plan.step
    for f in derived:
        if f.kind == plan.kind and f.step == step:
            return f
    if strict:
        raise LessonFrameError(index, plan, max(steps) if steps else None)
    same_kind = [f for f in derived if f.kind == plan.kind]
    return same_kind[-1] if same_kind else derived[-1]


class LessonFrameError(SettingError):
    """A lesson frame names a step its Run does not have."""

    def __init__(self, index: int, plan, last_step: int | None):
        self.index = index
        super().__init__(f"frames[{index}].step: {plan.kind} of step {plan.step} does not exist: the run of "
                         f"this frame has steps 0..{last_step}")


def compared_frame(frame: Frame, effective: tuple, runs: dict, own: int, index: int) -> Frame:
    """A lesson frame with the A/B view it asks for (`compare`): its scenario's run beside the
    other scenario's, both as the teacher's changes left them (models whose tokenizers differ:
    SettingError naming the frame)."""
    if frame.compare is None:
        return frame
    a, b = effective[own], effective[frame.compare]
    try:
        return replace(frame, versus=lesson_versus(a, b, runs[a], runs[b]))
    except SettingError as exc:
        raise SettingError(f"frames[{index}].compare: {exc}") from None


def lensed_frame(frame: Frame, model, run) -> Frame:
    """A lesson frame that shows the logit lens, with its lens (its texts quote the commitment layer)."""
    if "lens" not in frame.panels or frame.step is None:
        return frame
    return replace(frame, lens=lens_of(model, run.steps[frame.step]))
