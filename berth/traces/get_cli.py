"""``berth trace get``: fetch public traces by name into berth's cache and print where they are,
so that ``--trace NAME`` and ``$(berth trace get NAME)`` work without hunting for files."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from berth.input_failures import EXIT_INPUT

if TYPE_CHECKING:
    from rich.console import Console

    from berth.traces.catalog import Trace


def add_get_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``trace get`` to the ``berth trace`` commands."""
    get = commands.add_parser(
        "get",
        help="download public traces by name into berth's cache and print their paths",
        description="Download public traces (checked against their sha256 where the catalog "
        "knows it) into the cache folder, $BERTH_CACHE or ~/.cache/berth/traces, and print each "
        "one's path. A cached trace is not downloaded again. Every command that reads a trace "
        "also takes its name. $BERTH_TRACE_MIRROR downloads from a mirror instead.",
    )
    get.add_argument(
        "names", nargs="*", metavar="NAME", help="a trace, or a set of traces (see --list)"
    )
    get.add_argument(
        "--list",
        action="store_true",
        help="the traces berth can fetch: format, download size, license, whether a checksum "
        "is known and whether it is cached",
    )
    get.set_defaults(handler=_get)


#: Columns of the listing when it goes to a pipe or file (a terminal's own width otherwise).
_LISTED_WIDTH = 100


def _get(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.traces.catalog import FetchError, traces_named
    from berth.traces.fetch import fetch

    if args.list:
        console = Console()
        _show_catalog(console if console.is_terminal else Console(width=_LISTED_WIDTH))
        return 0
    if not args.names:
        return _fail("name a trace to get (berth trace get --list shows them)")
    try:
        traces: dict[str, Trace] = {}
        for name in args.names:  # every name is checked before anything is downloaded
            traces.update((trace.name, trace) for trace in traces_named(name))
        for trace in traces.values():
            print(fetch(trace), flush=True)
    except FetchError as exc:
        return _fail(exc)
    return 0


def _fail(message: object) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def _download_size(trace: Trace) -> str:
    from rich.filesize import decimal

    download = trace.download
    if download.size is not None:
        size = decimal(download.size)
    elif download.published_size:
        size = f"~{download.published_size}"
    else:
        size = "?"
    return f"{size} {download.archive}" if download.archive else size


def _show_catalog(console: Console) -> None:
    """One row per trace, then each collection's license and citation."""
    from rich import box
    from rich.markup import escape
    from rich.table import Table

    from berth.traces.catalog import SETS, TRACES, Dataset
    from berth.traces.fetch import MIRROR_ENV, cache_dir, cached

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("name", no_wrap=True)
    table.add_column("format", no_wrap=True)
    table.add_column("download", justify="right", no_wrap=True)
    table.add_column("license", no_wrap=True)
    table.add_column("sha256", no_wrap=True)
    table.add_column("cached", no_wrap=True)
    datasets: dict[str, Dataset] = {}
    for trace in TRACES.values():
        datasets.setdefault(trace.dataset.title, trace.dataset)
        table.add_row(
            trace.name,
            trace.format,
            _download_size(trace),
            trace.dataset.license,
            "yes" if trace.verified else "no",
            "yes" if cached(trace) else "",
        )
    console.print(table)
    sets = ", ".join(f"{name} ({len(members)})" for name, members in SETS.items())
    console.print(f"Sets of traces: {sets}.\n", highlight=False)
    for dataset in datasets.values():
        console.print(f"[bold]{escape(dataset.title)}[/bold]", highlight=False)
        console.print(f"  {dataset.home}", highlight=False, soft_wrap=True)
        console.print(f"  {dataset.license}; cite: {escape(dataset.citation)}", highlight=False)
    console.print(f"\nCache: {cache_dir()}", highlight=False, soft_wrap=True)
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        console.print(f"Mirror ({MIRROR_ENV}): {mirror}", highlight=False, soft_wrap=True)
