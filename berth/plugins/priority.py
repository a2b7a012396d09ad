"""priority: higher-priority jobs are scheduled first, and within a job higher-priority tasks;
a job may preempt only jobs of lower priority (within one job, tasks of lower priority).

It also says which jobs are starving, as Volcano's priority plugin does: a job with pods not yet
placed. With gang in the same tier, both must agree, so by default only a job short of its
minMember starves; with gang's ``enableJobStarving: false`` an elastic job asks for its extra
pods too.
"""

from __future__ import annotations

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin
from berth.framework.session import Session


class Priority(Plugin):
    name = "priority"
    judges_each_alone = True
    orders_see_placements = True
    job_answers_own = True  # the group's priority

    def on_session_open(self, session: Session) -> None:
        self.session = session

    def job_order(self, job: JobInfo) -> int:
        return -job.group.priority

    def task_order(self, pod: Pod) -> int:
        return -pod.priority

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        session = self.session
        victims = []
        for candidate in candidates:
            job = session.job_of(candidate)
            if job is None:
                continue
            if job is preemptor:
                if candidate.priority < pod.priority:
                    victims.append(candidate)
            elif job.group.priority < preemptor.group.priority:
                victims.append(candidate)
        return victims

    def job_starving(self, job: JobInfo) -> bool:
        return len(job.pending) > job.allocated
