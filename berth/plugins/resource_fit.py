"""resource-fit: a node fits when its free capacity covers the pod's request in every resource,
and, for a GPU pod, when its devices do: a share fits in one device's remaining share, whole
GPUs need fully idle devices (see ``berth.cluster.devices``)."""

from __future__ import annotations

import numpy as np

from berth.cluster.devices import GpuAsk
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


def _device_fit(state: ClusterState, rows: Rows, ask: GpuAsk, mask: np.ndarray) -> np.ndarray:
    """``mask`` narrowed to the rows whose devices can take ``ask`` (tested only where the
    node-level sums already fit)."""
    hit = np.flatnonzero(mask)
    if not len(hit):
        return mask
    index = hit + rows.start if isinstance(rows, slice) else rows[hit]
    mask[hit] = state.gpus.fits(index, ask)
    return mask


def device_reason(ask: GpuAsk) -> str:
    """Why a node's GPU sums fit but its devices do not."""
    memory = f" with {ask.memory} MiB GPU memory" if ask.memory else ""
    if not ask.whole:
        return f"no GPU device with {ask.share}m{memory} free"
    idle = f"fewer than {ask.whole} idle GPU device{'s' if ask.whole > 1 else ''}{memory}"
    return idle + (f" plus one with {ask.share}m free" if ask.share else "")


class ResourceFit(Plugin):
    name = "resource-fit"
    reason = "insufficient resources"
    checks_free_capacity = True

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        free = state.free
        request = cls.request
        cols = cls.nonzero
        if not len(cols):
            return np.ones(len(state.schedulable[rows]), dtype=bool)
        mask = free[:, cols[0]][rows] >= request[cols[0]]
        for col in cols[1:]:
            mask &= free[:, col][rows] >= request[col]
        if cls.gpu is not None:
            mask = _device_fit(state, rows, cls.gpu, mask)
        return mask

    def explain(
        self, cls: PodClass, state: ClusterState, rows: Rows
    ) -> list[tuple[str, np.ndarray]]:
        reasons = [
            (f"insufficient {state.axis.names[col]}", state.free[:, col][rows] < cls.request[col])
            for col in cls.nonzero
        ]
        if cls.gpu is not None:
            # Only a node with room in its sums can lack it on its devices.
            sums = np.ones(len(rows), dtype=bool)
            for _, short in reasons:
                sums &= ~short
            reasons.append(
                (device_reason(cls.gpu), sums & ~_device_fit(state, rows, cls.gpu, sums.copy()))
            )
        return reasons
