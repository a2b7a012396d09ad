"""srtf under preemption, a ranking plugin with ranks of every size: the ranks kept per victim
table, and a task for which some waiting job of a smaller rank freed no node skipping the node
search, change what is computed, not what is decided."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.framework.scheduler import Scheduler
from tests.builders import GANG, config, node, pod
from tests.properties.generators import asked_pod_by_pod, decisions

GPU = 1000
SIZES = st.sampled_from([1, 2, 4, 8])
#: GPUs, duration and start of running jobs; GPUs and duration of waiting ones.
RUNNING = st.lists(st.tuples(SIZES, st.integers(100, 9000), st.integers(0, 90)), max_size=8)
WAITING = st.lists(st.tuples(SIZES, st.integers(50, 9000)), min_size=1, max_size=8)


def _decided(nodes: int, running: list[tuple[int, int, int]], waiting: list[tuple[int, int]]):
    cfg = config(["srtf", GANG, "resource-fit", "least-allocated"], actions="allocate, preempt")
    s = Scheduler(cfg)
    for i in range(nodes):
        s.add_node(node(f"n{i}", cpu=64000, mem=65536, gpu=8 * GPU))
    for index, (gpus, duration, start) in enumerate(running):
        p = pod(f"r{index}", cpu=100, mem=1, gpu=gpus * GPU, duration=float(duration))
        p.start_time = float(start)
        free = {n: s.state.free[s.state.rows[n]][s.state.gpu_column] for n in s.state.names}
        room = [n for n in sorted(free) if free[n] >= gpus * GPU]
        if room:
            s.place_bound(p, room[0])
    for index, (gpus, duration) in enumerate(waiting):
        s.submit(
            pod(
                f"w{index}",
                cpu=100,
                mem=1,
                gpu=gpus * GPU,
                duration=float(duration),
                submit_time=float(index),
            )
        )
    return decisions(s, 100.0)


@pytest.mark.from_source  # patches the compiled Evictor (tests/conftest.py)
@settings(max_examples=80, deadline=None)
@given(nodes=st.integers(1, 3), running=RUNNING, waiting=WAITING)
def test_preempt_decides_alike_with_the_ranked_victims_and_without(nodes, running, waiting):
    fast = _decided(nodes, running, waiting)
    with asked_pod_by_pod():
        assert _decided(nodes, running, waiting) == fast
