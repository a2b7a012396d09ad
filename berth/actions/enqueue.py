"""enqueue: admit waiting PodGroups, by the plugins' vote or, when none decides, once their
minResources fit in the idle capacity. A group is admitted whether or not its pods exist yet.

Admission keeps gangs that cannot start from holding the allocator's attention and, in a
Kubernetes deployment, from having their pods created early. Capacity already promised to
admitted-but-not-started groups is subtracted, so two large gangs are not admitted on the same
free nodes. Plugins vote (``job_enqueueable``): a refusal refuses, an admission admits; when all
abstain the idle check decides, which is the overcommit plugin's check with factor 1.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from typing import ClassVar

from berth.framework.backlog import Backlog, Line, Place
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Reason, Refusal, Vote
from berth.framework.session import Session
from berth.plugins.overcommit import Overcommit

#: Jobs whose votes are asked for at once after an admission (doubling while no job is
#: admitted): few enough that a backlog admitted job by job asks little in vain.
VOTE_SPAN = 4
_UNASKED = object()


class _Run:
    """Jobs of one line to ask, in order: the whole line, or the ones new or changed since the
    last session (``jobs``). Positions hold while enqueue runs (it takes admitted jobs out of
    the backlog only at the end), so the length and the first job, asked of every run each
    session, are read once."""

    __slots__ = ("line", "jobs", "places", "size", "first")

    def __init__(self, line: Line, jobs: list[JobInfo] | None = None) -> None:
        self.line = line
        self.jobs = jobs
        self.places = None if jobs is None else [line.place_of(job) for job in jobs]
        self.size = len(line) if jobs is None else len(jobs)
        self.first = (line.at(0) if jobs is None else jobs[0]) if self.size else None

    def at(self, position: int) -> JobInfo:
        if position == 0 and self.first is not None:
            return self.first
        return self.line.at(position) if self.jobs is None else self.jobs[position]

    def after(self, mark: Place) -> int:
        """The position of the first job placed after ``mark``."""
        if self.places is None:
            return self.line.after(mark)
        return bisect_right(self.places, mark)


class Enqueue:
    """Jobs are asked in job order, a line of alike jobs at a time (see
    berth.framework.backlog): a line whose job is refused is not asked again until the next
    admission, and then only about its jobs placed after the admitted one.

    Between sessions in which no capacity was freed and no queue or node was added or changed,
    a refused job can only stay refused (admissions and binds only take capacity away), so only
    the jobs new or changed since are asked. A plugin whose answer depends on time (sla) turns
    this off."""

    name: ClassVar[str] = "enqueue"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})
        self.idle_check = Overcommit({"overcommit-factor": 1.0})
        self._epoch: tuple = ()

    def execute(self, session: Session) -> None:
        backlog = session.backlog
        assert backlog is not None  # a session with enqueue keeps one
        timed = session.framework.admission_depends_on_time
        # Queues can change in place (opened, re-weighted): their state is part of the epoch.
        epoch = (session.admission_epoch, session.queue_snapshots())
        whole = timed or epoch != self._epoch
        self._epoch = epoch
        if whole:
            runs = [_Run(line) for line in backlog.lines.values()]
        else:
            fresh: dict[Line, list[JobInfo]] = {}
            for key, job in backlog.fresh.items():
                fresh.setdefault(backlog.line_of[key], []).append(job)
            runs = [_Run(line, sorted(jobs, key=line.place_of)) for line, jobs in fresh.items()]
        # A session opened by a pod's end often has nobody new to admit: nothing to open.
        if any(run.size for run in runs):
            self.idle_check.on_session_open(session)
            # Without a time-dependent plugin no vote can admit a job over the idle capacity
            # (as overcommit stretches it when configured), so who does not fit is refused
            # without the plugins' vote.
            check = None if timed else self._capacity_check(session)
            for job in self._ask(session, backlog, check, runs, whole):
                backlog.drop(job.key)
        backlog.asked()

    def _ask(
        self,
        session: Session,
        backlog: Backlog,
        check: Overcommit | None,
        runs: list[_Run],
        whole: bool,
    ) -> list[JobInfo]:
        """Ask the runs in job order, merging their next jobs in a heap; record why the
        refused ones wait, and return the admitted ones."""
        order = session.job_order_key
        heap = [(order(run.at(0)), 0, run) for run in runs if run.size]
        heapq.heapify(heap)
        #: Per run, (position, refusal) in order: the jobs from there to the next one share it.
        refusals: dict[_Run, list[tuple[int, Reason]]] = {}
        #: Runs whose last asked job was refused, with that job's order key.
        refused: dict[_Run, tuple] = {}
        admitted: list[JobInfo] = []
        # The votes hold until the next admission: asked for every run's next job at once,
        # then, after an admission, for spans of the jobs next in turn that double while no
        # job is admitted.
        votes: dict[str, Vote] = {}
        span = len(heap)
        while heap:
            key, position, run = heapq.heappop(heap)
            job = run.at(position)
            vote = votes.get(job.key, _UNASKED)
            if vote is _UNASKED:
                upcoming = [job] + [r.at(p) for _, p, r in heapq.nsmallest(span - 1, heap)]
                votes = dict(
                    zip(
                        [j.key for j in upcoming],
                        self._votes(session, check, upcoming),
                        strict=True,
                    )
                )
                vote = votes[job.key]
                span *= 2
            if isinstance(vote, str | Refusal):
                refusals.setdefault(run, []).append((position, vote))
                refused[run] = key
                continue
            self._admit(session, backlog, job)
            admitted.append(job)
            votes, span = {}, VOTE_SPAN
            if position + 1 < run.size:
                heapq.heappush(heap, (order(run.at(position + 1)), position + 1, run))
            # Capacity is smaller now: the refused runs' jobs after this one are asked again.
            # Alike jobs share their order keys but for the place at the end, so a run whose
            # keys come before this job's has no job after it.
            mark = key[-2:]
            for other, other_key in list(refused.items()):
                if other_key[:-2] != key[:-2]:
                    del refused[other]
                    continue
                after = other.after(mark)
                if after < other.size:
                    del refused[other]
                    heapq.heappush(heap, (order(other.at(after)), after, other))
        self._keep(runs, refusals, {job.key for job in admitted}, whole)
        return admitted

    @staticmethod
    def _keep(
        runs: list[_Run], refusals: dict[_Run, list[tuple[int, Reason]]], admitted: set, whole: bool
    ) -> None:
        """Record the refusals: per line as segments when every job was asked, else per job."""
        for run in runs:
            line = run.line
            found = refusals.get(run, [])
            if whole:
                placed = line.placed
                line.segments = [(placed[run.at(position).key], vote) for position, vote in found]
                line.reasons = {}
                continue
            ends = [position for position, _ in found[1:]] + [run.size]
            for (start, vote), end in zip(found, ends, strict=False):  # none found: no end
                for position in range(start, end):
                    job = run.at(position)
                    if job.key not in admitted:
                        line.reasons[job.key] = vote

    def _votes(self, session: Session, check: Overcommit | None, jobs: list[JobInfo]) -> list[Vote]:
        """The verdict on each of ``jobs`` as things stand, asked of each plugin for all of
        them at once."""
        # Volcano does not ask job_valid here: a PodGroup is admitted before its pods exist (a
        # Job's controller creates them only then), and gang waits for them later. A gang or
        # queue problem is the more useful reason, so it comes first.
        votes: list[Vote] = [session.queue_problem(job) for job in jobs]
        if check is not None:
            rows = [row for row, vote in enumerate(votes) if vote is None]
            fits = check.fit(check.needs([jobs[row] for row in rows]))
            for row, fit in zip(rows, fits, strict=True):
                if not fit:
                    votes[row] = check.shortfall(jobs[row])
        asks = [session.jobs_enqueueable]
        if check is not self.idle_check:
            asks.append(self.idle_check.jobs_enqueueable)
        for ask in asks:
            rows = [row for row, vote in enumerate(votes) if vote is None]
            if rows:
                for row, vote in zip(rows, ask([jobs[row] for row in rows]), strict=True):
                    votes[row] = vote
        # Where the idle check was the capacity check, the jobs every plugin let through
        # fit: its vote would be an admission.
        return [True if vote is None else vote for vote in votes]

    def _admit(self, session: Session, backlog: Backlog, job: JobInfo) -> None:
        reason = backlog.reason(job.key)
        if reason is not None:
            backlog.left[job.key] = reason  # why it waited until now
        session.admit(job)
        session.job_enqueued(job)
        self.idle_check.on_job_enqueued(job)

    def _capacity_check(self, session: Session) -> Overcommit:
        """The configured overcommit plugin, which has the last word on capacity when present;
        otherwise the factor-1 idle check."""
        for tier in session.framework.job_enqueueables:
            for plugin in tier:
                if isinstance(plugin, Overcommit):
                    return plugin
        return self.idle_check
