"""SenseTime Helios (SC'21): ``cluster_log.csv`` of each cluster.

Columns (by header) ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,
end_time,duration,queue``; ``vc`` is absent from some copies. A job becomes a gang of
``node_num`` workers with ``gpu_num`` GPUs and ``cpu_num`` cores split evenly over them (memory
from the GPU count, as the trace has none). The queue is the virtual cluster ``vc``; note that
Helios' ``queue`` column is the time the job waited, in seconds, and is not used. Times may be
dates (``2020-06-09 18:41:01``: seconds since the earliest submission, found in a first pass) or
seconds (kept as given). Duration = ``duration``, or ``end_time - start_time`` when it is empty;
``user`` and ``state`` become annotations.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.traces.base import Table, TraceFormat, has_columns
from berth.traces.constants import HELIOS
from berth.traces.errors import RowError, TraceLog
from berth.traces.model import (
    MILLI,
    STATUS_ANNOTATION,
    USER_ANNOTATION,
    JobSpec,
    TraceOptions,
    split_evenly,
    trace_name,
    worker_tasks,
)
from berth.traces.names import dns_name
from berth.traces.rows import Clock, Row, epoch, guard, read_csv

COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
REQUIRED = ("job_id", "gpu_num", "node_num", "submit_time")


def read_jobs(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, COLUMNS, header=True, required=REQUIRED)
    clock = Clock(epoch(row.text("submit_time") for row in rows if not row.problem))
    rows = read_csv(path, COLUMNS, header=True, required=REQUIRED)
    return guard(rows, lambda row: _job(row, clock, options), log, path)


def _job(row: Row, clock: Clock, options: TraceOptions) -> JobSpec:
    annotations: dict[str, str] = {}
    name = trace_name(row.required("job_id", "a job id"), annotations)
    workers = row.integer("node_num", "a node count >= 1", minimum=1)
    gpus = row.integer("gpu_num", "a GPU count >= 0", minimum=0)
    cores = row.integer("cpu_num", "a CPU count >= 0", minimum=0) if row.text("cpu_num") else 0
    for column, annotation in (("user", USER_ANNOTATION), ("state", STATUS_ANNOTATION)):
        if row.text(column):
            annotations[annotation] = row.text(column)
    vc = row.text("vc")
    return JobSpec(
        name=name,
        submit=clock.seconds(row.required("submit_time", "a time"), "submit_time"),
        tasks=worker_tasks(
            split_evenly(gpus, workers),
            options,
            _duration(row, clock),
            split_evenly(cores * MILLI, workers) if cores else None,
        ),
        queue=dns_name(vc) if vc else "",
        annotations=annotations,
    )


def _duration(row: Row, clock: Clock) -> float:
    if row.text("duration"):
        return row.number("duration", "seconds >= 0", minimum=0)
    if not row.text("start_time") or not row.text("end_time"):
        raise RowError("duration is empty and so is start_time or end_time (expected seconds)")
    duration = clock.seconds(row.text("end_time"), "end_time") - clock.seconds(
        row.text("start_time"), "start_time"
    )
    if duration < 0:
        raise RowError("end_time is before start_time (expected end >= start)")
    return duration


FORMAT = TraceFormat(
    HELIOS,
    "SenseTime Helios cluster_log.csv (Earth, Saturn, Uranus, Venus)",
    (Table("jobs", f"cluster_log ({','.join(COLUMNS)})", has_columns(*REQUIRED), read_jobs),),
)
