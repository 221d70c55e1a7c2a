"""What the teacher changed on a lesson frame, setting by setting, with the lesson's value:
the "changed from the lesson" badge, the mark on texts written for the lesson's settings,
and what a frame with settings of its own set aside."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.decode.sampling import SamplingConfig
from ..core.tokens.vocab import one_line
from ..i18n import add_messages, tr

add_messages({
    "change.mode": {"en": "mode", "zh": "方式"},
    "change.temperature": {"en": "temperature", "zh": "温度"},
    "change.top_k": {"en": "top-k", "zh": "top-k"},
    "change.top_p": {"en": "top-p", "zh": "top-p"},
    "change.min_p": {"en": "min-p", "zh": "min-p"},
    "change.repetition_penalty": {"en": "repetition penalty", "zh": "重复惩罚"},
    "change.seed": {"en": "seed", "zh": "种子"},
    "change.order": {"en": "order", "zh": "处理顺序"},
    "change.max_new_tokens": {"en": "max new tokens", "zh": "最多生成Token数"},
    "change.stop_strings": {"en": "stop strings", "zh": "停止字符串"},
    "change.num_beams": {"en": "beam width", "zh": "束宽"},
    "change.length_penalty": {"en": "length penalty", "zh": "长度惩罚"},
    "change.presence_penalty": {"en": "presence penalty", "zh": "存在惩罚"},
    "change.frequency_penalty": {"en": "frequency penalty", "zh": "频率惩罚"},
    "change.logit_bias": {"en": "logit bias", "zh": "logit偏置"},
    "change.typical_p": {"en": "typical-p", "zh": "典型抽样"},
    "change.min_keep": {"en": "min keep", "zh": "至少保留"},
    "change.xtc_probability": {"en": "XTC probability", "zh": "XTC概率"},
    "change.xtc_threshold": {"en": "XTC threshold", "zh": "XTC阈值"},
    "change.top_n_sigma": {"en": "top-nσ", "zh": "top-nσ"},
    "change.min_new_tokens": {"en": "min new tokens", "zh": "最少生成数"},
    "change.prompt": {"en": "prompt", "zh": "提示"},
    "change.model": {"en": "model", "zh": "模型"},
    "change.what_if": {"en": "what-if choices", "zh": "人为指定"},
    "change.item": {"en": "{setting} {now} (lesson: {lesson})", "zh": "{setting} {now}（课程：{lesson}）"},
    "change.value": {"en": "{setting} {now}", "zh": "{setting} {now}"},
    "change.sep": {"en": "; ", "zh": "；"},
    "change.none": {"en": "none", "zh": "无"},
    "change.badge": {"en": "Changed from the lesson: {items}", "zh": "与课程设置不同：{items}"},
    "change.written_for": {
        "en": "The lesson wrote the texts below for its own settings; the charts show yours ({items}). "
              "Numbers quoted below may differ from the charts.",
        "zh": "下面的文字是按课程自己的设置写的；图表显示的是你的设置（{items}）。下面引用的数字可能与图表不同。"},
    "change.set_aside": {"en": "This frame uses its own settings; your changes were set aside: {items}",
                         "zh": "这一步使用它自己的设置；你的改动已放下：{items}"},
    "change.left_lesson": {"en": "Free exploration starts from the default settings{kept}",
                           "zh": "自由探索从默认设置开始{kept}"},
    "change.kept": {"en": "; your own changes are kept: {items}", "zh": "；保留你自己的改动：{items}"},
})

PROMPT_SHOWN = 24          # characters of a prompt quoted in a change


@dataclass(frozen=True)
class Change:
    """One setting that differs from the lesson's: its name, the lesson's value and the one
    in use, both as shown to the class."""

    setting: str            # a SamplingConfig field, or "prompt" | "model" | "what_if"
    lesson: str
    now: str
    lesson_text: str = field(default="", compare=False)   # the lesson's prompt as text (a "prompt" change)


def _shown(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):      # logit_bias: 3:-100
        return ", ".join(f"{token}:{bias:g}" for token, bias in value)
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def _quoted(text: str) -> str:
    text = one_line(text)
    return f"“{text[:PROMPT_SHOWN]}…”" if len(text) > PROMPT_SHOWN else f"“{text}”"


def config_changes(lesson: SamplingConfig, now: SamplingConfig) -> tuple[Change, ...]:
    return tuple(Change(name, _shown(getattr(lesson, name)), _shown(getattr(now, name)))
                 for name in lesson.__dataclass_fields__ if getattr(lesson, name) != getattr(now, name))


def scenario_changes(lesson, now) -> tuple[Change, ...]:
    """The changes between a lesson's scenario and the one in use (Scenario records: model,
    prompt_ids, config, overrides); () when they are the same."""
    if lesson == now:
        return ()
    out = list(config_changes(lesson.config, now.config))
    if now.prompt_ids != lesson.prompt_ids:
        lesson_text = lesson.model.vocab.decode(lesson.prompt_ids)
        out.append(Change("prompt", _quoted(lesson_text), _quoted(now.model.vocab.decode(now.prompt_ids)),
                          lesson_text))
    if now.model is not lesson.model:
        out.append(Change("model", _model_text(lesson.model), _model_text(now.model)))
    if now.overrides != lesson.overrides:
        out.append(Change("what_if", _overrides_text(lesson), _overrides_text(now)))
    return tuple(out)


def logits_list(model) -> str:
    """A logits model's numbers as typed: "2, 1, 0" (its context token left out)."""
    return ", ".join(f"{v:g}" for v in model.default[1:])


def _model_text(model) -> str:
    """A model as a change names it; a logits model by its numbers (two of them share a name)."""
    return f"{model.name} [{logits_list(model)}]" if model.name == "logits" and hasattr(model, "default") \
        else model.name


def _overrides_text(scenario) -> str:
    vocab = scenario.model.vocab
    return ", ".join(f"{step}: {vocab.display_piece(t)}" for step, t in scenario.overrides) or "-"


def badge_text(changes: tuple[Change, ...], lang: str) -> str:
    """"Changed from the lesson: temperature 0.56 (lesson: 2)"; "" without changes."""
    return tr("change.badge", lang, items=changes_text(changes, lang)) if changes else ""


def changes_text(changes: tuple[Change, ...], lang: str, with_lesson: bool = True) -> str:
    """"temperature 0.56 (lesson: 2); top-p 0.27 (lesson: 1)"; without the lesson's values:
    "temperature 0.56; top-p 0.27"."""
    return tr("change.sep", lang).join(
        tr("change.item" if with_lesson else "change.value", lang, setting=tr(f"change.{c.setting}", lang),
           now=c.now if c.now != "-" else tr("change.none", lang),
           lesson=c.lesson if c.lesson != "-" else tr("change.none", lang)) for c in changes)


PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def written_for_the_lesson(template: str, changes: tuple[Change, ...]) -> bool:
    """Does a lesson's text quote what the changes made untrue: a number it wrote itself
    (outside its {placeholders}, which the run on screen fills in), or the lesson's prompt
    when the prompt changed? A text of placeholders and words stays true on any run."""
    literal = PLACEHOLDER.sub("", template)
    if any(ch.isdigit() for ch in literal):
        return True
    return any(c.setting == "prompt" and c.lesson_text.strip() and c.lesson_text.strip() in literal for c in changes)
