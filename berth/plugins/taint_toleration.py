"""taint-toleration: NoSchedule and NoExecute taints the pod does not tolerate rule a node out;
untolerated PreferNoSchedule taints lower its score."""

from __future__ import annotations

import numpy as np

from berth.api.objects import Pod
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


def taint_masks(pod: Pod, state: ClusterState) -> tuple[np.ndarray, np.ndarray]:
    """(nodes with a NoSchedule or NoExecute taint the pod does not tolerate, how many
    PreferNoSchedule taints it does not tolerate per node)."""
    n = state.n
    blocked = np.zeros(n, dtype=bool)
    disliked = np.zeros(n)
    for taint, mask in state.taints.items():
        if any(t.tolerates(taint) for t in pod.tolerations):
            continue
        if taint.effect == "PreferNoSchedule":
            disliked += mask[:n]
        else:
            blocked |= mask[:n]
    return blocked, disliked


class TaintToleration(Plugin):
    name = "taint-toleration"
    reason = "untolerated taint"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return (self.name if point == "filter" else self.name + ":score") in cls.static

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        blocked, disliked = taint_masks(cls.pod, state)
        if blocked.any():
            cls.static[self.name] = ~blocked
        if disliked.any():
            cls.static[self.name + ":score"] = 100.0 / (1.0 + disliked)

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name][rows]

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name + ":score"][rows]
