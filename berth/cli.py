"""The ``berth`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from berth import __version__
from berth.api.manifest import ManifestError
from berth.framework.config import ConfigError
from berth.framework.plugin import PluginArgumentError
from berth.sim.engine import SimConfigError
from berth.sim.runner import InputError
from berth.traces.cli import add_trace_commands

if TYPE_CHECKING:
    from berth.sim.runner import InputSpec

#: Everything that means "your input is wrong" rather than "berth is broken".
INPUT_ERRORS = (ManifestError, ConfigError, PluginArgumentError, SimConfigError, InputError)

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
    _add_input_arguments(sim)
    sim.add_argument("--config", type=Path, help="scheduler configuration (YAML)")
    sim.add_argument("--out", type=Path, default=Path("out/simulation"), help="output directory")
    sim.add_argument("--quiet", action="store_true", help="no progress bar or table")
    sim.set_defaults(handler=_simulate)

    cmp = sub.add_parser("compare", help="run several scheduler configurations on one input")
    _add_input_arguments(cmp)
    cmp.add_argument(
        "--config",
        action="append",
        required=True,
        metavar="FILE",
        help="a scheduler configuration, or 'default' (repeat: 2 or more)",
    )
    cmp.add_argument("--out", type=Path, default=Path("out/compare"), help="output directory")
    cmp.add_argument("--jobs", type=int, help="parallel processes (default: one per core)")
    cmp.set_defaults(handler=_compare)

    add_trace_commands(sub)

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
    bench.add_argument(
        "--sim",
        action="store_true",
        help="measure simulation speed on --trace (or the built-in scenario)",
    )
    bench.add_argument("--trace", type=Path, help="with --sim: the trace to replay")
    bench.add_argument("--format", dest="trace_format", help="with --sim: the trace format")
    bench.add_argument("--cluster", type=Path, help="with --sim: nodes (default: from the trace)")
    bench.set_defaults(handler=_bench)
    return parser


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", type=Path, help="nodes (Node / NodePool manifests)")
    parser.add_argument(
        "--workload", type=Path, action="append", default=[], help="workload manifests (repeatable)"
    )
    parser.add_argument("--trace", type=Path, help="a trace file to replay instead of manifests")
    parser.add_argument("--format", dest="trace_format", help="trace format (default: detected)")
    parser.add_argument(
        "--cluster-from-trace",
        action="store_true",
        help="nodes from the trace's node list, or sized from its demand",
    )
    parser.add_argument("--queues", help='trace jobs to queues: "a:1,b:2" or "by-size"')
    parser.add_argument(
        "--on-bad-row",
        choices=["fail", "skip"],
        default="fail",
        help="what to do with malformed trace rows (skipped rows are reported)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--until", type=float, help="stop at this simulated time (seconds)")


def _input_spec(args: argparse.Namespace) -> InputSpec:
    from berth.sim.runner import InputSpec

    return InputSpec(
        cluster=None if args.cluster is None else str(args.cluster),
        workloads=tuple(str(w) for w in args.workload),
        trace=None if args.trace is None else str(args.trace),
        trace_format=args.trace_format,
        cluster_from_trace=args.cluster_from_trace,
        queues=args.queues,
        on_bad_row=args.on_bad_row,
        seed=args.seed,
        until=args.until,
    )


def _input_failure(exc: Exception) -> int:
    """Print a load-time error the way validate prints problems: one line each."""
    if isinstance(exc, ManifestError):
        for problem in exc.problems:
            print(problem, file=sys.stderr)
    else:
        print(f"error: {exc}", file=sys.stderr)
    return EXIT_INPUT


def _simulate(args: argparse.Namespace) -> int:
    from berth.report.console import summary_table
    from berth.sim.runner import load_inputs, simulate, write_outputs

    spec = _input_spec(args)
    try:
        inputs = load_inputs(spec, args.config)
    except INPUT_ERRORS as exc:
        return _input_failure(exc)
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for note in inputs.notes:
        print(f"note: {note}", file=sys.stderr)
    show = not args.quiet
    console = Console()
    if show:
        console.print(
            f"[bold]berth[/bold] simulating {inputs.label}: "
            f"{len(inputs.manifests.nodes)} nodes, {len(inputs.manifests.pods)} pods",
            soft_wrap=True,
        )
    if show and inputs.until:
        err = Console(stderr=True)
        columns = (
            TextColumn("simulated time"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("sim", total=inputs.until)
            result = simulate(inputs, spec.seed, progress=lambda t: bar.update(task, completed=t))
    else:
        result = simulate(inputs, spec.seed)
    summary, report = write_outputs(result, args.out)
    if show:
        console.print(summary_table(summary))
        console.print(f"report: {report}", soft_wrap=True)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from berth.compare import compare
    from berth.report.compare import comparison_console_table

    if len(args.config) < 2:
        print("error: --config: give at least two configurations to compare", file=sys.stderr)
        return EXIT_INPUT
    console = Console()
    try:
        outcomes, report = compare(
            _input_spec(args),
            args.config,
            args.out,
            args.jobs,
            progress=lambda name: console.print(f"finished {name}"),
        )
    except INPUT_ERRORS as exc:
        return _input_failure(exc)
    console.print(comparison_console_table(outcomes))
    console.print(f"report: {report}", soft_wrap=True)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from berth.api.manifest import load_files
    from berth.framework.config_files import is_scheduler_configuration

    configs = [path for path in args.files if is_scheduler_configuration(path)]
    manifest_files = [path for path in args.files if path not in configs]
    failed = not all([_validate_config(path) for path in configs])
    if not manifest_files:
        return EXIT_INPUT if failed else 0
    manifests = load_files(manifest_files)
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
    if manifests.jobs or manifests.commands:
        counts += f", {len(manifests.jobs)} jobs, {len(manifests.commands)} commands"
    if manifests.namespaces:
        counts += f", {len(manifests.namespaces)} namespaces"
    print(f"valid: {counts}")
    return EXIT_INPUT if failed else 0


def _validate_config(path: Path) -> bool:
    """Check one scheduler configuration as ``simulate --config`` would use it."""
    from berth.framework.config import load_config
    from berth.framework.config_files import describe
    from berth.framework.framework import Framework

    try:
        config = load_config(path)
        Framework(config)
    except (ConfigError, PluginArgumentError) as exc:
        message = str(exc)
        print(message if message.startswith(str(path)) else f"{path}: {message}")
        return False
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"valid: {path}: scheduler configuration ({describe(config)})")
    return True


def _bench(args: argparse.Namespace) -> int:
    from berth.bench import BenchError, run_bench

    if args.sim:
        return _bench_sim(args)
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


def _bench_sim(args: argparse.Namespace) -> int:
    """Simulation speed: the whole run is timed (loading excluded), outputs are not written."""
    from berth.sim.runner import InputSpec, load_inputs, simulate

    spec = InputSpec(
        cluster=None if args.cluster is None else str(args.cluster),
        trace=None if args.trace is None else str(args.trace),
        trace_format=args.trace_format,
        cluster_from_trace=args.trace is not None and args.cluster is None,
        seed=args.seed,
    )
    try:
        inputs = load_inputs(spec, None)
    except INPUT_ERRORS as exc:
        return _input_failure(exc)
    result = simulate(inputs, spec.seed)
    jobs = len(result.groups)
    seconds = result.wall_seconds
    report = {
        "input": inputs.label,
        "nodes": len(inputs.manifests.nodes),
        "jobs": jobs,
        "pods": len(result.pods),
        "events": result.events,
        "simulated_seconds": round(result.end_time, 1),
        "seconds": round(seconds, 3),
        "events_per_second": round(result.events / seconds, 1) if seconds else 0.0,
        "jobs_per_second": round(jobs / seconds, 1) if seconds else 0.0,
    }
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        Console().print(
            f"{report['input']}: {jobs:,} jobs, {report['pods']:,} pods on {report['nodes']:,} "
            f"nodes, {result.events:,} events in {seconds:.2f}s = "
            f"[bold]{report['events_per_second']:,.0f} events/s, "
            f"{report['jobs_per_second']:,.0f} jobs/s[/bold]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
