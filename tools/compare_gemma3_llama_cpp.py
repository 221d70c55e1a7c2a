"""Where the explorer's Gemma 3 numbers part from llama.cpp's, step by step.

Replays every prompt of tests/fixtures/gemma3_llama_cpp.json (written by
tools/record_gemma3_reference.py) through Gemma 3 270M in one arithmetic ("llama.cpp" by
default, or "float"): a Prefill of the prompt, then one Decode step per greedy token
llama.cpp picked. At every step it prints the largest difference between our float32
logits of llama.cpp's five candidates and llama.cpp's own (0 = every bit equal) and the
largest difference of their probabilities; at the end, per prompt and over the fixture,
the worst probability gap, the first step that is not bit for bit llama.cpp's, and
whether every greedy pick agrees. With --recompute also a full recompute (one Prefill of
the prompt and its greedy tokens) against llama.cpp's own, and a Prefill of 513 tokens
(llama.cpp takes the last one alone, in a batch of its own).

Usage (the long prompts take a minute or two in llama.cpp's arithmetic on two cores):

    PYTHONPATH=src python tools/compare_gemma3_llama_cpp.py [--arithmetic float] [--recompute] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from explorer.catalog.load import load_model
from explorer.core.models.layers import softmax
from explorer.core.gguf.llama import with_arithmetic

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "gemma3_llama_cpp.json"


def replay(model, case) -> list[tuple[float, float, int]]:
    """Per step of `case`: (max |our logit - llama.cpp's|, max |our p - llama.cpp's p|
    over its five candidates, our greedy pick)."""
    trace, cache = model.prefill(model.vocab.encode(case["text"]))
    rows = []
    for step, (top, their_logits) in enumerate(zip(case["top5"], case["top5_logits"])):
        logits = trace.last_logits
        p = softmax(np.asarray(logits, np.float64))
        ids = [token for token, _ in top]
        dl = max(abs(float(logits[t]) - lg) for t, lg in zip(ids, their_logits))
        dp = max(abs(p[t] - prob) for t, (_, prob) in zip(ids, top))
        rows.append((dl, dp, int(np.argmax(p))))
        if step < len(case["greedy"]):
            trace, cache = model.decode(case["greedy"][step], cache)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="fixture prompts (default: all)")
    parser.add_argument("--arithmetic", default="llama.cpp", choices=("llama.cpp", "float"))
    parser.add_argument("--recompute", action="store_true", help="also compare a full recompute")
    args = parser.parse_args()
    fixture = json.loads(FIXTURE.read_text("utf-8"))
    model = with_arithmetic(load_model("gemma3-270m"), args.arithmetic)
    worst, gaps = 0.0, []
    for case in fixture["prompts"]:
        if args.names and case["name"] not in args.names:
            continue
        start = time.perf_counter()
        rows = replay(model, case)
        seconds = time.perf_counter() - start
        print(f"{case['name']} ({len(case['ids'])} tokens, {seconds:.1f} s)")
        for step, (dl, dp, pick) in enumerate(rows):
            mark = "" if step >= len(case["greedy"]) or pick == case["greedy"][step] else "  pick differs"
            print(f"  step {step}: max |dlogit| {dl:.6g}  max |dp| {dp:.4f}{mark}")
        exact = [step for step, (dl, _, _) in enumerate(rows) if dl != 0]
        picks = all(pick == g for (_, _, pick), g in zip(rows, case["greedy"]))
        print(f"  worst |dp| {max(dp for _, dp, _ in rows):.4f}; first step not bit for bit: "
              f"{exact[0] if exact else 'none'}; greedy picks agree: {picks}")
        if args.recompute:
            logits = model.reference_logits(case["ids"] + case["greedy"], 1)[0]
            ids = [token for token, _ in case["recompute_top5"]]
            dl = max(abs(float(logits[t]) - lg) for t, lg in zip(ids, case["recompute_top5_logits"]))
            print(f"  full recompute: max |dlogit| {dl:.6g}")
        worst = max(worst, max(dp for _, dp, _ in rows))
        gaps += [dp for _, dp, _ in rows]
    edge = fixture["ubatch_edge"]
    if args.recompute and (not args.names or edge["prompt"] in args.names):
        case = next(c for c in fixture["prompts"] if c["name"] == edge["prompt"])
        logits = model.reference_logits(case["ids"][:edge["length"]], 1)[0]
        dl = max(abs(float(logits[t]) - lg) for (t, _), lg in zip(edge["top5"], edge["top5_logits"]))
        print(f"Prefill of the first {edge['length']} ids of {edge['prompt']}: max |dlogit| {dl:.6g}")
    print(f"fixture: worst |dp| {worst:.4f}, mean of the per-step worst {np.mean(gaps):.4f}")


if __name__ == "__main__":
    main()
