"""``berth bench``: scheduling throughput on a synthetic cluster, or simulation speed on a
trace (``--sim``)."""

from __future__ import annotations

import argparse
import json
import resource
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from berth import native
from berth.defaults import BENCH_SCENARIOS
from berth.input_failures import EXIT_INPUT, input_errors, input_failure

if TYPE_CHECKING:
    from rich.progress import TaskID


def add_bench_command(sub: Any) -> None:
    bench = sub.add_parser("bench", help="measure scheduling throughput")
    bench.add_argument(
        "--scenario",
        default="basic",
        choices=list(BENCH_SCENARIOS),
        help="the pending pods' shape (default: basic)",
    )
    bench.add_argument("--nodes", type=int, default=1000, help="nodes (default: 1000)")
    bench.add_argument(
        "--running", type=int, default=10_000, help="pods already running (default: 10000)"
    )
    bench.add_argument(
        "--pods", type=int, default=5_000, help="pending pods to schedule (default: 5000)"
    )
    bench.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    bench.add_argument(
        "--search",
        choices=["full", "sampled"],
        default="full",
        help="score every feasible node, or a sample as kube-scheduler does (default: full)",
    )
    bench.add_argument("--json", action="store_true", help="print one JSON object")
    bench.add_argument(
        "--sim",
        action="store_true",
        help="measure simulation speed on --trace (or the built-in scenario)",
    )
    bench.add_argument(
        "--trace", type=Path, help="with --sim: the trace to replay (a file or a trace's name)"
    )
    bench.add_argument("--format", dest="trace_format", help="with --sim: the trace format")
    bench.add_argument("--cluster", type=Path, help="with --sim: nodes (default: from the trace)")
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.bench import BenchError, run_bench
    from berth.progress import bars

    conflict = _conflict(args)
    if conflict:
        print(f"error: {conflict}", file=sys.stderr)
        return EXIT_INPUT
    if args.sim:
        return _bench_sim(args)
    try:
        with bars() as display:
            tasks: dict[str, TaskID] = {}

            def stage(what: str, done: int, total: int) -> None:
                if what not in tasks:
                    tasks[what] = display.add_task(what, total=total, detail="")
                display.update(tasks[what], completed=done)

            result = run_bench(
                args.scenario, args.nodes, args.running, args.pods, args.seed, args.search, stage
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
            f"[bold]{result['pods_per_second']:,.0f} pods/s[/bold] ({result['modules']})"
        )
    return 0


#: The options of the synthetic benchmark, and their defaults: what --sim does not use.
_SYNTHETIC = {
    "--scenario": ("scenario", "basic"),
    "--nodes": ("nodes", 1000),
    "--running": ("running", 10_000),
    "--pods": ("pods", 5_000),
    "--search": ("search", "full"),
}
#: The options of --sim, which the synthetic benchmark does not use.
_SIM = {"--trace": "trace", "--format": "trace_format", "--cluster": "cluster"}


def _conflict(args: argparse.Namespace) -> str | None:
    """Options given that the chosen benchmark would ignore, as an error (None if none)."""
    if args.sim:
        given = [
            flag for flag, (dest, default) in _SYNTHETIC.items() if getattr(args, dest) != default
        ]
        if given:
            return f"{', '.join(given)}: only without --sim (they shape the synthetic benchmark)"
        if args.trace is None:
            alone = [flag for flag in ("--format", "--cluster") if getattr(args, _SIM[flag])]
            if alone:
                return f"{', '.join(alone)}: with --sim, only beside --trace"
        return None
    given = [flag for flag, dest in _SIM.items() if getattr(args, dest) is not None]
    if given:
        return f"{', '.join(given)}: only with --sim (simulation speed on a trace)"
    return None


def peak_rss() -> int:
    """The process's peak resident memory so far, in bytes (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _bench_sim(args: argparse.Namespace) -> int:
    """Simulation speed: the whole run is timed (loading excluded), outputs are not written."""
    from rich.console import Console

    from berth.collector import new_objects_only
    from berth.sim.inputs import InputSpec
    from berth.sim.run import load_inputs, simulate
    from berth.traces.fetch import resolve_trace

    before = peak_rss()
    with new_objects_only():  # the collector as ``berth simulate`` keeps it
        try:
            spec = InputSpec(
                cluster=None if args.cluster is None else str(resolve_trace(args.cluster)),
                trace=None if args.trace is None else str(resolve_trace(args.trace)),
                trace_format=args.trace_format,
                cluster_from_trace=args.trace is not None and args.cluster is None,
                seed=args.seed,
            )
            inputs = load_inputs(spec, None)
        except input_errors() as exc:
            return input_failure(exc)
        result = simulate(inputs, spec.seed)
    jobs = len(result.groups)
    seconds = result.wall_seconds
    # What loading and simulating added to the process's peak: outputs are not written.
    grown = max(peak_rss() - before, 0)
    pods = len(result.pods)
    report = {
        "input": inputs.label,
        "nodes": len(inputs.manifests.nodes),
        "jobs": jobs,
        "pods": pods,
        "peak_rss_mib": round(peak_rss() / 2**20, 1),
        "bytes_per_pod": round(grown / pods) if pods else 0,
        "events": result.events,
        "simulated_seconds": round(result.end_time, 1),
        "seconds": round(seconds, 3),
        "events_per_second": round(result.events / seconds, 1) if seconds else 0.0,
        "jobs_per_second": round(jobs / seconds, 1) if seconds else 0.0,
        "modules": native.MODE,  # whether the placing path ran compiled (berth.native)
    }
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        Console().print(
            f"{report['input']}: {jobs:,} jobs, {report['pods']:,} pods on {report['nodes']:,} "
            f"nodes, {result.events:,} events in {seconds:.2f}s = "
            f"[bold]{report['events_per_second']:,.0f} events/s, "
            f"{report['jobs_per_second']:,.0f} jobs/s[/bold]; peak memory "
            f"{report['peak_rss_mib']:,.0f} MiB, {report['bytes_per_pod']:,} bytes per pod "
            f"({report['modules']})"
        )
    return 0
