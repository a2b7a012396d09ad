"""GPU fragmentation measured against a target workload (Weng et al., "Beware of Fragmentation",
USENIX ATC'23).

The target workload is the distribution of pod shapes — cpu, per-device GPU share, GPU count,
GPU models allowed — keeping the most frequent shapes until they cover 95% of the pods. A node's
fragmentation for one shape is the idle GPU capacity that shape cannot use: when the shape fits
(GPU and cpu), the remainders of the devices too small for it; when it does not fit (or may not
run on the node's GPU model, or asks no GPU at all), all of the node's idle GPU capacity. The
node's fragmentation is the expectation over the shapes; the cluster's is the sum over nodes.

It is vectorized over node rows × shapes × devices; a handful of rows is worked out row by
row instead (``FEW_ROWS``), to the same bits.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from berth.api.keys import GPU_PRODUCT_LABEL
from berth.api.objects import Pod
from berth.api.selectors import Requirement
from berth.cluster.devices import MILLI
from berth.cluster.state import ClusterState
from berth.resources import CPU, GPU

#: Shapes kept, most frequent first, until they cover this share of the pods.
DEFAULT_COVERAGE = 0.95


@dataclass(slots=True, frozen=True)
class Shape:
    """One kind of pod: millicores, milli-GPU per device it uses (1,000 for whole devices),
    devices (0: a CPU-only pod) and the GPU models it may run on (empty: any)."""

    cpu: int
    share: int
    count: int
    models: tuple[str, ...] = ()


def pod_models(pod: Pod) -> tuple[str, ...]:
    """GPU models a pod is restricted to by its node selector or required node affinity."""
    chosen = pod.node_selector.get(GPU_PRODUCT_LABEL)
    if chosen:
        return (chosen,)
    for term in pod.affinity.node_required:
        for req in term.expressions:
            if req.key == GPU_PRODUCT_LABEL and req.operator == "In":
                return tuple(sorted(req.values))
    return ()


def pod_shape(pod: Pod) -> Shape:
    gpu = pod.requests.get(GPU, 0)
    cpu = pod.requests.get(CPU, 0)
    if gpu <= 0:
        return Shape(cpu, 0, 0)
    models = pod_models(pod)
    if gpu < MILLI:
        return Shape(cpu, gpu, 1, models)
    return Shape(cpu, MILLI, gpu // MILLI, models)


@dataclass(slots=True, frozen=True)
class _Columns:
    """A workload's columns as Python lists: on a few rows, a loop over them in compiled code
    answers in a fraction of the time that numpy's per-call cost alone takes."""

    needs: list[int]
    need_of: list[int]
    count: list[int]
    cpu: list[int]
    counts: list[int]
    covered: int


@dataclass(slots=True)
class Workload:
    """The target workload: shapes and how many of the pods counted have each (their
    probabilities are ``counts / covered``)."""

    shapes: tuple[Shape, ...]
    counts: np.ndarray
    covered: int = field(init=False)
    cpu: np.ndarray = field(init=False)
    need: np.ndarray = field(init=False)
    count: np.ndarray = field(init=False)
    #: The distinct per-device needs, and which one each shape has: the per-device work is
    #: done once per need, not once per shape.
    needs: np.ndarray = field(init=False)
    need_of: np.ndarray = field(init=False)
    #: The same columns as lists, for the few-rows path.
    few: _Columns = field(init=False)
    _access: tuple[int, int, np.ndarray] | None = None

    def __post_init__(self) -> None:
        self.counts = np.asarray(self.counts, dtype=np.int64)
        self.covered = max(int(self.counts.sum()), 1)  # 1 for no shapes: nothing to divide
        self.cpu = np.array([s.cpu for s in self.shapes], dtype=np.int64)
        self.need = np.array([s.share for s in self.shapes], dtype=np.int64)
        self.count = np.array([s.count for s in self.shapes], dtype=np.int64)
        self.needs, self.need_of = np.unique(self.need, return_inverse=True)
        self.needs = self.needs.astype(np.int32)
        self.few = _Columns(
            self.needs.tolist(),
            self.need_of.tolist(),
            self.count.tolist(),
            self.cpu.tolist(),
            self.counts.tolist(),
            self.covered,
        )

    def __len__(self) -> int:
        return len(self.shapes)

    def access(self, state: ClusterState) -> np.ndarray:
        """(nodes, shapes): whether a shape may use a node's GPUs (model constraints), cached
        until nodes change."""
        cached = self._access
        if cached is not None and cached[0] == state.structure_epoch and cached[1] == state.n:
            return cached[2]
        n = state.n
        table = np.ones((n, len(self.shapes)), dtype=bool)
        for t, shape in enumerate(self.shapes):
            if shape.models:
                req = Requirement(GPU_PRODUCT_LABEL, "In", shape.models)
                table[:, t] = state.labels.match(req, n)
        self._access = (state.structure_epoch, n, table)
        return table


def target_workload(
    pods: Iterable[Pod], coverage: float = DEFAULT_COVERAGE, gpu_only: bool = False
) -> Workload:
    """The most frequent shapes of ``pods`` covering ``coverage`` of them, renormalised; ties
    in frequency in a fixed order, so the same pods give the same workload.

    ``gpu_only`` leaves CPU-only pods out. fgd keeps them, as the paper's simulator does (they
    count every idle GPU as fragment, the same for every node, and their cpu matters); the
    fragmentation reported leaves them out, or a mostly-CPU workload would call every idle GPU
    fragmented."""
    shapes = (pod_shape(pod) for pod in pods)
    counts = Counter(s for s in shapes if s.count or not gpu_only)
    if not counts:
        return Workload((), np.zeros(0, dtype=np.int64))
    total = sum(counts.values())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], _order(item[0])))
    kept: list[tuple[Shape, int]] = []
    covered = 0
    for shape, count in ranked:
        if covered >= coverage * total:
            break
        kept.append((shape, count))
        covered += count
    return Workload(tuple(s for s, _ in kept), np.array([count for _, count in kept]))


def _order(shape: Shape) -> tuple:
    return (shape.count, shape.share, shape.cpu, shape.models)


#: Up to this many rows, fragmentation is worked out row by row over Python lists (the
#: ``_few`` functions) rather than with numpy, whose per-call cost dominates on a handful of
#: rows (a pod's scores patched after one bind, its device picked on one node). Both ways
#: give bit-identical answers: the expectation is summed in integers and divided once.
FEW_ROWS = 6


def _per_need(workload: Workload, left: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For devices ``left`` (rows × devices, clipped at 0): per row and distinct need, the
    devices large enough and the milli-GPU on devices too small."""
    large = left[:, :, None] >= workload.needs
    small = np.where(large, 0, left[:, :, None]).sum(axis=1)
    return large.sum(axis=1), small


def _fit_base(workload: Workload, cpu_free: np.ndarray, access: np.ndarray) -> np.ndarray:
    """(rows, shapes): the shape asks GPU, may use the node's model and its cpu fits."""
    return (workload.count > 0) & (cpu_free[:, None] >= workload.cpu) & access


def _expected(
    workload: Workload, large: np.ndarray, small: np.ndarray, idle: np.ndarray, ok: np.ndarray
) -> np.ndarray:
    """Expected fragmentation: ``idle`` less, for each shape that fits, what it can use (the
    devices large enough for it), weighted by the shapes' probabilities. ``large`` and ``small``
    have the distinct needs on their last axis; ``ok`` (rows, shapes) broadcasts over any axes
    between (candidate devices). All integers until the one division."""
    large = large[..., workload.need_of]
    usable = idle[..., None] - small[..., workload.need_of]
    fits = ok & (large >= workload.count)
    return idle - (np.where(fits, usable, 0) @ workload.counts) / workload.covered


def node_fragmentation(
    workload: Workload, remaining: np.ndarray, cpu_free: np.ndarray, access: np.ndarray
) -> np.ndarray:
    """Expected idle milli-GPU per row that the workload's pods cannot use.

    ``remaining``: (rows, devices) milli-GPU left per device (-1 for no device); ``cpu_free``:
    (rows,); ``access``: (rows, shapes) from ``Workload.access``.
    """
    if not len(workload):
        return np.zeros(len(remaining))
    if len(remaining) <= FEW_ROWS:
        return _node_fragmentation_few(workload.few, remaining, cpu_free, access)
    left = np.maximum(remaining, 0)
    idle = left.sum(axis=1, dtype=np.int64)
    large, small = _per_need(workload, left)
    return _expected(workload, large, small, idle, _fit_base(workload, cpu_free, access))


def fragmentation_after_share(
    workload: Workload,
    remaining: np.ndarray,
    cpu_free: np.ndarray,
    access: np.ndarray,
    share: int,
) -> np.ndarray:
    """(rows, devices): the rows' fragmentation if a share of ``share`` milli-GPU went to each
    device (``cpu_free`` already net of the pod's cpu). Devices too small get +inf.

    Devices of a row with the same remainder give the same answer (idle devices, above all),
    so each distinct (row, remainder) that fits is computed once."""
    if len(remaining) <= FEW_ROWS:
        return _after_share_few(workload.few, remaining, cpu_free, access, share)
    left = np.maximum(remaining, 0)
    out = np.full(left.shape, np.inf)
    fit = remaining >= share
    if not fit.any():
        return out
    large, small = _per_need(workload, left)
    span = MILLI + 1
    keys, inverse = np.unique(
        (np.arange(len(left))[:, None] * span + left)[fit], return_inverse=True
    )
    rows, before = np.divmod(keys, span)
    before = before[:, None]
    after = before - share
    was_large = before >= workload.needs
    now_large = after >= workload.needs
    large2 = large[rows] - was_large + now_large
    small2 = small[rows] - np.where(was_large, 0, before) + np.where(now_large, 0, after)
    idle2 = left.sum(axis=1, dtype=np.int64)[rows] - share
    ok = _fit_base(workload, cpu_free[rows], access[rows])
    out[fit] = _expected(workload, large2, small2, idle2, ok)[inverse]
    return out


def _tally(needs: list[int], left: list[int]) -> tuple[list[int], list[int]]:
    """``_per_need`` for one row: per need, the devices large enough and the milli-GPU on
    the devices too small."""
    large = [0] * len(needs)
    small = [0] * len(needs)
    for k, need in enumerate(needs):
        for value in left:
            if value >= need:
                large[k] += 1
            else:
                small[k] += value
    return large, small


def _expected_one(
    w: _Columns, large: list[int], small: list[int], idle: int, cpu: int, access: list[bool]
) -> float:
    """``_expected`` for one row (or one device choice on it)."""
    used = 0
    for t, count in enumerate(w.count):
        if count > 0 and cpu >= w.cpu[t] and access[t]:
            k = w.need_of[t]
            if large[k] >= count:
                used += (idle - small[k]) * w.counts[t]
    return idle - used / w.covered


def _node_fragmentation_few(
    w: _Columns, remaining: np.ndarray, cpu_free: np.ndarray, access: np.ndarray
) -> np.ndarray:
    cpus: list[int] = cpu_free.tolist()
    accesses: list[list[bool]] = access.tolist()
    rows: list[list[int]] = remaining.tolist()
    out: list[float] = []
    for r, devices in enumerate(rows):
        left = [value if value > 0 else 0 for value in devices]
        large, small = _tally(w.needs, left)
        out.append(_expected_one(w, large, small, sum(left), cpus[r], accesses[r]))
    return np.array(out, dtype=np.float64)


def _after_share_few(
    w: _Columns, remaining: np.ndarray, cpu_free: np.ndarray, access: np.ndarray, share: int
) -> np.ndarray:
    cpus: list[int] = cpu_free.tolist()
    accesses: list[list[bool]] = access.tolist()
    rows: list[list[int]] = remaining.tolist()
    out: list[list[float]] = []
    for r, devices in enumerate(rows):
        left = [value if value > 0 else 0 for value in devices]
        large, small = _tally(w.needs, left)
        idle = sum(left) - share
        row: list[float] = []
        done: dict[int, float] = {}
        for value in devices:
            if value < share:
                row.append(math.inf)
                continue
            if value not in done:
                after = value - share
                large2 = list(large)
                small2 = list(small)
                for k, need in enumerate(w.needs):
                    if value >= need:
                        large2[k] -= 1
                    else:
                        small2[k] -= value
                    if after >= need:
                        large2[k] += 1
                    else:
                        small2[k] += after
                done[value] = _expected_one(w, large2, small2, idle, cpus[r], accesses[r])
            row.append(done[value])
        out.append(row)
    return np.array(out, dtype=np.float64).reshape(remaining.shape)


class FragmentationTracker:
    """Every node's fragmentation as the cluster stands, kept across calls and recomputed only
    on the rows the state's change log says were touched (or all of them when nodes changed
    or the log was trimmed)."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self._values = np.zeros(0)
        self._key = (-1, -1)
        self._position = 0

    def rows(self, state: ClusterState, idx: np.ndarray | slice) -> np.ndarray:
        key = (state.structure_epoch, state.n)
        changed = state.changed_rows(self._position) if key == self._key else None
        if changed is None:
            changed = np.arange(state.n)
            self._values = np.zeros(state.n)
        if len(changed) and len(self.workload):
            cpu_free = state.free[changed, state.axis.index(CPU)]
            access = self.workload.access(state)[changed]
            remaining = state.gpus.remaining[changed]
            self._values[changed] = node_fragmentation(self.workload, remaining, cpu_free, access)
        self._key = key
        self._position = state.log_position
        return self._values[idx]

    def total(self, state: ClusterState) -> float:
        """Fragmented milli-GPU over the schedulable nodes."""
        values = self.rows(state, slice(0, state.n))
        return float(values[state.schedulable[: state.n]].sum())
