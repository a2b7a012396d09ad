"""pod-affinity: inter-pod affinity and anti-affinity over any topology key, as kube-scheduler's
InterPodAffinity plugin decides them.

Counts of matching pods per node come from ClusterState's selector counters (kept current on
every bind), so a term costs one ``bincount`` over the nodes' domain ids. Terms on the hostname
key are node-local, which lets cached evaluations be patched row by row; wider domains are not.

- Required affinity: one and the same existing pod must match every term, and the node must
  share each term's topology domain with such a pod. The first pod of a group that wants to be
  with its own kind may go anywhere the topology keys exist, but only while no pod anywhere
  matches all the terms.
- Required anti-affinity, the pod's own and (symmetrically) that of bound pods it matches.
- Score: the pod's preferred terms, plus the terms bound pods carry that the pod matches
  (their preferred terms, and their required affinity at ``hardPodAffinityWeight``), each
  weight times the matching pods in the node's domain, then scaled to 0..100 over the nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from berth.api.keys import HOSTNAME_LABEL
from berth.api.selectors import PodAffinityTerm
from berth.cluster.pod_terms import AFFINITY, ANTI, AllOf, CarriedTerm, CountKey, SelectorKey
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows, row_count
from berth.framework.podclass import PodClass


@dataclass(slots=True)
class _Compiled:
    #: Required affinity: (who, topology key) per term, and who meets them all at once.
    required: list[tuple[SelectorKey, str]]
    together: CountKey | None
    self_match: bool  # the pod itself meets every required affinity term
    anti: list[tuple[SelectorKey, str]]
    existing_anti: list[CarriedTerm]  # bound pods' required anti-affinity naming this pod
    #: Scored terms: (pods counted, topology key, weight): the pod's own preferred terms and
    #: the terms of bound pods that name it.
    preferred: list[tuple[CountKey, str, float]]
    carried: list[tuple[CarriedTerm, float]]


class PodAffinity(Plugin):
    name = "pod-affinity"
    reason = "pod affinity/anti-affinity rules"
    filters_in_one_pass = True  # counts per node or domain, looked up per node

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.hard_weight = self.float_arg("hardPodAffinityWeight", 1.0)
        if not 0 <= self.hard_weight <= 100:
            raise PluginArgumentError(
                f"plugin {self.name}: argument hardPodAffinityWeight: must be 0..100 "
                f"(got {self.hard_weight:g})"
            )
        self.ignore_existing_preferred = self.bool_arg("ignorePreferredTermsOfExistingPods", False)

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        aff = pod.affinity
        namespaces = state.namespace_labels

        def key(term: PodAffinityTerm) -> SelectorKey:
            return SelectorKey.of_term(term.for_pod(pod.labels), pod.namespace)

        required = [(key(t), t.topology_key) for t in aff.pod_required]
        keys = tuple(k for k, _ in required)
        together: CountKey | None = None
        if keys:
            together = keys[0] if len(set(keys)) == 1 else AllOf(keys)
        own = [(key(w.term), w.term.topology_key, float(w.weight)) for w in aff.pod_preferred]
        own += [(key(w.term), w.term.topology_key, -float(w.weight)) for w in aff.anti_preferred]
        carried: list[tuple[CarriedTerm, float]] = []
        if own or not self.ignore_existing_preferred:
            for term in state.carried:
                if term.kind == ANTI or not term.selector.matches(pod, namespaces):
                    continue
                weight = self.hard_weight if term.kind == AFFINITY else float(term.weight)
                if weight:
                    carried.append((term, weight))
        cls.static[self.name] = _Compiled(
            required=required,
            together=together,
            self_match=together is not None and together.matches(pod, namespaces),
            anti=[(key(t), t.topology_key) for t in aff.anti_required],
            existing_anti=[
                t for t in state.carried if t.kind == ANTI and t.selector.matches(pod, namespaces)
            ],
            preferred=own,
            carried=carried,
        )

    def relevant(self, cls: PodClass, point: str) -> bool:
        c: _Compiled = cls.static[self.name]
        if point == "filter":
            return bool(c.required or c.anti or c.existing_anti)
        return bool(c.preferred or c.carried)

    def is_local(self, cls: PodClass) -> bool:
        c: _Compiled = cls.static[self.name]
        if c.preferred or c.carried:
            return False  # scores are scaled over the nodes being scored
        if c.self_match:
            return False  # the first-pod exception depends on pods anywhere in the cluster
        keys = [k for _, k in c.required] + [k for _, k in c.anti]
        keys += [t.topology_key for t in c.existing_anti]
        return all(k == HOSTNAME_LABEL for k in keys)

    @staticmethod
    def _occupied(state: ClusterState, counts: np.ndarray, key: str, rows: Rows) -> np.ndarray:
        """Per row: how many counted pods share the node's domain (0 for nodes without the key)."""
        if key == HOSTNAME_LABEL:
            return counts[rows]
        domains, totals = state.labels.domain_totals(counts, key, state.n)
        picked = domains[rows]
        return np.where(picked >= 0, totals[np.maximum(picked, 0)] if len(totals) else 0, 0)

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        c: _Compiled = cls.static[self.name]
        n = state.n
        mask = np.ones(row_count(state, rows), bool)
        if c.together is not None:
            mask &= self._required(c, state, rows)
        for key, topology in c.anti:
            mask &= self._occupied(state, state.pod_counts(key), topology, rows) == 0
        for term in c.existing_anti:
            counts = state.carried[term][:n]
            mask &= self._occupied(state, counts, term.topology_key, rows) == 0
        return mask

    def _required(self, c: _Compiled, state: ClusterState, rows: Rows) -> np.ndarray:
        """Nodes with every term's topology key whose domains all hold a pod meeting every
        term, or, for the first such pod, nodes with the keys while none exists anywhere."""
        assert c.together is not None
        n = state.n
        counts = state.pod_counts(c.together)
        has_keys = None
        met = None
        anywhere = False
        for _, topology in c.required:
            domains, _ = state.labels.domains(topology, n)
            labelled = domains >= 0
            has = labelled[rows]
            has_keys = has if has_keys is None else has_keys & has
            occupied = self._occupied(state, counts, topology, rows) > 0
            met = occupied if met is None else met & occupied
            if c.self_match and not anywhere:
                anywhere = bool(counts[labelled].any())
        assert has_keys is not None and met is not None
        if c.self_match and not anywhere:
            return has_keys
        return has_keys & met

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        c: _Compiled = cls.static[self.name]
        raw = np.zeros(len(rows))
        for key, topology, weight in c.preferred:
            raw += weight * self._occupied(state, state.pod_counts(key), topology, rows)
        n = state.n
        for term, weight in c.carried:
            raw += weight * self._occupied(state, state.carried[term][:n], term.topology_key, rows)
        low, high = (raw.min(), raw.max()) if len(raw) else (0.0, 0.0)
        if high == low:
            return np.zeros(len(rows))
        return 100.0 * (raw - low) / (high - low)
