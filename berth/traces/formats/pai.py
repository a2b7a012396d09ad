"""Alibaba PAI (cluster-trace-gpu-v2020, NSDI'22): headerless job, task and machine tables.

``pai_task_table`` (job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,
plan_gpu,gpu_type) is what becomes pods: a job is all its tasks, a task ``inst_num`` pods of
``plan_cpu`` percent of a core (600 = 6 cores), ``plan_mem`` GB (taken as GiB) and ``plan_gpu``
percent of a GPU (50 = half; empty = no GPU). Each task is named by its role (``worker``, ``ps``)
and the job is gang-scheduled. Duration = the task's ``end_time - start_time``; no end time means
it was still running (runs to the end); no start time is a bad row. ``gpu_type`` is the type the
task ran on, not a requirement, so it is only recorded (``berth.io/gpu-type``).

Rows are streamed, so a job's tasks must be on consecutive rows; a job that reappears after
other jobs is reported as a bad row (sort the table first: ``sort -t, -k1,1 -s``).

``pai_job_table`` (job_name,inst_id,user,status,start_time,end_time) lives in a separate file.
When it sits beside the task table (same name with ``job`` for ``task``) it is read first —
the one table loaded whole, as a name → (user, status, submit) map — and gives each job its
submission time (``start_time`` there is the submit time), user and status. Without it a job is
submitted at its earliest task start. Times are seconds as published (shifted by a constant).

``pai_machine_spec`` (machine,gpu_type,cap_cpu,cap_mem,cap_gpu) gives nodes; ``gpu_type`` CPU
means no GPU, anything else becomes the ``nvidia.com/gpu.product`` label.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from berth.api.objects import Node
from berth.traces.base import Table, TraceFormat, table_file
from berth.traces.constants import PAI
from berth.traces.errors import TraceError, TraceLog
from berth.traces.model import (
    STATUS_ANNOTATION,
    USER_ANNOTATION,
    JobSpec,
    Task,
    TraceOptions,
    scaled,
    trace_name,
    trace_node,
)
from berth.traces.names import dns_name
from berth.traces.rows import Row, guard, read_csv

JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
MACHINE_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")
GPU_TYPE_ANNOTATION = "berth.io/gpu-type"
_MIB_PER_GB = 1024


@dataclass(frozen=True, slots=True)
class _JobInfo:
    user: str
    status: str
    submit: float


@dataclass(slots=True)
class _TaskRow:
    line: int
    job: str
    task: Task
    start: float
    gpu_type: str


def read_tasks(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    jobs = _job_table(path, log)
    rows = guard(read_csv(path, TASK_COLUMNS, header=None), _task, log, path)
    current: list[_TaskRow] = []
    finished: set[str] = set()
    for row in rows:
        if current and row.job != current[0].job:
            finished.add(current[0].job)
            yield _job(current, jobs)
            current = []
        if row.job in finished:
            log.bad_row(
                f"{path}:{row.line}",
                f"job {row.job} continues after other jobs' rows (expected a job's tasks on "
                "consecutive rows; sort the table by job_name)",
            )
            continue
        current.append(row)
    if current:
        yield _job(current, jobs)


def _job_table(task_path: Path, log: TraceLog) -> dict[str, _JobInfo]:
    if "pai_task_table" not in task_path.name:
        return {}
    path = task_path.with_name(task_path.name.replace("pai_task_table", "pai_job_table"))
    if not path.exists():
        return {}
    rows = guard(read_csv(path, JOB_COLUMNS, header=None), _job_info, log, path)
    return dict(rows)


def _job_info(row: Row) -> tuple[str, _JobInfo]:
    info = _JobInfo(row.text("user"), row.text("status"), row.number("start_time", "seconds"))
    return row.required("job_name", "a job name"), info


def _task(row: Row) -> _TaskRow:
    start = row.number("start_time", "seconds")
    end = row.optional_number("end_time", "seconds or empty", minimum=start)
    task = Task(
        count=row.integer("inst_num", "an instance count >= 1", minimum=1),
        cpu=scaled(row.number("plan_cpu", "percent of a core, e.g. 600", minimum=0), 10),
        memory=scaled(row.number("plan_mem", "GB >= 0", minimum=0), _MIB_PER_GB),
        gpu=scaled(row.optional_number("plan_gpu", "percent of a GPU", minimum=0) or 0, 10),
        duration=None if end is None else end - start,
        role=dns_name(row.required("task_name", "a task name")),
    )
    return _TaskRow(
        row.line, row.required("job_name", "a job name"), task, start, row.text("gpu_type")
    )


def _job(rows: list[_TaskRow], jobs: dict[str, _JobInfo]) -> JobSpec:
    raw = rows[0].job
    annotations: dict[str, str] = {}
    name = trace_name(raw, annotations)
    info = jobs.get(raw)
    if info is not None:
        annotations[USER_ANNOTATION] = info.user
        annotations[STATUS_ANNOTATION] = info.status
    gpu_types = sorted({row.gpu_type for row in rows if row.gpu_type})
    if gpu_types:
        annotations[GPU_TYPE_ANNOTATION] = "|".join(gpu_types)
    return JobSpec(
        name=name,
        submit=info.submit if info is not None else min(row.start for row in rows),
        tasks=[row.task for row in rows],
        annotations=annotations,
    )


def _job_table_only(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    raise TraceError(
        f"{path}: pai_job_table has no resource requests (expected pai_task_table; the job "
        "table beside it is read for submit times and users)"
    )


def read_machines(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[Node]:
    return guard(read_csv(path, MACHINE_COLUMNS, header=None), _machine, log, path)


def _machine(row: Row) -> Node:
    gpu_type = row.text("gpu_type")
    return trace_node(
        row.required("machine", "a machine name"),
        cpu=scaled(row.number("cap_cpu", "cores >= 0", minimum=0), 1000),
        memory=scaled(row.number("cap_mem", "GB >= 0", minimum=0), _MIB_PER_GB),
        gpus=row.integer("cap_gpu", "a GPU count >= 0", minimum=0),
        product="" if gpu_type.upper() == "CPU" else gpu_type,
    )


FORMAT = TraceFormat(
    PAI,
    "Alibaba PAI 2020 (cluster-trace-gpu-v2020): task, job and machine tables",
    (
        Table(
            "jobs",
            f"pai_task_table ({','.join(TASK_COLUMNS)})",
            table_file("pai_task_table", TASK_COLUMNS),
            read_tasks,
        ),
        Table(
            "jobs",
            f"pai_job_table ({','.join(JOB_COLUMNS)})",
            table_file("pai_job_table", JOB_COLUMNS),
            _job_table_only,
        ),
        Table(
            "nodes",
            f"pai_machine_spec ({','.join(MACHINE_COLUMNS)})",
            table_file("pai_machine_spec", MACHINE_COLUMNS),
            read_machines,
        ),
    ),
)
