"""A trace as simulation input: its jobs as PodGroups and Pods, and a cluster for them.

The cluster comes from ``--cluster`` (manifests), or with ``--cluster-from-trace`` from the node
list published beside the trace (openb, PAI), or else from the stated sizing rule in
``cluster_sizing``. Every adjustment the loader made (skipped rows, capped instances, raised
durations) comes back as a note for the user; nothing is dropped silently.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path

from berth.api.keys import DEFAULT_QUEUE
from berth.api.loaded import Manifests
from berth.api.objects import Queue
from berth.sim.cluster_input import load_cluster, node_list_format
from berth.sim.cluster_sizing import SizingRule, size_cluster
from berth.sim.inputs import InputError, InputSpec
from berth.traces import (
    JobSpec,
    TraceError,
    TraceOptions,
    detect_format,
    iter_specs,
    jobs_of,
    load_nodes,
)
from berth.traces.arguments import MEMORY_NORMALISED
from berth.traces.constants import DEFAULT_MACHINE_MEMORY
from berth.traces.deadlines import DeadlineDraw
from berth.traces.elastic import elastic_job

#: Node lists published next to a trace's job file, by format (the file names tried in order).
COMPANION_NODES: dict[str, tuple[str, ...]] = {
    "openb": ("openb_node_list_all_node.csv", "openb_node_list_gpu_node.csv"),
    "pai": ("pai_machine_spec.csv",),
}


def trace_manifests(spec: InputSpec) -> tuple[Manifests, list[str], list[str]]:
    """Objects for a run on ``spec.trace``, warnings (rows skipped or changed) and notes (how
    the cluster was chosen) to show the user."""

    assert spec.trace is not None
    options = spec.trace_options
    notes: list[str] = []
    try:
        fmt = spec.trace_format or detect_format(spec.trace)
        specs = iter_specs(spec.trace, fmt, options, spec.selection)
        # One pass over the rows: the jobs are counted (and a run too large refused) before
        # any pod is built, then built from the specs kept, each let go once built.
        kept, size = _size_check(spec, specs)
        notes.append(size)
        stream = jobs_of(_drained(kept), specs.log, options)
        manifests = Manifests()
        fraction = spec.elastic_fraction
        trace_pods = []  # every job's pods as the trace gives them: what the cluster is sized by
        draw = None if spec.deadlines is None else DeadlineDraw(spec.deadlines, spec.seed)
        for job in stream:
            trace_pods.extend(job.pods)
            elastic = elastic_job(job, fraction, spec.elastic_range) if fraction else None
            if draw is not None:
                durations = [p.duration for p in job.pods if p.duration is not None]
                draw.annotate(job.group, max(durations, default=None), elastic)
            if elastic is not None:
                manifests.jobs.append(elastic)
                continue
            manifests.groups.append(job.group)
            manifests.pods.extend(job.pods)
    except (TraceError, ValueError, OSError) as exc:
        raise InputError(
            f"{spec.trace}: {exc}" if not str(exc).startswith(spec.trace) else str(exc)
        ) from exc
    warnings = [f"{spec.trace}: {line}" for line in stream.log.lines()]
    if options.normalized_memory != DEFAULT_MACHINE_MEMORY and fmt not in MEMORY_NORMALISED:
        cluster_format = None if spec.cluster is None else node_list_format(spec.cluster)
        if cluster_format not in MEMORY_NORMALISED:
            nor = "" if spec.cluster is None else ", nor on --cluster"
            warnings.append(f"--machine-memory: ignored (no effect on {fmt} jobs{nor})")
    manifests.queues.extend(_queues(manifests, options))
    if spec.cluster is not None:
        try:
            cluster = load_cluster(spec.cluster, options)
        except TraceError as exc:
            raise InputError(str(exc)) from exc
        manifests.nodes.extend(cluster.nodes)
        manifests.hypernodes.extend(cluster.hypernodes)
        manifests.problems.extend(cluster.problems)
    elif spec.cluster_from_trace:
        try:
            nodes, note = _trace_nodes(spec.trace, fmt, options)
        except TraceError as exc:
            raise InputError(str(exc)) from exc
        if nodes is None:
            nodes, note = size_cluster(
                trace_pods,
                SizingRule(
                    gpus_per_node=options.gpus_per_node,
                    cpu_per_gpu=options.cpu_per_gpu,
                    memory_per_gpu=options.memory_per_gpu,
                ),
            )
        manifests.nodes.extend(nodes)
        notes.append(note)
    else:
        raise InputError(
            f"{spec.trace}: a trace needs a cluster: give --cluster FILE or --cluster-from-trace"
        )
    return manifests, warnings, notes


#: Memory a simulated pod costs, roughly (objects, events, accounting), for the estimate:
#: measured as the peak growth between the 10- and 40-minute windows of Alibaba 2017 (489 B).
_BYTES_PER_POD = 500


def _size_check(spec: InputSpec, specs: Iterable[JobSpec]) -> tuple[deque[JobSpec], str]:
    """The trace's ``specs``, and how many jobs and pods they make, before any pod is built; a
    run larger than ``spec.max_pods`` is refused here, with what to do instead. The rows are
    all counted, but specs are kept only while within ``max_pods``: a trace refused for its
    size costs no more memory than one that is not."""

    cap = spec.trace_options.max_instances
    kept: deque[JobSpec] = deque()
    jobs = pods = 0
    for job in specs:
        jobs += 1
        pods += sum(task.count if cap is None else min(task.count, cap) for task in job.tasks)
        if pods <= spec.max_pods:
            kept.append(job)
    size = f"{jobs:,} jobs, {pods:,} pods (about {pods * _BYTES_PER_POD / 1e9:.1f} GB to simulate)"
    if pods > spec.max_pods:
        raise InputError(
            f"{spec.trace}: {size}: more than --max-pods {spec.max_pods:,}; keep fewer with "
            "--sample N, --from/--to or --max-instances N, or raise --max-pods"
        )
    return kept, f"{spec.trace}: {size}"


def _drained(specs: deque[JobSpec]) -> Iterator[JobSpec]:
    """``specs`` in order, each dropped as it is handed out."""
    while specs:
        yield specs.popleft()


def _queues(manifests: Manifests, options: TraceOptions) -> list[Queue]:
    """The rule's queues, plus one (weight 1) for every other queue a job names, so that jobs
    of a trace's own virtual clusters are not stuck in a queue that does not exist."""
    queues = {q.name: q for q in options.queue_rule.queues()}
    for group in manifests.groups:
        if group.queue not in queues and group.queue != DEFAULT_QUEUE:
            queues[group.queue] = Queue(group.queue)
    return list(queues.values())


def _trace_nodes(trace: str, fmt: str, options: TraceOptions) -> tuple[list | None, str]:
    folder = Path(trace).parent
    for name in COMPANION_NODES.get(fmt, ()):
        path = folder / name
        if path.is_file():
            nodes = load_nodes(path, fmt, options)
            return list(nodes), f"cluster from the trace's node list {path} ({len(nodes)} nodes)"
    return None, ""
