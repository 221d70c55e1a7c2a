"""The `token-explorer` command (alias `explorer`, or `python -m explorer`): the window by
default, sub-commands for the terminal, the per-user launcher."""

from __future__ import annotations

import argparse
import os
import sys

from .. import __version__
from . import export, fit, lesson, model, sample, trace
from .combinations import check_flags, command_parser
from .flags import MODEL_HELP, FlagError
from ..core.errors import ExplorerError
from ..interrupts import guard_standard_streams, interrupted_status, os_error_text, sigterm_as_interrupt, silence_stdout


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="token-explorer",
        description="Token Explorer: see how a language model produces text one token at a time. "
                    "Without a sub-command, opens the window (on LESSON.toml if given; a window "
                    "already running opens it instead).",
        usage="%(prog)s [options] [LESSON.toml] | %(prog)s COMMAND ...")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    launcher = parser.add_mutually_exclusive_group()
    launcher.add_argument("--install-launcher", action="store_true",
                          help="add Token Explorer to this user's applications menu (with its icon, "
                               "and lesson files opening in it), starting this installation")
    launcher.add_argument("--uninstall-launcher", action="store_true",
                          help="remove what --install-launcher added")
    parser.add_argument("--lesson", help="open the window on this lesson (a name or a .toml file)")
    parser.add_argument("--params", help="open the window on this parameter file (prompt 我爱)")
    parser.add_argument("--model", help="open the window on a model: " + MODEL_HELP +
                                        " (before a sub-command: that sub-command's --model)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices           # name -> sub-command parser, filled below
    for command in (trace, sample, export, fit, model, lesson):
        command.add_parser(sub)
    return parser


LEADING_OPTIONS = ("--lesson", "--params", "--model")   # the window's options, which take a value


def lesson_file_as_option(argv: list[str], commands: dict) -> list[str]:
    """`token-explorer path/to/lesson.toml` (a file opened from the file manager) as
    `--lesson path/to/lesson.toml`: the first word that is neither an option, an option's
    value nor a sub-command, if it names a .toml file or an existing file."""
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in commands or token == "--":
            return argv
        if token.startswith("-"):
            i += 2 if token in LEADING_OPTIONS else 1
            continue
        if token.lower().endswith(".toml") or os.path.isfile(token):
            return [*argv[:i], "--lesson", token, *argv[i + 1:]]
        return argv
    return argv


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
        argv = leading_options_after_command(lesson_file_as_option(argv, parser.commands), parser.commands)
    except ExplorerError as exc:
        parser.error(str(exc))
    command = next((token for token in argv if token in parser.commands), None)
    guard_standard_streams(command=command is not None)
    try:
        args = parser.parse_args(argv)
    except FlagError as exc:                    # a number out of its range: one line, as every other error
        print(f"token-explorer{' ' + command if command else ''}: error: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "model", None) == "":      # not "the default": an empty name is a mistake
        parser.error("--model '': expected teaching, a model name (token-explorer model list) or a .gguf file")
    if args.install_launcher or args.uninstall_launcher:
        return launcher_command(args)
    if args.command is None:
        from ..ui.app import run_app   # Qt is imported only when the window is wanted
        func, prog = run_app, "token-explorer"
    else:
        func, prog = args.func, f"token-explorer {args.command}"
        try:                                    # a flag that cannot take effect here: refused, not dropped
            name, leaf = command_parser(parser, args)
            check_flags(name, args, leaf)
        except ExplorerError as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
    try:
        with sigterm_as_interrupt():
            status = func(args)
            sys.stdout.flush()                  # a closed pipe shows here, not at exit
            return status
    except KeyboardInterrupt as exc:            # Ctrl+C or SIGTERM: one line, 130 or 143
        return interrupted_status(exc, prog)
    except BrokenPipeError:                     # `explorer trace | head`: the reader left
        return silence_stdout()
    except ExplorerError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:                      # a full disk under the standard output too
        print(f"{prog}: error: {os_error_text(exc)}", file=sys.stderr)
        silence_stdout()                        # what stdout still holds would fail again at exit
        return 2


def launcher_command(args) -> int:
    """--install-launcher / --uninstall-launcher, for the current user."""
    from ..desktop import launcher

    try:
        plan = launcher.plan()
        lines = launcher.install(plan) if args.install_launcher else launcher.uninstall(plan)
    except (ExplorerError, OSError) as exc:
        said = os_error_text(exc) if isinstance(exc, OSError) else str(exc)
        print(f"token-explorer: error: {said}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
