"""gpu-packing: shared devices first, then idle devices of partly used nodes, then idle nodes
(the FGD paper's packing baseline).

Scores, highest first: a share that fits a partly used device scores 50..100, more the fuller
that device (100 − its free tenths); a pod that must take idle devices of a node already in use
scores 33..50 (50 − the idle devices it takes); a node whose devices are all idle scores at most
33 (33 − its devices). CPU-only pods score 0 everywhere (other scorers place them)."""

from __future__ import annotations

import numpy as np

from berth.cluster.devices import MILLI
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_index
from berth.framework.podclass import PodClass


class GpuPacking(Plugin):
    name = "gpu-packing"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score" and cls.gpu is not None

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        ask = cls.gpu
        if ask is None:
            return np.zeros(len(idx))
        remaining = state.gpus.remaining[idx]
        count = state.gpus.count[idx]
        idle = (remaining >= MILLI).sum(axis=1)
        fresh = np.maximum(33.0 - idle, idle)
        if not ask.share:  # whole devices only: the same score on every node in use
            in_use = max(50.0 - ask.whole, 33.0) if ask.whole else 0.0
            return np.where(idle == count, fresh, in_use)
        # A node in use: the pod's whole devices are idle ones; its share goes to the fitting
        # device with least left, which may be partly used (packed) or idle.
        fitting = np.where(remaining >= ask.share, remaining, MILLI + 1)
        tightest = fitting.min(axis=1)
        uses_idle = ask.whole + (tightest >= MILLI)
        tenths = (tightest * 100 // MILLI) // 10
        packed = np.maximum(100.0 - tenths, 50.0)
        used = np.where(uses_idle > 0, np.maximum(50.0 - uses_idle, 33.0), packed)
        return np.where(idle == count, fresh, used)
