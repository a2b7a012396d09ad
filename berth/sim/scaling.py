"""Elastic jobs under a scaling policy in the simulator (``simulation.scaling``; the policies
are in ``berth.controllers.scaling``).

Every ``interval`` seconds, when what training sees of the cluster changed since the last
round, the policy sets a target of workers for each elastic job, and ``Holding`` applies it:
pods beyond a target are held back from the scheduler, running workers beyond it are taken
off their nodes (counted as ``scaled_in``). A job that has not reached its minimum is given
its minimum's pods at once: a target is never below the minimum, so the gang never waits for
a round. With the starvation guard on (by default with capacity loaning), a round also frees
whole servers for a gang that has waited ``starvationWait`` (``berth.controllers.scaling.
starvation``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from berth.api.deadline import deadline_of
from berth.api.objects import BatchJob, Pod
from berth.controllers.scaling import elasticflow
from berth.controllers.scaling.config import ScalingConfig
from berth.controllers.scaling.holding import Holding
from berth.controllers.scaling.starvation import apply_guarded
from berth.controllers.scaling.view import ArylRound, ElasticJob, edl_targets
from berth.framework.scheduler import Scheduler
from berth.sim.agent import Clock, NodeAgent
from berth.sim.elastic import ElasticProgress, JobProgress
from berth.sim.events import Ev, EventQueue

if TYPE_CHECKING:
    from berth.sim.loaning import Loaning


class Scaler:
    """Runs a scaling policy over the elastic jobs of a simulation. ``submit(pod)`` hands a
    pod that was held back to the scheduler; ``request_session`` asks for a cycle."""

    def __init__(
        self,
        config: ScalingConfig,
        scheduler: Scheduler,
        agent: NodeAgent,
        elastic: ElasticProgress,
        queue: EventQueue,
        clock: Clock,
        submit: Callable[[Pod], object],
        request_session: Callable[[], None],
        loaning: Loaning | None = None,
        batch_jobs: Sequence[BatchJob] = (),
    ) -> None:
        self.config = config
        self.scheduler = scheduler
        self.elastic = elastic
        self.queue = queue
        self.clock = clock
        self.request_session = request_session
        self.loaning = loaning
        self.batch_jobs = {job.key: job for job in batch_jobs}
        self.holding = Holding(
            config.policy,
            scheduler,
            submit,
            scheduler.withdraw,
            agent.take_off,
            lambda: clock.now,
            (lambda: loaning.lent) if loaning is not None else tuple,
        )
        #: Elastic jobs the scheduler knows (their PodGroup arrived) that have not ended.
        self.live: dict[str, JobProgress] = {}
        self._seen: tuple | None = None
        self.aryl = ArylRound(scheduler, self._is_training, self.batch_jobs.get)
        #: Seconds before the starvation guard serves a waiting gang (inf: never).
        self._wait = config.wait_with(loaning is not None)
        queue.push(0.0, Ev.TICK, self._tick)

    # ------------------------------------------------------------------ pods

    def holds(self, pod: Pod) -> bool:
        """Whether an arriving pod is held back (``Holding.holds``)."""
        progress = self.elastic.jobs.get(pod.owner)
        if progress is None or progress.done:
            return False
        self.live[pod.owner] = progress
        return self.holding.holds(pod, progress.spec.min_workers)

    def forget(self, pod: Pod) -> bool:
        return self.holding.forget(pod)

    def held_reason(self, pod: Pod) -> str | None:
        return self.holding.held_reason(pod)

    # ------------------------------------------------------------------ rounds

    def _tick(self) -> None:
        state = self.scheduler.state
        # What training sees: requests on the nodes it may use (inference pods coming and
        # going on their own pool change nothing for it), jobs waiting, nodes changed.
        rows = self._rows()
        seen = (
            tuple(state.requested[: state.n][rows].sum(axis=0).tolist()),
            len(self.scheduler.waiting),
            len(self.live),
            state.structure_epoch,
        )
        if seen != self._seen:
            self._seen = seen
            self.rescale(rows)
        self.queue.push(self.clock.now + self.config.interval, Ev.TICK, self._tick)

    def rescale(self, rows: np.ndarray) -> None:
        """One round over the nodes training may use (``rows``): the policy's targets,
        applied."""
        live = self.live
        elastic = self.elastic.jobs
        for key in self.scheduler.waiting:
            if key not in live and key in elastic and not elastic[key].done:
                live[key] = elastic[key]
        for key in [k for k, progress in live.items() if progress.done]:
            del live[key]
            self.holding.drop(key)
        if not live:
            return
        self.holding.record.rounds += 1
        if self.config.policy == "edl":
            jobs = [ElasticJob.of(progress.job) for progress in live.values()]
            targets = edl_targets(
                self.scheduler,
                self.holding,
                jobs,
                rows,
                self.config.max_load_desired,
                self._is_training,
            )
        elif self.config.policy == "elasticflow":
            jobs, _, idle = self.aryl.inputs(self._remaining(live), rows, rigid=False)
            deadlines = {}
            for key, progress in live.items():
                found = deadline_of(progress.job.annotations)
                if found is not None:
                    deadlines[key] = found
            targets = elasticflow.scale(jobs, deadlines, idle, self.clock.now)
        else:
            targets = self.aryl.targets(self._remaining(live), rows)
        minimum = {key: progress.spec.min_workers for key, progress in live.items()}
        args = (rows, self._wait, self.clock.now, self._is_training, self.batch_jobs.get)
        if apply_guarded(self.holding, targets, minimum, *args):
            self.request_session()

    def _rows(self) -> np.ndarray:
        """Rows of the nodes training may use: schedulable, and not the inference pool's
        unless lent."""
        state = self.scheduler.state
        rows = state.schedulable[: state.n].copy()
        if self.loaning is not None:
            rows &= self.loaning.training_rows(state.n)
        return rows

    def _is_training(self, pod: Pod) -> bool:
        return self.loaning is None or not self.loaning.is_inference(pod)

    def _remaining(self, live: dict[str, JobProgress]) -> list[tuple[BatchJob, float | None]]:
        """Each live elastic job with its remaining one-worker seconds, as integrated."""
        now = self.clock.now
        return [(progress.job, self.elastic.remaining(key, now)) for key, progress in live.items()]

    def summary(self) -> dict[str, int | str]:
        return self.holding.record.summary(self.holding.held_count())
