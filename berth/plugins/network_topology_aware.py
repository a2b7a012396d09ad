"""network-topology-aware: Volcano's plugin of that name, for jobs with a ``networkTopology``.

It ranks the HyperNodes a gang may be placed within by how full they would be with it
(bin-packing switches, so that whole switches stay free for the next large gang), and the
nodes for each further pod of such a job by how close they sit to the pods already placed:
1 in the very HyperNode holding them, otherwise by the tier of the lowest switch they share
(lower tiers score higher, on a scale from the lowest tier to one above the highest, the
cluster as a whole), 0 when they share none. Among nodes or HyperNodes tied on that,
the one already holding more of the job's pods goes first. Scores are scaled to 0..100 and
by ``weight``.

Arguments: ``weight`` (default 1; negative means the default), ``hypernode.binpack.cpu`` and
``hypernode.binpack.memory`` (default 1), ``hypernode.binpack.resources`` (a comma-separated
list of other resources to count) with ``hypernode.binpack.resources.<name>`` (default 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from berth.framework.plugin import Plugin, PluginArgumentError
from berth.resources import CPU, MEMORY

if TYPE_CHECKING:
    from berth.cluster.hypernodes import Topology
    from berth.cluster.state import ClusterState
    from berth.framework.job_info import JobInfo

_PREFIX = "hypernode.binpack."
MAX_SCORE = 100.0


class NetworkTopologyAware(Plugin):
    name = "network-topology-aware"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        if self.weight < 0:
            self.weight = self.default_weight
        self.binpack = {
            CPU: self._weight(f"{_PREFIX}cpu"),
            MEMORY: self._weight(f"{_PREFIX}memory"),
        }
        listed = self.arguments.get(f"{_PREFIX}resources", "")
        if not isinstance(listed, str):
            raise PluginArgumentError(
                f"plugin {self.name}: argument {_PREFIX}resources: {listed!r} is not a "
                "comma-separated list of resource names"
            )
        for name in filter(None, (part.strip() for part in listed.split(","))):
            self.binpack[name] = self._weight(f"{_PREFIX}resources.{name}")

    def _weight(self, key: str) -> float:
        value = self.float_arg(key, 1.0)
        return 1.0 if value < 0 else value

    def hypernode_order(
        self, job: JobInfo, topology: Topology, ids: np.ndarray, state: ClusterState
    ) -> np.ndarray:
        """How full each HyperNode would be with the gang in it: the weighted mean over the
        counted resources of (requested + the job's pending requests) / allocatable; 0 for
        one it would overfill."""
        n = state.n
        rows = np.arange(n)
        level = int(topology.level[ids[0]])
        allocatable = topology.sums(level, state.allocatable[:n], rows)[ids].astype(np.float64)
        used = topology.sums(level, state.requested[:n], rows)[ids].astype(np.float64)
        asking = job.asking
        total = np.zeros(len(ids))
        weights = 0.0
        overfull = np.zeros(len(ids), dtype=bool)
        for name, weight in self.binpack.items():
            column = state.axis.find(name)
            if column is None or column >= len(asking) or not asking[column] or not weight:
                continue
            after = used[:, column] + asking[column]
            capacity = allocatable[:, column]
            overfull |= after > capacity
            with np.errstate(divide="ignore", invalid="ignore"):
                total += weight * np.where(capacity > 0, after / np.maximum(capacity, 1), 0.0)
            weights += weight
        if not weights:
            return np.zeros(len(ids))
        return np.where(overfull, 0.0, total / weights) * MAX_SCORE * self.weight

    def topology_score(
        self, job: JobInfo, topology: Topology, placed: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        if not len(placed):
            return np.zeros(len(rows))
        member = topology.member
        levels = len(topology.tiers)
        home = topology.lca_level(placed)
        if home == levels:  # the placed pods share no switch: nothing to be near
            return np.zeros(len(rows))
        anchor = int(placed[0])
        # A node's own HyperNode is the lowest one holding it.
        held = member[:, rows] >= 0
        leaf = np.where(held.any(axis=0), held.argmax(axis=0), levels)
        score = np.zeros(len(rows))
        shared = np.full(len(rows), levels)
        for level in range(levels - 1, home - 1, -1):
            mine = member[level, anchor]
            if mine >= 0:
                shared[member[level, rows] == mine] = level
        # Tiers run from the lowest to one above the highest: the whole cluster, which every
        # pair of nodes shares (scoring 0).
        tiers = np.asarray(topology.tiers, dtype=np.float64)
        low, high = tiers[0], tiers[-1] + 1
        ok = shared < levels
        score[ok] = (high - tiers[shared[ok]]) / (high - low)
        score[(leaf == home) & (shared == home)] = 1.0
        # Ties at the best score go to the nodes whose HyperNode holds more of the job's pods.
        best = score == score.max()
        if best.sum() > 1:
            counts = self._pods_in_leaf(topology, leaf[best], rows[best], placed)
            score[best] += counts / max(len(job.bound) + job.allocated + len(job.pending), 1)
        return score * MAX_SCORE * self.weight

    @staticmethod
    def _pods_in_leaf(
        topology: Topology, leaf: np.ndarray, rows: np.ndarray, placed: np.ndarray
    ) -> np.ndarray:
        """For each node row, how many of the ``placed`` pods sit in its own HyperNode."""
        counts = np.zeros(len(rows))
        member = topology.member
        for level in np.unique(leaf):
            if level >= len(topology.tiers):
                continue
            ids, hits = np.unique(member[level, placed], return_counts=True)
            mine = leaf == level
            position = np.searchsorted(ids, member[level, rows[mine]])
            position = np.minimum(position, len(ids) - 1)
            found = ids[position] == member[level, rows[mine]]
            counts[mine] = np.where(found, hits[position], 0)
        return counts
