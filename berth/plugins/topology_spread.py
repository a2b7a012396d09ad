"""topology-spread: topologySpreadConstraints. DoNotSchedule is a filter (placing the pod must
not push a domain more than maxSkew above the emptiest eligible domain); ScheduleAnyway is a
score favouring the domains with the fewest matching pods.

Domains are those of the nodes the pod could select by nodeSelector / node affinity, as in
kube-scheduler; nodes without the topology key are never eligible under DoNotSchedule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.api.objects import SpreadConstraint
from berth.cluster.state import ClusterState, SelectorKey
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass
from berth.plugins.node_affinity import node_affinity_mask


@dataclass(slots=True)
class _Constraint:
    spec: SpreadConstraint
    key: SelectorKey
    self_match: int


class TopologySpread(Plugin):
    name = "topology-spread"
    reason = "topology spread constraints"

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        constraints = [
            _Constraint(
                c, SelectorKey((pod.namespace,), c.selector), int(c.selector.matches(pod.labels))
            )
            for c in pod.spread
        ]
        cls.static[self.name] = constraints
        if constraints:
            cls.static[self.name + ":eligible"] = node_affinity_mask(pod, state)

    def relevant(self, cls: PodClass, point: str) -> bool:
        wanted = "DoNotSchedule" if point == "filter" else "ScheduleAnyway"
        return any(c.spec.when_unsatisfiable == wanted for c in cls.static[self.name])

    def is_local(self, cls: PodClass) -> bool:
        return False  # the skew is measured against the emptiest domain in the cluster

    def _domain_counts(self, cls: PodClass, state: ClusterState, c: _Constraint):
        """(domain id per node, matching pods per domain, min over eligible domains)."""
        n = state.n
        eligible = cls.static[self.name + ":eligible"]
        domains, size = state.labels.domains(c.spec.topology_key, n)
        valid = (domains >= 0) & eligible
        counts = state.pod_counts(c.key)
        totals = np.bincount(domains[valid], weights=counts[valid], minlength=size)
        present = np.zeros(size, dtype=bool)
        present[domains[valid]] = True
        if present.sum() < c.spec.min_domains:
            floor = 0.0
        else:
            floor = totals[present].min() if present.any() else 0.0
        return domains, totals, floor

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        mask = None
        for c in cls.static[self.name]:
            if c.spec.when_unsatisfiable != "DoNotSchedule":
                continue
            domains, totals, floor = self._domain_counts(cls, state, c)
            picked = domains[rows]
            has = picked >= 0
            skew = np.where(has, totals[np.maximum(picked, 0)] if len(totals) else 0, 0)
            ok = has & (skew + c.self_match - floor <= c.spec.max_skew)
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        raw = np.zeros(len(rows))
        for c in cls.static[self.name]:
            if c.spec.when_unsatisfiable != "ScheduleAnyway":
                continue
            domains, totals, _ = self._domain_counts(cls, state, c)
            picked = domains[rows]
            # A node outside every domain counts as the fullest, so it ranks last.
            worst = totals.max() + 1 if len(totals) else 1.0
            raw += np.where(picked >= 0, totals[np.maximum(picked, 0)] if len(totals) else 0, worst)
        low, high = (raw.min(), raw.max()) if len(raw) else (0.0, 0.0)
        if high == low:
            return np.full(len(rows), 100.0)
        return 100.0 * (high - raw) / (high - low)
