"""The ``berth`` command line.

Every command, ``--help`` included, builds the whole parser first, so building it imports only
argparse and light modules of names and defaults (``berth.defaults``, the trace arguments); a
command imports what it runs, the simulator, the report or the Kubernetes client, when it runs.
``tests/cli/test_startup.py`` checks that the parser stays light.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from berth import __version__
from berth.bench_cli import add_bench_command
from berth.defaults import DEFAULT_MAX_PODS
from berth.executors import add_executor_argument
from berth.fill_cli import add_fill_command
from berth.input_failures import EXIT_INPUT, InputConflict, input_errors, input_failure
from berth.k8s_cli import add_k8s_commands
from berth.traces.arguments import (
    MEMORY_NORMALISED,
    add_reading_arguments,
    add_selection_arguments,
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
from berth.traces.cli import add_trace_commands
from berth.traces.constants import FORMAT_NAMES
from berth.validate_cli import add_unknown_fields, add_validate_command

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from berth.api.manifest import Manifests
    from berth.compare import RunProgress
    from berth.sim.inputs import InputSpec
    from berth.traces.select import Selection


EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a command SIGINT stopped


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    args.command = ["berth", *argv]  # as run, for the provenance of what it writes
    out = getattr(args, "out", None)
    before = _files_in(out)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        written = _files_in(out) - before
        what = f"; written to {out}: {', '.join(sorted(written))}" if written else ""
        print(f"interrupted{what}", file=sys.stderr)
        return EXIT_INTERRUPTED


def _files_in(folder: Path | None) -> set[str]:
    """The files directly in ``folder`` (none when it is not there)."""
    if folder is None or not Path(folder).is_dir():
        return set()
    return {p.name for p in Path(folder).iterdir() if p.is_file()}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="berth",
        description="Schedule mixed online, batch and training workloads; simulate on traces.",
    )
    parser.add_argument("--version", action="version", version=f"berth {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sim = sub.add_parser(
        "simulate",
        help="run a simulation and write a report",
        description="Replay a cluster and its workload (manifests, a trace, or both) through "
        "berth's scheduler in simulated time, then write a summary, CSVs, plots and an HTML "
        "report into --out. With no inputs it runs the built-in scenario: one simulated day of "
        "a 60-node mixed cluster (what `make demo` shows).",
    )
    _add_input_arguments(sim)
    sim.add_argument(
        "--config",
        type=Path,
        help="scheduler configuration (YAML), or 'default' for the built-in one (the default)",
    )
    sim.add_argument(
        "--out",
        type=Path,
        default=Path("out/simulation"),
        help="output directory (default: out/simulation)",
    )
    sim.add_argument("--quiet", action="store_true", help="no progress bar or table")
    sim.add_argument("--force", action="store_true", help="write into a non-empty --out folder")
    sim.add_argument(
        "--explain",
        action="append",
        default=[],
        metavar="POD",
        help="record why pods matching POD (a name or namespace/name, * and ? allowed; "
        "repeatable) were placed or refused: explain.json, the report, berth explain",
    )
    sim.set_defaults(handler=_simulate)

    why = sub.add_parser("explain", help="why a pod of a finished run went where it went")
    why.add_argument("pods", nargs="+", metavar="POD", help="pod name or namespace/name (globs)")
    why.add_argument(
        "--out", type=Path, required=True, help="the run's output folder (simulate --explain)"
    )
    why.set_defaults(handler=_explain)

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

    add_trace_commands(sub)
    add_fill_command(sub)
    add_k8s_commands(sub)
    add_validate_command(sub)
    add_bench_command(sub)

    return parser


def _add_input_arguments(parser: argparse.ArgumentParser) -> None:
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


def _input_spec(args: argparse.Namespace) -> InputSpec:
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


def _simulate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.metrics.provenance import describe
    from berth.outputs import prepare_output, write_outputs
    from berth.progress import bars, simulated_time
    from berth.progress import shown as progress_shown
    from berth.report.console import summary_table
    from berth.sim.engine import expected_end
    from berth.sim.run import load_inputs, simulate, until_cuts_nothing

    try:
        spec = _input_spec(args)
        inputs = load_inputs(spec, args.config)
        overwrite = prepare_output(args.out, args.force)
    except input_errors() as exc:
        return input_failure(exc)
    # The inputs live as long as the run: the collector's full passes need not walk them.
    gc.freeze()
    if overwrite:
        inputs.notes.append(overwrite)
    for warning in inputs.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for note in inputs.notes:
        print(f"note: {note}", file=sys.stderr)
    show = not args.quiet
    console = Console()
    if show:
        console.print(
            f"[bold]berth[/bold] simulating {inputs.label}: {_workload_size(inputs.manifests)}",
            soft_wrap=True,
        )
    if show and progress_shown():
        horizon = expected_end(inputs.manifests.pods, inputs.until)
        with bars() as display:
            _, update = simulated_time(display, "simulating", horizon)
            result = simulate(inputs, spec.seed, progress=update, explain=args.explain)
    else:
        result = simulate(inputs, spec.seed, explain=args.explain)
    if args.until is not None and result.quiet_from is not None:
        print(f"warning: {until_cuts_nothing(args.until, result.quiet_from)}", file=sys.stderr)
    provenance = describe(spec, inputs.config, inputs.notes, args.command)
    summary, report = write_outputs(result, args.out, provenance)
    if show:
        console.print(summary_table(summary))
        if args.explain:
            _print_explained(console, args.out)
        console.print(f"report: {report}", soft_wrap=True)
    return 0


#: Explained pods printed after a simulation; past this many, only a pointer.
_PRINTED_EXPLANATIONS = 3


def _print_explained(console: Console, out: Path) -> None:
    from berth.outputs import EXPLAIN_FILE
    from berth.report.explained import explained_console

    pods = json.loads((out / EXPLAIN_FILE).read_text())["pods"]
    if not pods:
        console.print("explained: no pod matched --explain", highlight=False)
        return
    if len(pods) <= _PRINTED_EXPLANATIONS:
        for pod in pods:
            console.print(explained_console(pod))
    console.print(
        f"explained {len(pods)} pods: in the report, and berth explain POD --out {out}",
        highlight=False,
        soft_wrap=True,
    )


def _explain(args: argparse.Namespace) -> int:
    """Print the recorded decisions of the pods asked for, from a run's explain.json."""
    from fnmatch import fnmatchcase

    from rich.console import Console

    from berth.outputs import EXPLAIN_FILE
    from berth.report.explained import explained_console

    path = args.out / EXPLAIN_FILE
    if not path.is_file():
        rerun = " ".join(_recorded_command(args.out)) or "berth simulate ..."
        print(
            f"error: {args.out}: no {EXPLAIN_FILE}; that run explained no pod. Run it again "
            f"asking for the pod: {rerun} --explain {args.pods[0]}",
            file=sys.stderr,
        )
        return EXIT_INPUT
    try:
        recorded = json.loads(path.read_text())
        pods = recorded["pods"]
    except (ValueError, KeyError, TypeError) as exc:
        print(f"error: {path}: not an explain file berth wrote ({exc})", file=sys.stderr)
        return EXIT_INPUT
    console = Console()
    for pattern in args.pods:
        matched = [
            pod
            for pod in pods
            if fnmatchcase(pod["pod"], pattern) or fnmatchcase(pod["pod"].split("/")[-1], pattern)
        ]
        if not matched:
            asked = ", ".join(recorded.get("patterns", []))
            print(
                f"error: {path}: no explained pod matches {pattern!r} (the run explained "
                f"pods matching {asked}; simulate again with --explain {pattern})",
                file=sys.stderr,
            )
            return EXIT_INPUT
        for pod in matched:
            console.print(explained_console(pod))
    return 0


def _recorded_command(out: Path) -> list[str]:
    """The command that wrote ``out``, as its summary.json recorded it (empty if unknown)."""
    try:
        summary = json.loads((out / "summary.json").read_text())
        return [str(word) for word in summary["provenance"]["command"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


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


def _workload_size(manifests: Manifests) -> str:
    """Nodes and what will run on them: pods, and Volcano Jobs with the pods they make."""
    text = f"{len(manifests.nodes):,} nodes, {len(manifests.pods):,} pods"
    if manifests.jobs:
        replicas = sum(job.replicas for job in manifests.jobs)
        jobs = "Volcano Job" if len(manifests.jobs) == 1 else "Volcano Jobs"
        text += f", {len(manifests.jobs):,} {jobs} ({replicas:,} task replicas)"
    return text


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
        spec = _input_spec(args)
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


if __name__ == "__main__":
    sys.exit(main())
