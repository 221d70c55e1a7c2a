"""Session: the state of one explorer window, without Qt.

Changing a setting, the prompt, the model or a what-if choice reruns generation and
emits `run_changed` (the cursor is kept on the same step and is part of that change);
moving the cursor alone emits `cursor_changed`; `lang_changed` for the language. All
carry the session.
A rejected change raises (SettingError, PromptError, ...) and leaves the state as it was.
"""

from __future__ import annotations

from ..core.errors import SettingError
from ..i18n import LANGS
from ..core.beam import BeamResult, beam_search
from ..core.generate import Run, Step, generate
from ..core.model import LanguageModel
from ..core.sampling import SamplingConfig
from .events import Emitter
from .frames import Frame, frames_of_run

DEFAULT_CONFIG = SamplingConfig(max_new_tokens=8)   # the teaching model ends by EOS well before 8
UNDO_LIMIT = 100                                     # what-if choices remembered for undo


class Session:
    def __init__(self, model: LanguageModel, prompt_ids, config: SamplingConfig = DEFAULT_CONFIG, *,
                 check_recompute: bool = True):
        self.events = Emitter()
        self._check_recompute = check_recompute
        self._model = model
        self._prompt = tuple(prompt_ids)
        self._config = config
        self._overrides: dict[int, int] = {}
        self._history: list[dict[int, int]] = []     # earlier overrides, for undo
        self._cursor = 0
        self._lang = "en"
        self._run, self._beam, self._frames = self._compute(model, self._prompt, config, {})

    # ------------------------------------------------------------------ reading
    model = property(lambda self: self._model)
    prompt_ids = property(lambda self: self._prompt)
    config = property(lambda self: self._config)
    overrides = property(lambda self: dict(self._overrides))
    run: Run = property(lambda self: self._run)
    beam: BeamResult | None = property(lambda self: self._beam)   # the tree, in beam mode
    frames: tuple[Frame, ...] = property(lambda self: self._frames)
    cursor = property(lambda self: self._cursor)
    can_undo = property(lambda self: bool(self._history))
    lang = property(lambda self: self._lang)                      # "en" | "zh"

    @property
    def frame(self) -> Frame:
        return self._frames[self._cursor]

    @property
    def step(self) -> Step | None:
        """The Run step of the current frame (None on the input-only frame)."""
        return None if self.frame.step is None else self._run.steps[self.frame.step]

    def copy(self) -> "Session":
        """An independent session in the same state (exports step through their own copy,
        so the window the class is watching does not move)."""
        other = Session.__new__(Session)
        other.events = Emitter()
        other.__dict__.update({k: v for k, v in self.__dict__.items() if k != "events"})
        other._overrides = dict(self._overrides)
        other._history = list(self._history)
        return other

    def subscribe(self, event: str, callback):
        return self.events.subscribe(event, callback)

    # ------------------------------------------------------------------ changing what runs
    def set_sampling(self, **changes) -> None:
        """Change sampling settings (SamplingConfig field names) and rerun."""
        config = self._config.with_(**changes)
        if config != self._config:
            self._apply(config=config)

    def set_config(self, config: SamplingConfig) -> None:
        if config != self._config:
            self._apply(config=config)

    def set_prompt_ids(self, ids) -> None:
        ids = tuple(self._model.vocab.check_ids(ids, "prompt ids"))
        self._apply(prompt=ids, overrides={})

    def set_prompt_text(self, text: str) -> None:
        self.set_prompt_ids(self._model.vocab.encode(text))

    def set_model(self, model: LanguageModel, prompt_ids=None) -> None:
        """Switch models; the prompt is kept if the new vocabulary can hold it."""
        prompt = tuple(model.vocab.check_ids(self._prompt if prompt_ids is None else prompt_ids,
                                             "prompt ids"))
        self._apply(model=model, prompt=prompt, overrides={})

    def force(self, step: int, token_id: int) -> None:
        """What-if: select `token_id` at `step`; later steps follow from it."""
        overrides = {k: v for k, v in self._overrides.items() if k < step} | {step: int(token_id)}
        self._apply(overrides=overrides, remember=True)

    def unforce(self, step: int) -> None:
        """Back to the model's own choice at `step` (later forces are dropped too)."""
        if step in self._overrides:
            self._apply(overrides={k: v for k, v in self._overrides.items() if k < step}, remember=True)

    def clear_forces(self) -> None:
        if self._overrides:
            self._apply(overrides={}, remember=True)

    def undo(self) -> None:
        """Restore the what-if choices as they were before the last force/unforce."""
        if self._history:
            overrides = self._history.pop()
            self._apply(overrides=overrides)

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
            self._cursor = index
            self.events.emit("cursor_changed", self)

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
        """The first frame of a Run step (its forward pass)."""
        for i, f in enumerate(self._frames):
            if f.step == step and f.kind != "input":
                self.go(i)
                return

    # ------------------------------------------------------------------ internals
    def _compute(self, model, prompt, config, overrides, reuse=None):
        run = generate(model, prompt, config, overrides=overrides, check_recompute=self._check_recompute,
                       reuse=reuse)
        beam = None
        if config.mode == "beam":
            beam = beam_search(model, prompt, config.num_beams, config.max_new_tokens,
                               config.length_penalty, model.vocab.eos_id)
        return run, beam, frames_of_run(run)

    def _apply(self, *, model=None, prompt=None, config=None, overrides=None, remember=False):
        """Rerun with the given changes; on an error nothing changes and the error propagates."""
        model = self._model if model is None else model
        prompt = self._prompt if prompt is None else prompt
        config = self._config if config is None else config
        overrides = self._overrides if overrides is None else overrides
        old = self.frame
        reuse = self._run if model is self._model else None   # same model: reuse its forwards
        run, beam, frames = self._compute(model, prompt, config, overrides, reuse)
        if remember:
            self._history = (self._history + [dict(self._overrides)])[-UNDO_LIMIT:]
        elif model is not self._model or prompt != self._prompt:
            self._history.clear()
        self._model, self._prompt, self._config = model, prompt, config
        self._overrides = dict(overrides)
        self._run, self._beam, self._frames = run, beam, frames
        self._cursor = _same_place(frames, old)
        self.events.emit("run_changed", self)   # the cursor moved with it: one event, one redraw


def _same_place(frames, old: Frame) -> int:
    """Index of the frame matching `old` (same kind and step), else the same step, else the
    last frame that is not past it."""
    for i, f in enumerate(frames):
        if f.kind == old.kind and f.step == old.step:
            return i
    for i, f in enumerate(frames):
        if f.step == old.step:
            return i
    return len(frames) - 1
