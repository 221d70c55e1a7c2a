"""Handout data of a Run (Qt-free): one CSV row per step and candidate, the JSON record, and
every intermediate value of each forward pass so students can recompute it by hand."""

from __future__ import annotations

import csv
import io
import math

import numpy as np

from ..core.models.attention import attention_scores, attention_weights
from ..core.decode.generate import Run
from ..core.decode.run_dict import run_to_dict, step_candidates
from ..core.models.trace import ForwardTrace
from ..core.tokens.vocab import Vocabulary
from .spec import HANDOUT_TOP

CSV_COLUMNS = ("step", "phase", "input_ids", "positions", "cache_len_before", "cache_len_after",
               "logits_position", "rank", "candidate_id", "candidate_text", "logit", "prob",
               "final_prob", "removed_by", "selected", "forced")


def run_csv(run: Run, vocab: Vocabulary, top_n: int = HANDOUT_TOP) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for step in run.steps:
        removed_by = step.distribution.removed_by
        for rank, c in enumerate(step_candidates(step, vocab, top_n), start=1):
            writer.writerow([step.index, step.phase, " ".join(map(str, step.input_ids)),
                             " ".join(map(str, step.positions)), step.cache_len_before,
                             step.cache_len_after, step.logits_position, rank, c["id"], c["text"],
                             "" if c["logit"] is None else repr(c["logit"]), repr(c["prob"]),
                             repr(c["final_prob"]), removed_by[c["id"]] or "",
                             int(c["id"] == step.selected_id), int(step.forced)])
    return out.getvalue()


def _plain(a: np.ndarray):
    """Nested lists of floats; -inf (a removed candidate) becomes None."""
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        return [_plain(x) for x in a] if a.ndim > 1 else [float(x) if math.isfinite(x) else None for x in a]
    return a.tolist()


def _heads(record, lt) -> list:  # [h][n][t]: every query head's scores or weights, one at a time
    return [_plain(record(lt, head)) for head in range(lt.q.shape[0])]


def trace_dict(trace: ForwardTrace) -> dict:
    return {
        "ids": trace.ids.tolist(), "positions": trace.positions.tolist(),
        "key_ids": trace.key_ids.tolist(), "key_positions": trace.key_positions.tolist(),
        "embeddings": _plain(trace.embeddings),
        "layers": [{"x_in": _plain(lt.x_in), "q": _plain(lt.q), "k": _plain(lt.k), "v": _plain(lt.v),
                    "scores": _heads(attention_scores, lt), "mask": lt.mask.tolist(), "weights": _heads(attention_weights, lt),
                    "attn_out": _plain(lt.attn_out), "ffn_out": _plain(lt.ffn_out),
                    "hidden": _plain(lt.hidden)} for lt in trace.layers],
        "final_hidden": _plain(trace.final_hidden),
        "logits": _plain(trace.logits),
    }


def intermediate_numbers(run: Run) -> int:
    """How many numbers `trace_dict` writes for every step of `run`, counted from the arrays'
    shapes (nothing is built): what a JSON handout with --intermediates holds."""
    total = 0
    for step in run.steps:
        trace = step.trace
        total += trace.embeddings.size + trace.final_hidden.size + trace.logits.size
        for lt in trace.layers:            # scores and weights [h, n, t] per query head, the mask [n, t]
            total += sum(a.size for a in (lt.x_in, lt.q, lt.k, lt.v, lt.attn_out, lt.ffn_out, lt.hidden))
            total += (2 * lt.q.shape[0] + 1) * lt.mask.size
    return total


def run_json(run: Run, vocab: Vocabulary, intermediates: bool = False, top_n: int = HANDOUT_TOP) -> dict:
    data = run_to_dict(run, vocab, top_n)
    if intermediates:
        data["shapes"] = ("q [heads, new positions, head size]; k, v [kv heads, new positions, head size]; "
                          "scores, weights [heads, new positions, all positions]; "
                          "everything else [new positions, width] (a real model keeps only the last position's)")
        for step_data, step in zip(data["steps"], run.steps):
            step_data["forward"] = trace_dict(step.trace)
    for step_data in data["steps"]:
        step_data.pop("forward_ms")          # timings differ between runs; handouts stay identical
    data.pop("time_to_first_token_ms")
    return data
