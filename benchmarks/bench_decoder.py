"""Forward-pass timings: the teaching model's Prefill and Decode, and KV cache vs full recompute.

    python benchmarks/bench_decoder.py [--json] [--tokens 256]
"""

from __future__ import annotations

import numpy as np

from benchutil import measure, parser, report, summary
from explorer.core.models.decoder import DecoderConfig, DecoderModel, random_params
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary

LARGE = DecoderConfig(vocab_size=1000, d_model=128, n_layers=4, n_heads=4, n_kv_heads=4,
                      head_dim=32, d_ff=512, ffn="gelu", norm="layer", positions="learned",
                      max_positions=512)


def greedy_with_cache(model, prompt, n):
    trace, cache = model.prefill(prompt)
    ids = list(prompt)
    for _ in range(n - 1):
        ids.append(int(np.argmax(trace.logits[-1])))
        trace, cache = model.decode(ids[-1], cache)
    ids.append(int(np.argmax(trace.logits[-1])))
    return ids


def greedy_recompute(model, prompt, n):
    """The picoGPT way: every step runs the whole prefix again."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(model.full_forward(ids).logits[-1])))
    return ids


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--tokens", type=int, default=256, help="tokens to generate with the large model")
    args = p.parse_args()
    rows = []
    teaching = load_teaching_model()
    rows.append(summary("teaching prefill [1,2]", measure(lambda: teaching.prefill([1, 2]), 2000)))

    def decode_step():
        _, cache = teaching.prefill([1, 2])
        return cache
    cache_template = decode_step()
    rows.append(summary("teaching decode step", measure(
        lambda: teaching.decode(3, cache_template.copy()), 2000)))

    rng = np.random.default_rng(0)
    large = DecoderModel(LARGE, random_params(LARGE, rng), Vocabulary(tuple(map(str, range(1000)))))
    prompt = [1, 2, 3, 4]
    cached = measure(lambda: greedy_with_cache(large, prompt, args.tokens), 5, warmup=1)
    full = measure(lambda: greedy_recompute(large, prompt, args.tokens), 3, warmup=1)
    assert greedy_with_cache(large, prompt, 16) == greedy_recompute(large, prompt, 16)
    ratio = np.median(full) / np.median(cached)
    rows.append(summary(f"4L/4H/d128/V1000: {args.tokens} tokens with KV cache", cached))
    rows.append(summary(f"4L/4H/d128/V1000: {args.tokens} tokens, full recompute", full,
                        speedup_of_cache=float(ratio)))
    report(rows, args.json)


if __name__ == "__main__":
    main()
