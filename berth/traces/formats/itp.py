"""Microsoft ITP (ElasticFlow, ASPLOS'23): ``job_id,submission_time,duration,num_gpu``.

Times are seconds from the start of each cluster's trace and are kept as given. A job of g GPUs
becomes ``ceil(g / gpus_per_node)`` gang-scheduled workers with the GPUs split evenly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.traces.base import Table, TraceFormat, has_columns
from berth.traces.constants import ITP
from berth.traces.errors import TraceLog
from berth.traces.model import JobSpec, TraceOptions, gpu_job_tasks, trace_name
from berth.traces.rows import Row, guard, read_csv

COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")


def read_jobs(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, COLUMNS, header=True)
    return guard(rows, lambda row: _job(row, options), log, path)


def _job(row: Row, options: TraceOptions) -> JobSpec:
    annotations: dict[str, str] = {}
    name = trace_name(row.required("job_id", "a job id"), annotations)
    gpus = row.integer("num_gpu", "a GPU count >= 1", minimum=1)
    duration = row.number("duration", "seconds >= 0", minimum=0)
    return JobSpec(
        name=name,
        submit=row.number("submission_time", "seconds"),
        tasks=gpu_job_tasks(gpus, options, duration),
        annotations=annotations,
    )


FORMAT = TraceFormat(
    ITP,
    "Microsoft ITP GPU clusters (ElasticFlow): one row per training job",
    (Table("jobs", f"jobs ({','.join(COLUMNS)})", has_columns(*COLUMNS), read_jobs),),
)
