"""Command-line arguments for reading a trace, shared by ``berth trace`` and by ``simulate`` /
``compare`` / ``bench --sim``, so a trace reads the same whichever command opens it.

Adding them to a parser imports nothing but light modules: what reads their values (the
object model, trace options, queue rules) is imported when a value is read, so that building
the whole command line, for ``--help`` or any one command, stays quick."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from berth.durations import DurationError, parse_span
from berth.traces.constants import DEFAULT_GPUS_PER_NODE, DEFAULT_MACHINE_MEMORY
from berth.traces.errors import ON_BAD_ROW

if TYPE_CHECKING:
    from berth.api.objects import NetworkTopology
    from berth.traces.deadlines import DeadlineRange
    from berth.traces.elastic import ElasticRange
    from berth.traces.model import TraceOptions
    from berth.traces.queues import QueueRule
    from berth.traces.select import Selection


def seconds(text: str) -> float:
    """argparse type: a time in seconds, or with units (90m, 2h, 1d)."""
    try:
        return parse_span(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """argparse type: a number > 0 (finite)."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} must be a number > 0")
        return value

    return parse


def fraction(text: str) -> float:
    """argparse type: a number from 0 to 1."""
    return _unit(text, zero=True)


def share(text: str) -> float:
    """argparse type: a number above 0, at most 1."""
    return _unit(text, zero=False)


def _unit(text: str, zero: bool) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if zero and not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} must be between 0 and 1")
    if not zero and not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} must be in (0, 1]")
    return value


def elastic_range(text: str) -> ElasticRange:
    """argparse type: LOW:HIGH (``berth.traces.elastic``)."""
    from berth.traces.elastic import parse_range

    try:
        return parse_range(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def deadline_range(text: str) -> DeadlineRange:
    """argparse type: LOW:HIGH (``berth.traces.deadlines``)."""
    from berth.traces.deadlines import parse_range

    try:
        return parse_range(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


def queue_rule(text: str) -> QueueRule:
    from berth.traces.queues import parse_queue_rule

    try:
        return parse_queue_rule(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def network_topology(text: str) -> NetworkTopology:
    """``hard`` or ``soft``, optionally ``:TIER`` (the highest tier allowed)."""
    from berth.api.objects import NetworkTopology

    mode, _, tier = text.partition(":")
    if mode not in ("hard", "soft"):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected hard or soft, optionally with :TIER (e.g. hard:1)"
        )
    highest = None
    if tier:
        try:
            highest = int(tier)
        except ValueError:
            highest = -1
        if highest < 0:
            raise argparse.ArgumentTypeError(f"{text!r}: the tier must be a whole number >= 0")
    return NetworkTopology(hard=mode == "hard", highest_tier=highest)


def add_reading_arguments(parser: argparse.ArgumentParser) -> None:
    """How trace rows become pods (everything TraceOptions holds but the queue rule)."""
    parser.add_argument(
        "--on-bad-row",
        choices=ON_BAD_ROW,
        default="fail",
        help="stop at the first malformed row, or skip and count malformed rows",
    )
    parser.add_argument(
        "--gpus-per-node",
        type=positive(int),
        default=DEFAULT_GPUS_PER_NODE,
        metavar="N",
        help="GPUs per worker when a trace gives only a job's GPU count (default %(default)s)",
    )
    parser.add_argument(
        "--max-instances",
        type=positive(int),
        metavar="N",
        help="cap the pods of one task (alibaba2017 has tasks of 60,000 instances)",
    )
    parser.add_argument(
        "--machine-memory",
        type=positive(int),
        default=DEFAULT_MACHINE_MEMORY,
        metavar="MIB",
        help="memory of a whole machine, for traces that give it normalised "
        "(alibaba2017, alibaba2018; default %(default)s)",
    )
    parser.add_argument(
        "--network-topology",
        type=network_topology,
        metavar="MODE[:TIER]",
        help="give every job of more than one pod a Volcano networkTopology: hard or soft, "
        "with the highest tier its pods may span (e.g. hard:1: within one rack's HyperNode)",
    )


def add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    """Which jobs of a trace to keep and when they arrive (the seed of --sample is --seed)."""
    parser.add_argument(
        "--from",
        dest="start",
        type=seconds,
        default=0.0,
        metavar="T",
        help="keep jobs submitted at or after T trace seconds (or 30m, 2h, 1d); T becomes time 0",
    )
    parser.add_argument(
        "--to", dest="end", type=seconds, metavar="T", help="keep jobs submitted before T"
    )
    parser.add_argument(
        "--sample", type=positive(int), metavar="N", help="keep N jobs chosen at random"
    )
    parser.add_argument(
        "--speedup",
        type=positive(float),
        default=1.0,
        metavar="X",
        help="divide the times between arrivals by X",
    )
    parser.add_argument(
        "--queues",
        type=queue_rule,
        metavar="SPEC",
        help="name:weight,... (each job to a queue by a hash of its name, in proportion to the "
        "weights), by-size (small ≤1 GPU, medium ≤8, large) or trace (the default: the trace's "
        "own queues, e.g. Philly and Helios virtual clusters)",
    )


def trace_options(args: argparse.Namespace) -> TraceOptions:
    from berth.traces.model import TraceOptions

    options = TraceOptions(
        gpus_per_node=args.gpus_per_node,
        normalized_memory=args.machine_memory,
        max_instances=args.max_instances,
        on_bad_row=args.on_bad_row,
        network_topology=getattr(args, "network_topology", None),
    )
    if getattr(args, "queues", None) is not None:
        options.queue_rule = args.queues
    return options


def selection(args: argparse.Namespace) -> Selection:
    """The jobs to keep; raises ValueError for a window that ends before it starts."""
    from berth.traces.select import Selection

    return Selection(args.start, args.end, args.sample, args.seed, args.speedup)


def selection_given(args: argparse.Namespace) -> list[str]:
    """The selection flags given on the command line (for refusing them where they mean
    nothing)."""
    given = []
    for flag, dest, default in (
        ("--from", "start", 0.0),
        ("--to", "end", None),
        ("--sample", "sample", None),
        ("--speedup", "speedup", 1.0),
        ("--queues", "queues", None),
    ):
        if getattr(args, dest) != default:
            given.append(flag)
    return given


#: Trace formats that give memory as a fraction of a machine, which ``--machine-memory`` scales.
MEMORY_NORMALISED = ("alibaba2017", "alibaba2018")
#: ``--bin``'s default (a load curve's bin width, seconds).
DEFAULT_BIN = 60.0


def reading_given(args: argparse.Namespace) -> list[str]:
    """The reading flags (``add_reading_arguments``, and ``--format`` and ``--bin`` where the
    command has them) given on the command line, as told by a value other than the default."""
    given = []
    for flag, dest, default in (
        ("--format", "trace_format", None),
        ("--format", "format", None),
        ("--on-bad-row", "on_bad_row", "fail"),
        ("--gpus-per-node", "gpus_per_node", DEFAULT_GPUS_PER_NODE),
        ("--max-instances", "max_instances", None),
        ("--machine-memory", "machine_memory", DEFAULT_MACHINE_MEMORY),
        ("--network-topology", "network_topology", None),
        ("--bin", "bin", DEFAULT_BIN),
    ):
        if getattr(args, dest, default) != default:
            given.append(flag)
    return given


def ignored_for(args: argparse.Namespace, kind: str, fmt: str) -> list[str]:
    """The reading and selection flags given that do nothing on a ``kind`` table ("jobs",
    "nodes", "load", "usage") of format ``fmt``."""
    used = {"--format", "--on-bad-row"}
    if kind == "jobs":
        used |= {"--gpus-per-node", "--max-instances", "--network-topology"}
        used |= {"--from", "--to", "--sample", "--speedup", "--queues"}
    if kind == "load":
        used.add("--bin")
    if fmt in MEMORY_NORMALISED:
        used.add("--machine-memory")
    given = reading_given(args) + (selection_given(args) if hasattr(args, "start") else [])
    return [flag for flag in dict.fromkeys(given) if flag not in used]
