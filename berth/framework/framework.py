"""Plugin instances from a configuration, sorted into the extension points they serve."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from berth.framework.config import PluginSpec, SchedulerConfig, instantiate
from berth.framework.plugin import Plugin, overrides
from berth.framework.registry import plugin_class

if TYPE_CHECKING:
    from berth.api.objects import Pod
    from berth.cluster.state import ClusterState
    from berth.framework.podclass import PodClass

RESOURCE_FIT = "resource-fit"
NODE_AFFINITY = "node-affinity"
NODE_NAME = "node-name"
DYNAMIC_RESOURCES = "dynamic-resources"
#: Filters run cheapest and most selective first; unlisted ones go last in configured order.
_FILTER_ORDER = {
    NODE_NAME: 0,
    NODE_AFFINITY: 0,
    "taint-toleration": 1,
    RESOURCE_FIT: 2,
    DYNAMIC_RESOURCES: 3,
}


class Framework:
    def __init__(self, config: SchedulerConfig) -> None:
        self.plugins: list[Plugin] = []
        self.filters: list[Plugin] = []
        self.scorers: list[Plugin] = []
        self.job_orders: list[Plugin] = []
        self.task_orders: list[Plugin] = []
        self.job_valids: list[Plugin] = []
        self.job_readies: list[Plugin] = []
        self.job_pipelineds: list[Plugin] = []
        self.job_starvings: list[Plugin] = []
        self.queue_orders: list[Plugin] = []
        self.victim_orders: list[Plugin] = []
        self.overuseds: list[Plugin] = []
        self.allocatables: list[Plugin] = []
        self.preemptives: list[Plugin] = []
        self.preemptables: list[Plugin] = []
        self.reclaimables: list[Plugin] = []
        self.enqueue_watchers: list[Plugin] = []
        self.allocation_watchers: list[Plugin] = []
        #: Rankings of HyperNodes and of nodes for jobs with a network topology.
        self.hypernode_orders: list[Plugin] = []
        self.topology_scorers: list[Plugin] = []
        #: Scorers that choose which GPU devices a pod takes on the node it goes to.
        self.device_pickers: list[Plugin] = []
        #: Admission votes per tier: a tier that admits decides before the tiers below it.
        self.job_enqueueables: list[list[Plugin]] = []
        for index, tier in enumerate(config.tiers):
            self.job_enqueueables.append([])
            for spec in tier:
                plugin = instantiate(spec)
                plugin.tier = index
                self.plugins.append(plugin)
                self._register(plugin, spec)
        self.job_enqueueables = [tier for tier in self.job_enqueueables if tier]
        #: Whether some plugin tells alike jobs awaiting admission apart (see
        #: Plugin.per_job_admission): the backlog then lines up each job on its own.
        self.per_job_admission = any(p.per_job_admission for p in self.plugins)
        #: Whether some admission vote changes as time passes (Plugin.admission_depends_on_time).
        self.admission_depends_on_time = any(
            p.admission_depends_on_time for tier in self.job_enqueueables for p in tier
        )
        configured = {p.name for p in self.filters}
        if RESOURCE_FIT not in configured:
            # Volcano's allocate checks that a task fits a node's idle resources whatever the
            # plugins say; a configuration without predicates must not overcommit nodes.
            self.filters.append(plugin_class(RESOURCE_FIT)({}))
        if NODE_AFFINITY not in configured and NODE_NAME not in configured:
            # A pod that names its node goes there, whatever the configuration.
            self.filters.append(plugin_class(NODE_NAME)({}))
        self.filters.sort(key=lambda p: _FILTER_ORDER.get(p.name, len(_FILTER_ORDER)))

    def enable_dynamic_resources(self) -> None:
        """The cluster has DRA objects: pods with claims go only where their claims can be
        allocated, whatever the configuration (the filter says nothing about other pods)."""
        if DYNAMIC_RESOURCES not in {p.name for p in self.filters}:
            self.filters.append(plugin_class(DYNAMIC_RESOURCES)({}))
            self.filters.sort(key=lambda p: _FILTER_ORDER.get(p.name, len(_FILTER_ORDER)))

    def pick_devices(self, cls: PodClass, state: ClusterState, row: int) -> np.ndarray | None:
        """The devices a pod of ``cls`` takes on ``row``: the first placement plugin with an
        opinion decides; None means the default choice."""
        if cls.gpu is None:
            return None
        for plugin in self.device_pickers:
            devices = plugin.pick_devices(cls, state, row)
            if devices is not None:
                return devices
        return None

    def on_workload(self, pods: list[Pod]) -> None:
        """Tell every plugin the workload expected (see ``Plugin.on_workload``)."""
        for plugin in self.plugins:
            plugin.on_workload(pods)

    def _register(self, plugin: Plugin, spec: PluginSpec) -> None:
        off = spec.disabled
        if overrides(plugin, "filter") and "filter" not in off:
            if plugin.name not in {p.name for p in self.filters}:
                self.filters.append(plugin)
        if overrides(plugin, "score") and "score" not in off and plugin.weight:
            self.scorers.append(plugin)
            if overrides(plugin, "pick_devices"):
                self.device_pickers.append(plugin)
        if overrides(plugin, "topology_score") and "score" not in off and plugin.weight:
            self.topology_scorers.append(plugin)
        for point, bucket in (
            ("job_order", self.job_orders),
            ("task_order", self.task_orders),
            ("job_valid", self.job_valids),
            ("job_ready", self.job_readies),
            ("job_pipelined", self.job_pipelineds),
            ("job_starving", self.job_starvings),
            ("queue_order", self.queue_orders),
            ("victim_queue_order", self.victim_orders),
            ("overused", self.overuseds),
            ("allocatable", self.allocatables),
            ("preemptive", self.preemptives),
            ("preemptable", self.preemptables),
            ("reclaimable", self.reclaimables),
            ("job_enqueueable", self.job_enqueueables[-1]),
            ("on_job_enqueued", self.enqueue_watchers),
            ("hypernode_order", self.hypernode_orders),
        ):
            if overrides(plugin, point) and point not in off and plugin.serves(point):
                bucket.append(plugin)
        if any(
            overrides(plugin, point) and plugin.serves(point)
            for point in ("on_allocate", "on_deallocate")
        ):
            self.allocation_watchers.append(plugin)
