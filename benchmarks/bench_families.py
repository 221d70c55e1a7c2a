"""The teacher's own model, at the sizes they download: Qwen2.5-0.5B- and 1.5B-shaped GGUF
files (benchmarks/shaped_models.py: 24 layers, d_model 896, 14 query heads sharing 2 K/V
heads, FFN 4,864, vocabulary 151,936; and 28 x 1,536 / 12 / 2 / 8,960) with random
weights in llama.cpp's Q4_K_M mix of types, beside llama.cpp on the same file.

    python benchmarks/bench_families.py [--json] [--loads 3] [--steps 12] [--peer PYTHON]
                                        [--shapes qwen2.5-0.5b,qwen2.5-1.5b] [--keep DIR]

The files are written to a temporary folder (or DIR with --keep, reused when present),
never into the repository. Each shape takes bench_real_model's side-by-side rounds: the
explorer and llama.cpp (llama-cpp-python, two threads, in its own virtual environment:
/tmp/peer/bin/python by default) take turns in fresh processes, who goes first
alternating; each loads the model (imports included), then Prefills 64 and 500 tokens
and takes Decode steps at positions 10 and 500 on the same token ids. Rows are medians
over the rounds with llama.cpp's median and the ratio explorer / llama.cpp. The load
row also gives resident memory right after the load and after a 500-token prompt
(`rss_500_mb`), and that over the file size (`rss_500_vs_file`).

Targets (issue 32): Decode at 10 and 500 <= 1.5x llama.cpp; load <= 3x; Prefill 500
<= 1x; resident after a 500-token prompt <= 1.3x the file size."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from bench_real_model import peer_python, side_by_side_rows
from benchutil import parser, report
from shaped_models import SHAPES, write_shaped

ROWS = (("load (fresh process)", "load", "<= 3x llama.cpp"),
        ("prefill 64 tokens", "prefill 64", ""),
        ("prefill 500 tokens", "prefill 500", "<= 1x llama.cpp"),
        ("decode at position 10", "decode 10", "<= 1.5x llama.cpp"),
        ("decode at position 500", "decode 500", "<= 1.5x llama.cpp"))


def shape_rows(path: Path, name: str, rounds: int, steps: int, peer: str | None) -> list[dict]:
    ids = np.random.default_rng(0).integers(300, 150_000, 502 + steps).tolist()
    rows = side_by_side_rows(rounds, steps, peer, ids, path=path, rows_of=ROWS)
    size_mb = path.stat().st_size / 1e6
    for row in rows:
        row["case"] = f"{name}: {row['case']}"
        if "rss_500_mb" in row:
            row.update(file_mb=size_mb, rss_500_vs_file=row["rss_500_mb"] * 2 ** 20 / 1e6 / size_mb)
    return rows


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--loads", type=int, default=3, help="fresh processes per engine and shape")
    p.add_argument("--steps", type=int, default=12, help="Decode steps timed per position")
    p.add_argument("--peer", help="a Python with llama-cpp-python")
    p.add_argument("--shapes", default=",".join(SHAPES), help="comma list of " + ", ".join(SHAPES))
    p.add_argument("--keep", help="write (or reuse) the files in this folder")
    args = p.parse_args()
    peer = peer_python(args.peer)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        rows = []
        for name in args.shapes.split(","):
            path = folder / f"{name}-random-q4_k_m.gguf"
            if not path.is_file():
                write_shaped(path, SHAPES[name])
            rows += shape_rows(path, name, args.loads, args.steps, peer)
    report(rows, args.json)


if __name__ == "__main__":
    main()
