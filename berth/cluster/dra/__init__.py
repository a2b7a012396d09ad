"""Dynamic Resource Allocation (``resource.k8s.io/v1``): the structured allocator and the
per-node device tables it works on.

- ``pools``: the pools of ResourceSlices a node can use (complete, newest generation, valid);
- ``selection``: CEL selectors (cached per expression and device look), taints, constraints;
- ``capacity``: consumable capacity of shared devices (``allowMultipleAllocations``);
- ``allocator``: the search, in the order Kubernetes' structured allocator searches;
- ``table``: a node's devices as numpy arrays (for the scheduler's vectorized filters).

How DRA GPUs will map onto berth's per-device GPU model (``berth.cluster.devices``), so that
``gpu-*`` and ``fgd`` placement, NVLink islands and the fragmentation metrics work for them:

- a DeviceClass whose devices are GPUs (its driver is a GPU driver such as
  ``gpu.nvidia.com``, or its selectors test a ``type``/``productName`` attribute) marks the
  slices' devices as GPUs; each such device of a node becomes one column of ``gpu_free``
  (1,000 milli-GPU), in the order the slices list them (which is the allocator's search order,
  so device column ``k`` and the allocator's ``k``-th GPU device of the node coincide);
- a device's ``memory`` capacity (in bytes) becomes the column's GPU memory, in MiB as
  ``berth.io/gpu-memory`` has it; a shared device (``allowMultipleAllocations``) is a device
  that may hold shares, and what an allocation consumes of its capacities becomes the share;
- NVLink islands come from a device attribute (e.g. ``nvlinkDomain`` or the driver's clique
  id) the way ``berth.io/gpu-topology`` groups device indices today;
- a node's DRA GPUs count into its ``nvidia.com/gpu`` allocatable (1,000 per device), and an
  allocation of k whole devices is a request of k GPUs for the node-level filters; the exact
  devices come from ``Allocator.allocate`` and are written to the pod as its ``devices``.
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
