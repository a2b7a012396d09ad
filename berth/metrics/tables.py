"""Per-pod, per-job and time-series CSV tables, and the number formatting every berth CSV
shares.

Output files are compared byte for byte between runs, so numbers are never written with
``repr``: a float that is 0.1 in one run and 0.10000000000000002 in another must print the same.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from os import PathLike

import numpy as np

from berth.api.objects import Pod, PodGroup
from berth.sim.timeseries import TimeSeries, column_name

POD_COLUMNS = (
    "namespace",
    "name",
    "job",
    "queue",
    "node",
    "devices",
    "cpuset",
    "submit_time",
    "bind_time",
    "start_time",
    "end_time",
    "phase",
    "priority",
    "reason",
    "waited_for",
)
JOB_COLUMNS = (
    "namespace",
    "name",
    "queue",
    "min_member",
    "tasks",
    "submit_time",
    "start_time",
    "end_time",
    "phase",
    "retries",
    "preemptions",
    "resizes",
    "reason",
)

#: Added when some job has a deadline (``berth.metrics.deadlines``).
DEADLINE_COLUMNS = ("deadline", "deadline_status")


@dataclass(slots=True)
class JobOutcome:
    """What jobs.csv says about a group beyond the PodGroup itself."""

    tasks: int = 0  # pod objects it ended up with, replacements included
    phase: str = ""  # the batch Job's phase when a Job owns the group, else empty
    retries: int = 0
    preemptions: int = 0  # its pods evicted by preempt or reclaim
    resizes: int = 0  # an elastic job's changes of running workers
    reason: str = ""  # why it is still pending, or how it ended
    waited_for: str = ""  # why its first pod to wait waited, once placed


def format_decimal(value: float | None) -> str:
    """At most three decimals without trailing zeros; an empty cell for an unknown value."""
    if value is None:
        return ""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    # A tiny negative value rounds to "-0", which would differ from the "0" of a run whose
    # arithmetic happened to land on the other side of zero.
    return "0" if text == "-0" else text


def write_rows(
    path: str | PathLike[str], header: Sequence[str], rows: Iterable[Sequence[str]]
) -> None:
    """Write a CSV with Unix line endings whatever the platform, so files diff cleanly."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def write_pods_csv(
    path: str | PathLike[str],
    pods: list[Pod],
    group_queue: dict[str, str],
    reasons: dict[str, str] | None = None,
) -> None:
    """One row per pod, in the caller's order (the simulator sorts them). ``reasons`` says, by
    pod ref (``Pod.ref``), why a pod is still pending or why it was evicted; ``waited_for`` why
    a pod that was bound had waited first."""
    write_rows(path, POD_COLUMNS, _pod_rows(pods, group_queue, reasons or {}))


#: Formatted times kept while writing pods.csv (about 15,000 distinct in 336,000 rows of the
#: Alibaba 2017 trace's first 40 minutes).
_TIMES_KEPT = 65536


def _pod_rows(
    pods: list[Pod], group_queue: dict[str, str], reasons: dict[str, str]
) -> Iterator[tuple[str, ...]]:
    """``write_pods_csv``'s rows. A trace task's pods share their group and their times (a
    run of pods arrives, starts and ends together), so each time is formatted once and a
    group's queue looked up once for a row of its pods: the Alibaba 2017 trace writes 11
    million rows."""
    times: dict[float | None, str] = {}
    group: tuple[str, str] | None = None
    queue = ""
    for pod in pods:
        if (pod.namespace, pod.group) != group:
            group = (pod.namespace, pod.group)
            queue = group_queue.get(pod.job_key, "")
        texts = []
        for value in (pod.submit_time, pod.bind_time, pod.start_time, pod.end_time):
            text = times.get(value)
            if text is None:
                if len(times) > _TIMES_KEPT:  # (rows in order share recent times)
                    times.clear()
                text = times[value] = format_decimal(value)
            texts.append(text)
        yield (
            pod.namespace,
            pod.name,
            pod.group,
            queue,
            pod.bound_node,
            pod.gpu_devices,
            pod.cpuset,
            *texts,
            str(pod.phase),
            str(pod.priority),
            reasons.get(pod.ref, "") if reasons else "",
            pod.waited_for,
        )


def write_jobs_csv(
    path: str | PathLike[str],
    groups: list[PodGroup],
    outcomes: dict[str, JobOutcome],
    deadlines: dict[str, tuple[float, str]] | None = None,
) -> None:
    """One row per pod group (a batch Job's row is its group's, with the Job's phase);
    with ``deadlines`` (``berth.metrics.deadlines``), two more columns: the deadline and
    whether it was met."""
    empty = JobOutcome()
    rows = []
    for group in groups:
        outcome = outcomes.get(group.key, empty)
        extra: tuple[str, ...] = ()
        if deadlines is not None:
            deadline, status = deadlines.get(group.key, (None, ""))
            extra = (format_decimal(deadline), status)
        rows.append(
            (
                group.namespace,
                group.name,
                group.queue,
                str(group.min_member),
                str(outcome.tasks),
                format_decimal(group.submit_time),
                format_decimal(group.start_time),
                format_decimal(group.end_time),
                outcome.phase or str(group.phase),
                str(outcome.retries),
                str(outcome.preemptions),
                str(outcome.resizes),
                outcome.reason,
                *extra,
            )
        )
    header = JOB_COLUMNS if deadlines is None else (*JOB_COLUMNS, *DEADLINE_COLUMNS)
    write_rows(path, header, rows)


def write_timeseries_csv(series: TimeSeries, path: str | PathLike[str]) -> None:
    """Write ``time,pending,running``, ``alloc_/used_/capacity_/stranded_`` per resource,
    ``gpu_fragmented`` (milli-GPU), and, when queues are known, ``share_<queue>`` (dominant
    share) and ``fairness``, then any extra columns (capacity loaning's ``lent_gpus`` and pool
    columns)."""
    header = ["time", "pending", "running"]
    for resource in series.resources:
        name = column_name(resource)
        header += [f"alloc_{name}", f"used_{name}", f"capacity_{name}", f"stranded_{name}"]
    header.append("gpu_fragmented")
    # Python lists rather than numpy rows: a cell read from a list is a plain int or float,
    # formatted several times faster than a numpy scalar, to the same text.
    times = series.times.tolist()
    pending, running = series.pending.tolist(), series.running.tolist()
    fragmented = np.rint(series.gpu_fragmented).astype(np.int64).tolist()
    # Per resource, its four columns: allocated, used, capacity, stranded.
    allocated = np.rint(series.allocated).astype(np.int64).T.tolist()
    used = series.used.T.tolist()
    capacity = np.rint(series.capacity).astype(np.int64).T.tolist()
    stranded = np.rint(series.stranded).astype(np.int64).T.tolist()
    resources = range(len(series.resources))
    queues = series.queues
    shares: list[list[float]] = []
    fairness: list[float] = []
    if queues:
        header += [f"share_{column_name(q)}" for q in queues] + ["fairness"]
        shares = np.round(series.queue_shares(), 4).tolist()
        fairness = np.round(series.fairness(), 4).tolist()
    extras = [series.extra(name).tolist() for name in series.extras]
    header += list(series.extras)

    def rows() -> Iterator[list[str]]:
        for i, time in enumerate(times):
            row = [format_decimal(time), str(pending[i]), str(running[i])]
            for r in resources:
                row += [
                    str(allocated[r][i]),
                    format_decimal(used[r][i]),
                    str(capacity[r][i]),
                    str(stranded[r][i]),
                ]
            row.append(str(fragmented[i]))
            if queues:
                row += [format_decimal(v) for v in shares[i]]
                row.append(format_decimal(fairness[i]))
            row += [format_decimal(column[i]) for column in extras]
            yield row

    write_rows(path, header, rows())
