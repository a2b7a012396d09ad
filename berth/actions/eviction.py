"""Choosing victims for preempt and reclaim, and placing the task on the room they leave.

Candidate nodes are found with arrays: the resources every eligible victim on a node could free
are summed per node (one ``np.add.at``), and only nodes where free plus freeable covers the
request and every filter but the free-capacity one passes are kept. The few best of those (the
lowest top priority among their eligible victims, then the fewest eligible victims) are then
examined pod by pod.

Victims are chosen in units that never leave a gang broken: a single pod only from the surplus
a job holds above its minMember, otherwise every bound pod of the job at once (wherever they
run). Surplus pods go before any whole job; then units are taken in Volcano's victim order
(queues by the victim-queue-order plugins, else the queue that would be served last first;
within a queue the job that would be served last first) and, among equals, smallest first,
until the task fits; units that turn out unnecessary
are then given back. If the task then fits the node but not its queue (capability, deserved
share), more units of that node go, in the same order, until the queue takes it: evicting a
queue's own pods frees its share. A node where no gang is stopped wins (surplus pods only, such
as an elastic job's workers above its minimum), then the one whose victims have the lowest top
priority, then the lowest sum of their priorities, then the fewest pods.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.podclass import PodClass
from berth.framework.session import Session
from berth.framework.statement import Statement
from berth.framework.victims import Judge, RankedJobs, VictimPoint

#: Nodes examined pod by pod for one task, best-ranked first (preempt's
#: ``maxCandidateNodesAbsolute`` overrides it).
EXAMINED_NODES = 16
#: Pending pods of a job ``Evictor.alike`` looks at, at most: a large gang gives up after its
#: first class that finds no room, while telling its pods' classes apart takes them all.
ALIKE_PODS = 16


@dataclass(slots=True)
class _Unit:
    job: JobInfo
    pods: list[Pod]
    freed: np.ndarray  # what evicting the unit frees on the node examined (request columns)
    whole: bool  # every bound pod of the job


@dataclass(slots=True)
class _Choice:
    row: int
    units: list[_Unit]
    rest: list[_Unit]  # the node's other units, in victim order, if the queue needs more

    @property
    def cost(self) -> tuple:
        """A node where only surplus pods go first, then the lowest top priority, then the
        lowest sum of the victims' priorities, then the fewest pods (kube-scheduler's
        DefaultPreemption orders nodes by the last three so)."""
        top = max((u.job.group.priority for u in self.units), default=-(2**63))
        total = sum(p.priority for u in self.units for p in u.pods)
        count = sum(len(u.pods) for u in self.units)
        return (any(u.whole for u in self.units), top, total, count)


@dataclass(slots=True)
class _Victims:
    """The eligible victims among the caller's jobs and what they hold per node, as the cluster
    stands: the same for every task that asks until a pod is bound, evicted or given back."""

    jobs: dict[str, JobInfo]  # the caller's jobs, by key
    eligible: dict[str, list[Pod]]  # by job key
    pods: list[Pod]  # every eligible pod
    rows: np.ndarray  # each pod's node row
    requests: np.ndarray  # each pod's request (a row each, over the whole resource axis)
    priority: np.ndarray  # each pod's job's priority
    top: np.ndarray  # per node, the highest priority among the jobs of its eligible pods
    count: np.ndarray  # per node, its eligible pods
    on_row: dict[int, set[str]]  # per node, the keys of the jobs with eligible pods there
    late: np.ndarray | None = None  # per node, ``Evictor._lateness``, worked out when asked
    ranked: RankedJobs | None = None  # the jobs ranked by ranking plugins, when asked
    #: ``Evictor.alike`` marks of jobs for which ``evict_for`` did nothing while this table
    #: stood: a job of the same mark does nothing either.
    futile: set[tuple] = field(default_factory=set)


class Evictor:
    """Evicts for one task at a time through the caller's statement; victims come from the jobs
    the caller names and must pass the plugins of ``point`` (preemptable or reclaimable)."""

    def __init__(
        self, session: Session, point: VictimPoint, examined: int = EXAMINED_NODES
    ) -> None:
        self.session = session
        self.point = point
        self.judge: Judge = session.preemptable if point == "preemptable" else session.reclaimable
        self.examined = examined
        #: The plugins that judge victims here, when every one of them ranks jobs (else None).
        self.ranking = RankedJobs.rankers(session.victim_judges(point))
        #: Whether nodes are chosen for the victims latest in job order (a plugin whose job
        #: order is a preemption order asks for it: ``Plugin.victims_by_job_order``).
        self.by_job_order = any(p.victims_by_job_order for p in session.framework.plugins)
        #: The victim table, what it was made for (its key and victim jobs).
        self._victims: tuple[tuple, _Victims, list[JobInfo]] | None = None
        #: After ``place`` succeeded: the change log's position it left, and the pods it
        #: evicted, from which the next table is the kept one less those pods (``_derived``).
        self._evicted: tuple[int, list[Pod]] | None = None

    def kept(self, victim_jobs: list[JobInfo], best_effort: bool) -> _Victims | None:
        """The victim table for these jobs if the one kept still stands (nothing bound,
        evicted or given back since it was made: the cluster's change log, the session's binds
        and evictions stand still)."""
        kept = self._victims
        if kept is None or kept[0] != self.table_key(best_effort):
            return None
        return kept[1] if _same(kept[2], victim_jobs) else None

    def table_key(self, best_effort: bool) -> tuple:
        """What a victim table is made for: it stands while this stays the same."""
        session = self.session
        state = session.state
        return (
            state.log_position,
            len(session.binds),
            len(session.evictions),
            state.width,
            best_effort,
        )

    def _victims_of(self, victim_jobs: list[JobInfo], best_effort: bool) -> _Victims:
        """The victim table for these jobs, kept while it stands (``kept``): a backlog of
        starving jobs asks about the same running jobs task after task."""
        kept = self.kept(victim_jobs, best_effort)
        if kept is not None:
            return kept
        key = self.table_key(best_effort)
        victims = self._derived(victim_jobs, best_effort)
        if victims is None:
            victims = self._built(victim_jobs, best_effort)
        self._victims = (key, victims, victim_jobs)
        self._evicted = None
        return victims

    def _built(self, victim_jobs: list[JobInfo], best_effort: bool) -> _Victims:
        state = self.session.state
        eligible = {j.key: pods for j in victim_jobs if (pods := self._eligible(j, best_effort))}
        pods = [p for group in eligible.values() for p in group]
        n, width = state.n, state.width
        rows = np.fromiter((state.rows[p.bound_node] for p in pods), dtype=np.intp, count=len(pods))
        requests = np.array([state.request_row(p.requests) for p in pods], dtype=np.int64)
        jobs = {j.key: j for j in victim_jobs}
        priority = _per_pod(eligible, [jobs[key].group.priority for key in eligible])
        on_row: dict[int, set[str]] = {}
        at = rows.tolist()
        start = 0
        for key, group in eligible.items():
            for row in at[start : start + len(group)]:
                on_row.setdefault(row, set()).add(key)
            start += len(group)
        return _table(
            jobs, eligible, pods, rows, requests.reshape(len(pods), width), priority, on_row, n
        )

    def _derived(self, victim_jobs: list[JobInfo], best_effort: bool) -> _Victims | None:
        """After a ``place`` that succeeded, while the cluster stands as it left it, the kept
        table less the pods it evicted: what building it afresh gives, without going over
        every running pod again. Committing the statement since changes nothing here: the
        pods it binds are not victims this cycle, and those it evicts are already gone. Only
        where ranking plugins judge the victims: they do not depend on the order of a job's
        pods, which a rollback may have changed."""
        kept, evicted = self._victims, self._evicted
        if kept is None or evicted is None or self.ranking is None:
            return None
        made_for, old, jobs = kept
        _, _, _, width, made_best_effort = made_for  # ``table_key``'s fields
        state = self.session.state
        if evicted[0] != state.log_position or width != state.width:
            return None
        if made_best_effort != best_effort or not _same(jobs, victim_jobs):
            return None
        gone = {id(p) for p in evicted[1]}
        keep = np.fromiter((id(p) not in gone for p in old.pods), bool, len(old.pods))
        pods = [p for p in old.pods if id(p) not in gone]
        eligible: dict[str, list[Pod]] = {}
        for job_key, group in old.eligible.items():
            left = [p for p in group if id(p) not in gone]
            if left:
                eligible[job_key] = left
        rows, priority = old.rows[keep], old.priority[keep]
        n = len(old.top)
        on_row = dict(old.on_row)
        for row in {int(r) for r in old.rows[~keep]}:
            here = {pods[i].job_key for i in np.flatnonzero(rows == row).tolist()}
            if here:
                on_row[row] = here
            else:
                del on_row[row]
        return _table(old.jobs, eligible, pods, rows, old.requests[keep], priority, on_row, n)

    def alike(self, job: JobInfo) -> tuple | None:
        """Besides the victim table, what decides all that ``evict_for`` does for ``job``,
        where that is known: the plugins that judge victims rank jobs (``job`` counts through
        its ranks), it holds nothing, has no network topology, and its pending pods (at most
        ``ALIKE_PODS``) are all of one class and may preempt. Then its queue (the queue's
        room, and whether it may evict at all), its ranks and the class decide; None
        otherwise. A preempt behind a long backlog asks for job after job of a few marks."""
        pods = job.pending
        if self.ranking is None or job.bound or job.group.network_topology is not None:
            return None
        if len(pods) > ALIKE_PODS:
            return None  # telling the classes apart would cost more than asking
        search = self.session.search
        first = next(iter(pods), None)
        if first is None or not all(p.may_preempt for p in pods):
            return None
        key = search.key(first)
        if len(pods) > 1 and any(search.key(p) != key for p in pods):
            return None
        signature = tuple(p.victim_rank(job) for p in self.ranking)
        return job.queue, signature, key, first.best_effort

    def _eligible(self, job: JobInfo, best_effort: bool) -> list[Pod]:
        """Bound pods of ``job`` that may be evicted at all: running before this session and
        not marked ``volcano.sh/preemptable: "false"`` (on the pod or its group); for a
        best-effort preemptor, only best-effort pods (as in Volcano)."""
        if not job.group.preemptable:
            return []
        new = self.session.bound_this_cycle
        return [
            p
            for p in job.bound.values()
            if p.preemptable and p.key not in new and (p.best_effort or not best_effort)
        ]

    def place(
        self,
        statement: Statement,
        job: JobInfo,
        pod: Pod,
        cls: PodClass,
        victim_jobs: list[JobInfo],
        reason: str,
    ) -> bool:
        """Evict what the best node needs and place ``pod`` there; False (and nothing changed)
        when no node can be freed for it."""
        victims = self._victims_of(victim_jobs, pod.best_effort)
        if not victims.eligible:
            return False
        # When the plugins allow no victim among all candidates, they allow none on any node
        # (their running totals only grow with the candidates they see): skip the search.
        allowed, signature = self._anywhere(job, pod, victims)
        if allowed is None:
            if not self.judge(job, pod, victims.pods):
                return False
        elif not allowed.any():
            return False
        # Which nodes could be freed depends on the job only through the allowed victims
        # (outside a HyperNode, which is the job's), and fewer victims free no more.
        ranked = victims.ranked if signature is not None and self.session.region is None else None
        if ranked is not None and signature is not None and ranked.unfreeable(signature, cls.key):
            return False
        choices = self._choices(job, pod, cls, victims, allowed)
        if not choices and ranked is not None and signature is not None:
            ranked.found_unfreeable(signature, cls.key)
        search = self.session.search
        for choice in choices:
            savepoint = statement.savepoint()
            for unit in choice.units:
                for victim in unit.pods:
                    statement.evict(unit.job, victim, reason)
            row = np.array([choice.row], dtype=np.intp)
            if len(search.narrow(cls, row, cls.filters)) == 1 and self._queue_takes(
                statement, job, cls, choice, reason
            ):
                statement.allocate(job, pod, choice.row, cls)
                evicted = statement.evicted_since(savepoint)
                self._evicted = (self.session.state.log_position, evicted)
                return True
            statement.rollback(savepoint)
        return False

    def _anywhere(
        self, job: JobInfo, pod: Pod, victims: _Victims
    ) -> tuple[np.ndarray | None, tuple | None]:
        """Per eligible pod, whether the plugins could allow it on some node, when they judge
        each one alone (else None); ranking plugins answer from ranks kept with the table,
        with the signature of their answer."""
        if self.ranking is not None:
            if victims.ranked is None:
                groups = victims.eligible
                jobs = [victims.jobs[key] for key in groups]
                victims.ranked = RankedJobs(jobs, [len(pods) for pods in groups.values()])
            return victims.ranked.allowed(self.ranking, job)
        anywhere = self.session.allowed_anywhere(self.point, job, pod, victims.pods)
        if anywhere is None:
            return None, None
        pods = victims.pods
        return np.fromiter((id(p) in anywhere for p in pods), bool, len(pods)), None

    def _queue_takes(
        self, statement: Statement, job: JobInfo, cls: PodClass, choice: _Choice, reason: str
    ) -> bool:
        """Whether the task's queue takes it, after evicting more of the node's units in
        victim order while it does not (each freeing queue share if it is the same queue's,
        or an ancestor's in a hierarchy)."""
        session = self.session
        taken = list(choice.units)
        for unit in choice.rest:
            if session.allocatable(job, cls.request) is None:
                return True
            if any(t.whole and t.job is unit.job for t in taken):
                continue
            for victim in unit.pods:
                if victim.key in unit.job.bound:
                    statement.evict(unit.job, victim, reason)
            taken.append(unit)
        return session.allocatable(job, cls.request) is None

    def _choices(
        self,
        job: JobInfo,
        pod: Pod,
        cls: PodClass,
        victims: _Victims,
        allowed: np.ndarray | None = None,
    ) -> list[_Choice]:
        """Nodes that can be freed for ``pod``, best first, with their victims. ``allowed``:
        which eligible pods the plugins could allow on any node, when they judge each one
        alone; a node examined where those could never free enough is passed over unasked."""
        state = self.session.state
        n, cols = state.n, cls.nonzero
        need = cls.request[cols]
        rows, top, count = victims.rows, victims.top, victims.count
        free = state.free[:n][:, cols]
        if allowed is not None:  # no node where the allowed pods could free enough: no choice
            room = free.copy()
            np.add.at(room, rows[allowed], victims.requests[allowed][:, cols])
            if not (room >= need).all(axis=1).any():
                return []
        freeable = np.zeros((n, len(cols)), dtype=np.int64)
        np.add.at(freeable, rows, victims.requests[:, cols])
        open_rows = (count > 0) & (free + freeable >= need).all(axis=1)
        if self.session.region is not None:  # a hard network topology's HyperNode
            open_rows &= self.session.region[:n]
        reachable = np.flatnonzero(open_rows)
        others = [f for f in cls.filters if not f.checks_free_capacity]
        idx = self.session.search.feasible(cls, reachable, others)
        if self.by_job_order:  # the nodes holding the victims that would be served last
            if victims.late is None:
                victims.late = self._lateness(victims, n)
            late = victims.late
            idx = idx[np.lexsort((count[idx], -late[idx], top[idx]))][: self.examined]
        else:
            idx = idx[np.lexsort((count[idx], top[idx]))][: self.examined]
        if allowed is not None:  # what the allowed pods on each examined node could free
            position = np.full(n, -1, dtype=np.intp)
            position[idx] = np.arange(len(idx))
            kept = allowed & (position[rows] >= 0)
            room = free[idx]  # (a copy: indexed by rows)
            np.add.at(room, position[rows[kept]], victims.requests[kept][:, cols])
            idx = idx[(room >= need).all(axis=1)]
        eligible = victims.eligible
        choices = []
        for row in map(int, idx):
            present = {key: eligible[key] for key in victims.on_row[row]}
            units = self._units(job, pod, cls, state.names[row], present, victims.jobs)
            chosen = _cover(free[row], need, units)
            if chosen is not None:
                rest = [u for u in units if all(u is not c for c in chosen)]
                choices.append(_Choice(row, chosen, rest))
        if self.by_job_order:
            return self._by_job_order(choices)
        return sorted(choices, key=lambda c: c.cost)

    def _lateness(self, victims: _Victims, n: int) -> np.ndarray:
        """Per node, how late in job order the latest eligible victim there would be served
        (0: the earliest of them all). The pods are the eligible groups one after the other,
        so each pod's job is told by the groups' lengths, not by its key."""
        groups = victims.eligible
        keys = {key: self.session.job_order_key(victims.jobs[key]) for key in groups}
        rank = {key: r for r, key in enumerate(sorted(keys, key=keys.__getitem__))}
        late = np.full(n, -1, dtype=np.int64)
        np.maximum.at(late, victims.rows, _per_pod(groups, [rank[key] for key in groups]))
        return late

    def _by_job_order(self, choices: list[_Choice]) -> list[_Choice]:
        """Choices ordered as ``cost`` orders them, except that after the top priority the
        choice whose most important victim would be served latest goes first."""
        session = self.session
        first = {
            id(c): min(session.job_order_key(u.job) for u in c.units) if c.units else ()
            for c in choices
        }
        order = sorted({first[id(c)] for c in choices}, reverse=True)
        rank = {key: r for r, key in enumerate(order)}

        def cost(choice: _Choice) -> tuple:
            whole, top, total, count = choice.cost
            return (whole, top, rank[first[id(choice)]], total, count)

        return sorted(choices, key=cost)

    def _units(
        self,
        job: JobInfo,
        pod: Pod,
        cls: PodClass,
        node: str,
        present: dict[str, list[Pod]],
        jobs: dict[str, JobInfo],
    ) -> list[_Unit]:
        """The ways of freeing room on ``node``, from the jobs with eligible pods there; the
        plugins judge every pod that could go, those on the node and the rest of their jobs."""
        cols = cls.nonzero

        def freed(group: list[Pod]) -> np.ndarray:
            total = np.zeros(len(cols), dtype=np.int64)
            for victim in group:
                if victim.bound_node == node:
                    total += self.session.state.request_row(victim.requests)[cols]
            return total

        candidates = sorted(
            (p for group in present.values() for p in group),
            key=lambda p: (jobs[p.job_key].group.priority, p.priority, p.key),
        )
        allowed = {id(p) for p in self.judge(job, pod, candidates)}
        units = []
        for key in present:
            victim_job = jobs[key]
            here = [
                p
                for p in candidates
                if id(p) in allowed and p.bound_node == node and p.job_key == key
            ]
            surplus = max(victim_job.active - victim_job.group.min_member, 0)
            units += [_Unit(victim_job, [p], freed([p]), False) for p in here[:surplus]]
            whole = list(victim_job.bound.values())
            if here and all(id(p) in allowed for p in whole):
                units.append(_Unit(victim_job, whole, freed(whole), True))
        return self._ranked(job, units)

    def _ranked(self, preemptor: JobInfo, units: list[_Unit]) -> list[_Unit]:
        """Units in victim order: every job's surplus pods before any whole job, since
        taking a pod above a job's minimum (an elastic job's extra worker) restarts nobody
        while stopping a gang loses its work; then by the victim-queue-order plugins, then
        the queue served last first (Volcano's order across queues); within a queue the
        lowest job priority first, then the job served last first (Volcano's order: gang's
        running jobs, DRF's largest share); among equals the smaller unit. Stable sorts,
        least significant key first."""
        session = self.session
        units = sorted(units, key=lambda u: (len(u.pods), u.job.key))
        units.sort(key=lambda u: session.job_order_key(u.job), reverse=True)
        units.sort(key=lambda u: (u.job.group.priority, u.whole))
        if len({u.job.queue for u in units}) > 1:
            queue = preemptor.queue
            units.sort(key=lambda u: session.queue_order_key(u.job.queue, 0), reverse=True)
            units.sort(key=lambda u: session.victim_queue_key(u.job.queue, queue))
        units.sort(key=lambda u: u.whole)
        return units


def _per_pod(groups: dict[str, list[Pod]], values: list[int]) -> np.ndarray:
    """Each job's value of ``values`` (in the order of ``groups``) for each of its pods: a
    table's pods are its groups one after the other."""
    return np.repeat(np.array(values, dtype=np.int64), [len(group) for group in groups.values()])


def _table(
    jobs: dict[str, JobInfo],
    eligible: dict[str, list[Pod]],
    pods: list[Pod],
    rows: np.ndarray,
    requests: np.ndarray,
    priority: np.ndarray,
    on_row: dict[int, set[str]],
    n: int,
) -> _Victims:
    """A victim table, its per-node top priority and count worked out from its pods."""
    top = np.full(n, np.iinfo(np.int64).min)
    np.maximum.at(top, rows, priority)
    counts = np.bincount(rows, minlength=n)
    return _Victims(jobs, eligible, pods, rows, requests, priority, top, counts, on_row)


def _same(kept: list[JobInfo], jobs: list[JobInfo]) -> bool:
    """Whether two lists hold the same jobs in the same order (a caller passes the same list
    for many tasks)."""
    return kept is jobs or (len(kept) == len(jobs) and all(map(operator.is_, kept, jobs)))


def _cover(free: np.ndarray, need: np.ndarray, units: list[_Unit]) -> list[_Unit] | None:
    """Units to evict so that ``need`` fits next to ``free``: greedily in rank order, then
    without those that turn out unnecessary; None when even all of them are not enough."""
    freed = free.astype(np.int64)
    chosen: list[_Unit] = []
    for unit in units:
        if (freed >= need).all():
            break
        if any(c.whole and c.job is unit.job for c in chosen):
            continue  # already going with its whole job
        if unit.whole:  # supersedes the single pods already taken from the job
            for single in [c for c in chosen if c.job is unit.job]:
                chosen.remove(single)
                freed -= single.freed
        chosen.append(unit)
        freed += unit.freed
    if not (freed >= need).all():
        return None
    for unit in reversed(list(chosen)):
        if (freed - unit.freed >= need).all():
            chosen.remove(unit)
            freed -= unit.freed
    return chosen
