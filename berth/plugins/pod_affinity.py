"""pod-affinity: inter-pod affinity and anti-affinity over any topology key.

Counts of matching pods per node come from ClusterState's selector counters (kept current on
every bind), so a term costs one ``bincount`` over the nodes' domain ids. Terms on the hostname
key are node-local, which lets cached evaluations be patched row by row; wider domains are not.
Existing pods' required anti-affinity is honoured symmetrically, as in kube-scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.api.objects import HOSTNAME_LABEL, Pod, PodAffinityTerm
from berth.cluster.state import AntiTermKey, ClusterState, SelectorKey
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


def selector_key(term: PodAffinityTerm, pod: Pod) -> SelectorKey:
    return SelectorKey(term.namespaces or (pod.namespace,), term.selector)


@dataclass(slots=True)
class _Compiled:
    affinity: list[tuple[SelectorKey, str, bool]]  # (selector, topology key, pod matches itself)
    anti: list[tuple[SelectorKey, str]]
    existing_anti: list[AntiTermKey]  # terms of bound pods that this pod matches
    preferred: list[tuple[SelectorKey, str, float]]  # weight < 0 for anti-affinity


class PodAffinity(Plugin):
    name = "pod-affinity"
    reason = "pod affinity/anti-affinity rules"

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        aff = pod.affinity
        compiled = _Compiled(
            affinity=[
                (selector_key(t, pod), t.topology_key, selector_key(t, pod).matches(pod))
                for t in aff.pod_required
            ],
            anti=[(selector_key(t, pod), t.topology_key) for t in aff.anti_required],
            existing_anti=[key for key in state.anti_terms if key.selector.matches(pod)],
            preferred=[
                (selector_key(w.term, pod), w.term.topology_key, float(w.weight))
                for w in aff.pod_preferred
            ]
            + [
                (selector_key(w.term, pod), w.term.topology_key, -float(w.weight))
                for w in aff.anti_preferred
            ],
        )
        cls.static[self.name] = compiled

    def relevant(self, cls: PodClass, point: str) -> bool:
        c: _Compiled = cls.static[self.name]
        if point == "filter":
            return bool(c.affinity or c.anti or c.existing_anti)
        return bool(c.preferred)

    def is_local(self, cls: PodClass) -> bool:
        c: _Compiled = cls.static[self.name]
        if c.preferred:
            return False  # scores are normalised over the feasible nodes
        if any(self_match for _, _, self_match in c.affinity):
            return False  # the first-pod exception depends on pods anywhere in the cluster
        keys = [k for _, k, _ in c.affinity] + [k for _, k in c.anti]
        keys += [t.topology_key for t in c.existing_anti]
        return all(k == HOSTNAME_LABEL for k in keys)

    def _occupied(
        self, state: ClusterState, counts: np.ndarray, key: str, rows: Rows
    ) -> np.ndarray:
        """Per row: how many counted pods share the node's domain (0 for nodes without the key)."""
        if key == HOSTNAME_LABEL:
            return counts[rows]
        domains, totals = state.domain_totals(counts, key)
        picked = domains[rows]
        return np.where(picked >= 0, totals[np.maximum(picked, 0)] if len(totals) else 0, 0)

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        c: _Compiled = cls.static[self.name]
        n = state.n
        mask = np.ones(len(state.schedulable[rows]) if isinstance(rows, slice) else len(rows), bool)
        for key, topology, self_match in c.affinity:
            counts = state.pod_counts(key)
            if self_match and not counts.any():
                # The first pod of a group that wants to be with its own kind may go anywhere
                # the topology key exists.
                domains, _ = state.labels.domains(topology, n)
                mask &= domains[rows] >= 0
                continue
            mask &= self._occupied(state, counts, topology, rows) > 0
        for key, topology in c.anti:
            mask &= self._occupied(state, state.pod_counts(key), topology, rows) == 0
        for term in c.existing_anti:
            counts = state.anti_terms[term][:n]
            mask &= self._occupied(state, counts, term.topology_key, rows) == 0
        return mask

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        c: _Compiled = cls.static[self.name]
        raw = np.zeros(len(rows))
        for key, topology, weight in c.preferred:
            raw += weight * self._occupied(state, state.pod_counts(key), topology, rows)
        low, high = (raw.min(), raw.max()) if len(raw) else (0.0, 0.0)
        if high == low:
            return np.zeros(len(rows))
        return 100.0 * (raw - low) / (high - low)
