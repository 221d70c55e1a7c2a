"""Reading a lesson file: TOML in, a checked Lesson out. Every problem is a LessonError
naming the file and the key path (`wo-ai-to-eos.toml: frames[3].explain.why: missing "zh"`)."""

from __future__ import annotations

import dataclasses
import re
import string
from dataclasses import replace
import tomllib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.limits import MAX_FORCE_STEP, MAX_LESSON_BYTES
from ..core.userfile import check_nesting, parse_problem, read_user_text
from ..core.decode.sampling import SamplingConfig
from ..core.decode.generate import generate
from ..core.decode.search import SearchSpec
from ..core.decode.speculative import MAX_K
from ..core.decode.tool_call import continue_after_tool
from ..i18n import LANGS
from ..catalog.registry import MODELS, installed_path
from ..session import Session
from ..session.narration import SECTIONS, placeholder_values
from ..session.frames import PANELS
from ..session.session import FramePlan, PreparedPlay, Scenario
from .models import build_model, installed_name

FORMAT = "token-explorer/lesson"
VERSION = 1
FRAME_KINDS = ("input", "prefill", "decode", "pick", "stop")
VIEWS = ("attention_full",)
CHECK_TIMES = ("before", "after")
MODEL_CHOICE = "model"      # a scenario's `forces = { "0" = "model" }`: the model's own pick at step 0


class LessonError(ExplorerError):
    """A lesson file that cannot be used; the message names the file and the key."""


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

    def title_in(self, lang: str) -> str:
        return self.title[lang]

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

    def build_session(self) -> Session:
        """A session playing this lesson."""
        with self._errors_named():
            session = self._session(check_recompute=True)
        self._check_once(_session_frames(session))
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
        return prepared

    def _session(self, check_recompute: bool) -> Session:
        scenarios = self.build_scenarios()
        first = scenarios[0]
        return Session(first.model, first.prompt_ids, first.config, scenarios=scenarios, plans=self.plans,
                       strict=True, content=self, check_recompute=check_recompute)

    def _check_once(self, shown) -> None:
        """A lesson on an installed model has its frames and placeholders checked on the runs
        it is first built with, not when it is read: listing the lessons must not load
        hundreds of MB (nor fail where the model is not installed)."""
        if not self.texts_checked:
            _check_texts(_Reader(self.path), self, shown)

    def build_scenarios(self) -> tuple[Scenario, ...]:
        return tuple(self._scenario(name, spec) for name, spec in self.scenarios)

    @contextmanager
    def _errors_named(self):
        try:
            yield
        except LessonError:
            raise
        except ExplorerError as exc:
            raise LessonError(f"{self.path.name}: {exc}") from None

    def _scenario(self, name: str, spec: ScenarioSpec) -> Scenario:
        model = build_model(spec.model, self.path)
        vocab = model.vocab
        if spec.after_tool is not None:
            return replace(self._scenario(name, replace(spec, after_tool=None)),
                           prompt_ids=self._after_tool(name, spec.after_tool, vocab))
        prompt = vocab.encode(spec.prompt_text) if spec.prompt_ids is None else vocab.check_ids(spec.prompt_ids)
        return Scenario(model, tuple(prompt), SamplingConfig(**spec.settings), tuple(sorted(spec.forces.items())),
                        spec.cancel_after, name, spec.prefix_from, spec.speculative)


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


# ---------------------------------------------------------------------------- parsing

class _Reader:
    """Key-by-key checks of a TOML file; every problem raises `error` naming the file and key."""

    error = LessonError

    def __init__(self, path: Path):
        self.name = path.name

    def fail(self, where: str, problem: str):
        raise self.error(f"{self.name}: {where}: {problem}" if where else f"{self.name}: {problem}")

    def read(self, path: Path, format_name: str, version: int, known: tuple, required: tuple) -> dict:
        """The parsed file, its top-level keys and its format line checked."""
        text = read_user_text(path, MAX_LESSON_BYTES, "lesson file", self.error)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.fail("", f"not valid TOML: {exc}")
        except (RecursionError, ValueError) as exc:
            if (problem := parse_problem(exc)) is None:
                raise
            self.fail("", problem)
        check_nesting(data, self.name, self.error)
        self.table(data, "", known, required)
        if data["format"] != format_name or data["version"] != version:
            self.fail("format", f"expected format = {format_name!r} and version = {version}")
        return data

    def table(self, value, where: str, known: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
        if not isinstance(value, dict):
            self.fail(where, "expected a table")
        for key in value:
            if key not in known:
                self.fail(f"{where}.{key}" if where else key, f"unknown key (expected one of {', '.join(known)})")
        for key in required:
            if key not in value:
                self.fail(f"{where}.{key}" if where else key, "missing")
        return value

    def text(self, value, where: str) -> dict[str, str]:
        """A text in every language: {en = "...", zh = "..."}."""
        self.table(value, where, LANGS)
        for lang in LANGS:
            if not isinstance(value.get(lang), str) or not value[lang].strip():
                self.fail(where, f'missing "{lang}" text (every text needs {" and ".join(LANGS)})')
        return dict(value)

    def kind(self, value, where: str, choices: tuple[str, ...]) -> str:
        if value not in choices:
            self.fail(where, f"{value!r}: expected one of {', '.join(choices)}")
        return value

    def ints(self, value, where: str) -> tuple[int, ...]:
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            self.fail(where, "expected a list of integers")
        return tuple(value)


def lesson_id(path: Path) -> str:
    """A lesson's id: its file name without `.toml`, and without `.lesson` before it (a
    lesson handed out as `NAME.lesson.toml` opens from the file manager; its id is NAME)."""
    return path.name.removesuffix(".toml").removesuffix(".lesson")


TOP_KEYS = ("format", "version", "order", "title", "summary", "builds_on", "model", "prompt", "prompt_ids",
            "settings", "forces", "scenarios", "evaluators", "frames", "checks", "speculative")
SCENARIO_KEYS = ("name", "model", "prompt", "prompt_ids", "settings", "forces", "cancel_after", "after_tool",
                 "prefix_from", "speculative")
FRAME_KEYS = ("show", "step", "scenario", "title", "explain", "panels", "view", "attention", "samples", "search")
SEARCH_KEYS = ("evaluator", "width", "branches", "depth")
SETTING_KEYS = tuple(f.name for f in dataclasses.fields(SamplingConfig))


def parse_lesson(path: Path) -> Lesson:
    r = _Reader(path)
    data = r.read(path, FORMAT, VERSION, TOP_KEYS, ("format", "version", "title", "summary", "model", "frames"))
    base = _scenario_spec(r, data, "", None)
    scenarios = [("base", base)]
    for i, sd in enumerate(_list(r, data, "scenarios")):
        where = f"scenarios[{i}]"
        r.table(sd, where, SCENARIO_KEYS, ("name",))
        if not isinstance(sd["name"], str) or not sd["name"]:
            r.fail(f"{where}.name", "expected a non-empty string")
        if sd["name"] in dict(scenarios):
            r.fail(f"{where}.name", f"{sd['name']!r} is used twice")
        scenarios.append((sd["name"], _scenario_spec(r, sd, where, base, [n for n, _ in scenarios])))
    names = [n for n, _ in scenarios]
    evaluators = {}
    for i, ed in enumerate(_list(r, data, "evaluators")):
        name, scores, default = _evaluator(r, ed, f"evaluators[{i}]")
        if name in evaluators:
            r.fail(f"evaluators[{i}].name", f"{name!r} is used twice")
        evaluators[name] = (scores, default)
    plans = tuple(_plan(r, fd, f"frames[{i}]", names, evaluators)
                  for i, fd in enumerate(_list(r, data, "frames")))
    if not plans:
        r.fail("frames", "expected at least one frame")
    checks = tuple(_check(r, cd, f"checks[{i}]") for i, cd in enumerate(data.get("checks", [])))
    builds_on = data.get("builds_on", [])
    if not isinstance(builds_on, list) or not all(isinstance(b, str) for b in builds_on):
        r.fail("builds_on", "expected a list of glossary terms or lesson ids")
    order = data.get("order", 100)
    if not isinstance(order, int):
        r.fail("order", "expected an integer")
    lesson = Lesson(lesson_id(path), path, order, r.text(data["title"], "title"), r.text(data["summary"], "summary"),
                    tuple(builds_on), base, tuple(scenarios), plans, checks)
    if not lesson.installed_models:       # else when first built (see Lesson._check_once)
        with lesson._errors_named():
            session = lesson._session(check_recompute=False)    # the texts need the runs, not the check
        _check_texts(r, lesson, _session_frames(session))
    return lesson


def _list(r: _Reader, data: dict, key: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        r.fail(key, "expected an array of tables ([[" + key + "]])")
    return value


def _scenario_spec(r: _Reader, d: dict, where: str, base: ScenarioSpec | None,
                   known: list[str] | None = None) -> ScenarioSpec:
    at = (lambda k: f"{where}.{k}") if where else (lambda k: k)
    model = d.get("model", None if base is None else base.model)
    if model is None:
        r.fail(at("model"), "missing")
    r.table(model, at("model"), ("kind", "name", "file", "pieces", "logits", "hidden", "w_out"), ("kind",))
    if model["kind"] == "installed" and model.get("name") not in MODELS:
        r.fail(at("model.name"), f"{model.get('name')!r}: expected one of {', '.join(MODELS)} "
                                 "(a model that `explorer model install` knows)")
    if "prompt" in d and "prompt_ids" in d:
        r.fail(at("prompt"), "give prompt or prompt_ids, not both")
    prompt_text, prompt_ids = (base.prompt_text, base.prompt_ids) if base else (None, None)
    if "prompt" in d:
        if not isinstance(d["prompt"], str):
            r.fail(at("prompt"), "expected a string")
        prompt_text, prompt_ids = d["prompt"], None
    if "prompt_ids" in d:
        prompt_text, prompt_ids = None, r.ints(d["prompt_ids"], at("prompt_ids"))
    if prompt_text is None and prompt_ids is None:
        r.fail(at("prompt"), "missing (prompt = \"...\" or prompt_ids = [...])")
    settings = dict(base.settings) if base else {}
    settings.update(r.table(d.get("settings", {}), at("settings"), SETTING_KEYS))
    try:
        SamplingConfig(**settings)
    except ExplorerError as exc:
        r.fail(at("settings"), str(exc))
    forces = dict(base.forces) if base else {}
    given = d.get("forces", {})
    if not isinstance(given, dict):
        r.fail(at("forces"), 'expected a table of "step" = token id')
    for step, token in given.items():
        if not (step.isascii() and step.isdigit()) or len(step) > len(str(MAX_FORCE_STEP)) or int(step) > MAX_FORCE_STEP:
            r.fail(at(f"forces.{step[:20]}"),
                   f'expected a step number from 0 to {MAX_FORCE_STEP} as the key, e.g. "0" = 4')
        if token == MODEL_CHOICE and base is not None:      # a scenario takes back a base force
            forces.pop(int(step), None)
            continue
        if not isinstance(token, int) or isinstance(token, bool):
            r.fail(at(f"forces.{step}"), "expected a token id" + (f' or "{MODEL_CHOICE}"' if base else ""))
        forces[int(step)] = token
    after_tool = None
    if "after_tool" in d:
        ad = r.table(d["after_tool"], at("after_tool"), ("scenario", "result"), ("scenario", "result"))
        if ad["scenario"] not in (known or ()):
            r.fail(at("after_tool.scenario"), f"{ad['scenario']!r}: expected a scenario named before this one "
                                              f"(known: {', '.join(known or ())})")
        if (not isinstance(ad["result"], list) or not ad["result"]
                or not all(isinstance(t, (str, int)) and not isinstance(t, bool) for t in ad["result"])):
            r.fail(at("after_tool.result"), "expected a list of the result's tokens (pieces or ids)")
        if "prompt" in d or "prompt_ids" in d:
            r.fail(at("after_tool"), "the prompt follows from the tool call: leave prompt and prompt_ids out")
        after_tool = (ad["scenario"], tuple(ad["result"]))
    cancel_after = d.get("cancel_after")
    if cancel_after is not None and (not isinstance(cancel_after, int) or isinstance(cancel_after, bool)
                                     or cancel_after < 1):
        r.fail(at("cancel_after"), f"{cancel_after!r}: expected a number of steps >= 1 (the user cancels after them)")
    prefix_from = d.get("prefix_from", "")
    if prefix_from and prefix_from not in (known or ()):
        r.fail(at("prefix_from"), f"{prefix_from!r}: expected a scenario named before this one, whose request "
                                  f"filled the prefix cache (known: {', '.join(known or ())})")
    if "prefix_from" in d and "model" in d:
        r.fail(at("model"), "a request that reuses another's prefix cache runs on that request's model: "
                            "leave model out")
    speculative = d.get("speculative", base.speculative if base else 0)
    if (not isinstance(speculative, int) or isinstance(speculative, bool) or not 0 <= speculative <= MAX_K
            or (speculative and forces)):
        r.fail(at("speculative"), f"{speculative!r}: expected the tokens drafted per pass, 1 to {MAX_K} (0 = off), "
                                  "on a scenario without forces (speculative decoding verifies the model's own choices)")
    if speculative and settings.get("mode") == "beam":
        r.fail(at("speculative"), f"{speculative}: speculative decoding verifies one sequence; expected settings.mode "
                                  "\"greedy\" or \"sample\", not \"beam\" (or speculative = 0)")
    return ScenarioSpec(model, prompt_text, prompt_ids, settings, forces, cancel_after, after_tool, prefix_from,
                        speculative)


def _number(r: _Reader, value, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        r.fail(where, f"{value!r}: expected a number")
    return float(value)


def _positive(r: _Reader, value, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        r.fail(where, f"{value!r}: expected an integer >= 1")
    return value


def _evaluator(r: _Reader, ed, where: str) -> tuple[str, tuple[tuple[str, float], ...], float]:
    """[[evaluators]]: name, default (the score of a state not listed), scores (state -> score,
    a state written as its new pieces joined by spaces)."""
    r.table(ed, where, ("name", "default", "scores"), ("name", "default", "scores"))
    if not isinstance(ed["name"], str) or not ed["name"]:
        r.fail(f"{where}.name", "expected a name")
    scores = ed["scores"]
    if not isinstance(scores, dict):
        r.fail(f"{where}.scores", 'expected a table of "state" = score')
    return (ed["name"], tuple((state, _number(r, v, f"{where}.scores.{state}")) for state, v in scores.items()),
            _number(r, ed["default"], f"{where}.default"))


def _computations(r: _Reader, fd, where: str, kind: str, evaluators: dict) -> dict:
    """A frame's `samples` (seeds of a self-consistency vote) and `search` (an evaluator search)."""
    extras = {}
    if ("samples" in fd or "search" in fd) and kind == "input":
        r.fail(f"{where}.{'samples' if 'samples' in fd else 'search'}", "an input frame comes before any run")
    if "samples" in fd:
        seeds = r.ints(fd["samples"], f"{where}.samples")
        if not seeds or any(seed < 0 for seed in seeds):
            r.fail(f"{where}.samples", "expected a list of seeds (integers >= 0), one per sample")
        extras["samples"] = seeds
    if "search" in fd:
        sd = r.table(fd["search"], f"{where}.search", SEARCH_KEYS, SEARCH_KEYS)
        if sd["evaluator"] not in evaluators:
            r.fail(f"{where}.search.evaluator", f"{sd['evaluator']!r} is not an evaluator "
                                                f"(known: {', '.join(evaluators) or 'none: add [[evaluators]]'})")
        scores, default = evaluators[sd["evaluator"]]
        extras["search"] = SearchSpec(sd["evaluator"], scores, default,
                                      *(_positive(r, sd[k], f"{where}.search.{k}") for k in SEARCH_KEYS[1:]))
    return extras


def _plan(r: _Reader, fd, where: str, scenario_names: list[str], evaluators: dict) -> FramePlan:
    r.table(fd, where, FRAME_KEYS, ("show",))
    kind = r.kind(fd["show"], f"{where}.show", FRAME_KINDS)
    step = fd.get("step")
    if kind == "input":
        if step is not None:
            r.fail(f"{where}.step", "an input frame comes before any step: leave step out")
    elif not isinstance(step, int) or step < -1:
        r.fail(f"{where}.step", "expected a step index (0 = Prefill) or -1 for the last step")
    scenario = fd.get("scenario", "base")
    if scenario not in scenario_names:
        r.fail(f"{where}.scenario", f"{scenario!r} is not a scenario (known: {', '.join(scenario_names)})")
    extras = {}
    if "title" in fd:
        extras["title"] = r.text(fd["title"], f"{where}.title")
    if "explain" in fd:
        explain = r.table(fd["explain"], f"{where}.explain", SECTIONS)
        extras["explain"] = {s: r.text(t, f"{where}.explain.{s}") for s, t in explain.items()}
    if "attention" in fd:
        if kind == "input":
            r.fail(f"{where}.attention", "an input frame has no attention to show (nothing has run)")
        choice = r.table(fd["attention"], f"{where}.attention", ("layer", "head"), ("layer", "head"))
        for key in ("layer", "head"):
            if not isinstance(choice[key], int) or isinstance(choice[key], bool) or choice[key] < 0:
                r.fail(f"{where}.attention.{key}", "expected an integer >= 0 (counted from 0)")
        extras["attention"] = (choice["layer"], choice["head"])
    for key, choices in (("panels", PANELS), ("view", VIEWS)):
        if key in fd:
            items = fd[key]
            if not isinstance(items, list):
                r.fail(f"{where}.{key}", "expected a list")
            extras[key] = tuple(r.kind(v, f"{where}.{key}", choices) for v in items)
    extras |= _computations(r, fd, where, kind, evaluators)
    return FramePlan(scenario_names.index(scenario), kind, step, extras)


def _check(r: _Reader, cd, where: str) -> Check:
    r.table(cd, where, ("when", "question", "answer"), ("when", "question", "answer"))
    return Check(r.kind(cd["when"], f"{where}.when", CHECK_TIMES), r.text(cd["question"], f"{where}.question"),
                 r.text(cd["answer"], f"{where}.answer"))


def _session_frames(session: Session) -> list[tuple]:
    """(frame, its run, its model) of every frame a session shows."""
    return [(frame, *session.run_at(i)) for i, frame in enumerate(session.frames)]


def _pending_frames(pending) -> list[tuple]:
    """(frame, its run, its model) of every frame a prepared play will show."""
    scenarios = [pending.effective[owner] for owner in pending.owners]
    return [(frame, pending.runs[s], s.model) for frame, s in zip(pending.frames, scenarios)]


def _check_texts(r: _Reader, lesson: Lesson, shown: list[tuple]) -> None:
    """On the lesson's built frames ((frame, run, model) each): every attention choice must
    exist and every {placeholder} must be known."""
    for i, (frame, run, model) in enumerate(shown):
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
        texts = {"title": frame.title or {}} | {f"explain.{k}": v for k, v in (frame.explain or {}).items()}
        for where, by_lang in texts.items():
            for lang, text in by_lang.items():
                problem = placeholder_problem(text, placeholder_values(frame, run, model.vocab, lang))
                if problem:
                    r.fail(f"frames[{i}].{where}.{lang}", problem)
    object.__setattr__(lesson, "texts_checked", True)      # once per lesson read


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
