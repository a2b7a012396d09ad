"""Which CPUs of one node a pod with a cpuset gets (Koordinator's NodeNUMAResource choice).

CPUs are numbered as Koordinator numbers them: socket by socket, NUMA node by NUMA node, core
by core, and the hardware threads of a core next to each other (cpu = core × threads + thread),
so core c holds cpus c·T … c·T + T − 1 and NUMA node n holds a contiguous range.

``FullPCPUs`` takes whole physical cores: a whole NUMA node's worth from one NUMA node if one
has enough idle cores, else from one socket, else the sockets with the most idle cores first;
a remainder smaller than a core comes from single threads. ``SpreadByPCPUs`` takes one thread
per core before any core's second thread, again from one NUMA node or socket when one has
room. Among NUMA nodes and sockets that qualify, ``MostAllocated`` prefers the one with the
fewest idle cpus (packing), ``LeastAllocated`` the one with the most; ties go to the lower id.
Runs once per placed pod on its chosen node: plain Python over at most a few hundred cpus.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from berth.api.keys import FULL_PCPUS, MOST_ALLOCATED
from berth.api.objects import CpuTopology


class _Layout:
    """Where each cpu sits: its core, NUMA node and socket."""

    def __init__(self, topology: CpuTopology) -> None:
        t = topology
        self.threads = t.threads_per_core
        self.cpus_per_numa = t.cores_per_socket // t.numa_per_socket * self.threads
        self.cpus_per_socket = t.cores_per_socket * self.threads

    def core(self, cpu: int) -> int:
        return cpu // self.threads

    def numa(self, cpu: int) -> int:
        return cpu // self.cpus_per_numa

    def socket(self, cpu: int) -> int:
        return cpu // self.cpus_per_socket


def take_cpus(
    topology: CpuTopology,
    free: Iterable[int],
    needed: int,
    policy: str = FULL_PCPUS,
    strategy: str = MOST_ALLOCATED,
) -> list[int] | None:
    """``needed`` cpus out of ``free`` chosen by ``policy`` and ``strategy``, sorted; None
    when fewer are free."""
    free_set = set(free)
    if needed > len(free_set):
        return None
    if needed <= 0:
        return []
    layout = _Layout(topology)
    packing = strategy == MOST_ALLOCATED
    taken: list[int] = []

    def take(cpus: Iterable[int]) -> None:
        for cpu in cpus:
            free_set.discard(cpu)
            taken.append(cpu)

    def left() -> int:
        return needed - len(taken)

    if policy == FULL_PCPUS or layout.threads == 1:
        if left() <= layout.cpus_per_numa:
            for cpus in _whole_cores_by(layout, free_set, layout.numa, packing, by_numa=True):
                if len(cpus) >= left():
                    take(cpus[: left()])
                    return sorted(taken)
        if left() <= layout.cpus_per_socket:
            for cpus in _whole_cores_by(layout, free_set, layout.socket, packing):
                if len(cpus) >= left():
                    take(cpus[: left()])
                    return sorted(taken)
        groups = _whole_cores_by(layout, free_set, layout.socket, packing)
        groups.sort(key=len, reverse=True)  # stable: ties keep the strategy's order
        unfilled = []
        for cpus in groups:
            if left() >= len(cpus):
                take(cpus)
                if not left():
                    return sorted(taken)
            else:
                unfilled.append(cpus)
        if left() >= layout.threads:
            unfilled.sort(key=len)
            for cpus in unfilled:
                for start in range(0, len(cpus), layout.threads):
                    take(cpus[start : start + layout.threads])
                    if not left():
                        return sorted(taken)
                    if left() < layout.threads:
                        break
    else:
        for limit, group_of in (
            (layout.cpus_per_numa, layout.numa),
            (layout.cpus_per_socket, layout.socket),
        ):
            if left() > limit:
                continue
            for one_per_core in (True, False):
                for cpus in _free_cpus_by(layout, free_set, group_of, packing, one_per_core):
                    if len(cpus) >= left():
                        take(_spread(layout, cpus)[: left()])
                        return sorted(taken)
    for cpu in _spread(layout, _remaining_order(layout, free_set, taken, packing)):
        take([cpu])
        if not left():
            return sorted(taken)
    return None


def _order(value: int, packing: bool) -> int:
    """Sort key: fewer idle first when packing, more idle first otherwise."""
    return value if packing else -value


def _whole_cores_by(
    layout: _Layout, free: set[int], group_of, packing: bool, by_numa: bool = False
) -> list[list[int]]:
    """The cpus of fully idle cores, grouped by NUMA node or socket, in the strategy's order
    (by the group's idle cpus in whole cores; for NUMA nodes then by their socket's idle
    cpus); cores by id within a group."""
    per_core: dict[int, list[int]] = defaultdict(list)
    socket_idle: dict[int, int] = defaultdict(int)
    for cpu in free:
        per_core[layout.core(cpu)].append(cpu)
        socket_idle[layout.socket(cpu)] += 1
    groups: dict[int, list[int]] = defaultdict(list)
    for core in sorted(per_core):
        cpus = sorted(per_core[core])
        if len(cpus) == layout.threads:
            groups[group_of(cpus[0])].extend(cpus)

    def key(group: int) -> tuple:
        first = groups[group][0]
        socket = socket_idle[layout.socket(first)] if by_numa else 0
        return (_order(len(groups[group]), packing), _order(socket, packing), group)

    return [groups[g] for g in sorted(groups, key=key)]


def _free_cpus_by(
    layout: _Layout, free: set[int], group_of, packing: bool, one_per_core: bool
) -> list[list[int]]:
    """Idle cpus grouped by NUMA node or socket in the strategy's order (NUMA nodes by their
    idle cpus, then their socket's; sockets by what they offer), ids ascending;
    ``one_per_core`` keeps a core's first idle thread only."""
    groups: dict[int, list[int]] = defaultdict(list)
    socket_idle: dict[int, int] = defaultdict(int)
    for cpu in sorted(free):
        groups[group_of(cpu)].append(cpu)
        socket_idle[layout.socket(cpu)] += 1

    kept = groups
    if one_per_core:  # a core's first idle thread: the spread order's first round
        kept = {g: _spread(layout, c)[: _cores(layout, c)] for g, c in groups.items()}
    by_socket = group_of == layout.socket

    def key(group: int) -> tuple:
        if by_socket:  # sockets rank by what they offer (idle cores when one per core)
            return (_order(len(kept[group]), packing), group)
        socket = socket_idle[layout.socket(groups[group][0])]
        return (_order(len(groups[group]), packing), _order(socket, packing), group)

    return [kept[g] for g in sorted(groups, key=key)]


def _remaining_order(layout: _Layout, free: set[int], taken: list[int], packing: bool) -> list[int]:
    """Idle cpus core by core: cores in sockets already holding the most of the pod's cpus
    first, then by socket and NUMA idle cpus in the strategy's order, then cores with fewer
    idle threads, then socket and core id."""
    per_core: dict[int, list[int]] = defaultdict(list)
    numa_idle: dict[int, int] = defaultdict(int)
    socket_idle: dict[int, int] = defaultdict(int)
    for cpu in free:
        per_core[layout.core(cpu)].append(cpu)
        numa_idle[layout.numa(cpu)] += 1
        socket_idle[layout.socket(cpu)] += 1
    held: dict[int, int] = defaultdict(int)
    for cpu in taken:
        held[layout.socket(cpu)] += 1

    def key(core: int) -> tuple:
        cpu = per_core[core][0]
        socket = layout.socket(cpu)
        return (
            -held[socket],
            _order(socket_idle[socket], packing),
            _order(numa_idle[layout.numa(cpu)], packing),
            len(per_core[core]),
            socket,
            core,
        )

    return [cpu for core in sorted(per_core, key=key) for cpu in sorted(per_core[core])]


def _cores(layout: _Layout, cpus: list[int]) -> int:
    return len({layout.core(cpu) for cpu in cpus})


def _spread(layout: _Layout, cpus: list[int]) -> list[int]:
    """One cpu of each core in turn, then the cores' next threads: spreads over cores."""
    if len(cpus) <= layout.threads:
        return cpus
    out: list[int] = []
    rest = list(cpus)
    while rest:
        seen: set[int] = set()
        later = []
        for cpu in rest:
            core = layout.core(cpu)
            if core in seen:
                later.append(cpu)
            else:
                seen.add(core)
                out.append(cpu)
        rest = later
    return out


def format_cpuset(cpus: Iterable[int]) -> str:
    """``0-3,8,10-11``: the Linux cpuset list form."""
    ordered = sorted(cpus)
    parts = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)
