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
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from berth import __version__
from berth.bench_cli import add_bench_command
from berth.compare_cli import add_compare_command
from berth.fill_cli import add_fill_command
from berth.input_failures import EXIT_INPUT, input_errors, input_failure
from berth.input_options import add_input_arguments, input_spec
from berth.k8s_cli import add_k8s_commands
from berth.traces.cli import add_trace_commands
from berth.validate_cli import add_validate_command

if TYPE_CHECKING:
    from rich.console import Console

    from berth.api.loaded import Manifests
    from berth.report.plotter import Plotter
    from berth.sim.inputs import InputSpec
    from berth.sim.run import Inputs


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
    add_input_arguments(sim)
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

    add_compare_command(sub)
    add_trace_commands(sub)
    add_fill_command(sub)
    add_k8s_commands(sub)
    add_validate_command(sub)
    add_bench_command(sub)

    return parser


def _simulate(args: argparse.Namespace) -> int:
    from berth.collector import new_objects_only
    from berth.outputs import prepare_output
    from berth.report.plotter import Plotter
    from berth.sim.run import load_inputs

    # The report's figures are drawn beside the run (see berth.report.plotter).
    plotter = Plotter().start("berth.report.html")
    # The inputs live as long as the run, and the run's pods as long as its outputs.
    try:
        with new_objects_only():
            try:
                spec = input_spec(args)
                inputs = load_inputs(spec, args.config)
                overwrite = prepare_output(args.out, args.force)
            except input_errors() as exc:
                return input_failure(exc)
            return _run(args, spec, inputs, overwrite, plotter)
    finally:
        plotter.close()


def _run(
    args: argparse.Namespace,
    spec: InputSpec,
    inputs: Inputs,
    overwrite: str | None,
    plotter: Plotter,
) -> int:
    """Simulate loaded inputs, write the outputs and print the summary."""
    from rich.console import Console

    from berth.metrics.provenance import describe
    from berth.outputs import write_outputs
    from berth.progress import bars, simulated_time
    from berth.progress import shown as progress_shown
    from berth.report.console import summary_table
    from berth.sim.engine import expected_end
    from berth.sim.run import simulate, until_cuts_nothing

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
    summary, report = write_outputs(result, args.out, provenance, plotter)
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


def _workload_size(manifests: Manifests) -> str:
    """Nodes and what will run on them: pods, and Volcano Jobs with the pods they make."""
    text = f"{len(manifests.nodes):,} nodes, {len(manifests.pods):,} pods"
    if manifests.jobs:
        replicas = sum(job.replicas for job in manifests.jobs)
        jobs = "Volcano Job" if len(manifests.jobs) == 1 else "Volcano Jobs"
        text += f", {len(manifests.jobs):,} {jobs} ({replicas:,} task replicas)"
    return text


def run() -> None:
    """The ``berth`` program. The process ends with the command, so what the command made is
    frozen out of the interpreter's last collection, which would walk it all to free nothing
    (a quarter of a second after a 60-day trace)."""
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    run()
