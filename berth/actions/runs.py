"""Placing a gang's pods of one class on one search, with the decisions one by one placement
would make.

A pod's class whose plugins each look at a node's own row (no spread, no inter-pod affinity)
scores a node the same whatever happens on the other nodes. Placing a pod changes only its
own row's score, so a gang's next pods go to the next best rows in turn unless a row already
taken scores better, with its pod, than the next row did without. ``place_run`` places a run
of such pods on the best rows at once, scores the rows they took again in one patch, and keeps
the placements up to the first that one by one placement would have made elsewhere. Under
scores that spread pods (least-allocated, the default) nearly every run is kept whole; under
scores that pack them (most-allocated, bin packing) the node just used wins again, and the
class's ``Pace`` turns runs off until its pods spread again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.actions.turns import NextTurn
from berth.api.objects import Pod
from berth.framework.job_info import JobInfo
from berth.framework.podclass import PodClass
from berth.framework.session import Session
from berth.framework.statement import Statement

#: Pods a class's first run places, and the most a run grows to.
FIRST = 4
MOST = 32
#: Up to this many rows, the best are found by repeated ``argmax`` (cheaper than a partition).
_ARGMAX_ROWS = 8


@dataclass(slots=True)
class Pace:
    """How many pods of a class the next run places: doubled while runs are kept whole, cut to
    what was kept when a run is cut, and off once only its first pod was kept, until pods
    placed one by one land on a new node ``FIRST`` times in a row."""

    size: int = FIRST
    streak: int = 0
    last: int | None = None

    def ran(self, kept: int, placed: int) -> None:
        """A run placed ``placed`` pods, of which one by one placement agrees with ``kept``."""
        if kept == placed:
            self.size = min(2 * self.size, MOST)
        else:
            self.size = kept if kept > 1 else 0
            self.streak = 0

    def placed(self, row: int) -> None:
        """A pod of the class placed one by one, on ``row``."""
        if self.size:
            return
        self.streak = self.streak + 1 if row != self.last else 0
        self.last = row
        if self.streak >= FIRST:
            self.size = FIRST


def pace(cls: PodClass) -> Pace | None:
    """The class's pace, or None where runs cannot be placed on one search: a plugin of the
    class looks beyond a node's own row, or a placement can change other rows (a DRA device
    may be reachable from several nodes)."""
    if cls.global_filters or cls.global_scorers or cls.pod.resource_claims:
        return None
    kept = cls.static.get(__name__)
    if kept is None:
        kept = cls.static[__name__] = Pace()
    return kept


def place_run(
    session: Session,
    statement: Statement,
    job: JobInfo,
    cls: PodClass,
    pods: list[Pod],
    turns: NextTurn | None = None,
) -> tuple[int, int]:
    """Place ``pods`` of ``job``, all of ``cls`` (which has a ``pace``), through ``statement``
    as one by one placement would, while the queue takes them; with ``turns``, each pod after
    the first is a turn of its own, placed only while the job would go next. Returns how many
    pods were kept and how many turns were begun after the first pod's. The pod after the kept
    ones is, by why the run ended:

    - one that one by one placement would put elsewhere: its turn begun, placed anew;
    - one the queue refused: its turn begun, its own search reports it;
    - one whose turn the job did not get, or none left (no feasible row, or no pod).

    Only the first shortens the class's next runs."""
    search = session.search
    total = search.evaluate(cls)
    rows = best_rows(total, len(pods)).tolist()
    before = total[rows].tolist()  # (the patch below writes into ``total``)
    start = statement.savepoint()
    placed = entered = 0
    # Where the queues' checks add up, how many pods the queue takes, and after how many it
    # is overused, are told at once.
    taken = (
        session.allocatable_pods(job, cls.request, len(rows))
        if session.allocatable_additive
        else None
    )
    over = None if turns is None else session.overused_from(job.queue, cls.request, len(rows))
    for pod, row in zip(pods, rows, strict=False):
        if placed and turns is not None:
            if not turns.goes_on(placed - 1, None if over is None else placed >= over):
                break
            entered += 1
        if taken is None:
            if session.allocatable(job, cls.request):
                break
        elif placed == taken:
            break
        statement.allocate(job, pod, row, cls)
        placed += 1
    if placed < 2:
        return placed, entered  # the first pod takes the best row, as one by one
    kept = agreeing(rows[:placed], before, search.evaluate(cls)[rows[:placed]].tolist())
    statement.rollback(start + kept)
    cls.static[__name__].ran(kept, placed)
    return kept, min(entered, kept)


def agreeing(rows: list[int], before: list[float], after: list[float]) -> int:
    """How many of the pods placed in turn on ``rows`` (best first) one by one placement puts
    there too, given each row's score ``before`` and ``after`` its pod: pod j goes to row j
    unless a row taken before it now outranks row j as it was (scores compared, then the
    lower row first, as ``argmax`` breaks ties)."""
    best = (after[0], -rows[0])
    for j in range(1, len(rows)):
        if (before[j], -rows[j]) <= best:
            return j
        best = max(best, (after[j], -rows[j]))
    return len(rows)


def best_rows(total: np.ndarray, most: int) -> np.ndarray:
    """The (at most) ``most`` feasible rows of highest score, best first, ties to the lower
    row: the rows ``argmax`` would pick in turn if no score changed."""
    n = len(total)
    most = min(most, n)
    if most <= _ARGMAX_ROWS:
        scores, picked = total.copy(), []
        for _ in range(most):
            row = int(np.argmax(scores))
            if scores[row] == -np.inf:
                break
            picked.append(row)
            scores[row] = -np.inf
        return np.array(picked, dtype=np.intp)
    kth = np.partition(total, n - most)[n - most]
    rows = np.flatnonzero(total > kth)
    if kth > -np.inf:
        rows = np.concatenate((rows, np.flatnonzero(total == kth)[: most - len(rows)]))
    return rows[np.lexsort((rows, -total[rows]))]
