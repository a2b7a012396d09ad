"""backfill: place jobs made only of best-effort pods (no cpu, memory or GPU requests) wherever
the filters allow.

They take nothing the allocator accounts for, so they go after it and never delay a job. A job
of several best-effort pods is still placed all-or-nothing when it is a gang. Nodes held for a
starving job take them only if they are expected to end before it starts (a pod slot is room).
"""

from __future__ import annotations

from berth.actions.allocate import allocate_job, schedulable_jobs
from berth.framework.session import Session


class Backfill:
    name = "backfill"

    def execute(self, session: Session) -> None:
        for job in sorted(
            schedulable_jobs(session, best_effort_only=True), key=session.job_order_key
        ):
            allocate_job(job, session)
