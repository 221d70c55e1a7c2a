"""The Lesson record: a checked lesson file's scenarios, frames and self-checks, and how it
builds the sessions and prepared plays that show it (its texts checked on the runs they show)."""

from __future__ import annotations

import re
import string
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.decode.api_stages import is_piece_key, resolved_logit_bias
from ..core.decode.sampling import SamplingConfig
from ..core.decode.generate import generate
from ..core.decode.tool_call import continue_after_tool
from ..catalog.registry import installed_path
from ..session import Session
from ..session.narration import placeholder_values
from ..session.session import FramePlan, PreparedPlay, Scenario
from .models import ModelDifference, absence, build_model, installed_name, model_difference, real_model_key
from .reader import LessonError, LessonReader, TomlReader


@dataclass(frozen=True)
class Check:
    when: str                   # "before" (pre-reading) | "after" (after class)
    question: dict[str, str]    # lang -> text
    answer: dict[str, str]


@dataclass(frozen=True)
class ScenarioSpec:
    model: dict                                # the [model] table
    prompt_text: str | None = None
    prompt_ids: tuple[int, ...] | None = None
    settings: dict = field(default_factory=dict)
    forces: dict = field(default_factory=dict)     # step -> id
    cancel_after: int | None = None                # the user cancels after this many steps
    after_tool: tuple[str, tuple] | None = None    # (scenario whose tool call the host answered, result tokens)
    prefix_from: str = ""                          # the scenario whose request filled the prefix cache
    speculative: int = 0                           # k > 0: speculative decoding, k drafted tokens per pass


@dataclass(frozen=True)
class Lesson:
    id: str
    path: Path
    order: int
    title: dict[str, str]
    summary: dict[str, str]
    builds_on: tuple[str, ...]
    base: ScenarioSpec
    scenarios: tuple[tuple[str, ScenarioSpec], ...]     # (name, spec); the base is "base"
    plans: tuple[FramePlan, ...]
    checks: tuple[Check, ...]
    texts_checked: bool = field(default=False, compare=False, repr=False)   # set by _check_texts
    source: str | None = field(default=None, compare=False, repr=False)     # its TOML when read from an editor

    def title_in(self, lang: str) -> str:
        return self.title[lang]

    def texts(self) -> list:
        """Every text it wrote (Text records): title, summary, frame titles and explanations, checks."""
        return [self.title, self.summary, *(t for check in self.checks for t in (check.question, check.answer)),
                *(t for plan in self.plans for t in (plan.extras.get("title"), *plan.extras.get("explain", {}).values())
                  if t is not None)]

    def fallbacks(self, lang: str) -> dict[str, int]:
        """{language shown instead: how many texts} for the texts it did not write in `lang`
        (a lesson written in one language, or some texts not translated): the window says so."""
        shown = [t.fallback[lang] for t in self.texts() if lang in t.fallback]
        return {other: shown.count(other) for other in dict.fromkeys(shown)}

    @property
    def config(self) -> SamplingConfig:
        return SamplingConfig(**self.base.settings)

    @property
    def installed_models(self) -> tuple[str, ...]:
        """The installed models (`explorer model install NAME`) its scenarios run on."""
        return tuple(dict.fromkeys(n for _, spec in self.scenarios if (n := installed_name(spec.model))))

    def missing_models(self) -> tuple[str, ...]:
        """Those of `installed_models` that are not installed on this machine."""
        return tuple(n for n in self.installed_models if installed_path(n) is None)

    @property
    def real_models(self) -> tuple[str, ...]:
        """Every real model its scenarios run on, as `load_model` takes them: the installed
        ones and GGUF models already on the computer (an Ollama name, a file's path). A
        lesson on any of them is opened off the UI thread, its model loaded first."""
        return tuple(dict.fromkeys(k for _, spec in self.scenarios if (k := real_model_key(spec.model, self.path))))

    def absent_models(self) -> dict[str, str]:
        """{key: why} for the GGUF models of `real_models` that are not on this computer
        (nothing installs them: the teacher brings them)."""
        return {key: why for key in self.real_models if key not in self.installed_models
                and (why := absence(key)) is not None}

    def model_differences(self) -> tuple[ModelDifference, ...]:
        """What differs between the models its scenarios find on this computer and those it
        was saved with (a GGUF file replaced under the same path or Ollama name): it plays on
        what is there, and the window and the command line say so. Reads a changed file's
        bytes once per size and modification time."""
        found = (model_difference(spec.model, self.path) for _, spec in self.scenarios)
        return tuple(dict.fromkeys(d for d in found if d is not None))

    def build_session(self, scenarios: tuple[Scenario, ...] | None = None) -> Session:
        """A session playing this lesson (on `scenarios`, those `build_scenarios` made, when given)."""
        with self._errors_named():
            session = self._session(check_recompute=True, scenarios=scenarios)
        self._check_once(_session_frames(session))
        self.model_differences()        # a changed file is read here, not when the window says so
        return session

    def play_in(self, session: Session) -> None:
        """Make an existing session (and every panel watching it) play this lesson."""
        session.install_play(self.prepare_play(session), content=self)

    def prepare_play(self, session: Session) -> PreparedPlay:
        """What `play_in` will show, computed without changing `session` (off the UI thread
        for a real model: it loads the model and runs every scenario). Every step is
        compared with a full recompute: a lesson's check sections cite it."""
        with self._errors_named():
            prepared = session.prepare_play(self.build_scenarios(), self.plans, check_recompute=True)
        self._check_once(_pending_frames(prepared.pending))
        self.model_differences()        # off the UI thread: a changed file is read here
        return prepared

    def _session(self, check_recompute: bool, scenarios: tuple[Scenario, ...] | None = None) -> Session:
        scenarios = self.build_scenarios() if scenarios is None else scenarios
        first = scenarios[0]
        return Session(first.model, first.prompt_ids, first.config, scenarios=scenarios, plans=self.plans,
                       strict=True, content=self, check_recompute=check_recompute)

    def check_texts(self) -> None:
        """Check its frames and placeholders on the runs they show, built for it (without the
        recompute check: the texts need the runs, not the check). Done when it is read,
        unless it runs on an installed model (see `_check_once`)."""
        with self._errors_named():
            session = self._session(check_recompute=False)
        _check_texts(LessonReader(self.path, self.source), self, _session_frames(session))

    def _check_once(self, shown) -> None:
        """A lesson on an installed model has its frames and placeholders checked on the runs
        it is first built with, not when it is read: listing the lessons must not load
        hundreds of MB (nor fail where the model is not installed)."""
        if not self.texts_checked:
            _check_texts(LessonReader(self.path, self.source), self, shown)

    def build_scenarios(self) -> tuple[Scenario, ...]:
        """Its scenarios, their models loaded (nothing run but a tool call a scenario continues)."""
        with self._errors_named():
            return tuple(self._scenario(name, spec) for name, spec in self.scenarios)

    @contextmanager
    def _errors_named(self):
        try:
            yield
        except LessonError:
            raise
        except ExplorerError as exc:
            LessonReader(self.path, self.source).fail_with(str(exc))

    def _scenario(self, name: str, spec: ScenarioSpec) -> Scenario:
        model = build_model(spec.model, self.path)
        vocab = model.vocab
        if spec.after_tool is not None:
            return replace(self._scenario(name, replace(spec, after_tool=None)),
                           prompt_ids=self._after_tool(name, spec.after_tool, vocab))
        prompt = vocab.encode(spec.prompt_text) if spec.prompt_ids is None else vocab.check_ids(spec.prompt_ids)
        return Scenario(model, tuple(prompt), SamplingConfig(**self._settings(name, spec, vocab)),
                        tuple(sorted(spec.forces.items())), spec.cancel_after, name, spec.prefix_from, spec.speculative)

    def _settings(self, name: str, spec: ScenarioSpec, vocab) -> dict:
        """The scenario's settings with the pieces of `logit_bias` turned into their ids."""
        bias = spec.settings.get("logit_bias")
        if not (isinstance(bias, dict) and any(is_piece_key(t) for t in bias)):
            return spec.settings
        names = [n for n, _ in self.scenarios]
        where = "settings" if names.index(name) == 0 else f"scenarios[{names.index(name) - 1}].settings"
        items = [(t if is_piece_key(t) else int(t), b) for t, b in bias.items()]
        return {**spec.settings, "logit_bias": resolved_logit_bias(items, vocab, f"{where}.logit_bias:")}

    def _after_tool(self, name: str, after: tuple[str, tuple], vocab) -> tuple[int, ...]:
        """The prompt after the host answered the tool call of scenario `after[0]` with the
        result tokens `after[1]` (pieces or ids): that scenario's run as written, then the result."""
        called, result = after
        s = self._scenario(called, dict(self.scenarios)[called])
        run = generate(s.model, s.prompt_ids, s.config, overrides=dict(s.overrides), check_recompute=False)
        ids = [t if isinstance(t, int) else vocab.piece_id(t, f"after_tool.result: {t!r}") for t in result]
        try:
            return continue_after_tool(run, ids, vocab)
        except ExplorerError as exc:
            raise ExplorerError(f"scenario {name!r}: after_tool: {exc}") from None


def _session_frames(session: Session) -> list[tuple]:
    """(frame, its run, its model) of every frame a session shows."""
    return [(frame, *session.run_at(i)) for i, frame in enumerate(session.frames)]


def _pending_frames(pending) -> list[tuple]:
    """(frame, its run, its model) of every frame a prepared play will show."""
    scenarios = [pending.effective[owner] for owner in pending.owners]
    return [(frame, pending.runs[s], s.model) for frame, s in zip(pending.frames, scenarios)]


def _check_texts(r: TomlReader, lesson: Lesson, shown: list[tuple]) -> None:
    """On the lesson's built frames ((frame, run, model) each): every attention choice must
    exist and every {placeholder} must be known (every frame checked, then the first problem raised)."""
    for i, (frame, run, model) in enumerate(shown):
        with r.each():
            _check_frame(r, lesson, i, frame, run, model)
    r.done()
    object.__setattr__(lesson, "texts_checked", True)      # once per lesson read


def _check_frame(r: TomlReader, lesson: Lesson, i: int, frame, run, model) -> None:
    """Frame i's what-ifs, attention choice and placeholders (a text in one language is
    checked in the language it is written in)."""
    for step in run.unreached_overrides:           # a what-if that would vanish without a word
        k = lesson.plans[i].scenario                 # 0: the base, k: scenarios[k - 1]
        r.fail(("" if k == 0 else f"scenarios[{k - 1}].") + f"forces.{step}", run.unreached_text(step))
    if frame.attention is not None:
        layers = run.steps[0].trace.layers
        heads = layers[0].q.shape[0] if layers else 0
        layer, head = frame.attention
        if layer >= len(layers) or head >= heads:
            r.fail(f"frames[{i}].attention", f"layer {layer}, head {head}: expected layer < {len(layers)} "
                                             f"and head < {heads} for this model (counted from 0)")
    texts = ({"title": frame.title or {}, "ask": frame.ask or {}}
             | {f"explain.{k}": v for k, v in (frame.explain or {}).items()})
    for where, by_lang in texts.items():
        for lang, text in by_lang.items():
            if lang in getattr(by_lang, "fallback", {}):
                continue
            problem = placeholder_problem(text, placeholder_values(frame, run, model.vocab, lang))
            if problem:
                r.fail(f"frames[{i}].{where}.{lang}", problem)


def placeholder_problem(text: str, known) -> str | None:
    """What is wrong with the {placeholders} of `text`, or None. Only a bare name from
    `known` counts: `{piece}`, not `{piece.__class__}`, `{ids[0]}`, `{piece!r}` or
    `{prob:>8}` (str.format would run those, reaching into Python objects)."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(text)
                  if name is not None]
    except ValueError as exc:
        return f"unknown placeholder or stray brace: {exc} (write {{{{ and }}}} for a literal brace)"
    for name, spec, conversion in fields:
        written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        base = re.split(r"[.\[]", name, maxsplit=1)[0]
        if base in known and (spec or conversion or base != name):
            return f"{written}: a placeholder is a bare name such as {{{base}}}, without . [ ] ! or :"
        if name not in known:
            return (f"unknown placeholder or stray brace: {name!r} (known here: {', '.join(sorted(known))}; "
                    "write {{ and }} for a literal brace)")
    return None
