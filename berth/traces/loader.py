"""Opening a trace: which format and table a file is, and the streams of jobs, nodes or usage.

Every entry point reads lazily and reports through a ``TraceLog`` reachable from what it returns
(``stream.log``, ``nodes.log``), so the caller can print the skipped and left-out rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from berth.api.keys import HOSTNAME_LABEL
from berth.api.objects import Node
from berth.api.problems import clip
from berth.traces.base import Kind, Sniff, Table, TraceFormat
from berth.traces.errors import TraceError, TraceLog
from berth.traces.formats import FORMATS
from berth.traces.formats.alibaba2018 import UsageSample
from berth.traces.formats.azure_llm import Request
from berth.traces.model import TRACE_ID_ANNOTATION, JobSpec, TraceJob, TraceOptions, build_job
from berth.traces.select import Selection, select

T = TypeVar("T")
U = TypeVar("U")


class Stream(Generic[T]):
    """An iterator over a trace that also carries the log of what happened to its rows."""

    def __init__(self, items: Iterator[T], log: TraceLog) -> None:
        self._items = items
        self.log = log

    def __iter__(self) -> Stream[T]:
        return self

    def __next__(self) -> T:
        return next(self._items)

    @property
    def skipped(self) -> list[str]:
        return self.log.skipped

    def map(self, function: Callable[[T], U]) -> Stream[U]:
        return Stream((function(item) for item in self._items), self.log)


class Nodes(list[Node]):
    """The nodes of a machine list, with the log of the rows read."""

    def __init__(self, nodes: Iterator[Node], log: TraceLog) -> None:
        super().__init__(nodes)
        self.log = log

    @property
    def skipped(self) -> list[str]:
        return self.log.skipped


#: How much of a file's first line a message quotes.
_QUOTED = 60


def detect_format(path: str | Path) -> str:
    """The format of ``path`` from its file name and first line."""
    sniff = Sniff.of(Path(path))
    for fmt in FORMATS.values():
        if any(table.matches(sniff) for table in fmt.tables):
            return fmt.name
    first = sniff.first_line.strip()
    quoted = first if len(first) <= _QUOTED else first[:_QUOTED] + "…"
    raise TraceError(
        f"{path}: unknown trace format: first line {quoted!r} is none of berth's "
        f"({', '.join(FORMATS)}; columns in docs/traces.md); name it with --format"
    )


def find_table(path: str | Path, fmt: str | None = None) -> tuple[TraceFormat, Table[Any]]:
    """The format and table of ``path``; ``fmt`` names the format instead of detecting it."""
    name = fmt or detect_format(path)
    trace_format = FORMATS.get(name)
    if trace_format is None:
        raise TraceError(f"unknown format {name!r} (expected one of {', '.join(FORMATS)})")
    sniff = Sniff.of(Path(path))
    for table in trace_format.tables:
        if table.matches(sniff):
            return trace_format, table
    if len(trace_format.tables) == 1:  # let the reader say what is wrong with the header
        return trace_format, trace_format.tables[0]
    expected = " or ".join(table.what for table in trace_format.tables)
    raise TraceError(f"{path}: not a {name} file (expected {expected})")


def _open(
    path: str | Path, fmt: str | None, kind: Kind, options: TraceOptions | None
) -> tuple[Iterator[Any], TraceLog]:
    options = options or TraceOptions()
    trace_format, table = find_table(path, fmt)
    if table.kind != kind:
        raise TraceError(
            f"{path}: is a {trace_format.name} {table.what}, which holds {table.kind}, not {kind}"
        )
    log = TraceLog(options.on_bad_row)
    return _not_empty(table.read(Path(path), options, log), log, path, table.kind), log


_ROW_KIND = {"jobs": "job", "nodes": "node", "usage": "usage", "load": "request"}


def _not_empty(items: Iterator[T], log: TraceLog, path: str | Path, kind: Kind) -> Iterator[T]:
    """``items``, failing at the end if the file held no data rows (a header at most): a run
    on nothing is a mistake to report, not an empty result."""
    yield from items
    if log.rows == 0:
        raise TraceError(f"{path}: no {_ROW_KIND[kind]} rows (a header at most)")


def iter_specs(
    path: str | Path,
    fmt: str | None = None,
    options: TraceOptions | None = None,
    selection: Selection | None = None,
) -> Stream[JobSpec]:
    """Jobs as the trace describes them, before they become pods (cheap: for statistics)."""
    specs, log = _open(path, fmt, "jobs", options)
    if selection is not None:
        specs = select(specs, selection, log)
    return Stream(specs, log)


def iter_jobs(
    path: str | Path,
    fmt: str | None = None,
    options: TraceOptions | None = None,
    selection: Selection | None = None,
) -> Stream[TraceJob]:
    """PodGroups and Pods of the trace's jobs, read row by row. Names are unique: a job whose
    name (or one of whose pod names) an earlier job took is renamed, and counted."""
    options = options or TraceOptions()
    specs = iter_specs(path, fmt, options, selection)
    return jobs_of(specs, specs.log, options)


def jobs_of(specs: Iterable[JobSpec], log: TraceLog, options: TraceOptions) -> Stream[TraceJob]:
    """The jobs ``specs`` describe (``iter_jobs`` over specs already read), counted in
    ``log``, the log of the rows they were read from."""
    return Stream(_unique_jobs(iter(specs), options, log), log)


RENAMED = (
    "jobs whose name an earlier job already has: renamed <name>-2, -3, ... "
    "(the trace's id is kept in berth.io/trace-id)"
)


def _unique_jobs(
    specs: Iterator[JobSpec], options: TraceOptions, log: TraceLog
) -> Iterator[TraceJob]:
    """Traces repeat job ids (a resubmission, ids that differ only in characters object names
    cannot hold); two objects with one name would be one object to the scheduler."""
    groups: set[str] = set()
    pods: set[str] = set()
    for spec in specs:
        built = TraceLog()  # what building counts, kept once however often a job is rebuilt
        job = build_job(spec, options, built)
        suffix = 1
        while job.group.key in groups or any(pod.key in pods for pod in job.pods):
            suffix += 1
            annotations = {TRACE_ID_ANNOTATION: spec.name, **spec.annotations}
            renamed = replace(spec, name=f"{spec.name}-{suffix}", annotations=annotations)
            built = TraceLog()
            job = build_job(renamed, options, built)
        log.adjusted.update(built.adjusted)
        if suffix > 1:
            log.adjusted[RENAMED] += 1
        groups.add(job.group.key)
        pods.update(pod.key for pod in job.pods)
        yield job


def load_nodes(
    path: str | Path, fmt: str | None = None, options: TraceOptions | None = None
) -> Nodes:
    """The nodes of a machine list (openb node list, PAI machine spec, Alibaba machine_meta)."""
    nodes, log = _open(path, fmt, "nodes", options)
    return Nodes(_once_each(nodes, log, path), log)


RENAMED_NODES = (
    "machines whose name an earlier machine already has once made a valid object name: "
    "renamed <name>-2, -3, ... (the trace's id is kept in berth.io/trace-id)"
)


def _once_each(nodes: Iterator[Node], log: TraceLog, path: str | Path) -> Iterator[Node]:
    """Each machine once, under a name of its own. A later row naming a machine again is a bad
    row (no cluster has two machines of one name, and which row to believe is not for berth to
    guess); two machines whose ids differ but become one object name (``m_1`` and ``m-1``) are
    both kept, the later one renamed and counted, as jobs are."""
    ids: set[str] = set()
    names: set[str] = set()
    for node in nodes:
        trace_id = node.annotations.get(TRACE_ID_ANNOTATION, node.name)
        if trace_id in ids:
            log.bad_row(str(path), f"node {clip(trace_id, 100)} is listed more than once")
            continue
        ids.add(trace_id)
        name, suffix = node.name, 1
        while name in names:
            suffix += 1
            name = f"{node.name}-{suffix}"
        if suffix > 1:
            labels = {**node.labels, HOSTNAME_LABEL: name}
            annotations = {**node.annotations, TRACE_ID_ANNOTATION: trace_id}
            node = replace(node, name=name, labels=labels, annotations=annotations)
            log.adjusted[RENAMED_NODES] += 1
        names.add(name)
        yield node


def iter_usage(
    path: str | Path, fmt: str | None = None, options: TraceOptions | None = None
) -> Stream[UsageSample]:
    """Machine utilisation samples (Alibaba 2018 machine_usage), row by row, each naming its
    machine as ``load_nodes`` names that machine's node: from the machine list beside the file
    (``machine_meta.csv``) when there is one, else by the same renaming rule over the machines
    of the usage file in the order they first appear."""
    samples, log = _open(path, fmt, "usage", options)
    return Stream(_named_as_nodes(samples, _node_names(Path(path), options), log), log)


def _node_names(path: Path, options: TraceOptions | None) -> dict[str, str]:
    """Trace id → node name of the machine list beside the usage file ``path`` (empty when
    there is none, or it cannot be read: the samples are then named by their own file)."""
    from berth.traces.formats.alibaba2018 import MACHINE_LIST

    meta = path.parent / MACHINE_LIST
    if not meta.is_file() or meta.resolve() == path.resolve():
        return {}
    lenient = replace(options or TraceOptions(), on_bad_row="skip")
    try:
        nodes = load_nodes(meta, None, lenient)
    except (TraceError, OSError, ValueError):
        return {}
    return {node.annotations.get(TRACE_ID_ANNOTATION, node.name): node.name for node in nodes}


def _named_as_nodes(
    samples: Iterator[UsageSample], known: dict[str, str], log: TraceLog
) -> Iterator[UsageSample]:
    """``samples`` with each machine under its node's name: ``known`` (trace id → name), and a
    machine it does not hold named as ``_once_each`` names nodes (renamed on a collision)."""
    names = dict(known)
    taken = set(names.values())
    for sample in samples:
        trace_id = sample.trace_id or sample.machine
        name = names.get(trace_id)
        if name is None:
            name, suffix = sample.machine, 1
            while name in taken:
                suffix += 1
                name = f"{sample.machine}-{suffix}"
            if suffix > 1:
                log.adjusted[RENAMED_NODES] += 1
            names[trace_id] = name
            taken.add(name)
        yield sample if name == sample.machine else sample._replace(machine=name)


def iter_load(
    path: str | Path, fmt: str | None = None, options: TraceOptions | None = None
) -> Stream[Request]:
    """Request arrivals of a load trace (Azure LLM), row by row."""
    requests, log = _open(path, fmt, "load", options)
    return Stream(requests, log)
