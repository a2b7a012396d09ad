"""Explaining one pod's placement: for the cycle that placed or refused it, how many nodes each
filter rejected and why, and how the best nodes scored, plugin by plugin.

The node search never keeps this: it works on cached per-class totals patched by row, and the
per-plugin figures are gone as soon as they are summed. So explanations are asked for ahead of a
run (pod name patterns) and computed only for those pods, at the moment of their decision, by
evaluating every filter and scorer of the pod's class afresh over every node: the same plugin
code on the same cluster state, so the node it ranks first is the one the search chose (in the
default full search). A pod not asked about costs one ``None`` check per placement.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import numpy as np

from berth.api.objects import Pod
from berth.framework.search import NodeSearch, nodes_message

if TYPE_CHECKING:
    from berth.framework.job_info import JobInfo
    from berth.framework.podclass import PodClass
    from berth.framework.session import Session
    from berth.framework.statement import Bind

#: Nodes whose scores an explanation lists (the chosen node is added when not among them).
TOP_NODES = 5
PLACED, REFUSED, ROLLED_BACK, PREEMPTED = "placed", "refused", "rolled back", "placed by eviction"


@dataclass(slots=True)
class FilterTally:
    """One filter's verdict: the nodes it rejected (among those every earlier filter passed),
    by reason, and how many nodes were left after it."""

    plugin: str
    rejected: dict[str, int]
    passed: int


@dataclass(slots=True)
class NodeScore:
    node: str
    total: float
    #: plugin → (raw score 0..100, weighted: raw times the plugin's weight)
    scores: dict[str, tuple[float, float]]
    chosen: bool = False


@dataclass(slots=True)
class Decision:
    """What one cycle decided for a pod, and why."""

    time: float
    cycle: int
    outcome: str  # PLACED, REFUSED, ROLLED_BACK or PREEMPTED
    node: str = ""
    nodes: int = 0
    filters: list[FilterTally] = field(default_factory=list)
    scores: list[NodeScore] = field(default_factory=list)
    #: Scorers with their weights, in the order they add up.
    weights: dict[str, float] = field(default_factory=dict)
    message: str = ""  # "0/N nodes available: ..." for a refusal, else a line of context

    @property
    def feasible(self) -> int:
        return self.filters[-1].passed if self.filters else self.nodes

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": round(self.time, 3),
            "cycle": self.cycle,
            "outcome": self.outcome,
            "node": self.node,
            "nodes": self.nodes,
            "feasible": self.feasible,
            "message": self.message,
            "filters": [
                {"plugin": f.plugin, "rejected": dict(f.rejected), "passed": f.passed}
                for f in self.filters
            ],
            "weights": self.weights,
            "scores": [
                {
                    "node": s.node,
                    "total": round(s.total, 3),
                    "chosen": s.chosen,
                    "plugins": {
                        name: {"raw": round(raw, 3), "weighted": round(weighted, 3)}
                        for name, (raw, weighted) in s.scores.items()
                    },
                }
                for s in self.scores
            ],
        }


@dataclass(slots=True)
class PodRecord:
    """What was explained for one pod: the cycle that placed it, the last cycle that refused
    it, and how many cycles refused it (the first at ``first_refused``)."""

    placed: Decision | None = None
    refused: Decision | None = None
    refusals: int = 0
    first_refused: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "placed": None if self.placed is None else self.placed.to_dict(),
            "refused": None if self.refused is None else self.refused.to_dict(),
            "refusals": self.refusals,
            "first_refused": None if self.first_refused is None else round(self.first_refused, 3),
        }


def evaluate(
    search: NodeSearch,
    cls: PodClass,
    chosen: int | None,
    held: tuple[str, np.ndarray] | None = None,
) -> tuple[list[FilterTally], list[NodeScore], dict[str, float]]:
    """Every filter's tally over every node, then the per-plugin scores of the best feasible
    nodes (and of ``chosen``); ``held`` names nodes kept for another job (a reservation) that
    this pod may not use, as a last filter."""
    state = search.state
    n = state.n
    remaining = state.schedulable[:n].copy()
    tallies = []
    cordoned = n - int(remaining.sum())
    if cordoned:
        tallies.append(FilterTally("(node)", {"node unschedulable": cordoned}, n - cordoned))
    for name, counts, passed in search.tally(cls, remaining):
        tallies.append(FilterTally(name, dict(counts), passed))
    if held is not None:
        reason, mask = held
        width = min(n, len(mask))
        blocked = remaining[:width] & mask[:width]
        remaining[:width] &= ~mask[:width]
        tallies.append(
            FilterTally("reservation", {reason: int(blocked.sum())}, int(remaining.sum()))
        )
    idx = np.flatnonzero(remaining)
    scorers = cls.scorers
    weights = {plugin.name: plugin.weight for plugin in scorers}
    if not len(idx):
        return tallies, [], weights
    total = state.tiebreak[idx].copy()
    raw: dict[str, np.ndarray] = {}
    for plugin in scorers:
        cls.scratch.clear()
        raw[plugin.name] = np.asarray(plugin.score(cls, state, idx), dtype=np.float64)
        total = total + plugin.weight * raw[plugin.name]
    cls.scratch.clear()
    order = np.argsort(-total, kind="stable")[:TOP_NODES].tolist()
    if chosen is not None:
        position = np.flatnonzero(idx == chosen)
        if len(position) and int(position[0]) not in order:
            order.append(int(position[0]))
    scores = [
        NodeScore(
            state.names[int(idx[k])],
            float(total[k]),
            {p.name: (float(raw[p.name][k]), float(p.weight * raw[p.name][k])) for p in scorers},
            int(idx[k]) == chosen,
        )
        for k in order
    ]
    return tallies, scores, weights


class Explainer:
    """Records decisions for the pods whose name (or ``namespace/name``) matches one of
    ``patterns`` (shell-style globs)."""

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = list(patterns)
        self.records: dict[str, PodRecord] = {}
        self.cycle = 0
        self._wanted: dict[str, bool] = {}
        #: This cycle's decisions by pod key, settled once the cycle has committed.
        self._open: dict[str, tuple[Pod, Decision, int | None]] = {}

    def wants(self, pod: Pod) -> bool:
        key = pod.key
        wanted = self._wanted.get(key)
        if wanted is None:
            wanted = self._wanted[key] = any(
                fnmatchcase(pod.name, p) or fnmatchcase(key, p) for p in self.patterns
            )
        return wanted

    def saw(self, session: Session, job: JobInfo, pod: Pod, cls: PodClass, row: int | None) -> None:
        """The node search answered ``row`` for ``pod`` (None: no node) in this cycle."""
        state = session.state
        held = None
        hold = session.hold
        if hold is not None and not hold.lets(job, pod, session.now):
            held = (f"held for starving job {hold.job}", hold.held)
        if row is None and pod.key in self._open:
            return  # tried again in the same cycle (another turn): the same answer
        tallies, scores, weights = evaluate(session.search, cls, row, held)
        decision = Decision(
            session.now,
            self.cycle,
            REFUSED if row is None else PLACED,
            "" if row is None else state.names[row],
            state.n,
            tallies,
            scores,
            weights,
        )
        if row is None:
            counts: Counter[str] = Counter()
            for tally in tallies:
                counts.update(tally.rejected)
            decision.message = nodes_message(state.n, counts)
        self._open[pod.key] = (pod, decision, row)

    def settle(self, session: Session, binds: list[Bind]) -> None:
        """The cycle is over: keep what it decided for the pods asked about. A pod the search
        placed but that is not bound was rolled back with its job (a gang short of minMember,
        a queue over its share); one bound without a search of its own was placed on room
        that evicting other pods made (preempt, reclaim)."""
        bound = {bind.pod.key: bind for bind in binds if self.wants(bind.pod)}
        for key, (pod, decision, row) in self._open.items():
            record = self.records.setdefault(key, PodRecord())
            bind = bound.get(key)
            if bind is not None and row is not None and bind.node == decision.node:
                record.placed = decision
                continue
            if row is not None:
                decision.outcome = ROLLED_BACK
                reason = session.job_reasons.get(pod.job_key)
                decision.message = (
                    f"the search chose {decision.node}, but the placement was undone: "
                    + (str(reason) if reason else "its job could not start whole (gang)")
                )
            record.refused = decision
            record.refusals += 1
            if record.first_refused is None:
                record.first_refused = decision.time
        for key, bind in bound.items():
            record = self.records.setdefault(key, PodRecord())
            if record.placed is None or record.placed.cycle != self.cycle:
                record.placed = Decision(
                    session.now,
                    self.cycle,
                    PREEMPTED,
                    bind.node,
                    session.state.n,
                    message="placed by preempt or reclaim on the room its evictions made",
                )
        self._open.clear()
        self.cycle += 1
