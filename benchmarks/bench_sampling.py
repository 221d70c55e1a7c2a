"""Time `distribution()` on a vocabulary the size of SmolLM2's (49,152 ids), or Gemma 3's.

Run from the repository root:  PYTHONPATH=src python benchmarks/bench_sampling.py [--json] [--vocab 262144]
(target on Gemma 3's 262,144 ids: the full pipeline, and every stage on, API stages too, <= 3 ms median)
The logits are seeded normal(0, 2.5) values, roughly the spread of a small model's logits;
the last case draws from nearly flat logits (normal(0, 0.05), a random model's), where the
draw has to locate u among tens of thousands of similar probabilities.
"""

from __future__ import annotations

import time

import numpy as np

from benchutil import parser, report, summary
from explorer.core.gguf.heap import keep_freed_arrays
from explorer.core.decode.sampling import SamplingConfig, distribution

VOCAB = 49_152
SEEN = 50          # ids under the repetition penalty (the last `step` of them: the output)
END_IDS = (2,)     # the end token min_new_tokens holds back
WARM_UP = 20

CASES = {
    "full pipeline (penalty, T, top-k, top-p, min-p, draw)": SamplingConfig(
        mode="sample", repetition_penalty=1.3, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05),
    "no top-k (top-p over all ids)": SamplingConfig(
        mode="sample", repetition_penalty=1.3, temperature=0.8, top_p=0.9, min_p=0.05),
    # every stage of both lists on: the course's and the real APIs' (an end token held back, 5 biased ids)
    "all stages on, Hugging Face order": (ALL_ON := SamplingConfig(
        mode="sample", repetition_penalty=1.3, temperature=0.8, top_k=50, top_p=0.9, min_p=0.05,
        presence_penalty=0.5, frequency_penalty=0.3, logit_bias={1: -100.0, 7: 5.0, 42: 2.0, 99: -1.0, 1000: 3.0},
        typical_p=0.95, min_keep=2, xtc_probability=0.5, xtc_threshold=0.1, top_n_sigma=3.0, min_new_tokens=8)),
    "all stages on, llama.cpp order (top-n-sigma over all ids)": ALL_ON.with_(order="llama.cpp"),
    "greedy": SamplingConfig(mode="greedy"),
    "flat logits, draw with no filters": SamplingConfig(mode="sample"),
}
FLAT = {"flat logits, draw with no filters"}


def time_case(config: SamplingConfig, logits: np.ndarray, seen: tuple, repeats: int) -> list[float]:
    """Seconds per call, one per repetition (each at its own step, so u and XTC's draw change;
    the output so far is the last `step` seen ids, at most all of them)."""
    for step in range(WARM_UP):
        distribution(logits, config, seen_ids=seen, step=step, end_ids=END_IDS)
    times = []
    for step in range(repeats):
        start = time.perf_counter()
        distribution(logits, config, seen_ids=seen, step=step, end_ids=END_IDS)
        times.append(time.perf_counter() - start)
    return times


def drag_case(logits: np.ndarray, seen: tuple, repeats: int) -> list[float]:
    """Seconds per tick of a typical-p slider drag with every stage on, at one recorded step:
    read-only logits (a trace's), the same step and draws, a new typical-p on every tick."""
    logits = logits.copy()
    logits.flags.writeable = False
    values = np.r_[np.linspace(0.5, 1.0, 50), np.linspace(1.0, 0.5, 50)]
    ticks = [ALL_ON.with_(typical_p=float(v)) for v in np.resize(values, WARM_UP + repeats)]
    for config in ticks[:WARM_UP]:
        distribution(logits, config, seen_ids=seen, step=3, end_ids=END_IDS)
    times = []
    for config in ticks[WARM_UP:]:
        start = time.perf_counter()
        distribution(logits, config, seen_ids=seen, step=3, end_ids=END_IDS)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=300, help="timed calls per case (default 300)")
    p.add_argument("--vocab", type=int, default=VOCAB, help=f"vocabulary size (default {VOCAB}; Gemma 3: 262144)")
    args = p.parse_args()
    keep_freed_arrays()          # the allocator as a real model's load leaves it (core.llama.load_llama)
    rng = np.random.default_rng(2024)
    logits = rng.normal(0.0, 2.5, args.vocab)                           # (V,)
    flat = rng.normal(0.0, 0.05, args.vocab)                            # (V,)
    seen = tuple(int(i) for i in rng.choice(args.vocab, SEEN, replace=False))
    rows = [summary(name, time_case(config, flat if name in FLAT else logits, seen, args.repeats), vocab=args.vocab)
            for name, config in CASES.items()]
    rows.append(summary("typical-p drag, every stage on, one recorded step (target p95 <= 16 ms)",
                        drag_case(logits, seen, args.repeats), vocab=args.vocab))
    report(rows, args.json)


if __name__ == "__main__":
    main()
