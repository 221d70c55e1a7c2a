"""`explorer sample`: one logits (or probability) vector through the sampling stages."""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

from .combinations import check_settings
from .flags import (MODEL_HELP, STEP, TOKEN_ID, TOP, add_sampling_flags, config_from_args, model_from_args, number,
                    numbers, prompt_ids)
from ..core.errors import ExplorerError, SettingError
from ..core.limits import Real
from ..core.decode.sampling import Distribution, SamplingConfig, distribution
from ..i18n import MESSAGES, add_messages, stage_label, tr
from .texttable import format_table

PROBS_TOLERANCE = 1e-6   # how far from 1 the sum of --probs may be
LOGIT = Real(-math.inf, math.inf, open_high=True, words="a finite number, or -inf for an id already removed")
PROBABILITY = Real(0.0, 1.0)

add_messages({
    "sample.stage": {"en": "Stage {n}: {name}", "zh": "阶段 {n}：{name}"},
    "sample.off": {"en": "(off)", "zh": "（未启用）"},
    "sample.col.id": {"en": "id", "zh": "编号"},
    "sample.col.piece": {"en": "piece", "zh": "Token片段"},
    "sample.col.logit": {"en": "logit", "zh": "分数(logit)"},
    "sample.col.prob": {"en": "probability", "zh": "概率"},
    "sample.col.status": {"en": "status", "zh": "状态"},
    "sample.kept": MESSAGES["status.kept"],
    "sample.removed_by": {"en": "removed by {name}", "zh": "被{name}移除"},
    "sample.u": {"en": "u = {u}", "zh": "u = {u}"},
    "sample.greedy": {"en": "no draw: greedy choice (argmax of the final logits)",
                      "zh": "不抽样：贪心选择（取最终 logits 的最大值）"},
    "sample.ruler": {"en": "ruler (cumulative intervals [lo, hi)):", "zh": "累积区间 [lo, hi)："},
    "sample.here": {"en": "<- u", "zh": "<- u 落在这里"},
    "sample.selected": {"en": "selected: id {id}", "zh": "选中：编号 {id}"},
})


# ---------------------------------------------------------------------------- sub-command

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register `sample` on the `explorer` sub-command parser."""
    p = subparsers.add_parser(
        "sample", help="show how the sampling stages reshape one distribution",
        description="Run one logits (or probability) vector through repetition penalty, "
                    "temperature, top-k, top-p and min-p (and the stages of real APIs that are "
                    "on: logit bias, presence and frequency penalties, typical-p, top-n-sigma, "
                    "XTC, min new tokens), print every stage, the uniform "
                    "draw u, the cumulative intervals and the selected id. "
                    "Write negative first values with '=', e.g. --logits=-1,2,0.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--logits", **numbers(LOGIT), help="comma-separated logits, e.g. 2,1,0 (-inf = already removed)")
    src.add_argument("--probs", **numbers(PROBABILITY), help="comma-separated probabilities summing to 1, e.g. 0.55,0.25,0.15,0.05")
    src.add_argument("--model", help="the next-token logits of a model after --prompt: " + MODEL_HELP)
    p.add_argument("--prompt", help="with --model: the text before the next token (default: the model's)")
    p.add_argument("--chat", action="store_true", help="with --model: wrap --prompt in the chat template")
    p.add_argument("--top", **number(TOP), default=20, help="with --model: candidates per table (default 20)")
    p.add_argument("--seen", **numbers(TOKEN_ID, allow_empty=True), default=[], help="ids already in the text, e.g. 0,1: for --repetition-penalty "
                                              "(with --model: the prompt), and as the output so far for "
                                              "--presence-penalty, --frequency-penalty and --min-new-tokens")
    p.add_argument("--step", **number(STEP), default=0, help="step index: which u to draw (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of the tables")
    add_sampling_flags(p, default_mode="sample")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Print the stages and the pick; 2 (with a message on stderr) for bad values."""
    try:
        seen = args.seen
        vocab = None
        if args.model is not None:
            logits, vocab, prompt = _model_logits(args)
            seen = seen or prompt
        else:
            logits = _logits_from_args(args)
        config = config_from_args(args, vocab)  # after the model: --logit-bias may name its pieces
        check_settings("sample", args, [("", config)], as_table=False)
        _check_seen(args.seen, logits.size, "the model's vocabulary" if vocab is not None else
                    ("--logits" if args.logits is not None else "--probs"))
        dist = distribution(logits, config, seen_ids=seen, step=args.step, output_ids=args.seen,
                            end_ids=vocab.end_ids if vocab is not None else ())
    except ExplorerError as err:
        print(f"explorer sample: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(to_json(dist, config), ensure_ascii=False, allow_nan=False))
    else:
        print(format_distribution(dist, args.lang, vocab, args.top if vocab is not None else None))
    return 0


def _model_logits(args):
    """(logits [V] of the last prompt position, the vocabulary, the prompt ids)."""
    args.prompt_ids = None
    model = model_from_args(args)
    ids = prompt_ids(args, model)
    trace, _ = model.prefill(ids)
    return trace.last_logits, model.vocab, ids


def _check_seen(seen: list[int], size: int, source: str) -> None:
    """SettingError naming an id of --seen that `source` (of `size` ids) does not have."""
    for i, token in enumerate(seen, 1):
        if token >= size:
            raise SettingError(f"--seen item {i} of {len(seen)}: id {token} is outside the {size} ids of {source} "
                               f"(expected 0..{size - 1})")


def _logits_from_args(args) -> np.ndarray:  # -> (V,)
    if args.logits is not None:                 # read by `numbers(LOGIT)`: finite, or -inf
        return np.array(args.logits, dtype=np.float64)
    probs = np.array(args.probs, dtype=np.float64)   # each from 0 to 1 (`numbers(PROBABILITY)`)
    total = float(probs.sum())
    if abs(total - 1) > PROBS_TOLERANCE:
        raise SettingError(f"--probs sum to {total!r}: expected 1 (within {PROBS_TOLERANCE:g})")
    with np.errstate(divide="ignore"):
        return np.log(probs)                                  # 0 -> -inf: removed from the start


# ---------------------------------------------------------------------------- output

def _fixed(x: float) -> str:
    return f"{x:.6f}" if math.isfinite(x) else str(x)


def _stage_label(name: str, lang: str) -> str:
    """English names a stage by its id, as --order spells it; other languages by its word."""
    return name if lang == "en" else stage_label(name, lang)


def format_distribution(dist: Distribution, lang: str = "en", vocab=None, top: int | None = None) -> str:
    """Every stage as a table, then u, the ruler and the selected id. With a vocabulary the
    pieces are shown; with `top`, only the most likely candidates (a real model's 49k)."""
    def text(key: str, **values) -> str:
        return tr(f"sample.{key}", lang, **values)

    blocks = []
    shown = range(dist.raw_logits.size) if top is None else [int(i) for i in dist.top(top, 0)]
    for n, stage in enumerate(dist.stages, start=1):
        title = text("stage", n=n, name=_stage_label(stage.name, lang))
        if stage.note:
            title += f" ({stage.note})"
        if not stage.active:
            title += " " + text("off")
        rows = []
        for i in shown:
            status = (text("kept") if stage.kept[i] else
                      text("removed_by", name=_stage_label(dist.removed_by[i], lang)))
            piece = [] if vocab is None else [repr(vocab.piece_text(i))]
            rows.append([i, *piece, _fixed(stage.logits[i]), _fixed(stage.probs[i]), status])
        headers = [text("col.id"), *([] if vocab is None else [text("col.piece")]),
                   text("col.logit"), text("col.prob"), text("col.status")]
        numeric = (0, 1, 2) if vocab is None else (0, 2, 3)
        blocks.append(title + "\n" + format_table(headers, rows, align_right=numeric))

    lines = [text("greedy") if dist.u is None else text("u", u=_fixed(dist.u)), text("ruler")]
    ruler = list(zip(*(dist.ruler_head(top) if top is not None else
                       (dist.ruler_ids, dist.ruler_lo, dist.ruler_hi))))
    if top is not None and dist.selected_id not in dist.ruler_head(top)[0]:   # picked further down
        full = list(zip(dist.ruler_ids, dist.ruler_lo, dist.ruler_hi))
        ruler = full[:1 + next(k for k, (i, _, _) in enumerate(full) if i == dist.selected_id)]
    for i, lo, hi in ruler:
        here = dist.u is not None and lo <= dist.u < hi
        lines.append(f"  {text('col.id')} {i}: [{_fixed(lo)}, {_fixed(hi)})" + (f"  {text('here')}" if here else ""))
    lines.append(text("selected", id=dist.selected_id))
    blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _json_numbers(values) -> list:
    """Floats for JSON; -inf (a removed id's logit) becomes null."""
    return [float(v) if math.isfinite(v) else None for v in values]


def to_json(dist: Distribution, config: SamplingConfig) -> dict:
    """The documented `explorer sample --json` object."""
    return {
        "order": list(config.shown_order),
        "stages": [{"name": s.name, "active": s.active, "note": s.note,
                    "logits": _json_numbers(s.logits), "probs": _json_numbers(s.probs),
                    "kept": [bool(k) for k in s.kept]} for s in dist.stages],
        "probs": _json_numbers(dist.probs),
        "removed_by": list(dist.removed_by),
        "u": dist.u,
        "greedy": dist.greedy,
        "selected_id": dist.selected_id,
        "ruler": [{"id": int(i), "lo": float(lo), "hi": float(hi)}
                  for i, lo, hi in zip(dist.ruler_ids, dist.ruler_lo, dist.ruler_hi)],
    }

