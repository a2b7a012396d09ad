"""dotprod: Tetris's alignment score (Grandl et al., SIGCOMM'14) as the FGD paper's baseline
uses it: per candidate device, the dot product of the pod's request and the node's free
resources (cpu, and the device's free share or the node's idle GPUs), each normalised by the
node's capacity; the smaller the product the higher the score, and the share goes to the
device that scores best."""

from __future__ import annotations

import numpy as np

from berth.cluster.devices import MILLI
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_index
from berth.framework.podclass import PodClass
from berth.plugins.gpu_placement import (
    cpu_column,
    idle_gpu,
    pod_cpu,
    share_devices,
    with_share,
)


class DotProd(Plugin):
    name = "dotprod"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score"

    def products(self, cls: PodClass, state: ClusterState, idx: np.ndarray) -> np.ndarray:
        """(rows, choices) of normalised dot products, +inf where a device cannot take the
        share; one choice per device for a share, one otherwise."""
        col = cpu_column(state)
        capacity = np.maximum(state.allocatable[idx, col], 1)
        cpu = pod_cpu(cls, state) / capacity * (state.free[idx, col] / capacity)
        ask = cls.gpu
        if ask is None:
            return cpu[:, None]
        if not ask.share:
            devices = np.maximum(state.gpus.count[idx], 1) * MILLI
            gpu = ask.whole * MILLI / devices * (idle_gpu(state, idx) / devices)
            return (cpu + gpu)[:, None] / 2
        remaining, candidates = share_devices(cls, state, idx)
        gpu = ask.share / MILLI * (np.maximum(remaining, 0) / MILLI)
        return np.where(candidates, (cpu[:, None] + gpu) / 2, np.inf)

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        best = self.products(cls, state, idx).min(axis=1)
        return 100.0 * (1.0 - np.minimum(best, 1.0))

    def pick_devices(self, cls: PodClass, state: ClusterState, row: int) -> np.ndarray | None:
        if cls.gpu is None or not cls.gpu.share:
            return None
        products = self.products(cls, state, np.array([row]))[0]
        return with_share(cls, state, row, int(np.argmin(products)))
