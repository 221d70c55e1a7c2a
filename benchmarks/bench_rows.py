"""A real model's forward pass over n new rows, n = 1 .. 64: how its cost grows with n.

    python benchmarks/bench_rows.py [--json] [--model smollm2] [--rounds 7] [--rows 1,2,3,4,5,6,8,12,16,32,64]

Every row feeds n new tokens after a 20-token prefix held in a KV cache (a copy per
timing): what a verify pass of speculative decoding (n = k + 1) and a Prefill after a
prefix cache (n = the rest of the prompt) compute. n = 1 is a Decode step. Each round
times every n once, in a fresh shuffled order, so that all meet the same machine;
`vs_decode` is the median over rounds of (n rows) / (Decode in the same round), and
`products_ms` the median time of the forward's matrix products alone (the layers' and the
output head's on the same rows). The machine is shared: the load average and numba's
threads are printed with the rows; compare ratios, not absolute times.
"""

from __future__ import annotations

import os
import random
import statistics
import time

import numba
import numpy as np

from benchutil import parser, report, summary
from explorer.catalog.load import load_model
from explorer.core.decode.speculative import every_row

PREFIX = 20


def forward_seconds(model, ids, cache, n: int) -> float:
    """Seconds of one forward over ids[PREFIX:PREFIX + n] after a copy of `cache`."""
    own = cache.copy()
    start = time.perf_counter()
    model.feed(ids[PREFIX:PREFIX + n], own)
    return time.perf_counter() - start


def product_seconds(model, n: int, rng) -> float:
    """Seconds of one forward's weight products alone, on random rows [n, d_in]."""
    weights = [w for lp in model.params.layers
               for w in ((lp.wqkv, lp.w13) if lp.wqkv is not None and lp.w13 is not None
                         else (lp.wq, lp.wk, lp.wv, lp.w1, lp.w3)) + (lp.wo, lp.w2)]
    head = model.params.embed.T if model.config.tied_output else model.params.w_out
    weights.append(head)
    rows = {w.shape[0]: rng.standard_normal((n, w.shape[0])).astype(np.float32) for w in weights}
    start = time.perf_counter()
    for w in weights:
        rows[w.shape[0]] @ w
    return time.perf_counter() - start


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2", help="a model name or .gguf path (default smollm2)")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds (default 7), after one warm-up round")
    p.add_argument("--rows", default="1,2,3,4,5,6,8,12,16,32,64", help="comma-separated n")
    args = p.parse_args()
    counts = [int(n) for n in args.rows.split(",")]
    model = every_row(load_model(args.model))        # a verify pass keeps every row's logits
    ids = list(range(1000, 1000 + PREFIX + max(counts)))
    _, cache = model.prefill(ids[:PREFIX])
    rng, order = np.random.default_rng(0), random.Random(0)
    load = os.getloadavg()[0]
    forward = {n: [] for n in counts}
    products = {n: [] for n in counts}
    decode = []
    for round_ in range(args.rounds + 1):
        shuffled = counts[:]
        order.shuffle(shuffled)
        times = {n: forward_seconds(model, ids, cache, n)                # a Decode step first: the reference
                 for n in [1] + [n for n in shuffled if n != 1]}
        spent = {n: product_seconds(model, n, rng) for n in shuffled}
        if round_ == 0:
            continue                                                     # warm-up
        decode.append(times[1])
        for n in counts:
            forward[n].append(times[n])
            products[n].append(spent[n])
    rows = [summary(f"{args.model}: {n} row{'s' if n > 1 else ''}", forward[n],
                    vs_decode=statistics.median(t / d for t, d in zip(forward[n], decode)),
                    ms_per_row=statistics.median(forward[n]) * 1000 / n,
                    products_ms=statistics.median(products[n]) * 1000,
                    threads=numba.get_num_threads(), load_avg=load) for n in counts]
    report(rows, args.json)


if __name__ == "__main__":
    main()
