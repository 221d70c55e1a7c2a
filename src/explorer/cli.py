"""The `explorer` command: the window by default, sub-commands for the terminal."""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__, cli_export, cli_fit, cli_model, cli_sample, cli_trace
from .core.errors import ExplorerError
from .interrupts import interrupted_status, sigterm_as_interrupt, silence_stdout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="explorer",
        description="Token Explorer: see how a language model produces text one token at a time. "
                    "Without a sub-command, opens the window.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--lesson", help="open the window on this lesson (a name or a .toml file)")
    parser.add_argument("--params", help="open the window on this parameter file (prompt 我爱)")
    parser.add_argument("--model", help="open the window on a model: teaching | smollm2 | a .gguf file "
                                        "(before a sub-command: that sub-command's --model)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices           # name -> sub-command parser, filled below
    cli_trace.add_parser(sub)
    cli_sample.add_parser(sub)
    cli_export.add_parser(sub)
    cli_fit.add_parser(sub)
    cli_model.add_parser(sub)
    return parser


LEADING_OPTIONS = ("--lesson", "--params", "--model")   # the window's options, which take a value


def leading_options_after_command(argv: list[str], commands: dict) -> list[str]:
    """`argv` with the window's options written before a sub-command moved after it.

    `explorer --model smollm2 trace` then traces SmolLM2: argparse would otherwise let the
    sub-command's own default replace the value silently. Given on both sides, the one
    after the sub-command wins. `commands`: sub-command name -> its parser.
    Raises ExplorerError naming an option the sub-command does not have."""
    i, leading = 0, []
    while i < len(argv):
        token = argv[i]
        option = token.split("=", 1)[0]
        if token in commands:
            for name in dict.fromkeys(t.split("=", 1)[0] for t in leading if t.startswith("--")):
                if name not in commands[token]._option_string_actions:   # argparse keeps no public list
                    raise ExplorerError(f"`explorer {token}` has no {name} (written before a sub-command, "
                                       f"an option goes to it)")
            return [token, *leading, *argv[i + 1:]]
        if option not in LEADING_OPTIONS:
            return argv                     # --help, --version, a typo: argparse answers
        width = 1 if "=" in token else 2
        leading += argv[i:i + width]
        i += width
    return argv


def main(argv=None) -> int:
    # Qt randomises its hash seed per process; fixed, two exports of the same input are identical
    os.environ.setdefault("QT_HASH_SEED", "0")
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        argv = leading_options_after_command(argv, parser.commands)
    except ExplorerError as exc:
        parser.error(str(exc))
    args = parser.parse_args(argv)
    if getattr(args, "model", None) == "":      # not "the default": an empty name is a mistake
        parser.error("--model '': expected teaching, a model name (explorer model list) or a .gguf file")
    if args.command is None:
        from .ui.app import run_app   # Qt is imported only when the window is wanted
        func, prog = run_app, "explorer"
    else:
        func, prog = args.func, f"explorer {args.command}"
    try:
        with sigterm_as_interrupt():
            status = func(args)
            sys.stdout.flush()                  # a closed pipe shows here, not at exit
            return status
    except KeyboardInterrupt as exc:            # Ctrl+C or SIGTERM: one line, 130 or 143
        return interrupted_status(exc, prog)
    except BrokenPipeError:                     # `explorer trace | head`: the reader left
        return silence_stdout()
    except (ExplorerError, OSError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
