"""``berth compare``'s command line: the same inputs under several scheduler configurations
(``berth.compare`` runs them), with one progress bar per run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from berth.executors import add_executor_argument
from berth.input_failures import EXIT_INPUT, input_errors, input_failure
from berth.input_options import add_input_arguments, input_spec
from berth.traces.arguments import positive

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from berth.compare import RunProgress


def add_compare_command(sub: Any) -> None:
    cmp = sub.add_parser("compare", help="run several scheduler configurations on one input")
    add_input_arguments(cmp)
    cmp.add_argument(
        "--config",
        action="append",
        required=True,
        metavar="FILE",
        help="a scheduler configuration, or 'default' (repeat: 2 or more)",
    )
    cmp.add_argument("--out", type=Path, default=Path("out/compare"), help="output directory")
    cmp.add_argument(
        "--jobs", type=positive(int), help="parallel processes (default: one per core)"
    )
    add_executor_argument(cmp)
    cmp.add_argument(
        "--seeds",
        type=positive(int),
        default=1,
        metavar="N",
        help="run each configuration under N seeds (--seed and the N-1 after it); the table "
        "shows means and spread, each run's output goes to CONFIG/seed-S",
    )
    cmp.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    cmp.set_defaults(handler=_compare)


def _compare_progress(display: Progress, console: Console) -> Callable[[RunProgress], None]:
    """One bar per configuration, named with the cluster size its run chose; a line when one
    finishes (the only output off a terminal)."""
    from berth.progress import simulated_time

    tasks: dict[str, tuple[TaskID, Callable[[float], None]]] = {}

    def update(event: RunProgress) -> None:
        if event.done:
            console.print(f"finished {event.name}", highlight=False)
            if event.name in tasks:
                display.update(tasks[event.name][0], visible=False)
        elif event.name not in tasks:
            description = f"{event.name} ({event.nodes:,} nodes)"
            tasks[event.name] = simulated_time(display, description, event.horizon)
        else:
            tasks[event.name][1](event.now)

    return update


def _compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.compare import compare
    from berth.outputs import prepare_output
    from berth.progress import bars
    from berth.report.compare import comparison_console_table

    if len(args.config) < 2:
        print("error: --config: give at least two configurations to compare", file=sys.stderr)
        return EXIT_INPUT
    if args.executor.remote and args.jobs:
        print(
            "error: --jobs counts processes on this machine; with --executor ray the Ray "
            "cluster's CPUs decide how many runs go at once",
            file=sys.stderr,
        )
        return EXIT_INPUT
    console = Console()
    try:
        spec = input_spec(args)
        overwrite = prepare_output(args.out, args.force)
        if overwrite:
            print(f"note: {overwrite}", file=sys.stderr)
        with bars() as display:
            table, report = compare(
                spec,
                args.config,
                args.out,
                args.jobs,
                progress=_compare_progress(display, console),
                command=args.command,
                seeds=args.seeds,
                executor=args.executor,
                warn=lambda message: display.console.print(
                    f"warning: {message}", markup=False, highlight=False, soft_wrap=True
                ),
            )
    except input_errors() as exc:
        return input_failure(exc)
    console.print(comparison_console_table(table))
    console.print(f"report: {report}", soft_wrap=True)
    return 0
