"""enqueue: admit waiting PodGroups once their minResources fit in the idle capacity.

Admission keeps gangs that cannot start from holding the allocator's attention and, in a
Kubernetes deployment, from having their pods created early. Capacity already promised to
admitted-but-not-started groups is subtracted, so two large gangs are not admitted on the same
free nodes.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import GroupPhase
from berth.framework.session import Session
from berth.resources import format_amount


class Enqueue:
    name = "enqueue"

    def execute(self, session: Session) -> None:
        state = session.state
        idle = state.idle().astype(np.float64)
        for job in session.jobs.values():
            group = job.group
            if group.phase == GroupPhase.INQUEUE and job.active < group.min_member:
                need = state.request_vector(group.min_resources)
                idle[: len(need)] -= need
        waiting = [j for j in session.jobs.values() if j.group.phase == GroupPhase.PENDING]
        for job in sorted(waiting, key=session.job_order_key):
            reason = session.job_valid(job) or session.queue_problem(job)
            if reason:
                session.job_reasons[job.key] = reason
                continue
            need = state.request_vector(job.group.min_resources)
            if len(need) > len(idle):
                idle = np.concatenate([idle, np.zeros(len(need) - len(idle))])
            if (need <= idle[: len(need)]).all():
                idle[: len(need)] -= need
                job.group.phase = GroupPhase.INQUEUE
            else:
                short = [
                    f"{name} needs {format_amount(name, need[col])}, "
                    f"{format_amount(name, max(idle[col], 0))} idle"
                    for col, name in enumerate(state.axis.names[: len(need)])
                    if need[col] > idle[col]
                ]
                session.job_reasons[job.key] = (
                    "minResources exceed the idle capacity: " + "; ".join(short)
                )
