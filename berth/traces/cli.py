"""``berth trace info`` and ``berth trace convert``: look at a public trace, then turn it into a
workload (or a cluster, for machine lists) that ``berth simulate`` runs.

The loaders, statistics and writers are imported by the command that uses them, not with the
parser, which every ``berth`` command builds."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from berth.durations import format_duration
from berth.resources import CPU, GIB, GPU, MEMORY
from berth.traces.arguments import (
    DEFAULT_BIN,
    add_reading_arguments,
    add_selection_arguments,
    ignored_for,
    positive,
    selection,
    trace_options,
)
from berth.traces.constants import FORMAT_NAMES
from berth.traces.errors import TraceError, TraceLog
from berth.traces.get_cli import add_get_command

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from berth.traces.load import LoadCurve
    from berth.traces.model import TraceJob
    from berth.traces.stats import Buckets, JobStats, NodeStats, UsageStats

EXIT_INPUT = 1
_STATS = ("p50", "p90", "p99", "max")
_FILE_HELP = "a trace file (its format is detected), or a trace's name (berth trace get --list)"


def add_trace_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``trace info``, ``trace convert`` and ``trace get`` to the ``berth`` command line."""
    trace = subparsers.add_parser(
        "trace",
        help="fetch, inspect and convert public cluster traces",
        description=f"Trace formats: {', '.join(FORMAT_NAMES)} (see docs/traces.md).",
    )
    commands = trace.add_subparsers(dest="trace_command", metavar="COMMAND", required=True)

    info = commands.add_parser("info", help="size, arrivals and job shapes of a trace file")
    info.add_argument("file", type=Path, help=_FILE_HELP)
    _add_reading_options(info)
    info.set_defaults(handler=_info)

    convert = commands.add_parser(
        "convert", help="write a trace as manifests (workload, or cluster for node lists)"
    )
    convert.add_argument("file", type=Path, help=_FILE_HELP)
    convert.add_argument(
        "--out", type=Path, required=True, help="output file: .yaml (streamed) or .jsonl"
    )
    _add_reading_options(convert)
    add_selection_arguments(convert)
    convert.add_argument("--seed", type=int, default=0, help="seed of --sample")
    convert.add_argument(
        "--as",
        dest="shape",
        default="volcano",
        metavar="SHAPE",
        help="the API jobs are written for: volcano (PodGroups, nvidia.com/gpu; the default), "
        "dra (GPUs as ResourceClaims), workload (Kubernetes' Workload API gangs), lws "
        "(LeaderWorkerSets), jobset (JobSets); see docs/traces.md",
    )
    convert.set_defaults(handler=_convert)

    add_get_command(commands)


def _add_reading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", choices=sorted(FORMAT_NAMES), help="trace format (default: from the file)"
    )
    add_reading_arguments(parser)
    parser.add_argument(
        "--bin",
        type=positive(float),
        default=DEFAULT_BIN,
        metavar="SECONDS",
        help="load traces: the width of a load-curve bin (default %(default)s)",
    )


def _warn_ignored(args: argparse.Namespace, trace_format: str, kind: str) -> None:
    """A warning naming the flags given that do nothing on this table."""
    ignored = ignored_for(args, kind, trace_format)
    if getattr(args, "seed", 0) != 0 and getattr(args, "sample", None) is None:
        ignored.append("--seed")  # convert's seed is --sample's
    if ignored:
        flags = ", ".join(ignored)
        print(f"warning: {flags}: ignored (no effect on {trace_format} {kind})", file=sys.stderr)


def _fail(message: object) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def _print_log(console: Console, log: TraceLog) -> None:
    for line in log.lines():
        console.print(line, markup=False, highlight=False, soft_wrap=True)


# -- info -----------------------------------------------------------------------------------------


def _info(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from berth.traces.fetch import resolve_trace
    from berth.traces.load import load_curve
    from berth.traces.loader import find_table, iter_specs, iter_usage, load_nodes
    from berth.traces.stats import job_stats, node_stats, usage_stats

    console = Console()
    try:
        args.file = resolve_trace(args.file)
        trace_format, table = find_table(args.file, args.format)
        _warn_ignored(args, trace_format.name, table.kind)
        options = trace_options(args)
        title = f"[bold]{escape(str(args.file))}[/bold]: {trace_format.name} {table.kind}"
        if table.kind == "jobs":
            jobs = iter_specs(args.file, args.format, options)
            stats = job_stats(jobs)
            log = jobs.log
            _show_jobs(console, title, stats, log)
        elif table.kind == "nodes":
            nodes = load_nodes(args.file, args.format, options)
            log = nodes.log
            _show_nodes(console, title, node_stats(nodes), log)
        elif table.kind == "load":
            curve, log = load_curve(args.file, args.format, args.bin, options)
            _show_load(console, title, curve, log)
        else:
            samples = iter_usage(args.file, args.format, options)
            usage = usage_stats(samples)
            log = samples.log
            _show_usage(console, title, usage, log)
    except TraceError as exc:
        return _fail(exc)
    _print_log(console, log)
    return 0


def _overview(console: Console, title: str, log: TraceLog) -> Table:
    from rich.table import Table

    console.print(title, highlight=False, soft_wrap=True)
    table = Table(show_header=False)
    table.add_column("what", style="bold")
    table.add_column("value", justify="right")
    table.add_row("rows", f"{log.rows:,}")
    table.add_row("skipped bad rows", f"{len(log.skipped):,}")
    if log.excluded:
        table.add_row("left out", f"{sum(log.excluded.values()):,}")
    return table


def _show_jobs(console: Console, title: str, stats: JobStats, log: TraceLog) -> None:
    from rich.table import Table

    overview = _overview(console, title, log)
    overview.add_row("jobs", f"{stats.jobs:,}")
    overview.add_row("pods", f"{stats.pods:,}")
    if stats.first is not None and stats.last is not None:
        overview.add_row("first submit", f"{stats.first:,.0f}s")
        overview.add_row("time span", format_duration(stats.span))
    rate = stats.rate_per_hour
    overview.add_row("arrival rate", "—" if rate is None else f"{rate:,.1f} jobs/hour")
    console.print(overview)
    console.print(_buckets_table("GPUs per job", stats.gpus, stats.jobs))
    console.print(_buckets_table("CPU cores per job", stats.cpus, stats.jobs))
    durations = Table(title="Job duration", title_justify="left")
    for name in (*_STATS, "run to the end"):
        durations.add_column(name, justify="right")
    values = [format_duration(stats.durations.get(name)) for name in _STATS]
    durations.add_row(*values, f"{stats.open_ended:,} jobs")
    console.print(durations)


def _buckets_table(title: str, buckets: Buckets, total: int) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("size", justify="right")
    table.add_column("jobs", justify="right")
    table.add_column("share", justify="right")
    for label, count in buckets:
        table.add_row(label, f"{count:,}", f"{count / total:.1%}")
    return table


def _show_nodes(console: Console, title: str, stats: NodeStats, log: TraceLog) -> None:
    from rich.markup import escape
    from rich.table import Table

    from berth.traces.model import MILLI

    overview = _overview(console, title, log)
    overview.add_row("nodes", f"{stats.nodes:,}")
    overview.add_row("CPU cores", f"{stats.totals.get(CPU, 0) / MILLI:,.0f}")
    overview.add_row("memory", f"{stats.totals.get(MEMORY, 0) / GIB:,.0f} GiB")
    overview.add_row("GPUs", f"{stats.totals.get(GPU, 0) / MILLI:,.0f}")
    console.print(overview)
    models = Table(title="By GPU model", title_justify="left")
    models.add_column("model")
    models.add_column("nodes", justify="right")
    models.add_column("GPUs", justify="right")
    for model, nodes, gpus in stats.models:
        models.add_row(escape(model) or "(no GPU)", f"{nodes:,}", f"{gpus / MILLI:,.0f}")
    console.print(models)


def _show_usage(console: Console, title: str, stats: UsageStats, log: TraceLog) -> None:
    from rich.table import Table

    overview = _overview(console, title, log)
    overview.add_row("samples", f"{stats.samples:,}")
    overview.add_row("machines", f"{stats.machines:,}")
    if stats.first is not None and stats.last is not None:
        overview.add_row("time span", format_duration(stats.last - stats.first))
    console.print(overview)
    table = Table(title="Utilisation (%)", title_justify="left")
    table.add_column("resource")
    for name in _STATS:
        table.add_column(name, justify="right")
    for resource, values in (("cpu", stats.cpu), ("memory", stats.memory)):
        table.add_row(resource, *(f"{values[n]:.1f}" if values else "—" for n in _STATS))
    console.print(table)


def _show_load(console: Console, title: str, curve: LoadCurve, log: TraceLog) -> None:
    from rich.table import Table

    from berth.traces.stats import percentiles

    overview = _overview(console, title, log)
    overview.add_row("requests", f"{curve.total_requests:,}")
    overview.add_row("time span", format_duration(curve.span))
    console.print(overview)
    table = Table(title=f"Per {curve.bin_seconds:g}s bin", title_justify="left")
    table.add_column("rate")
    for name in ("mean", *_STATS):
        table.add_column(name, justify="right")
    for what, values in (("requests/s", curve.requests), ("tokens/s", curve.tokens)):
        stats = percentiles(values)
        table.add_row(what, _rate(values.mean()), *(_rate(stats[n]) for n in _STATS))
    console.print(table)


def _rate(value: float) -> str:
    return f"{value:,.1f}" if value >= 10 else f"{value:.3g}"


# -- convert --------------------------------------------------------------------------------------


class _Tally:
    def __init__(self) -> None:
        self.jobs = 0
        self.pods = 0
        self.queues: set[str] = set()

    def count(self, jobs: Iterable[TraceJob]) -> Iterator[TraceJob]:
        for job in jobs:
            self.jobs += 1
            self.pods += len(job.pods)
            self.queues.add(job.group.queue)
            yield job


def _convert(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.traces.fetch import resolve_trace
    from berth.traces.load import load_curve, write_curve
    from berth.traces.loader import find_table, iter_jobs, load_nodes
    from berth.traces.manifests import workload_manifests
    from berth.traces.shapes import check_shape, cluster_manifests, shaper
    from berth.traces.writer import write_manifests

    console = Console()
    try:
        chosen = selection(args)
        check_shape(args.shape)
    except ValueError as exc:  # a TraceError is one
        return _fail(exc)
    try:
        args.file = resolve_trace(args.file)
        trace_format, table = find_table(args.file, args.format)
        _warn_ignored(args, trace_format.name, table.kind)
        options = trace_options(args)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        if table.kind == "nodes":
            nodes = load_nodes(args.file, args.format, options)
            write_manifests(args.out, cluster_manifests(nodes, args.shape))
            summary, log = f"wrote {len(nodes):,} nodes to {args.out}", nodes.log
        elif table.kind == "jobs":
            jobs = iter_jobs(args.file, args.format, options, chosen)
            tally = _Tally()
            shaped = workload_manifests(tally.count(jobs), options.queue_rule, shaper(args.shape))
            write_manifests(args.out, shaped)
            summary = (
                f"wrote {tally.jobs:,} jobs ({tally.pods:,} pods) in "
                f"{_plural(len(tally.queues), 'queue')} to {args.out}"
            )
            log = jobs.log
        elif table.kind == "load":
            curve, log = load_curve(args.file, args.format, args.bin, options)
            write_curve(args.out, curve)
            summary = (
                f"wrote a load curve of {len(curve.requests):,} bins of {curve.bin_seconds:g}s "
                f"({curve.total_requests:,} requests) to {args.out}"
            )
        else:
            return _fail(f"{args.file}: machine usage has no jobs or nodes to convert")
    except TraceError as exc:
        return _fail(exc)
    except OSError as exc:
        return _fail(f"{args.out}: cannot write ({exc.strerror or exc})")
    console.print(summary, markup=False, highlight=False, soft_wrap=True)
    _print_log(console, log)
    return 0


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
