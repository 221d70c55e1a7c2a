"""Record llama.cpp's numbers for the tiny model of every family the engine runs, as a test
fixture (tests/fixtures/families_llama_cpp.json).

The files are tests/support/family_files.py's (random weights, written deterministically by
the `gguf` package): this script writes them into a temporary folder, runs llama.cpp
(llama-cpp-python, in a virtual environment of its own: never an app dependency; the tests
never run this script) on each, and keeps, for a fixed prompt of token ids:

- after the prompt and after each of its greedy tokens, the five most probable next tokens
  with their probabilities (softmax of llama.cpp's logits, float64) and llama.cpp's logits;
- the same after one Prefill of the prompt and its greedy tokens (a full recompute);
- for every quantised variant, the same again on its weights dequantised to float32
  ("dequantised"): llama.cpp in float arithmetic on exactly the engine's weights.

K and V are kept as float32 (type_k = type_v = F32): llama.cpp's default float16 cache
alone moves the probabilities by about 6e-4. Flash attention is off.

Usage (under a minute on two cores):

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install llama-cpp-python numpy gguf
    /tmp/peer/bin/python tools/record_family_reference.py tests/fixtures/families_llama_cpp.json
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "src")]
from family_files import FAMILIES, VARIANTS, write_family  # noqa: E402

# a prompt longer than Gemma 2's window of 8, of ids that are no control token
PROMPT = [int(i) for i in np.random.default_rng(11).integers(3, 264, 20)]
GREEDY_STEPS = 6
TOP = 5
F32 = 0            # ggml's type id of float32, for the K/V cache


def softmax(logits: np.ndarray) -> np.ndarray:  # [V] -> [V] float64
    z = logits.astype(np.float64)
    z = np.exp(z - z.max())
    return z / z.sum()


def top(llm) -> dict:
    """The five most probable next tokens after what llm has evaluated, their
    probabilities and llama.cpp's float32 logits of them."""
    import llama_cpp
    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),)).copy()
    p = softmax(logits)
    ids = np.argsort(-p, kind="stable")[:TOP]
    return {"ids": [int(i) for i in ids], "p": [round(float(p[i]), 7) for i in ids],
            "logits": [float(logits[i]) for i in ids]}


def run(path: Path) -> dict:
    import llama_cpp
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=256, n_batch=256, n_threads=2, flash_attn=False,
                          type_k=F32, type_v=F32, logits_all=False, verbose=False)
    llm.reset()
    llm.eval(PROMPT)
    steps, greedy = [top(llm)], []
    for _ in range(GREEDY_STEPS):
        greedy.append(steps[-1]["ids"][0])
        llm.eval([greedy[-1]])
        steps.append(top(llm))
    llm.reset()
    llm.eval(PROMPT + greedy)
    recompute = top(llm)
    del llm
    return {"greedy": greedy, "steps": steps, "recompute": recompute}


def record() -> dict:
    import llama_cpp
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch in FAMILIES:
            for variant in VARIANTS:
                path = write_family(Path(tmp) / f"{arch}-{variant}.gguf", arch, variant)
                entry = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest(), **run(path)}
                if variant != "f32":
                    twin = write_family(Path(tmp) / f"{arch}-{variant}-dequantised.gguf", arch, variant,
                                        dequantised=True)
                    entry["dequantised"] = run(twin)
                out[f"{arch}/{variant}"] = entry
                print(f"{arch}/{variant}: greedy {entry['greedy']}", file=sys.stderr)
    return {
        "about": "llama.cpp (llama-cpp-python) on tests/support/family_files.py's tiny models; written by "
                 "tools/record_family_reference.py. steps[0] follows the prompt, steps[k] follows greedy[:k]; "
                 "p is the softmax of llama.cpp's logits; recompute after one Prefill of prompt + greedy; "
                 "dequantised: the same weights stored as float32. K/V cache float32, flash attention off.",
        "llama_cpp_python": llama_cpp.__version__,
        "cpu": _cpu(),
        "prompt": PROMPT,
        "models": out,
    }


def _cpu() -> str:
    """The CPU's model name and whether it has AVX-512 (llama.cpp's kernels differ by it)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor()
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    return f"{name}, {'AVX-512' if 'avx512f' in info else 'AVX2' if 'avx2' in info else 'no AVX2'}"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    data = record()
    Path(sys.argv[1]).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {sys.argv[1]}: {len(data['models'])} models")


if __name__ == "__main__":
    main()
