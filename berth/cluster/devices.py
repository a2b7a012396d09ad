"""GPU devices per node: what is left of each device, as a (nodes × devices) matrix.

A node's ``nvidia.com/gpu`` allocatable (milli-GPU) is split into devices of 1,000 each. A pod
that asks less than 1,000 takes a share of one device; a pod that asks k × 1,000 takes k fully
idle devices; a pod that asks more than 1,000 but not a multiple takes the whole devices plus a
share of one more. This is how GPU-sharing device plugins and schedulers account (Alibaba's
gpushare, Volcano's gpu-share, Koordinator's DeviceShare, HAMi): the node-level sum says three
0.6-GPU pods fit on two GPUs, the devices say only two do.

Nodes may declare GPU memory per device (annotation ``berth.io/gpu-memory``, MiB); a pod asking
GPU memory (the same annotation, MiB per device) needs it on each device it uses. A device without a
declared memory has as much as anyone asks.

Every test here is vectorized over node rows × devices; only binding a pod touches one row.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from berth.api.keys import GPU_MEMORY_ANNOTATION, GPU_TOPOLOGY_ANNOTATION, gpu_groups
from berth.api.objects import Node, Pod

#: milli-GPU in one device.
MILLI = 1000
#: The devices a bound pod holds, as a device plugin would be told ("node/3:460").
GPU_DEVICES_ANNOTATION = "berth.io/gpu-devices"
#: Memory of a device that does not declare any: more than any pod asks.
UNLIMITED_MEMORY = 1 << 50
_NO_DEVICE = -1
#: Up to this many rows, ``fits`` goes through each row's devices as a list: numpy's per-call
#: cost is most of the time on a handful of rows (a pod's scores patched after a bind).
_FEW_ROWS = 4


class DeviceError(ValueError):
    """A GPU memory annotation that is not a whole number of MiB."""


def memory_mib(annotations: dict[str, str], what: str) -> int:
    """The ``berth.io/gpu-memory`` annotation as MiB (0 when absent)."""
    raw = annotations.get(GPU_MEMORY_ANNOTATION)
    if raw is None or raw == "":
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise DeviceError(
            f"{what}: annotation {GPU_MEMORY_ANNOTATION}: {raw!r} is not MiB per device "
            "(an integer >= 0)"
        )
    return value


@dataclass(slots=True, frozen=True)
class GpuAsk:
    """What a pod needs from a node's devices: ``whole`` idle devices, then a ``share`` of one
    more (0: none), each with ``memory`` MiB."""

    whole: int
    share: int
    memory: int = 0

    @property
    def devices(self) -> int:
        return self.whole + (1 if self.share else 0)


def gpu_ask(milli: int, memory: int = 0) -> GpuAsk | None:
    """The device ask of a request of ``milli`` milli-GPU (None when it asks no GPU)."""
    if milli <= 0:
        return None
    whole, share = divmod(int(milli), MILLI)
    return GpuAsk(whole, share, memory)


def pod_ask(pod: Pod, milli: int) -> GpuAsk | None:
    if milli <= 0:
        return None
    return gpu_ask(milli, memory_mib(pod.annotations, f"pod {pod.key}"))


@dataclass(slots=True, frozen=True)
class Placement:
    """The devices one pod holds on its node: indices and milli-GPU taken from each."""

    row: int
    index: tuple[int, ...]
    amount: tuple[int, ...]
    memory: int

    def text(self) -> str:
        """``3:460`` for a share, ``0,1,2,3`` for whole devices, ``0,1,2:500`` for both."""
        pairs = zip(self.index, self.amount, strict=True)
        return ",".join(str(i) if a == MILLI else f"{i}:{a}" for i, a in pairs)


def device_ids(node: str, placement: Placement) -> str:
    """Synthetic device ids a device plugin can be handed: ``<node>-gpu<i>``, with the share
    in milli-GPU after a colon for a partly used device."""
    return ",".join(
        f"{node}-gpu{i}" + ("" if a == MILLI else f":{a}")
        for i, a in zip(placement.index, placement.amount, strict=True)
    )


def record_devices(pod: Pod, node: str, placement: Placement) -> None:
    """Note on the pod which devices it was placed on (pods.csv and its annotation)."""
    pod.gpu_devices = placement.text()
    # A new dict: a trace task's pods share one until one of them is written to.
    pod.annotations = {**pod.annotations, GPU_DEVICES_ANNOTATION: device_ids(node, placement)}


def _islands(node: Node, width: int) -> np.ndarray:
    """Each device slot's group number from the node's ``berth.io/gpu-topology`` (one group
    for all without it; an unlisted device is a group of its own)."""
    text = node.annotations.get(GPU_TOPOLOGY_ANNOTATION)
    if text is None:
        return np.zeros(width, dtype=np.int16)
    try:
        groups = gpu_groups(text)
    except ValueError as exc:
        raise DeviceError(
            f"node {node.name}: annotation {GPU_TOPOLOGY_ANNOTATION}: {exc}"
        ) from None
    island = np.arange(len(groups), len(groups) + width, dtype=np.int16)
    for number, group in enumerate(groups):
        listed = [d for d in group if d < width]
        island[listed] = number
    return island


class DeviceTable:
    """Remaining milli-GPU and GPU memory per device; ``-1`` marks a slot past a node's last
    device, so that it never fits anything."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.width = 0
        self.remaining = np.full((capacity, 0), _NO_DEVICE, dtype=np.int32)
        self.memory = np.zeros((capacity, 0), dtype=np.int64)
        self.count = np.zeros(capacity, dtype=np.int32)
        #: The interconnect group (NVLink island) of each device, numbered per node.
        self.island = np.zeros((capacity, 0), dtype=np.int16)
        self.placements: dict[str, Placement] = {}
        #: Per kind of GPU ask (milli-GPU per pod), how many such pods each row holds.
        self.kinds: dict[int, np.ndarray] = {}

    # ------------------------------------------------------------------ shape

    def grow(self, capacity: int) -> None:
        remaining = np.full((capacity, self.width), _NO_DEVICE, dtype=np.int32)
        remaining[: self.capacity] = self.remaining
        memory = np.zeros((capacity, self.width), dtype=np.int64)
        memory[: self.capacity] = self.memory
        count = np.zeros(capacity, dtype=np.int32)
        count[: self.capacity] = self.count
        island = np.zeros((capacity, self.width), dtype=np.int16)
        island[: self.capacity] = self.island
        self.remaining, self.memory, self.count, self.island = remaining, memory, count, island
        for kind, held in self.kinds.items():
            self.kinds[kind] = np.pad(held, (0, capacity - self.capacity))
        self.capacity = capacity

    def _widen(self, width: int) -> None:
        remaining = np.full((self.capacity, width), _NO_DEVICE, dtype=np.int32)
        remaining[:, : self.width] = self.remaining
        memory = np.zeros((self.capacity, width), dtype=np.int64)
        memory[:, : self.width] = self.memory
        island = np.zeros((self.capacity, width), dtype=np.int16)
        island[:, : self.width] = self.island
        self.remaining, self.memory, self.island = remaining, memory, island
        self.width = width

    def add_node(self, row: int, node: Node, milli: int) -> None:
        """Devices for a node with ``milli`` milli-GPU allocatable: 1,000 each, the remainder
        (if any) as a last, smaller device."""
        whole, rest = divmod(max(int(milli), 0), MILLI)
        count = whole + (1 if rest else 0)
        if count > self.width:
            self._widen(count)
        mib = memory_mib(node.annotations, f"node {node.name}")
        self.remaining[row] = _NO_DEVICE
        self.remaining[row, :whole] = MILLI
        if rest:
            self.remaining[row, whole] = rest
        self.memory[row] = 0
        self.memory[row, :count] = mib if mib else UNLIMITED_MEMORY
        self.count[row] = count
        self.island[row] = _islands(node, self.width)

    # ------------------------------------------------------------------ fit

    def fits(self, rows: np.ndarray | slice, ask: GpuAsk) -> np.ndarray:
        """Whether each row has ``ask.whole`` idle devices and, for a share, one more device
        with room for it (a partly used one, or another idle one)."""
        if not isinstance(rows, slice) and len(rows) <= _FEW_ROWS:
            return np.array([self._fits_row(row, ask) for row in rows.tolist()], dtype=bool)
        remaining = self.remaining[rows]
        roomy = self.memory[rows] >= ask.memory if ask.memory else None
        idle_dev = remaining >= MILLI
        if roomy is not None:
            idle_dev &= roomy
        idle = idle_dev.sum(axis=1)
        if not ask.share:
            return idle >= ask.whole
        partly = (remaining >= ask.share) & (remaining < MILLI)
        if roomy is not None:
            partly &= roomy
        return (idle >= ask.whole) & (partly.any(axis=1) | (idle > ask.whole))

    def _fits_row(self, row: int, ask: GpuAsk) -> bool:
        """``fits`` for one row, through its devices as a list."""
        remaining: list[int] = self.remaining[row].tolist()
        memory: list[int] = self.memory[row].tolist() if ask.memory else []
        idle = partly = 0
        for device, left in enumerate(remaining):
            if memory and memory[device] < ask.memory:
                continue
            if left >= MILLI:
                idle += 1
            elif ask.share and left >= ask.share:
                partly += 1
        if not ask.share:
            return idle >= ask.whole
        return idle >= ask.whole and (partly > 0 or idle > ask.whole)

    def whole_taken(self, rows: np.ndarray | slice, whole: int) -> np.ndarray:
        """Remaining per device after the lowest-index ``whole`` idle devices of each row are
        taken (rows assumed to fit)."""
        remaining = self.remaining[rows].copy()
        if whole:
            idle = remaining >= MILLI
            taken = idle & (np.cumsum(idle, axis=1) <= whole)
            remaining[taken] = 0
        return remaining

    def share_candidates(
        self, remaining: np.ndarray, rows: np.ndarray | slice, ask: GpuAsk
    ) -> np.ndarray:
        """Mask of the devices that could take the share, given ``remaining`` (after the whole
        devices were taken)."""
        ok = remaining >= ask.share
        if ask.memory:
            ok &= self.memory[rows] >= ask.memory
        return ok

    def best_fit(self, row: int, ask: GpuAsk) -> list[int]:
        """The default device choice: the lowest-index idle devices for the whole part, then the
        fitting device with the least left for the share (ties to the lowest index). A node's
        few devices are gone through as lists: numpy's per-call cost is most of the time on
        eight values."""
        remaining: list[int] = self.remaining[row].tolist()
        chosen = self._whole_devices(row, ask, remaining) if ask.whole else []
        if not ask.share:
            return chosen
        memory: list[int] = self.memory[row].tolist() if ask.memory else []
        best = -1
        for device, left in enumerate(remaining):
            if left < ask.share or (memory and memory[device] < ask.memory):
                continue
            if device not in chosen and (best < 0 or left < remaining[best]):
                best = device
        if best < 0:
            raise ValueError(f"no device on row {row} has {ask.share} milli-GPU free")
        return [*chosen, best]

    def _whole_devices(self, row: int, ask: GpuAsk, remaining: list[int]) -> list[int]:
        """The idle devices for the whole part: within one interconnect group when one has
        enough (the group with the fewest idle that does, keeping larger ones whole), else
        from the groups with the most idle first; lowest index first within a group."""
        idle = [device for device, left in enumerate(remaining) if left >= MILLI]
        if ask.whole < 2:
            return idle[: ask.whole]
        islands: list[int] = self.island[row].tolist()
        group = [islands[device] for device in idle]
        counts: dict[int, int] = {}
        for number in group:
            counts[number] = counts.get(number, 0) + 1
        enough = [number for number, count in counts.items() if count >= ask.whole]
        if enough:
            best = min(enough, key=lambda number: (counts[number], number))
            return [d for d, number in zip(idle, group, strict=True) if number == best][: ask.whole]
        ranked = sorted(
            zip(idle, group, strict=True), key=lambda pair: (-counts[pair[1]], pair[1], pair[0])
        )
        return sorted(device for device, _ in ranked[: ask.whole])

    def largest_group_idle(self, rows: np.ndarray | slice) -> np.ndarray:
        """Per row, the idle devices of its interconnect group with the most idle."""
        idle = self.remaining[rows] >= MILLI
        islands = self.island[rows]
        best = np.zeros(idle.shape[0], dtype=np.int64)
        groups = int(islands.max(initial=-1)) + 1
        for group in range(groups):  # over a node's groups, never over nodes
            best = np.maximum(best, (idle & (islands == group)).sum(axis=1))
        return best

    # ------------------------------------------------------------------ accounting

    def take(self, key: str, row: int, ask: GpuAsk, devices: np.ndarray | None) -> Placement:
        """Give ``key`` the ``devices`` of ``row`` (the default choice when None)."""
        if key in self.placements:
            raise ValueError(f"pod {key} already holds GPU devices")
        amount = (MILLI,) * ask.whole + ((ask.share,) if ask.share else ())
        if devices is None:
            index = self.best_fit(row, ask)  # distinct devices with the milli-GPU asked
        else:
            index = np.asarray(devices, dtype=np.intp).tolist()
        if len(index) != ask.devices or len(set(index)) != len(index):
            raise ValueError(f"pod {key}: {len(index)} devices chosen for {ask}")
        if devices is not None or ask.memory:
            remaining: list[int] = self.remaining[row].tolist()
            memory: list[int] = self.memory[row].tolist() if ask.memory else []
            for device, milli in zip(index, amount, strict=True):
                short = devices is not None and remaining[device] < milli
                if short or (memory and memory[device] < ask.memory):
                    raise ValueError(
                        f"pod {key}: device {device} of row {row} cannot take its share"
                    )
        placement = Placement(row, tuple(index), amount, ask.memory)
        self._apply(placement, -1)
        self.placements[key] = placement
        return placement

    def restore(self, key: str, placement: Placement) -> None:
        """Hand ``key`` back exactly the devices it held (undoing an eviction)."""
        self._apply(placement, -1)
        self.placements[key] = placement

    def give_back(self, key: str) -> Placement | None:
        placement = self.placements.pop(key, None)
        if placement is not None:
            self._apply(placement, 1)
        return placement

    def _apply(self, placement: Placement, sign: int) -> None:
        row = placement.row
        remaining = self.remaining[row]  # a node's few devices: item by item beats indexing
        for device, amount in zip(placement.index, placement.amount, strict=True):
            remaining[device] += sign * amount
        if placement.memory:
            self.memory[row, list(placement.index)] += sign * placement.memory
        kind = sum(placement.amount)
        held = self.kinds.get(kind)
        if held is None:
            held = self.kinds[kind] = np.zeros(self.capacity, dtype=np.int32)
        held[row] -= sign
