"""The plugin contract.

A plugin overrides only the extension points it serves; the framework finds them by checking
which methods a plugin class overrides, so an unused point costs nothing per pod.

Node-level points work on *rows*: either ``slice(0, n)`` (every node) or an integer array of
node rows. Both index numpy arrays the same way, so one expression serves a full scan, a sampled
window and a patch of the rows that changed since a cached evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

if TYPE_CHECKING:
    from berth.api.objects import Pod, Queue
    from berth.cluster.hypernodes import Topology
    from berth.cluster.state import ClusterState
    from berth.framework.job_info import JobInfo
    from berth.framework.podclass import PodClass
    from berth.framework.session import Session

Rows = slice | np.ndarray


def row_count(state: ClusterState, rows: Rows) -> int:
    """How many node rows ``rows`` names."""
    return len(state.schedulable[rows]) if isinstance(rows, slice) else len(rows)


def row_index(state: ClusterState, rows: Rows) -> np.ndarray:
    """The node rows ``rows`` names, as an index array."""
    if isinstance(rows, slice):
        return np.arange(*rows.indices(state.n))
    return rows


class Refusal:
    """A reason rendered only when someone reads it: every waiting job gets one in every cycle,
    but it is read once, for the pods still pending at the end."""

    __slots__ = ("_render", "_text")

    def __init__(self, render: Callable[[], str]) -> None:
        self._render = render
        self._text: str | None = None

    def __str__(self) -> str:
        # Jobs alike share one refusal: rendered once however many read it.
        if self._text is None:
            self._text = self._render()
        return self._text


#: Why a job waits: plain text, or a Refusal rendered on demand.
Reason = str | Refusal
#: A plugin's say on admitting a job: True admits, a reason refuses, None abstains.
Vote = Literal[True] | Reason | None


class PluginArgumentError(ValueError):
    """A plugin argument with the wrong type or value."""


class Arguments:
    """A plugin's arguments, remembering which ones the plugin asked for: plugins read all of
    theirs when built, so any left unread is misspelt or unknown to the plugin.

    Not a dict subclass: compiled plugins would read a dict directly, past these overrides."""

    __slots__ = ("values", "read")

    def __init__(self, arguments: dict[str, Any]) -> None:
        self.values = dict(arguments)
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return self.values.get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self.values[key]

    def __contains__(self, key: str) -> bool:
        self.read.add(key)
        return key in self.values

    def unread(self) -> list[str]:
        return [key for key in self.values if key not in self.read]


class Plugin:
    #: The name used in configuration files.
    name: ClassVar[str] = ""
    #: Short reason shown in "0/N nodes: ..." explanations when this filter rejects a node.
    reason: ClassVar[str] = ""
    #: A filter on free capacity, which evicting pods can satisfy; preemption looks for nodes
    #: that pass every other filter.
    checks_free_capacity: ClassVar[bool] = False
    #: Whether ``filter`` over every node costs about one pass over them (a lookup by node or
    #: by domain): the search then asks it of the whole cluster rather than of the feasible
    #: nodes picked out first, where nothing beyond a node's row is scored.
    filters_in_one_pass: ClassVar[bool] = False
    #: Default weight of the score, overridable with the ``weight`` argument.
    default_weight: ClassVar[float] = 1.0
    #: Whether ``allocatable`` compares the queue's use (the sum of what was placed) plus the
    #: request with limits fixed for the session, so that ``allocatable_pods`` and
    #: ``allocatable_after`` can tell, without placing them, how many pods of a gang the
    #: queue takes one by one and why it refuses the next.
    allocatable_additive: ClassVar[bool] = False
    #: Whether ``job_enqueueable`` can change its answer as time passes (e.g. a waiting-time
    #: limit); enqueue then re-examines every waiting job in every cycle.
    admission_depends_on_time: ClassVar[bool] = False
    #: Whether ``job_order`` or ``job_enqueueable`` can tell apart two jobs awaiting admission
    #: that are alike in queue, namespace, priority and minResources (other than by
    #: submission time): enqueue then asks about each such job on its own instead of once per
    #: line of alike jobs (see berth.framework.backlog).
    per_job_admission: ClassVar[bool] = False
    #: Whether serving one queue can change another queue's ``queue_order`` key (orderings
    #: along a queue tree compare ancestors' shares); allocate then re-ranks every queue
    #: after each turn instead of only the queue it served. A plugin may set it per session.
    queue_order_shared: bool = False
    #: Whether ``job_order``, ``queue_order`` and ``overused`` count the pods placed in a
    #: turn's open statement as they will count them once it is committed. Where every such
    #: plugin does, allocate serves a job turn after turn in one statement while the job
    #: would go next anyway (see ``berth.actions.turns.NextTurn``).
    orders_see_placements: ClassVar[bool] = False
    #: Whether ``job_order`` and ``job_valid`` read nothing but the job itself (its group and
    #: pods, what it holds) and the cluster's total, not the time nor other jobs: a job's key
    #: and verdict then move only when the job changes, and allocate keeps the key of a job
    #: it found to fit on no node across sessions, leaving the job out of its line
    #: (``berth.actions.parking``). A plugin may set it per instance.
    job_answers_own: bool = False
    #: Whether the plugin's node answers depend on what owns the pod (its ReplicaSet's or
    #: Job's peers, as default spreading counts them): pods of different owners then never
    #: share an equivalence class.
    classes_by_owner: bool = False
    #: Whether the answers depend on which job or workload the pod belongs to (an estimate
    #: learned from its earlier pods): pods of different jobs then never share a class.
    classes_by_job: bool = False
    #: Whether the plugin reads what the owners' departed pods used
    #: (``ClusterState.profiles``); only then are departing pods measured.
    reads_owner_profiles: ClassVar[bool] = False
    #: Whether preempt and reclaim should pick the node whose victims come latest in job order
    #: (after the victims' priority), rather than the one with the fewest victims: for a plugin
    #: whose job order says which jobs give way first (tiresias' levels).
    victims_by_job_order: ClassVar[bool] = False
    #: Whether ``preemptable`` and ``reclaimable`` judge each candidate by itself (no running
    #: total, no look at the other candidates): their verdict on some of the candidates is
    #: then their verdict on all of them, restricted, and preempt can tell at once which nodes
    #: its victims could never free enough of.
    judges_each_alone: ClassVar[bool] = False

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        self.arguments = Arguments(arguments or {})
        self.weight = self.float_arg("weight", self.default_weight)
        #: Index of the configuration tier the plugin is in (set by the framework): votes on
        #: victims and starvation are taken tier by tier, as Volcano takes them.
        self.tier = 0

    # -- argument helpers -------------------------------------------------------

    def serves(self, point: str) -> bool:
        """Whether this instance uses an extension point its class implements; arguments can
        switch one off (drf orders queues only with ``enableHierarchy``)."""
        return True

    def bool_arg(self, key: str, default: bool) -> bool:
        value = self.arguments.get(key, default)
        if not isinstance(value, bool):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: {value!r} is not true or false"
            )
        return value

    def float_arg(self, key: str, default: float) -> float:
        value = self.arguments.get(key, default)
        try:
            number = float(value)
        except (TypeError, ValueError) as exc:
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: {value!r} is not a number"
            ) from exc
        if not math.isfinite(number):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: expected a finite number (got {value!r})"
            )
        return number

    # -- node filtering and scoring ---------------------------------------------

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        """Compile what depends only on the pod class and node labels (cached per class)."""

    def relevant(self, cls: PodClass, point: str) -> bool:
        """Whether this plugin has anything to say about pods of this class at ``point``
        ("filter" or "score"); asked once per class, after ``prepare``."""
        return True

    def is_local(self, cls: PodClass) -> bool:
        """True when a node's result depends on that node's row alone, so a cached evaluation
        can be patched on the rows that changed."""
        return True

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        raise NotImplementedError

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        """A 0..100 score per row (higher is better)."""
        raise NotImplementedError

    def room(self, cls: PodClass, state: ClusterState) -> int | None:
        """A filter's bound on how many pods of ``cls`` the schedulable nodes could take at
        once, or None for no bound. A gang that needs more is refused without trying its pods
        one by one: the bound must never be below what the filter would let through."""
        return None

    def exceeds(self, cls: PodClass, state: ClusterState, ceiling: np.ndarray) -> bool:
        """Whether this filter refuses ``cls`` on every node whose free resources are at most
        ``ceiling`` (per resource column): a filter that compares requests with free capacity
        can tell, from the most any node has free, that no node fits without looking at any.
        False where it cannot tell."""
        return False

    def room_exact(self, cls: PodClass, state: ClusterState) -> bool:
        """Whether ``room`` is exactly how many pods of ``cls`` this filter lets through when
        placed one after another (each where it fits), not only a bound."""
        return False

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        """(reason, rejected mask) pairs for the "0/N nodes" message."""
        return [(self.reason or self.name, ~self.filter(cls, state, rows))]

    def pick_devices(self, cls: PodClass, state: ClusterState, row: int) -> np.ndarray | None:
        """The GPU devices of ``row`` a pod of ``cls`` (which asks GPU) takes, as device
        indices; None leaves the choice to the next placement plugin, or to the default
        (whole devices lowest index first, a share on the fitting device with least left)."""
        raise NotImplementedError

    def on_workload(self, pods: list[Pod]) -> None:
        """The pods the cluster is expected to receive (known ahead: a trace, a fill run); a
        plugin that places against the workload's shape (fgd) learns it here."""

    # -- network topology (HyperNodes) -------------------------------------------

    def hypernode_order(
        self, job: JobInfo, topology: Topology, ids: np.ndarray, state: ClusterState
    ) -> np.ndarray:
        """A score per candidate HyperNode in ``ids`` (one tier) for placing ``job``'s gang
        within it; the highest is tried first."""
        raise NotImplementedError

    def topology_score(
        self, job: JobInfo, topology: Topology, placed: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """A score per node row in ``rows`` (already weighted) for the next pod of ``job``,
        a job with a network topology whose pods so far sit on the rows ``placed``."""
        raise NotImplementedError

    # -- job and task level -----------------------------------------------------

    def job_order(self, job: JobInfo) -> Any:
        """Sort key; smaller goes first."""
        raise NotImplementedError

    def task_order(self, pod: Pod) -> Any:
        raise NotImplementedError

    def job_valid(self, job: JobInfo) -> str | None:
        """None when the job may be scheduled, else why not."""
        raise NotImplementedError

    def job_ready(self, job: JobInfo) -> bool:
        """Whether the job may keep what allocate placed for it (gang: minMember placed)."""
        raise NotImplementedError

    #: ``job_ready`` says no while a job has fewer than minMember pods placed (gang), so that
    #: allocate need not ask it after every placement until then.
    ready_needs_min_member: bool = False

    def job_pipelined(self, job: JobInfo) -> bool:
        """Whether preempt or reclaim may keep what they did for the job. berth has no
        pipelined state (an evicted pod frees its node at once), so this is the job being
        ready once its evictions are made; a separate point so that Volcano's
        ``enableJobPipelined`` switches it alone."""
        raise NotImplementedError

    def job_starving(self, job: JobInfo) -> bool:
        """Whether the job still needs more (preempt and reclaim act for starving jobs only)."""
        raise NotImplementedError

    def on_session_open(self, session: Session) -> None:
        """Per-cycle setup (e.g. computing shares)."""

    def after_allocate(self, session: Session) -> None:
        """Allocate has placed what it could this cycle: what it left waiting is known (the
        reservation plugin picks a starving job here), and backfill is still to come."""

    def next_change(self, session: Session) -> float | None:
        """After a cycle: the time at which this plugin's answers change with no event in
        between (a running job's attained service crossing a threshold), so that the backend
        runs a cycle then; None: only events change them."""
        return None

    # -- queues, admission and eviction -----------------------------------------
    #
    # Queue-level points take the Queue; resource amounts are vectors over the cluster's
    # resource axis (they may be shorter than the axis: missing entries are zero).

    def queue_order(self, queue: Queue) -> Any:
        """Sort key; the queue with the smallest key is served next."""
        raise NotImplementedError

    def victim_queue_order(self, queue: Queue, preemptor: Queue) -> Any:
        """Sort key among the queues victims come from, for a job of ``preemptor``; the
        smallest goes first."""
        raise NotImplementedError

    def overused(self, queue: Queue) -> bool:
        """True when the queue holds all it deserves and gets nothing more this cycle."""
        raise NotImplementedError

    def overused_from(self, queue: Queue, request: np.ndarray, most: int) -> int | None:
        """How many more pods of ``request`` placed in the queue make ``overused`` true (most
        + 1: not up to ``most``), told without placing them; None where it cannot be."""
        return None

    def allocatable(self, queue: Queue, request: np.ndarray) -> str | None:
        """None when the queue may take ``request`` more, else why not."""
        raise NotImplementedError

    def allocatable_pods(self, queue: Queue, request: np.ndarray, most: int) -> int:
        """Of an ``allocatable_additive`` plugin: how many pods of ``request`` the queue takes
        before ``allocatable`` refuses one, up to ``most``."""
        raise NotImplementedError

    def allocatable_after(self, queue: Queue, request: np.ndarray, placed: int) -> Reason | None:
        """Of an ``allocatable_additive`` plugin: ``allocatable`` of one more pod of
        ``request`` once ``placed`` of them are placed (a Refusal may render it when read)."""
        raise NotImplementedError

    def preemptive(self, queue: Queue, request: np.ndarray) -> bool:
        """Whether the queue may take ``request`` back from other queues (reclaim)."""
        raise NotImplementedError

    def job_enqueueable(self, job: JobInfo) -> Vote:
        raise NotImplementedError

    def jobs_enqueueable(self, jobs: list[JobInfo]) -> list[Vote]:
        """``job_enqueueable`` for each of ``jobs`` as things stand (no admission in between):
        enqueue asks for a long backlog at once. Plugins whose check is arithmetic over
        queues answer with arrays; the default asks job by job."""
        return [self.job_enqueueable(job) for job in jobs]

    def on_job_enqueued(self, job: JobInfo) -> None:
        """The job was admitted this cycle; capacity promised to it is no longer free."""

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """The candidates this plugin lets ``pod`` evict within its queue (order kept)."""
        raise NotImplementedError

    def reclaimable(self, reclaimer: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        """The candidates, from other queues, this plugin lets ``pod`` evict."""
        raise NotImplementedError

    def on_allocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        """A pod of ``job`` now holds ``request`` (placed, or an eviction undone)."""

    def on_deallocate(self, job: JobInfo, pod: Pod, request: np.ndarray) -> None:
        """A pod of ``job`` no longer holds ``request`` (evicted, or a placement undone)."""


class RankingPlugin(Plugin):
    """A plugin whose job order is also who gives way (tiresias' levels, srtf's time left,
    edf's deadlines, themis' shares): a job may evict the running jobs that rank after it
    and ``gives_way`` (a job never ranks after itself), and preempt examines first the nodes
    whose victims come last. Since the verdict on a candidate is a comparison of two ranks,
    preempt ranks the running jobs once and compares every waiting job with all of them at
    once (``victims.RankedJobs``)."""

    victims_by_job_order = True
    judges_each_alone = True
    #: Set by the plugin as its session opens.
    session: Session | None = None

    def victim_rank(self, job: JobInfo) -> float:
        """The job's place in the order; a larger rank gives way to a smaller one. Fixed
        within a session."""
        raise NotImplementedError

    def gives_way(self, job: JobInfo) -> bool:
        """Whether a running job that ranks after a preemptor may yield to it now."""
        return True

    def preemptable(self, preemptor: JobInfo, pod: Pod, candidates: list[Pod]) -> list[Pod]:
        session = self.session
        if session is None:
            return []
        mine = self.victim_rank(preemptor)
        victims = []
        # Per job (namespace, group): its verdict; a job's pods come together.
        after: dict[tuple[str, str], bool] = {}
        for candidate in candidates:
            group = (candidate.namespace, candidate.group)
            verdict = after.get(group)
            if verdict is None:
                job = session.job_of(candidate)
                verdict = after[group] = (
                    job is not None and self.victim_rank(job) > mine and self.gives_way(job)
                )
            if verdict:
                victims.append(candidate)
        return victims


def overrides(plugin: Plugin, method: str) -> bool:
    return getattr(type(plugin), method) is not getattr(Plugin, method)
