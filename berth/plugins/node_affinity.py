"""node-affinity: nodeSelector, required node affinity and spec.nodeName as a filter; preferred
node affinity as a score.

Everything here depends only on node labels, so it is computed once per pod class as a static
mask and score, and never again until nodes change.
"""

from __future__ import annotations

import numpy as np

from berth.api.objects import NodeSelectorTerm, Pod, Requirement
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


def term_mask(term: NodeSelectorTerm, state: ClusterState) -> np.ndarray:
    """Nodes matching every requirement of one term; an empty term matches no node."""
    n = state.n
    if not term.expressions and not term.fields:
        return np.zeros(n, dtype=bool)
    mask = np.ones(n, dtype=bool)
    for req in term.expressions:
        mask &= state.labels.match(req, n)
    for req in term.fields:
        mask &= _field_mask(req, state)
    return mask


def _field_mask(req: Requirement, state: ClusterState) -> np.ndarray:
    """matchFields supports metadata.name only, as in Kubernetes."""
    hit = np.zeros(state.n, dtype=bool)
    for name in req.values:
        row = state.rows.get(name)
        if row is not None:
            hit[row] = True
    return hit if req.operator == "In" else ~hit


def node_affinity_mask(pod: Pod, state: ClusterState) -> np.ndarray:
    """Nodes allowed by nodeSelector, required node affinity and spec.nodeName."""
    n = state.n
    mask = np.ones(n, dtype=bool)
    for key, value in pod.node_selector.items():
        mask &= state.labels.match(Requirement(key, "In", (value,)), n)
    if pod.affinity.node_required:
        any_term = np.zeros(n, dtype=bool)
        for term in pod.affinity.node_required:
            any_term |= term_mask(term, state)
        mask &= any_term
    if pod.node_name:
        mask &= _field_mask(Requirement("metadata.name", "In", (pod.node_name,)), state)
    return mask


class NodeAffinity(Plugin):
    name = "node-affinity"
    reason = "node affinity/selector mismatch"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return (self.name if point == "filter" else self.name + ":score") in cls.static

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        if pod.node_selector or pod.node_name or pod.affinity.node_required:
            cls.static[self.name] = node_affinity_mask(pod, state)
        self._prepare_preferred(cls, state)

    def _prepare_preferred(self, cls: PodClass, state: ClusterState) -> None:
        n = state.n
        preferred = cls.pod.affinity.node_preferred
        if preferred:
            score = np.zeros(n)
            for item in preferred:
                score += item.weight * term_mask(item.term, state)
            cls.static[self.name + ":score"] = 100.0 * score / sum(p.weight for p in preferred)

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name][rows]

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name + ":score"][rows]
