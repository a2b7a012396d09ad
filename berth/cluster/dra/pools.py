"""The resource pools one node can use, gathered from ResourceSlices as Kubernetes' structured
allocator gathers them.

A slice reaches a node by ``nodeName``, ``allNodes``, a node selector, or (with
``perDeviceNodeSelection``) through any of its devices. Slices are grouped by (driver, pool);
within a pool only the newest generation counts. A pool whose slices are not all present yet
(fewer than ``resourceSliceCount`` of its generation in the whole input) is incomplete: nothing
is allocated from it. Two slices of one pool publishing the same device name make it invalid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from berth.api.dra import Device, ResourceSlice


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: str = ""  # why the pool is invalid; empty when it is not
    #: The pool's slices that reach the node, by name; their devices in order.
    slices: list[ResourceSlice] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.driver}/{self.name}"

    def devices(self, node: str, labels: dict[str, str]) -> Iterable[tuple[ResourceSlice, Device]]:
        """The devices the node may use, slice by slice."""
        for item in self.slices:
            for device in item.devices:
                if item.per_device_node_selection and not (
                    device.selection and device.selection.matches(node, labels)
                ):
                    continue
                yield item, device


def reaches(item: ResourceSlice, node: str, labels: dict[str, str]) -> bool:
    """Whether the slice publishes devices for ``node``."""
    if item.per_device_node_selection:
        return any(d.selection and d.selection.matches(node, labels) for d in item.devices)
    return item.selection.matches(node, labels)


class SliceIndex:
    """Every slice of the input, indexed by node: the slices a node's search looks at are its
    own (``nodeName``) and those that do not name one node, not the whole cluster's; a pool's
    slices are kept together for its completeness."""

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.slices = list(slices)
        self.by_node: dict[str, list[ResourceSlice]] = {}
        self.unnamed: list[ResourceSlice] = []
        self.by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        for item in self.slices:
            name = item.selection.node_name if not item.per_device_node_selection else ""
            if name:
                self.by_node.setdefault(name, []).append(item)
            else:
                self.unnamed.append(item)
            self.by_pool.setdefault((item.driver, item.pool), []).append(item)

    def near(self, node: str) -> list[ResourceSlice]:
        """The slices that may reach ``node`` (the order does not matter: a pool's slices are
        sorted by name)."""
        own = self.by_node.get(node)
        if not own:
            return self.unnamed
        return own + self.unnamed if self.unnamed else own


def gather_pools(
    node: str, labels: dict[str, str], slices: Sequence[ResourceSlice] | SliceIndex
) -> list[Pool]:
    """The pools with devices for ``node``, sorted by driver and pool name. ``slices`` is every
    slice of the input (those of other nodes included: a pool's completeness is counted over
    all of them), or a SliceIndex of them."""
    index = slices if isinstance(slices, SliceIndex) else None
    near = index.near(node) if index is not None else slices
    every = index.slices if index is not None else slices
    by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
    for item in near:
        if item.shared_counters:
            continue  # partitionable devices' counter sets: not modelled
        if not reaches(item, node, labels):
            continue
        key = (item.driver, item.pool)
        current = by_pool.get(key)
        if current is None or item.generation > current[0].generation:
            by_pool[key] = [item]
        elif item.generation == current[0].generation:
            current.append(item)
    pools = []
    for (driver, name), found in by_pool.items():
        generation, count = found[0].generation, found[0].slice_count
        pool = Pool(driver, name)
        if len(found) != count:
            if index is not None:
                same = index.by_pool.get((driver, name), [])
            else:
                same = [s for s in every if s.driver == driver and s.pool == name]
            if any(s.generation > generation for s in same):
                continue  # obsolete: a newer generation is being published
            if sum(1 for s in same if s.generation == generation) != count:
                pool.incomplete = True
                pools.append(pool)
                continue
        pool.slices = sorted(found, key=lambda s: s.name)
        seen: set[str] = set()
        for item in pool.slices:
            for device in item.devices:
                if device.name in seen:
                    pool.invalid = f"duplicate device name {device.name}"
                seen.add(device.name)
        pools.append(pool)
    pools.sort(key=lambda p: (p.driver, p.name))
    return pools
