"""Speculative decoding on SmolLM2: accepted tokens per verify pass and the wall-clock
speed-up over plain decoding, on repetitive prompts (a list, code) and on free text.

    python benchmarks/bench_speculative.py [--json] [--k 4] [--tokens 32] [--repeat 3]

Each case decodes the same prompt greedily, plain (one forward per token) and speculatively
(prompt lookup, up to k drafted tokens verified per pass), alternating, `repeat` times
each; medians of the whole generation's wall time (the recompute check off). Both give
the same tokens (checked). The machine's two cores run numba's loops; the load average
at the start is printed: the machine is shared, compare the ratio, not the absolute times.
"""

from __future__ import annotations

import os
import statistics
import time

from benchutil import parser, report
from explorer.catalog.load import load_model
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.decode.speculative import acceptance_rate, accepted_counts, prompt_lookup, speculative_generate

CASES = {
    "list": "January, February, March, April, May, June, July, August, September, October, November, "
            "December. January, February,",
    "code": "x = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\ny = [1, 2, 3, 4,",
    "free text": "The old lighthouse keeper looked out at the storm and",
}


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--k", type=int, default=4, help="tokens drafted per pass (default 4)")
    p.add_argument("--ngram", type=int, default=2, help="longest n-gram looked up (default 2)")
    p.add_argument("--tokens", type=int, default=32, help="new tokens per generation (default 32)")
    p.add_argument("--repeat", type=int, default=3, help="timed generations of each kind per case (default 3)")
    args = p.parse_args()
    model = load_model("smollm2")
    config = SamplingConfig(max_new_tokens=args.tokens)
    drafter = prompt_lookup(args.ngram)
    load = os.getloadavg()[0]
    rows = []
    for case, text in CASES.items():
        prompt = model.vocab.encode(text)
        plain_times, spec_times = [], []
        for _ in range(args.repeat):
            seconds, plain = timed(lambda: generate(model, prompt, config, check_recompute=False))
            plain_times.append(seconds)
            seconds, spec = timed(lambda: speculative_generate(model, prompt, config, k=args.k, drafter=drafter,
                                                               check_recompute=False))
            spec_times.append(seconds)
            if spec.output_ids != plain.output_ids:
                raise SystemExit(f"{case}: speculative output differs from plain greedy decoding")
        counts = accepted_counts(spec)
        plain_ms, spec_ms = statistics.median(plain_times) * 1000, statistics.median(spec_times) * 1000
        rows.append({"case": f"{case}: speculative k={args.k}", "median_ms": spec_ms,
                     "p95_ms": max(spec_times) * 1000, "n": args.repeat,
                     "plain_ms": plain_ms, "speed_up": plain_ms / spec_ms,
                     "tokens": len(spec.output_ids), "passes": len(spec.steps), "plain_passes": len(plain.steps),
                     "accepted_per_pass": sum(counts) / len(counts) if counts else 0.0,
                     "acceptance": acceptance_rate(spec) or 0.0, "accepted_counts": " ".join(map(str, counts)),
                     "load_avg": load})
    report(rows, args.json)


if __name__ == "__main__":
    main()
