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
"""

from berth.cluster.dra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    ClaimAllocation,
    DeviceResult,
)
from berth.cluster.dra.table import DeviceTable, device_table

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "ClaimAllocation",
    "DeviceResult",
    "DeviceTable",
    "device_table",
]
