"""Per-device GPU accounting under random placements, gangs, releases and preemption: no
device is ever over its capacity, and every bound GPU pod holds devices adding up to its
request."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.objects import Pod, PodGroup
from berth.cluster.devices import MILLI
from berth.framework.config import parse_config
from berth.framework.scheduler import Scheduler
from berth.resources import GPU
from tests.builders import node, pod

POLICIES = ("gpu-packing", "fgd", "gpu-bestfit", "dotprod", "gpu-clustering", "random")
ASKS = st.sampled_from([100, 250, 460, 500, 700, 1000, 1500, 2000, 4000])


def _check(scheduler: Scheduler, pods: list[Pod]) -> None:
    state = scheduler.state
    gpus = state.gpus
    n = state.n
    remaining = gpus.remaining[:n]
    real = remaining >= 0
    assert (remaining[real] <= MILLI).all()
    for row in range(n):
        assert real[row].sum() == gpus.count[row]
    used = (MILLI * gpus.count[:n] - remaining.clip(0).sum(axis=1)).tolist()
    assert used == state.requested[:n, state.gpu_column].tolist()
    for p in pods:
        held = gpus.placements.get(p.key)
        if p.bound_node and p.key in state.pods_on[state.rows[p.bound_node]]:
            assert held is not None and sum(held.amount) == p.requests[GPU]
            assert state.names[held.row] == p.bound_node
        else:
            assert held is None


@settings(max_examples=40, deadline=None)
@given(
    policy=st.sampled_from(POLICIES),
    sizes=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=4),
    jobs=st.lists(st.tuples(ASKS, st.integers(1, 3), st.integers(0, 100)), min_size=1, max_size=12),
    releases=st.lists(st.integers(0, 50), max_size=8),
)
def test_devices_never_overcommitted(policy, sizes, jobs, releases):
    plugins = [{"name": "priority"}, {"name": "gang"}, {"name": "resource-fit"}, {"name": policy}]
    config = parse_config(
        {"actions": "enqueue, allocate, preempt", "tiers": [{"plugins": plugins}]}, "test"
    )
    scheduler = Scheduler(config, seed=1)
    for i, gpus in enumerate(sizes):
        scheduler.add_node(node(f"n{i}", cpu=64000, mem=262144, gpu=gpus * MILLI))
    pods: list[Pod] = []
    for j, (ask, members, priority) in enumerate(jobs):
        group = PodGroup(f"job{j}", min_member=members, priority=priority)
        scheduler.add_group(group)
        for m in range(members):
            p = pod(f"job{j}-{m}", cpu=500, gpu=ask, group=group.name, priority=priority)
            pods.append(p)
            scheduler.submit(p)
        scheduler.run_session(float(j))
        for evicted in scheduler.evictions:  # already off its node in the cluster state
            evicted.pod.bound_node = ""
        scheduler.evictions.clear()
        _check(scheduler, pods)
        for index in releases[:1]:
            bound = [p for p in pods if p.bound_node]
            if bound:
                victim = bound[index % len(bound)]
                scheduler.release(victim)
                victim.bound_node = ""
        releases = releases[1:]
        _check(scheduler, pods)
