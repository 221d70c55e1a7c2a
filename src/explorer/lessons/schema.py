"""Reading a lesson file: TOML in, a checked Lesson out. Every problem is a LessonError
naming the file, the line and the key path (`wo-ai-to-eos.toml:42: frames[3].step: ...`);
`lesson_problems` lists them all."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ..core.limits import (MAX_FORCE_STEP, MAX_NEW_TOKENS, MAX_SAMPLES, MAX_SEARCH, MAX_SEARCH_DEPTH, MAX_SEED,
                           shown)
from ..core.decode.api_stages import LOGIT_BIAS, is_piece_key
from ..core.decode.sampling import SamplingConfig
from ..core.decode.search import SearchSpec
from ..core.decode.speculative import MAX_K
from ..core.errors import ExplorerError
from ..catalog.registry import MODELS, ModelNotInstalled, require_installed
from ..session.narration import SECTIONS
from ..session.panels import DEFAULT_SLIDE_PANELS, PANELS, SLIDE_PANELS
from ..session.session import FramePlan
from .lesson import Check, Lesson, ScenarioSpec
from .models import installed_name, real_model_key
from .problems import Problem
from .reader import LessonError, LessonReader, TomlReader

FORMAT = "token-explorer/lesson"
VERSION = 1
FRAME_KINDS = ("input", "prefill", "decode", "pick", "stop")
VIEWS = ("attention_full",)
CHECK_TIMES = ("before", "after")
MODEL_CHOICE = "model"      # a scenario's `forces = { "0" = "model" }`: the model's own pick at step 0


def lesson_id(path: Path) -> str:
    """A lesson's id: its file name without `.toml`, and without `.lesson` before it (a
    lesson handed out as `NAME.lesson.toml` opens from the file manager; its id is NAME)."""
    return path.name.removesuffix(".toml").removesuffix(".lesson")


TOP_KEYS = ("format", "version", "order", "title", "summary", "builds_on", "model", "prompt", "prompt_ids",
            "settings", "forces", "scenarios", "evaluators", "frames", "checks", "speculative")
SCENARIO_KEYS = ("name", "model", "prompt", "prompt_ids", "settings", "forces", "cancel_after", "after_tool",
                 "prefix_from", "speculative")
FRAME_KEYS = ("show", "step", "scenario", "title", "explain", "panels", "view", "attention", "samples", "search",
              "ask", "ask_panel", "compare")
SEARCH_KEYS = ("evaluator", "width", "branches", "depth")
SETTING_KEYS = tuple(f.name for f in dataclasses.fields(SamplingConfig))


def parse_lesson(path: Path, text: str | None = None) -> Lesson:
    """The checked lesson (text: its TOML as being edited, read instead of the file at `path`); LessonError with its first problem (`FILE:LINE: key: what`) and
    every problem found (`problems`): each scenario, frame, check and top-level key is read
    on its own, so one bad part does not hide the next."""
    r = LessonReader(path, text)
    data = r.read(path, FORMAT, VERSION, TOP_KEYS, ("format", "version", "title", "summary", "model", "frames"))
    base = None
    with r.each():
        base = _scenario_spec(r, data, "", None)
    scenarios = [("base", base)]
    for i, sd in enumerate(_list(r, data, "scenarios")):
        where = f"scenarios[{i}]"
        with r.each():
            r.table(sd, where, SCENARIO_KEYS, ("name",))
            if not isinstance(sd["name"], str) or not sd["name"]:
                r.fail(f"{where}.name", "expected a non-empty string")
            if sd["name"] in dict(scenarios):
                r.fail(f"{where}.name", f"{sd['name']!r} is used twice")
            scenarios.append((sd["name"], None))         # named even if the rest is bad: frames may show it
            if base is not None:
                scenarios[-1] = (sd["name"], _scenario_spec(r, sd, where, base, [n for n, _ in scenarios[:-1]]))
    names = [n for n, _ in scenarios]
    evaluators = {}
    for i, ed in enumerate(_list(r, data, "evaluators")):
        with r.each():
            name, scores, default = _evaluator(r, ed, f"evaluators[{i}]")
            if name in evaluators:
                r.fail(f"evaluators[{i}].name", f"{name!r} is used twice")
            evaluators[name] = (scores, default)
    plans = []
    for i, fd in enumerate(frames := _list(r, data, "frames")):
        with r.each():
            plans.append(_plan(r, fd, f"frames[{i}]", names, evaluators))
    if not frames:
        r.note("frames", "expected at least one frame")
    checks = []
    for i, cd in enumerate(_list(r, data, "checks")):
        with r.each():
            checks.append(_check(r, cd, f"checks[{i}]"))
    builds_on = data.get("builds_on", [])
    if not isinstance(builds_on, list) or not all(isinstance(b, str) for b in builds_on):
        r.note("builds_on", "expected a list of glossary terms or lesson ids")
    order = data.get("order", 100)
    if not isinstance(order, int):
        r.note("order", "expected an integer")
    texts = {}
    for key in ("title", "summary"):
        with r.each():
            texts[key] = r.text(data.get(key), key)
    r.done()
    lesson = Lesson(lesson_id(path), path, order, texts["title"], texts["summary"],
                    tuple(builds_on), base, tuple(scenarios), tuple(plans), tuple(checks), source=text)
    if not lesson.real_models:            # else when first built (see Lesson._check_once)
        lesson.check_texts()
    return lesson


def lesson_problems(path: Path) -> list[Problem]:
    """Every problem of a lesson file, each printed `FILE:LINE: key: what` with FILE as
    given (what `lesson check` prints; empty: the lesson is valid). Beyond reading it: a
    real model that is not on this computer, with how to get it; when its models are here,
    its texts checked on the runs they show (a real model is loaded for that)."""
    try:
        lesson = parse_lesson(Path(path))
        problems = _model_problems(lesson)
        if not problems and not lesson.texts_checked:
            lesson.check_texts()
    except LessonError as exc:
        message = str(exc)
        for prefix in (f"{path}: ", f"{Path(path).name}: "):
            message = message.removeprefix(prefix)
        problems = exc.problems or (Problem(str(path), None, message),)
    return [dataclasses.replace(p, file=str(path)) for p in problems]


def _model_problems(lesson: Lesson) -> list[Problem]:
    """The real models of a read lesson that are not on this computer: an installed one
    with the command that installs it, a GGUF model with where it was looked for."""
    r = LessonReader(lesson.path)
    missing, absent = set(lesson.missing_models()), lesson.absent_models()
    for i, (_, spec) in enumerate(lesson.scenarios):
        if i and spec.model is lesson.base.model:
            continue                            # the base's model: reported there
        at = "model" if i == 0 else f"scenarios[{i - 1}].model"
        if (name := installed_name(spec.model)) in missing:
            missing.discard(name)
            try:
                require_installed(name)
            except ModelNotInstalled as exc:
                r.note(f"{at}.name", str(exc))
        if (key := real_model_key(spec.model, lesson.path)) in absent:
            r.note(f"{at}.{'file' if 'file' in spec.model else 'name'}", absent.pop(key))
    return r.problems


def _list(r: TomlReader, data: dict, key: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        r.note(key, "expected an array of tables ([[" + key + "]])")
        return []
    return value


def _scenario_spec(r: TomlReader, d: dict, where: str, base: ScenarioSpec | None,
                   known: list[str] | None = None) -> ScenarioSpec:
    at = (lambda k: f"{where}.{k}") if where else (lambda k: k)
    model = d.get("model", None if base is None else base.model)
    if model is None:
        r.fail(at("model"), "missing")
    r.table(model, at("model"), ("kind", "name", "file", "pieces", "logits", "hidden", "w_out", "sha256"), ("kind",))
    sha = model.get("sha256")
    if sha is not None and not (model["kind"] == "gguf" and "file" in model and isinstance(sha, str)
                                and len(sha) == 64 and all(c in "0123456789abcdef" for c in sha)):
        r.fail(at("model.sha256"), "expected the SHA-256 of a gguf model's file (64 lowercase hex digits), "
                                   'with kind = "gguf" and file = "PATH"')
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
        SamplingConfig(**_ids_only(settings))
    except ExplorerError as exc:                    # "max_new_tokens = 0: expected ...": on that key's line
        key = str(exc).partition(' ')[0].rstrip(':').partition('[')[0]      # logit_bias[3]: the table's line
        r.fail(at("settings"), str(exc), r.line(at(f"settings.{key}")))
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


def _ids_only(settings: dict) -> dict:
    """The settings with the pieces of `logit_bias` left out (their biases checked): a piece
    is looked up in the vocabulary when the scenario's model is built (`Lesson._scenario`)."""
    bias = settings.get("logit_bias")
    if not isinstance(bias, dict):
        return settings
    for token, value in bias.items():
        if is_piece_key(token):
            LOGIT_BIAS.check(f"logit_bias[{token}]", value)
    return {**settings, "logit_bias": {t: v for t, v in bias.items() if not is_piece_key(t)}}


def _number(r: TomlReader, value, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        r.fail(where, f"{shown(value)}: expected a finite number")
    return float(value)


def _positive(r: TomlReader, value, where: str, highest: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= highest:
        r.fail(where, f"{shown(value)}: expected an integer from 1 to {highest}")
    return value


def _evaluator(r: TomlReader, ed, where: str) -> tuple[str, tuple[tuple[str, float], ...], float]:
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


def _computations(r: TomlReader, fd, where: str, kind: str, evaluators: dict) -> dict:
    """A frame's `samples` (seeds of a self-consistency vote) and `search` (an evaluator search)."""
    extras = {}
    if ("samples" in fd or "search" in fd) and kind == "input":
        r.fail(f"{where}.{'samples' if 'samples' in fd else 'search'}", "an input frame comes before any run")
    if "samples" in fd:
        seeds = r.ints(fd["samples"], f"{where}.samples")
        if not 1 <= len(seeds) <= MAX_SAMPLES or any(not 0 <= seed <= MAX_SEED for seed in seeds):
            r.fail(f"{where}.samples", f"expected a list of 1 to {MAX_SAMPLES} seeds (integers from 0 to "
                                       f"{MAX_SEED}), one per sample; got {len(seeds):,}")
        extras["samples"] = seeds
    if "search" in fd:
        sd = r.table(fd["search"], f"{where}.search", SEARCH_KEYS, SEARCH_KEYS)
        if sd["evaluator"] not in evaluators:
            r.fail(f"{where}.search.evaluator", f"{sd['evaluator']!r} is not an evaluator "
                                                f"(known: {', '.join(evaluators) or 'none: add [[evaluators]]'})")
        scores, default = evaluators[sd["evaluator"]]
        highest = {"width": MAX_SEARCH, "branches": MAX_SEARCH, "depth": MAX_SEARCH_DEPTH}
        extras["search"] = SearchSpec(sd["evaluator"], scores, default,
                                      *(_positive(r, sd[k], f"{where}.search.{k}", highest[k]) for k in SEARCH_KEYS[1:]))
    return extras


def _plan(r: TomlReader, fd, where: str, scenario_names: list[str], evaluators: dict) -> FramePlan:
    r.table(fd, where, FRAME_KEYS, ("show",))
    kind = r.kind(fd["show"], f"{where}.show", FRAME_KINDS)
    step = fd.get("step")
    if kind == "input":
        if step is not None:
            r.fail(f"{where}.step", "an input frame comes before any step: leave step out")
    elif not isinstance(step, int) or isinstance(step, bool) or not -1 <= step <= MAX_NEW_TOKENS:
        r.fail(f"{where}.step", f"{shown(step)}: expected a step index (0 = Prefill, at most {MAX_NEW_TOKENS}) "
                                "or -1 for the last step")
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
            if len(set(map(repr, items))) < len(items) or len(items) > len(choices):
                r.fail(f"{where}.{key}", f"expected each of {', '.join(choices)} at most once ({len(items):,} given)")
            extras[key] = tuple(r.kind(v, f"{where}.{key}", choices) for v in items)
    extras |= _computations(r, fd, where, kind, evaluators)
    if "compare" in fd:
        extras["compare"] = _compared(r, fd["compare"], f"{where}.compare", scenario, scenario_names)
    extras |= _question(r, fd, where, kind, extras.get("panels", ()))
    return FramePlan(scenario_names.index(scenario), kind, step, extras)


def _compared(r: TomlReader, name, where: str, own: str, scenario_names: list[str]) -> int:
    """A frame's `compare`: the scenario whose run the A/B view sets beside the frame's own."""
    if not isinstance(name, str) or name not in scenario_names:
        r.fail(where, f"{shown(name)} is not a scenario (known: {', '.join(scenario_names)})")
    if name == own:
        r.fail(where, f"{name!r} is the frame's own scenario: expected another one to compare it with")
    return scenario_names.index(name)


def _question(r: TomlReader, fd, where: str, kind: str, panels: tuple[str, ...]) -> dict:
    """A frame's `ask` (the question, in every language) and `ask_panel` (the panel hidden
    until the answer, or a list of them): by default the distribution on a pick frame, else
    the frame's first panel (its `panels`, or the panels its kind shows). Each must be a
    panel the frame shows."""
    if "ask" not in fd:
        if "ask_panel" in fd:
            r.fail(f"{where}.ask_panel", 'a panel is hidden only for a question: add ask = { en = "...", '
                                         'zh = "..." } or leave ask_panel out')
        return {}
    shown = tuple(p for p in (panels or DEFAULT_SLIDE_PANELS[kind]) if p in SLIDE_PANELS
                  and (kind != "input" or p not in ("attention", "distribution")))
    default = "distribution" if kind == "pick" and "distribution" in shown else (shown or ("timeline",))[0]
    given = fd.get("ask_panel", default)
    named = given if isinstance(given, list) and given else [given]
    for panel in named:
        if r.kind(panel, f"{where}.ask_panel", SLIDE_PANELS) not in shown:
            r.fail(f"{where}.ask_panel", f"{panel!r} is not shown on this frame, so the question would hide nothing: "
                                         f"expected one of {', '.join(shown)} (or name it in panels = [...])")
    # in the frame's order: the first hidden panel (top left on a slide) asks the question
    return {"ask": r.text(fd["ask"], f"{where}.ask"), "ask_panels": tuple(p for p in shown if p in named)}


def _check(r: TomlReader, cd, where: str) -> Check:
    r.table(cd, where, ("when", "question", "answer"), ("when", "question", "answer"))
    return Check(r.kind(cd["when"], f"{where}.when", CHECK_TIMES), r.text(cd["question"], f"{where}.question"),
                 r.text(cd["answer"], f"{where}.answer"))
