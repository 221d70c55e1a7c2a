"""The A/B view's two runs for the frame a session shows: run A is the frame's own; run B is
the scenario a lesson frame compares it with (`compare = "hot"`), or else the teacher's B:
the same scenario with some sampling settings changed ("temperature=1.5, seed=3"), or run on
another model that shares the tokenizer. Both are stepped together: the frame's step is the
step of both runs."""

from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from threading import Lock

from ..core.decode.generate import generate
from ..core.decode.sampling import SamplingConfig
from ..core.decode.versus import Comparison, compare, tokenizer_mismatch
from ..core.errors import ExplorerError, SettingError
from ..core.limits import shown_text
from ..core.models.protocol import LanguageModel
from ..i18n import add_messages, tr
from .changes import Change, changes_text, scenario_changes

add_messages({
    "versus.none": {"en": "No B run yet: type how B differs from A, e.g. temperature=1.5, seed=3.",
                    "zh": "还没有B：写出B与A的不同之处，例如 temperature=1.5, seed=3。"},
    "versus.same": {"en": "the same settings", "zh": "相同的设置"},
})

TEXT_FIELDS = ("mode", "order")          # SamplingConfig fields a B line gives as words
LIST_FIELDS = ("stop_strings",)          # ... as words separated by |
MAX_B_TEXT = 1000                        # characters of a B line: every setting fits many times over
INTEGER = re.compile(r"[+-]?[0-9]{1,19}")            # a seed's or a count's digits (more: out of every range)
REAL = re.compile(r"[+-]?(?:[0-9]{1,30}\.?[0-9]{0,30}|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,4})?")
B_FIELDS = tuple(f.name for f in fields(SamplingConfig) if f.name not in ("logit_bias", "num_beams", "length_penalty"))


@dataclass(frozen=True)
class VersusSpec:
    """The teacher's B: A's scenario with these settings changed, on this model (None: A's)."""

    changes: tuple[tuple[str, object], ...] = ()     # (SamplingConfig field, value), sorted
    model: LanguageModel | None = None

    @property
    def empty(self) -> bool:
        return not self.changes and self.model is None


@dataclass(frozen=True, eq=False)
class Versus:
    """What the A/B view shows: the comparison, or why there is none; B's differences in words."""

    comparison: Comparison | None
    model_a: LanguageModel | None
    model_b: LanguageModel | None
    b_changes: tuple[Change, ...] = ()   # how B's scenario differs from A's
    b_name: str = ""                  # a lesson's name for B's scenario ("" for the teacher's B)
    reason: str = ""                  # no comparison: nothing defined, or a refusal (different tokenizers)

    def b_label(self, lang: str) -> str:
        """How B differs from A in words: "temperature 1.5; seed 3" (a lesson's: "hot: temperature 1.5")."""
        text = changes_text(self.b_changes, lang, with_lesson=False) or tr("versus.same", lang)
        return f"{self.b_name}: {text}" if self.b_name else text


def setting_items(text: str) -> list[str]:
    """"temperature=1.5,order=top_k,temperature" -> its NAME=VALUE items: a part without "="
    is the rest of the comma list before it (an order's stages)."""
    items: list[str] = []
    for part in text.split(","):
        if "=" in part or not items:
            items.append(part)
        else:
            items[-1] += "," + part
    return items


def parse_changes(text: str) -> dict:
    """SamplingConfig field -> value from "temperature=1.5, seed=3" (names with _ or -; an order
    as a preset or a comma list of stages, stop strings separated by |); SettingError naming
    the item and what is expected, each value checked as the settings check it."""
    if len(text) > MAX_B_TEXT:
        raise SettingError(f"B settings {shown_text(text)}: expected at most {MAX_B_TEXT:,} characters")
    quoted = shown_text(text)
    changes: dict = {}
    defaults = SamplingConfig()
    for item in (i for i in setting_items(text) if i.strip()):
        name, sep, value = (s.strip() for s in item.partition("="))
        field = name.replace("-", "_")
        if not sep or not value:
            raise SettingError(f"B settings {quoted}: {shown_text(item.strip())} is not NAME=VALUE; expected e.g. "
                               f"\"temperature=1.5, seed=3\"")
        if field not in B_FIELDS:
            raise SettingError(f"B settings {quoted}: unknown setting {shown_text(name)}; expected one of "
                               f"{', '.join(B_FIELDS)}")
        if field in changes:
            raise SettingError(f"B settings {quoted}: {field} is given twice; expected each setting once")
        changes[field] = _value(field, value, type(getattr(defaults, field)), quoted)
    if changes.get("mode") == "beam":
        raise SettingError(f"B settings {quoted}: mode=beam makes a tree, not a run to compare step by step")
    try:
        defaults.with_(**changes)
    except ExplorerError as exc:
        raise SettingError(f"B settings {quoted}: {exc}") from None
    return changes


def _value(field: str, value: str, kind: type, quoted: str):
    if field in TEXT_FIELDS:
        return value
    if field in LIST_FIELDS:
        return tuple(s for s in value.split("|") if s)
    number = INTEGER if kind is int else REAL
    if not number.fullmatch(value):
        expected = "an integer" if kind is int else "a number"
        raise SettingError(f"B settings {quoted}: {field} = {shown_text(value)}: expected {expected}")
    return int(value) if kind is int else float(value)


def spec_of(changes: dict, model: LanguageModel | None = None) -> VersusSpec:
    return VersusSpec(tuple(sorted(changes.items())), model)


_MEMO: dict = {}       # (A's scenario, spec) -> Versus: the last few asked for
_LOCK = Lock()         # an export's copy, or the window's background work, may ask from another thread
MEMO_SIZE = 16


@dataclass(frozen=True, eq=False)
class VersusTask:
    """The teacher's B still to compute for A's scenario: `run(cancel, on_step)` computes it
    (on any thread), keeps it for `frame_versus` and returns it; None when `cancel()` said
    stop before B's run ended (then nothing is kept). `steps` is B's most steps (for progress)."""

    key: tuple
    a_run: object

    @property
    def steps(self) -> int:
        a, spec = self.key
        return int(dict(spec.changes).get("max_new_tokens", a.config.max_new_tokens))

    def run(self, cancel=None, on_step=None) -> Versus | None:
        a, spec = self.key
        v = _versus(a, self.a_run, spec, cancel, on_step)
        if v.comparison is not None and v.comparison.b.finish_reason == "cancelled" and cancel is not None \
                and cancel():
            return None
        with _LOCK:
            _MEMO[self.key] = v
            while len(_MEMO) > MEMO_SIZE:
                del _MEMO[next(iter(_MEMO))]
        return v


def known_versus(session) -> Versus | VersusTask:
    """The A/B view of the session's current frame when nothing is left to compute (the
    lesson frame's own comparison, no B asked for, or a B computed before), else the task
    that computes the teacher's B (the window runs it off the UI thread for a big model)."""
    frame, lang, spec = session.frame, session.lang, session.versus_spec
    if frame.versus is not None:
        return frame.versus
    a = session.scenario
    if spec is None or spec.empty:
        return Versus(None, a.model, None, reason=tr("versus.none", lang))
    key = (a, spec)
    with _LOCK:
        known = _MEMO.get(key)
    return VersusTask(key, session.run) if known is None else known


def frame_versus(session) -> Versus:
    """The A/B view of the session's current frame: the lesson frame's own comparison, or A
    against the teacher's B, `session.versus_spec` (computed here, once per A scenario and B)."""
    known = known_versus(session)
    return known.run() if isinstance(known, VersusTask) else known


def _versus(a, a_run, spec: VersusSpec, cancel=None, on_step=None) -> Versus:
    model_b = spec.model or a.model
    try:
        b = replace(a, config=a.config.with_(**dict(spec.changes)), model=model_b)
    except ExplorerError as exc:               # a change that A's other settings make invalid
        return Versus(None, a.model, model_b, reason=str(exc))
    changes = scenario_changes(a, b)
    refused = tokenizer_mismatch(a.model.vocab, model_b.vocab, a.model.name, model_b.name)
    if refused is not None:                            # refused before B runs at all
        return Versus(None, a.model, model_b, changes, reason=refused)
    b_run = generate(model_b, b.prompt_ids, b.config, overrides=dict(b.overrides), check_recompute=False,
                     reuse=a_run if model_b is a.model else None, cancel=cancel, on_step=on_step)
    return Versus(compare(a_run, b_run, a.model.vocab, model_b.vocab), a.model, model_b, changes)


def lesson_versus(a, b, a_run, b_run) -> Versus:
    """A lesson frame's comparison of its scenario `a` with scenario `b` (tokenizers checked
    when the lesson is loaded: ComparisonError names both models)."""
    return Versus(compare(a_run, b_run, a.model.vocab, b.model.vocab), a.model, b.model,
                  scenario_changes(a, b), b.name)
