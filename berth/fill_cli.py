"""``berth fill``: the fill-until-full experiment on any node list and pod list."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from berth.defaults import FILL_POLICIES, FILL_TARGET
from berth.executors import SweepError, add_executor_argument
from berth.input_failures import EXIT_INPUT
from berth.traces.arguments import positive

if TYPE_CHECKING:
    from berth.report.plotter import Plotter

#: The largest --target: a workload this many times the cluster's GPUs fills it many times over.
MAX_FILL_TARGET = 10.0


def add_fill_command(sub: Any) -> None:
    fill = sub.add_parser(
        "fill",
        help="fill a cluster until full (the FGD paper's experiment) and record GPU allocation",
        description=(
            "Pods arrive once, in shuffled order, extended by sampling with replacement until "
            "their GPU request is --target times the cluster's GPUs; a pod that does not fit is "
            "dropped. Records GPU allocation against the arrived workload."
        ),
    )
    fill.add_argument(
        "--cluster",
        required=True,
        help="node list (openb, PAI, 2018: a file or a trace's name) or manifests",
    )
    fill.add_argument(
        "--workload", required=True, help="pod list (a trace file or name) or manifests"
    )
    fill.add_argument(
        "--policy",
        action="append",
        metavar="NAME|FILE",
        help="placement plugin or configuration file (repeat; default: "
        f"{', '.join(FILL_POLICIES)})",
    )
    fill.add_argument("--seeds", type=int, default=1, help="runs per policy (seeds 0..N-1)")
    fill.add_argument(
        "--target",
        type=float,
        default=FILL_TARGET,
        help=f"the workload's GPU request over the cluster's GPUs (default {FILL_TARGET}, at "
        f"most {MAX_FILL_TARGET:g})",
    )
    fill.add_argument(
        "--jobs", type=positive(int), help="parallel processes (default: one per core)"
    )
    add_executor_argument(fill)
    fill.add_argument("--out", type=Path, default=Path("out/fill"), help="output directory")
    fill.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    fill.set_defaults(handler=run_fill_command)


def _err(message: str) -> None:
    print(f"berth fill: {message}", file=sys.stderr)


def run_fill_command(args: argparse.Namespace) -> int:
    from berth.report.plotter import Plotter

    policies = args.policy or list(FILL_POLICIES)
    if args.seeds < 1 or not args.target > 0:
        _err("--seeds must be >= 1 and --target > 0")
        return EXIT_INPUT
    if not args.target <= MAX_FILL_TARGET:
        _err(
            f"--target {args.target:g}: at most {MAX_FILL_TARGET:g} (past the cluster's "
            "capacity every further pod is dropped, and the run only grows)"
        )
        return EXIT_INPUT
    if args.executor.remote and args.jobs:
        _err(
            "--jobs counts processes on this machine; with --executor ray the Ray cluster's "
            "CPUs decide how many runs go at once"
        )
        return EXIT_INPUT
    # The plot is drawn beside the runs (see berth.report.plotter).
    plotter = Plotter().start("berth.report.fill")
    try:
        return _fill(args, policies, plotter)
    finally:
        plotter.close()


def _fill(args: argparse.Namespace, policies: list[str], plotter: Plotter) -> int:
    """Check the inputs, then the runs, their outputs and their table."""
    from rich.console import Console
    from rich.table import Table

    from berth.api.problems import ManifestError
    from berth.framework.config import ConfigError
    from berth.framework.plugin import PluginArgumentError
    from berth.outputs import prepare_output
    from berth.progress import bars
    from berth.report.fill import write_fill_outputs
    from berth.sim.fill import FillSpec, fill_inputs, run_specs, spec_config
    from berth.sim.inputs import InputError
    from berth.traces.fetch import resolve_trace

    try:
        args.cluster = str(resolve_trace(args.cluster))
        args.workload = str(resolve_trace(args.workload))
        overwrite = prepare_output(args.out, args.force)
        for policy in policies:
            spec_config(policy)
        fill_inputs(args.cluster, args.workload)
    except (InputError, ManifestError, ConfigError, PluginArgumentError, ValueError) as exc:
        _err(str(exc))
        return EXIT_INPUT
    if overwrite:
        print(f"note: {overwrite}", file=sys.stderr)
    specs = [
        FillSpec(args.cluster, args.workload, policy, seed, args.target)
        for policy in policies
        for seed in range(args.seeds)
    ]
    jobs = args.jobs or os.cpu_count() or 1
    try:
        with bars() as display:
            task = display.add_task("fill runs", total=len(specs), detail="")
            runs = run_specs(
                specs, jobs, lambda done: display.update(task, completed=done), args.executor
            )
    except (ValueError, SweepError) as exc:
        _err(str(exc))
        return EXIT_INPUT
    summary = write_fill_outputs(runs, args.out, plotter)
    table = Table("policy", "seeds", "GPU allocation %", "GPUs unallocated", "fragmentation %")
    for policy, entry in summary["policies"].items():
        table.add_row(
            policy,
            str(entry["seeds"]),
            f"{entry['gpu_allocation_percent']:.2f}"
            + (f" ± {entry['gpu_allocation_std']:.2f}" if entry["seeds"] > 1 else ""),
            f"{entry['gpus_unallocated']:.0f}",
            f"{entry['fragmentation_percent']:.2f}",
        )
    Console(file=sys.stdout).print(table)
    print(f"wrote {args.out}/fill.csv, summary.json, allocation.png")
    return 0
