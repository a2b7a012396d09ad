"""Alibaba cluster-trace-gpu-v2025: ``disaggregated_DLRM_trace.csv``, the inference instances
of GPU-disaggregated recommendation serving (NSDI'25).

Every row is one long-running, latency-sensitive instance: a job of one pod named after
``instance_sn``, with ``cpu_request`` cores, ``memory_request`` GiB and ``gpu_request`` whole
GPUs (CN instances ask none, HN instances one). Times are seconds from the trace start; an empty
(NaN) ``creation_time`` means the instance existed before the trace began, so it is submitted at
0; an empty ``deletion_time`` means it outlived the trace, so it runs to the end of the
simulation. ``scheduled_time`` is the production scheduler's decision, which the simulation
makes afresh. ``role`` and ``app_name`` become annotations. Not modelled, and counted when a
row sets them: ``max_instance_per_node`` (a per-node cap on one app's instances, which no
Kubernetes primitive expresses) and the RDMA and disk requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.traces.base import Table, TraceFormat, has_columns
from berth.traces.constants import ALIBABA2025
from berth.traces.errors import RowError, TraceLog
from berth.traces.model import MILLI, JobSpec, Task, TraceOptions, scaled, trace_name
from berth.traces.rows import Row, guard, read_csv

COLUMNS = (
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "cpu_limit",
    "gpu_request",
    "gpu_limit",
    "rdma_request",
    "rdma_limit",
    "memory_request",
    "memory_limit",
    "disk_request",
    "disk_limit",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
)
REQUIRED = ("instance_sn", "cpu_request", "gpu_request", "memory_request", "creation_time")
APP_ANNOTATION = "berth.io/app"
ROLE_ANNOTATION = "berth.io/instance-role"
DENSITY = "instances with a max_instance_per_node limit, which is not enforced"
_MIB_PER_GIB = 1024


def read_instances(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, COLUMNS, header=True, required=REQUIRED)
    return guard(rows, lambda row: _instance(row, log), log, path)


def _time(row: Row, column: str) -> float | None:
    """Seconds, or None for the empty (or NaN) value that marks a time outside the trace."""
    text = row.text(column)
    if not text or text.lower() == "nan":
        return None
    return row.number(column, "seconds from the trace start, or empty")


def _instance(row: Row, log: TraceLog) -> JobSpec:
    annotations: dict[str, str] = {}
    name = trace_name(row.required("instance_sn", "an instance id"), annotations)
    created = _time(row, "creation_time")
    deleted = _time(row, "deletion_time")
    submit = 0.0 if created is None else created
    if deleted is not None and deleted < submit:
        raise RowError(f"deletion_time {deleted:g} is before creation_time {submit:g}")
    density = row.optional_number("max_instance_per_node", "an instance count, or -1")
    for column, annotation in (("app_name", APP_ANNOTATION), ("role", ROLE_ANNOTATION)):
        if row.text(column):
            annotations[annotation] = row.text(column)
    task = Task(
        count=1,
        cpu=scaled(row.number("cpu_request", "cores >= 0", minimum=0), MILLI),
        memory=scaled(row.number("memory_request", "GiB >= 0", minimum=0), _MIB_PER_GIB),
        gpu=scaled(row.number("gpu_request", "GPUs >= 0", minimum=0), MILLI),
        duration=None if deleted is None else deleted - submit,
    )
    if density is not None and density != -1:
        log.adjusted[DENSITY] += 1
    return JobSpec(name=name, submit=submit, tasks=[task], gang=False, annotations=annotations)


FORMAT = TraceFormat(
    ALIBABA2025,
    "Alibaba cluster-trace-gpu-v2025: DLRM inference instances (disaggregated_DLRM_trace.csv)",
    (
        Table(
            "jobs",
            f"instances ({','.join(REQUIRED)},...)",
            has_columns(*REQUIRED),
            read_instances,
        ),
    ),
)
