"""`explorer export`: every frame of a lesson as slide pictures (PNG, PDF deck, SVG) and its
Run as handout data (CSV, JSON), without a display."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .cli_prompt import add_prompt_flags, model_from_args, prompt_ids
from .cli_sample import add_sampling_flags, sampling_changes
from .core.errors import ExplorerError
from .export.spec import FORMATS, PANELS, THEMES, ExportSpec, parse_formats, parse_frames, parse_size
from .lessons import DEFAULT_LESSON_ID, lesson_names, load_lesson
from .session import Session


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="write a lesson's frames as slides (PNG, PDF, SVG) and its run as CSV/JSON",
        description="Render every frame of a lesson as 16:9 slides and write them to a folder. Runs "
                    "without a display. Files are written to a hidden folder first and moved into "
                    "place at the end: a failure leaves the output folder as it was.")
    p.add_argument("--lesson", default=DEFAULT_LESSON_ID,
                   help=f"lesson name or .toml file (see --list; default: {DEFAULT_LESSON_ID})")
    p.add_argument("--out", type=Path, help="output folder (created if missing)")
    p.add_argument("--format", default="png,pdf", help=f"comma list of {','.join(FORMATS)} (default png,pdf)")
    p.add_argument("--size", default="1920x1080", help="slide size in pixels (default 1920x1080)")
    p.add_argument("--scale", type=int, choices=(1, 2), default=1, help="2 for high-DPI projectors")
    p.add_argument("--lang", choices=("en", "zh"), default="en")
    p.add_argument("--theme", choices=THEMES, default="light")
    p.add_argument("--frames", help="frames to export, 1-based as the player counts, e.g. 1-4,7")
    p.add_argument("--panel", choices=PANELS, help="export one panel instead of the whole window")
    p.add_argument("--no-caption", action="store_true", help="leave out the caption strip")
    p.add_argument("--intermediates", action="store_true",
                   help="with --format json: every intermediate value of every forward pass")
    p.add_argument("--list", action="store_true", help="list lessons, panels and the lesson's frames")
    add_prompt_flags(p)
    add_sampling_flags(p, default_mode=None)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.model is not None:            # a free run of a model instead of a lesson
        model = model_from_args(args)
        session = Session(model, prompt_ids(args, model), check_recompute=False)
        deck_id, deck_title = model.name, model.name
    else:
        lesson = load_lesson(args.lesson)
        session = lesson.build_session()
        deck_id, deck_title = lesson.id, lesson.title_in(args.lang)
    changes = sampling_changes(args)
    if changes:
        session.set_sampling(**changes)
    if args.list:
        print(_listing(deck_id, deck_title, session, args.lang))
        return 0
    if args.out is None:
        raise ExplorerError("--out is required: the folder to write into")
    width, height = parse_size(args.size)
    spec = ExportSpec(out_dir=args.out, formats=parse_formats(args.format), width=width, height=height,
                      scale=args.scale, lang=args.lang, theme=args.theme,
                      frames=parse_frames(args.frames, len(session.frames)) if args.frames else None,
                      panel=args.panel, caption=not args.no_caption, intermediates=args.intermediates)
    _check_writable(spec.out_dir)
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")   # headless: no display needed
    from PySide6.QtWidgets import QApplication

    from .export.job import export_session
    from .ui.fonts import apply_app_font

    app = QApplication.instance() or QApplication(sys.argv[:1])
    apply_app_font(app)
    try:
        paths = export_session(session, spec, deck_id, deck_title)
    except OSError as exc:
        raise ExplorerError(f"{spec.out_dir}: writing failed ({exc.strerror or exc}); nothing was written") from None
    for path in paths:
        print(path)
    return 0


def _listing(deck_id: str, title: str, session, lang: str) -> str:
    from .session.narration import frame_title
    lines = ["lessons:"] + [f"  {name}" for name in lesson_names()]
    lines += ["panels:"] + [f"  {p}" for p in PANELS]
    lines += [f"frames of {deck_id!r} ({title}):"]
    for i, frame in enumerate(session.frames):
        run, model = session.run_at(i)
        lines.append(f"  {i + 1:2d}  {frame_title(frame, run, model.vocab, lang)}")
    return "\n".join(lines)


def _check_writable(folder: Path) -> None:
    """Create the folder if missing; refuse early (exit 2) when it cannot be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExplorerError(f"--out {folder}: cannot create the folder ({exc.strerror})") from None
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise ExplorerError(f"--out {folder}: the folder is not writable")
