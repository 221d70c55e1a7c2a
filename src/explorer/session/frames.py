"""Frames: what the player shows at one moment of a Run (input, Prefill, each pick and
Decode, the stop)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

from ..core.decode.generate import Run
from ..core.decode.search import SearchResult, SearchSpec
from ..core.decode.usage import Usage
from ..core.decode.vote import Vote
from .panels import DEFAULT_SLIDE_PANELS, SLIDE_PANELS

if TYPE_CHECKING:
    from ..core.models.lens import Lens
    from .versus import Versus


class TokenState(str, Enum):
    PROCESSED = "processed"   # went through the model: its K/V are in the cache
    SELECTED = "selected"     # chosen from the logits, not yet fed back in
    PENDING = "pending"       # known input that no forward has processed yet


@dataclass(frozen=True)
class Frame:
    """Which visible tokens are processed (in the cache), which one is selected (chosen, not yet
    processed) and which are pending (known input, not yet run)."""
    kind: str                       # "input" | "prefill" | "decode" | "pick" | "stop"
    step: int | None                # index of the Run step this frame belongs to (None: before any)
    visible_ids: tuple[int, ...]    # tokens on screen at this moment
    states: tuple[TokenState, ...]  # one per visible token
    cache_len: int                  # processed tokens = what the KV cache holds
    # Authored by a lesson (None / empty: the derived defaults)
    title: dict | None = None       # lang -> title
    explain: dict | None = None     # section -> {lang -> text}
    panels: tuple[str, ...] = ()    # panels that matter for this frame (ids from PANELS)
    view: tuple[str, ...] = ()      # display hints, e.g. "attention_full" (stack every step)
    attention: tuple[int, int] | None = None   # (layer, head) the attention panel turns to
    samples: tuple[int, ...] = ()   # seeds of a self-consistency vote over this frame's scenario
    search: SearchSpec | None = None           # an evaluator search over this frame's scenario
    ask: dict | None = None         # lang -> a question the class answers before `ask_panels` are shown
    ask_panels: tuple[str, ...] = ()   # the panels (ids of SLIDE_PANELS) hidden until the answer is revealed
    compare: int | None = None      # the scenario (index) whose run the A/B view sets beside this frame's
    # Computed by the session for a lesson frame (None / empty: not asked for)
    vote: Vote | None = None
    versus: "Versus | None" = None  # the A/B view of `compare` (session.versus)
    lens: "Lens | None" = None      # the logit lens of a lesson frame that shows it (for its placeholders)
    search_result: SearchResult | None = None
    usages: tuple[tuple[str, Usage], ...] = ()   # (scenario name, usage of its whole run), every scenario
    changed: tuple = ()             # Change records: how the scenario shown differs from the lesson's

    @property
    def visible_count(self) -> int:
        return len(self.visible_ids)

    @property
    def shows_forward(self) -> bool:
        """Frames whose attention/K/V come from a forward pass of `step`."""
        return self.kind in ("prefill", "decode")

    @property
    def shows_distribution(self) -> bool:
        return self.kind in ("pick", "stop")

    @property
    def asks_the_pick(self) -> bool:
        """A question on a pick frame whose distribution it hides asks for the token picked:
        until the answer, nothing on screen may show that token."""
        return self.ask is not None and self.kind == "pick" and "distribution" in self.ask_panels

    def asked(self) -> Frame:
        """The frame as shown while its question is open: titled by the question, and, when
        it asks for the pick (`asks_the_pick`), the moment before the pick (the forward of
        its step, the picked token not yet on screen) showing the panels of the pick frame."""
        frame = replace(self, title=self.ask)
        if not self.asks_the_pick:
            return frame
        return replace(frame, kind="prefill" if self.step == 0 else "decode", visible_ids=self.visible_ids[:-1],
                       states=self.states[:-1], panels=self.panels or DEFAULT_SLIDE_PANELS["pick"])

    def slide_panels(self, has_layers: bool, has_beam: bool) -> tuple[str, ...]:
        """The panels a slide of this frame shows: those it names that draw the run, else
        the defaults of its kind; never an empty panel beside others: no attention panel,
        cache grid or logit lens for a model without layers (a table model), no beam tree where no beam
        search ran, no distribution or attention before the first forward."""
        def keep(ids):
            return tuple(p for p in ids if p in SLIDE_PANELS and (has_layers or p not in ("attention", "kv", "lens"))
                         and (has_beam or p != "beam")
                         and (self.step is not None or p not in ("attention", "distribution", "lens")))
        return keep(self.panels) or keep(DEFAULT_SLIDE_PANELS[self.kind]) or ("timeline",)


def _states(n_processed: int, n_selected: int, n_pending: int = 0):
    return ((TokenState.PROCESSED,) * n_processed + (TokenState.SELECTED,) * n_selected
            + (TokenState.PENDING,) * n_pending)


def most_frames_of_run(max_new_tokens: int) -> int:
    """The most frames `frames_of_run` makes of a run of up to `max_new_tokens` steps (a
    step per token at most): the input, a forward and a pick per step, the stop."""
    return 2 * max_new_tokens + 2


def frames_of_run(run: Run) -> tuple[Frame, ...]:
    prompt = run.prompt_ids
    frames = [Frame("input", None, prompt, _states(0, 0, len(prompt)), 0)]
    for step in run.steps:
        processed = run.visible_ids[:step.cache_len_after]
        frames.append(Frame("prefill" if step.phase == "prefill" else "decode", step.index,
                            processed, _states(len(processed), 0), step.cache_len_after))
        picked = processed + (step.selected_id,)
        frames.append(Frame("pick", step.index, picked, _states(len(processed), 1), step.cache_len_after))
    last = frames[-1]
    frames.append(Frame("stop", last.step, last.visible_ids, last.states, last.cache_len))
    return tuple(frames)
