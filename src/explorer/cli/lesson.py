"""`explorer lesson`: lesson files from the command line. `lesson new` writes the lesson of a
run given by trace's flags: the same file Save as lesson writes in the window; `lesson check`
prints every problem of lesson files as FILE:LINE: message, without opening a window."""

from __future__ import annotations

from pathlib import Path

from .combinations import check_settings
from .flags import DRAFT, FORCE, add_prompt_flags, add_sampling_flags, check_run_flags, number, session_from_args
from ..core.errors import ExplorerError
from ..lessons.schema import lesson_problems
from ..lessons.writer import SUFFIX, lesson_document, save_lesson


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("lesson", help="lesson files: write a new one from a run, check them",
                              description="Lesson files from the command line.")
    sub = p.add_subparsers(dest="lesson_command", metavar="LESSON_COMMAND", required=True)
    new = sub.add_parser(
        "new", help="write the lesson of a run (as the window's Save as lesson does)",
        description="Write a lesson file that reproduces the run the flags describe (the flags of "
                    "`token-explorer trace`): its model, prompt, settings, what-if choices, and one frame per "
                    "moment of the run with the app's own titles and explanations to edit. "
                    "`token-explorer trace --lesson FILE` then shows the same run.")
    new.add_argument("--out", required=True, metavar=f"FILE{SUFFIX}", help="the lesson file to write")
    new.add_argument("--replace", action="store_true", help="replace FILE if it exists")
    add_prompt_flags(new)
    new.add_argument("--lesson", help="start from this lesson (a name or a .toml file) instead of a free run")
    new.add_argument("--params", help="parameter file (default: the teaching model)")
    new.add_argument("--no-check", action="store_true",
                     help="skip the comparison of every step with a full recomputation (faster on big models)")
    new.add_argument("--force", **FORCE,
                     help="what-if: at step STEP (0 = prefill) select token ID instead; repeatable")
    new.add_argument("--speculative", **number(DRAFT), metavar="K",
                     help="decode speculatively: draft up to K tokens by prompt lookup, verify them in one pass")
    add_sampling_flags(new, default_mode=None)
    new.set_defaults(func=run, top=1, ngram=None)
    check = sub.add_parser(
        "check", help="print every problem of lesson files (exit 2 if there is any)",
        description="Read each lesson file as the window would and print every problem as FILE:LINE: "
                    "message (a model not on this computer too, with how to get it). Exit 0 when every "
                    "file is valid, 2 otherwise. Lessons on a real model that is installed are run to "
                    "check their texts, which loads the model.")
    check.add_argument("files", nargs="+", metavar="FILE", help="lesson files (.toml)")
    check.set_defaults(func=check_files)


def check_files(args) -> int:
    """Every problem of every file, one per line; 2 if there were any."""
    problems = [problem for name in args.files for problem in lesson_problems(Path(name))]
    for problem in problems:
        print(problem)
    if not problems:
        print(f"{len(args.files)} lesson file{'s' if len(args.files) > 1 else ''}: no problems")
    return 2 if problems else 0


def run(args) -> int:
    check_run_flags(args)
    out = Path(args.out)
    if not out.name.endswith(".toml"):
        raise ExplorerError(f"--out {args.out}: expected a lesson file name ending in .toml (NAME{SUFFIX} "
                            "opens with a double-click)")
    session = session_from_args(args, args.lesson, speculative=True,
                                before_run=lambda configs, _: check_settings("lesson new", args, configs, as_table=False))
    for run_, _ in session.scenario_results():    # a what-if the run never reaches would vanish without a word
        for step, token in run_.unreached_overrides.items():
            raise ExplorerError(f"--force {step}:{token}: {run_.unreached_text(step)}")
    text = lesson_document(session)

    def may_replace(path: Path, _changed: bool) -> bool:
        if not args.replace:
            raise ExplorerError(f"{path}: exists; give --replace to replace it")
        return True

    save_lesson(out, text, None, may_replace)
    print(out)
    return 0
