"""backfill: place the best-effort pods (no requests but the pod slot) of every admitted job,
wherever the filters allow, as Volcano's backfill does.

They take nothing the allocator accounts for, so they go after it and never delay a job. Queues
go in queue order, then jobs in job order, then a job's pods in task order. A job's pods go
through one Statement kept only if the job is then ready: a running job (or one allocate has
just started) keeps every pod that found a node, a gang of best-effort pods starts whole or not
at all. (Volcano backfills each pod on its own, even into a gang that cannot start.) Nodes held
for a starving job take them only if they are expected to end before it starts (a pod slot is
room).
"""

from __future__ import annotations

from berth.actions.gang_turn import keep_if_ready, placement_mark
from berth.actions.turns import by_queue, schedulable_jobs
from berth.framework.session import Session


class Backfill:
    name = "backfill"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})

    def execute(self, session: Session) -> None:
        queues = by_queue(schedulable_jobs(session, "best_effort"))
        search = session.search
        for name in sorted(queues, key=lambda q: session.queue_order_key(q, 0)):
            for job in sorted(queues[name], key=session.job_order_key):
                pods = sorted((p for p in job.pending if p.best_effort), key=session.task_order_key)
                statement = session.statement()
                hopeless: set[tuple] = set()
                for pod in pods:
                    cls = search.compile(pod)
                    mark = placement_mark(session, job, pod, cls)
                    if mark in hopeless:
                        continue
                    row = session.place(job, pod, cls)
                    if row is None:
                        hopeless.add(mark)
                        continue
                    statement.allocate(job, pod, row, cls)
                keep_if_ready(statement, session, job)
