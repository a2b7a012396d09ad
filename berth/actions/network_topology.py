"""Allocate's turn for a job with a ``networkTopology``, as Volcano's allocate takes it.

Hard mode: the gang must sit within one HyperNode of tier ``highestTierAllowed`` or lower. The
HyperNodes are tried tier by tier, lowest first (a gang that fits one rack gets one rack); in
a tier, only those whose idle capacity covers the gang (see ``_gang_need``), in the order the
``hypernode_order`` plugins give (network-topology-aware: the fullest first), then by how many
of the job's pods each already holds, then by name. The first one within which the turn
places the gang keeps it; if none does, the job waits with a reason naming the limit. A job
with pods already running stays within the HyperNode of the allowed tier that holds them.

Preempt and reclaim keep to the same limit (``eviction_limit``). Soft mode places anywhere.
In both modes the ``topology_score`` plugins add their node score, which draws each further
pod towards the switch of the pods already placed.

Volcano tries every HyperNode of a tier and keeps the best-scored success; berth stops at the
first success in score order, which is the same choice since the score is taken before the
gang is placed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from berth.actions.gang_turn import Tasks, allocate_turn
from berth.api.objects import NetworkTopology
from berth.cluster.hypernodes import Topology
from berth.cluster.state import ClusterState
from berth.framework.job_info import JobInfo
from berth.framework.session import Session
from berth.framework.statement import Statement


def topology_turn(job: JobInfo, session: Session, tasks: Tasks, gated: bool) -> bool:
    """One allocate turn for ``job`` (whose group has a network topology)."""
    topology = session.state.topology()
    spec = job.group.network_topology
    if topology is None or spec is None:
        return allocate_turn(job, session, tasks, gated)
    statement = session.statement()
    placed = _placed_rows(job, session)
    scorers = session.framework.topology_scorers
    if scorers:
        session.bonus = _bonus(job, session, topology, placed, statement)
    try:
        if not spec.hard:
            return allocate_turn(job, session, tasks, gated, statement)
        return _within_hypernode(job, session, topology, tasks, gated, statement, placed)
    finally:
        session.bonus = None
        session.region = None


def _within_hypernode(
    job: JobInfo,
    session: Session,
    topology: Topology,
    tasks: Tasks,
    gated: bool,
    statement: Statement,
    placed: np.ndarray,
) -> bool:
    state = session.state
    n = state.n
    spec = job.group.network_topology
    assert spec is not None
    highest, top, anywhere = _limit(spec, topology)
    if top < 0:
        session.job_reasons[job.key] = (
            f"networkTopology: highestTierAllowed {highest} is below every HyperNode tier "
            f"(the lowest is {topology.tiers[0]})"
        )
        return False
    member = topology.member
    within = np.ones(n, dtype=bool)
    if len(placed) and not anywhere:
        home = _home(topology, top, placed, n)
        if home is None:
            session.job_reasons[job.key] = (
                f"networkTopology: the job's running pods are not within one HyperNode of "
                f"tier {highest} or lower"
            )
            return False
        within = home
    need = _gang_need(job, session, tasks)
    tried = short = 0
    for level in range(top + 1):
        ids = np.unique(member[level, :n][within])
        ids = ids[ids >= 0]
        if not len(placed) and len(ids) and need[0].any():
            fits = _eligible(topology, level, ids, state, need)
            short += int(len(ids) - fits.sum())
            ids = ids[fits]
        for hypernode in _ranked(job, session, topology, ids, placed):
            tried += 1
            if _attempt(job, session, tasks, gated, statement, member[level, :n] == hypernode):
                return tasks.more()
    if anywhere:
        tried += 1
        if _attempt(job, session, tasks, gated, statement, None):
            return tasks.more()
    session.job_reasons[job.key] = (
        f"networkTopology: no HyperNode of tier {highest} or lower can hold the gang "
        f"({short} without the idle capacity, {tried} tried)"
    )
    return False


def eviction_limit(session: Session, job: JobInfo) -> tuple[bool, np.ndarray | None]:
    """Whether preempt and reclaim may evict for ``job`` and, if its pods must stay within one
    HyperNode, the rows they may use. A hard-mode gang with pods running stays within the
    HyperNode of its allowed tier that holds them; one with none running is left to allocate
    (berth does not search HyperNodes for room to free, as Volcano's eviction gradients do)."""
    spec = job.group.network_topology
    topology = session.state.topology() if spec is not None and spec.hard else None
    if spec is None or topology is None:
        return True, None
    _, top, anywhere = _limit(spec, topology)
    if anywhere:
        return True, None
    placed = _placed_rows(job, session)
    home = _home(topology, top, placed, session.state.n) if top >= 0 and len(placed) else None
    return home is not None, home


def _limit(spec: NetworkTopology, topology: Topology) -> tuple[int, int, bool]:
    """The highest tier allowed, its level (-1: below every HyperNode), and whether it lies
    above every HyperNode's tier: the cluster as a whole (Volcano's top HyperNode)."""
    highest = spec.highest_tier if spec.highest_tier is not None else topology.tiers[-1]
    return highest, topology.level_of(highest), highest > topology.tiers[-1]


def _home(topology: Topology, top: int, placed: np.ndarray, n: int) -> np.ndarray | None:
    """The rows of the HyperNode of level ``top`` that holds every ``placed`` row, or None if
    none does."""
    homes = np.unique(topology.member[top, placed])
    if len(homes) != 1 or homes[0] < 0:
        return None
    return topology.member[top, :n] == homes[0]


def _attempt(
    job: JobInfo,
    session: Session,
    tasks: Tasks,
    gated: bool,
    statement: Statement,
    region: np.ndarray | None,
) -> bool:
    """One allocate turn within ``region`` (None: anywhere); whether it placed the job. A
    failed turn leaves ``tasks`` as it found them, for the next region."""
    start, hopeless = tasks.next, set(tasks.hopeless)
    session.unplaced.pop(job.key, None)  # what an earlier region refused says nothing here
    session.region = region
    before = len(job.bound)
    allocate_turn(job, session, tasks, gated, statement)
    session.region = None
    if len(job.bound) > before:
        return True
    tasks.next, tasks.hopeless = start, hopeless
    return False


def _gang_need(
    job: JobInfo, session: Session, tasks: Tasks
) -> tuple[np.ndarray, np.ndarray | None, int]:
    """What a HyperNode must have idle to hold the gang: its minResources, or, if more, the
    requests of the pods still needed to reach minMember (in the order they are placed); and
    when those pods all ask the same, that request and how many of them are needed (a
    HyperNode must then have that many pod-sized slots on its nodes, not only the sum)."""
    state = session.state
    need = job.min_request(state)
    missing = job.group.min_member - len(job.bound)
    total = np.zeros(state.width, dtype=np.float64)
    total[: len(need)] = need
    if missing <= 0:
        return total, None, 0
    requests = [
        session.search.compile(p).request for p in tasks.remaining(len(tasks.pods), missing)
    ]
    if not requests:
        return total, None, 0
    summed = np.sum(requests, axis=0)
    total[: len(summed)] = np.maximum(total[: len(summed)], summed)
    first = requests[0]
    same = all(np.array_equal(r, first) for r in requests[1:])
    return total, (first if same else None), len(requests)


def _eligible(
    topology: Topology,
    level: int,
    ids: np.ndarray,
    state: ClusterState,
    need: tuple[np.ndarray, np.ndarray | None, int],
) -> np.ndarray:
    """Which of ``ids`` have the idle capacity the gang needs (see ``_gang_need``)."""
    n = state.n
    rows = np.flatnonzero(state.schedulable[:n])
    total, request, count = need
    free = state.free[:n]
    idle = topology.sums(level, free, rows)[ids]
    fits = (idle >= total[: idle.shape[1]]).all(axis=1) & ~total[idle.shape[1] :].any()
    if request is not None:
        asked = np.flatnonzero(request)
        slots = (free[:, asked] // request[asked]).min(axis=1) if len(asked) else None
        if slots is not None:
            fits &= topology.sums(level, slots, rows)[ids] >= count
    return fits


def _ranked(
    job: JobInfo, session: Session, topology: Topology, ids: np.ndarray, placed: np.ndarray
) -> list[int]:
    """Candidate HyperNodes (one tier) in the order they are tried."""
    if not len(ids):
        return []
    score = np.zeros(len(ids))
    for plugin in session.framework.hypernode_orders:
        score += plugin.hypernode_order(job, topology, ids, session.state)
    level = int(topology.level[ids[0]])
    mine = np.zeros(len(ids))
    if len(placed):
        counts = np.bincount(topology.member[level, placed] + 1, minlength=len(topology.names) + 1)
        mine = counts[ids + 1].astype(np.float64)
    # ids are in name order within a tier, so a stable sort leaves name as the last key.
    order = np.lexsort((-mine, -score))
    return [int(i) for i in ids[order]]


def _placed_rows(job: JobInfo, session: Session) -> np.ndarray:
    rows = session.state.rows
    return np.array([rows[p.bound_node] for p in job.bound.values()], dtype=np.int64)


def _bonus(
    job: JobInfo, session: Session, topology: Topology, bound: np.ndarray, statement: Statement
) -> Callable[[np.ndarray], np.ndarray]:
    """The topology scorers' node score for the job's next pod, given its pods bound and
    those the open statement has placed."""
    plugins = session.framework.topology_scorers

    def bonus(rows: np.ndarray) -> np.ndarray:
        fresh = [op.row for op in statement.journal if op.job is job and op.reason is None]
        placed = np.concatenate([bound, np.array(fresh, dtype=np.int64)]) if fresh else bound
        total = np.zeros(len(rows))
        for plugin in plugins:
            total += plugin.topology_score(job, topology, placed, rows)
        return total

    return bonus
