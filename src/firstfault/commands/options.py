"""Options every command that prints shares, and how they meet the configuration file.

    --format {terminal,json,markdown}   the same choices everywhere (watch/run: terminal, json = JSON lines)
    --color {auto,always,never}         auto: colour on a terminal unless NO_COLOR is set
    -o/--output FILE                    results to FILE instead of standard output
    -q/--quiet                          only errors on standard error (no progress, notes, warnings)

Defaults are None on the parser; `resolve` fills what the command line left open from the
configuration file (firstfault.config), then from the command's own default.
"""
from __future__ import annotations

import argparse

import os
import sys

from ..config import COLORS, FORMATS, Config

STREAM_FORMATS = ("terminal", "json", "jsonl")  # watch and run stream alerts: json means JSON lines


def add_output_options(parser, formats=FORMATS, default: str = "terminal", output: bool = True) -> None:
    """--format (with the given choices), --color, -o/--output, -q/--quiet on one (sub)command."""
    parser.add_argument("--format", choices=formats, default=None,
                        help=f"output format: {', '.join(formats)} (default: {default}, or the configuration's)")
    parser.add_argument("--color", choices=COLORS, default=None,
                        help="colour: auto (a terminal without NO_COLOR), always, never (default: auto)")
    if output:
        parser.add_argument("-o", "--output", metavar="FILE", default=None,
                            help="write the results to FILE instead of standard output")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print only errors on standard error: no progress, notes or warnings")
    parser.set_defaults(format_choices=tuple(formats), format_default=default)


def resolve(args, config: Config) -> None:
    """Fill --format, --color and --mask-hosts from the configuration where the command line did not."""
    choices = getattr(args, "format_choices", None)
    if choices is not None and getattr(args, "format", None) is None:
        wanted = config.format
        if wanted == "json" and "json" not in choices and "jsonl" in choices:
            wanted = "jsonl"
        args.format = wanted if wanted in choices else args.format_default
    if hasattr(args, "color") and args.color is None:
        args.color = config.color or "auto"
    if hasattr(args, "mask_hosts") and args.mask_hosts is None:
        args.mask_hosts = bool(config.mask_hosts)
    if hasattr(args, "save") and args.save is None:
        args.save = bool(config.save)
    args.signature_folders = config.signature_folders


def use_color(choice: str | None, stream) -> bool:
    """--color: always and never are what they say; auto means a terminal, and no NO_COLOR."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not os.environ.get("NO_COLOR")


def add_history_options(parser) -> None:
    """--save / --no-save and --db, on the commands that diagnose (diagnose, watch, run)."""
    parser.add_argument("--save", action=argparse.BooleanOptionalAction, default=None,
                        help="keep the (masked) diagnosis in the history and say when this failure was seen before "
                             "(firstfault history, firstfault ask; default: off, or the configuration's `save`)")
    parser.add_argument("--db", metavar="PATH", help="the history database for --save (default: history.sqlite3 in "
                                                     "the user data directory)")


def knowledge_base(args):
    """The built-in knowledge base plus the configuration's signature folders."""
    from ..kb import load_knowledge_base

    return load_knowledge_base(extra=tuple(getattr(args, "signature_folders", ()) or ()))


class QuietStderr:
    """Standard error under --quiet: lines that are errors (and their hints) pass, the rest goes."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.pending = ""

    def write(self, text: str) -> int:
        self.pending += text
        while "\n" in self.pending:
            line, self.pending = self.pending.split("\n", 1)
            if line.startswith(("firstfault: error", "hint:")):
                self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return False  # nothing interactive (the progress line) is drawn


def warn_if_slow_matcher() -> None:
    """One line when the fast matcher is missing, saying what that costs."""
    from ..match.compiler import slow_matcher_warning

    warning = slow_matcher_warning()
    if warning:
        print(warning, file=sys.stderr)
