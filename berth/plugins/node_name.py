"""node-name: a pod that names its node (``spec.nodeName``) may go only there.

node-affinity checks ``spec.nodeName`` with the rest of a pod's node constraints; the framework
adds this filter when node-affinity's filter is not configured (or switched off), so that a
named node is honoured whatever the configuration, as Kubernetes honours it.
"""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows
from berth.framework.podclass import PodClass


class NodeName(Plugin):
    name = "node-name"
    reason = "not the node the pod names"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "filter" and self.name in cls.static

    def prepare(self, cls: PodClass, state: ClusterState) -> None:
        named = cls.pod.node_name
        if named:
            mask = np.zeros(state.n, dtype=bool)
            row = state.rows.get(named)
            if row is not None:
                mask[row] = True
            cls.static[self.name] = mask

    def filter(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return cls.static[self.name][rows]
