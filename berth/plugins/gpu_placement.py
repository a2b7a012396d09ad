"""Shared arithmetic of the GPU placement policies (fgd, gpu-bestfit, gpu-packing,
gpu-clustering, dotprod): the node's devices after the pod's whole GPUs are taken, and the
normalisation constants of the FGD paper's simulator."""

from __future__ import annotations

import numpy as np

from berth.cluster.devices import MILLI
from berth.cluster.state import ClusterState
from berth.framework.podclass import PodClass
from berth.resources import CPU

#: A large node of the openb cluster: the scale best-fit and clustering normalise by.
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8 * MILLI


def cpu_column(state: ClusterState) -> int:
    return state.axis.index(CPU)


def pod_cpu(cls: PodClass, state: ClusterState) -> int:
    col = cpu_column(state)
    return int(cls.request[col]) if col < len(cls.request) else 0


def gpu_milli(cls: PodClass) -> int:
    ask = cls.gpu
    return 0 if ask is None else ask.whole * MILLI + ask.share


def idle_gpu(state: ClusterState, idx: np.ndarray) -> np.ndarray:
    """Idle milli-GPU per row, summed over its devices."""
    return np.maximum(state.gpus.remaining[idx], 0).sum(axis=1)


def share_devices(
    cls: PodClass, state: ClusterState, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(remaining after the whole part, candidate mask for the share) per row and device."""
    ask = cls.gpu
    assert ask is not None
    remaining = state.gpus.whole_taken(idx, ask.whole)
    return remaining, state.gpus.share_candidates(remaining, idx, ask)


def with_share(cls: PodClass, state: ClusterState, row: int, device: int) -> np.ndarray:
    """The device indices for a pod on ``row`` taking its share on ``device``: the whole
    devices the default takes (lowest idle first), then ``device``."""
    ask = cls.gpu
    assert ask is not None
    idx = np.array([row])
    taken = (state.gpus.remaining[row] >= MILLI) & (state.gpus.whole_taken(idx, ask.whole)[0] == 0)
    return np.append(np.flatnonzero(taken), device).astype(np.intp)
