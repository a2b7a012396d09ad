"""Equivalence classes: pods whose scheduling-relevant spec is the same share one compiled form.

A class holds the pod's request vector, the static masks plugins compute from node labels and
taints, and a cached evaluation (feasibility + score per node). Replicas of one service, the
tasks of one gang and trace jobs of the same shape all land in one class, so the cluster is
scanned once per class and afterwards only the rows that changed are re-evaluated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from berth.api.keys import GPU_MEMORY_ANNOTATION, JOB_NAME_LABEL, RESOURCE_SPEC_ANNOTATION
from berth.api.objects import Pod
from berth.api.qos import PRIORITY_CLASS_LABEL, QOS_LABEL, band_of_priority
from berth.cluster.devices import GpuAsk

if TYPE_CHECKING:
    from berth.cluster.state import ClusterState
    from berth.framework.plugin import Plugin


def class_key(
    pod: Pod, labels_matter: bool, owners_matter: bool = False, jobs_matter: bool = False
) -> tuple:
    """What decides where a pod may go and how nodes rank for it.

    Labels and namespace only matter when some selector could count the pod itself (its own
    affinity/spread terms) or when bound pods carry affinity terms; what owns the pod only when
    a plugin counts its owner's pods (default spreading); which job or workload it belongs to
    only when a plugin estimates pods by their job's history. Leaving them out otherwise keeps
    classes large.
    """
    settings = pod.settings  # (read once: each of its fields is a property of the pod)
    spec: tuple[Any, ...] = (
        tuple(sorted(pod.requests.items())),
        settings.nonzero_requests,
        tuple(sorted(settings.node_selector.items())),
        settings.affinity,
        settings.tolerations,
        settings.spread,
        settings.node_name,
        pod.annotations.get(GPU_MEMORY_ANNOTATION, ""),
        pod.annotations.get(RESOURCE_SPEC_ANNOTATION, ""),  # its cpu bind policy
        # what decides whether it runs on batch resources (load-aware estimates by them)
        band_of_priority(pod.priority),
        pod.labels.get(QOS_LABEL),
        pod.labels.get(PRIORITY_CLASS_LABEL),
        settings.resource_claims,
    )
    if owners_matter:
        spec += (pod.namespace, settings.owner_selector, pod.labels.get(JOB_NAME_LABEL))
    if jobs_matter:
        spec += (pod.namespace, settings.owner, pod.group)
    if labels_matter or settings.affinity.has_pod_terms or settings.spread:
        return spec + (pod.namespace, tuple(sorted(pod.labels.items())))
    return spec


@dataclass(slots=True)
class PodClass:
    key: tuple
    pod: Pod  # representative: any member gives the same answers
    request: np.ndarray
    nonzero: np.ndarray  # resource columns the pod requests
    #: cpu and memory as kube-scheduler's allocation scores count them (Pod.nonzero_requests).
    scored_cpu_memory: tuple[int, int] = (0, 0)
    gpu: GpuAsk | None = None  # what the pod needs from a node's GPU devices
    #: What plugins and actions keep with the class: compiled data, the nodes' room for it,
    #: the pace of its runs (``berth.actions.runs``).
    static: dict[str, Any] = field(default_factory=dict)
    # The plugins relevant to this class, split by whether a node's result depends on that
    # node's row alone (local: cached and patched) or on the cluster around it (global).
    local_filters: list[Plugin] = field(default_factory=list)
    global_filters: list[Plugin] = field(default_factory=list)
    local_scorers: list[Plugin] = field(default_factory=list)
    global_scorers: list[Plugin] = field(default_factory=list)
    #: Per-evaluation values plugins share (e.g. allocation fractions); cleared before each.
    scratch: dict[tuple, Any] = field(default_factory=dict)
    # cached evaluation of the local plugins: score per row, -inf where infeasible
    total: np.ndarray | None = None
    log_position: int = 0
    epoch: int = -1
    rows: int = 0
    reason: str = ""
    reason_position: int = -1

    @property
    def filters(self) -> list[Plugin]:
        return self.local_filters + self.global_filters

    @property
    def scorers(self) -> list[Plugin]:
        return self.local_scorers + self.global_scorers

    def cached_for(self, state: ClusterState) -> bool:
        """Whether ``total`` was made for the cluster's nodes as they stand (the rows changed
        since ``log_position`` still to be patched)."""
        return (
            self.total is not None and self.rows == state.n and self.epoch == state.structure_epoch
        )

    def evaluated_now(self, state: ClusterState) -> bool:
        """Whether ``total`` is every row's score as the cluster is: nothing changed since the
        search evaluated the class."""
        return self.cached_for(state) and self.log_position == state.log_position
