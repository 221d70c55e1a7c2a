"""The command line's sub-commands and flags, read from its argparse parsers, so a test
over every flag covers the flags added later too."""

from __future__ import annotations

import argparse

from explorer.cli.main import build_parser


def commands(parser=None, path=()):
    """(command path, its parser) for every sub-command, sub-sub-commands included."""
    parser = parser or build_parser()
    for action in parser._actions:                   # argparse keeps no public list
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def options(parser) -> list[str]:
    """The first option string of every optional flag of `parser` (not --help)."""
    return [a.option_strings[0] for a in parser._actions if a.option_strings and a.dest != "help"]
