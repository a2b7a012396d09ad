"""The command-line options that name a simulation's inputs (nodes, workload, trace, how a
trace is read and which of its jobs run, seed, horizon), shared by ``berth simulate`` and
``berth compare``, and the InputSpec they make. Contradicting options are refused here, before
anything is read."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from berth.defaults import DEFAULT_MAX_PODS
from berth.input_failures import InputConflict
from berth.traces.arguments import (
    MEMORY_NORMALISED,
    add_reading_arguments,
    add_selection_arguments,
    deadline_range,
    elastic_range,
    fraction,
    non_negative_int,
    positive,
    positive_seconds,
    reading_given,
    selection,
    selection_given,
    trace_options,
)
from berth.traces.constants import FORMAT_NAMES
from berth.validate_cli import add_unknown_fields

if TYPE_CHECKING:
    from berth.sim.inputs import InputSpec
    from berth.traces.select import Selection


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    add_unknown_fields(parser)
    parser.add_argument(
        "--cluster",
        type=Path,
        help="nodes: Node / NodePool manifests, or a trace's machine list (a file or its name)",
    )
    parser.add_argument(
        "--workload",
        type=Path,
        action="append",
        default=[],
        help="workload manifests: a file or a folder of them (repeatable; with --trace, run "
        "beside the trace's jobs)",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        help="a trace to replay: a file, or a name from berth trace get --list (fetched once)",
    )
    parser.add_argument(
        "--format",
        dest="trace_format",
        choices=sorted(FORMAT_NAMES),
        help="trace format (detected)",
    )
    parser.add_argument(
        "--cluster-from-trace",
        action="store_true",
        help="nodes from the trace's node list, or sized from the trace's (or workload's) demand",
    )
    trace = parser.add_argument_group("trace reading (with --trace, as in berth trace convert)")
    add_reading_arguments(trace)
    add_selection_arguments(trace)
    trace.add_argument(
        "--elastic-fraction",
        type=fraction,
        default=0.0,
        metavar="F",
        help="make this share of the trace's multi-worker jobs elastic, chosen by a hash of "
        "their names (docs/elastic.md)",
    )
    trace.add_argument(
        "--elastic-range",
        type=elastic_range,
        metavar="LOW:HIGH",
        help="an elastic trace job's gang and maximum as multiples of the workers it asked for "
        "(default 0.5:1)",
    )
    trace.add_argument(
        "--deadlines",
        type=deadline_range,
        metavar="LOW:HIGH",
        help="give each trace job a deadline: submission + U(LOW, HIGH) x its duration, drawn "
        "with --seed (the ElasticFlow artifact's draw is 0.5:1.5; docs/policies.md)",
    )
    trace.add_argument(
        "--max-pods",
        type=positive(int),
        default=DEFAULT_MAX_PODS,
        metavar="N",
        help="refuse a trace that expands to more pods (default %(default)s, about 5 GB)",
    )
    parser.add_argument(
        "--seed", type=non_negative_int, default=0, help="random seed (>= 0; default: 0)"
    )
    parser.add_argument(
        "--until",
        type=positive_seconds,
        metavar="T",
        help="stop at this simulated time (seconds, or 90m, 12h, 1d)",
    )


def input_spec(args: argparse.Namespace) -> InputSpec:
    from berth.sim.inputs import InputSpec
    from berth.traces.elastic import ElasticRange
    from berth.traces.fetch import resolve_trace

    # --elastic-range not given: the default range, made here rather than as the argument's
    # default so that building the parser does not import berth.traces.elastic.
    span = ElasticRange() if args.elastic_range is None else args.elastic_range
    cluster = None if args.cluster is None else str(resolve_trace(args.cluster))
    if cluster is not None and args.cluster_from_trace:
        raise InputConflict("--cluster and --cluster-from-trace: give one source of nodes")
    if args.cluster_from_trace and args.trace is None and not args.workload:
        raise InputConflict(
            "--cluster-from-trace: sizes a cluster for --trace or --workload; give one of them"
        )
    if args.trace is None:
        unread = _reading_without_trace(args, cluster)
        if unread:
            what = "a trace reading option" if len(unread) == 1 else "trace reading options"
            raise InputConflict(f"{', '.join(unread)}: {what}, only with --trace")
    if args.unknown_fields == "warn" and not args.workload and _machine_list(cluster) != "":
        print("warning: --unknown-fields: ignored (no manifest file is read)", file=sys.stderr)
    if args.trace is None and args.elastic_fraction:
        raise InputConflict("--elastic-fraction: only with --trace (it marks trace jobs elastic)")
    if span != ElasticRange() and not args.elastic_fraction:
        raise InputConflict("--elastic-range: only with --elastic-fraction (it shapes those jobs)")
    if args.trace is None and args.deadlines is not None:
        raise InputConflict("--deadlines: only with --trace (it draws trace jobs' deadlines)")
    if args.trace is None:
        given = selection_given(args)
        if given:
            raise InputConflict(f"{', '.join(given)}: only with --trace (they select trace jobs)")
    return InputSpec(
        cluster=cluster,
        workloads=tuple(str(w) for w in args.workload),
        trace=None if args.trace is None else str(resolve_trace(args.trace)),
        trace_format=args.trace_format,
        cluster_from_trace=args.cluster_from_trace,
        trace_options=trace_options(args),
        selection=_selection(args) if args.trace is not None else None,
        elastic_fraction=args.elastic_fraction,
        elastic_range=span,
        deadlines=args.deadlines,
        max_pods=args.max_pods,
        seed=args.seed,
        until=args.until,
        lenient=args.unknown_fields == "warn",
    )


def _machine_list(cluster: str | None) -> str | None:
    """The trace format of a machine list given as --cluster; "" for manifests, None for no
    --cluster."""
    from berth.sim.cluster_input import node_list_format

    return None if cluster is None else node_list_format(cluster) or ""


def _reading_without_trace(args: argparse.Namespace, cluster: str | None) -> list[str]:
    """Trace reading flags given without --trace that nothing else reads: a machine list as
    --cluster reads its rows (and machine memory, Alibaba 2018's), and a cluster sized from a
    workload takes --gpus-per-node."""
    listed = _machine_list(cluster)
    used = set()
    if listed:
        used.add("--on-bad-row")
        if listed in MEMORY_NORMALISED:
            used.add("--machine-memory")
    if args.cluster_from_trace:
        used.add("--gpus-per-node")
    return [flag for flag in reading_given(args) if flag not in used]


def _selection(args: argparse.Namespace) -> Selection:
    try:
        return selection(args)
    except ValueError as exc:
        raise InputConflict(f"--from/--to/--sample/--speedup: {exc}") from None
