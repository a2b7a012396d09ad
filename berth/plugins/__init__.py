"""Plugins, one per module, registered with the framework under the names configurations use
for them."""

from __future__ import annotations

from berth.framework.registry import register_plugins
from berth.plugins.balanced_allocation import BalancedAllocation
from berth.plugins.capacity import Capacity
from berth.plugins.conformance import Conformance
from berth.plugins.dotprod import DotProd
from berth.plugins.drf import Drf
from berth.plugins.dynamic_resources import DynamicResources
from berth.plugins.edf import Edf
from berth.plugins.elasticflow import ElasticFlow
from berth.plugins.fgd import Fgd
from berth.plugins.gandiva import Gandiva
from berth.plugins.gang import Gang
from berth.plugins.gpu_bestfit import GpuBestFit
from berth.plugins.gpu_clustering import GpuClustering
from berth.plugins.gpu_load_aware import GpuLoadAware
from berth.plugins.gpu_packing import GpuPacking
from berth.plugins.gpu_topology import GpuTopology
from berth.plugins.least_allocated import LeastAllocated
from berth.plugins.load_aware import LoadAware
from berth.plugins.most_allocated import MostAllocated
from berth.plugins.network_topology_aware import NetworkTopologyAware
from berth.plugins.node_affinity import NodeAffinity
from berth.plugins.node_name import NodeName
from berth.plugins.overcommit import Overcommit
from berth.plugins.pod_affinity import PodAffinity
from berth.plugins.priority import Priority
from berth.plugins.proportion import Proportion
from berth.plugins.random_placement import RandomPlacement
from berth.plugins.requested_to_capacity_ratio import RequestedToCapacityRatio
from berth.plugins.reservation import Reservation
from berth.plugins.resource_fit import ResourceFit
from berth.plugins.sjf import Sjf, Srtf
from berth.plugins.sla import Sla
from berth.plugins.taint_toleration import TaintToleration
from berth.plugins.themis import Themis
from berth.plugins.tiresias import Tiresias
from berth.plugins.topology_spread import TopologySpread

register_plugins(
    ResourceFit,
    DynamicResources,
    NodeAffinity,
    NodeName,
    TaintToleration,
    PodAffinity,
    TopologySpread,
    LeastAllocated,
    MostAllocated,
    BalancedAllocation,
    RequestedToCapacityRatio,
    Priority,
    Gang,
    Drf,
    Proportion,
    Capacity,
    Conformance,
    Overcommit,
    Sla,
    Reservation,
    GpuBestFit,
    GpuPacking,
    GpuClustering,
    DotProd,
    RandomPlacement,
    Fgd,
    NetworkTopologyAware,
    GpuTopology,
    LoadAware,
    GpuLoadAware,
    Tiresias,
    Sjf,
    Srtf,
    Edf,
    ElasticFlow,
    Themis,
    Gandiva,
)
