"""Export timings: the default lesson (10 frames, teaching model) as PNG + PDF + PPTX at
1920x1080, process start to exit; one composed slide against a plain QWidget.grab() of the
same panels at the same sizes (with and without the layout that brings them to those sizes);
the real-model lesson (10 frames) as PPTX, process start to exit.

    python benchmarks/bench_export.py [--json] [--runs 5] [--no-real] [--cpu]
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


def slide_against_grab(runs: int, clock=time.perf_counter):
    """Per frame: seconds per composed slide image; per grab() of the same panels; per
    layout of those panels for the frame; per warm grab().

    Both sides start from panels the frame change has just refreshed: the slide lays its
    copies out and paints them, title and caption; grab() paints a second set of copies
    laid out the same way at the same sizes. That layout (the panels resized to the
    frame's places, their type set and their content refitted, as any picture of them at
    those sizes needs) is timed on its own. A grab() of copies the slide has just painted
    would find pyqtgraph's axes and pictures already drawn and time only a warm repaint
    (that figure is reported too). The order alternates run by run, so the glyph caches
    they share favour neither."""
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
    pictures, twins = slide_pictures(session, spec), slide_pictures(session, spec)
    slide, grab, layout, warm = [], [], [], []

    def grabbed(composer, laid_out: list | None = None) -> float:
        start = clock()
        panels = [panel for panel, _, _ in composer.lay_out()]
        if laid_out is not None:
            laid_out.append(clock() - start)
        for panel in panels:
            panel.setUpdatesEnabled(True)       # slide copies take no updates; grab() needs them
        start = clock()
        for panel in panels:
            panel.grab()
        took = clock() - start
        for panel in panels:
            panel.setUpdatesEnabled(False)
        return took

    for run in range(runs):
        for index in range(len(session.frames)):
            session.go(index)
            text = slide_text(session, index, spec.lang, "bench")
            if run % 2:
                grab.append(grabbed(twins, layout))
            start = clock()
            slide_image(pictures, text, spec)
            slide.append(clock() - start)
            if not run % 2:
                grab.append(grabbed(twins, layout))
            warm.append(grabbed(pictures))
    pictures.close()
    twins.close()
    return slide, grab, layout, warm


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-real", action="store_true", help="leave out the real-model lesson")
    p.add_argument("--cpu", action="store_true",
                   help="time slide and grab() in this process's CPU time (less disturbed by a busy machine)")
    args = p.parse_args()
    total = whole_command(args.runs, "--format", "png,pdf,pptx")
    slide, grab, layout, warm = slide_against_grab(args.runs, time.process_time if args.cpu else time.perf_counter)
    laid_out_and_grabbed = [a + b for a, b in zip(layout, grab)]
    rows = [summary("explorer export, 10 frames, png+pdf+pptx, process start to exit", total),
            summary("per frame: grab() of the slide's panels, laid out for the frame", grab),
            summary("per frame: laying those panels out for the frame (resize, type, refit)", layout),
            summary("per frame: layout + grab() of those panels", laid_out_and_grabbed),
            summary("per frame: grab() again of panels just painted (warm, for reference)", warm),
            summary("per frame: composed slide (layout + paint)", slide,
                    ratio_to_grab=float(np.median(slide) / np.median(grab)),
                    ratio_to_layout_and_grab=float(np.median(slide) / np.median(laid_out_and_grabbed)))]
    if not args.no_real:
        rows.append(summary("explorer export --lesson real-model, 10 frames, pptx, process start to exit",
                            whole_command(max(1, args.runs // 2), "--lesson", "real-model", "--format", "pptx")))
    report(rows, args.json)


if __name__ == "__main__":
    main()
