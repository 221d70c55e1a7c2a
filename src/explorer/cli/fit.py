"""`explorer fit`: rebuild the teaching model's parameter file from its seed and targets."""

from __future__ import annotations

from pathlib import Path

from ..core.models.teaching import FitTargets, default_params_path, write_teaching_params


def add_parser(subparsers) -> None:
    t = FitTargets()
    p = subparsers.add_parser(
        "fit", help="rebuild the teaching model's parameter file",
        description=f"Draw the teaching model's body from seed {t.seed}, fit the output head so "
                    "the prefixes [1,2], [1,2,3], [1,2,3,5] give the target next-token "
                    "probabilities, check the result is teachable, and write the file. The same "
                    "seed and targets always give the same bytes.")
    p.add_argument("--out", type=Path, help="where to write (default: the shipped params/teaching.json)")
    p.set_defaults(func=run)


def run(args) -> int:
    out = args.out or default_params_path()
    write_teaching_params(out)
    print(f"wrote {out}")
    return 0
