"""Every DRA device of the cluster as flat arrays, and per kind of request how many matching
devices each node has free.

A device is one entry per node it reaches (a node-local device one entry; a network-attached
device one per node that can use it), in each node's search order. A *kind* is what a request
asks of a device: its DeviceClass and its own selectors. For each kind the inventory keeps a
mask over the entries (the device passes the class's and the request's selectors) and, per node
row, how many matching entries are free; a shared device (``allowMultipleAllocations``) counts as
free while it is not held whole. These counts are the vectorized pre-filter: a node with fewer
free matching devices than a pod's claims ask cannot satisfy them, and only the others need the
exact allocator.

GPUs: a device is a GPU when its driver's first label is ``gpu`` (``gpu.nvidia.com``,
``gpu.amd.com``, ``gpu.intel.com``, the example driver's ``gpu.example.com``) and it is held
whole (not shared, consuming no counters). A node's DRA GPUs become columns of berth's per-device
GPU table after its ``nvidia.com/gpu`` devices, in search order (``gpu_column``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from berth.api.cel import CelError
from berth.api.dra import Device, DeviceClass, ExactRequest, ResourceSlice
from berth.cluster.dra.pools import SliceIndex, gather_pools
from berth.cluster.dra.selection import DeviceId, SelectorCache

#: (DeviceClass name, the request's own selectors).
Kind = tuple[str, tuple[str, ...]]


def is_gpu(driver: str, device: Device) -> bool:
    """Whether berth counts the device as a GPU (see the module docstring)."""
    return (
        driver.split(".", 1)[0] == "gpu"
        and not device.allow_multiple_allocations
        and not device.consumes_counters
    )


def kind_of(request: ExactRequest) -> Kind:
    return (request.class_name, request.selectors)


@dataclass(slots=True)
class KindCounts:
    match: np.ndarray  # bool per entry
    free: np.ndarray  # int32 per node row: matching entries not held whole
    #: Whether a count says exactly whether a request of this kind fits: every matching device
    #: is held whole, local to its node, untainted, without binding conditions, and the
    #: selectors never failed.
    exact: bool
    #: Whether every matching device is a GPU (and at least one matches).
    gpu: bool


class Inventory:
    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: SliceIndex,
        selectors: SelectorCache,
        gpus: bool = True,
    ) -> None:
        self.classes = classes
        #: Whether GPU devices join berth's GPU table (off: every device is only a DRA device).
        self.gpus = gpus
        self.slices = slices
        self.selectors = selectors
        self.ids: list[DeviceId] = []
        self.devices: list[Device] = []
        self.row = np.zeros(0, dtype=np.intp)
        self.held = np.zeros(0, dtype=bool)  # held whole by a claim
        self.local = np.zeros(0, dtype=bool)  # published for this node alone (nodeName)
        self.gpu_column = np.zeros(0, dtype=np.int32)  # -1: not a GPU
        self.by_id: dict[DeviceId, list[int]] = {}
        #: Per node row: its entries in search order, and its GPU entries.
        self.on_row: list[list[int]] = []
        self.gpus_on_row: list[list[int]] = []
        self.kinds: dict[Kind, KindCounts] = {}
        self.rows = 0

    def add_node(self, row: int, node: str, labels: dict[str, str], gpu_base: int) -> int:
        """Take the devices ``node`` (row ``row``, the next row) can use; their GPUs get device
        columns from ``gpu_base`` on. Returns how many GPUs it has."""
        entries: list[tuple[DeviceId, Device]] = []
        local = []
        for pool in gather_pools(node, labels, self.slices):
            if pool.incomplete or pool.invalid:
                continue
            for item, device in pool.devices(node, labels):
                entries.append(((pool.driver, pool.name, device.name), device))
                local.append(bool(item.selection.node_name) and not item.per_device_node_selection)
        start = len(self.ids)
        rows, columns, mine, gpus = [], [], [], []
        for offset, (ident, device) in enumerate(entries):
            self.ids.append(ident)
            self.devices.append(device)
            self.by_id.setdefault(ident, []).append(start + offset)
            rows.append(row)
            mine.append(start + offset)
            if self.gpus and is_gpu(ident[0], device):
                columns.append(gpu_base + len(gpus))
                gpus.append(start + offset)
            else:
                columns.append(-1)
        self.row = np.concatenate([self.row, np.array(rows, dtype=np.intp)])
        self.held = np.concatenate([self.held, np.zeros(len(rows), dtype=bool)])
        self.local = np.concatenate([self.local, np.array(local, dtype=bool)])
        self.gpu_column = np.concatenate([self.gpu_column, np.array(columns, dtype=np.int32)])
        while len(self.on_row) <= row:
            self.on_row.append([])
            self.gpus_on_row.append([])
        self.on_row[row] = mine
        self.gpus_on_row[row] = gpus
        self.rows = max(self.rows, row + 1)
        self.kinds.clear()  # counted again on next use
        return len(gpus)

    # -- kinds -------------------------------------------------------------------------------

    def kind(self, kind: Kind) -> KindCounts | None:
        """The counts for a kind; None when its class is not loaded."""
        counts = self.kinds.get(kind)
        if counts is not None:
            return counts
        device_class = self.classes.get(kind[0])
        if device_class is None:
            return None
        expressions = device_class.selectors + kind[1]
        match = np.zeros(len(self.ids), dtype=bool)
        exact = True
        verdicts: dict[int, bool] = {}
        for at, device in enumerate(self.devices):
            known = verdicts.get(id(device))
            if known is None:
                known = True
                if device.binding_conditions or device.consumes_counters:
                    known = False
                else:
                    for expression in expressions:
                        try:
                            ok = self.selectors.matches(expression, self.ids[at][0], device)
                        except CelError:
                            exact = False  # the allocator reports the error on the node
                            break
                        if not ok:
                            known = False
                            break
                verdicts[id(device)] = known
            match[at] = known
        if match.any():
            chosen = np.flatnonzero(match)
            shared = any(self.devices[i].allow_multiple_allocations for i in chosen)
            tainted = any(self.devices[i].taints for i in chosen)
            exact = exact and not shared and not tainted and bool(self.local[chosen].all())
            gpu = bool((self.gpu_column[chosen] >= 0).all())
        else:
            gpu = False
        free = np.bincount(self.row[match & ~self.held], minlength=self.rows).astype(np.int32)
        counts = self.kinds[kind] = KindCounts(match, free, exact, gpu)
        return counts

    def free_counts(self, kind: Kind, rows: np.ndarray) -> np.ndarray:
        counts = self.kind(kind)
        if counts is None:
            return np.zeros(len(rows), dtype=np.int32)
        return counts.free[rows]

    # -- holding -----------------------------------------------------------------------------

    def hold(self, ident: DeviceId, sign: int, touched: Callable[[int], None]) -> None:
        """A device taken whole (``sign`` 1) or given back (-1): every node it reaches counts
        it so, and ``touched`` hears of each such row."""
        entries = self.by_id.get(ident, ())
        for at in entries:
            self.held[at] = sign > 0
            row = int(self.row[at])
            for counts in self.kinds.values():
                if counts.match[at]:
                    counts.free[row] -= sign
            touched(row)

    def entry(self, row: int, ident: DeviceId) -> int:
        """The entry of device ``ident`` on ``row`` (-1 if the row does not reach it)."""
        for at in self.by_id.get(ident, ()):
            if self.row[at] == row:
                return at
        return -1


def slices_of(objects: list[object]) -> list[ResourceSlice]:
    return [o for o in objects if isinstance(o, ResourceSlice)]
