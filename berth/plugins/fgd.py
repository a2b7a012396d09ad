"""fgd: fragmentation gradient descent (Weng et al., "Beware of Fragmentation", USENIX ATC'23).

Each pod goes to the node, and the device, whose choice grows the expected GPU fragmentation of
the target workload least (``berth.cluster.fragmentation``). The target workload is the one the
scheduler is told ahead (``on_workload``: a trace, a fill run); without it, fgd learns the shapes
of the pods it sees waiting, and refreshes what it learnt each time their number has grown by a
tenth (a refresh re-scores every node, so it is not done for every pod).

The score is ⌊100·sigmoid(−Δ/1000)⌋, Δ the fragmentation growth in milli-GPU, as in the
paper's simulator; nodes with equal scores are ordered by berth's fixed per-node tie-break where
kube-scheduler picks one at random.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from berth.api.objects import Pod
from berth.cluster.fragmentation import (
    DEFAULT_COVERAGE,
    FragmentationTracker,
    Workload,
    fragmentation_after_share,
    node_fragmentation,
    target_workload,
)
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError, Rows, row_index
from berth.framework.podclass import PodClass
from berth.plugins.gpu_placement import cpu_column, pod_cpu, share_devices, with_share

if TYPE_CHECKING:
    from berth.framework.session import Session

#: Learnt shapes are refreshed once the pods seen have grown by this fraction.
_RELEARN_GROWTH = 0.1


class Fgd(Plugin):
    name = "fgd"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.coverage = self.float_arg("coverage", DEFAULT_COVERAGE)
        if not 0 < self.coverage <= 1:
            raise PluginArgumentError(
                f"plugin {self.name}: argument coverage: expected 0 < coverage <= 1"
            )
        self.workload = Workload((), np.zeros(0, dtype=np.int64))
        self._told = False
        self._seen: dict[str, Pod] = {}
        self._learnt_from = 0
        # Fragmentation of every node as it stands: the same for every pod, so kept across
        # classes and refreshed on the rows the state's change log names.
        self.tracker = FragmentationTracker(self.workload)

    # ------------------------------------------------------------------ workload

    def on_workload(self, pods: list[Pod]) -> None:
        self.workload = target_workload(pods, self.coverage)
        self._told = True
        self.tracker = FragmentationTracker(self.workload)

    def on_session_open(self, session: Session) -> None:
        if self._told:
            return
        for job in session.jobs.values():
            for pod in job.pending:
                self._seen.setdefault(pod.key, pod)
        if len(self._seen) > self._learnt_from * (1 + _RELEARN_GROWTH):
            self.workload = target_workload(self._seen.values(), self.coverage)
            self._learnt_from = len(self._seen)
            self.tracker = FragmentationTracker(self.workload)
            session.state.structure_epoch += 1  # cached scores were against the old shapes

    # ------------------------------------------------------------------ scoring

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score"

    def growth(self, cls: PodClass, state: ClusterState, idx: np.ndarray) -> np.ndarray:
        """(rows, choices): fragmentation growth for each way of placing the pod on each row
        (one choice per device for a share, a single choice otherwise); +inf where the device
        cannot take the share."""
        workload = self.workload
        col = cpu_column(state)
        cpu_free = state.free[idx, col]
        access = workload.access(state)[idx]
        before = self.tracker.rows(state, idx)
        cpu_after = cpu_free - pod_cpu(cls, state)
        ask = cls.gpu
        if ask is None:
            after = node_fragmentation(workload, state.gpus.remaining[idx], cpu_after, access)
            return (after - before)[:, None]
        remaining, candidates = share_devices(cls, state, idx)
        if not ask.share:
            after = node_fragmentation(workload, remaining, cpu_after, access)
            return (after - before)[:, None]
        after = fragmentation_after_share(workload, remaining, cpu_after, access, ask.share)
        return np.where(candidates, after - before[:, None], np.inf)

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        idx = row_index(state, rows)
        if not len(self.workload):
            return np.zeros(len(idx))
        growth = self.growth(cls, state, idx)
        best = growth.min(axis=1)
        ask = cls.gpu
        if ask is not None and ask.share:
            # The device each row would give the share, for ``pick_devices`` right after.
            devices = cls.static.get(self.name)
            if devices is None or len(devices) != state.n:
                devices = cls.static[self.name] = np.zeros(state.n, dtype=np.intp)
            devices[idx] = growth.argmin(axis=1)
        # Integer scores, as the paper's simulator gives them: growths within ~40 milli-GPU of
        # each other tie, and the node order decides (this fills more than ordering by the
        # exact growth does: 95.4% against 94.5% on openb default).
        return np.floor(100.0 / (1.0 + np.exp(np.clip(best / 1000.0, -50, 50))))

    def pick_devices(self, cls: PodClass, state: ClusterState, row: int) -> np.ndarray | None:
        ask = cls.gpu
        if ask is None or not ask.share or not len(self.workload):
            return None
        devices = cls.static.get(self.name)
        if devices is not None and cls.evaluated_now(state) and len(devices) == state.n:
            # The class's scores stand for every row as the cluster is: the device that
            # scored the row is the one to take.
            return with_share(cls, state, row, int(devices[row]))
        growth = self.growth(cls, state, np.array([row]))[0]
        return with_share(cls, state, row, int(np.argmin(growth)))
