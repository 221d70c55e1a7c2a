"""A Run as plain JSON-ready data (the `--json` output, handouts, exports)."""

from __future__ import annotations

import math

from .generate import Run, Step
from .usage import count_usage
from .vocab import Vocabulary


def _num(x) -> float | None:
    """A float for JSON: -inf logits of removed candidates become null."""
    x = float(x)
    return x if math.isfinite(x) else None


def step_candidates(step: Step, vocab: Vocabulary, top_n: int) -> list[dict]:
    """The `top_n` most likely candidates of a step, best first (ties: lower id first)."""
    dist = step.distribution
    raw, raw_probs, final = dist.raw_logits, dist.stages[0].probs, dist.probs   # [V] each
    order = dist.top(top_n, 0)
    return [{"id": int(i), "text": vocab.piece_text(int(i)), "logit": _num(raw[i]),
             "prob": float(raw_probs[i]), "final_prob": float(final[i])} for i in order]


def run_to_dict(run: Run, vocab: Vocabulary, top_n: int = 10) -> dict:
    steps = []
    for s in run.steps:
        d = s.distribution
        steps.append({
            "index": s.index, "phase": s.phase,
            "input_ids": list(s.input_ids), "positions": list(s.positions),
            "cache_len_before": s.cache_len_before, "cache_len_after": s.cache_len_after,
            "logits_position": s.logits_position,
            "selected_id": s.selected_id, "selected_text": vocab.piece_text(s.selected_id),
            "forced": s.forced, "u": d.u,
            "candidates": step_candidates(s, vocab, top_n),
            "recompute_max_abs_diff": s.recompute_max_abs_diff,
            "forward_ms": s.seconds * 1000,
        })
    stop = run.stop_match
    return {
        "model": run.model_name,
        "prompt_ids": list(run.prompt_ids), "output_ids": list(run.output_ids),
        "output_text": run.output_text,
        "finish_reason": run.finish_reason, "incomplete": run.incomplete,
        "stop_match": None if stop is None else {"text": stop.text, "char_index": stop.char_index,
                                                 "step": stop.step},
        "visible_count": len(run.visible_ids), "cache_len": run.cache_len,
        "usage": count_usage(run.prompt_ids, run.output_ids, vocab).as_dict(),
        "settings": _settings(run),
        "steps": steps,
    }


def _settings(run: Run) -> dict:
    c = run.config
    return {"mode": c.mode, "temperature": c.temperature, "top_k": c.top_k, "top_p": c.top_p,
            "min_p": c.min_p, "repetition_penalty": c.repetition_penalty, "seed": c.seed,
            "order": list(c.order), "max_new_tokens": c.max_new_tokens,
            "stop_strings": list(c.stop_strings),
            "overrides": {str(k): v for k, v in sorted(run.overrides.items())}}
