"""Which cpus a cpuset pod gets, on Koordinator's own accumulator tables (nodenumaresource
cpu_accumulator_test: topology sockets × NUMA nodes per socket × cores per NUMA node ×
threads per core, cpus already taken, cpus asked → the cpus chosen)."""

from __future__ import annotations

import pytest

from berth.api.keys import FULL_PCPUS, LEAST_ALLOCATED, MOST_ALLOCATED, SPREAD_BY_PCPUS
from berth.api.objects import CpuTopology
from berth.cluster.cpu_accumulator import (
    _Layout,
    _remaining_order,
    _spread,
    format_cpuset,
    take_cpus,
)


def topo(sockets: int, numa: int, cores: int, threads: int) -> CpuTopology:
    return CpuTopology(sockets, numa * cores, threads, numa)


def parse(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return out


def choose(shape, taken: str, needed: int, policy: str, strategy: str) -> set[int] | None:
    t = topo(*shape)
    total = t.sockets * t.cores_per_socket * t.threads_per_core
    free = set(range(total)) - parse(taken)
    got = take_cpus(t, free, needed, policy, strategy)
    return None if got is None else set(got)


FULL = [
    # name, topology, taken, needed, MostAllocated, LeastAllocated
    ("non-NUMA node", (1, 1, 4, 2), "", 2, "0-1", "0-1"),
    ("with allocated cpus", (1, 1, 4, 2), "0-1", 2, "2-3", "2-3"),
    ("whole socket", (2, 1, 4, 2), "", 8, "0-7", "0-7"),
    ("across sockets", (2, 1, 4, 2), "", 12, "0-11", "0-11"),
    ("whole socket beside a partly used one", (2, 1, 4, 2), "0-1", 8, "8-15", "8-15"),
    ("smallest / most idle socket", (2, 2, 4, 2), "0-5,16-23", 6, "24-29", "8-13"),
    ("most cpus on one socket", (2, 2, 4, 2), "0-5,16-23", 12, "6-15,24-25", "6-15,24-25"),
    ("first / second socket", (2, 2, 4, 2), "0-3,8-11", 4, "4-7", "16-19"),
    ("less spread cpus", (2, 2, 2, 2), "0,2,4,8,12", 4, "10-11,14-15", "10-11,14-15"),
    ("most spread cpus", (2, 2, 2, 2), "0,2,4,8,10,12", 6, "5-7,13-15", None),
    ("most spread on the smallest idle socket", (2, 2, 2, 2), "0,2,4,8-10,12", 6,
     "6-7,11,13-15", None),
    ("less spread cpus 2", (2, 2, 2, 2), "0,2,4,8,10,12", 6, None, "1,3,6-7,14-15"),
    ("most spread on the most idle socket 3", (2, 2, 4, 2), "0,2,4,8-10,12", 6, None, "16-21"),
]  # fmt: skip


@pytest.mark.parametrize("name,shape,taken,needed,most,least", FULL, ids=[r[0] for r in FULL])
def test_full_pcpus(name, shape, taken, needed, most, least) -> None:
    if most is not None:
        assert choose(shape, taken, needed, FULL_PCPUS, MOST_ALLOCATED) == parse(most)
    if least is not None:
        assert choose(shape, taken, needed, FULL_PCPUS, LEAST_ALLOCATED) == parse(least)


SPREAD = [
    ("non-NUMA node", (1, 1, 4, 2), "", 4, "0,2,4,6", "0,2,4,6"),
    ("the partly used socket satisfies it", (2, 1, 4, 2), "0,2", 4, "1,3,4,6", "8,10,12,14"),
    ("cpus on the idle socket", (2, 1, 4, 2), "0-3", 4, "8,10,12,14", "8,10,12,14"),
    ("most cpus in one socket, shared cores", (2, 1, 4, 2), "0,2", 6, "1,3-7",
     "8-12,14"),
]  # fmt: skip


@pytest.mark.parametrize("name,shape,taken,needed,most,least", SPREAD, ids=[r[0] for r in SPREAD])
def test_spread_by_pcpus(name, shape, taken, needed, most, least) -> None:
    assert choose(shape, taken, needed, SPREAD_BY_PCPUS, MOST_ALLOCATED) == parse(most)
    assert choose(shape, taken, needed, SPREAD_BY_PCPUS, LEAST_ALLOCATED) == parse(least)


@pytest.mark.parametrize("strategy", [MOST_ALLOCATED, LEAST_ALLOCATED])
def test_spread_order_visits_every_core_before_any_second_thread(strategy) -> None:
    t = topo(2, 2, 4, 2)
    layout = _Layout(t)
    order = _spread(
        layout, _remaining_order(layout, set(range(32)), [], strategy == MOST_ALLOCATED)
    )
    assert order == list(range(0, 32, 2)) + list(range(1, 32, 2))


def test_not_enough_cpus() -> None:
    assert choose((1, 1, 4, 2), "0-5", 3, FULL_PCPUS, MOST_ALLOCATED) is None
    assert choose((1, 1, 4, 2), "0-5", 2, FULL_PCPUS, MOST_ALLOCATED) == {6, 7}


def test_format_cpuset() -> None:
    assert format_cpuset([3, 0, 1, 2, 8, 10, 11]) == "0-3,8,10-11"
    assert format_cpuset([]) == ""
