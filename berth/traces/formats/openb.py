"""Alibaba cluster-trace-gpu-v2023 ("openb", ATC'23): GPU-sharing pods and the nodes they ran on.

Pods ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
deletion_time,scheduled_time``: one pod per row, a group of one. The GPU request is
``num_gpu × gpu_milli`` milli-GPU, so a ``gpu_milli`` under 1000 is a fraction of one device.
``gpu_spec`` ("V100M16|V100M32") becomes required node affinity on ``nvidia.com/gpu.product``.
``qos`` goes into the ``berth.io/qos`` annotation and a priority class: LS and Guaranteed 1000,
Burstable 500, BE 0 (latency-sensitive work first). Submit = ``creation_time``; duration =
``deletion_time - creation_time``, or to the end of the simulation when there is no deletion
time. The paper's variant files without the time columns (multigpu*) load with every pod
submitted at 0 and running to the end.

Nodes ``sn,cpu_milli,memory_mib,gpu,model``; ``model`` is empty on CPU-only nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.api.objects import Node
from berth.traces.base import Table, TraceFormat, has_columns
from berth.traces.constants import OPENB
from berth.traces.errors import RowError, TraceLog
from berth.traces.model import (
    STATUS_ANNOTATION,
    JobSpec,
    Task,
    TraceOptions,
    trace_name,
    trace_node,
)
from berth.traces.rows import Row, guard, read_csv

POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
POD_REQUIRED = POD_COLUMNS[:5]
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
QOS_ANNOTATION = "berth.io/qos"
QOS_PRIORITY = {"LS": 1000, "Guaranteed": 1000, "Burstable": 500, "BE": 0}


def read_pods(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, POD_COLUMNS, header=True, required=POD_REQUIRED)
    return guard(rows, _pod, log, path)


def _pod(row: Row) -> JobSpec:
    annotations: dict[str, str] = {}
    name = trace_name(row.required("name", "a pod name"), annotations)
    gpus = row.integer("num_gpu", "a GPU count >= 0", minimum=0)
    share = row.integer("gpu_milli", "thousandths of a GPU, 0..1000", minimum=0)
    if share > 1000:
        raise RowError(f"gpu_milli {share} is above 1000 (expected thousandths of a GPU, 0..1000)")
    created = row.number("creation_time", "seconds") if "creation_time" in row.values else 0.0
    deleted = row.optional_number("deletion_time", "seconds or empty")
    if deleted is not None and deleted < created:
        raise RowError(f"deletion_time {deleted:g} is before creation_time {created:g}")
    qos = row.text("qos")
    if qos:
        annotations[QOS_ANNOTATION] = qos
    if row.text("pod_phase"):
        annotations[STATUS_ANNOTATION] = row.text("pod_phase")
    priority = QOS_PRIORITY.get(qos)
    task = Task(
        count=1,
        cpu=row.integer("cpu_milli", "millicores >= 0", minimum=0),
        memory=row.integer("memory_mib", "MiB >= 0", minimum=0),
        gpu=gpus * share,
        duration=None if deleted is None else deleted - created,
    )
    return JobSpec(
        name=name,
        submit=created,
        tasks=[task],
        annotations=annotations,
        gpu_products=tuple(p.strip() for p in row.text("gpu_spec").split("|") if p.strip()),
        priority_class=f"qos-{qos.lower()}" if priority is not None else "",
        priority=priority or 0,
    )


def read_nodes(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[Node]:
    return guard(read_csv(path, NODE_COLUMNS, header=True), _node, log, path)


def _node(row: Row) -> Node:
    return trace_node(
        row.required("sn", "a node name"),
        cpu=row.integer("cpu_milli", "millicores >= 0", minimum=0),
        memory=row.integer("memory_mib", "MiB >= 0", minimum=0),
        gpus=row.integer("gpu", "a GPU count >= 0", minimum=0),
        product=row.text("model"),
    )


FORMAT = TraceFormat(
    OPENB,
    "Alibaba cluster-trace-gpu-v2023: GPU-sharing pods and nodes",
    (
        Table("jobs", f"pods ({','.join(POD_COLUMNS)})", has_columns(*POD_REQUIRED), read_pods),
        Table("nodes", f"nodes ({','.join(NODE_COLUMNS)})", has_columns(*NODE_COLUMNS), read_nodes),
    ),
)
