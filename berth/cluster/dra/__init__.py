"""Dynamic Resource Allocation (``resource.k8s.io/v1``): the structured allocator and the
per-node device tables it works on.

- ``pools``: the pools of ResourceSlices a node can use (complete, newest generation, valid);
- ``selection``: CEL selectors (cached per expression and device look), taints, constraints;
- ``capacity``: consumable capacity of shared devices (``allowMultipleAllocations``);
- ``allocator``: the search, in the order Kubernetes' structured allocator searches;
- ``table``: a node's devices as numpy arrays (for the scheduler's vectorized filters).

- ``inventory``: every device of the cluster as flat arrays, per kind of request the free
  matching devices per node (the scheduler's vectorized pre-filter), and which devices are GPUs;
- ``claims``: the cluster's claims, allocated at bind, reserved for their pods, freed when the
  last leaves.

How DRA GPUs map onto berth's per-device GPU model is in ``inventory`` and ``docs/dra.md``.

The names below load with their modules when first asked for: the allocator builds on the
manifest models of ``resource.k8s.io`` (a tenth of a second of pydantic), which a run without
DRA objects never needs.
"""

from berth.lazy import lazy_names

#: Each name the package offers, and the module it comes from.
_HOMES = {
    "AllocatedState": "berth.cluster.dra.allocator",
    "AllocationError": "berth.cluster.dra.allocator",
    "Allocator": "berth.cluster.dra.allocator",
    "ClaimAllocation": "berth.cluster.dra.allocator",
    "DeviceResult": "berth.cluster.dra.allocator",
    "DeviceTable": "berth.cluster.dra.table",
    "device_table": "berth.cluster.dra.table",
}

__all__ = list(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
