"""The student pack: every shipped lesson exported as its web page (`export --format html`),
timed from process start to exit ("median ms"); the page's size; in headless Chromium
(Debian's `chromium` and `chromium-driver`, driven by Selenium) its first paint (the Paint
Timing API) and a temperature slider's redraw (performance.now() around the input event,
a forced layout included; median and 95th percentile of the redraws over the slider's range); and,
for a big vocabulary, how far the page's grouped rest moves a shown probability away from
the true one (core's distribution on the page's vector against the raw logits, temperature
0.5 to 2). Targets: a 10-frame teaching lesson <= 3 MB, the real-model lesson <= 8 MB, first
paint <= 1 s, a redraw <= 16 ms.

    python benchmarks/bench_student_pack.py [--json] [--runs 1] [--lesson NAME ...]
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import child_env, parser, report, summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from headless_chromium import chromium, missing_browser  # noqa: E402

TEMPERATURES = (0.5, 0.7, 1.5, 2.0)
REDRAW_VALUES = [f"{t / 100:g}" for t in range(5, 300, 5)]     # 0.05 .. 2.95 along the slider


def export(lesson: str, out: str, runs: int) -> tuple[list[float], Path]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "explorer", "export", "--lesson", lesson, "--format", "html",
                        "--out", out], check=True, capture_output=True, env=child_env())
        times.append(time.perf_counter() - start)
    return times, Path(out) / f"{lesson}.html"


def in_browser(driver, page: Path) -> tuple[float, list[float]]:
    """(first contentful paint ms, redraw ms of each slider value) of the page's last frame with a
    distribution, the redraws timed once the page has painted."""
    from selenium.webdriver.support.wait import WebDriverWait

    painted = "return performance.getEntriesByName('first-contentful-paint').map(e => e.startTime)[0] || null"
    driver.get("about:blank")
    driver.get(page.as_uri())
    paint = WebDriverWait(driver, 30).until(lambda d: d.execute_script(painted))
    frames = driver.execute_script("return JSON.parse(document.getElementById('lesson-data').textContent).frames"
                                   ".map(f => f.dist)")
    with_dist = [i for i, d in enumerate(frames) if d is not None]
    if not with_dist:
        return paint, []
    driver.execute_script("location.hash = arguments[0]", f"#frame={with_dist[-1] + 1}")
    WebDriverWait(driver, 30).until(lambda d: d.execute_script(
        "return document.getElementById('counter').textContent.startsWith(arguments[0])", f"{with_dist[-1] + 1} /"))
    redraws = driver.execute_script("""
        const s = document.getElementById('set-temperature'), out = [];
        for (const v of arguments[0]) {
            const t0 = performance.now();
            s.value = v; s.dispatchEvent(new Event('input'));
            document.body.offsetHeight;                        // the layout the redraw causes
            out.push(performance.now() - t0);
        }
        return out;""", REDRAW_VALUES)
    return paint, redraws


def rest_error(lesson: str) -> float | None:
    """Largest |page p - true p| over the carried ids of every distribution frame (None: small vocabularies)."""
    from explorer.core.decode.sampling import SamplingConfig, distribution
    from explorer.export.page_logits import SMALL_VOCAB, page_vector, split_logits
    from explorer.lessons import load_lesson

    session = load_lesson(lesson).build_session()
    worst = None
    for index, frame in enumerate(session.frames):
        if not frame.shows_distribution:
            continue
        run, _ = session.run_at(index)
        raw = run.steps[frame.step].distribution.raw_logits
        if raw.size <= SMALL_VOCAB:
            continue
        seen = run.prompt_ids + run.output_ids[:frame.step]
        page = split_logits(raw, seen)
        vector = page_vector(page)
        for t in TEMPERATURES:
            config = SamplingConfig(mode="sample", temperature=t)
            gap = np.abs(distribution(vector, config, seen_ids=seen).probs[page.ids]
                         - distribution(raw, config, seen_ids=seen).probs[page.ids]).max()
            worst = float(gap) if worst is None else max(worst, float(gap))
    return worst


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1, help="exports per lesson")
    p.add_argument("--lesson", action="append", help="only these lessons (repeatable)")
    args = p.parse_args()
    why = missing_browser()
    if why:
        sys.exit(f"bench_student_pack: {why}")
    from explorer.lessons import lesson_names

    rows = []
    with tempfile.TemporaryDirectory() as out, chromium() as driver:
        for lesson in args.lesson or lesson_names():
            times, page = export(lesson, out, args.runs)
            paint, redraws = in_browser(driver, page)
            error = rest_error(lesson)
            rows.append(summary(lesson, times, frames=len(_frames(page)), size_mb=page.stat().st_size / 1e6,
                                first_paint_ms=paint,
                                redraw_ms=statistics.median(redraws) if redraws else "-",
                                redraw_p95_ms=sorted(redraws)[int(0.95 * (len(redraws) - 1))] if redraws else "-",
                                rest_max_error="-" if error is None else f"{error:.1e}"))
    report(rows, args.json)


def _frames(page: Path) -> list:
    text = page.read_text(encoding="utf-8")
    data = re.search(r'id="lesson-data">(.*?)</script>', text, re.S).group(1).replace("<\\/", "</")
    return json.loads(data)["frames"]


if __name__ == "__main__":
    main()
