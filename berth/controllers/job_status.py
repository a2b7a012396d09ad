"""A Volcano Job's status told from its pods, as Volcano tells it: the pods counted by state,
whether a task has started or succeeded, Running or Pending, and, once every slot has ended,
Completed or Failed. And the PodGroup's minResources for the job. Pure functions of the job's
spec and the current pod of each slot, for the controller in ``berth.controllers.job``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from berth.api.objects import BatchJob, JobPhase, Pod, PodPhase, TaskSpec

Slot = tuple[str, int]  # (task name, replica index)


def job_counts(pods: Iterable[Pod]) -> dict[str, int]:
    """Pods of a job by state, as Volcano's Job status counts them."""
    counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        if pod.phase in (PodPhase.PENDING, PodPhase.BOUND):
            counts["pending"] += 1
        elif pod.phase == PodPhase.RUNNING:
            counts["running"] += 1
        elif pod.phase == PodPhase.SUCCEEDED:
            counts["succeeded"] += 1
        elif pod.phase == PodPhase.FAILED:
            counts["failed"] += 1
    return counts


def task_ready(slots: Mapping[Slot, Pod], task: TaskSpec) -> bool:
    """Enough of the task's pods have started (running, or already done successfully)."""
    need = task.replicas if task.min_available is None else task.min_available
    started = sum(
        1
        for index in range(task.replicas)
        if (pod := slots.get((task.name, index))) is not None
        and pod.phase in (PodPhase.RUNNING, PodPhase.SUCCEEDED)
    )
    return started >= need


def task_succeeded(slots: Mapping[Slot, Pod], task: TaskSpec) -> bool:
    return task.replicas > 0 and all(
        (pod := slots.get((task.name, index))) is not None and pod.phase == PodPhase.SUCCEEDED
        for index in range(task.replicas)
    )


def running_or_pending(job: BatchJob, slots: Mapping[Slot, Pod]) -> JobPhase:
    counts = job_counts(slots.values())
    started = counts["running"] + counts["succeeded"] + counts["failed"]
    return JobPhase.RUNNING if started >= max(job.min_available, 1) else JobPhase.PENDING


def verdict(job: BatchJob, slots: Mapping[Slot, Pod], succeeded: int) -> tuple[JobPhase, str]:
    """Completed or Failed once every slot has ended, by Volcano's rules."""
    minimums = sum(task.min_available or 0 for task in job.tasks)
    for task in job.tasks:
        # Volcano judges tasks one by one only when minAvailable covers their minimums.
        if task.min_available is None or job.min_available < minimums:
            continue
        done = sum(
            1
            for (name, _), pod in slots.items()
            if name == task.name and pod.phase == PodPhase.SUCCEEDED
        )
        if done < task.min_available:
            return JobPhase.FAILED, (
                f"task {task.name}: {done} pods succeeded, minAvailable {task.min_available}"
            )
    if job.min_success is not None:
        return JobPhase.FAILED, f"{succeeded} pods succeeded, minSuccess {job.min_success}"
    if succeeded >= job.min_available:
        return JobPhase.COMPLETED, f"{succeeded} pods succeeded"
    return JobPhase.FAILED, f"{succeeded} pods succeeded, minAvailable {job.min_available}"


def min_resources(job: BatchJob) -> dict[str, int]:
    """What the PodGroup must find free to be admitted: the requests of the job's first
    ``minAvailable`` pods, each task's own minimum first, then by task priority (as Volcano
    sizes a Job's PodGroup)."""
    total: dict[str, int] = {}
    need = job.min_available
    taken: dict[str, int] = {}
    ordered = sorted(job.tasks, key=lambda task: -task.template.priority)
    for task in ordered:
        count = min(task.min_available or 0, task.replicas, need)
        taken[task.name], need = count, need - count
    for task in ordered:
        extra = min(task.replicas - taken[task.name], need)
        taken[task.name] += extra
        need -= extra
    for task in ordered:
        for name, amount in task.template.requests.items():
            total[name] = total.get(name, 0) + amount * taken[task.name]
    return total
