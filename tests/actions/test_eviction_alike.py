"""evict_for passes over a waiting job alike to one it just found nothing to do for
(``Evictor.alike``: same queue, ranks and pod class, nothing changed since): the decisions are
those of asking every job, with fewer asks."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.actions import eviction, eviction_turn
from berth.api.objects import Pod, PodGroup
from berth.framework.scheduler import Scheduler
from berth.plugins.tiresias import Service
from tests.builders import GANG, config, node, pod
from tests.builders import scheduler as build
from tests.plugins.test_tiresias import GPU, cfg, plugin

pytestmark = pytest.mark.from_source  # patches the compiled eviction (tests/conftest.py)


def job(name: str, gpus: int, submit: float = 0.0, start: float | None = None, **fields) -> Pod:
    """A one-pod job of ``gpus`` GPUs; ``start``: running since then (bound)."""
    return pod(name, cpu=100, mem=1, gpu=gpus * GPU, submit_time=submit, start_time=start, **fields)


def cluster(nodes: int) -> Scheduler:
    return build([node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU) for i in range(nodes)], cfg())


def asked(monkeypatch) -> list[str]:
    """The jobs ``evict_for`` goes on to ask about, in order."""
    calls: list[str] = []
    inner = eviction_turn._evict_for
    monkeypatch.setattr(eviction_turn, "_evict_for", lambda *a: calls.append(a[1].key) or inner(*a))
    return calls


def full(nodes: int) -> Scheduler:
    """Each node runs a level-1 job of 4 GPUs (evictable) beside a level-0 one (not): no
    node can be freed for 8 GPUs."""
    s = cluster(nodes)
    for i in range(nodes):
        s.place_bound(job(f"old{i}", 4, start=0), f"n{i}")  # 4 × 1,000 s: level 1
        s.place_bound(job(f"new{i}", 4, start=900), f"n{i}")  # 4 × 100 s: level 0
    return s


def test_alike_jobs_are_asked_once(monkeypatch):
    calls = asked(monkeypatch)
    s = full(2)
    for i in range(3):
        s.submit(job(f"wait{i}", 8, submit=900 + i))
    assert s.run_session(1000) == [] and s.evictions == []
    assert calls == ["default/wait0"]


@pytest.mark.parametrize("size,asks", [(2, 1), (eviction.ALIKE_PODS + 1, 2)])
def test_only_jobs_of_few_pods_are_marked(monkeypatch, size, asks):
    # A gang gives up at its first class without room; telling a large one's classes apart
    # would take all its pods, so it is asked rather than marked.
    calls = asked(monkeypatch)
    s = full(2)
    for g in range(2):
        s.add_group(PodGroup(f"g{g}", min_member=size))
        for t in range(size):
            s.submit(job(f"g{g}-{t}", 8, submit=900 + g, group=f"g{g}"))
    assert s.run_session(1000) == [] and s.evictions == []
    assert len(calls) == asks


#: Jobs served by priority first, then by level; only tiresias judges victims.
BY_PRIORITY = config(
    [{"name": "priority", "enablePreemptable": False}, "tiresias", GANG, "resource-fit"],
    actions="allocate, preempt",
)


def test_a_job_of_other_ranks_is_asked():
    # wait0 (priority 5, level 1) goes first: it may evict only "long" (level 2), which frees
    # too little. wait1, alike but for its level (0), may evict "mid" (level 1) too.
    s = build([node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU) for i in range(2)], BY_PRIORITY)
    s.place_bound(job("mid", 8, start=1500), "n0")  # 8 × 500 s: level 1
    s.place_bound(job("long", 4, start=0), "n1")  # 4 × 2,000 s: level 2
    s.place_bound(job("young", 4, start=1900), "n1")  # level 0
    s.submit(job("wait0", 8, submit=10, priority=5))
    s.submit(job("wait1", 8, submit=20))
    plugin(s).services["default/wait0"] = Service(banked=4000)
    binds = s.run_session(2000)
    assert [(b.pod.name, b.node) for b in binds] == [("wait1", "n0")]
    assert [e.pod.name for e in s.evictions] == ["mid"]


SIZES = st.sampled_from([1, 2, 4, 8])
RUNNING = st.lists(st.tuples(SIZES, st.integers(0, 2), st.integers(0, 1500)), max_size=10)
WAITING = st.lists(
    st.tuples(SIZES, st.sampled_from([0, 4000, 8000]), st.integers(0, 2)), min_size=1, max_size=8
)


def decide(running, waiting, asking: bool) -> tuple:
    s = build([node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU) for i in range(3)], BY_PRIORITY)
    if asking:
        s_alike = eviction.Evictor.alike
        eviction.Evictor.alike = lambda self, job: None
    try:
        for i, (size, at, start) in enumerate(running):
            p = job(f"r{i}", size, start=start)
            try:
                s.place_bound(p, f"n{at}")
            except ValueError:
                continue  # the node's GPUs are taken
        for i, (size, banked, priority) in enumerate(waiting):
            s.submit(job(f"w{i}", size, submit=1500 + i, priority=priority))
            if banked:
                plugin(s).services[f"default/w{i}"] = Service(banked=banked)
        binds = sorted((b.pod.name, b.node) for b in s.run_session(2000))
        return binds, sorted((e.pod.name, e.reason) for e in s.evictions)
    finally:
        if asking:
            eviction.Evictor.alike = s_alike


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(running=RUNNING, waiting=WAITING)
def test_passing_over_alike_jobs_changes_no_decision(running, waiting):
    assert decide(running, waiting, asking=False) == decide(running, waiting, asking=True)
