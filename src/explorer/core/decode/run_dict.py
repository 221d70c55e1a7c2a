"""A Run as plain JSON-ready data (the `--json` output, handouts, exports)."""

from __future__ import annotations

import math

from .generate import Run, Step
from .search import SearchResult
from .speculative import VerifyStep, acceptance_rate, accepted_counts, passes_saved
from .usage import count_usage
from .vote import Vote
from ..tokens.vocab import Vocabulary


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
            "reused_positions": s.reused_positions,
        })
    stop = run.stop_match
    return {
        "model": run.model_name,
        "arithmetic": run.arithmetic,
        "prompt_ids": list(run.prompt_ids), "output_ids": list(run.output_ids),
        "output_text": run.output_text,
        "finish_reason": run.finish_reason, "incomplete": run.incomplete,
        "stop_match": None if stop is None else {"text": stop.text, "char_index": stop.char_index,
                                                 "step": stop.step},
        "visible_count": len(run.visible_ids), "cache_len": run.cache_len,
        "usage": count_usage(run.prompt_ids, run.output_ids, vocab).as_dict(),
        "settings": _settings(run),
        "steps": steps,
        "time_to_first_token_ms": run.time_to_first_token * 1000,
        "prefix_cache": None if run.prefix is None else {
            "cached_ids": list(run.prefix.cached_ids), "stored_bytes": run.prefix.stored_bytes,
            "reused": run.prefix.reused, "invalidated": list(run.prefix.match.invalidated)},
    }


def _settings(run: Run) -> dict:
    c = run.config
    return {"mode": c.mode, "temperature": c.temperature, "top_k": c.top_k, "top_p": c.top_p,
            "min_p": c.min_p, "repetition_penalty": c.repetition_penalty, "seed": c.seed,
            "order": list(c.shown_order), "max_new_tokens": c.max_new_tokens,
            "stop_strings": list(c.stop_strings),
            "overrides": {str(k): v for k, v in sorted(run.overrides.items())}} | {
        name: ({str(t): b for t, b in value} if name == "logit_bias" else value)
        for name, value in c.api_settings_on().items()}


def vote_to_dict(vote: Vote) -> dict:
    """A self-consistency vote: each seeded sample's answer and cost, the counts, the majority."""
    return {"seeds": [s.seed for s in vote.samples],
            "samples": [{"seed": s.seed, "answer": s.answer, "output_ids": list(s.run.output_ids),
                         "finish_reason": s.run.finish_reason, "tokens": s.tokens,
                         "forward_ms": sum(step.seconds for step in s.run.steps) * 1000} for s in vote.samples],
            "counts": dict(vote.counts), "majority": vote.majority, "majority_votes": vote.majority_votes,
            "tokens": vote.tokens, "forward_ms": vote.seconds * 1000}


def search_to_dict(result: SearchResult, vocab: Vocabulary, evaluator: str) -> dict:
    """An evaluator search: every node (kept, pruned or finished) and what it cost."""
    best = result.best
    return {"evaluator": evaluator, "width": result.width, "branches": result.branches, "depth": result.depth,
            "forwards": result.forwards, "evaluations": result.evaluations,
            "best": {"ids": list(result.path(best.node_id)), "score": best.score,
                     "pieces": [vocab.piece_text(t) for t in result.path(best.node_id)]},
            "nodes": [{"id": n.node_id, "parent": n.parent_id, "token_id": n.token_id,
                       "text": None if n.token_id is None else vocab.piece_text(n.token_id), "depth": n.depth,
                       "prob": n.prob, "score": n.score, "status": n.status} for n in result.nodes]}



def speculative_to_dict(run: Run, vocab: Vocabulary, k: int, top_n: int = 10) -> dict:
    """A speculative Run: `run_to_dict`, each verify step with its draft, accepted count,
    rejected tokens, new tokens and the cache before the rollback, and the totals."""
    data = run_to_dict(run, vocab, top_n)
    for entry, step in zip(data["steps"], run.steps):
        if isinstance(step, VerifyStep):
            entry |= {"draft": list(step.draft), "accepted": step.accepted, "rejected": list(step.rejected),
                      "new_ids": list(step.new_ids), "passes_saved": step.passes_saved,
                      "cache_len_written": step.cache_len_written}
    rate = acceptance_rate(run)
    return data | {"speculative_k": k, "accepted_counts": list(accepted_counts(run)), "acceptance_rate": rate,
                   "forward_passes": len(run.steps), "plain_forward_passes": len(run.output_ids),
                   "passes_saved": passes_saved(run)}
