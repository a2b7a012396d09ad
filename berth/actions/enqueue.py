"""enqueue: admit waiting PodGroups, by the plugins' vote or, when none decides, once their
minResources fit in the idle capacity. A group is admitted whether or not its pods exist yet.

Admission keeps gangs that cannot start from holding the allocator's attention and, in a
Kubernetes deployment, from having their pods created early. Capacity already promised to
admitted-but-not-started groups is subtracted, so two large gangs are not admitted on the same
free nodes. Plugins vote (``job_enqueueable``): a refusal refuses, an admission admits; when all
abstain the idle check decides, which is the overcommit plugin's check with factor 1.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import GroupPhase
from berth.framework.plugin import Reason, Refusal, Vote
from berth.framework.session import Session
from berth.plugins.overcommit import Overcommit

#: Jobs whose votes are first asked for at once after an admission (doubling while no job is
#: admitted): few enough that a backlog admitted job by job asks little in vain.
VOTE_SPAN = 4


class Enqueue:
    """Refusals are remembered: between cycles in which no capacity was freed and no queue or
    node was added or changed, a refused job can only stay refused (admissions and binds only take
    capacity away), so only new or changed jobs are examined. A plugin whose answer depends on
    time (sla) turns this off."""

    name = "enqueue"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})
        self.idle_check = Overcommit({"overcommit-factor": 1.0})
        self._refused: dict[str, Reason] = {}
        self._epoch: tuple = ()

    def execute(self, session: Session) -> None:
        self.idle_check.on_session_open(session)
        waiting = [j for j in session.jobs.values() if j.group.phase == GroupPhase.PENDING]
        timed = any(
            p.admission_depends_on_time for tier in session.framework.job_enqueueables for p in tier
        )
        # Queues can change in place (opened, re-weighted): their state is part of the epoch.
        epoch = (session.admission_epoch, tuple(repr(q) for q in session.queues.values()))
        if timed or epoch != self._epoch:
            self._refused = {}
        remembered, candidates = {}, []
        for job in waiting:
            reason = None if job.touched else self._refused.get(job.key)
            if reason is None:
                candidates.append(job)
            else:
                remembered[job.key] = session.job_reasons[job.key] = reason
        self._refused = remembered
        self._epoch = epoch
        ordered = sorted(candidates, key=session.job_order_key)
        # Without a time-dependent plugin no vote can admit a job over the idle capacity (as
        # overcommit stretches it when configured), and that capacity only shrinks as jobs are
        # admitted. So the backlog is tested in one step, and who does not fit is refused
        # without the plugins' vote: on a long backlog that is most waiting jobs, every time a
        # pod frees capacity. A gang or queue problem is the more useful reason, so it comes
        # first. After an admission the rows ahead are tested again in spans that double while
        # nothing is admitted: a few steps for a long refused tail, a single row when
        # every job is admitted, never the whole rest once per admission.
        check = None if timed else self._capacity_check(session)
        needs = None if check is None else check.needs(ordered)
        fits = np.ones(len(ordered), dtype=bool) if needs is None else check.fit(needs)
        tested, span = len(ordered), 1  # fits[:tested] holds for the idle capacity as it is
        # The plugins' votes likewise, asked for spans of the backlog at once: they hold until
        # the next admission, which clears them.
        votes: dict[int, Vote] = {}
        vote_span = VOTE_SPAN
        for row, job in enumerate(ordered):
            if row == tested:
                fits[row : row + span] &= check.fit(needs[row : row + span])
                tested, span = row + span, span * 2
            job.touched = False
            # Volcano does not ask job_valid here: a PodGroup is admitted before its pods
            # exist (a Job's controller creates them only then), and gang waits for them later.
            vote: Vote = session.queue_problem(job)
            if vote is None and not fits[row]:
                vote = check.shortfall(job)
            if vote is None:
                if row not in votes:
                    # The next rows that fit as far as is known (a row refused for capacity
                    # stays refused until an admission, which clears the votes anyway).
                    rows = row + np.flatnonzero(fits[row:])[:vote_span]
                    asked = [ordered[r] for r in rows]
                    votes = dict(zip(rows.tolist(), session.jobs_enqueueable(asked), strict=True))
                    vote_span *= 2
                vote = votes[row]
            if vote is None:
                vote = self.idle_check.job_enqueueable(job)
            if isinstance(vote, str | Refusal):
                session.job_reasons[job.key] = self._refused[job.key] = vote
                continue
            job.group.phase = GroupPhase.INQUEUE
            session.job_enqueued(job)
            self.idle_check.on_job_enqueued(job)
            if needs is not None:
                tested, span = row + 1, 1
            votes, vote_span = {}, VOTE_SPAN

    def _capacity_check(self, session: Session) -> Overcommit:
        """The configured overcommit plugin, which has the last word on capacity when present;
        otherwise the factor-1 idle check."""
        for tier in session.framework.job_enqueueables:
            for plugin in tier:
                if isinstance(plugin, Overcommit):
                    return plugin
        return self.idle_check
