"""gandiva: packing, time-slicing and migration (Gandiva, OSDI'18) as the ElasticFlow
artifact's ``gandiva`` schedule runs it (``gandiva_sim_jobs`` with ``--scheme=gandiva``:
``cluster.gandiva_placement``, ``gandiva_node_set_adjust``, ``time_slicing_execute``).

Whole nodes are grouped into *node sets*, each serving jobs of one GPU count g: ⌈g / G⌉ nodes
of G GPUs, with room (``capacity``) for ⌊G·nodes / g⌋ such jobs side by side. Each node set
counts a ``util`` (every job adds its memory use, 1 for every model the artifact knows). A job:

1. joins the least-used node set of its size while ``util`` + its use stays under capacity
   (packing);
2. else takes free nodes for a new node set;
3. else joins the least-used node set of its size anyway (time-slicing: the set's jobs take
   turns, ``capacity`` of them at a time);
4. else waits (no free node, no node set of its size).

Before each placement round the cluster's GPUs are re-divided between sizes in proportion to
their demand (jobs × g): a size holding more than its share gives up node sets, their jobs
moving to the size's least-used set; a size below its share takes free nodes for new sets, and
the size's jobs are dealt out again over all its sets (migrations). Where the artifact's code
does something its comments do not say, this module does what the code does (see
docs/policies.md, Gandiva): ``util`` is not lowered when a job ends; packing needs a strict
``<``; an expansion of one-node sets that could place its last set redistributes nothing.

The simulator runs a set's jobs in turns (``berth.sim.timeslice``): as many as fit (their
uses adding up to at most capacity) at full speed, the others not at all; at a session whose
time is a multiple of ``rotation`` (60 s) the running ones go to the back, as the artifact
rotates at an event falling on a multiple of 60 s (rare: its events are arrivals, so a set's
jobs mostly run first come, first served). ``slicing: fluid`` runs every job of a set of n
at min(1, running / n) of its speed instead: the round robin of the Gandiva paper, made
fluid.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from berth.cluster.devices import MILLI, Placement
from berth.cluster.state import ClusterState
from berth.framework.plugin import Plugin, PluginArgumentError
from berth.framework.podclass import PodClass

#: The artifact's job memory use (``models.m_mem``: 1 for every model).
DEFAULT_MEM_UTIL = 1.0
#: The round robin's period: the artifact rotates a set's jobs at an event whose time is a
#: multiple of 60 s (``time_slicing_execute``: ``cur_time % 60 == 0``).
DEFAULT_ROTATION = 60.0
#: The artifact's scheduling slot: once no arrival is due, its loop (re-division included)
#: runs every 60 s (``--scheduling_slot=60``).
DEFAULT_SLOT = 60.0


@dataclass(slots=True, eq=False)
class NodeSet:
    """Nodes (rows) serving jobs of ``gpus`` GPUs, and the jobs they serve, in turn order."""

    gpus: int
    rows: list[int]
    capacity: int
    jobs: list[str] = field(default_factory=list)
    util: float = 0.0


def _by_util(sets: list[NodeSet]) -> None:
    sets.sort(key=lambda s: s.util)


class NodeSets:
    """The artifact's node sets over a cluster of ``per_node``-GPU nodes (``free``: the rows
    of free nodes, in the order the artifact takes them: first freed, last taken)."""

    def __init__(self, free: list[int], per_node: int, mem_util: float = DEFAULT_MEM_UTIL):
        self.per_node = per_node
        self.total_gpus = per_node * len(free)
        self.mem_util = mem_util
        self.free = list(free)
        self.sizes: dict[int, list[NodeSet]] = {}
        self.of: dict[str, NodeSet] = {}  # job key → its node set
        self.migrations = 0

    def nodes_for(self, gpus: int) -> int:
        return math.ceil(gpus / self.per_node)

    def _new(self, gpus: int) -> NodeSet:
        nodes = self.nodes_for(gpus)
        rows, self.free = self.free[:nodes], self.free[nodes:]
        return NodeSet(gpus, rows, int(nodes * self.per_node / gpus))

    def _join(self, node_set: NodeSet, key: str) -> None:
        node_set.util = round(node_set.util + round(self.mem_util, 2), 2)
        node_set.jobs.append(key)
        previous = self.of.get(key)
        if previous is not None and previous is not node_set:
            self.migrations += 1
        self.of[key] = node_set

    # -- placement (gandiva_placement) ------------------------------------------------------

    def place(self, key: str, gpus: int) -> NodeSet | None:
        """The node set job ``key`` of ``gpus`` GPUs joins (None: it waits)."""
        sets = self.sizes.setdefault(gpus, [])
        if sets:
            node_set = sets.pop(0)
            sets.append(node_set)
            if round(node_set.util + round(self.mem_util, 2), 2) < node_set.capacity:
                self._join(node_set, key)
                _by_util(sets)
                return node_set
        if self.nodes_for(gpus) <= len(self.free):
            node_set = self._new(gpus)
            self._join(node_set, key)
            sets.append(node_set)
            _by_util(sets)
            return node_set
        if sets:
            node_set = sets.pop(0)
            self._join(node_set, key)
            sets.append(node_set)
            _by_util(sets)
            return node_set
        return None

    # -- ends (time_slicing_execute) --------------------------------------------------------

    def leave(self, key: str) -> None:
        """Job ``key`` ended: off its node set (whose ``util`` stays, as in the artifact)."""
        node_set = self.of.pop(key)
        node_set.jobs.remove(key)

    def release_empty(self) -> None:
        """Node sets without jobs give their nodes back."""
        for sets in self.sizes.values():
            for node_set in [s for s in sets if not s.jobs]:
                sets.remove(node_set)
                self.free.extend(node_set.rows)

    # -- re-division (gandiva_node_set_adjust) ----------------------------------------------

    def adjust(self) -> None:
        demand = {g: sum(len(s.jobs) for s in sets) * g for g, sets in self.sizes.items()}
        occupied = {
            g: sum(len(s.rows) for s in sets) * self.per_node for g, sets in self.sizes.items()
        }
        total = sum(demand.values())
        if total == 0:
            return
        for g in sorted(self.sizes):
            if demand[g] == 0:
                continue
            plan = int(math.floor(demand[g] / total * self.total_gpus))
            diff = min(plan, demand[g]) - occupied[g]
            if diff > 0:
                self._expand(g, int(math.ceil(diff / g)))
            elif diff < 0:
                self._shrink(g, int(math.ceil(-diff / g)))

    def _deal(self, sets: list[NodeSet], keys: list[str]) -> None:
        """Each job to the least-used set, one after another."""
        for key in keys:
            self._join(sets[0], key)
            _by_util(sets)

    def _shrink(self, g: int, count: int) -> None:
        sets = self.sizes[g]
        count = min(count, len(sets) - 1)
        if count <= 0:
            return
        moving: list[str] = []
        for _ in range(count):
            node_set = sets.pop(0)
            moving.extend(node_set.jobs)
            self.free.extend(node_set.rows)
        self._deal(sets, moving)

    def _expand(self, g: int, count: int) -> None:
        sets = self.sizes[g]
        nodes = self.nodes_for(g)
        # The artifact's loop counter is reused by its inner loop over a new set's nodes: the
        # redistribution runs unless the last round placed a one-node set.
        counter = 0
        for counter in range(1, count + 1):
            if nodes <= len(self.free):
                sets.append(self._new(g))
                counter = nodes - 1
        if counter <= 0:
            return
        moving = [key for node_set in sets for key in node_set.jobs]
        for node_set in sets:
            if node_set.jobs:
                node_set.jobs = []
                node_set.util = 0.0
        self._deal(sets, moving)

    # -- what the simulator needs -----------------------------------------------------------

    def running(self, node_set: NodeSet) -> int:
        """How many of a set's jobs run at once (``time_slicing_execute``'s concurrency): the
        first ones whose uses add up to at most its capacity, and always the first."""
        fits = int(node_set.capacity // self.mem_util) if self.mem_util else len(node_set.jobs)
        return max(1, min(len(node_set.jobs), fits))

    def rotate(self) -> None:
        """The round robin: in every set with jobs waiting their turn, the running ones go
        to the back."""
        for sets in self.sizes.values():
            for node_set in sets:
                ahead = self.running(node_set)
                if len(node_set.jobs) > ahead:
                    node_set.jobs = node_set.jobs[ahead:] + node_set.jobs[:ahead]

    def groups(self) -> dict[str, tuple[int, int]]:
        """For the simulator: each placed job's node set (a number) and how many of the set's
        jobs run at once, set by set and in each set's turn order."""
        out: dict[str, tuple[int, int]] = {}
        number = 0
        for g in sorted(self.sizes):
            for node_set in self.sizes[g]:
                running = self.running(node_set)
                for key in node_set.jobs:
                    out[key] = (number, running)
                number += 1
        return out


def sharing_devices(state: ClusterState, cls: PodClass, row: int) -> Placement | None:
    """The devices a pod of ``cls`` shares on ``row`` when too few are idle: the least
    shared ones, each taken again (None: enough are idle, the default choice stands)."""
    ask = cls.gpu
    if ask is None:
        return None
    remaining = state.gpus.remaining[row, : state.gpus.count[row]]
    if int((remaining >= MILLI).sum()) >= ask.devices:
        return None
    index = np.sort(np.argsort(-remaining, kind="stable")[: ask.devices])
    amount = (MILLI,) * ask.whole + ((ask.share,) if ask.share else ())
    return Placement(row, tuple(int(i) for i in index), amount, ask.memory)


class Gandiva(Plugin):
    """Holds the node sets across sessions; the ``gandiva`` action places with them."""

    name = "gandiva"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.mem_util = self.float_arg("memUtil", DEFAULT_MEM_UTIL)
        if self.mem_util <= 0:
            raise PluginArgumentError(
                f"plugin {self.name}: argument memUtil: expected > 0, got {self.mem_util:g}"
            )
        mode = self.arguments.get("slicing", "turns")
        if mode not in ("turns", "fluid"):
            raise PluginArgumentError(
                f"plugin {self.name}: argument slicing: expected turns or fluid, got {mode!r}"
            )
        #: fluid: every job of a set at min(1, running / jobs) of its speed; turns: the
        #: first ``running`` at full speed, the others not at all until their turn.
        self.fluid = mode == "fluid"
        self.rotation = self.float_arg("rotation", DEFAULT_ROTATION)
        if self.rotation < 0:
            raise PluginArgumentError(
                f"plugin {self.name}: argument rotation: expected seconds >= 0 (0: never), "
                f"got {self.rotation:g}"
            )
        #: Seconds between sessions once every job has arrived, while jobs wait their turn.
        self.slot = self.float_arg("slot", DEFAULT_SLOT)
        if self.slot < 0:
            raise PluginArgumentError(
                f"plugin {self.name}: argument slot: expected seconds >= 0 (0: none), "
                f"got {self.slot:g}"
            )
        self.sets: NodeSets | None = None
        #: Set by the action while it binds a pod of a node set: devices may be shared.
        self.sharing = False
        #: Called after every placement round with ``NodeSets.groups()`` and the migrations so
        #: far (the simulator's hook).
        self.on_sharing: Callable[[dict[str, tuple[int, int]], int], None] | None = None

    def node_sets(self, state: ClusterState) -> NodeSets:
        """The node sets, begun on the first session over the nodes with the most GPUs (the
        artifact's nodes are all alike; smaller ones are left out)."""
        if self.sets is None:
            gpus = state.allocatable[: state.n, state.gpu_column] // MILLI
            per_node = int(gpus.max()) if len(gpus) else 0
            rows = np.flatnonzero(gpus == per_node) if per_node else np.zeros(0, dtype=int)
            self.sets = NodeSets([int(r) for r in rows], per_node, self.mem_util)
        return self.sets

    def pick_devices(self, cls: PodClass, state: ClusterState, row: int) -> Placement | None:
        return sharing_devices(state, cls, row) if self.sharing else None
