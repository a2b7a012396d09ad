"""``v1 Node`` and berth's ``NodePool``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, StrictStr

from berth.api.schema.base import Effect, Model, Name, NonEmpty, ResourceList
from berth.api.schema.meta import ObjectMeta, TemplateMeta


class Taint(Model):
    key: NonEmpty
    value: StrictStr = ""
    effect: Effect
    ignored = frozenset({"timeAdded"})


class NodeSpec(Model):
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: StrictBool = False
    ignored = frozenset({"podCIDR", "podCIDRs", "providerID", "externalID", "configSource"})


class NodeStatus(Model):
    allocatable: ResourceList = Field(default_factory=dict)
    capacity: ResourceList = Field(default_factory=dict)
    ignored = frozenset(
        {
            "addresses",
            "conditions",
            "config",
            "daemonEndpoints",
            "features",
            "images",
            "nodeInfo",
            "phase",
            "runtimeHandlers",
            "volumesAttached",
            "volumesInUse",
        }
    )


class NodeDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class NodeTemplate(Model):
    metadata: TemplateMeta = Field(default_factory=TemplateMeta)
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class PoolTier(Model):
    name: Name
    size: Annotated[StrictInt, Field(ge=1)]


class PoolTopology(Model):
    tiers: list[PoolTier] = Field(min_length=1)
    hyper_nodes: StrictBool = True


#: The most nodes one NodePool makes: a count beyond this is a typo, and building the nodes
#: would take minutes before any check could say so (berth bench stops at the same size).
MAX_POOL_NODES = 1_000_000


class NodePoolSpec(Model):
    count: Annotated[StrictInt, Field(ge=1, le=MAX_POOL_NODES)]
    template: NodeTemplate
    zones: list[NonEmpty] = Field(default_factory=list)
    topology: PoolTopology | None = None


class NodePoolDoc(Model):
    api_version: StrictStr
    kind: StrictStr
    metadata: ObjectMeta
    spec: NodePoolSpec
