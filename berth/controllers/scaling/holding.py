"""A scaling policy's targets, applied to elastic jobs: the pods held back from the scheduler,
given to it when a target rises and taken back when it falls.

The simulator (``berth.sim.scaling``) and ``berth serve`` (``berth.k8s.scaling``) share this;
they differ only in how a pod reaches the scheduler, how a waiting one leaves it and how a
running worker is taken off its node, which they pass in. A job's pods beyond its target,
bound or waiting, are held back here, out of the scheduler's sight. A cut withdraws the job's
waiting pods first and then takes running workers away: those on lent nodes first, then the
latest to start, then the highest index. The job's controller replaces a worker taken away,
and the replacement is held. Until a policy has set a target, a job's target is its minimum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from berth.api.objects import Pod
from berth.framework.scheduler import Scheduler

#: How the reason of a worker taken away by a scaling policy begins (summary.json counts them).
SCALED_IN = "scaled in by "


@dataclass(slots=True)
class ScalingRecord:
    """What the policy did in a run, for summary.json and serve's metrics."""

    policy: str
    rounds: int = 0  # rounds that ran the policy (the cluster had changed)
    grown: int = 0  # target raises
    shrunk: int = 0  # target cuts
    workers_removed: int = 0  # running workers taken away to meet a cut

    def summary(self, held: int) -> dict[str, int | str]:
        """``held``: pods held back at the end."""
        return {
            "policy": self.policy,
            "rounds": self.rounds,
            "targets_raised": self.grown,
            "targets_cut": self.shrunk,
            "workers_removed": self.workers_removed,
            "pods_held_at_end": held,
        }


class Holding:
    """Targets and held-back pods, by elastic job key.

    ``submit(pod)`` gives a held pod to the scheduler, ``withdraw(pod)`` takes a waiting one
    back, ``take_off(pods, reason)`` takes running workers off their nodes and says how many
    it did; ``lent()`` names the nodes on loan (their workers go first) and ``now()`` is the
    clock. ``removable(pod)`` says whether a bound worker may be taken off now (serve: not
    while its bind is in flight).
    """

    def __init__(
        self,
        policy: str,
        scheduler: Scheduler,
        submit: Callable[[Pod], object],
        withdraw: Callable[[Pod], None],
        take_off: Callable[[list[Pod], str], int],
        now: Callable[[], float],
        lent: Callable[[], Iterable[str]] = tuple,
        removable: Callable[[Pod], bool] = lambda pod: True,
    ) -> None:
        self.policy = policy
        self.scheduler = scheduler
        self.submit = submit
        self.withdraw = withdraw
        self.take_off = take_off
        self.now = now
        self.lent = lent
        self.removable = removable
        self.targets: dict[str, int] = {}
        self.held: dict[str, list[Pod]] = {}  # oldest first
        self.record = ScalingRecord(policy)

    def target(self, key: str, minimum: int) -> int:
        return self.targets.get(key, minimum)

    def visible(self, key: str) -> int:
        """The job's pods the scheduler has, bound or waiting; a pod on its way out (serve:
        evicted, in its grace period) is load on its node but not counted."""
        job = self.scheduler.jobs.get(key)
        if job is None:
            return 0
        leaving = sum(1 for p in job.bound.values() if p.terminating)
        return len(job.bound) + len(job.pending) - leaving

    # ------------------------------------------------------------------ pods

    def is_held(self, pod: Pod) -> bool:
        return any(p is pod for p in self.held.get(pod.owner, ()))

    def holds(self, pod: Pod, minimum: int) -> bool:
        """Whether a pod of a live elastic job is held back: it is already, or its job has as
        many pods bound or waiting in the scheduler as its target."""
        key = pod.owner
        if self.is_held(pod):
            return True
        if self.visible(key) < self.target(key, minimum):
            return False
        self.held.setdefault(key, []).append(pod)
        return True

    def forget(self, pod: Pod) -> bool:
        """A pending pod deleted by its controller: True if it was held back here (the
        scheduler never had it)."""
        if not self.is_held(pod):
            return False
        held = self.held[pod.owner]
        held[:] = [p for p in held if p is not pod]
        return True

    def held_reason(self, pod: Pod) -> str | None:
        return self.reason(pod.owner) if self.is_held(pod) else None

    def reason(self, key: str) -> str:
        """Why the job's held pods wait."""
        target = self.targets.get(key, 0)
        return f"held back by the {self.policy} scaling policy (target {target} workers)"

    def held_count(self) -> int:
        return sum(len(pods) for pods in self.held.values())

    def drop(self, key: str) -> None:
        """A job that ended: nothing of it is held any more (its controller deleted them)."""
        self.targets.pop(key, None)
        self.held.pop(key, None)

    # ------------------------------------------------------------------ targets

    def apply(self, key: str, target: int, minimum: int, first: Iterable[Pod] = ()) -> bool:
        """Set a job's target and move its pods to meet it; True when the scheduler has new
        work (pods given to it, or room made by taking workers off). Running workers in
        ``first`` are taken off before any other (the starvation guard's choice)."""
        before = self.target(key, minimum)
        if target > before:
            self.record.grown += 1
        elif target < before:
            self.record.shrunk += 1
        self.targets[key] = target
        job = self.scheduler.jobs.get(key)
        if job is None:
            return False
        visible = self.visible(key)
        if visible == target:
            return False
        held = self.held.setdefault(key, [])
        if target > visible:
            released, held[:] = held[: target - visible], held[target - visible :]
            for pod in released:
                self.submit(pod)
            return bool(released)
        excess = visible - target
        for pod in list(reversed(job.pending))[:excess]:
            self.withdraw(pod)
            held.insert(0, pod)
            excess -= 1
        if excess <= 0:
            return False
        return self._remove(job.bound.values(), excess, target, {id(p) for p in first}) > 0

    def _remove(
        self, bound: Iterable[Pod], count: int, target: int, first: set[int] | None = None
    ) -> int:
        lent = set(self.lent())
        now = self.now()

        candidates = [p for p in bound if not p.terminating and self.removable(p)]
        chosen = first or set()
        # The newest placed go first. Pods placed in one session tie (the simulator starts
        # them together; on a cluster their kubelets report whole seconds in whatever order),
        # so the name decides.
        victims = sorted(
            candidates,
            key=lambda p: (id(p) in chosen, p.bound_node in lent, p.placed_at(now), p.name),
            reverse=True,
        )[:count]
        if not victims:
            return 0
        reason = f"{SCALED_IN}the {self.policy} scaling policy to {target} workers"
        removed = self.take_off(victims, reason)
        self.record.workers_removed += removed
        return removed
