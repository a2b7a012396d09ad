"""Preempted jobs that come back: the ``simulation.preemption`` section.

Without it, a pod that preempt or reclaim evicts is final (its controller, if it has one,
replaces it). With it, a plain pod evicted by preempt or reclaim (a trace's job has no
controller) is submitted again at once as a new pending pod of the same job, to run for what
its job has left:

- ``work: keep`` (the default) keeps the work done up to the last checkpoint: with
  ``checkpointInterval: 0`` (the default) every second run is kept, as if the job checkpointed
  at the moment it was stopped (the ElasticFlow artifact's Tiresias, which resumes a job from
  where it stopped); with an interval of c seconds, the run is rounded down to a multiple of c
  (the work since the last checkpoint is lost);
- ``work: restart`` loses it all: the job runs its whole duration again;
- ``restartCost`` (seconds, default 0) is added to every resumed run (loading the checkpoint,
  starting the workers again); a pod evicted before it started pays nothing.

The pod's name gets ``.1``, ``.2``… for each return; ``pods.csv`` keeps every run as a row, and
the job's row ends when its last pod ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from berth.api.objects import GroupPhase, Pod
from berth.framework.scheduler import Scheduler
from berth.framework.statement import Eviction
from berth.sim.agent import Clock, pending_copy
from berth.sim.preemption_config import PreemptionConfig

#: How the preempt and reclaim actions begin the reasons they give.
_BY_SCHEDULER = ("preempted by ", "reclaimed by ")


class Requeue:
    """Brings back the plain pods the scheduler evicts, as ``PreemptionConfig`` says."""

    def __init__(
        self,
        config: PreemptionConfig,
        scheduler: Scheduler,
        clock: Clock,
        submit: Callable[[Pod], None],
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.clock = clock
        self.submit = submit
        #: Name of each returned pod → the name it first had; runs so far per first name.
        self._original: dict[str, str] = {}
        self._attempts: dict[str, int] = {}
        self.requeued = 0

    def evicted(self, evictions: list[Eviction]) -> None:
        """Before the node agent hears of the evictions: each plain pod with a duration that
        preempt or reclaim evicted gets its replacement (so its job stays open)."""
        now = self.clock.now
        jobs = set()
        for eviction in evictions:
            pod = eviction.pod
            if pod.owner or pod.duration is None or not eviction.reason.startswith(_BY_SCHEDULER):
                continue
            base = self._original.get(pod.name, pod.name)
            attempt = self._attempts.get(base, 0) + 1
            self._attempts[base] = attempt
            name = f"{base}.{attempt}"
            self._original[name] = base
            copy = pending_copy(pod, name, now)
            copy = replace(copy, duration=self.config.remaining(pod, now))
            self.requeued += 1
            self.submit(copy)
            jobs.add(pod.job_key)
        for key in sorted(jobs):
            job = self.scheduler.jobs.get(key)
            if job is not None and not job.group.implicit:
                job.group.phase = GroupPhase.INQUEUE  # admitted still, waiting for room again
