"""One scheduling cycle: a snapshot of jobs, the actions run in order, a Statement per job.

Actions place tasks and evict pods through a Statement so that a job which cannot become ready
(a gang short of minMember) is rolled back whole, evictions made for it included; only
committed operations become bind and eviction decisions.

Answers from several plugins are combined the way Volcano combines them: orderings compare key
by key in tier order (the first plugin that tells two items apart decides), a refusal from any
plugin refuses (overused, allocatable, preemptive, readiness), and victims, admission and
starvation are voted tier by tier: the first tier whose plugins decide wins (victims: those
every voting plugin of that tier allows), and no plugin voting at all means no victim.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

from berth.api.objects import GroupPhase, Pod, Queue
from berth.cluster.state import ClusterState
from berth.framework.backlog import Backlog, JobReasons
from berth.framework.demand import queue_demand
from berth.framework.job_info import JobInfo, charge
from berth.framework.plugin import Plugin, Reason, Refusal, Vote
from berth.framework.queues import QueueTree
from berth.framework.reasons import HeldBack, node_list
from berth.framework.statement import Bind, Eviction, Statement
from berth.framework.victims import VictimPoint, allowed, allowed_anywhere

if TYPE_CHECKING:
    from berth.framework.explain import Explainer
    from berth.framework.framework import Framework
    from berth.framework.podclass import PodClass
    from berth.framework.search import NodeSearch


@dataclass(slots=True)
class Hold:
    """Nodes kept for one starving job until the moment its tasks are expected to fit there
    (the shadow time). Other pods may go there only if they are expected to be gone by then,
    so that what they take never delays the job."""

    job: str  # the job's key
    #: Held node rows as a mask, as long as the cluster was when the hold was made (nodes
    #: added since are never held).
    held: np.ndarray
    shadow: float

    def holds(self, row: int) -> bool:
        return row < len(self.held) and bool(self.held[row])

    def lets(self, job: JobInfo, pod: Pod, now: float) -> bool:
        """Whether ``pod`` may use held nodes: it belongs to the held job, or it has a known
        duration and ends by the shadow time (counted from now: the scheduler does not know
        the backend's start latency)."""
        if job.key == self.job:
            return True
        return pod.duration is not None and now + pod.duration <= self.shadow


_serial = attrgetter("serial")


class Session:
    def __init__(
        self,
        state: ClusterState,
        framework: Framework,
        search: NodeSearch,
        jobs: dict[str, JobInfo],
        queues: dict[str, Queue],
        now: float,
        has_enqueue: bool = True,
        queue_allocated: dict[str, np.ndarray] | None = None,
        all_jobs: dict[str, JobInfo] | None = None,
        holding: dict[str, JobInfo] | None = None,
        admission_epoch: int = 0,
        backlog: Backlog | None = None,
        servable: dict[str, JobInfo] | None = None,
        demand: dict[str, np.ndarray] | None = None,
        explained: Collection[str] = frozenset(),
        touched: set[str] | None = None,
        best_effort: set[str] | None = None,
    ) -> None:
        self.state = state
        self.framework = framework
        self.search = search
        #: Jobs with pending pods, in arrival order.
        self.jobs = jobs
        #: The jobs among them that await admission (enqueue's), kept by the scheduler between
        #: sessions; without one (a session built on its own) they are lined up here.
        if backlog is None and has_enqueue:
            backlog = Backlog(state, framework.per_job_admission)
            for job in jobs.values():
                if job.group.phase == GroupPhase.PENDING:
                    backlog.file(job)
        self.backlog = backlog
        #: The waiting jobs not in the backlog (the scheduler keeps them too).
        if servable is None:
            servable = (
                jobs if backlog is None else {k: j for k, j in jobs.items() if k not in backlog}
            )
        self.servable = servable
        self._servable_list: list[JobInfo] | None = None
        #: What each queue's waiting jobs ask for (see berth.framework.demand).
        self.demand = demand if demand is not None else queue_demand(jobs, state)
        #: Every job the scheduler knows, running ones included (where victims come from).
        self.all_jobs = all_jobs if all_jobs is not None else jobs
        #: The jobs with bound pods, perhaps with a few that no longer have any (the
        #: scheduler's, kept as pods are bound and released; a commit adds to it).
        if holding is None:
            holding = {key: job for key, job in self.all_jobs.items() if job.bound}
        self.holding = holding
        self.queues = queues
        self.tree = QueueTree(queues)
        self._queue_snapshots: tuple | None = None
        self.now = now
        self.framework_has_enqueue = has_enqueue
        #: Resources held by each queue's bound pods (shared with the Scheduler, kept current).
        self.queue_allocated = queue_allocated if queue_allocated is not None else {}
        self.binds: list[Bind] = []
        self.evictions: list[Eviction] = []
        #: Keys of the pods bound by this session; they are not running yet, so never victims.
        self.bound_this_cycle: set[str] = set()
        #: Why a job could not be considered at all (invalid, closed queue), by job key.
        self.job_reasons = JobReasons(backlog)
        #: Jobs admitted this session, in turn.
        self.admissions: list[JobInfo] = []
        #: Jobs a task of which found no node this cycle (their reason is the node search's),
        #: with that task's class.
        self.unplaced: dict[str, PodClass] = {}
        #: Waiting jobs whose wait for nodes the scheduler has already explained: their
        #: ``unplaced`` entries are not read (see ``Scheduler._note_waits``).
        self.explained = explained
        #: Keys of the jobs changed since allocate last read it (``Scheduler.touched``).
        self.touched = touched if touched is not None else set()
        #: Keys of the jobs that may have best-effort pods pending (``Scheduler.best_effort``);
        #: None: any may.
        self.best_effort = best_effort
        #: See Scheduler.admission_epoch.
        self.admission_epoch = admission_epoch
        #: Nodes held for a starving job (the reservation plugin's), or None.
        self.hold: Hold | None = None
        #: Records decisions for the pods asked about (see berth.framework.explain), or None.
        self.explainer: Explainer | None = None
        #: While a job is placed within one HyperNode (network topology): the rows allowed.
        self.region: np.ndarray | None = None
        #: While allocate runs: the classes that found no node with nothing tentatively placed
        #: (see ``gang_turn.nodeless``), or None.
        self.nodeless: set[tuple] | None = None
        #: While a job with a network topology is placed: extra score for candidate rows.
        self.bonus: Callable[[np.ndarray], np.ndarray] | None = None
        self._promised: list[JobInfo] | None = None
        for plugin in framework.plugins:
            plugin.on_session_open(self)

    def statement(self) -> Statement:
        return Statement(self)

    @property
    def total(self) -> np.ndarray:
        """Allocatable summed over every node, cordoned ones included: the capacity queues and
        jobs take shares of (their bound pods count wherever they run)."""
        return self.state.total_allocatable(cordoned=True)

    def place(self, job: JobInfo, pod: Pod, cls: PodClass) -> int | None:
        """The best node for ``pod`` of ``job`` (None: none fits), explained when asked for."""
        row = self._search(job, pod, cls)
        explainer = self.explainer
        if explainer is not None and explainer.wants(pod):
            explainer.saw(self, job, pod, cls, row)
        return row

    def _search(self, job: JobInfo, pod: Pod, cls: PodClass) -> int | None:
        """The node search, keeping off held nodes the pod may not use. The search ignores the
        hold, so only a pod whose best node turns out held pays for a second look, over the
        cached evaluation with the held rows masked out."""
        if self.region is not None or self.bonus is not None:
            return self._search_within(job, pod, cls)
        row = self.search.place(cls)
        hold = self.hold
        if row is None or hold is None or not hold.holds(row) or hold.lets(job, pod, self.now):
            return row
        search = self.search
        base = search.evaluate(cls)
        width = min(len(base), len(hold.held))
        feasible = base > -np.inf
        open_rows = feasible.copy()
        open_rows[:width] &= ~hold.held[:width]
        idx = search.narrow(cls, np.flatnonzero(open_rows), cls.global_filters)
        if len(idx):
            total = search.scores(cls, idx, cls.global_scorers, base[idx])
            return int(idx[int(np.argmax(total))])
        held = np.flatnonzero(feasible[:width] & hold.held[:width])
        names = [self.state.names[r] for r in search.narrow(cls, held, cls.global_filters)]
        self.job_reasons[job.key] = HeldBack(
            lambda: (
                f"{node_list(names)} held for starving job {hold.job} until t={hold.shadow:.0f}s"
            )
        )
        return None

    def _search_within(self, job: JobInfo, pod: Pod, cls: PodClass) -> int | None:
        """The node search restricted to ``region`` and scored with ``bonus`` too: over the
        cached evaluation, like the hold's second look (held rows stay out)."""
        search = self.search
        base = search.evaluate(cls)
        feasible = base > -np.inf
        region = self.region
        if region is not None:
            feasible &= region[: len(feasible)]
        hold = self.hold
        if hold is not None and not hold.lets(job, pod, self.now):
            width = min(len(feasible), len(hold.held))
            feasible[:width] &= ~hold.held[:width]
        idx = search.narrow(cls, np.flatnonzero(feasible), cls.global_filters)
        if not len(idx):
            return None
        total = search.scores(cls, idx, cls.global_scorers, base[idx])
        if self.bonus is not None:
            total = total + self.bonus(idx)
        return int(idx[int(np.argmax(total))])

    def allocated(self) -> None:
        """Allocate has placed what it could this cycle; plugins act on what it left."""
        for plugin in self.framework.plugins:
            plugin.after_allocate(self)

    def running_jobs(self) -> list[JobInfo]:
        """The jobs with bound pods, in the order of ``all_jobs``."""
        return sorted(self.holders(), key=_serial)

    def holders(self) -> Iterator[JobInfo]:
        """The jobs with bound pods, in no set order: for a largest or smallest among them."""
        return (job for job in self.holding.values() if job.bound)

    def job_of(self, pod: Pod) -> JobInfo | None:
        return self.all_jobs.get(pod.job_key)

    def promised(self) -> list[JobInfo]:
        """Admitted jobs that have not reached minMember yet as the session opened: their
        minResources are spoken for even though their pods are not placed. Found once (the
        plugins that count them open one after the other, and a backlog is long). In the
        order ``servable_jobs`` lists them, without sorting the jobs that are not promised."""
        if self._promised is None:
            # (Most servable jobs of a long backlog hold pods already: that test goes first,
            # and reads the bound table itself rather than through a property.)
            jobs = [
                job
                for job in self.servable.values()
                if len(job.bound) < job.group.min_member and job.group.phase == GroupPhase.INQUEUE
            ]
            self._promised = self._in_waiting_order(jobs)
        return self._promised

    def servable_jobs(self) -> list[JobInfo]:
        """The waiting jobs not awaiting admission, in the order they started waiting: the
        ones the placing actions may serve."""
        if self._servable_list is None:
            self._servable_list = self._in_waiting_order(self.servable.values())
        return self._servable_list

    def _in_waiting_order(self, jobs: Iterable[JobInfo]) -> list[JobInfo]:
        """Servable ``jobs`` in the order they started waiting. Without a backlog the servable
        jobs are the waiting ones, kept in that order already."""
        return sorted(jobs, key=_since) if self.backlog is not None else list(jobs)

    def servable_among(self, keys: Iterable[str]) -> list[JobInfo]:
        """The servable jobs of ``keys``, in the order they started waiting (as
        ``servable_jobs`` lists them), for a caller that knows which few it wants."""
        servable = self.servable
        return sorted((servable[k] for k in keys if k in servable), key=_since)

    def admit(self, job: JobInfo) -> None:
        """Admit a PodGroup: the placing actions may serve it from now on (enqueue takes it
        out of the backlog once it has asked the rest)."""
        job.group.phase = GroupPhase.INQUEUE
        self.admissions.append(job)
        if self.backlog is not None:
            self.servable[job.key] = job
            self._servable_list = None

    def charge(self, job: JobInfo, pod: Pod, request: np.ndarray, sign: int) -> None:
        charge(self.queue_allocated, job, request, sign)
        self.touched.add(job.key)
        for plugin in self.framework.allocation_watchers:
            if sign > 0:
                plugin.on_allocate(job, pod, request)
            else:
                plugin.on_deallocate(job, pod, request)

    # -- orderings and checks, combined over the plugins in tier order ----------------

    def job_order_key(self, job: JobInfo) -> tuple:
        # (Asked of every waiting job in each session: a list is made faster than a generator.)
        keys = [p.job_order(job) for p in self.framework.job_orders]
        return (*keys, job.group.submit_time, job.key)

    def task_order_key(self, pod: Pod) -> tuple:
        keys = tuple(p.task_order(pod) for p in self.framework.task_orders)
        return keys + (pod.submit_time, pod.name)

    def queue_order_key(self, name: str, served: int) -> tuple:
        """Which queue goes next: the queue-order plugins' keys, then (and without any plugin,
        only) the queue served least often so far this cycle: round robin among equals."""
        queue = self.queues[name]
        return (*[p.queue_order(queue) for p in self.framework.queue_orders], served, name)

    def victim_queue_key(self, name: str, preemptor_queue: str) -> tuple:
        """Which queue's pods go first as victims for a job of ``preemptor_queue`` (smaller
        first); among equals, the caller falls back to reverse queue order."""
        queues = self.queues
        queue, preemptor = queues.get(name), queues.get(preemptor_queue)
        if queue is None or preemptor is None:
            return ()
        return tuple(p.victim_queue_order(queue, preemptor) for p in self.framework.victim_orders)

    def job_valid(self, job: JobInfo) -> str | None:
        for plugin in self.framework.job_valids:
            reason = plugin.job_valid(job)
            if reason:
                return reason
        return None

    def queue_problem(self, job: JobInfo) -> str | None:
        if job.placeholder:
            return f"podgroup {job.group.name} not found"
        queue = self.queues.get(job.queue)
        if queue is None:
            return f"queue {job.queue} not found"
        if queue.state != "Open":
            return f"queue {job.queue} is {queue.state.lower()}"
        if not self.tree.is_leaf(job.queue):
            return f"queue {job.queue} is not a leaf queue"
        return None

    # The queue-level checks below are asked only for jobs that passed ``queue_problem``.

    def overused(self, name: str) -> bool:
        queue = self.queues[name]
        for plugin in self.framework.overuseds:  # (asked before each turn: no generator)
            if plugin.overused(queue):
                return True
        return False

    def overused_from(self, name: str, request: np.ndarray, most: int) -> int | None:
        """How many more pods of ``request`` placed in queue ``name`` make it overused (most
        + 1: not up to ``most``), where every overused plugin can tell it at once; else None."""
        queue = self.queues[name]
        first = most + 1
        for plugin in self.framework.overuseds:
            count = plugin.overused_from(queue, request, most)
            if count is None:
                return None
            first = min(first, count)
        return first

    def allocatable(self, job: JobInfo, request: np.ndarray) -> str | None:
        """Why the job's queue may not take ``request`` more, or None."""
        queue = self.queues[job.queue]
        for plugin in self.framework.allocatables:
            reason = plugin.allocatable(queue, request)
            if reason:
                return reason
        return None

    def queue_snapshots(self) -> tuple:
        """Every queue's ``snapshot``, taken once per session: what enqueue and the queue-share
        plugins compare with the last session's to see whether a queue changed."""
        if self._queue_snapshots is None:
            self._queue_snapshots = tuple(q.snapshot() for q in self.queues.values())
        return self._queue_snapshots

    @property
    def allocatable_additive(self) -> bool:
        """Whether the queues' check of k pods at once tells the same as k placed one by one."""
        return all(p.allocatable_additive for p in self.framework.allocatables)

    def allocatable_pods(self, job: JobInfo, request: np.ndarray, most: int) -> int:
        """How many pods of ``request`` the job's queue takes, up to ``most`` (the
        ``allocatable`` plugins all additive)."""
        queue = self.queues[job.queue]
        for plugin in self.framework.allocatables:
            most = plugin.allocatable_pods(queue, request, most)
        return most

    def allocatable_after(self, job: JobInfo, request: np.ndarray, placed: int) -> Reason | None:
        """Why the job's queue refuses one more pod of ``request`` once ``placed`` of them are
        placed (the reason the pod-by-pod turn would record), or None."""
        queue = self.queues[job.queue]
        for plugin in self.framework.allocatables:
            reason = plugin.allocatable_after(queue, request, placed)
            if reason:
                return reason
        return None

    def preemptive(self, job: JobInfo, request: np.ndarray) -> bool:
        queue = self.queues[job.queue]
        return all(p.preemptive(queue, request) for p in self.framework.preemptives)

    def jobs_enqueueable(self, jobs: list[JobInfo]) -> list[Vote]:
        """Volcano's vote for each of ``jobs`` as things stand, tier by tier: a refusal
        refuses, and a tier in which some plugin admits decides (the tiers below are not
        asked); None when every plugin abstained. Each plugin is asked once for all the jobs
        its tier still has to decide (votes have no side effects, so asking a plugin after
        another refused changes nothing)."""
        votes: list[Vote] = [None] * len(jobs)
        open_rows = list(range(len(jobs)))
        for tier in self.framework.job_enqueueables:
            if not open_rows:
                break
            asked = [jobs[row] for row in open_rows]
            answers = [plugin.jobs_enqueueable(asked) for plugin in tier]
            still_open = []
            for index, row in enumerate(open_rows):
                admitted = False
                for answer in answers:
                    vote = answer[index]
                    if isinstance(vote, str | Refusal):
                        votes[row] = vote
                        break
                    admitted = admitted or vote is True
                else:
                    if admitted:
                        votes[row] = True
                    else:
                        still_open.append(row)
            open_rows = still_open
        return votes

    def job_enqueued(self, job: JobInfo) -> None:
        for plugin in self.framework.enqueue_watchers:
            plugin.on_job_enqueued(job)

    def preemptable(self, job: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """Victims the preemptable plugins allow, tier by tier (see ``victims.allowed``); without
        any such plugin, none."""
        return allowed(self.framework.preemptables, "preemptable", job, pod, candidates)

    def reclaimable(self, job: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """Victims the reclaimable plugins allow, tier by tier; without any such plugin, none:
        only a queue-share plugin can tell that another queue holds more than its share."""
        return allowed(self.framework.reclaimables, "reclaimable", job, pod, candidates)

    def allowed_anywhere(
        self, point: VictimPoint, job: JobInfo, pod: Pod, candidates: list[Pod]
    ) -> set[int] | None:
        """``victims.allowed_anywhere`` of the plugins at ``point``: the candidates (ids) that
        could be victims among any part of them, when every such plugin judges each alone."""
        return allowed_anywhere(self.victim_judges(point), point, job, pod, candidates)

    def victim_judges(self, point: VictimPoint) -> list[Plugin]:
        """The plugins that judge victims at ``point``, in tier order."""
        framework = self.framework
        return framework.preemptables if point == "preemptable" else framework.reclaimables

    def job_ready(self, job: JobInfo) -> bool:
        for plugin in self.framework.job_readies:
            if not plugin.job_ready(job):
                return False
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        return all(p.job_pipelined(job) for p in self.framework.job_pipelineds)

    def job_starving(self, job: JobInfo) -> bool:
        """Volcano's vote: the first tier with a starvation plugin decides, and every plugin
        in it must agree; a job no plugin calls starving is not (no preempt, no reclaim)."""
        for _, tier in groupby(self.framework.job_starvings, key=lambda p: p.tier):
            return all(p.job_starving(job) for p in tier)
        return False


def _since(job: JobInfo) -> int:
    return job.since
