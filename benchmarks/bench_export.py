"""Export timings: the default lesson (10 frames, teaching model) as PNG + PDF + PPTX at
1920x1080, process start to exit; one composed slide against a plain QWidget.grab() of the
same panels at the same sizes; the real-model lesson (10 frames) as PPTX, process start to exit.

    python benchmarks/bench_export.py [--json] [--runs 5] [--no-real]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchutil import child_env, parser, report, summary

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def whole_command(runs: int, *argv: str) -> list[float]:
    times = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "explorer", "export", "--out", out, *argv],
                           check=True, capture_output=True, env=child_env())
            times.append(time.perf_counter() - start)
    return times


def slide_against_grab(runs: int):
    """(seconds per composed slide image, seconds per grab() of the same panels), per frame."""
    from PySide6.QtWidgets import QApplication

    from explorer.export.spec import ExportSpec
    from explorer.lessons import default_lesson
    from explorer.ui.fonts import apply_app_font
    from explorer.ui.slides.job import slide_image, slide_pictures, slide_text

    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_app_font(app)
    lesson = default_lesson()
    session = lesson.build_session()
    spec = ExportSpec(None)
    pictures = slide_pictures(session, spec)
    slide, grab = [], []
    for _ in range(runs):
        for index in range(len(session.frames)):
            session.go(index)
            text = slide_text(session, index, spec.lang, "bench")
            start = time.perf_counter()
            slide_image(pictures, text, spec)
            slide.append(time.perf_counter() - start)
            panels = [panel for panel, _, _ in pictures.lay_out()]      # the same panels at the same sizes
            for panel in panels:
                panel.setUpdatesEnabled(True)       # slide copies take no updates; grab() needs them
            start = time.perf_counter()
            for panel in panels:
                panel.grab()
            grab.append(time.perf_counter() - start)
            for panel in panels:
                panel.setUpdatesEnabled(False)
    pictures.close()
    return slide, grab


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-real", action="store_true", help="leave out the real-model lesson")
    args = p.parse_args()
    total = whole_command(args.runs, "--format", "png,pdf,pptx")
    slide, grab = slide_against_grab(args.runs)
    rows = [summary("explorer export, 10 frames, png+pdf+pptx, process start to exit", total),
            summary("per frame: grab() of the slide's panels", grab),
            summary("per frame: composed slide (layout + paint)", slide,
                    ratio_to_grab=float(np.median(slide) / np.median(grab)))]
    if not args.no_real:
        rows.append(summary("explorer export --lesson real-model, 10 frames, pptx, process start to exit",
                            whole_command(max(1, args.runs // 2), "--lesson", "real-model", "--format", "pptx")))
    report(rows, args.json)


if __name__ == "__main__":
    main()
