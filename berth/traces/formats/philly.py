"""Microsoft Philly (ATC'19): the raw ``cluster_job_log`` and the common job-level CSV.

``cluster_job_log`` is a JSON array of jobs with ``jobid, user, vc, status, submitted_time`` and
the scheduling ``attempts``, each with ``start_time, end_time`` and ``detail`` (one entry per
machine with its ``gpus``). Decisions:

- submit = seconds since the earliest ``submitted_time`` in the file (a first pass finds it; the
  file is streamed twice rather than loaded). Times are local wall-clock times without a zone and
  are subtracted as such.
- The last attempt is the one that ran the job to its end: its machines are the workers (one per
  ``detail`` entry, each with that machine's GPU count), its ``end - start`` is the duration.
  Earlier attempts failed and were retried from scratch, which the simulator does not model, so
  their time is not added; their number goes into the ``berth.io/attempts`` annotation.
- A last attempt without ``end_time`` was still running when the trace was taken (upstream's
  documented meaning): the job runs to the end of the simulation. No attempts, no ``start_time``
  or no machines make a bad row.
- queue = ``vc``; ``user`` and ``status`` become annotations.

The CSV form ``timestamp,duration,num_gpus,gpu_time,cluster`` has no job id: jobs are named
``job-<line>``, ``timestamp`` is seconds (kept as given) or, as the Pollux/AdaptDL artifact
publishes it, a date and time (``2017-10-09 07:01:55``: seconds since the earliest, as for the
JSON log), ``cluster`` is the queue, and GPUs are spread over workers like ITP's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from berth.traces.base import Table, TraceFormat, has_columns, named
from berth.traces.constants import PHILLY
from berth.traces.errors import RowError, TraceLog
from berth.traces.jsonstream import JsonItem, read_json_objects
from berth.traces.model import (
    STATUS_ANNOTATION,
    USER_ANNOTATION,
    JobSpec,
    TraceOptions,
    gpu_job_tasks,
    trace_name,
    worker_tasks,
)
from berth.traces.names import dns_name
from berth.traces.rows import Clock, Row, earliest, epoch, guard, parse_datetime, read_csv

ATTEMPTS_ANNOTATION = "berth.io/attempts"
CSV_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
_JOB = "a job object with jobid, submitted_time and attempts"


def read_log(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    clock = Clock(earliest(_submitted_times(path)))
    return guard(read_json_objects(path), lambda item: _job(item, clock, options), log, path)


def _submitted_times(path: Path) -> Iterator[str]:
    for item in read_json_objects(path):
        if isinstance(item.value, dict) and isinstance(item.value.get("submitted_time"), str):
            yield item.value["submitted_time"]


def _text(job: dict[str, object], key: str, expected: str) -> str:
    value = job.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RowError(f"{key} is missing or empty (expected {expected})")
    return value.strip()


def _job(item: JsonItem, clock: Clock, options: TraceOptions) -> JobSpec:
    job = item.value
    if not isinstance(job, dict):
        raise RowError(f"is not an object (expected {_JOB})")
    annotations: dict[str, str] = {}
    jobid = _text(job, "jobid", "a job id")
    name = trace_name(jobid, annotations)
    submit = clock.seconds(_text(job, "submitted_time", "a date and time"), "submitted_time")
    attempts = job.get("attempts")
    if not isinstance(attempts, list) or not attempts:
        raise RowError(f"job {jobid} has no attempts (expected at least one scheduling attempt)")
    last = attempts[-1]
    if not isinstance(last, dict):
        raise RowError(f"job {jobid}: last attempt is not an object (expected start_time, detail)")
    start = parse_datetime(_text(last, "start_time", "a date and time"), "start_time")
    duration = None
    if last.get("end_time") is not None:
        end = parse_datetime(_text(last, "end_time", "a date and time or null"), "end_time")
        duration = (end - start).total_seconds()
        if duration < 0:
            raise RowError(
                f"job {jobid}: last attempt ends before it starts (expected end >= start)"
            )
    detail = last.get("detail")
    if not isinstance(detail, list) or not detail:
        raise RowError(f"job {jobid}: last attempt has no detail (expected the machines it ran on)")
    gpus = []
    for machine in detail:
        if not isinstance(machine, dict) or not isinstance(machine.get("gpus"), list):
            raise RowError(f"job {jobid}: detail entry without gpus (expected {{ip, gpus: [...]}})")
        gpus.append(len(machine["gpus"]))
    for key, annotation in (("user", USER_ANNOTATION), ("status", STATUS_ANNOTATION)):
        if isinstance(job.get(key), str):
            annotations[annotation] = job[key]
    annotations[ATTEMPTS_ANNOTATION] = str(len(attempts))
    vc = job.get("vc")
    return JobSpec(
        name=name,
        submit=submit,
        tasks=worker_tasks(gpus, options, duration),
        queue=dns_name(vc) if isinstance(vc, str) and vc else "",
        annotations=annotations,
    )


def read_csv_jobs(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[JobSpec]:
    rows = read_csv(path, CSV_COLUMNS, header=True, required=CSV_COLUMNS[:3])
    clock = Clock(epoch(row.text("timestamp") for row in rows if not row.problem))
    rows = read_csv(path, CSV_COLUMNS, header=True, required=CSV_COLUMNS[:3])
    return guard(rows, lambda row: _csv_job(row, clock, options), log, path)


def _csv_job(row: Row, clock: Clock, options: TraceOptions) -> JobSpec:
    cluster = row.text("cluster")
    return JobSpec(
        name=f"job-{row.line}",
        submit=clock.seconds(row.required("timestamp", "seconds or a date and time"), "timestamp"),
        tasks=gpu_job_tasks(
            row.integer("num_gpus", "a GPU count >= 0", minimum=0),
            options,
            row.number("duration", "seconds >= 0", minimum=0),
        ),
        queue=dns_name(cluster) if cluster else "",
    )


FORMAT = TraceFormat(
    PHILLY,
    "Microsoft Philly: cluster_job_log (JSON) or the job-level CSV",
    (
        Table(
            "jobs",
            "cluster_job_log (a JSON array of jobs)",
            lambda sniff: sniff.is_json or named("cluster_job_log")(sniff),
            read_log,
        ),
        Table("jobs", f"jobs ({','.join(CSV_COLUMNS)})", has_columns(*CSV_COLUMNS), read_csv_jobs),
    ),
)
