"""The report's job tables: the jobs worth a look when there are thousands (the failed, the
preempted or restarted, the longest waits), and the jobs still waiting at the end, one row
each with one reason. jobs.csv has every job; these tables say where to look first."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.durations import format_duration
from berth.metrics.tables import JobOutcome
from berth.report.page import heading, table

#: Enough pending jobs to spot a pattern (one namespace, one job) without a megabyte page.
PENDING_ROWS = 50
#: Rows per kind of notable job (failed, preempted, longest wait, longest JCT).
NOTABLE_ROWS = 10
#: Up to this many jobs, every one is listed.
ALL_JOBS_ROWS = 25

_FAILED_PHASES = {"Failed", "Aborted", "Terminated"}
_JOB_HEADER = [
    "job",
    "queue",
    "phase",
    "waited for",
    "pods",
    "retries",
    "preemptions",
    "queueing delay",
    "JCT",
]


class _Job:
    """A group with its outcome, and its queueing delay and JCT worked out once (the tables
    look at each several times over thousands of jobs)."""

    __slots__ = ("group", "outcome", "phase", "wait", "jct")

    def __init__(self, group: PodGroup, outcome: JobOutcome) -> None:
        self.group, self.outcome = group, outcome
        self.phase: str = outcome.phase or str(group.phase)
        start, end = group.start_time, group.end_time
        self.wait: float | None = None if start is None else start - group.submit_time
        self.jct: float | None = (
            end - group.submit_time
            if group.phase == GroupPhase.COMPLETED and end is not None
            else None
        )


def _row(job: _Job, end_time: float) -> list[str]:
    group, outcome = job.group, job.outcome
    wait = job.wait
    if wait is None:
        waited = f"waiting {format_duration(end_time - group.submit_time)}"
        why = outcome.reason if group.start_time is None else ""
    else:
        waited, why = format_duration(wait), outcome.waited_for
    return [
        f"{group.namespace}/{group.name}",
        group.queue,
        job.phase,
        why or "—",
        str(outcome.tasks),
        str(outcome.retries),
        str(outcome.preemptions),
        waited,
        format_duration(job.jct),
    ]


#: (title, which jobs, order: largest first) of the notable kinds, in the order shown.
_KINDS: tuple[tuple[str, Callable[[_Job], bool], Callable[[_Job], float]], ...] = (
    (
        "failed",
        lambda j: j.phase in _FAILED_PHASES or j.group.phase == GroupPhase.FAILED,
        lambda j: -j.group.submit_time,
    ),
    (
        "preempted or restarted",
        lambda j: j.outcome.preemptions > 0 or j.outcome.retries > 0,
        lambda j: j.outcome.preemptions + j.outcome.retries,
    ),
    ("longest queueing delay", lambda j: j.wait is not None, lambda j: j.wait or 0.0),
    ("longest completion time", lambda j: j.jct is not None, lambda j: j.jct or 0.0),
)


def jobs_section(
    groups: Sequence[PodGroup], outcomes: dict[str, JobOutcome], end_time: float
) -> str:
    """Every job when there are few; otherwise, per notable kind, the jobs that top it."""
    if not groups:
        return ""
    empty = JobOutcome()
    jobs = [_Job(g, outcomes.get(g.key, empty)) for g in groups]
    title = heading("jobs", "Jobs")
    if len(jobs) <= ALL_JOBS_ROWS:
        jobs.sort(key=lambda j: (j.group.submit_time, j.group.key))
        rows = [_row(j, end_time) for j in jobs]
        return title + table(_JOB_HEADER, rows, 4) + _jobs_csv_note(len(jobs))
    parts = [title, _jobs_csv_note(len(jobs))]
    for name, chosen, size in _KINDS:
        matching = [j for j in jobs if chosen(j)]
        if not matching:
            continue
        shown = _largest(matching, size, NOTABLE_ROWS)
        count = f"{len(matching)} jobs" if len(matching) > len(shown) else ""
        label = f"{name} ({count}, {len(shown)} shown)" if count else name
        parts.append(f"<h3>{label[0].upper() + label[1:]}</h3>")
        parts.append(table(_JOB_HEADER, [_row(j, end_time) for j in shown], 4))
    return "".join(parts)


def _largest(jobs: list[_Job], size: Callable[[_Job], float], count: int) -> list[_Job]:
    """The ``count`` jobs of largest ``size``, ties by key: the first ``count`` of ``jobs``
    sorted by (-size, key), without sorting them all (only the jobs at least as large as the
    ``count``-th largest can be among them)."""
    sizes = [size(j) for j in jobs]
    if 0 < count < len(jobs):
        cut = heapq.nlargest(count, sizes)[-1]
        jobs = [j for j, s in zip(jobs, sizes, strict=True) if s >= cut]
    return sorted(jobs, key=lambda j: (-size(j), j.group.key))[:count]


def _jobs_csv_note(count: int) -> str:
    return (
        f'<p class="note">{count:,} jobs; jobs.csv lists every one, pods.csv every pod. '
        "Queueing delay runs from submission until minMember pods run; "
        '"waited for" is what kept the job waiting before it started.</p>'
    )


def pending_section(
    pods: Sequence[Pod],
    groups: Sequence[PodGroup],
    outcomes: dict[str, JobOutcome],
    end_time: float,
    reasons: dict[str, str],
) -> str:
    """Jobs still waiting at the end, one row each with one reason, longest wait first: those
    with pods pending, and those not admitted at all (a Volcano Job's pods exist only once
    its group is admitted, so without this it would not show)."""
    pending: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.phase == PodPhase.PENDING:
            pending.setdefault(pod.job_key, []).append(pod)
    waiting = [g for g in groups if g.key in pending or g.phase == GroupPhase.PENDING]
    if not waiting:
        return ""
    waiting.sort(key=lambda g: (g.submit_time, g.key))
    rows = []
    for group in waiting[:PENDING_ROWS]:
        members = pending.get(group.key, [])
        outcome = outcomes.get(group.key)
        why = (outcome.reason if outcome else "") or (
            reasons.get(members[0].ref, "") if members else ""
        )
        count = str(len(members)) if members else "none created yet"
        waited = format_duration(end_time - group.submit_time)
        rows.append([group.namespace, group.name, group.queue, count, why, waited])
    body = table(["namespace", "job", "queue", "pods pending", "why", "waiting"], rows, 5)
    more = len(waiting) - PENDING_ROWS
    note = f'<p class="note">… and {more} more (jobs.csv lists every job).</p>' if more > 0 else ""
    total = sum(len(members) for members in pending.values())
    return (
        heading("waiting", f"Waiting at the end: {len(waiting)} jobs, {total} pods") + body + note
    )
