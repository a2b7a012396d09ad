"""preempt: within a queue, a starving job takes room from jobs the preemptable plugins give up
(priority: lower-priority jobs).

Queues go in queue order and each queue's starving jobs (admitted, valid, and starving by the
starvation plugins: gang's short of minMember) in job order, all of a queue's before the next,
as in Volcano. A job places its tasks where they fit and, where they do not, evicts running pods
of other jobs of its queue that the preemptable plugins allow (see ``eviction`` for how victims
and nodes are chosen, gangs kept whole); a best-effort pod may only evict best-effort pods, and
a pod whose ``preemptionPolicy`` is Never evicts nobody. A task that fits on idle room never
evicts, unless its queue refuses it there: evicting the queue's own pods frees queue share too,
so it may then fit. Each job goes through one Statement: if it is not then pipelined (gang:
minMember placed), its evictions are undone with its placements. Evicted pods are final; their
controllers replace them.

Volcano's second pass, in which a job's pending task evicts lower-priority running tasks of the
same job, is not done.
"""

from __future__ import annotations

from typing import Any, ClassVar

from berth.actions.eviction import EXAMINED_NODES, Evictor
from berth.actions.eviction_turn import evict_for, running_by_queue
from berth.actions.turns import by_queue, schedulable_jobs
from berth.framework.session import Session


def examined_nodes(arguments: dict[str, Any]) -> int:
    """Volcano's candidate-node bounds (``configurations`` of preempt): how many of the nodes
    that victims could free are examined pod by pod. berth ranks those nodes by what evicting
    costs, so only the upper bound limits it."""
    return max(int(arguments.get("maxCandidateNodesAbsolute", EXAMINED_NODES)), 1)


class Preempt:
    name: ClassVar[str] = "preempt"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments = dict(arguments or {})
        self.examined = examined_nodes(self.arguments)

    def execute(self, session: Session) -> None:
        jobs = [j for j in schedulable_jobs(session, "any") if session.job_starving(j)]
        if not jobs:
            return
        running = running_by_queue(session)
        evictor = Evictor(session, "preemptable", self.examined)
        queues = by_queue(jobs)
        for name in sorted(queues, key=lambda q: session.queue_order_key(q, 0)):
            queued = running.get(name, [])
            for job in sorted(queues[name], key=session.job_order_key):
                # One list for the queue's jobs that hold nothing (running lists only holders):
                # the evictor keeps its victim table while the list and the cluster stand.
                victims = [j for j in queued if j is not job] if job.bound else queued
                reason = f"preempted by {job.key}"
                evict_for(session, job, evictor, victims, reason, lambda _: True)
