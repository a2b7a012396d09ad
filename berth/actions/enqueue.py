"""enqueue: admit waiting PodGroups, by the plugins' vote or, when none decides, once their
minResources fit in the idle capacity.

Admission keeps gangs that cannot start from holding the allocator's attention and, in a
Kubernetes deployment, from having their pods created early. Capacity already promised to
admitted-but-not-started groups is subtracted, so two large gangs are not admitted on the same
free nodes. Plugins vote (``job_enqueueable``): a refusal refuses, an admission admits; when all
abstain the idle check decides, which is the overcommit plugin's check with factor 1.
"""

from __future__ import annotations

from berth.api.objects import GroupPhase
from berth.framework.plugin import Refusal, Vote
from berth.framework.session import Session
from berth.plugins.overcommit import Overcommit


class Enqueue:
    name = "enqueue"

    def __init__(self) -> None:
        self.idle_check = Overcommit({"overcommit-factor": 1.0})

    def execute(self, session: Session) -> None:
        self.idle_check.on_session_open(session)
        waiting = [j for j in session.jobs.values() if j.group.phase == GroupPhase.PENDING]
        for job in sorted(waiting, key=session.job_order_key):
            vote: Vote = session.job_valid(job) or session.queue_problem(job)
            if vote is None:
                vote = session.job_enqueueable(job)
            if vote is None:
                vote = self.idle_check.job_enqueueable(job)
            if isinstance(vote, str | Refusal):
                session.job_reasons[job.key] = vote
                continue
            job.group.phase = GroupPhase.INQUEUE
            session.job_enqueued(job)
            self.idle_check.on_job_enqueued(job)
