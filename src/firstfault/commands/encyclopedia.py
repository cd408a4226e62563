"""`firstfault explain | list | search | compare`: the knowledge base read as documentation.

Results go to stdout (exit 0); an unknown id or category is a one-line error with a hint (exit 2).
"""
from __future__ import annotations

import argparse
import difflib
import shutil
import sys
from pathlib import Path

from ..errors import UnknownEntryError, UsageError
from .options import FORMATS, add_output_options, knowledge_base, use_color

READING_WIDTH = 100  # prose wider than this is hard to read, whatever the terminal


def register(subparsers) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--entries", metavar="DIR", type=Path, default=None,
        help="read entries from DIR (<category>/<id>.yaml files) instead of the built-in knowledge base",
    )

    explain = subparsers.add_parser("explain", parents=[common], help="show one knowledge-base entry in full")
    explain.add_argument("id", metavar="ID", help="entry id, e.g. cuda-oom (`firstfault list` shows them all)")
    add_output_options(explain, FORMATS)
    explain.set_defaults(func=run_explain)

    listing = subparsers.add_parser("list", parents=[common], help="list the knowledge-base entries")
    listing.add_argument("--category", metavar="C", help="only entries of category C, or of a topic such as nccl")
    add_output_options(listing, FORMATS)
    listing.set_defaults(func=run_list)

    search = subparsers.add_parser(
        "search", parents=[common], help="find entries by words or by a pasted error line",
    )
    search.add_argument("text", metavar="TEXT", nargs="+", help="words or a log line; '-' reads it from stdin")
    search.add_argument("--limit", metavar="N", type=int, default=10, help="show at most N entries (0: all; default 10)")
    add_output_options(search, FORMATS)
    search.set_defaults(func=run_search)

    compare = subparsers.add_parser("compare", parents=[common], help="look-alike entries side by side, and what tells them apart")
    compare.add_argument("category", metavar="CATEGORY", help="a category, or nccl for the NCCL and collective-timeout entries")
    add_output_options(compare, FORMATS)
    compare.set_defaults(func=run_compare)


def run_explain(args) -> int:
    from ..render.entry import render_entry

    kb = _knowledge_base(args)
    entry = find_entry(kb, args.id)
    if entry.id != args.id and entry.id != args.id.lower():
        print(f"firstfault: note: {args.id!r} was renamed to {entry.id!r}", file=sys.stderr)
    color, width = _terminal(args)
    titles = {other.id: other.title for other in kb.entries}
    text = render_entry(entry, args.format, color=color, width=min(width, READING_WIDTH), related_titles=titles)
    sys.stdout.write(text)
    return 0


def run_list(args) -> int:
    from ..kb.compare import select
    from ..render.entry_tables import render_list

    kb = _knowledge_base(args)
    entries = kb.entries
    if args.category is not None:
        entries = select(kb, args.category)  # a category, or a topic as `compare` takes (nccl)
        if not entries and args.format == "terminal":
            print(f"firstfault: no entries in category {args.category!r} yet", file=sys.stderr)
            return 0
    color, width = _terminal(args)
    sys.stdout.write(render_list(entries, args.format, width=width, color=color))
    return 0


def run_search(args) -> int:
    from ..kb.search import SearchIndex
    from ..render.entry_tables import render_search

    if args.limit < 0:
        raise UsageError(f"--limit must be 0 or more, not {args.limit}", "--limit 0 shows every match")
    query = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    if not query.strip():
        raise UsageError("empty search query", "pass words or an error line, or '-' to read one from stdin")
    hits = SearchIndex(_knowledge_base(args)).search(query, args.limit)
    if not hits and args.format == "terminal":
        print("firstfault: no entry matches; try fewer or other words, or paste the error line", file=sys.stderr)
        return 0
    color, width = _terminal(args)
    sys.stdout.write(render_search(hits, args.format, width=width, color=color))
    return 0


def run_compare(args) -> int:
    from ..kb.compare import compare
    from ..render.entry_compare import render_comparison

    comparison = compare(_knowledge_base(args), args.category)
    color, width = _terminal(args)
    sys.stdout.write(render_comparison(comparison, args.format, width=width, color=color))
    return 0


def find_entry(kb, entry_id: str):
    """kb.get (ids are lower case: `CUDA-OOM` is `cuda-oom`), with the closest ids named in the
    hint when there is no such entry."""
    if entry_id not in kb and entry_id.lower() in kb:
        entry_id = entry_id.lower()
    try:
        return kb.get(entry_id)
    except UnknownEntryError as exc:
        known = [entry.id for entry in kb.entries] + [old for entry in kb.entries for old in entry.get("redirect_from") or ()]
        # an old id suggests the entry it now names; each entry once
        wanted = entry_id.lower().replace("_", "-").replace(" ", "-")
        close = list(dict.fromkeys(kb.get(match).id for match in difflib.get_close_matches(wanted, known, n=3, cutoff=0.6)))
        if not close:
            raise
        raise UnknownEntryError(exc.message, f"did you mean {' or '.join(close)}? `firstfault list` shows every id") from None


def _knowledge_base(args):
    """--entries DIR replaces the built-in entries; otherwise the built-in ones and the
    configuration's signature folders."""
    from ..kb.loader import load_knowledge_base

    if args.entries:
        return load_knowledge_base(args.entries.resolve())
    return knowledge_base(args)


def _terminal(args) -> tuple[bool, int]:
    """Colour (--color; auto: a terminal without NO_COLOR) and width for standard output."""
    return use_color(args.color, sys.stdout), shutil.get_terminal_size().columns
