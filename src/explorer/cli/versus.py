"""`trace --vs "temperature=1.5,seed=3"`: the same prompt run a second time with some sampling
settings changed, and where the two runs part: the first step whose chosen tokens differ, and
per step the total variation distance between the two final distributions."""

from __future__ import annotations

import argparse
import json

from ..core.decode.generate import Run, generate
from ..core.decode.run_dict import run_to_dict
from ..core.decode.sampling import SamplingConfig
from ..core.decode.versus import distances, first_divergence
from ..session.versus import setting_items
from ..core.errors import ExplorerError, SettingError
from ..core.tokens.vocab import Vocabulary
from ..i18n import add_messages, tr
from .flags import add_sampling_flags, sampling_changes
from .texttable import format_table

add_messages({
    "vs.heading": {"en": "A: the run above · B: the same prompt with {changes}",
                   "zh": "A：上面的运行 · B：同一提示，改为 {changes}"},
    "vs.col.step": {"en": "step", "zh": "步"},
    "vs.col.a": {"en": "A selected", "zh": "A选中"},
    "vs.col.b": {"en": "B selected", "zh": "B选中"},
    "vs.col.tv": {"en": "total variation", "zh": "总变差距离"},
    "vs.first": {"en": "first divergence: step {step}", "zh": "第一次分歧：第{step}步"},
    "vs.none": {"en": "first divergence: none (the same tokens at every step)", "zh": "第一次分歧：无（每一步的Token都相同）"},
})


def add_vs_flag(parser) -> None:
    parser.add_argument("--vs", metavar="NAME=VALUE,...",
                        help="run the prompt a second time with these sampling settings changed (the sampling "
                             "flags' names, e.g. \"temperature=1.5,seed=3\") and compare the two runs step by step")


class _Refusing(argparse.ArgumentParser):
    """The sampling flags read from a --vs string: a mistake is a SettingError, not an exit."""

    def error(self, message):
        raise SettingError(message)


def _sampling_parser() -> _Refusing:
    p = _Refusing(prog="--vs", add_help=False)
    add_sampling_flags(p, default_mode=None)
    return p


def vs_changes(text: str) -> dict:
    """SamplingConfig field -> value from "name=value,..." (the sampling flags' names, with
    - or _); SettingError naming the item and what is expected."""
    parser = _sampling_parser()
    names = sorted(o[2:] for a in parser._actions for o in a.option_strings)   # every sampling flag
    argv = []
    for item in setting_items(text):
        name, sep, value = item.partition("=")
        flag = name.strip().replace("_", "-")
        if not sep or not value.strip():
            raise SettingError(f"--vs {text!r}: {item!r} is not NAME=VALUE; expected e.g. \"temperature=1.5,seed=3\"")
        if flag not in names:
            raise SettingError(f"--vs {text!r}: unknown setting {name.strip()!r}; expected one of {', '.join(names)}")
        argv += [f"--{flag}", value.strip()]
    try:                                # a flag's own check (FlagError) names the flag, the value and the range
        changes = sampling_changes(parser.parse_args(argv))
        SamplingConfig().with_(**changes)     # each value checked now, under the --vs that gave it
    except ExplorerError as exc:
        raise SettingError(f"--vs {text!r}: {exc}") from None
    if changes.get("mode") == "beam":
        raise SettingError(f"--vs {text!r}: mode=beam makes a tree, not a run to compare step by step")
    return changes


def second_run(first: Run, model, overrides: dict, changes: dict, check: bool) -> Run:
    """The same prompt and what-ifs with the sampling settings `changes` (validated)."""
    return generate(model, first.prompt_ids, first.config.with_(**changes), overrides=overrides, check_recompute=check)


def vs_output(a: Run, b: Run, vocab: Vocabulary, text: str, as_json: bool, top: int, lang: str,
              first_block: str) -> str:
    """Both runs, their first divergence and distances: JSON, or a table under the first run's."""
    split, tv = first_divergence(a, b), distances(a, b)
    if as_json:
        return json.dumps({"a": run_to_dict(a, vocab, top), "b": run_to_dict(b, vocab, top),
                           "first_divergence": split, "distance": tv}, ensure_ascii=False, indent=2)
    rows = [[i, vocab.display_piece(x.selected_id), vocab.display_piece(y.selected_id), f"{d:.4f}"]
            for i, (x, y, d) in enumerate(zip(a.steps, b.steps, tv))]
    table = format_table([tr(k, lang) for k in ("vs.col.step", "vs.col.a", "vs.col.b", "vs.col.tv")], rows,
                         align_right=(0, 3))
    last = tr("vs.none", lang) if split is None else tr("vs.first", lang, step=split)
    return "\n\n".join([first_block, tr("vs.heading", lang, changes=text), table, last])
