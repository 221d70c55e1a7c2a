"""The `explorer` command: the window by default, sub-commands for the terminal."""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, cli_export, cli_fit, cli_model, cli_sample, cli_trace
from .core.errors import ExplorerError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="explorer",
        description="Token Explorer: see how a language model produces text one token at a time. "
                    "Without a sub-command, opens the window.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--lesson", help="open the window on this lesson (a name or a .toml file)")
    parser.add_argument("--params", help="open the window on this parameter file (prompt 我爱)")
    parser.add_argument("--model", help="open the window on a model: teaching | smollm2 | a .gguf file")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    cli_trace.add_parser(sub)
    cli_sample.add_parser(sub)
    cli_export.add_parser(sub)
    cli_fit.add_parser(sub)
    cli_model.add_parser(sub)
    return parser


def main(argv=None) -> int:
    # Qt randomises its hash seed per process; fixed, two exports of the same input are identical
    os.environ.setdefault("QT_HASH_SEED", "0")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from .ui.app import run_app   # Qt is imported only when the window is wanted
        return run_app(args)
    try:
        return args.func(args)
    except (ExplorerError, OSError) as exc:
        print(f"explorer {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
