"""From what a trace says about a job to berth's PodGroup and Pods.

Every format parses its rows into a ``JobSpec`` — the job's name, arrival, and tasks as
"``count`` pods of this shape" — and ``build_job`` turns any JobSpec into objects. The split keeps
unit conventions and the few decisions that shape a workload (how GPUs spread over workers, what
a CPU-only job asks for, instance caps) in one place, and lets ``trace info`` summarise a trace
from the compact specs without building millions of Pod objects.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cache

from berth.api.keys import GPU_PRODUCT_LABEL, HOSTNAME_LABEL
from berth.api.nodes import DEFAULT_NODE_PODS
from berth.api.objects import NetworkTopology, Node, Pod, PodGroup
from berth.api.pod import DEFAULT_SETTINGS, PodSettings
from berth.api.selectors import Affinity, NodeSelectorTerm, Requirement
from berth.resources import CPU, GPU, MAX_AMOUNT, MEMORY, MIB, PODS
from berth.traces.constants import DEFAULT_GPUS_PER_NODE, DEFAULT_MACHINE_MEMORY
from berth.traces.errors import ON_BAD_ROW, RowError, TraceLog
from berth.traces.names import dns_name
from berth.traces.queues import QueueRule, TraceQueues

JOB_LABEL = "berth.io/job"
ROLE_LABEL = "berth.io/role"
TRACE_ID_ANNOTATION = "berth.io/trace-id"
USER_ANNOTATION = "berth.io/user"
STATUS_ANNOTATION = "berth.io/status"  # how the job ended in the trace (Pass, Failed, ...)
MILLI = 1000
#: The most pods one task of a trace may have (alibaba2017's largest task has about 60,000):
#: beyond this a row is a mistake, and building it would exhaust memory.
MAX_TASK_PODS = 1_000_000


@dataclass
class TraceOptions:
    """How trace rows become pods where the trace leaves something out.

    GPU traces give GPU counts only: a job's GPUs are spread over ``ceil(gpus / gpus_per_node)``
    workers, and each worker asks ``cpu_per_gpu`` millicores and ``memory_per_gpu`` MiB per GPU —
    by default 8 cores and 64 GiB, an 8-GPU server's 64 cores and 512 GiB shared evenly; a job
    with no GPU asks ``cpu_only_cpu`` / ``cpu_only_memory``. Traces that give memory as a
    fraction of a machine (Alibaba 2017 and 2018) are scaled by ``normalized_memory`` MiB.
    ``max_instances`` caps the pods of one task (None: no cap; capping is reported, never
    silent). Durations under ``min_duration`` seconds are raised to it, because berth requires a
    positive duration; this is reported too.
    """

    gpus_per_node: int = DEFAULT_GPUS_PER_NODE
    cpu_per_gpu: int = 8000  # millicores
    memory_per_gpu: int = 64 * 1024  # MiB
    cpu_only_cpu: int = 4000  # millicores
    cpu_only_memory: int = 16 * 1024  # MiB
    normalized_memory: int = DEFAULT_MACHINE_MEMORY  # MiB of a whole machine
    max_instances: int | None = None
    min_duration: float = 1.0  # seconds
    on_bad_row: str = "fail"  # or "skip"
    queue_rule: QueueRule = field(default_factory=TraceQueues)
    #: Given to the PodGroup of every job of more than one pod (traces say nothing of it).
    network_topology: NetworkTopology | None = None

    def __post_init__(self) -> None:
        if self.on_bad_row not in ON_BAD_ROW:
            raise ValueError(f"on_bad_row must be one of {', '.join(ON_BAD_ROW)}")
        for name in ("gpus_per_node", "cpu_per_gpu", "memory_per_gpu", "normalized_memory"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_instances is not None and self.max_instances < 1:
            raise ValueError("max_instances must be >= 1 (or None for no cap)")
        if not self.min_duration > 0:
            raise ValueError("min_duration must be > 0")


@dataclass(slots=True)
class Task:
    """``count`` identical pods: millicores, MiB (the unit traces record memory in; the pods
    get bytes) and milli-GPU."""

    count: int
    cpu: int
    memory: int
    gpu: int = 0
    duration: float | None = None  # seconds; None runs until the simulation ends
    role: str = ""  # part of the pod names when a job has several roles (ps, worker)

    def __post_init__(self) -> None:
        # Raised while the row is parsed, so a bad row is reported (or skipped) as such
        # before anything is built from it.
        if self.count > MAX_TASK_PODS:
            raise RowError(
                f"{self.count:,} instances in one task: more than berth builds for one task "
                f"({MAX_TASK_PODS:,})"
            )
        for what, amount in (("cpu", self.cpu), ("memory", self.memory * MIB), ("gpu", self.gpu)):
            if amount > MAX_AMOUNT:
                raise RowError(f"{what} request {amount:,} is too large (at most {MAX_AMOUNT:.0e})")


@dataclass(slots=True)
class JobSpec:
    """One job as the trace describes it; names are already valid object names."""

    name: str
    submit: float
    tasks: list[Task]
    gang: bool = True  # all pods at once (minMember = pods), or any one (minMember 1)
    queue: str = ""  # the trace's own queue, if it has one
    annotations: dict[str, str] = field(default_factory=dict)
    gpu_products: tuple[str, ...] = ()  # required nvidia.com/gpu.product values
    priority_class: str = ""
    priority: int = 0

    @property
    def pods(self) -> int:
        return sum(task.count for task in self.tasks)

    @property
    def gpu(self) -> int:
        return sum(task.count * task.gpu for task in self.tasks)

    @property
    def cpu(self) -> int:
        return sum(task.count * task.cpu for task in self.tasks)

    @property
    def duration(self) -> float | None:
        """The longest task's; None if any task runs to the end."""
        longest = 0.0
        for task in self.tasks:
            if task.duration is None:
                return None
            longest = max(longest, task.duration)
        return longest


@dataclass
class TraceJob:
    group: PodGroup
    pods: list[Pod]


def scaled(value: float, scale: float) -> int:
    """``value × scale`` rounded up to a whole canonical unit (requests round up, as Kubernetes
    rounds quantities), ignoring float noise such as 0.1 × 3 × 10 = 3.0000000000000004."""
    return math.ceil(round(value * scale, 6))


def trace_name(raw: str, annotations: dict[str, str]) -> str:
    """``raw`` as an object name; when that changes it, the original goes into ``annotations``
    so results can be joined back to the trace."""
    name = dns_name(raw)
    if name != raw:
        annotations[TRACE_ID_ANNOTATION] = raw
    return name


def split_evenly(total: int, parts: int) -> list[int]:
    """``total`` over ``parts`` as evenly as possible, larger shares first: 12 over 2 is 6+6.

    Even shares pack better than full nodes plus a remainder (8+4): two half-free nodes can
    take 6+6, and equal workers are what data-parallel training runs anyway.
    """
    if parts > MAX_TASK_PODS:
        raise RowError(
            f"{parts:,} workers in one job: more than berth builds for one task ({MAX_TASK_PODS:,})"
        )
    share, extra = divmod(total, parts)
    return [share + 1] * extra + [share] * (parts - extra)


def gpu_job_tasks(gpus: int, options: TraceOptions, duration: float | None) -> list[Task]:
    """A job known only by its GPU count: ``ceil(gpus / gpus_per_node)`` workers."""
    workers = max(1, math.ceil(gpus / options.gpus_per_node))
    return worker_tasks(split_evenly(gpus, workers), options, duration)


def worker_tasks(
    gpus: list[int],
    options: TraceOptions,
    duration: float | None,
    cpus: list[int] | None = None,
) -> list[Task]:
    """One worker per entry of ``gpus`` (whole GPUs each), grouped into tasks of equal shape.

    CPU comes from ``cpus`` (millicores per worker) when the trace gives it, else from the GPU
    count; memory always from the GPU count (no GPU trace here records memory).
    """
    tasks: dict[tuple[int, int, int], Task] = {}
    for index, count in enumerate(gpus):
        cpu = count * options.cpu_per_gpu if count else options.cpu_only_cpu
        if cpus is not None and cpus[index] > 0:
            cpu = cpus[index]
        memory = count * options.memory_per_gpu if count else options.cpu_only_memory
        shape = (cpu, memory, count * MILLI)
        task = tasks.get(shape)
        if task is None:
            tasks[shape] = Task(1, cpu, memory, count * MILLI, duration)
        else:
            task.count += 1
    return list(tasks.values())


def build_job(spec: JobSpec, options: TraceOptions, log: TraceLog) -> TraceJob:
    """The PodGroup and Pods of ``spec``.

    Pods are named ``<job>-<index>`` or ``<job>-<role>-<index>``; a job of a single role-less pod
    names its pod after the job. ``minResources`` is the sum of the first ``minMember`` pods.
    """
    pods = list(_pods(spec, options, log))
    min_member = len(pods) if spec.gang else 1
    min_resources: dict[str, int] = {}
    for pod in pods[:min_member]:
        for name, amount in pod.requests.items():
            if name != PODS:
                min_resources[name] = min_resources.get(name, 0) + amount
    gpu = sum(pod.requests.get(GPU, 0) for pod in pods)
    group = PodGroup(
        name=spec.name,
        min_member=min_member,
        min_resources=min_resources,
        queue=options.queue_rule.queue_for(spec.name, spec.queue, gpu),
        priority_class_name=spec.priority_class,
        priority=spec.priority,
        submit_time=spec.submit,
        network_topology=options.network_topology if len(pods) > 1 else None,
    )
    return TraceJob(group, pods)


def _pods(spec: JobSpec, options: TraceOptions, log: TraceLog) -> Iterator[Pod]:
    single = len(spec.tasks) == 1 and spec.tasks[0].count == 1 and not spec.tasks[0].role
    settings = _settings(spec.gpu_products, spec.priority_class)
    next_index: dict[str, int] = {}
    for task in spec.tasks:
        count = task.count
        if options.max_instances is not None and count > options.max_instances:
            log.adjusted[f"tasks capped at {options.max_instances} instances"] += 1
            count = options.max_instances
        duration = task.duration
        if duration is not None and duration < options.min_duration:
            log.adjusted[f"tasks shorter than {options.min_duration:g}s (raised to it)"] += 1
            duration = options.min_duration
        requests = {CPU: task.cpu, MEMORY: task.memory * MIB, PODS: 1}
        if task.gpu:
            requests[GPU] = task.gpu
        labels = {JOB_LABEL: spec.name}
        if task.role:
            labels[ROLE_LABEL] = task.role
        first = next_index.get(task.role, 0)
        next_index[task.role] = first + count
        # A task's pods share one labels, one annotations and one requests dict, and pods of
        # alike jobs their settings (millions of pods on Alibaba's traces; an empty dict is 64
        # bytes): berth replaces a pod's dicts rather than writing into them.
        annotations = dict(spec.annotations)
        for index in range(first, first + count):
            parts = (spec.name, task.role, str(index))
            yield Pod(
                name=spec.name if single else "-".join(p for p in parts if p),
                labels=labels,
                annotations=annotations,
                requests=requests,
                priority=spec.priority,
                settings=settings,
                group=spec.name,
                submit_time=spec.submit,
                duration=duration,
            )


@cache
def _settings(products: tuple[str, ...], priority_class: str) -> PodSettings:
    """The settings of a trace's pods: one object for each GPU models and priority class."""
    affinity = DEFAULT_SETTINGS.affinity
    if products:
        requirement = Requirement(GPU_PRODUCT_LABEL, "In", products)
        affinity = Affinity(node_required=(NodeSelectorTerm(expressions=(requirement,)),))
    return replace(DEFAULT_SETTINGS, affinity=affinity, priority_class_name=priority_class)


def trace_node(
    raw_name: str,
    cpu: int,
    memory: int,
    gpus: int,
    product: str = "",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Node:
    """A node of a machine list: ``cpu`` millicores, ``memory`` MiB, ``gpus`` whole devices;
    ``product`` (the GPU model) becomes the ``nvidia.com/gpu.product`` label."""
    notes = dict(annotations or {})
    name = trace_name(raw_name, notes)
    all_labels = {HOSTNAME_LABEL: name, **(labels or {})}
    if product:
        all_labels[GPU_PRODUCT_LABEL] = product
    allocatable = {CPU: cpu, MEMORY: memory * MIB, PODS: DEFAULT_NODE_PODS}
    if gpus:
        allocatable[GPU] = gpus * MILLI
    for resource, amount in allocatable.items():
        if amount > MAX_AMOUNT:  # the limit a Node manifest has: convert must write valid ones
            raise RowError(f"{resource} {amount:,} is too large (at most {MAX_AMOUNT:.0e})")
    return Node(name=name, labels=all_labels, annotations=notes, allocatable=allocatable)
