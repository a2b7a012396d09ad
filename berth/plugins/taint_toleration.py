"""taint-toleration: NoSchedule and NoExecute taints the pod does not tolerate rule a node out;
untolerated PreferNoSchedule taints lower its score.

The score is 100 / (1 + untolerated) by default, so a node's score does not depend on the
others and stays cached per node. With ``normalize`` (what a KubeSchedulerConfiguration gets)
it is kube-scheduler's: 100 − 100 × untolerated / the most untolerated among the feasible
nodes, in whole points, computed afresh over the nodes being compared."""

from __future__ import annotations

from typing import Any

import numpy as np

from berth.api.objects import Pod
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass
from berth.plugins.normalize import default_normalize


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
    filters_in_one_pass = True  # a mask kept with the class

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.normalize = self.bool_arg("normalize", False)

    def is_local(self, cls: PodClass) -> bool:
        return not self.normalize

    def relevant(self, cls: PodClass, point: str) -> bool:
        return (self.name if point == "filter" else self.name + ":score") in cls.static

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        blocked, disliked = taint_masks(cls.pod, state)
        if blocked.any():
            cls.static[self.name] = ~blocked
        if disliked.any():
            score = disliked if self.normalize else 100.0 / (1.0 + disliked)
            cls.static[self.name + ":score"] = score

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name][rows]

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        raw = cls.static[self.name + ":score"][rows]
        return default_normalize(raw, reverse=True) if self.normalize else raw
