"""Save as lesson: the lesson file of what a session shows, as TOML text, and its writing.

The document names the model (where it was loaded from), the prompt, every sampling
setting, the what-if choices and every scenario a lesson plays with the teacher's changes
applied, and one [[frames]] entry per frame shown, with the panels its slide shows and the
app's narration as texts to edit. The texts are the narration's templates, not their
filled-in words: `{placeholders}` take the numbers of the run they are shown on, so the
reopened lesson reads exactly as the exploration did, and stays true when a slider moves.
Reading the file back (`parse_lesson`) plays the same runs frame for frame."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Callable

from ..catalog.load import model_origin
from ..catalog.local import ollama_path
from ..core.decode.sampling import API_SETTINGS, ORDER_PRESETS, STAGE_NAMES, SamplingConfig
from ..core.decode.speculative import DEFAULT_NGRAM
from ..core.errors import ExplorerError
from ..core.jsonfile import write_text_atomic
from ..core.limits import MAX_LESSON_BYTES
from ..core.models.table_model import TableModel
from ..core.tokens.chat import read_chat
from ..i18n import LANGS, MESSAGES, add_messages, tr
from ..session import Session
from ..session.changes import written_for_the_lesson
from ..session.narration import SECTIONS
from ..session.text_so_far import own_run_caption
from .models import CONTEXT_ID, build_model, gguf_digest
from .schema import FORMAT, VERSION, MODEL_CHOICE

SUFFIX = ".lesson.toml"          # what a saved lesson is called (a double-click opens it)
_NUMBER_KINDS = ("logits", "projection", "table")   # models whose prompt is written as ids
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

add_messages({
    "saved.summary": {
        "en": "Saved from Token Explorer: {model} on the prompt “{prompt}”, {frames} frames. The titles and "
              "explanations are the app's own; {{placeholders}} are filled in with the run's numbers.",
        "zh": "由 Token 探索器保存：{model}，提示“{prompt}”，共{frames}帧。标题和讲解取自程序自带的文字；"
              "{{占位符}}会填入本次运行的数字。"},
})


def lesson_document(session: Session) -> str:
    """The lesson file (TOML) that reproduces what `session` shows: its scenarios with the
    teacher's changes applied, and its frames. ExplorerError when something shown cannot be
    written as a lesson (a model built in code, a run the teacher cancelled)."""
    lesson = session.content if session.in_lesson else None
    results = session.scenario_results()
    scenarios = session.scenarios
    runs = [run for run, _ in results]
    owners = [next(k for k, r in enumerate(runs) if r is session.run_at(i)[0]) for i in range(len(session.frames))]
    names = [s.name or ("base" if k == 0 else f"scenario{k}") for k, s in enumerate(scenarios)]
    for s, run in zip(scenarios, runs):
        if run.finish_reason == "cancelled" and s.cancel_after is None:
            raise ExplorerError("the run shown was cancelled before it ended: a lesson cannot repeat that; "
                                "let it finish (or lower max new tokens) and save again")
        if s.speculative and s.ngram != DEFAULT_NGRAM:
            raise ExplorerError(f"n-gram length {s.ngram}: a lesson's speculative decoding drafts with the "
                                f"default prompt lookup (n-grams up to {DEFAULT_NGRAM})")
    tables = [_model_table(s.model, lesson) for s in scenarios]
    base = scenarios[0]
    base_speculative = _speculative(base)

    out = ["# Saved by Token Explorer (Save as lesson). Every text can be edited: keep its {placeholders},",
           "# which take the numbers of the run (resources/lessons/README.md lists them).",
           f"format = {_value(FORMAT)}", f"version = {VERSION}"]
    if lesson is not None:
        out += [f"order = {lesson.order}"] + ([f"builds_on = {_value(list(lesson.builds_on))}"]
                                              if lesson.builds_on else [])
        title, summary = lesson.title, lesson.summary
    else:
        run, model = runs[0], base.model
        title = {lang: own_run_caption(run, model.name, model.vocab, lang) for lang in LANGS}
        prompt = model.vocab.decode(run.prompt_ids)
        summary = {lang: tr("saved.summary", lang, model=model.name, prompt=prompt, frames=len(session.frames))
                   for lang in LANGS}
    out += _prompt_lines(base.model, base.prompt_ids, tables[0])
    if base.overrides:
        out.append(f"forces = {_forces(dict(base.overrides))}")
    if base_speculative:
        out.append(f"speculative = {base_speculative}")
    out += [f"title = {_value(_given(title))}", f"summary = {_value(_given(summary))}", "", "[model]"]
    out += [f"{_key(k)} = {_value(v)}" for k, v in tables[0].items()]
    out += ["", "[settings]"] + [f"{_key(k)} = {_value(v)}" for k, v in _settings(base.config).items()]

    for k in range(1, len(scenarios)):
        out += [""] + _scenario_lines(scenarios[k], names[k], tables[k], base, base_speculative)
    out += _evaluator_lines(session)
    for i, frame in enumerate(session.frames):
        run, model = session.run_at(i)
        beam = results[owners[i]][1]
        out += [""] + _frame_lines(frame, run, names[owners[i]], has_beam=beam is not None, names=names)
    for check in (lesson.checks if lesson is not None else ()):
        out += ["", "[[checks]]", f"when = {_value(check.when)}", f"question = {_value(check.question)}",
                f"answer = {_value(check.answer)}"]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- the parts

def _model_table(model, lesson) -> dict:
    """The [model] table of `model`: where it was loaded from, else the lesson's own table
    that builds it (paths made absolute: the saved file may live elsewhere), else the fixed
    logits it holds. A GGUF file opened by path carries its SHA-256."""
    arithmetic = getattr(getattr(model, "arithmetic", None), "name", "float")
    if arithmetic != "float":
        raise ExplorerError(f"arithmetic {arithmetic!r}: a lesson computes in float32; "
                            f"save the run without --arithmetic {arithmetic}")
    table = model_origin(model)
    if table is None and lesson is not None:
        for _name, spec in lesson.scenarios:
            if spec.model["kind"] in ("teaching", "params", "table", *_NUMBER_KINDS) \
                    and build_model(spec.model, lesson.path) is model:
                table = dict(spec.model)
                if "file" in table:
                    table["file"] = str((lesson.path.parent / table["file"]).resolve())
                break
    if table is None and isinstance(model, TableModel) and model.name == "logits" and not model.rows:
        table = {"kind": "logits", "pieces": list(model.vocab.pieces[1:]),
                 "logits": [float(x) for x in model.default[1:]]}
    if table is None:
        raise ExplorerError(f"the model {model.name!r} was not loaded from a name or a file, so a lesson "
                            "cannot name it; open it by name or from its file and save again")
    if table["kind"] == "gguf":
        table["sha256"] = gguf_digest(table["file"] if "file" in table else ollama_path(table["name"]))
    return table


def _prompt_lines(model, ids, table: dict) -> list[str]:
    """`prompt = "text"` when the text splits back into the same ids (and is no chat turn:
    its markers are special tokens), else `prompt_ids`, with the chat turn's words as a comment."""
    vocab, ids = model.vocab, [int(t) for t in ids]
    chat = read_chat(vocab, ids)
    if table["kind"] not in _NUMBER_KINDS and chat is None:
        text = vocab.decode(ids)
        try:
            if vocab.encode(text) == ids:
                return [f"prompt = {_value(text)}"]
        except ExplorerError:
            pass
    lines = []
    if chat is not None:
        thinking = "" if chat[1] is None else f", thinking {'on' if chat[1] else 'off'}"
        lines.append(f"# the prompt is one chat-template turn{thinking}: {_one_line_comment(chat[0])}")
    elif table["kind"] in ("logits", "projection") and ids == [CONTEXT_ID]:
        lines.append("# the context token “…”: the text so far")
    return lines + [f"prompt_ids = {_value(ids)}"]


def _one_line_comment(text: str) -> str:
    """A comment stays on its line."""
    return text.replace("\r", " ").replace("\n", " ")


def _settings(config: SamplingConfig, every: bool = False) -> dict:
    """Setting -> TOML value; the API stages' only when they are on (every: all of them). A
    preset order is written as its course stages, which read back as the preset (and as the
    same order in a version without the API stages)."""
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    if values["order"] in ORDER_PRESETS.values():
        values["order"] = tuple(s for s in values["order"] if s in STAGE_NAMES)
    return {name: _plain(value) for name, value in values.items()
            if every or name not in API_SETTINGS or name in config.api_settings_on()}


def _plain(value):
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):   # logit_bias: { id = bias }
        return {str(token): bias for token, bias in value}
    return list(value) if isinstance(value, tuple) else value


def _speculative(s) -> int:
    """K of a speculatively decoded scenario; 0 when a what-if decodes it plainly."""
    return 0 if s.overrides else s.speculative


def _scenario_lines(s, name: str, table: dict, base, base_speculative: int) -> list[str]:
    """A [[scenarios]] entry: what differs from the base (settings and forces merge over it)."""
    lines = ["[[scenarios]]", f"name = {_value(name)}"]
    if s.model is not base.model and not s.prefix_from:
        lines.append(f"model = {_value(table)}")
    if s.model is not base.model or s.prompt_ids != base.prompt_ids:
        lines += _prompt_lines(s.model, s.prompt_ids, table)
    own, theirs = _settings(s.config, every=True), _settings(base.config, every=True)
    changed = {k: v for k, v in own.items() if v != theirs[k]}
    if changed:
        lines.append(f"settings = {_value(changed)}")
    mine, theirs = dict(s.overrides), dict(base.overrides)
    forces = {step: t for step, t in mine.items() if theirs.get(step) != t}
    forces |= {step: MODEL_CHOICE for step in theirs if step not in mine}
    if forces:
        lines.append(f"forces = {_forces(forces)}")
    if s.cancel_after is not None:
        lines.append(f"cancel_after = {s.cancel_after}")
    if s.prefix_from:
        lines.append(f"prefix_from = {_value(s.prefix_from)}")
    if _speculative(s) != base_speculative:
        lines.append(f"speculative = {_speculative(s)}")
    return lines


def _evaluator_lines(session: Session) -> list[str]:
    """[[evaluators]] of the searches the frames ask for (each once, by name)."""
    specs = {f.search.evaluator: f.search for f in session.frames if f.search is not None}
    lines = []
    for name, spec in specs.items():
        lines += ["", "[[evaluators]]", f"name = {_value(name)}", f"default = {_value(float(spec.default))}",
                  f"scores = {_value({state: float(score) for state, score in spec.scores})}"]
    return lines


def _frame_lines(frame, run, scenario: str, has_beam: bool, names: list[str]) -> list[str]:
    lines = ["[[frames]]", f"show = {_value(frame.kind)}"]
    if frame.kind != "input":
        lines.append(f"step = {-1 if frame.kind == 'stop' else frame.step}")
    if scenario != "base":
        lines.append(f"scenario = {_value(scenario)}")
    panels = frame.panels or frame.slide_panels(has_layers=bool(run.steps[0].trace.layers), has_beam=has_beam)
    lines.append(f"panels = {_value(list(panels))}")
    if frame.view:
        lines.append(f"view = {_value(list(frame.view))}")
    if frame.attention is not None:
        lines.append(f"attention = {_value({'layer': frame.attention[0], 'head': frame.attention[1]})}")
    if frame.samples:
        lines.append(f"samples = {_value(list(frame.samples))}")
    if frame.compare is not None:
        lines.append(f"compare = {_value(names[frame.compare])}")
    if frame.search is not None:
        spec = frame.search
        lines.append(f"search = {_value({'evaluator': spec.evaluator, 'width': spec.width, 'branches': spec.branches, 'depth': spec.depth})}")
    lines.append(f"title = {_value({lang: _title(frame, run, lang) for lang in _languages(frame.title)})}")
    if frame.ask:
        lines.append(f"ask = {_value(_given(frame.ask))}")
        lines.append(f"ask_panel = {_value(list(frame.ask_panels))}")
    lines.append("[frames.explain]")
    lines += [f"{s} = {_value({lang: _section(frame, s, lang) for lang in _languages((frame.explain or {}).get(s))})}"
              for s in SECTIONS]
    return lines


def _languages(texts) -> list[str]:
    """The languages a lesson's text is written in (a text read in one language holds the
    others as a fallback, which is not written back); every language for the narration's."""
    return [lang for lang in LANGS if lang not in getattr(texts, "fallback", {})]


def _given(texts) -> dict:
    """A text by language as the lesson gave it (without the languages filled in by fallback)."""
    return {lang: texts[lang] for lang in _languages(texts)}


def _own(texts: dict | None, frame, lang: str) -> str | None:
    """A lesson's own text, unless the teacher's changes made the numbers it quotes untrue
    (the window then shows the narration of the run on screen: so does the saved lesson)."""
    if not texts:
        return None
    text = texts[lang]
    return None if frame.changed and written_for_the_lesson(text, frame.changed) else text


def _title(frame, run, lang: str) -> str:
    own = _own(frame.title, frame, lang)
    if own is not None:
        return own
    forced = frame.kind == "pick" and run.steps[frame.step].forced
    return MESSAGES["frame.pick_forced" if forced else f"frame.{frame.kind}"][lang]


def _section(frame, section: str, lang: str) -> str:
    own = _own((frame.explain or {}).get(section), frame, lang)
    return own if own is not None else MESSAGES[f"explain.{frame.kind}.{section}"][lang]


# ---------------------------------------------------------------------------- TOML values

def _value(v) -> str:
    """A TOML value: strings as basic strings, numbers, lists and inline tables."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return ("inf" if v > 0 else "-inf") if math.isinf(v) else "nan" if math.isnan(v) else repr(v)
    if isinstance(v, str):     # JSON's escapes are TOML's; DEL is the one control JSON leaves raw
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }" if v else "{}"
    raise TypeError(f"no TOML value for {v!r}")


def _key(k) -> str:
    k = str(k)
    return k if _BARE_KEY.fullmatch(k) else _value(k)


def _forces(forces: dict) -> str:
    """`{ "0" = 4 }`: step keys quoted, as the README writes them."""
    return "{ " + ", ".join(f"{_value(str(step))} = {_value(forces[step])}" for step in sorted(forces)) + " }"


# ---------------------------------------------------------------------------- writing

def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_digest(path) -> str | None:
    """The SHA-256 of a file's bytes, None when there is no file (what `save_lesson` compares)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def save_lesson(path, text: str, known: str | None, may_replace: Callable[[Path, bool], bool]) -> str | None:
    """Write `text` to `path` atomically. A file already there is replaced only when its
    bytes are `known` (what was last read or written there) or `may_replace(path, changed)`
    says yes (changed: the file was known and has changed since). -> the digest written, or
    None when the teacher said no. A failed write (a read-only folder, a full disk) raises
    ExplorerError naming the file; whatever was there is left as it was."""
    path = Path(path)
    size = len(text.encode("utf-8"))
    if size > MAX_LESSON_BYTES:              # it could not be opened again: refused before anything is written
        raise ExplorerError(f"{path}: the lesson would be {size:,} bytes, more than a lesson file may hold "
                            f"({MAX_LESSON_BYTES:,} bytes), so it could not be opened; save a shorter run (fewer "
                            f"new tokens: each makes two frames); nothing was written")
    try:
        there = file_digest(path)
    except OSError as exc:
        raise ExplorerError(f"{path}: cannot be read ({exc.strerror or exc}); nothing was written") from None
    if there is not None and there != known and not may_replace(path, known is not None):
        return None
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise ExplorerError(f"{path}: could not be written ({exc.strerror or exc}); nothing was changed") from None
    return text_digest(text)
