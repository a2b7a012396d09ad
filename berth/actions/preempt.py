"""preempt: within a queue, a starving job takes room from lower-priority jobs.

A job short of minMember (admitted, valid, its queue open) places its tasks where they fit and,
where they do not, evicts running pods of lower-priority jobs of the same queue that every
preemptable plugin allows (see ``eviction`` for how victims and nodes are chosen, gangs kept
whole). A task that fits on idle room never evicts, unless its queue refuses it there: evicting
the queue's own lower-priority pods frees queue share too, so it may then fit. Each job goes
through one Statement: if it still cannot start, its evictions are undone with its placements.
Evicted pods are final; their controllers replace them.
"""

from __future__ import annotations

from berth.actions.allocate import by_queue, schedulable_jobs, take_turns
from berth.actions.eviction import Evictor, evict_for, running_by_queue, starving
from berth.framework.session import JobInfo, Session


class Preempt:
    name = "preempt"

    def execute(self, session: Session) -> None:
        jobs = [j for j in schedulable_jobs(session, best_effort_only=False) if starving(j)]
        if not jobs:
            return
        running = running_by_queue(session)
        evictor = Evictor(session, session.preemptable)

        def serve(job: JobInfo) -> None:
            priority = job.group.priority
            victims = [j for j in running.get(job.queue, []) if j.group.priority < priority]
            reason = f"preempted by {job.key}"
            evict_for(session, job, evictor, victims, reason, lambda _: True)

        take_turns(session, by_queue(session, jobs), serve, skip_overused=False)
