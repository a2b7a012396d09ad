"""topology-spread: topologySpreadConstraints, as kube-scheduler's PodTopologySpread decides them.

DoNotSchedule is a filter: placing the pod must not push its domain more than maxSkew above
the emptiest eligible domain (taken as 0 while fewer than minDomains domains exist).
ScheduleAnyway is a score: each constraint adds, per node, the matching pods in its domain
times log(number of candidate domains + 2), plus maxSkew − 1; the sums are rounded and the node
with the fewest gets 100.

Which nodes count is kube-scheduler's: nodes with every topology key of the constraints of
that kind, limited by ``nodeAffinityPolicy`` (Honor, the default: only nodes the pod's
nodeSelector and required node affinity allow) and ``nodeTaintsPolicy`` (Honor: only nodes
whose NoSchedule/NoExecute taints the pod tolerates; Ignore, the default: all). A constraint
with an empty or missing label selector counts no pods. ``matchLabelKeys`` narrows the
selector to pods sharing the pod's values for those keys.

A pod with no constraints of its own gets the plugin's default constraints (``defaultingType``
System: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway; List: ``defaultConstraints``)
when a ReplicaSet or StatefulSet made it, counting the pods that workload's selector selects,
as kube-scheduler does; and when it belongs to a Volcano Job, counting the pods of the same Job
(berth's stand-in for the Service that would select them). Other pods get none, as pods no
Service, ReplicaSet or StatefulSet selects get none from kube-scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from berth.api.keys import HOSTNAME_LABEL, JOB_NAME_LABEL, ZONE_LABEL
from berth.api.objects import Pod
from berth.api.pod_placement import ArgumentProblem, spread_constraints
from berth.api.selectors import (
    MATCH_NOTHING,
    LabelSelector,
    Requirement,
    SpreadConstraint,
    with_label_keys,
)
from berth.cluster.pod_terms import SelectorKey
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows, row_count
from berth.framework.podclass import PodClass
from berth.plugins.node_affinity import node_affinity_mask
from berth.plugins.taint_toleration import taint_masks

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
#: kube-scheduler's built-in defaults (defaultingType: System).
SYSTEM_DEFAULTS = (
    SpreadConstraint(3, HOSTNAME_LABEL, SCHEDULE_ANYWAY, MATCH_NOTHING),
    SpreadConstraint(5, ZONE_LABEL, SCHEDULE_ANYWAY, MATCH_NOTHING),
)


@dataclass(slots=True)
class _Constraint:
    spec: SpreadConstraint
    key: SelectorKey | None  # None: the selector counts no pods
    self_match: int
    #: Nodes whose pods count, and their domain ids (static: labels, taints, affinity).
    counted: np.ndarray
    domains: np.ndarray
    size: int  # domain ids run 0..size-1
    #: The totals as last computed, the counted nodes' counts they were made of, and the
    #: change-log position they are current at: patched from the rows changed since.
    _totals: np.ndarray | None = None
    _seen: np.ndarray | None = None
    _position: int = -1
    _slot: np.ndarray | None = None  # per node row, its index in ``counted`` (-1: not counted)

    def totals(self, state: ClusterState) -> np.ndarray:
        """Matching pods per domain, over the counted nodes. Kept between calls and patched
        with the rows the change log names: a placement changes one node's count."""
        if self.key is None:
            return np.zeros(self.size)
        counts = state.pod_counts(self.key)
        totals, seen = self._totals, self._seen
        changed = None if totals is None else state.changed_rows(self._position)
        if changed is None or totals is None or seen is None:
            self._seen = counts[self.counted].astype(np.float64)
            totals = np.bincount(self.domains, weights=self._seen, minlength=self.size)
            self._totals = totals
        elif len(changed):
            if self._slot is None:
                self._slot = np.full(state.n, -1, dtype=np.intp)
                self._slot[self.counted] = np.arange(len(self.counted))
            slots = self._slot[changed[changed < len(self._slot)]]
            slots = slots[slots >= 0]
            if len(slots):
                now = counts[self.counted[slots]]
                np.add.at(totals, self.domains[slots], now - seen[slots])
                seen[slots] = now
        self._position = state.log_position
        return totals


@dataclass(slots=True)
class _Compiled:
    hard: list[_Constraint]
    soft: list[_Constraint]
    #: Filter: (domains present among the counted nodes, how many) per hard constraint.
    present: list[tuple[np.ndarray, int]]
    #: Score: nodes lacking a soft constraint's key are not scored (kube-scheduler's ignored
    #: nodes), unless the constraints are the system defaults.
    require_all: bool


class TopologySpread(Plugin):
    name = "topology-spread"
    reason = "topology spread constraints"
    filters_in_one_pass = True  # a verdict per domain, looked up per node

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        defaulting = self.arguments.get("defaultingType", "List")
        if defaulting not in ("System", "List"):
            raise PluginArgumentError(
                f"plugin {self.name}: argument defaultingType: expected System or List "
                f"(got {defaulting!r})"
            )
        raw = self.arguments.get("defaultConstraints", [])
        if defaulting == "System" and raw:
            raise PluginArgumentError(
                f"plugin {self.name}: argument defaultConstraints: must be empty with "
                "defaultingType System"
            )
        try:
            listed = spread_constraints(raw, "defaultConstraints", defaults=True)
        except ArgumentProblem as exc:
            raise PluginArgumentError(f"plugin {self.name}: argument {exc}") from exc
        self.system_defaulted = defaulting == "System"
        self.defaults = SYSTEM_DEFAULTS if self.system_defaulted else listed
        self.classes_by_owner = bool(self.defaults)

    def _constraints(self, pod: Pod) -> tuple[list[SpreadConstraint], bool]:
        """The pod's constraints with their selectors resolved, and whether they are the
        system defaults."""
        if pod.spread:
            resolved = [
                replace(c, selector=with_label_keys(c.selector, pod.labels, c.match_label_keys))
                for c in pod.spread
            ]
            return resolved, False
        if not self.defaults:
            return [], False
        selector = pod.owner_selector
        job = pod.labels.get(JOB_NAME_LABEL)
        if selector is None and job is not None:
            selector = LabelSelector((Requirement(JOB_NAME_LABEL, "In", (job,)),))
        if selector is None:
            return [], False
        return [replace(c, selector=selector) for c in self.defaults], self.system_defaulted

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        pod = cls.pod
        constraints, system = self._constraints(pod)
        hard = [c for c in constraints if c.when_unsatisfiable == DO_NOT_SCHEDULE]
        soft = [c for c in constraints if c.when_unsatisfiable == SCHEDULE_ANYWAY]
        if not constraints:
            cls.static[self.name] = _Compiled([], [], [], True)
            return
        n = state.n
        affinity = node_affinity_mask(pod, state)
        blocked, _ = taint_masks(pod, state)

        def compile_all(specs: list[SpreadConstraint], require_all: bool) -> list[_Constraint]:
            keyed = np.ones(n, dtype=bool)
            if require_all:
                for c in specs:
                    keyed &= state.labels.domains(c.topology_key, n)[0] >= 0
            return [self._compile(c, pod, state, keyed, affinity, blocked) for c in specs]

        compiled_hard = compile_all(hard, True)
        present = []
        for c in compiled_hard:
            seen = np.zeros(c.size, dtype=bool)
            seen[c.domains] = True
            present.append((seen, int(seen.sum())))
        cls.static[self.name] = _Compiled(
            compiled_hard, compile_all(soft, not system), present, not system
        )

    @staticmethod
    def _compile(
        spec: SpreadConstraint,
        pod: Pod,
        state: ClusterState,
        keyed: np.ndarray,
        affinity: np.ndarray,
        blocked: np.ndarray,
    ) -> _Constraint:
        domains, size = state.labels.domains(spec.topology_key, state.n)
        counted = keyed & (domains >= 0)
        if spec.node_affinity_policy == "Honor":
            counted &= affinity
        if spec.node_taints_policy == "Honor":
            counted &= ~blocked
        rows = np.flatnonzero(counted)
        selector = spec.selector
        counts_nothing = not selector.requirements or selector == MATCH_NOTHING
        key = None if counts_nothing else SelectorKey((pod.namespace,), selector)
        return _Constraint(
            spec, key, int(selector.matches(pod.labels)), rows, domains[rows], max(size, 1)
        )

    def relevant(self, cls: PodClass, point: str) -> bool:
        c: _Compiled = cls.static[self.name]
        return bool(c.hard if point == "filter" else c.soft)

    def is_local(self, cls: PodClass) -> bool:
        return False  # the skew is measured against the emptiest domain in the cluster

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        compiled: _Compiled = cls.static[self.name]
        mask = None
        for c, (present, count) in zip(compiled.hard, compiled.present, strict=True):
            totals = c.totals(state)
            floor = totals[present].min() if count and count >= c.spec.min_domains else 0.0
            # The verdict per domain, then per node; a node without the key (-1) takes the
            # last entry, False.
            fits = np.append(totals + c.self_match - floor <= c.spec.max_skew, False)
            ok = fits[state.labels.domains(c.spec.topology_key, state.n)[0][rows]]
            mask = ok if mask is None else mask & ok
        assert mask is not None
        return mask

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        compiled: _Compiled = cls.static[self.name]
        n = state.n
        picked = [state.labels.domains(c.spec.topology_key, n)[0][rows] for c in compiled.soft]
        count = row_count(state, rows)
        scored = np.ones(count, dtype=np.bool_)
        if compiled.require_all:
            for domains in picked:
                scored &= domains >= 0
        raw = np.zeros(count)
        for c, domains in zip(compiled.soft, picked, strict=True):
            has = domains >= 0
            if c.spec.topology_key == HOSTNAME_LABEL:
                size = int(scored.sum())
                counts = state.pod_counts(c.key)[rows] if c.key is not None else np.zeros(count)
            else:
                # Missing keys count as one more value when they are not ignored.
                size = len(np.unique(domains[scored]))
                counts = np.where(has, c.totals(state)[np.maximum(domains, 0)], 0)
            raw += np.where(has, counts * np.log(size + 2) + (c.spec.max_skew - 1), 0.0)
        # Whole points, rounded half away from zero, as kube-scheduler keeps them.
        whole = np.floor(raw + 0.5).astype(np.int64)
        result = np.zeros(count)
        if not scored.any():
            return result
        low, high = whole[scored].min(), whole[scored].max()
        if high == 0:
            result[scored] = 100.0
        else:
            result[scored] = (100 * (high + low - whole[scored])) // high
        return result
