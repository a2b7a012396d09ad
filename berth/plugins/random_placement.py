"""random: any feasible node, uniformly at random (the FGD paper's lower baseline). Fresh
random scores for every pod, so the plugin is not cached per node; drawn from the cluster
state's seeded generator, so the same seed gives the same placements."""

from __future__ import annotations

import numpy as np

from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, Rows, row_count
from berth.framework.podclass import PodClass


class RandomPlacement(Plugin):
    name = "random"

    def relevant(self, cls: PodClass, point: str) -> bool:
        return point == "score"

    def is_local(self, cls: PodClass) -> bool:
        return False

    def score(self, cls: PodClass, state: ClusterState, rows: Rows) -> np.ndarray:
        return 100.0 * state.rng.random(row_count(state, rows))
