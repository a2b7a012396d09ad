"""Alibaba cluster-trace-v2017: ``batch_task.csv`` of the colocated cluster's batch work.

Columns ``task_create_time, task_end_time, job_id, task_id, number_of_instances, status,
number_of_cpus_requested_per_instance_in_the_task, normalized_memory_requested_per_instance_in_
the_task`` (published without a header; a header row is recognised and skipped). A task is a
PodGroup named ``task-<job>-<task>`` of ``number_of_instances`` identical pods with minMember 1:
batch instances run independently, not as a gang. CPU is in hundredths of a core (50 = 0.5),
memory a fraction of a machine, scaled by ``TraceOptions.normalized_memory`` (default 64 GiB, an
assumption: the trace does not say). Duration = end - create; an end time of 0 marks a task still
running when the trace ended, which runs to the end of the simulation. Times are kept as given
(some tasks were created before the trace started and have negative times).

Tasks without a cpu or memory request (9,017 of the 80,553, mostly ``Waiting``) cannot be placed
and are left out — counted, not bad rows. Some tasks have tens of thousands of instances;
``TraceOptions.max_instances`` caps them if wanted (reported).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.traces.base import Table, TraceFormat, table_file
from berth.traces.constants import ALIBABA2017
from berth.traces.errors import Excluded, RowError, TraceLog
from berth.traces.model import STATUS_ANNOTATION, JobSpec, Task, TraceOptions, scaled, trace_name
from berth.traces.rows import Row, guard, read_csv

COLUMNS = (
    "task_create_time",
    "task_end_time",
    "job_id",
    "task_id",
    "number_of_instances",
    "status",
    "number_of_cpus_requested_per_instance_in_the_task",
    "normalized_memory_requested_per_instance_in_the_task",
)
CPUS, MEMORY = COLUMNS[6], COLUMNS[7]
NO_REQUEST = "tasks without a cpu or memory request"


def read_tasks(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, COLUMNS, header=None)
    return guard(rows, lambda row: _task(row, options), log, path)


def _task(row: Row, options: TraceOptions) -> JobSpec:
    if not row.text(CPUS) or not row.text(MEMORY):
        raise Excluded(NO_REQUEST)
    created = row.number("task_create_time", "seconds")
    ended = row.number("task_end_time", "seconds, 0 while running")
    if ended != 0 and ended < created:
        raise RowError(f"task_end_time {ended:g} is before task_create_time {created:g}")
    annotations = {STATUS_ANNOTATION: row.text("status")}
    job, task = row.required("job_id", "a job id"), row.required("task_id", "a task id")
    name = trace_name(f"task-{job}-{task}", annotations)
    spec = Task(
        count=row.integer("number_of_instances", "an instance count >= 1", minimum=1),
        cpu=scaled(row.number(CPUS, "hundredths of a core", minimum=0), 10),
        memory=scaled(
            row.number(MEMORY, "a fraction of a machine", minimum=0), options.normalized_memory
        ),
        duration=None if ended == 0 else ended - created,
    )
    return JobSpec(name=name, submit=created, tasks=[spec], gang=False, annotations=annotations)


FORMAT = TraceFormat(
    ALIBABA2017,
    "Alibaba cluster-trace-v2017 batch tasks (batch_task.csv)",
    (
        Table(
            "jobs",
            f"batch_task ({','.join(COLUMNS)})",
            table_file("batch_task", COLUMNS),
            read_tasks,
        ),
    ),
)
