"""The raw logit lens on a real model: one step's lens, and the memory the lenses of a long run take.

    python benchmarks/bench_lens.py [--json] [--model smollm2] [--repeat 20] [--steps 256]

Rows:
- `lens <arithmetic>`: `logit_lens` for one Decode step (every layer's residual stream
  through the final norm and the output head, top 20 per layer), median over `--repeat`
  calls; `head_ms` is the head's products alone (`layer_logits`), the rest is the softmax
  denominators and the top 20. Target on SmolLM2: <= 20 ms.
- `run <steps> steps` / `run + lenses`: resident memory of a fresh process holding a
  greedy run of `--steps` Decode steps, then also the lens of every step (kept, as a
  window stepping through the run keeps them); `lens_kb` is what the lenses' arrays hold.
The machine is shared: the load average is printed with the rows; compare ratios.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from benchutil import child_env, measure, parser, report, summary

PROMPT = "Once upon a time, in a small village by the sea, there lived"

MEMORY_ROUND = r"""
import json, sys
from explorer.catalog.load import load_model
from explorer.core.decode.generate import generate
from explorer.core.decode.sampling import SamplingConfig
from explorer.core.models.lens import logit_lens
def rss_mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024
model = load_model(sys.argv[1])
ids = model.vocab.encode(sys.argv[3])
generate(model, ids, SamplingConfig(max_new_tokens=2), check_recompute=False)     # warm
loaded = rss_mb()
run = generate(model, ids, SamplingConfig(max_new_tokens=int(sys.argv[2])), check_recompute=False)
with_run = rss_mb()
lenses = [logit_lens(model, step) for step in run.steps]
with_lenses = rss_mb()
held = sum(l.ids.nbytes + l.probs.nbytes + l.logits.nbytes + l.selected_probs.nbytes + l.selected_ranks.nbytes
           + 8 * sum(len(row) for row in l.pieces) for l in lenses)
print(json.dumps({"loaded": loaded, "run": with_run, "lenses": with_lenses, "steps": len(run.steps),
                  "lens_kb": held / 1024}))
"""


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2", help="a model name or .gguf path (default smollm2)")
    p.add_argument("--repeat", type=int, default=20, help="timed lens calls per arithmetic (default 20)")
    p.add_argument("--steps", type=int, default=256, help="Decode steps of the memory rows' run (default 256)")
    args = p.parse_args()

    from explorer.catalog.load import load_model
    from explorer.core.decode.generate import generate
    from explorer.core.decode.sampling import SamplingConfig
    from explorer.core.gguf.llama import with_arithmetic
    from explorer.core.models.lens import logit_lens

    base = load_model(args.model)
    ids = base.vocab.encode(PROMPT)
    rows = []
    for arithmetic in ("float", "llama.cpp"):
        model = with_arithmetic(base, arithmetic)
        step = generate(model, ids, SamplingConfig(max_new_tokens=2), check_recompute=False).steps[1]
        head = measure(lambda: model.layer_logits(step.trace), args.repeat)
        times = measure(lambda: logit_lens(model, step), args.repeat)
        rows.append(summary(f"lens {arithmetic}", times, layers=len(step.trace.layers),
                            head_ms=sorted(head)[len(head) // 2] * 1000, target_ms=20.0))

    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", MEMORY_ROUND, args.model, str(args.steps), PROMPT],
                          capture_output=True, text=True, check=True, env=child_env())
    seconds = time.perf_counter() - start
    mem = json.loads(done.stdout)
    common = dict(steps=mem["steps"], loaded_mb=round(mem["loaded"], 1))
    rows.append(summary(f"run {args.steps} steps", [seconds], rss_mb=round(mem["run"], 1), **common))
    rows.append(summary("run + lenses", [seconds], rss_mb=round(mem["lenses"], 1),
                        lens_kb=round(mem["lens_kb"], 1), **common))
    report(rows, args.json)
    if not args.json:
        print(f"load average {os.getloadavg()[0]:.2f}; the memory rows' median_ms is the whole child's time")


if __name__ == "__main__":
    main()
