"""HyperNodes resolved over the node rows: for each tier, which HyperNode of that tier holds
each node (-1 for none), so that "the nodes under switch s" is one comparison over an integer
array and per-switch sums are one ``np.add.at``.

Resolved once per change of the cluster's structure (nodes added, relabelled, cordoned) and
only when HyperNodes exist: a cluster without them pays nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import numpy as np

from berth.cluster.labels import LabelIndex

if TYPE_CHECKING:
    from berth.api.hypernodes import HyperNode, HyperNodeMember


class NodeRows(Protocol):
    """What resolving needs of the cluster (``ClusterState`` has it): the node rows, their
    names and their label index."""

    n: int
    names: list[str]
    rows: dict[str, int]
    labels: LabelIndex


@dataclass(slots=True)
class Topology:
    #: The distinct tiers, lowest first; a tier's *level* is its index here.
    tiers: list[int]
    #: HyperNode id -> name, tier, level and parent id (-1: a top switch).
    names: list[str]
    tier: np.ndarray
    level: np.ndarray
    parent: np.ndarray
    #: (levels, n): the id of the HyperNode of each level holding each node row, -1 if none.
    member: np.ndarray
    #: Nodes claimed by two HyperNodes of one tier, each kept in the first by name.
    overlaps: list[str] = field(default_factory=list)

    def level_of(self, tier: int) -> int:
        """The highest level whose tier is ``tier`` or lower (-1: below every tier)."""
        return int(np.searchsorted(np.asarray(self.tiers), tier, side="right")) - 1

    def sums(self, level: int, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Per HyperNode id, ``values`` (one row per node row) summed over ``rows`` that a
        HyperNode of ``level`` holds; the other ids get zero."""
        ids = self.member[level, rows]
        held = ids >= 0
        out = np.zeros((len(self.names), *values.shape[1:]), dtype=values.dtype)
        np.add.at(out, ids[held], values[rows[held]])
        return out

    def lca_level(self, rows: np.ndarray) -> int:
        """The lowest level at which one HyperNode holds all of ``rows`` (len(tiers): none)."""
        for level in range(len(self.tiers)):
            ids = self.member[level, rows]
            if ids[0] >= 0 and (ids == ids[0]).all():
                return level
        return len(self.tiers)


def _node_rows(member: HyperNodeMember, state: NodeRows) -> np.ndarray:
    n = state.n
    if member.labels is not None:
        mask = np.ones(n, dtype=bool)
        for req in member.labels.requirements:
            mask &= state.labels.match(req, n)
        return np.flatnonzero(mask)
    if member.exact is not None:
        row = state.rows.get(member.exact)
        return np.array([] if row is None else [row], dtype=np.int64)
    return np.array([state.rows[name] for name in member.names(state.names)], dtype=np.int64)


def resolve(hypernodes: list[HyperNode], state: NodeRows) -> Topology:
    """Each node row's HyperNode per tier. A node belongs to the HyperNodes that select it and
    to their ancestors; one claimed twice within a tier stays with the first by name."""
    ordered = sorted(hypernodes, key=lambda h: (h.tier, h.name))
    names = [h.name for h in ordered]
    ids = {name: i for i, name in enumerate(names)}
    tiers = sorted({h.tier for h in ordered})
    tier = np.array([h.tier for h in ordered], dtype=np.int64)
    level = np.searchsorted(np.asarray(tiers), tier).astype(np.int64)
    parent = np.full(len(ordered), -1, dtype=np.int64)
    for i, hypernode in enumerate(ordered):
        for member in hypernode.members:
            if member.kind != "HyperNode":
                continue
            for name in member.names(names):
                child = ids[name]
                if tier[child] < hypernode.tier and parent[child] < 0:
                    parent[child] = i
    n = state.n
    member = np.full((len(tiers), n), -1, dtype=np.int64)
    overlaps: list[str] = []
    for i, hypernode in enumerate(ordered):
        rows = [_node_rows(m, state) for m in hypernode.members if m.kind == "Node"]
        if not rows:
            continue
        held = np.unique(np.concatenate(rows))
        ancestor = i
        while ancestor >= 0:
            column = member[level[ancestor]]
            taken = column[held]
            clash = held[(taken >= 0) & (taken != ancestor)]
            if len(clash):
                other = names[int(column[clash[0]])]
                overlaps.append(
                    f"node {state.names[int(clash[0])]} is in HyperNodes {other} and "
                    f"{names[ancestor]} of tier {int(tier[ancestor])}: kept in {other}"
                    + (f" ({len(clash) - 1} more)" if len(clash) > 1 else "")
                )
            column[held[taken < 0]] = ancestor
            ancestor = int(parent[ancestor])
    return Topology(tiers, names, tier, level, parent, member, overlaps)
