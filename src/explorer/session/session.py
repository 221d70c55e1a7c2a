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

A change is computed in two halves: `prepare(**changes)` works out the new Runs and
frames without touching the session (it only reads immutable records, so it may run on
another thread) and returns a `Pending`; `apply(pending)` installs it and emits
`run_changed`. By default every change does both at once (the teaching model is
instant). A window showing a big model sets `runner`: a change then only records what
was asked for and calls `runner(session)`, which runs `prepare()` in the background and
`apply()` when it is done. Changes made meanwhile build on what was asked for, so the
next `prepare()` computes all of them at once (a slider drag is never queued tick by
tick). `set_background(runner, slow)` lets the session pick the runner itself, from the
model each change computes on and the model of the frame shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from ..core.decode.beam import BeamResult, beam_search
from ..core.errors import SettingError
from ..core.decode.generate import Run, Step, generate, prefix_cache_of
from ..core.models.protocol import LanguageModel
from ..core.decode.sampling import SamplingConfig
from ..core.decode.speculative import DEFAULT_NGRAM, prompt_lookup, speculative_generate, verify_steps
from ..core.decode.usage import count_usage
from ..i18n import LANGS
from .changes import Change, config_changes, scenario_changes
from .events import Emitter, SessionEvent
from .frames import Frame, frames_of_run
from .lesson_frames import compared_frame, computed_frame, lensed_frame, pick_frame

DEFAULT_CONFIG = SamplingConfig(max_new_tokens=8)   # the teaching model ends by EOS well before 8
UNDO_LIMIT = 100                                     # what-if choices remembered for undo


@dataclass(frozen=True)
class Scenario:
    """Everything that determines one Run."""

    model: LanguageModel
    prompt_ids: tuple[int, ...]
    config: SamplingConfig
    overrides: tuple[tuple[int, int], ...] = ()      # (step, forced id), sorted
    cancel_after: int | None = None                  # the user cancels after this many steps (a lesson's case)
    name: str = ""                                   # a lesson's name for it ("base", ...); "" otherwise
    prefix_from: str = ""                            # the scenario whose request filled the prefix cache it uses
    speculative: int = 0                             # k > 0: decoded speculatively, k drafted tokens a pass
    ngram: int = DEFAULT_NGRAM                       # the longest n-gram its prompt lookup drafts from


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


@dataclass(frozen=True)
class Request:
    """What the teacher asked for: the user layer, the undo history, whether new Runs are
    compared with a full recompute, and the scenarios with the layer applied (built, and so
    validated, once when asked for; the computation takes them as they are)."""

    user: _UserLayer
    history: tuple[dict[int, int], ...]
    check_recompute: bool
    effective: tuple[Scenario, ...]
    restart: bool = False           # a new prompt or model: free exploration starts at its first frame
    forced_step: int | None = None  # a what-if choice at this step: the cursor shows its pick


@dataclass(frozen=True)
class Pending:
    """What a change will show, computed by `Session.prepare` without changing the session."""

    base: int                       # the session's version it was computed on (stale if it moved)
    request: Request | None         # what was asked for that it built on (None: the shown one)
    user: _UserLayer
    history: tuple[dict[int, int], ...]
    check_recompute: bool
    effective: tuple[Scenario, ...]
    runs: dict                      # Scenario -> Run
    beams: dict                     # Scenario -> BeamResult
    frames: tuple[Frame, ...]
    owners: tuple[int, ...]         # scenario index of each frame
    restart: bool = False           # see Request.restart
    forced_step: int | None = None  # see Request.forced_step

    @property
    def cancelled(self) -> bool:
        """Some Run was stopped by the cancel callable (it ends with reason "cancelled")."""
        return any(r.finish_reason == "cancelled" for r in self.runs.values())


@dataclass(frozen=True)
class PreparedPlay:
    """What `Session.play` will show, computed by `prepare_play` without changing the session."""

    scenarios: tuple[Scenario, ...]
    plans: tuple[FramePlan, ...]
    pending: Pending


class Session:
    def __init__(self, model: LanguageModel, prompt_ids, config: SamplingConfig = DEFAULT_CONFIG, *,
                 check_recompute: bool = True, scenarios: tuple[Scenario, ...] = (),
                 plans: tuple[FramePlan, ...] = (), strict: bool = True, content=None):
        """Without `plans`: one scenario (model, prompt, config) and its derived frames.
        With `plans` (a lesson): the frames they name, on `scenarios`; `strict` makes a plan
        that names a frame its Run does not have an error (a lesson file being loaded)."""
        self.events = Emitter()
        self.runner: Callable[[Session], None] | None = None   # see the module's notes
        self._background: tuple[Callable[[Session], None], Callable[[LanguageModel], bool]] | None = None
        self._check_recompute = check_recompute
        self._scenarios = scenarios or (Scenario(model, tuple(prompt_ids), config),)
        self._plans = plans
        self.content = content if plans else None     # what is played (a Lesson), for display only
        self._user = _UserLayer()
        self._history: tuple[dict[int, int], ...] = ()   # earlier user overrides, for undo
        self._requested: Request | None = None   # asked for, not yet shown
        self._version = 0                       # +1 on every install: a Pending of an older one is stale
        self._lang = "en"
        self._cursor = 0
        self._revealed = False                  # the current frame's question is answered (see `reveal`)
        self._set_aside: tuple[Change, ...] = ()
        # a player a teacher steps through (the window): arriving on a lesson frame with settings
        # of its own applies them (`go`). Off for a session stepped through by code (trace,
        # an export's copy): the settings asked for (a command line's flags) hold on every frame.
        self.frames_apply_their_settings = False
        self.versus_spec = None                 # the A/B view's B (session.versus.VersusSpec), set by the window
        self._runs: dict[Scenario, Run] = {}
        self._beams: dict[Scenario, BeamResult] = {}
        self._install(self._compute(Request(self._user, self._history, check_recompute,
                                            tuple(_apply_user(s, self._user) for s in self._scenarios)),
                                    strict=strict))

    # ------------------------------------------------------------------ reading
    frames: tuple[Frame, ...] = property(lambda self: self._frames)
    cursor = property(lambda self: self._cursor)
    can_undo = property(lambda self: bool(self._target().history))
    lang = property(lambda self: self._lang)                      # "en" | "zh"
    in_lesson = property(lambda self: bool(self._plans))
    check_recompute = property(lambda self: self._check_recompute)   # compare each step with a full recompute
    behind = property(lambda self: self._requested is not None)      # asked-for changes not shown yet

    @property
    def frame(self) -> Frame:
        """The frame as it is shown: while its question is open, as asked (`Frame.asked`)."""
        frame = self._frames[self._cursor]
        return frame.asked() if self.asking else frame

    @property
    def asking(self) -> bool:
        """The current frame asks a question whose answer is not shown yet."""
        return self._frames[self._cursor].ask is not None and not self._revealed

    @property
    def hidden_panels(self) -> tuple[str, ...]:
        """The panels the open question hides (none while no question is open)."""
        return self._frames[self._cursor].ask_panels if self.asking else ()

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

    def subscribe(self, event: SessionEvent | str, callback):
        return self.events.subscribe(event, callback)

    def copy(self) -> "Session":
        """An independent session in the same state (exports step through their own copy,
        so the window the class is watching does not move)."""
        other = Session.__new__(Session)
        other.__dict__.update(self.__dict__)
        other.events = Emitter()
        other.runner, other._requested, other._background = None, None, None   # the copy computes on the spot
        other.frames_apply_their_settings = False          # an export steps through it: the settings hold
        other._user = replace(self._user, config=dict(self._user.config), overrides=dict(self._user.overrides))
        other._runs, other._beams = dict(self._runs), dict(self._beams)
        return other

    # ------------------------------------------------------------------ changing what runs
    def play(self, scenarios: tuple[Scenario, ...], plans: tuple[FramePlan, ...] = (), content=None) -> None:
        """Switch to other content (another lesson, given as `content`) in place, so every
        subscriber stays; the teacher's changes and the undo history start afresh, the
        cursor at the first frame."""
        self.install_play(self.prepare_play(scenarios, plans), content)

    def prepare_play(self, scenarios: tuple[Scenario, ...], plans: tuple[FramePlan, ...] = (),
                     check_recompute: bool | None = None) -> PreparedPlay:
        """What `play` will show, computed without changing the session (so, like `prepare`,
        it may run off the UI thread: a lesson on a real model). A plan naming a frame its
        Run does not have raises here. check_recompute: None keeps the current setting."""
        check = self._check_recompute if check_recompute is None else check_recompute
        user = _UserLayer()
        request = Request(user, (), check, tuple(_apply_user(s, user) for s in scenarios))
        return PreparedPlay(scenarios, plans, self._compute(request, strict=True, plans=plans, scenarios=scenarios))

    def install_play(self, prepared: PreparedPlay, content=None) -> None:
        """Show what `prepare_play` computed (on the UI thread)."""
        self._scenarios, self._plans, self._cursor, self._requested = prepared.scenarios, prepared.plans, 0, None
        self._revealed = False
        self.content = content if prepared.plans else None
        self._install(prepared.pending)
        self._follow_model()
        self.events.emit(SessionEvent.RUN_CHANGED, self)

    def set_background(self, runner: Callable[[Session], None],
                       slow: Callable[[LanguageModel], bool]) -> None:
        """From now on a change on a model that `slow(model)` calls slow goes to `runner`
        (which computes it off the UI thread) and its Runs are not compared with a full
        recompute (seconds per step: a slider would lag); a change on another model is
        computed at once, every step checked. Picked for each change on the model it
        computes on, and again whenever the frame shown moves to another model."""
        self._background = (runner, slow)
        self._follow_model()

    def set_check_recompute(self, on: bool) -> None:
        """Whether runs computed from now on compare every step with a full recompute; the
        runs shown keep the checks they had (a lesson on a real model is checked as written,
        the teacher's changes to it are not: seconds per step)."""
        self._check_recompute = bool(on)

    def set_sampling(self, **changes) -> None:
        """Change sampling settings (SamplingConfig field names) and rerun; a bad value raises
        before anything changes (the new settings are built once, when asked for)."""
        self._change(config={**self._target().user.config, **changes})

    def set_config(self, config: SamplingConfig) -> None:
        changes = {k: getattr(config, k) for k in config.__dataclass_fields__
                   if getattr(config, k) != getattr(self.config, k)}
        if changes:
            self.set_sampling(**changes)

    @property
    def requested_model(self) -> LanguageModel:
        """The model of the current frame once the asked-for changes are shown."""
        return self._target().user.model or self.model

    def set_prompt_ids(self, ids) -> None:
        ids = tuple(int(t) for t in self.requested_model.vocab.id_array(ids, "prompt ids"))
        self._change(prompt=ids, overrides={})

    def set_prompt_text(self, text: str) -> None:
        self.set_prompt_ids(self.requested_model.vocab.encode(text))

    def set_model(self, model: LanguageModel, prompt_ids=None, check_recompute: bool | None = None) -> None:
        """Switch models everywhere; the prompt is kept if the new vocabulary can hold it.
        check_recompute: compare every step with a full recompute from now on (None: as before)."""
        user = self._target().user
        kept = user.prompt if user.prompt is not None else self.prompt_ids
        prompt = tuple(model.vocab.check_ids(kept if prompt_ids is None else prompt_ids, "prompt ids"))
        self._change(model=model, prompt=prompt, overrides={}, check_recompute=check_recompute)

    def force(self, step: int, token_id: int) -> None:
        """What-if: select `token_id` at `step`; later steps follow from it."""
        current = self._target().user.overrides
        overrides = {k: v for k, v in current.items() if k < step} | {step: int(token_id)}
        self._change(overrides=overrides, remember=True, forced_step=int(step))

    def unforce(self, step: int) -> None:
        """Back to the model's own choice at `step` (later forces are dropped too)."""
        current = self._target().user.overrides
        if step in current:
            self._change(overrides={k: v for k, v in current.items() if k < step}, remember=True)

    def undo(self) -> None:
        """Restore the what-if choices as they were before the last force/unforce."""
        history = self._target().history
        if history:
            self._change(overrides=history[-1], history=history[:-1])

    def set_lang(self, lang: str) -> None:
        if lang not in LANGS:
            raise SettingError(f"language = {lang!r}: expected one of {', '.join(LANGS)}")
        if lang != self._lang:
            self._lang = lang
            self.events.emit(SessionEvent.LANG_CHANGED, self)

    # ------------------------------------------------------------------ the cursor
    def reveal(self) -> None:
        """Show the answer to the current frame's question (nothing if none is open)."""
        if self.asking:
            self._revealed = True
            self.events.emit(SessionEvent.CURSOR_CHANGED, self)

    def go(self, index: int, revealed: bool = False) -> None:
        """Show frame `index`, its question (if it has one) open unless `revealed`. With `frames_apply_their_settings` (the window's player), arriving
        on a lesson frame whose scenario sets other settings than the frame left, the teacher's
        sampling changes are set aside (`set_aside`), and on another scenario the what-if
        choices too: the frame shows what it was written for."""
        index = max(0, min(int(index), len(self._frames) - 1))
        if index == self._cursor:
            if self._frames[index].ask is not None and self._revealed != revealed:
                self._revealed = revealed
                self.events.emit(SessionEvent.CURSOR_CHANGED, self)
            return
        before, left = self.run, self._frame_scenario[self._cursor]
        self._cursor, self._revealed = index, revealed
        self._set_aside = (self._arrival_set_aside(left, self._frame_scenario[index])
                           if self.frames_apply_their_settings else ())
        if self.run is before:
            self.events.emit(SessionEvent.CURSOR_CHANGED, self)
        else:
            self._follow_model()                 # a lesson's frame may show another model
            self.events.emit(SessionEvent.RUN_CHANGED, self)
        if self._set_aside:
            config = {} if any(c.setting in SamplingConfig.__dataclass_fields__ for c in self._set_aside) else None
            self._change(config=config, overrides={}, history=())

    @property
    def set_aside(self) -> tuple[Change, ...]:
        """What arriving on the current frame set aside of the teacher's changes (see `go`)."""
        return self._set_aside

    def _arrival_set_aside(self, left: int, arrived: int) -> tuple[Change, ...]:
        if not self._plans or left == arrived:
            return ()
        target = self._target().user
        own_settings = self._scenarios[left].config != self._scenarios[arrived].config
        return tuple(c for c in self.frame.changed
                     if (own_settings and target.config and c.setting in SamplingConfig.__dataclass_fields__)
                     or (c.setting == "what_if" and target.overrides))

    def restore_lesson_settings(self) -> None:
        """Back to the lesson's own settings, prompt, model and choices (the teacher's layer
        goes, undo history too)."""
        if self._plans:
            self._change(reset=True)

    def free_run(self, model: LanguageModel, prompt_ids) -> tuple[Change, ...]:
        """Leave the lesson for free exploration on `model` and `prompt_ids`: the default
        settings with the teacher's own changes over them (not the lesson's settings).
        -> the teacher's changes kept. The run shown stays until the new one is computed
        (by the runner, for a big model)."""
        target = self._target()
        prompt = tuple(model.vocab.check_ids(prompt_ids, "prompt ids"))
        config = DEFAULT_CONFIG.with_(**target.user.config)
        shown = target.effective[self._frame_scenario[self._cursor]]
        # first the run on screen as a free one (its steps are reused: no forward pass), then
        # the new model, prompt and settings as a change (off the UI thread for a big model)
        self.play((Scenario(shown.model, shown.prompt_ids, shown.config, shown.overrides),))
        self._change(config={k: getattr(config, k) for k in config.__dataclass_fields__
                             if getattr(config, k) != getattr(self.config, k)},
                     model=model, prompt=prompt, overrides={})
        return config_changes(DEFAULT_CONFIG, config)

    def next(self) -> None:
        """The next step of the player: the answer to an open question, else the next frame.

        A question and its answer are two steps, as they are two slides of the deck: a
        presentation clicker (Page Down) reveals, and the class sees on the screen what the
        exported deck would show."""
        if self.asking:
            self.reveal()
        else:
            self.go(self._cursor + 1)

    def prev(self) -> None:
        """The step before, as in the deck: from an answer back to its question; onto a
        question frame from the frame after it, its answer (the class has seen it, and the
        deck's slide before the next frame is the answer). Jumps (first, last, a step
        clicked) arrive with the question open."""
        if self._frames[self._cursor].ask is not None and self._revealed:
            self._revealed = False
            self.events.emit(SessionEvent.CURSOR_CHANGED, self)
        else:
            self.go(self._cursor - 1, revealed=True)

    def first(self) -> None:
        self.go(0)

    def last(self) -> None:
        self.go(len(self._frames) - 1)

    @property
    def at_end(self) -> bool:
        """On the last frame, its answer (if it asks) shown: Next has nowhere to go."""
        return self._cursor == len(self._frames) - 1 and not self.asking

    def go_to_step(self, step: int) -> None:
        """The first frame, on the current Run, of a step (its forward pass)."""
        run = self.run
        for i, f in enumerate(self._frames):
            if f.step == step and f.kind != "input" and self._runs[self._effective[self._frame_scenario[i]]] is run:
                self.go(i)
                return

    # ------------------------------------------------------------------ computing, installing
    def prepare(self, *, cancel: Callable[[], bool] | None = None,
                on_step: Callable[[int, int], None] | None = None, **changes) -> Pending:
        """The Runs and frames the asked-for changes (plus `changes`: config, overrides,
        prompt, model, remember, history, check_recompute) will show, without changing the
        session. Reads only immutable records, so it may run off the UI thread.

        cancel: asked after every generated step; True ends that Run as "cancelled".
        on_step(done, total): progress in generated steps (total = the max_new_tokens of
        the Runs still to compute). A rejected change raises here."""
        base = self._version                # read first: anything installed after makes this stale
        request = self._requested           # the asked-for layer this builds on (None: the shown one)
        layer = self._layer(request, **changes)
        return replace(self._compute(layer, strict=False, cancel=cancel, on_step=on_step, base=base),
                       request=request)

    def apply(self, pending: Pending) -> bool:
        """Install what `prepare` computed and emit `run_changed` (the cursor stays on the same
        frame, or the nearest one). False, and nothing changes, if the session moved on
        since (another change was installed first): prepare again."""
        if pending.base != self._version:
            return False
        old_frame, old_cursor = self._frames[self._cursor], self._cursor
        if self._requested is pending.request:
            self._requested = None
        self._install(pending)
        # a new prompt or model in free exploration starts at its input; else the same frame
        restart = pending.restart and not self._plans
        if restart:
            self._cursor = 0
        elif pending.forced_step is not None:
            self._cursor = self._pick_frame(pending.forced_step, old_cursor, old_frame)
        else:
            self._cursor = _same_place(self._frames, old_frame, old_cursor)
        self._revealed = self._revealed and self._cursor == old_cursor   # a slider keeps the answer shown
        self._follow_model()
        self.events.emit(SessionEvent.RUN_CHANGED, self)   # the cursor moved with it: one event, one redraw
        return True

    def _pick_frame(self, step: int, old_cursor: int, old_frame: Frame) -> int:
        """Where a what-if choice at `step` shows: the frame the teacher made it on, if it
        still shows that step's pick, else the pick frame of that step on the same Run."""
        frames = self._frames
        if old_cursor < len(frames) and frames[old_cursor].step == step \
                and frames[old_cursor].kind == old_frame.kind and old_frame.shows_distribution:
            return old_cursor
        owner = self._frame_scenario[min(old_cursor, len(frames) - 1)]
        for i, f in enumerate(frames):
            if f.kind == "pick" and f.step == step and self._frame_scenario[i] == owner:
                return i
        return _same_place(frames, old_frame, old_cursor)

    def discard_requests(self) -> None:
        """Forget asked-for changes not shown yet (their computation failed or was cancelled);
        `run_changed` lets the widgets show the settings as they are."""
        if self._requested is not None:
            self._requested = None
            self._follow_model()
            self.events.emit(SessionEvent.RUN_CHANGED, self)

    # ------------------------------------------------------------------ internals
    def _target(self) -> Request:
        """What was asked for: the shown request, or a newer one."""
        return self._layer(self._requested)

    def _layer(self, requested: Request | None, *, config=None, overrides=None, prompt=None, model=None,
               remember=False, history=None, check_recompute=None, reset=False, forced_step=None) -> Request:
        """The asked-for request (`requested`, or the shown one if None) with some changes on
        top, its scenarios built (a bad setting raises here); the same object without changes.
        reset: the changes go on an empty teacher's layer (the lesson's own settings)."""
        if requested is None:
            requested = Request(self._user, self._history, self._check_recompute, self._effective)
        if not reset and all(x is None for x in (config, overrides, prompt, model, history, check_recompute,
                                                 forced_step)):
            return requested
        old_user, old_history, check = requested.user, requested.history, requested.check_recompute
        if reset:
            old_user, old_history = _UserLayer(), ()
        user = replace(old_user,
                       config=old_user.config if config is None else dict(config),
                       overrides=old_user.overrides if overrides is None else dict(overrides),
                       prompt=old_user.prompt if prompt is None else prompt,
                       model=old_user.model if model is None else model)
        if history is None:
            history = (old_history + (dict(old_user.overrides),))[-UNDO_LIMIT:] if remember else old_history
        new_text = model is not None or prompt is not None
        if new_text:
            history = ()
        return Request(user, tuple(history), check if check_recompute is None else bool(check_recompute),
                       tuple(_apply_user(s, user) for s in self._scenarios), requested.restart or new_text,
                       requested.forced_step if forced_step is None else forced_step)

    def _change(self, **changes) -> None:
        """Apply a new teacher layer and rerun; on an error nothing changes. With a runner,
        record what was asked for and let the runner compute it. A change of model picks
        the runner for the new model (`set_background`)."""
        runner = self.runner
        if changes.get("model") is not None and self._background is not None:
            slow = self._background[1](changes["model"])
            runner = self._background[0] if slow else None
            if changes.get("check_recompute") is None:
                changes["check_recompute"] = not slow
        if runner is None:
            self.apply(self.prepare(**changes))
        else:
            self._requested = self._layer(self._requested, **changes)
            self.runner = runner
            runner(self)

    def _follow_model(self) -> None:
        """The runner and the recompute check for the model the next change computes on
        (`set_background`); nothing without a background."""
        if self._background is not None:
            runner, slow = self._background
            big = slow(self.requested_model)
            self.runner = runner if big else None
            self._check_recompute = not big

    def _compute(self, request: Request, strict: bool, cancel=None, on_step=None, base: int | None = None,
                 plans=None, scenarios=None) -> Pending:
        """Every scenario's Run (those already computed are taken as they are) and the frames;
        `plans` on the lesson's `scenarios` (None: the session's)."""
        user, history, check, effective = request.user, request.history, request.check_recompute, request.effective
        plans = self._plans if plans is None else plans
        known, known_beams = self._runs, self._beams
        todo = [s for s in dict.fromkeys(effective) if s not in known]
        total, done = sum(s.config.max_new_tokens for s in todo), 0
        runs, beams = {}, {}
        for s in dict.fromkeys(effective):
            if s in known:
                runs[s] = known[s]
                if s in known_beams:
                    beams[s] = known_beams[s]
                continue
            reuse = next((r for k, r in {**known, **runs}.items()
                          if k.model is s.model and k.prompt_ids == s.prompt_ids
                          and not verify_steps(r)), None)      # a verify step is no Decode step to reuse
            progress = None if on_step is None else (lambda n, d=done: on_step(d + n, total))
            if s.speculative and not s.overrides:       # a what-if decodes plainly
                runs[s] = speculative_generate(s.model, s.prompt_ids, s.config, k=s.speculative,
                                               drafter=prompt_lookup(s.ngram), check_recompute=check)
            else:
                runs[s] = generate(s.model, s.prompt_ids, s.config, overrides=dict(s.overrides),
                                   check_recompute=check, reuse=reuse, cancel=_cancel_after(s.cancel_after, cancel),
                                   on_step=progress, prefix=_prefix_hit(s, effective, runs))
            done += s.config.max_new_tokens
            if s.config.mode == "beam":
                beams[s] = beam_search(s.model, s.prompt_ids, s.config.num_beams,
                                       s.config.max_new_tokens, s.config.length_penalty, config=s.config)
        derived = {s: frames_of_run(runs[s]) for s in dict.fromkeys(effective)}   # once per scenario
        frames, owners = [], []
        if not plans:
            frames, owners = list(derived[effective[0]]), [0] * len(derived[effective[0]])
        usages = tuple((s.name, count_usage(runs[s].prompt_ids, runs[s].output_ids, s.model.vocab))
                       for s in effective) if plans else ()
        computed: dict = {}                  # (kind, scenario, spec) -> Vote | SearchResult, once per change
        lesson_scenarios = self._scenarios if scenarios is None else scenarios
        changed = {k: scenario_changes(lesson_scenarios[k], effective[k]) for k in {p.scenario for p in plans}}
        for i, plan in enumerate(plans):
            frame = replace(pick_frame(derived[effective[plan.scenario]], plan, i, strict), **plan.extras, usages=usages,
                            changed=changed[plan.scenario])
            frame = compared_frame(frame, effective, runs, plan.scenario, i)
            frame = lensed_frame(frame, effective[plan.scenario].model, runs[effective[plan.scenario]])
            frames.append(computed_frame(frame, effective[plan.scenario], computed, i))
            owners.append(plan.scenario)
        return Pending(self._version if base is None else base, None, user, history, check,
                       effective, runs, beams, tuple(frames), tuple(owners), request.restart, request.forced_step)

    def _install(self, p: Pending) -> None:
        self._user, self._history, self._check_recompute = p.user, p.history, p.check_recompute
        self._runs, self._beams = p.runs, p.beams
        self._effective, self._frames, self._frame_scenario = p.effective, p.frames, p.owners
        self._cursor = min(self._cursor, len(self._frames) - 1)
        self._version += 1                  # last: a prepare that read the old version is stale


def _apply_user(s: Scenario, u: _UserLayer) -> Scenario:
    config = s.config.with_(**u.config) if u.config else s.config
    overrides = dict(s.overrides) | u.overrides
    return Scenario(u.model or s.model, u.prompt if u.prompt is not None else s.prompt_ids,
                    config, tuple(sorted(overrides.items())), s.cancel_after, s.name, s.prefix_from,
                    s.speculative, s.ngram)


def _prefix_hit(s: Scenario, effective: tuple[Scenario, ...], runs: dict):
    """What scenario `s` takes from a prefix cache holding the request of `s.prefix_from` (an
    earlier scenario, on the same model), or None."""
    source = next((e for e in effective if s.prefix_from and e.name == s.prefix_from), None)
    if source is None or source.model is not s.model:
        return None
    return prefix_cache_of(s.model, [runs[source]]).lookup(s.prompt_ids)


def _cancel_after(steps: int | None, cancel: Callable[[], bool] | None) -> Callable[[], bool] | None:
    """`cancel` (the window's Cancel button), or also True from the `steps`-th call on: generate
    asks after every step, so the run ends "cancelled" with `steps` tokens (a lesson's case)."""
    if steps is None:
        return cancel
    asked = iter(range(1, 1 << 62))
    return lambda: next(asked) >= steps or (cancel is not None and cancel())


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
