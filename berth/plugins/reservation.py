"""reservation: hold nodes for the job that has starved longest, so that a stream of small jobs
cannot keep a big one from ever starting (Volcano's elect/reserve actions, the EASY backfilling
of SLURM and Maui).

A job is starving once it has waited ``reservation.waitTime`` (a Go duration, default 30m) since
submission and allocate, which had it admitted and its queue willing, still could not place
minMember of its pods. The first starving job in job order gets a reservation: the nodes on which
its missing tasks will fit soonest once the pods running there end (start plus duration; a pod
without a duration never ends). That moment is the shadow time. Until the job starts, allocate
and backfill put other pods on held nodes only if they are expected to end by the shadow time,
so whatever they take is free again when the job needs it; everywhere else scheduling goes on
as before. The hold is kept as made (so it is deterministic and never drifts later) until the
job has started, is gone, is held back by its queue, or is still waiting at the shadow time,
when a new reservation is made.

Held nodes are whole nodes, sized for a slot that fits any of the missing tasks (their
element-wise largest request), on the nodes every one of them may use.

Two kinds of room are not what they seem to a plan made of end times:

- **Lent nodes are never held.** A node labelled as lent (``reservation.lentNodes``, by default
  capacity loaning's ``berth.io/pool: lent``) belongs to another pool, which takes it back when
  it needs it: holding it would keep the owner's pods off it (inference waited hours for a
  reclaimed server that stayed held), and the job could lose it before its shadow time anyway.
  Nodes of a pool whose taint the job's pods do not tolerate are out already (the filters).
- **Elastic workers above their job's minimum can be room now** (``reservation.elasticSurplus:
  true``). A worker of an elastic job (``berth.io/elastic``) beyond its ``minMember`` can be
  taken off without the job losing its work, and such a worker has no duration: counted as a
  pod that never ends, it would hide the room that is easiest to free. Where something does take
  them off (a scaling policy's starvation guard, on by default with capacity loaning), their
  room counts as free now (the newest placed of each job first), so the plan prefers the nodes
  those workers hold over waiting for rigid pods to end. Without such a guard nobody frees them,
  so the default counts them as pods that never end. A hold whose shadow time is already
  reached lasts until a pod leaves, a pod is evicted or a node or queue changes (what could give
  a better plan), rather than one session.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from berth.api.elastic import is_elastic
from berth.api.keys import LENT_POOL, POOL_LABEL
from berth.api.objects import GroupPhase, Pod
from berth.api.selectors import Requirement
from berth.durations import DurationError, parse_duration
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, PluginArgumentError, Refusal
from berth.framework.reasons import HeldBack, node_list
from berth.framework.session import Hold, Session

WAIT_TIME = "reservation.waitTime"
DEFAULT_WAIT_TIME = "30m"
LENT_NODES = "reservation.lentNodes"
ELASTIC_SURPLUS = "reservation.elasticSurplus"
#: Capacity loaning's lent servers (docs/loaning.md), labelled so in the simulator and by
#: ``berth serve --loaning`` alike.
DEFAULT_LENT_NODES = {POOL_LABEL: LENT_POOL}
_ADMITTED = (GroupPhase.INQUEUE, GroupPhase.RUNNING)


class Reservation(Plugin):
    name = "reservation"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        raw = self.arguments.get(WAIT_TIME, DEFAULT_WAIT_TIME)
        where = f"plugin {self.name}: argument {WAIT_TIME}"
        if not isinstance(raw, str | int | float) or isinstance(raw, bool):
            raise PluginArgumentError(f"{where}: {raw!r} is not a duration (expected e.g. 30m)")
        try:
            self.wait_time = parse_duration(str(raw))
        except DurationError as exc:
            raise PluginArgumentError(f"{where}: {exc}") from exc
        if self.wait_time < 0:
            raise PluginArgumentError(f"{where}: must not be negative (got {raw!r})")
        lent = self.arguments.get(LENT_NODES, DEFAULT_LENT_NODES)
        if not isinstance(lent, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in lent.items()
        ):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {LENT_NODES}: {lent!r} is not a mapping of "
                "labels to values (expected e.g. {berth.io/pool: lent})"
            )
        #: Labels (all of them) that mark a node as lent by another pool: never held.
        self.lent = tuple(Requirement(k, "In", (v,)) for k, v in sorted(lent.items()))
        surplus = self.arguments.get(ELASTIC_SURPLUS, False)
        if not isinstance(surplus, bool):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {ELASTIC_SURPLUS}: {surplus!r} is not true or false"
            )
        #: Whether elastic workers above their job's minimum count as room free now.
        self.elastic_surplus = surplus
        #: The (structure epoch, admission epoch) at which a hold whose shadow time had already
        #: come was made: it stands until they move.
        self._reached: tuple[int, int] | None = None
        #: The session the hold lives in: allocate and backfill release it there when the
        #: held job starts.
        self._session: Session | None = None
        #: Jobs no reservation could be made for, with the (structure epoch, admission epoch)
        #: of that attempt: only a node change or a pod leaving adds room to plan with.
        self._unfit: dict[str, tuple[int, int]] = {}

    @property
    def hold(self) -> Hold | None:
        """The standing hold, carried from one session to the next."""
        return self._session.hold if self._session is not None else None

    def on_session_open(self, session: Session) -> None:
        hold = self.hold
        if hold is not None and not _short(session.jobs.get(hold.job)):
            hold = None
        session.hold = hold
        self._session = session

    def after_allocate(self, session: Session) -> None:
        hold = self.hold
        epoch = (session.state.structure_epoch, session.admission_epoch)
        if hold is not None:
            job = session.jobs.get(hold.job)
            blocked = hold.job in session.job_reasons
            standing = session.now < hold.shadow or self._reached == epoch
            if _short(job) and not blocked and standing:
                assert job is not None
                session.job_reasons[job.key] = _holding(session, job, hold)
                return
            session.hold = None
        self._unfit = {k: e for k, e in self._unfit.items() if e == epoch}
        starving = [j for j in session.jobs.values() if self._starving(j, session)]
        running: _Running | None = None
        lent: np.ndarray | None = None
        for job in sorted(starving, key=session.job_order_key):
            if running is None or lent is None:
                running = _Running(session, self.elastic_surplus)
                lent = self._lent_rows(session)
            hold = _reserve(session, job, running, lent)
            if hold is not None:
                session.hold = hold
                self._reached = epoch if hold.shadow <= session.now else None
                session.job_reasons[job.key] = _holding(session, job, hold)
                return
            self._unfit[job.key] = epoch

    def _lent_rows(self, session: Session) -> np.ndarray:
        """Nodes labelled as lent (every label of ``reservation.lentNodes``)."""
        n = session.state.n
        rows = np.ones(n, dtype=bool) if self.lent else np.zeros(n, dtype=bool)
        for requirement in self.lent:
            rows &= session.state.labels.match(requirement, n)
        return rows

    def _starving(self, job: JobInfo, session: Session) -> bool:
        reason = session.job_reasons.get(job.key)
        return (
            _short(job)
            and len(job.pending) >= _missing(job)
            and job.group.phase in _ADMITTED
            and not job.only_best_effort()
            and (reason is None or isinstance(reason, HeldBack))
            and session.now - job.group.submit_time >= self.wait_time
            and job.key not in self._unfit
        )


class _Running:
    """The bound pods that are expected to end, as arrays: node row, expected end and request
    (one row per pod). Gathered at most once per session, and only when a job starves. With
    ``surplus``, an elastic job's workers above its minimum end now, the newest placed first."""

    def __init__(self, session: Session, surplus: bool) -> None:
        state, now = session.state, session.now
        jobs = session.all_jobs
        vectors: dict[tuple, np.ndarray] = {}
        rows, ends, requests = [], [], []
        #: Per elastic job above its minimum, its live workers as (placed, name, index).
        elastic: dict[str, list[tuple[float, str, int]]] = {}
        for row in range(state.n):
            for pod in state.pods_on[row].values():
                end = _expected_end(pod, now)
                workers = None
                if surplus and not pod.terminating:
                    job = pod.job_key
                    workers = elastic.get(job)
                    if workers is None and _above_minimum(jobs.get(job)):
                        workers = elastic[job] = []
                if workers is not None:
                    workers.append((pod.placed_at(now), pod.name, len(ends)))
                elif math.isinf(end):
                    continue  # (never ends)
                # Pods with the same requests share one vector.
                key = tuple(pod.requests.items())
                vector = vectors.get(key)
                if vector is None:
                    vector = vectors[key] = state.request_vector(pod.requests)
                rows.append(row)
                ends.append(end)
                requests.append(vector)
        for job, workers in elastic.items():
            extra = max(len(workers) - max(jobs[job].group.min_member, 1), 0)
            for _, _, index in sorted(workers, reverse=True)[:extra]:
                ends[index] = now
        ending = np.isfinite(np.array(ends, dtype=np.float64))
        self.rows = np.array(rows, dtype=np.intp)[ending]
        self.ends = np.array(ends, dtype=np.float64)[ending]
        self.requests = np.zeros((len(self.rows), state.width), dtype=np.int64)
        for i, index in enumerate(np.flatnonzero(ending).tolist()):
            vector = requests[index]
            self.requests[i, : len(vector)] = vector


def _above_minimum(job: JobInfo | None) -> bool:
    """An elastic job running more workers than its minMember."""
    return (
        job is not None and job.active > job.group.min_member and is_elastic(job.group.annotations)
    )


def _reserve(session: Session, job: JobInfo, running: _Running, lent: np.ndarray) -> Hold | None:
    """Hold the nodes on which the job's missing tasks fit soonest, lent nodes left out; None
    when too few nodes could ever take them, even once every pod that is expected to end has
    ended."""
    state, search = session.state, session.search
    n = state.n
    need = _missing(job)
    tasks = sorted(job.pending, key=session.task_order_key)[:need]
    slot = np.zeros(state.width, dtype=np.int64)
    rows = np.arange(n)
    for cls in {id(c): c for c in map(search.compile, tasks)}.values():
        slot[: len(cls.request)] = np.maximum(slot[: len(cls.request)], cls.request)
        others = [f for f in cls.filters if not f.checks_free_capacity]
        rows = np.intersect1d(rows, search.feasible(cls, slice(0, n), others))
    cols = np.flatnonzero(slot)
    slot = slot[cols]
    rows = rows[~lent[rows]]
    rows = rows[_slots(state.allocatable[rows][:, cols], slot) > 0]
    position = np.full(n, -1, dtype=np.intp)
    position[rows] = np.arange(len(rows))
    on = position[running.rows]
    mine = np.flatnonzero(on >= 0)
    released = running.requests[mine]
    if released.shape[1] < state.width:  # a resource first seen after the pods were gathered
        released = np.pad(released, ((0, 0), (0, state.width - released.shape[1])))
    plan = earliest_fit(
        state.free[rows][:, cols], on[mine], running.ends[mine], released[:, cols], slot, need
    )
    if plan is None:
        return None
    shadow, chosen = plan
    held = np.zeros(n, dtype=bool)
    held[rows[chosen]] = True
    return Hold(job.key, held, max(shadow, session.now))


def earliest_fit(
    free: np.ndarray,
    node: np.ndarray,
    end: np.ndarray,
    released: np.ndarray,
    slot: np.ndarray,
    need: int,
) -> tuple[float, np.ndarray] | None:
    """The earliest time ``need`` slots fit on the nodes, and the nodes that provide them.

    ``free`` is each node's room now (nodes × resources); pod i frees ``released[i]`` on node
    ``node[i]`` at ``end[i]``. Each pod's end is an event that adds whole slots to its node
    (counted from the room freed by that node's pods ending up to then), room free now is an
    event at time -inf; events are taken in time order, the bigger gain first among equal
    times (fewer nodes held), until the slots reach ``need``. Returns None if they never do;
    the time is -inf when they fit already.
    """
    now_slots = _slots(free, slot)
    order = np.lexsort((end, node))
    node, end, released = node[order], end[order], released[order]
    cumulative = np.cumsum(released, axis=0)
    first = np.ones(len(node), dtype=bool)
    first[1:] = node[1:] != node[:-1]
    group = np.cumsum(first) - 1
    before_group = (cumulative - released)[first]
    after = _slots(free[node] + cumulative - before_group[group], slot)
    before = np.where(first, now_slots[node], np.roll(after, 1))
    times = np.concatenate([np.full(len(free), -np.inf), end])
    gains = np.concatenate([now_slots, after - before])
    where = np.concatenate([np.arange(len(free)), node])
    useful = gains > 0
    times, gains, where = times[useful], gains[useful], where[useful]
    events = np.lexsort((where, -gains, times))
    reached = int(np.searchsorted(np.cumsum(gains[events]), need))
    if reached == len(events):
        return None
    return float(times[events[reached]]), np.unique(where[events[: reached + 1]])


def _slots(room: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Whole slots that fit in each row of ``room`` (never below zero)."""
    if not len(room):
        return np.zeros(0, dtype=np.int64)
    return np.maximum((room // slot).min(axis=1), 0)


def _expected_end(pod: Pod, now: float) -> float:
    """When a bound pod should leave its node: its start (its bind, or now for a pod bound
    this cycle) plus its duration; infinity without a duration."""
    if pod.duration is None:
        return math.inf
    start = pod.start_time if pod.start_time is not None else pod.bind_time
    return (now if start is None else start) + pod.duration


def _missing(job: JobInfo) -> int:
    """Pods the job still needs placed to start."""
    return max(job.group.min_member, 1) - job.active


def _short(job: JobInfo | None) -> bool:
    """Pending and still short of minMember (or of its one pod)."""
    return (
        job is not None
        and bool(job.pending)
        and job.active + job.allocated < max(job.group.min_member, 1)
    )


def _holding(session: Session, job: JobInfo, hold: Hold) -> Refusal:
    """The held job's reason: its reservation, then what keeps it from starting now."""
    state, search = session.state, session.search
    names = [state.names[r] for r in np.flatnonzero(hold.held)]
    pod = min(job.pending, key=session.task_order_key)
    minimum = max(job.group.min_member, 1)

    def render() -> str:
        cls = search.compile(pod)
        if search.place(cls) is None:
            now = search.explain(cls)
        else:
            now = f"gang {job.active}/{minimum}: not enough nodes for the whole group at once"
        return f"holds a reservation ({node_list(names)}) until t={hold.shadow:.0f}s; {now}"

    return Refusal(render)
