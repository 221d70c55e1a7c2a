"""Time to first token on SmolLM2 with and without a prefix cache, measured side by side.

    python benchmarks/bench_prefix_cache.py [--json] [--repeat 7]

Two chat requests share a system prompt and the opening words of the question (the
prefix-cache lesson's). Each round times, back to back: request 2 from scratch (Prefill of
all its tokens, first selection), and request 2 from a prefix cache holding request 1 (the
lookup and copy, a Prefill of the rest, first selection); then the same with a system prompt
about 10x longer. `ratio` is the median of scratch / cached over the rounds, so both meet the
same machine. Needs `explorer model install smollm2`.
"""

from __future__ import annotations

import os
import statistics

from benchutil import measure, parser, report, summary
from explorer.catalog.load import load_model
from explorer.core.decode.generate import generate, prefix_cache_of
from explorer.core.decode.sampling import SamplingConfig

SYSTEM = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face{}<|im_end|>\n"
          "<|im_start|>user\nWhat is the capital of {}?<|im_end|>\n<|im_start|>assistant\n")
RULES = (" Answer in one short sentence. Name the city first, then the country. Use plain words."
         " Do not add lists, tables or code. If you do not know, say so.") * 6
FIRST_TOKEN = SamplingConfig(max_new_tokens=1)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    model = load_model("smollm2")
    rows = []
    for label, rules in (("chat prompt", ""), ("long system prompt", RULES)):
        first = model.vocab.encode(SYSTEM.format(rules, "France"))
        second = model.vocab.encode(SYSTEM.format(rules, "Germany"))
        store = prefix_cache_of(model, [generate(model, first, FIRST_TOKEN, check_recompute=False)])

        def scratch():
            return generate(model, second, FIRST_TOKEN, check_recompute=False).time_to_first_token

        def cached():
            return generate(model, second, FIRST_TOKEN, check_recompute=False,
                            prefix=store.lookup(second)).time_to_first_token

        pairs = [(measure(scratch, 1, warmup=0)[0], measure(cached, 1, warmup=0)[0])
                 for _ in range(args.repeat + 1)][1:]       # the first pair warms up
        reused = store.lookup(second).reused
        ratio = statistics.median(a / b for a, b in pairs)
        common = dict(tokens=len(second), reused=reused, computed=len(second) - reused,
                      load=f"{os.getloadavg()[0]:.1f}")
        rows.append(summary(f"{label}: from scratch", [a for a, _ in pairs], **common))
        rows.append(summary(f"{label}: prefix cache", [b for _, b in pairs], ratio=ratio, **common))
    report(rows, args.json)


if __name__ == "__main__":
    main()
