"""Rollouts as a workload's status records them: when a new revision started, how it went
(pods recreated or updated in place, the most unavailable and surging at once, the capacity
taken off nodes), and when it was done.

Controllers call ``begin`` when the revision their pods should run changes, ``recreated`` and
``updated_in_place`` as they replace pods, and ``observe`` after every pass; ``observe`` ends
the rollout once the controller says it is complete.
"""

from __future__ import annotations

from berth.api.objects import Pod, PodPhase
from berth.api.workloads import Rollout, WorkloadStatus


def current(status: WorkloadStatus) -> Rollout | None:
    """The rollout in progress, if any."""
    if status.rollouts and status.rollouts[-1].end is None and not status.rollouts[-1].superseded:
        return status.rollouts[-1]
    return None


def begin(
    status: WorkloadStatus,
    now: float,
    revision: str,
    replicas: int,
    strategy: str,
    max_unavailable: int | None,
) -> Rollout:
    """A new revision to roll out; one still in progress is superseded by it."""
    running = current(status)
    if running is not None:
        running.superseded = now
    rollout = Rollout(revision, now, replicas, strategy, max_unavailable)
    status.rollouts.append(rollout)
    return rollout


def recreated(status: WorkloadStatus, pod: Pod) -> None:
    """A pod deleted to be replaced by one of the new revision."""
    rollout = current(status)
    if rollout is None:
        return
    rollout.recreated += 1
    if pod.phase in (PodPhase.BOUND, PodPhase.RUNNING):
        for name, amount in pod.requests.items():
            rollout.churn[name] = rollout.churn.get(name, 0) + amount


def updated_in_place(status: WorkloadStatus) -> None:
    rollout = current(status)
    if rollout is not None:
        rollout.in_place += 1


def observe(
    status: WorkloadStatus,
    now: float,
    desired: int,
    available: int,
    pods: int,
    complete: bool,
) -> None:
    """The workload as it stands after a controller pass: ``available`` of ``desired`` pods,
    ``pods`` in all; ``complete`` when every pod that should run the new revision does and is
    available."""
    rollout = current(status)
    if rollout is None:
        return
    rollout.peak_unavailable = max(rollout.peak_unavailable, desired - available)
    rollout.peak_surge = max(rollout.peak_surge, pods - desired)
    if complete:
        rollout.end = now
