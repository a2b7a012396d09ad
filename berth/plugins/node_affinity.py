"""node-affinity: nodeSelector, required node affinity and spec.nodeName as a filter; preferred
node affinity as a score.

Everything here depends only on node labels, so it is computed once per pod class as a static
mask and score, and never again until nodes change. A term kube-scheduler cannot parse (an
invalid label key or value) matches no node. The ``addedAffinity`` argument (kube-scheduler's
NodeAffinityArgs) applies a node affinity to every pod on top of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.api.objects import Pod
from berth.api.pod_placement import ArgumentProblem, node_affinity
from berth.api.selectors import NodeSelectorTerm, PreferredNodeTerm, Requirement, valid_requirement
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows
from berth.framework.podclass import PodClass
from berth.plugins.normalize import default_normalize


def term_mask(term: NodeSelectorTerm, state: ClusterState) -> np.ndarray:
    """Nodes matching every requirement of one term; an empty term, or one with a requirement
    that is not a valid selector, matches no node."""
    n = state.n
    if not term.expressions and not term.fields:
        return np.zeros(n, dtype=bool)
    if not all(valid_requirement(req) for req in term.expressions):
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


def any_term_mask(terms: tuple[NodeSelectorTerm, ...], state: ClusterState) -> np.ndarray:
    """Nodes matching at least one of ``terms`` (required terms are ORed)."""
    mask = np.zeros(state.n, dtype=bool)
    for term in terms:
        mask |= term_mask(term, state)
    return mask


def node_affinity_mask(pod: Pod, state: ClusterState) -> np.ndarray:
    """Nodes allowed by nodeSelector, required node affinity and spec.nodeName."""
    n = state.n
    mask = np.ones(n, dtype=bool)
    for key, value in pod.node_selector.items():
        mask &= state.labels.match(Requirement(key, "In", (value,)), n)
    if pod.affinity.node_required:
        mask &= any_term_mask(pod.affinity.node_required, state)
    if pod.node_name:
        mask &= _field_mask(Requirement("metadata.name", "In", (pod.node_name,)), state)
    return mask


class NodeAffinity(Plugin):
    name = "node-affinity"
    reason = "node affinity/selector mismatch"
    filters_in_one_pass = True  # a mask kept with the class

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.added_required: tuple[NodeSelectorTerm, ...] = ()
        self.added_preferred: tuple[PreferredNodeTerm, ...] = ()
        #: kube-scheduler's normalisation (by the best feasible node's total, in whole points)
        #: rather than by the total preferred weight, which keeps a node's score its own.
        self.normalize = self.bool_arg("normalize", False)
        raw = self.arguments.get("addedAffinity")
        if raw is not None:
            try:
                self.added_required, self.added_preferred = node_affinity(raw, "addedAffinity")
            except ArgumentProblem as exc:
                raise PluginArgumentError(f"plugin {self.name}: argument {exc}") from exc

    def relevant(self, cls: PodClass, point: str) -> bool:
        return (self.name if point == "filter" else self.name + ":score") in cls.static

    def is_local(self, cls: PodClass) -> bool:
        return not self.normalize

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        if pod.node_selector or pod.node_name or pod.affinity.node_required:
            cls.static[self.name] = node_affinity_mask(pod, state)
        if self.added_required:
            added = any_term_mask(self.added_required, state)
            own = cls.static.get(self.name)
            cls.static[self.name] = added if own is None else own & added
        self._prepare_preferred(cls, state)

    def _prepare_preferred(self, cls: PodClass, state: ClusterState) -> None:
        n = state.n
        preferred = cls.pod.affinity.node_preferred + self.added_preferred
        if preferred:
            score = np.zeros(n)
            for item in preferred:
                score += item.weight * term_mask(item.term, state)
            if not self.normalize:
                score = 100.0 * score / sum(p.weight for p in preferred)
            cls.static[self.name + ":score"] = score

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name][rows]

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        raw = cls.static[self.name + ":score"][rows]
        return default_normalize(raw) if self.normalize else raw
