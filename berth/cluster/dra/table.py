"""A node's DRA devices as columns of numpy arrays.

The allocator answers for one node and one pod exactly; the scheduler's filters ask the same
question for many nodes at once and need only the numbers: how many devices of a class are
free, how much capacity is left on each. ``DeviceTable`` holds, for the devices one node can
use, in the allocator's search order: their ids, whether they are held whole or shared, and a
``(devices × capacities)`` matrix of capacity left (exact quantities as integers in the
capacity's smallest unit: milli-units, as berth's resource vectors keep cpu).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from berth.api.dra import ResourceSlice
from berth.cluster.dra.allocator import AllocatedState
from berth.cluster.dra.pools import gather_pools
from berth.cluster.dra.selection import DeviceId


@dataclass(frozen=True, slots=True)
class DeviceTable:
    ids: tuple[DeviceId, ...]
    capacity_names: tuple[str, ...]
    #: (devices × capacities) int64, milli-units; 0 where a device lacks the capacity.
    capacity: np.ndarray
    #: Capacity left after what allocations consume (shared devices), same shape.
    free: np.ndarray
    shared: np.ndarray  # bool per device: allowMultipleAllocations
    held: np.ndarray  # bool per device: allocated whole to a claim

    @property
    def available(self) -> np.ndarray:
        """Devices a new allocation could take (not held whole)."""
        return ~self.held


def device_table(
    node: str,
    labels: Mapping[str, str],
    slices: Sequence[ResourceSlice],
    allocated: AllocatedState | None = None,
) -> DeviceTable:
    allocated = allocated or AllocatedState()
    labels = dict(labels)
    rows = [
        ((pool.driver, pool.name, device.name), device)
        for pool in gather_pools(node, labels, slices)
        if not (pool.incomplete or pool.invalid)
        for _, device in pool.devices(node, labels)
    ]
    names = tuple(sorted({name for _, device in rows for name in device.capacity}))
    column = {name: index for index, name in enumerate(names)}
    capacity = np.zeros((len(rows), len(names)), dtype=np.int64)
    free = np.zeros_like(capacity)
    for row, (ident, device) in enumerate(rows):
        used = allocated.consumed.get(ident, {})
        for name, cap in device.capacity.items():
            capacity[row, column[name]] = int(cap.value * 1000)
            free[row, column[name]] = int((cap.value - used.get(name, 0)) * 1000)
    shared = np.array([d.allow_multiple_allocations for _, d in rows], dtype=bool)
    held = np.array([ident in allocated.devices for ident, _ in rows], dtype=bool)
    return DeviceTable(tuple(i for i, _ in rows), names, capacity, free, shared, held)
