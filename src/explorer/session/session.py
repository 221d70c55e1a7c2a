"""Session: the state of one explorer window, without Qt.

A session plays frames. Without a lesson they are derived from one Run (input, Prefill,
each pick and Decode, the stop). A lesson brings its own frames, each on a scenario (model,
prompt, settings, what-if choices) of its own, so one lesson can compare temperatures or
stop reasons frame by frame. What the teacher changes (a slider, a forced token, the
prompt, the model) is a layer over every scenario.

Changing something reruns generation and emits `run_changed` (the cursor stays on the
same frame, or the nearest one that still exists); moving the cursor emits
`cursor_changed`, or `run_changed` when the new frame shows another Run; `lang_changed`
for the language. All carry the session. A rejected change raises (SettingError,
PromptError, ...) and leaves the state as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..core.beam import BeamResult, beam_search
from ..core.errors import SettingError
from ..core.generate import Run, Step, generate
from ..core.model import LanguageModel
from ..core.sampling import SamplingConfig
from ..i18n import LANGS
from .events import Emitter
from .frames import Frame, frames_of_run

DEFAULT_CONFIG = SamplingConfig(max_new_tokens=8)   # the teaching model ends by EOS well before 8
UNDO_LIMIT = 100                                     # what-if choices remembered for undo


@dataclass(frozen=True)
class Scenario:
    """Everything that determines one Run."""

    model: LanguageModel
    prompt_ids: tuple[int, ...]
    config: SamplingConfig
    overrides: tuple[tuple[int, int], ...] = ()      # (step, forced id), sorted


@dataclass(frozen=True)
class FramePlan:
    """A lesson frame: which frame of which scenario's Run, and the lesson's own words."""

    scenario: int                   # index into the session's scenarios
    kind: str                       # a derived frame kind: input | prefill | decode | pick | stop
    step: int | None                # its step; None for input, -1 = the last step
    extras: dict = field(default_factory=dict)   # Frame fields: title, explain, panels, view


@dataclass
class _UserLayer:
    """What the teacher changed, applied over every scenario."""

    config: dict = field(default_factory=dict)       # SamplingConfig field -> value
    overrides: dict = field(default_factory=dict)    # step -> forced id
    prompt: tuple[int, ...] | None = None
    model: LanguageModel | None = None


class Session:
    def __init__(self, model: LanguageModel, prompt_ids, config: SamplingConfig = DEFAULT_CONFIG, *,
                 check_recompute: bool = True, scenarios: tuple[Scenario, ...] = (),
                 plans: tuple[FramePlan, ...] = (), strict: bool = True):
        """Without `plans`: one scenario (model, prompt, config) and its derived frames.
        With `plans` (a lesson): the frames they name, on `scenarios`; `strict` makes a plan
        that names a frame its Run does not have an error (a lesson file being loaded)."""
        self.events = Emitter()
        self._check_recompute = check_recompute
        self._scenarios = scenarios or (Scenario(model, tuple(prompt_ids), config),)
        self._plans = plans
        self._user = _UserLayer()
        self._history: list[dict[int, int]] = []     # earlier user overrides, for undo
        self._lang = "en"
        self._cursor = 0
        self._runs: dict[Scenario, Run] = {}
        self._beams: dict[Scenario, BeamResult] = {}
        self._resolve(strict=strict)

    # ------------------------------------------------------------------ reading
    frames: tuple[Frame, ...] = property(lambda self: self._frames)
    cursor = property(lambda self: self._cursor)
    can_undo = property(lambda self: bool(self._history))
    lang = property(lambda self: self._lang)                      # "en" | "zh"
    in_lesson = property(lambda self: bool(self._plans))

    @property
    def frame(self) -> Frame:
        return self._frames[self._cursor]

    @property
    def scenario(self) -> Scenario:
        """The effective scenario (teacher's changes included) of the current frame."""
        return self._effective[self._frame_scenario[self._cursor]]

    model = property(lambda self: self.scenario.model)
    prompt_ids = property(lambda self: self.scenario.prompt_ids)
    config = property(lambda self: self.scenario.config)
    overrides = property(lambda self: dict(self.scenario.overrides))

    @property
    def run(self) -> Run:
        return self._runs[self.scenario]

    def run_at(self, index: int) -> tuple[Run, LanguageModel]:
        """The Run and the model that frame `index` shows (frames of a lesson differ)."""
        scenario = self._effective[self._frame_scenario[index]]
        return self._runs[scenario], scenario.model

    @property
    def beam(self) -> BeamResult | None:
        """The beam-search tree of the current scenario, in beam mode."""
        return self._beams.get(self.scenario)

    @property
    def step(self) -> Step | None:
        """The Run step of the current frame (None on the input-only frame)."""
        return None if self.frame.step is None else self.run.steps[self.frame.step]

    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        """Every scenario the frames play, with the teacher's changes applied."""
        return self._effective

    def scenario_results(self) -> list[tuple[Run, BeamResult | None]]:
        """(Run, beam tree or None) of every scenario, in order."""
        return [(self._runs[s], self._beams.get(s)) for s in self._effective]

    def subscribe(self, event: str, callback):
        return self.events.subscribe(event, callback)

    def copy(self) -> "Session":
        """An independent session in the same state (exports step through their own copy,
        so the window the class is watching does not move)."""
        other = Session.__new__(Session)
        other.__dict__.update(self.__dict__)
        other.events = Emitter()
        other._user = replace(self._user, config=dict(self._user.config), overrides=dict(self._user.overrides))
        other._history = list(self._history)
        other._runs, other._beams = dict(self._runs), dict(self._beams)
        return other

    # ------------------------------------------------------------------ changing what runs
    def play(self, scenarios: tuple[Scenario, ...], plans: tuple[FramePlan, ...] = ()) -> None:
        """Switch to other content (another lesson) in place, so every subscriber stays; the
        teacher's changes and the undo history start afresh, the cursor at the first frame."""
        old = (self._scenarios, self._plans, self._user, self._history, self._cursor)
        self._scenarios, self._plans, self._user, self._history, self._cursor = scenarios, plans, _UserLayer(), [], 0
        try:
            self._resolve(strict=True)
        except Exception:
            self._scenarios, self._plans, self._user, self._history, self._cursor = old
            self._resolve(strict=False)
            raise
        self.events.emit("run_changed", self)

    def set_sampling(self, **changes) -> None:
        """Change sampling settings (SamplingConfig field names) and rerun."""
        self.config.with_(**changes)                 # a bad value raises before anything changes
        self._change(config={**self._user.config, **changes})

    def set_config(self, config: SamplingConfig) -> None:
        changes = {k: getattr(config, k) for k in config.__dataclass_fields__
                   if getattr(config, k) != getattr(self.config, k)}
        if changes:
            self.set_sampling(**changes)

    def reset_sampling(self) -> None:
        """Back to the lesson's (or the default) settings."""
        self._change(config={})

    def set_prompt_ids(self, ids) -> None:
        ids = tuple(int(t) for t in self.model.vocab.id_array(ids, "prompt ids"))
        self._change(prompt=ids, overrides={})

    def set_prompt_text(self, text: str) -> None:
        self.set_prompt_ids(self.model.vocab.encode(text))

    def set_model(self, model: LanguageModel, prompt_ids=None) -> None:
        """Switch models everywhere; the prompt is kept if the new vocabulary can hold it."""
        prompt = tuple(model.vocab.check_ids(self.prompt_ids if prompt_ids is None else prompt_ids,
                                             "prompt ids"))
        self._change(model=model, prompt=prompt, overrides={})

    def force(self, step: int, token_id: int) -> None:
        """What-if: select `token_id` at `step`; later steps follow from it."""
        overrides = {k: v for k, v in self._user.overrides.items() if k < step} | {step: int(token_id)}
        self._change(overrides=overrides, remember=True)

    def unforce(self, step: int) -> None:
        """Back to the model's own choice at `step` (later forces are dropped too)."""
        if step in self._user.overrides:
            self._change(overrides={k: v for k, v in self._user.overrides.items() if k < step}, remember=True)

    def clear_forces(self) -> None:
        if self._user.overrides:
            self._change(overrides={}, remember=True)

    def undo(self) -> None:
        """Restore the what-if choices as they were before the last force/unforce."""
        if self._history:
            self._change(overrides=self._history.pop())

    def set_lang(self, lang: str) -> None:
        if lang not in LANGS:
            raise SettingError(f"language = {lang!r}: expected one of {', '.join(LANGS)}")
        if lang != self._lang:
            self._lang = lang
            self.events.emit("lang_changed", self)

    # ------------------------------------------------------------------ the cursor
    def go(self, index: int) -> None:
        index = max(0, min(int(index), len(self._frames) - 1))
        if index != self._cursor:
            before = self.run
            self._cursor = index
            self.events.emit("cursor_changed" if self.run is before else "run_changed", self)

    def next(self) -> None:
        self.go(self._cursor + 1)

    def prev(self) -> None:
        self.go(self._cursor - 1)

    def first(self) -> None:
        self.go(0)

    def last(self) -> None:
        self.go(len(self._frames) - 1)

    @property
    def at_end(self) -> bool:
        return self._cursor == len(self._frames) - 1

    def go_to_step(self, step: int) -> None:
        """The first frame, on the current Run, of a step (its forward pass)."""
        run = self.run
        for i, f in enumerate(self._frames):
            if f.step == step and f.kind != "input" and self._runs[self._effective[self._frame_scenario[i]]] is run:
                self.go(i)
                return

    # ------------------------------------------------------------------ internals
    def _change(self, *, config=None, overrides=None, prompt=None, model=None, remember=False):
        """Apply a new teacher layer and rerun; on an error nothing changes."""
        old_user, old_history = self._user, self._history
        user = replace(old_user,
                       config=old_user.config if config is None else dict(config),
                       overrides=old_user.overrides if overrides is None else dict(overrides),
                       prompt=old_user.prompt if prompt is None else prompt,
                       model=old_user.model if model is None else model)
        history = (old_history + [dict(old_user.overrides)])[-UNDO_LIMIT:] if remember else old_history
        if model is not None or prompt is not None:
            history = []
        old_frame, old_cursor = self.frame, self._cursor
        self._user, self._history = user, history
        try:
            self._resolve(strict=False)
        except Exception:
            self._user, self._history = old_user, old_history
            self._resolve(strict=False)
            self._cursor = old_cursor
            raise
        self._cursor = _same_place(self._frames, old_frame, old_cursor)
        self.events.emit("run_changed", self)   # the cursor moved with it: one event, one redraw

    def _apply_user(self, s: Scenario) -> Scenario:
        u = self._user
        config = s.config.with_(**u.config) if u.config else s.config
        overrides = dict(s.overrides) | u.overrides
        return Scenario(u.model or s.model, u.prompt if u.prompt is not None else s.prompt_ids,
                        config, tuple(sorted(overrides.items())))

    def _run_of(self, s: Scenario) -> Run:
        if s not in self._runs:
            reuse = next((r for k, r in self._runs.items()
                          if k.model is s.model and k.prompt_ids == s.prompt_ids), None)
            self._runs[s] = generate(s.model, s.prompt_ids, s.config, overrides=dict(s.overrides),
                                     check_recompute=self._check_recompute, reuse=reuse)
            if s.config.mode == "beam":
                self._beams[s] = beam_search(s.model, s.prompt_ids, s.config.num_beams,
                                             s.config.max_new_tokens, s.config.length_penalty,
                                             s.model.vocab.eos_id)
        return self._runs[s]

    def _resolve(self, strict: bool) -> None:
        """Compute every scenario's Run and the frames to play."""
        effective = tuple(self._apply_user(s) for s in self._scenarios)
        runs = {s: self._run_of(s) for s in effective}
        self._runs = {s: runs[s] for s in effective}              # drop runs nobody shows
        self._beams = {s: b for s, b in self._beams.items() if s in runs}
        frames, owners = [], []
        if not self._plans:
            derived = frames_of_run(runs[effective[0]])
            frames, owners = list(derived), [0] * len(derived)
        for i, plan in enumerate(self._plans):
            derived = frames_of_run(runs[effective[plan.scenario]])
            frames.append(replace(_pick(derived, plan, i, strict), **plan.extras))
            owners.append(plan.scenario)
        self._effective, self._frames, self._frame_scenario = effective, tuple(frames), tuple(owners)


def _pick(derived: tuple[Frame, ...], plan: FramePlan, index: int, strict: bool) -> Frame:
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

    def __init__(self, index: int, plan: FramePlan, last_step: int | None):
        self.index = index
        super().__init__(f"frames[{index}].step: {plan.kind} of step {plan.step} does not exist: the run of "
                         f"this frame has steps 0..{last_step}")


def _same_place(frames, old: Frame, old_cursor: int) -> int:
    """Index of the frame matching `old` (same kind and step), preferring the old cursor
    position, else the same step, else the last frame."""
    if old_cursor < len(frames) and frames[old_cursor].kind == old.kind and frames[old_cursor].step == old.step:
        return old_cursor
    for i, f in enumerate(frames):
        if f.kind == old.kind and f.step == old.step:
            return i
    for i, f in enumerate(frames):
        if f.step == old.step:
            return i
    return len(frames) - 1
