"""The ``berth`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from berth import __version__

EXIT_INPUT = 1  # bad input: validate problems, configuration errors


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    return int(args.handler(args) or 0)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="berth",
        description="Schedule mixed online, batch and training workloads; simulate on traces.",
    )
    parser.add_argument("--version", action="version", version=f"berth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sim = sub.add_parser("simulate", help="run a simulation and write a report")
    sim.add_argument("--cluster", type=Path, help="nodes (Node / NodePool manifests)")
    sim.add_argument(
        "--workload", type=Path, action="append", default=[], help="workload manifests (repeatable)"
    )
    sim.add_argument("--config", type=Path, help="scheduler configuration (YAML)")
    sim.add_argument("--seed", type=int, default=0)
    sim.add_argument("--until", type=float, help="stop at this simulated time (seconds)")
    sim.add_argument("--out", type=Path, default=Path("out/simulation"), help="output directory")
    sim.add_argument("--quiet", action="store_true", help="no progress bar or table")
    sim.set_defaults(handler=_simulate)

    val = sub.add_parser("validate", help="check manifests without running anything")
    val.add_argument("files", type=Path, nargs="+")
    val.set_defaults(handler=_validate)

    bench = sub.add_parser("bench", help="measure scheduling throughput")
    bench.add_argument(
        "--scenario", default="basic", choices=["basic", "spread", "anti-affinity", "gang", "mixed"]
    )
    bench.add_argument("--nodes", type=int, default=1000)
    bench.add_argument("--running", type=int, default=10_000)
    bench.add_argument("--pods", type=int, default=5_000)
    bench.add_argument("--seed", type=int, default=0)
    bench.add_argument("--search", choices=["full", "sampled"], default="full")
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.set_defaults(handler=_bench)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from berth.api.manifest import ManifestError
    from berth.framework.config import ConfigError
    from berth.framework.plugin import PluginArgumentError
    from berth.report.console import summary_table
    from berth.sim.engine import SimConfigError
    from berth.sim.runner import InputError, load_inputs, simulate, write_outputs

    err = Console(stderr=True)
    try:
        inputs = load_inputs(args.cluster, args.workload, args.config, args.seed)
    except ManifestError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_INPUT
    except (ConfigError, InputError, SimConfigError, PluginArgumentError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for warning in inputs.manifests.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for warning in inputs.config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    until = args.until
    if until is None and inputs.builtin:
        until = 86_400.0  # the built-in scenario is one day; its services never finish
    show = not args.quiet
    console = Console()
    if show:
        label = "built-in scenario" if inputs.builtin else str(args.cluster)
        console.print(
            f"[bold]berth[/bold] simulating {label}: "
            f"{len(inputs.manifests.nodes)} nodes, {len(inputs.manifests.pods)} pods"
        )
    try:
        if show and until:
            with Progress(
                TextColumn("simulated time"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as bar:
                task = bar.add_task("sim", total=until)
                result = simulate(inputs, args.seed, until, lambda t: bar.update(task, completed=t))
        else:
            result = simulate(inputs, args.seed, until)
    except PluginArgumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    summary, report = write_outputs(result, args.out)
    if show:
        console.print(summary_table(summary))
        console.print(f"report: {report}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from berth.api.manifest import load_files

    manifests = load_files(args.files)
    for problem in manifests.warnings:
        print(f"warning: {problem}", file=sys.stderr)
    for problem in manifests.errors:
        print(problem)
    if manifests.errors:
        return EXIT_INPUT
    counts = (
        f"{len(manifests.nodes)} nodes, {len(manifests.pods)} pods, "
        f"{len(manifests.groups)} podgroups, {len(manifests.queues)} queues"
    )
    print(f"valid: {counts}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from berth.bench import BenchError, run_bench

    try:
        result = run_bench(
            args.scenario, args.nodes, args.running, args.pods, args.seed, args.search
        )
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        Console().print(
            f"{result['scenario']}: {result['nodes']} nodes, {result['running']} running, "
            f"{result['pods']} pods → {result['scheduled']} scheduled, "
            f"{result['unschedulable']} unschedulable in {result['seconds']:.3f}s = "
            f"[bold]{result['pods_per_second']:,.0f} pods/s[/bold]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
