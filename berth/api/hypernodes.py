"""Volcano's HyperNode: a network switch and the nodes or lower switches under it.

HyperNodes form trees by tier (1 is the switch nearest the nodes). A member is named exactly,
by a regular expression over names, or (nodes only) by a label selector. The checks here need
only the HyperNodes themselves; which nodes each one holds is resolved against the cluster
(``berth.cluster.hypernodes``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from berth.api import schema
from berth.api.fields import label_selector
from berth.api.loaded import Context, Manifests
from berth.api.objects import NetworkTopology
from berth.api.problems import Problem
from berth.api.selectors import LabelSelector, Requirement


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    """One member selector: ``kind`` is "Node" or "HyperNode"; exactly one of ``exact``,
    ``regex`` and ``labels`` is set (``labels`` for nodes only)."""

    kind: str
    exact: str | None = None
    regex: re.Pattern[str] | None = None
    labels: LabelSelector | None = None

    def names(self, candidates: list[str]) -> list[str]:
        """The ``candidates`` this member selects by name (exact or regex)."""
        if self.exact is not None:
            return [self.exact] if self.exact in candidates else []
        if self.regex is not None:
            search = self.regex.search  # unanchored, as Go's MatchString
            return [name for name in candidates if search(name)]
        return []


@dataclass(slots=True)
class HyperNode:
    name: str
    tier: int
    members: tuple[HyperNodeMember, ...]
    tier_name: str = ""


def network_topology(spec: schema.NetworkTopologySpec | None) -> NetworkTopology | None:
    if spec is None:
        return None
    return NetworkTopology(hard=spec.mode == "hard", highest_tier=spec.highest_tier_allowed)


def convert_hyper_node(doc: schema.HyperNodeDoc, ctx: Context) -> None:
    members = []
    for index, item in enumerate(doc.spec.members):
        path = f"spec.members[{index}].selector"
        selector = item.selector
        if selector.label_match is not None:
            if item.type == "HyperNode":
                ctx.error(
                    f"{path}.labelMatch",
                    "selects nodes only (name HyperNode members by exactMatch or regexMatch)",
                )
                continue
            labels = label_selector(selector.label_match, f"{path}.labelMatch", ctx)
            if not labels.requirements:
                ctx.error(
                    f"{path}.labelMatch",
                    "empty selector (expected matchLabels or matchExpressions)",
                )
                continue
            members.append(HyperNodeMember(item.type, labels=labels))
        elif selector.regex_match is not None:
            members.append(
                HyperNodeMember(item.type, regex=re.compile(selector.regex_match.pattern))
            )
        elif selector.exact_match is not None:
            members.append(HyperNodeMember(item.type, exact=selector.exact_match.name))
    hypernode = HyperNode(doc.metadata.name, doc.spec.tier, tuple(members), doc.spec.tier_name)
    ctx.out.add(ctx.out.hypernodes, hypernode, ctx.origin())


def check_hypernodes(m: Manifests) -> None:
    """The HyperNodes form trees: every HyperNode member exists, sits in a lower tier than its
    parent (so there is no cycle) and has one parent only."""
    by_name = {h.name: h for h in m.hypernodes}
    names = sorted(by_name)
    parent: dict[str, str] = {}
    for hypernode in m.hypernodes:
        for index, member in enumerate(hypernode.members):
            if member.kind != "HyperNode":
                continue
            path = f"spec.members[{index}].selector"
            chosen = member.names(names)
            if member.exact is not None and not chosen:
                _report(
                    m,
                    hypernode,
                    f"{path}.exactMatch.name",
                    f"no HyperNode named {schema.show(member.exact)}",
                )
            for name in chosen:
                child = by_name[name]
                if name == hypernode.name:
                    _report(m, hypernode, path, "a HyperNode cannot be its own member")
                elif child.tier >= hypernode.tier:
                    _report(
                        m,
                        hypernode,
                        path,
                        f"member HyperNode {name} is in tier {child.tier}, not below this "
                        f"HyperNode's tier {hypernode.tier} (a member sits in a lower tier)",
                    )
                elif parent.setdefault(name, hypernode.name) != hypernode.name:
                    _report(
                        m,
                        hypernode,
                        path,
                        f"HyperNode {name} is already a member of {parent[name]} (a "
                        "HyperNode has one parent)",
                    )


def _report(m: Manifests, hypernode: HyperNode, path: str, message: str) -> None:
    origin = m.origin(hypernode).file
    m.problems.append(Problem(origin, "HyperNode", hypernode.name, path, message, "error"))


#: Label key prefix of the switch labels NodePool ``topology`` gives its nodes.
TOPOLOGY_LABEL_PREFIX = "topology.berth.io/"


@dataclass(frozen=True, slots=True)
class PoolTier:
    """One tier of a NodePool's generated topology: ``size`` members (nodes for the first tier,
    switches of the tier below for the others) under each switch named ``name``."""

    name: str
    size: int


def _switch_counts(count: int, tiers: tuple[PoolTier, ...]) -> list[int]:
    counts = []
    below = count
    for tier in tiers:
        below = -(-below // tier.size)
        counts.append(below)
    return counts


def _switch_name(pool: str, tier: PoolTier, index: int, total: int) -> str:
    return f"{pool}-{tier.name}-{index:0{len(str(total - 1))}d}"


def pool_switch_labels(pool: str, count: int, tiers: tuple[PoolTier, ...]) -> list[dict[str, str]]:
    """For each of a pool's ``count`` nodes, in order, the labels naming its switch in each
    tier: ``topology.berth.io/<tier>: <pool>-<tier>-<index>``, consecutive nodes sharing one."""
    totals = _switch_counts(count, tiers)
    labels = []
    for node in range(count):
        index = node
        own = {}
        for tier, total in zip(tiers, totals, strict=True):
            index //= tier.size
            own[TOPOLOGY_LABEL_PREFIX + tier.name] = _switch_name(pool, tier, index, total)
        labels.append(own)
    return labels


def pool_hypernodes(pool: str, count: int, tiers: tuple[PoolTier, ...]) -> list[HyperNode]:
    """The HyperNodes of a pool's generated topology: tier 1 selects nodes by their switch
    label, each higher tier names the switches of the tier below it."""
    totals = _switch_counts(count, tiers)
    out = []
    for level, (tier, total) in enumerate(zip(tiers, totals, strict=True)):
        key = TOPOLOGY_LABEL_PREFIX + tier.name
        for index in range(total):
            name = _switch_name(pool, tier, index, total)
            if level == 0:
                labels = LabelSelector((Requirement(key, "In", (name,)),))
                members: tuple[HyperNodeMember, ...] = (HyperNodeMember("Node", labels=labels),)
            else:
                below, below_total = tiers[level - 1], totals[level - 1]
                children = range(index * tier.size, min((index + 1) * tier.size, below_total))
                members = tuple(
                    HyperNodeMember("HyperNode", exact=_switch_name(pool, below, c, below_total))
                    for c in children
                )
            out.append(HyperNode(name, level + 1, members, tier.name))
    return out
