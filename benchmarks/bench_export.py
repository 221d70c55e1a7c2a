"""Export timings: the default lesson to PNG + PDF at 1920x1080, process start to exit, and
per frame against the floor of grabbing the same window and saving it as PNG.

    python benchmarks/bench_export.py [--json] [--runs 5]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchutil import child_env, parser, report, summary

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def whole_command(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "explorer", "export", "--out", out, "--format", "png,pdf"],
                           check=True, capture_output=True, env=child_env())
            times.append(time.perf_counter() - start)
    return times


def in_process(runs: int):
    """(seconds per frame of the export job, seconds per frame of grab().save), same window."""
    from PySide6.QtWidgets import QApplication
    from explorer.export.job import export_session
    from explorer.export.spec import ExportSpec
    from explorer.lessons import default_lesson
    from explorer.ui.settings import Settings
    from explorer.ui.window import MainWindow

    from explorer.ui.fonts import apply_app_font
    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_app_font(app)
    lesson = default_lesson()
    job, floor = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            session = lesson.build_session()
            n = len(session.frames)
            start = time.perf_counter()
            export_session(session, ExportSpec(Path(tmp) / "job", ("png", "pdf")), lesson.id, "bench")
            job.append((time.perf_counter() - start) / n)
        window = MainWindow(lesson.build_session(), Settings(str(Path(tmp) / "s.ini")))
        window.resize(1920, 1080)
        window.show()
        for _ in range(runs):
            start = time.perf_counter()
            for i in range(n):
                window.session.go(i)
                app.processEvents()
                window.grab().save(str(Path(tmp) / f"floor{i}.png"))
            floor.append((time.perf_counter() - start) / n)
        window.close()
    return job, floor, n


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    total = whole_command(args.runs)
    job, floor, n = in_process(args.runs)
    rows = [summary(f"explorer export, {n} frames, png+pdf, process start to exit", total),
            summary("per frame: grab().save floor", floor),
            summary("per frame: export job (png + pdf page)", job,
                    ratio_to_floor=float(np.median(job) / np.median(floor)))]
    report(rows, args.json)


if __name__ == "__main__":
    main()
