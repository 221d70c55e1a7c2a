"""SmolLM2-135M-Instruct and Gemma 3 270M in numpy: load time, memory, Prefill and Decode.

    python benchmarks/bench_real_model.py [--json] [--loads 3] [--steps 20] [--peer PYTHON] [--busy N]

SmolLM2 rows side by side with llama.cpp (`--peer`, as below): the explorer and llama.cpp
take turns in fresh processes (`--loads` rounds; who goes first alternates), each process
loading the model (imports included), noting its resident memory, timing the load with
its first Prefill (8 tokens) and Decode step right after (so that work a load leaves for
later counts: the compiled loops must be loaded by then), timing a Prefill of 64
and of 500 tokens and Decode steps at positions 10 and 500 on the same token ids; the
rows are the medians over the rounds, each with llama.cpp's median and the ratio
explorer / llama.cpp (`vs_llama_cpp`). Without a peer the same rows print without those
columns. `--busy N` keeps N busy processes (`while True: pass`) running meanwhile: what a
student's machine with another program at work sees.

Gemma 3 rows (when its file is installed): load in a fresh process, resident memory after
a 500-token Prefill in that process (target <= 600 MB), and Decode ms/token at positions
10 and 600 (past the 512-position window), each beside llama.cpp on the same file in the
same run (`--peer`: a Python with llama-cpp-python, by default /tmp/peer/bin/python or
$TOKEN_EXPLORER_PEER_PYTHON; the rows say "no peer" without one). Target: <= 2x llama.cpp.

Targets: load < 1.5 s, < 800 MB resident, Decode < 20 ms/token at position 10 on 2 cores,
peak resident memory <= 1 GB over a 2,000-token Prefill (its trace held, in a fresh process).
The last rows time opening the shipped real-model lesson with the model already loaded,
and a slider change in it once switched to sampling; then, for each real model, Decode
in llama.cpp's arithmetic (8-bit activations, float16 K/V: `--arithmetic llama.cpp`)
beside float32, steps taking turns, with the largest |logit| and |probability|
differences between the two over those steps.
The weights stay in the file's 4- and 8-bit blocks (core.quantized), 111 MB read per
token. The "floor" row times a step's matrix-vector products alone, on those blocks.
`vs_floor` is the median of Decode / floor over pairs taken back to back (a Decode step
at position 10, then the floor), so both meet the same machine: the shared machine's
speed drifts between rows measured apart.
Load time and memory are taken in fresh processes (each a cold Python, a warm page
cache), so one load does not inflate the next; a load includes importing numba and
reading its compiled loops from numba's cache (compiled by `explorer model install`). The machine is shared: medians, and each Decode row notes the threads numba's
products run on and the load average when it started. Needs `explorer model install smollm2`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from benchutil import child_env, measure, parser, report, summary
from explorer.catalog import registry as model_registry
from explorer.catalog.load import load_model
from explorer.lessons import lessons_dir
from explorer.lessons.schema import parse_lesson

GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
# load a model (argv[1]: a name or file) and Prefill argv[2] tokens, holding the trace
PREFILL_CHILD = r"""
import json, sys, time
start = time.perf_counter()
from explorer.catalog.load import load_model
model = load_model(sys.argv[1])
seconds = time.perf_counter() - start
n = int(sys.argv[2])
ids = model.vocab.encode("The lighthouse keeper climbed the stairs at dusk. " * (n // 5))[:n]
assert len(ids) == n, len(ids)
start = time.perf_counter()
trace, cache = model.prefill(ids)      # held, as the window holds a Run
prefill = time.perf_counter() - start
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
kb = lambda key: int(status[key].split()[0])
print(json.dumps({"seconds": seconds, "prefill": prefill, "rss_mb": kb("VmRSS") / 1024,
                  "peak_mb": kb("VmHWM") / 1024}))
"""
# llama.cpp on the same file: Decode steps timed one token at a time after a Prefill
PEER_CHILD = r"""
import json, sys, time
import llama_cpp
path, position, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
prompt = json.loads(sys.stdin.read())
llm = llama_cpp.Llama(model_path=path, n_ctx=2048, n_batch=1024, n_threads=2, verbose=False)
llm.eval(prompt)
times, token = [], prompt[-1]
for i in range(steps + 2):
    start = time.perf_counter()
    llm.eval([token])
    if i >= 2:
        times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


# one round of the explorer in a fresh process: load, resident memory, Prefill 64 and 500
# (median of a few), Decode at positions 10 and 500 (a step per timing); argv: steps
OURS_ROUND = r"""
import json, statistics, sys, time
start = time.perf_counter()
from explorer.catalog.load import load_model
model = load_model(sys.argv[2])
out = {"load": time.perf_counter() - start}
def rss_mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024
out["rss_mb"] = rss_mb()
steps, ids = int(sys.argv[1]), json.loads(sys.stdin.read())
start = time.perf_counter()                                  # what a load may have left undone
_, cache = model.prefill(ids[:8])
model.decode(ids[8], cache)
out["load and first steps"] = out["load"] + time.perf_counter() - start
for n, repeat in ((64, 5), (500, 2)):
    model.prefill(ids[:n])                                   # warm
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        model.prefill(ids[:n])
        times.append(time.perf_counter() - start)
    out[f"prefill {n}"] = statistics.median(times)
held = model.prefill(ids[:500])                             # as the window holds a run
out["rss_500_mb"] = rss_mb()
del held
for position in (10, 500):
    _, cache = model.prefill(ids[:position])
    times = []
    for i in range(steps + 2):
        trace, cache = model.decode(ids[position + i], cache)
        if i >= 2:                                           # the first steps warm the caches
            times.append(trace.seconds)
    out[f"decode {position}"] = statistics.median(times)
print(json.dumps(out))
"""
# the same round in llama.cpp (llama-cpp-python, two threads) on the same file and token ids
PEER_ROUND = r"""
import json, statistics, sys, time
start = time.perf_counter()
import llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=1024, n_batch=512, n_threads=2, verbose=False)
out = {"load": time.perf_counter() - start}
def rss_mb():
    status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
    return int(status["VmRSS"].split()[0]) / 1024
out["rss_mb"] = rss_mb()
steps, ids = int(sys.argv[2]), json.loads(sys.stdin.read())
start = time.perf_counter()
llm.eval(ids[:8])
llm.eval([ids[8]])
out["load and first steps"] = out["load"] + time.perf_counter() - start
for n, repeat in ((64, 5), (500, 2)):
    times = []
    for i in range(repeat + 1):
        llm.reset()
        start = time.perf_counter()
        llm.eval(ids[:n])
        if i:
            times.append(time.perf_counter() - start)
    out[f"prefill {n}"] = statistics.median(times)
out["rss_500_mb"] = rss_mb()                                # after a 500-token prompt
for position in (10, 500):
    llm.reset()
    llm.eval(ids[:position])
    times = []
    for i in range(steps + 2):
        start = time.perf_counter()
        llm.eval([ids[position + i]])
        if i >= 2:
            times.append(time.perf_counter() - start)
    out[f"decode {position}"] = statistics.median(times)
print(json.dumps(out))
"""
SIDE_BY_SIDE = (("load (fresh process)", "load", "< 1500 ms, <= 3x llama.cpp"),
                ("load, then Prefill 8 tokens and Decode 1", "load and first steps", "nothing left undone"),
                ("prefill 64 tokens", "prefill 64", ""),
                ("prefill 500 tokens", "prefill 500", "<= 1.1x llama.cpp"),
                ("decode at position 10", "decode 10", "< 20 ms, <= 1.5x llama.cpp"),
                ("decode at position 500", "decode 500", "<= 1.5x llama.cpp"))


def side_by_side_rows(rounds: int, steps: int, peer: str | None, ids: list[int], path=None,
                      rows_of=None) -> list[dict]:
    """A model (SmolLM2, or the GGUF file at `path`) beside llama.cpp: `rounds` fresh
    processes of each, taking turns (see the module doc); without a peer, the explorer's
    alone. `rows_of`: (name, key, target) of the rows (default SIDE_BY_SIDE)."""
    path = path or model_registry.model_path("smollm2")
    payload = json.dumps(ids)
    ours, theirs, loads = [], [], []
    for r in range(rounds):
        runs = [("ours", [sys.executable, "-c", OURS_ROUND, str(steps), str(path)])]
        if peer is not None:
            runs.append(("peer", [peer, "-c", PEER_ROUND, str(path), str(steps)]))
        for who, cmd in (runs if r % 2 == 0 else runs[::-1]):
            loads.append(os.getloadavg()[0])
            done = subprocess.run(cmd, input=payload, capture_output=True, text=True, check=True,
                                  env=child_env())
            (ours if who == "ours" else theirs).append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = []
    for name, key, target in rows_of or SIDE_BY_SIDE:
        extra = {"target": target, "load_avg": statistics.median(loads)}
        if key == "load":
            extra["rss_mb"] = statistics.median(o["rss_mb"] for o in ours)
            extra["rss_500_mb"] = statistics.median(o["rss_500_mb"] for o in ours)
        if theirs:
            mine, peer_s = statistics.median(o[key] for o in ours), statistics.median(t[key] for t in theirs)
            extra.update(llama_cpp_ms=peer_s * 1000, vs_llama_cpp=mine / peer_s)
            if key == "load":
                extra["llama_cpp_rss_mb"] = statistics.median(t["rss_mb"] for t in theirs)
                extra["llama_cpp_rss_500_mb"] = statistics.median(t["rss_500_mb"] for t in theirs)
        rows.append(summary(name, [o[key] for o in ours], **extra))
    return rows


def busy_processes(n: int) -> list[subprocess.Popen]:
    """n processes that only spin, as another program at work on the machine; each ends
    when this process does, even when it is killed before it can end them."""
    spin = "import os\nparent = os.getppid()\nwhile os.getppid() == parent: pass"
    return [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(n)]


def load_in_fresh_processes(n: int, child: str, *args: str) -> list[dict]:
    out = []
    for _ in range(n):
        done = subprocess.run([sys.executable, "-c", child, *args], capture_output=True, text=True,
                              check=True, env=child_env())
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out


def peer_python(option: str | None) -> str | None:
    """The Python that has llama-cpp-python, or None."""
    for candidate in (option, os.environ.get("TOKEN_EXPLORER_PEER_PYTHON"), "/tmp/peer/bin/python"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def peer_decode_times(python: str, path, prompt: list[int], steps: int) -> list[float]:
    done = subprocess.run([python, "-c", PEER_CHILD, str(path), str(len(prompt)), str(steps)],
                          input=json.dumps(prompt), capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def gemma3_rows(loads: int, steps: int, peer: str | None) -> list[dict]:
    """Load, memory after a 500-token Prefill, Decode at positions 10 and 600 beside llama.cpp."""
    path = model_registry.cache_dir() / GEMMA3_FILE
    if not path.is_file():
        return []
    fresh = load_in_fresh_processes(loads, PREFILL_CHILD, str(path), "500")
    rows = [summary("gemma3: load (fresh process)", [r["seconds"] for r in fresh], target="<= 1500 ms"),
            summary("gemma3: Prefill 500 tokens, then resident", [r["prefill"] for r in fresh],
                    rss_mb=statistics.median(r["rss_mb"] for r in fresh),
                    peak_mb=statistics.median(r["peak_mb"] for r in fresh), target="<= 600 MB")]
    model = load_model(path)
    for position in (10, 600):
        before = conditions()
        ours = decode_times(model, position, steps)[0]
        extra = {"target": "<= 2x llama.cpp", **before}
        if peer is not None:
            prompt = np.random.default_rng(position).integers(100, len(model.vocab), position).tolist()
            theirs = peer_decode_times(peer, path, prompt, steps)
            extra.update(llama_cpp_ms=statistics.median(theirs) * 1000,
                         vs_llama_cpp=statistics.median(ours) / statistics.median(theirs))
        else:
            extra["llama_cpp_ms"] = "no peer"
        rows.append(summary(f"gemma3: decode at position {position}", ours, **extra))
    return rows


def decode_times(model, position: int, steps: int, after=None) -> tuple[list[float], list]:
    """Seconds of `steps` consecutive Decode steps starting at `position` (after a Prefill),
    and what `after()` returned right after each step (None without it)."""
    rng = np.random.default_rng(position)
    prompt = rng.integers(100, len(model.vocab), position).tolist()
    _, cache = model.prefill(prompt)
    times, afters = [], []
    token = prompt[-1]
    for i in range(steps + 2):
        trace, cache = model.decode(token, cache)
        extra = None if after is None else after()
        if i >= 2:                         # the first steps warm the caches
            times.append(trace.seconds)
            afters.append(extra)
        token = int(np.argmax(trace.last_logits))
    return times, afters


def products_only(model) -> float:
    """Seconds of one Decode step's matrix-vector products alone, on the model's own
    weights as stored (4- and 8-bit blocks): the floor a step cannot go under, since it
    reads every weight once per token."""
    p = model.params
    x = np.ones((1, model.config.d_model), np.float32)            # [1, d]
    hidden = np.ones((1, model.config.d_ff), np.float32)          # [1, f]
    start = time.perf_counter()
    for lp in p.layers:
        x @ lp.wqkv, x @ lp.wo, x @ lp.w13, hidden @ lp.w2
    x @ p.embed.T
    return time.perf_counter() - start


def conditions() -> dict:
    """What the timings depend on besides the code: the threads of numba's loops and load."""
    import numba
    return {"threads": numba.get_num_threads(), "load_avg": os.getloadavg()[0]}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--loads", type=int, default=3,
                   help="fresh processes per engine (the rounds of the side-by-side rows)")
    p.add_argument("--steps", type=int, default=20, help="Decode steps timed per position")
    p.add_argument("--peer", help="a Python with llama-cpp-python (SmolLM2 and Gemma 3 rows beside llama.cpp)")
    p.add_argument("--busy", type=int, default=0, help="busy processes running during the side-by-side rows")
    p.add_argument("--side-by-side-only", action="store_true", help="only the rows measured beside llama.cpp")
    args = p.parse_args()
    model_registry.require_installed("smollm2")
    model = load_model("smollm2")
    text = model.vocab.encode("The capital of France is Paris. " * 200)      # 1,400 ids
    peer = peer_python(args.peer)
    spinning = busy_processes(args.busy)
    try:
        rows = side_by_side_rows(args.loads, args.steps, peer, text[:502 + args.steps])
    finally:
        for process in spinning:
            process.kill()
            process.wait()
    if args.busy:
        for row in rows:
            row["busy_processes"] = args.busy
    if args.side_by_side_only:
        report(rows, args.json)
        return
    decode, floor = decode_times(model, 10, args.steps, after=lambda: products_only(model))
    rows.append(summary("matrix products only (floor)", floor,
                        vs_floor=statistics.median(d / f for d, f in zip(decode, floor))))
    rows.append(summary("open the real-model lesson (model loaded)", measure(open_real_lesson, repeat=5, warmup=1)))
    rows.append(summary("real-model lesson: a new seed in sampling mode", lesson_changes(seeds=7)))
    rows += long_prompt_rows()
    rows += gemma3_rows(args.loads, args.steps, peer)
    rows += arithmetic_rows(args.steps)
    report(rows, args.json)


def arithmetic_rows(steps: int) -> list[dict]:
    """Each installed real model in both arithmetics (`--arithmetic`): Decode steps at
    position 10, the float32 and the llama.cpp arithmetic taking turns on the same tokens
    (so both meet the same machine), and how far apart their next-token logits and
    probabilities are over those steps."""
    from explorer.core.models.layers import softmax
    from explorer.core.gguf.llama import with_arithmetic
    rows = []
    for name in ("smollm2", "gemma3-270m"):
        if model_registry.installed_path(name) is None:
            continue
        plain = load_model(name)
        models = (plain, with_arithmetic(plain, "llama.cpp"))
        prompt = np.random.default_rng(10).integers(100, len(plain.vocab), 10).tolist()
        caches = [m.prefill(prompt)[1] for m in models]
        times, logit_gap, p_gap = ([], []), 0.0, 0.0
        before, token = conditions(), prompt[-1]
        for i in range(steps + 2):
            traces = []
            for k, m in enumerate(models):
                trace, caches[k] = m.decode(token, caches[k])
                traces.append(trace)
                if i >= 2:                 # the first steps warm the caches
                    times[k].append(trace.seconds)
            a, b = (np.asarray(t.last_logits, np.float64) for t in traces)
            logit_gap = max(logit_gap, float(np.max(np.abs(a - b))))
            p_gap = max(p_gap, float(np.max(np.abs(softmax(a) - softmax(b)))))
            token = int(np.argmax(a))
        rows.append(summary(f"{name}: decode at position 10, llama.cpp arithmetic", times[1],
                            float32_ms=statistics.median(times[0]) * 1000,
                            vs_float32=statistics.median(times[1]) / statistics.median(times[0]),
                            max_abs_dlogit=logit_gap, max_abs_dp=p_gap, **before))
    return rows


def long_prompt_rows() -> list[dict]:
    """Peak resident memory of a fresh process that loads SmolLM2 and holds the trace of a
    Prefill of 500 and of 2,000 tokens (the prompt limit is 2,048): the trace keeps q and
    the keys, not every layer's [heads, n, n] weights."""
    rows = []
    for n, target in ((500, ""), (2000, "<= 1024 MB")):
        r = load_in_fresh_processes(1, PREFILL_CHILD, "smollm2", str(n))[0]
        rows.append(summary(f"prefill {n} tokens in a fresh process, then resident", [r["prefill"]],
                            rss_mb=r["rss_mb"], peak_mb=r["peak_mb"], target=target))
    return rows


def lesson_changes(seeds: int) -> list[float]:
    """Seconds per change of the seed in the real-model lesson switched to sampling, as the
    window computes it: the teacher's changes on a big model are not rechecked. Each seed
    draws other tokens, so every scenario runs anew from its first pick on."""
    session = parse_lesson(lessons_dir() / "real-model.toml").build_session()
    session.set_check_recompute(False)
    session.set_sampling(mode="sample")
    times = []
    for seed in range(1, seeds + 1):
        start = time.perf_counter()
        session.set_sampling(seed=seed)
        times.append(time.perf_counter() - start)
    return times


def open_real_lesson() -> None:
    """What Open in the lesson list prepares in the background once the model is loaded:
    read the file, check its frames, run its scenarios with the recompute check."""
    parse_lesson(lessons_dir() / "real-model.toml").build_session()


if __name__ == "__main__":
    main()
