"""backfill: place best-effort pods (no cpu, memory or GPU requests) wherever the filters allow.

They take nothing the allocator accounts for, so they go after it and never delay a job."""

from __future__ import annotations

from berth.actions.allocate import admitted
from berth.framework.session import Session


class Backfill:
    name = "backfill"

    def execute(self, session: Session) -> None:
        search = session.search
        for job in session.jobs.values():
            if not any(p.best_effort for p in job.pending):
                continue
            if session.job_valid(job) or session.queue_problem(job) or not admitted(job, session):
                continue
            for pod in sorted(
                (p for p in job.pending if p.best_effort), key=session.task_order_key
            ):
                cls = search.compile(pod)
                row = search.place(cls)
                if row is None:
                    continue
                statement = session.statement()
                statement.allocate(job, pod, row, cls)
                statement.commit()
