"""proportion's and capacity's ``allocatable_pods`` and ``allocatable_after`` against placing
the pods one by one (``on_allocate`` after each, ``allocatable`` before each): how many a queue
takes and why it refuses the next must agree, also where a fractional limit meets byte-sized
requests (the room left after each pod then rounds differently from the room for several at
once)."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.objects import Queue
from berth.plugins.queue_share import QueueShare
from tests.builders import config, node, pod, queued, scheduler
from tests.plugins.test_proportion import session_of

GIB = 1 << 30
# (limit of the queue's memory, memory it holds, memory per pod, most pods asked)
CASES = {
    "whole limit": (16 * GIB, 4 * GIB, 6 * GIB, 5),
    "fractional limit just under a whole": (17179869183.999998, 4 * GIB, 6 * GIB, 5),
    "fractional limit, many small pods": (1000.5, 0, 1, 2000),
    "room for all": (64 * GIB, 0, GIB, 8),
    "no room at all": (GIB, GIB, GIB, 3),
    "exactly full after three": (7 * GIB, GIB, 2 * GIB, 6),
}


def _setup(plugin_name: str, limit: float, used: int):
    held = [(queued(pod("held", cpu=0, mem=used >> 20), "q"), "n")] if used else []
    s = scheduler(
        [node("n", cpu=64000, mem=1 << 20)],
        config(["gang", plugin_name, "resource-fit"], actions="enqueue, allocate"),
        queues=[Queue("q", capability={"memory": 1 << 50})],
        bound=held,
    )
    # The pod whose placements the tests count, one by one, in the queue's use.
    placed = queued(pod("next", cpu=0, mem=1), "q")
    job = s.submit(placed)
    session = session_of(s)
    plugin = next(p for p in s.framework.allocatables if isinstance(p, QueueShare))
    memory = plugin.columns.names.index("memory")
    plugin.limits = plugin.limits.copy()
    plugin.limits[0, memory] = limit
    plugin._rooms.clear()
    return session, plugin, job, placed


def _one_by_one(setup, request: np.ndarray, most: int) -> tuple[int, str | None]:
    session, plugin, job, next_pod = setup
    queue = session.queues["q"]
    placed = 0
    saved = plugin.used.copy()
    reason = None
    while placed < most:
        reason = plugin.allocatable(queue, request)
        if reason:
            break
        plugin.on_allocate(job, next_pod, request)
        placed += 1
    else:
        reason = None
    plugin.used[:] = saved
    plugin._rooms.clear()
    plugin._shares.clear()
    return placed, reason


@pytest.mark.parametrize("plugin_name", ["proportion", "capacity"])
@pytest.mark.parametrize(("limit", "used", "need", "most"), CASES.values(), ids=CASES.keys())
def test_counted_at_once_as_placed_one_by_one(plugin_name, limit, used, need, most):
    setup = _setup(plugin_name, limit, used)
    session, plugin, _, _ = setup
    queue = session.queues["q"]
    request = session.state.request_vector({"memory": int(need), "pods": 1})
    placed, reason = _one_by_one(setup, request, most)
    before = plugin.used.copy()
    assert plugin.allocatable_pods(queue, request, most) == placed
    if placed < most:
        assert reason
        assert str(plugin.allocatable_after(queue, request, placed)) == reason
    assert np.array_equal(plugin.used, before)  # asking placed nothing


@pytest.mark.parametrize(("limit", "used", "need", "most"), CASES.values(), ids=CASES.keys())
def test_overused_from_as_placed_one_by_one(limit, used, need, most):
    """proportion's ``overused_from``: after how many more pods ``overused`` turns true,
    asked after each pod placed (the limit reached in memory, the only resource asked)."""
    session, plugin, job, next_pod = _setup("proportion", limit, used)
    queue = session.queues["q"]
    request = session.state.request_vector({"memory": int(need), "pods": 1})
    saved = plugin.used.copy()
    first = most + 1
    for placed in range(most + 1):
        if plugin.overused(queue):
            first = placed
            break
        plugin.on_allocate(job, next_pod, request)
    plugin.used[:] = saved
    plugin._forget(0)
    assert plugin.overused_from(queue, request, most) == first
    assert np.array_equal(plugin.used, saved)  # asking placed nothing
