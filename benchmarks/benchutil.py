"""Shared timing and reporting for the benchmark scripts (medians, not means: the machine is shared)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

# libgomp's wait settings as the user started the benchmark, before any explorer module
# ran: the engine chooses them for its own process on import (core.block_kernels), and a
# child (llama.cpp, also on libgomp, or a fresh explorer) must not inherit that choice.
OPENMP_WAIT = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
USER_OPENMP_WAIT = {key: os.environ[key] for key in OPENMP_WAIT if key in os.environ}


def measure(fn, repeat: int, warmup: int = 3) -> list[float]:
    """Seconds per call of fn(), `repeat` times after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def summary(name: str, times: list[float], **extra) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"case": name, "median_ms": statistics.median(times) * 1000, "p95_ms": p95 * 1000,
            "n": len(times), **extra}


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    return p


def report(rows: list[dict], as_json: bool) -> None:
    """Print rows as a table (or JSON); every row has case, median_ms, p95_ms, n."""
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in ("case", "median_ms", "p95_ms", "n")))
    headers = ["case", "median ms", "p95 ms", "n"] + extra
    table = [[r["case"], f"{r['median_ms']:.3f}", f"{r['p95_ms']:.3f}", str(r["n"])] +
             [_fmt(r.get(k, "")) for k in extra] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *table)]
    for line in [headers] + table:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))


def _fmt(v) -> str:
    return f"{v:.2f}" if isinstance(v, float) else str(v)


def child_env() -> dict:
    """The environment for timing a fresh `explorer` process: Python may write bytecode,
    as an installed app has it (pip compiles at install) and the libraries do. A
    PYTHONDONTWRITEBYTECODE set for development would make every start compile anew.
    libgomp's wait settings are the user's, not those this process's engine chose."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE" and k not in OPENMP_WAIT}
    return env | USER_OPENMP_WAIT
