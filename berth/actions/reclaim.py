"""reclaim: a queue under its deserved share takes resources back from other queues.

Queues take turns in queue order, overused ones skipped, one starving job per turn (Volcano's
order). A starving job places its tasks where they fit and, where they do not and its queue may
reclaim them (preemptive: capacity's "within the deserved share" on some requested resource),
evicts running pods of other queues that are ``reclaimable`` and that the reclaimable plugins
allow — proportion and capacity allow pods of queues above their deserved share, never below
their guarantee. The task is placed only if its queue then takes it (allocatable; in a
hierarchy the evictions may have made room in a shared parent). Victims and nodes are chosen as
in preempt, gangs kept whole; a pod whose ``preemptionPolicy`` is Never reclaims nothing, and a
job that is not then pipelined undoes its evictions.
"""

from __future__ import annotations

from typing import Any

from berth.actions.eviction import Evictor
from berth.actions.eviction_turn import evict_for, running_by_queue
from berth.actions.turns import by_queue, schedulable_jobs, take_turns
from berth.framework.job_info import JobInfo
from berth.framework.podclass import PodClass
from berth.framework.session import Session


class Reclaim:
    name = "reclaim"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments = dict(arguments or {})

    def execute(self, session: Session) -> None:
        jobs = [j for j in schedulable_jobs(session, "any") if session.job_starving(j)]
        if not jobs:
            return
        running = running_by_queue(session)
        evictor = Evictor(session, "reclaimable")

        def serve(job: JobInfo) -> bool:
            victims = [
                j
                for name, queued in running.items()
                if name != job.queue and _reclaimable(session, name)
                for j in queued
            ]

            def may_reclaim(cls: PodClass) -> bool:
                return session.preemptive(job, cls.request)

            reason = f"reclaimed by queue {job.queue}"
            evict_for(session, job, evictor, victims, reason, may_reclaim)
            return False

        take_turns(session, by_queue(jobs), serve)


def _reclaimable(session: Session, name: str) -> bool:
    queue = session.queues.get(name)
    return queue is not None and queue.reclaimable
