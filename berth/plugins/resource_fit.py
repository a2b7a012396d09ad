"""resource-fit: a node fits when its free capacity covers the pod's request in every resource,
and, for a GPU pod, when its devices do: a share fits in one device's remaining share, whole
GPUs need fully idle devices (see ``berth.cluster.devices``); for a pod that gets a cpuset
(``berth.cluster.cpusets``), when the node describes its CPUs and has enough nobody holds.

``ignoredResources`` and ``ignoredResourceGroups`` (kube-scheduler's NodeResourcesFitArgs)
leave extended resources unchecked, by name or by the group before the '/'
(``example.com`` ignores ``example.com/foo``): they are accounted by something else.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from berth.cluster.cpusets import cpuset_ask
from berth.cluster.devices import MILLI, GpuAsk
from berth.cluster.state import ClusterState
from berth.cluster.totals import NodeTotal
from berth.framework.plugin import Plugin, PluginArgumentError, Rows, row_index
from berth.framework.podclass import PodClass

#: A node's count of whole pods when no resource bounds it.
_UNBOUNDED = np.iinfo(np.int64).max


def _device_fit(state: ClusterState, rows: Rows, ask: GpuAsk, mask: np.ndarray) -> np.ndarray:
    """``mask`` narrowed to the rows whose devices can take ``ask`` (tested only where the
    node-level sums already fit)."""
    hit = np.flatnonzero(mask)
    if not len(hit):
        return mask
    index = hit + rows.start if isinstance(rows, slice) else rows[hit]
    mask[hit] = state.gpus.fits(index, ask)
    return mask


def _cpuset_fit(
    state: ClusterState, rows: Rows, ask: tuple[int, str], mask: np.ndarray
) -> np.ndarray:
    """``mask`` narrowed to the rows with a CPU topology and ``ask``'s cpus unheld."""
    return mask & state.cpus.fits(row_index(state, rows), *ask)


def cpuset_reason(ask: tuple[int, str]) -> str:
    cpus, policy = ask
    return f"no CPU topology with {cpus} cpus for a cpuset ({policy})"


def device_reason(ask: GpuAsk) -> str:
    """Why a node's GPU sums fit but its devices do not."""
    memory = f" with {ask.memory} MiB GPU memory" if ask.memory else ""
    if not ask.whole:
        return f"no GPU device with {ask.share}m{memory} free"
    idle = f"fewer than {ask.whole} idle GPU device{'s' if ask.whole > 1 else ''}{memory}"
    return idle + (f" plus one with {ask.share}m free" if ask.share else "")


def _whole_devices(cls: PodClass) -> bool:
    """Whether the pod asks whole GPUs only (no share of one, no device memory)."""
    ask = cls.gpu
    return ask is not None and not ask.share and not ask.memory and ask.whole > 0


class ResourceFit(Plugin):
    name = "resource-fit"
    reason = "insufficient resources"
    checks_free_capacity = True

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.ignored = self._names("ignoredResources")
        self.ignored_groups = self._names("ignoredResourceGroups")
        self._room_key = self.name + ":room"
        self._checks_key = self.name + ":checks"

    def _names(self, key: str) -> frozenset[str]:
        value = self.arguments.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {key}: expected a list of names (got {value!r})"
            )
        return frozenset(value)

    def _checked(self, cls: PodClass, state: ClusterState) -> np.ndarray:
        """The resource columns the pod requests that this plugin checks."""
        if not self.ignored and not self.ignored_groups:
            return cls.nonzero
        names = state.axis.names
        return np.array(
            [col for col in cls.nonzero if not self._is_ignored(names[col])], dtype=np.intp
        )

    def _is_ignored(self, name: str) -> bool:
        # Only extended resources can be ignored: named under a domain of their own.
        if "/" not in name or "kubernetes.io/" in name:
            return False
        return name in self.ignored or name.partition("/")[0] in self.ignored_groups

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        cls.static[self.name] = cpuset_ask(cls.pod) if state.cpus.active else None

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        free = state.free
        checks = cls.static.get(self._checks_key)
        if checks is None:  # (column, amount) as Python ints: asked at every patch
            request = cls.request
            checks = cls.static[self._checks_key] = [
                (int(col), int(request[col])) for col in self._checked(cls, state)
            ]
        if not checks:
            return np.ones(len(state.schedulable[rows]), dtype=bool)
        (col, amount), *rest = checks
        mask = free[:, col][rows] >= amount
        for col, amount in rest:
            mask &= free[:, col][rows] >= amount
        if cls.gpu is not None:
            mask = _device_fit(state, rows, cls.gpu, mask)
        cpuset = cls.static.get(self.name)
        if cpuset is not None:
            mask = _cpuset_fit(state, rows, cpuset, mask)
        return mask

    def exceeds(self, cls: PodClass, state: ClusterState, ceiling: np.ndarray) -> bool:
        cols = self._checked(cls, state)
        cols = cols[cols < len(ceiling)]  # (columns added since the ceiling was taken: not judged)
        return bool((cls.request[cols] > ceiling[cols]).any())

    def room(self, cls: PodClass, state: ClusterState) -> int | None:
        """Whole pods of ``cls`` each schedulable node's free resources hold, summed; for a
        pod of whole GPUs, also no more than the node's idle devices hold. Kept with the class
        and patched on the rows that changed: asked at every gang's turn."""
        cols = self._checked(cls, state)
        if not len(cols):
            return None
        total = cls.static.get(self._room_key)
        if total is None:
            total = cls.static[self._room_key] = NodeTotal(partial(_fits, cls, cols))
        return int(total.read(state))

    def room_exact(self, cls: PodClass, state: ClusterState) -> bool:
        # Each pod takes its request and whole idle devices from one node, whichever fits:
        # nodes hold their counts independently. A GPU share, a memory ask or a cpuset
        # depends on which devices or cpus earlier pods took.
        return cls.static.get(self.name) is None and (cls.gpu is None or _whole_devices(cls))

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        assert isinstance(rows, np.ndarray)  # (the search explains a list of rows)
        reasons = [
            (f"insufficient {state.axis.names[col]}", state.free[:, col][rows] < cls.request[col])
            for col in self._checked(cls, state)
        ]
        # Only a node no earlier reason refused can lack room on its devices or cpus.
        if cls.gpu is not None:
            sums = _unrefused(reasons, len(rows))
            reasons.append(
                (device_reason(cls.gpu), sums & ~_device_fit(state, rows, cls.gpu, sums.copy()))
            )
        cpuset = cls.static.get(self.name)
        if cpuset is not None:
            sums = _unrefused(reasons, len(rows))
            reasons.append((cpuset_reason(cpuset), sums & ~_cpuset_fit(state, rows, cpuset, sums)))
        return reasons


def _fits(cls: PodClass, cols: np.ndarray, state: ClusterState, rows: Rows) -> np.ndarray:
    """Whole pods of ``cls`` each of ``rows`` holds (see ``ResourceFit.room``)."""
    free = state.free[rows][:, cols]
    fits = np.floor_divide(free, cls.request[cols]).min(axis=1, initial=_UNBOUNDED)
    if _whole_devices(cls):
        idle = (state.gpus.remaining[rows] >= MILLI).sum(axis=1)
        fits = np.minimum(fits, idle // cls.gpu.whole)  # type: ignore[union-attr]
    return np.maximum(fits, 0)


def _unrefused(reasons: list[tuple[str, np.ndarray]], n: int) -> np.ndarray:
    """The rows none of ``reasons`` refuses."""
    sums = np.ones(n, dtype=bool)
    for _, short in reasons:
        sums &= ~short
    return sums
