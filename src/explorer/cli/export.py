"""`explorer export`: every frame of a lesson as slides (PNG, PDF deck, PowerPoint deck,
SVG) and its Run as handout data (CSV, JSON), without a display."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from pathlib import Path

from .combinations import check_settings
from .progress import ProgressLine, percent
from .flags import add_prompt_flags, add_run_flags, add_sampling_flags, check_run_flags, names_a_free_run, number, \
    session_from_args
from ..core.errors import ExplorerError, SettingError
from ..core.limits import MAX_HANDOUT_NUMBERS, MAX_SLIDES, MAX_TOKEN_ID, Whole
from ..export.files import check_out_folder
from ..export.handouts import intermediate_numbers
from ..export.pptx_deck import deck_slide_size
from ..interrupts import os_error_text
from ..export.spec import (CANCELLED, FORMATS, HANDOUT_TOP, SLIDE_FORMATS, STYLES, THEMES, ExportCancelled,
                          ExportSpec, deck_slides, frame_ranges, parse_formats, parse_frames, parse_size,
                          planned_slides, size_range)
from ..lessons import DEFAULT_LESSON_ID, lesson_names
from ..session import Session
from ..session.frames import most_frames_of_run
from ..session.panels import SLIDE_PANELS
from ..session.text_so_far import own_run_caption

CANCELLED_EXIT = 130          # as a shell reports a command stopped by Ctrl+C


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="write a lesson's frames as slides (PNG, PDF, PPTX, SVG) and its run as CSV/JSON",
        description="Render every frame of a lesson as 16:9 slides composed for a projector and write "
                    "them to a folder. Runs without a display. The files are written together at the "
                    "end: a failure or Ctrl+C leaves the output folder as it was.")
    p.add_argument("--out", type=str, help="output folder (created if missing, once the export has succeeded)")
    p.add_argument("--format", default="png,pdf", help=f"comma list of {','.join(FORMATS)} (default png,pdf)")
    p.add_argument("--style", choices=STYLES, default="slide",
                   help="slide: the frame's panels laid out large for a projector (default); "
                        "window: the whole window as on the desk")
    p.add_argument("--size", default="1920x1080", help=f"slide size in pixels (default 1920x1080): {size_range()}")
    p.add_argument("--scale", **number(Whole(1, 2)), default=1, help="2 for high-DPI projectors")
    p.add_argument("--theme", choices=THEMES, default="light")
    p.add_argument("--frames", help="frames to export, 1-based as the player counts, e.g. 1-4,7")
    p.add_argument("--panel", choices=SLIDE_PANELS,
                   help="one panel filling every slide (of the frames that show it)")
    p.add_argument("--max-slides", **number(Whole(1, MAX_TOKEN_ID)),
                   help=f"draw up to N slides without --frames (default {MAX_SLIDES}: a longer export is refused "
                        f"with its count)")
    p.add_argument("--no-caption", action="store_true", help="leave out the caption strip")
    p.add_argument("--intermediates", action="store_true",
                   help="with --format json: every intermediate value of every forward pass")
    p.add_argument("--list", action="store_true", help="list lessons, panels and the lesson's frames")
    add_prompt_flags(p)
    add_run_flags(p, lesson_help=f"lesson name or .toml file (see --list; default: {DEFAULT_LESSON_ID}, unless "
                                 f"--model, --params or a prompt names a free run)",
                  top_help="candidates per step in the CSV and JSON handouts",
                  json_help="write the run as JSON too (as --format with json)", top_default=HANDOUT_TOP)
    add_sampling_flags(p, default_mode=None)
    p.set_defaults(func=run)


def run(args) -> int:
    with _cancel_on_signals() as cancelled:
        try:
            return _run(args, cancelled)
        except KeyboardInterrupt:       # before the signal handlers were in place, or in Python code
            pass
    print(f"explorer export: {CANCELLED}", file=sys.stderr)
    return CANCELLED_EXIT


def _run(args, cancelled) -> int:
    check_run_flags(args)
    lesson = args.lesson if args.lesson is not None or names_a_free_run(args) else DEFAULT_LESSON_ID
    if args.lesson is None and lesson is not None and args.no_check:
        raise SettingError(f"--no-check with the default lesson {lesson!r}: a lesson's steps are always compared with "
                           f"a full recomputation; give --model, --params or --prompt for a free run")
    if lesson is not None and args.speculative is not None:
        raise SettingError(f"--speculative {args.speculative} with the lesson {lesson!r}: a lesson's slides show "
                           f"its own decoding; give --model or --prompt for a free run decoded speculatively "
                           f"(`token-explorer trace --lesson {lesson} --speculative K` prints that lesson decoded speculatively)")
    def before_run(configs, played) -> None:
        check_settings("export", args, configs, as_table=False)
        _check_slide_count(args, configs, played)

    session = session_from_args(args, lesson, speculative=True, cancel=cancelled, before_run=before_run)
    if cancelled():                       # Ctrl+C while the run was computed
        print(f"explorer export: {CANCELLED}", file=sys.stderr)
        return CANCELLED_EXIT
    for run, _ in session.scenario_results():   # a what-if the run never reaches would vanish without a word
        for step, token in run.unreached_overrides.items():
            raise SettingError(f"--force {step}:{token}: {run.unreached_text(step)}")
    if session.content is not None:       # a lesson
        deck_id, deck_title = session.content.id, session.content.title_in(args.lang)
        checks = tuple((c.when, c.question[args.lang], c.answer[args.lang]) for c in session.content.checks)
    else:                                 # a free run of a model
        deck_id, checks = session.model.name, ()
        deck_title = own_run_caption(session.run, session.model.name, session.model.vocab, args.lang)
    if args.list:
        print(_listing(deck_id, deck_title, session, args.lang))
        return 0
    spec = _spec(args, session)
    _check_writable(spec.out_dir)
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # headless: no display needed
    from PySide6.QtWidgets import QApplication

    from ..ui.fonts import apply_app_font
    from ..ui.slides.job import export_session
    from ..ui.window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_app_font(app)
    line = ProgressLine(lambda what, done, total: f"  {done} of {total} ({percent(done, total)}): {what}")

    def progress(done: int, total: int, what: str) -> bool:
        line.show(what, done, total)
        return not cancelled()

    try:
        paths = export_session(session, spec, deck_id, deck_title, progress=progress,
                               checks=checks, window_class=MainWindow)
    except ExportCancelled:
        line.clear()
        print(f"explorer export: {CANCELLED}", file=sys.stderr)
        return CANCELLED_EXIT
    except OSError as exc:
        raise ExplorerError(f"{spec.out_dir}: writing failed ({os_error_text(exc)}); nothing was written") from None
    finally:
        line.clear()
    for path in paths:
        print(path)
    return 0


def _spec(args, session: Session) -> ExportSpec:
    """The request checked against the lesson before anything is drawn (exit 2 with a message)."""
    if args.out is None:
        raise ExplorerError("--out is required: the folder to write into")
    if not args.out.strip():
        raise ExplorerError("--out '': expected a folder name (an empty one would write into the current folder)")
    formats = parse_formats(args.format + (",json" if args.json else ""))
    count = len(session.frames)
    frames = parse_frames(args.frames, count) if args.frames is not None else None
    if args.panel is not None:
        if args.style == "window":
            raise ExplorerError(f"--panel {args.panel} with --style window: a panel slide is composed; "
                                f"leave out --style window, or --panel for the whole window")
        if "pptx" in formats and args.frames is not None:
            raise ExplorerError(f"--format pptx with --panel {args.panel} and --frames: a deck holds a lesson's "
                                f"slides; write the panel's frames as png or pdf, or the whole deck without --panel")
        frames = _panel_frames(args, session, frames)
    slides = len(deck_slides(session, range(count) if frames is None else frames))
    limit = _slide_limit(args)
    if args.frames is None and slides > limit and set(formats) & set(SLIDE_FORMATS):
        raise _too_many_slides(slides, count, limit)
    if args.intermediates:
        _check_handout_size(session)
    width, height = parse_size(args.size, args.scale)
    if "pptx" in formats:
        try:
            deck_slide_size(width, height)
        except ExplorerError as exc:
            raise ExplorerError(f"--size {args.size} with --format pptx: {exc}") from None
    return ExportSpec(out_dir=Path(args.out), formats=formats, width=width, height=height, scale=args.scale,
                      lang=args.lang, theme=args.theme, style=args.style, frames=frames,
                      panel=args.panel, caption=not args.no_caption, intermediates=args.intermediates,
                      top=args.top)


def _check_handout_size(session: Session) -> None:
    """--intermediates: refused before the JSON is built when it would hold more numbers than a
    handout may (a real model's step is some 150,000 numbers, 3 MB of JSON)."""
    runs = [run for run, _ in session.scenario_results()]
    numbers = sum(intermediate_numbers(run) for run in runs)
    if numbers > MAX_HANDOUT_NUMBERS:
        steps = sum(len(run.steps) for run in runs)
        raise ExplorerError(f"--intermediates: the JSON handout would hold {numbers:,} numbers (every intermediate "
                            f"value of {steps:,} steps, about {numbers * 20 // 10**6:,} MB), more than the "
                            f"{MAX_HANDOUT_NUMBERS:,} one holds; lower --max-new-tokens (about "
                            f"{max(1, MAX_HANDOUT_NUMBERS * steps // numbers):,} steps fit), or leave out --intermediates")


def _slide_limit(args) -> int:
    return MAX_SLIDES if args.max_slides is None else args.max_slides


def _too_many_slides(slides: int, frames: int, limit: int) -> ExplorerError:
    return ExplorerError(f"this export would draw {slides:,} slides ({frames:,} frames), more than the {limit:,} "
                         f"an export draws unless asked; choose frames with --frames (e.g. --frames 1-{min(frames, 20)}),"
                         f" or allow them with --max-slides {slides}")


def _check_slide_count(args, configs, lesson) -> None:
    """Before any model runs, an export of every frame that would draw more slides than it
    may is refused: the count is known up front. A lesson's frames are its file's (with
    --panel, those that show the panel are known once it ran: checked then, in `_spec`); a
    free run of up to N new tokens makes at most `most_frames_of_run(N)`."""
    if args.frames is not None or args.list or not set(parse_formats(args.format)) & set(SLIDE_FORMATS):
        return
    limit = _slide_limit(args)
    if lesson is not None:
        slides = planned_slides(lesson.plans)
        if args.panel is None and slides > limit:
            raise _too_many_slides(slides, len(lesson.plans), limit)
        return
    tokens = max(config.max_new_tokens for _, config in configs)
    most = most_frames_of_run(tokens)
    if most <= limit:
        return
    said = f"--max-new-tokens {tokens}" if args.max_new_tokens is not None else f"a run of up to {tokens} new tokens"
    fits = (limit - most_frames_of_run(0)) // 2
    lower = f"lower --max-new-tokens (up to {fits} fit{'s' if fits == 1 else ''}), " if fits >= 1 else ""
    allowed = f" with --max-slides {limit}" if args.max_slides is not None else ""
    raise ExplorerError(f"{said}{allowed}: this export could draw up to {most:,} slides (the input, a forward and a "
                        f"pick for each new token, the stop), more than the {limit:,} an export draws unless asked, "
                        f"and nothing was run; {lower}choose frames with --frames (e.g. --frames 1-20), or allow "
                        f"them with --max-slides {most}")


def _panel_frames(args, session: Session, chosen: tuple[int, ...] | None) -> tuple[int, ...]:
    """The frames a --panel export draws: those that show the panel (said on stderr when
    others are left out); chosen --frames must all show it."""
    panel = args.panel
    showing = [i for i in range(len(session.frames)) if not _missing_panel(panel, session, i)]
    if not showing:
        raise ExplorerError(f"--panel {panel}: none of the {len(session.frames)} frames shows it "
                            f"({_missing_panel(panel, session, 0)}); the panels its frames show: "
                            f"{', '.join(_lesson_panels(session))}")
    if chosen is None:
        if len(showing) < len(session.frames):
            print(f"--panel {panel}: frames {frame_ranges(showing)} show it; the other frames are left out "
                  f"(of {len(session.frames)})", file=sys.stderr)
        return tuple(showing)
    lacking = [i for i in chosen if i not in showing]
    if lacking:
        raise ExplorerError(f"--panel {panel} with --frames {args.frames}: frames {frame_ranges(lacking)} do not "
                            f"show it ({_missing_panel(panel, session, lacking[0])}); the frames that do: "
                            f"{frame_ranges(showing)}")
    return chosen


def _missing_panel(panel: str, session: Session, index: int) -> str:
    """Why `panel` has nothing to show on frame `index` ("" when it has)."""
    run, _ = session.run_at(index)
    if panel in ("attention", "kv") and not run.steps[0].trace.layers:
        return "its model has no layers (no attention, no K/V cache)"
    if panel == "beam" and next(beam for r, beam in session.scenario_results() if r is run) is None:
        return "its run is not a beam search"
    return ""


def _lesson_panels(session: Session) -> list[str]:
    """The panels at least one frame shows."""
    return [p for p in SLIDE_PANELS if any(not _missing_panel(p, session, i) for i in range(len(session.frames)))]


@contextmanager
def _cancel_on_signals():
    """Ctrl+C (SIGINT) and SIGTERM ask the export to stop at its next safe point (between
    two files) instead of killing it mid-write; yields a function telling whether one came."""
    asked = []
    previous = {sig: signal.signal(sig, lambda *_: asked.append(True)) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield lambda: bool(asked)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _listing(deck_id: str, title: str, session, lang: str) -> str:
    from ..session.narration import frame_title
    lines = ["lessons:"] + [f"  {name}" for name in lesson_names()]
    lines += ["panels:"] + [f"  {p}" for p in _lesson_panels(session)]
    lines += [f"frames of {deck_id!r} ({title}):"]
    for i, frame in enumerate(session.frames):
        run, model = session.run_at(i)
        lines.append(f"  {i + 1:2d}  {frame_title(frame, run, model.vocab, lang)}")
    return "\n".join(lines)


def _check_writable(folder: Path) -> None:
    """Refuse early (exit 2) a folder that cannot be written or made: what stands in the way
    is named (a file, a device, a missing permission). A missing folder is created only when
    the export's files are written (`StagedFiles.commit`): a failed export leaves none."""
    check_out_folder(folder)
