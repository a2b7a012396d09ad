"""Parked jobs wake and sleep by group (``berth.actions.parking``): a group sleeps once the
nodes' most free is at most its ceiling, for the rest of the cycle, and the head is the first
job of the groups awake."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from berth.actions.parking import Parking, _Group

# Stand-ins for the session and its rule, which compiled classes refuse (tests/conftest.py).
pytestmark = pytest.mark.from_source


def parking(ceilings: list[float], free: list[float]) -> tuple[Parking, SimpleNamespace]:
    """A parking of one queue whose i-th group, under ``ceilings[i]`` of one resource, holds
    the job of key ``(i,)``; ``free[0]`` is the nodes' most free, the state's log position
    moving with each change the test makes."""
    state = SimpleNamespace(log_position=0)
    park = Parking()
    park.session = SimpleNamespace(state=state)  # type: ignore[assignment]
    park.beyond = SimpleNamespace(  # type: ignore[assignment]
        current=lambda: SimpleNamespace(free=np.array([free[0]]))
    )
    park.queue = "q"
    for i, ceiling in enumerate(ceilings):
        group = _Group(SimpleNamespace(free=np.array([ceiling]), serial=i))  # type: ignore[arg-type]
        job = SimpleNamespace(key=f"j{i}")
        group.entries.append(((i,), job))  # type: ignore[arg-type]
        group.live = 1
        park.groups[i] = group
        park.where[job.key] = i
    return park, state


def test_groups_fall_asleep_as_the_most_free_falls():
    free = [5.0]
    park, state = parking([8.0, 3.0, 1.0, 6.0], free)
    assert park.line_up({"q": []}) is park
    assert park.head() == (1,)  # 8 and 6 sleep: the nodes are at most at them
    free[0], state.log_position = 2.0, 1
    assert park.head() == (2,)
    free[0], state.log_position = 9.0, 2  # (more free mid-cycle wakes no group again)
    assert park.head() == (2,)
    free[0], state.log_position = 0.5, 3
    assert park.head() is None


def test_many_groups_asleep_at_once_leave_the_first_awake_at_the_head():
    free = [100.0]
    park, state = parking([float(c) for c in range(20, 0, -1)], free)  # group i under 20 - i
    park.line_up({"q": []})
    assert park.head() == (0,)
    free[0], state.log_position = 2.5, 1  # only the groups under 1 and 2 stay awake
    assert park.head() == (18,)
    assert len(park.ceilings[0]) == 2
    assert park.pop().key == "j18"
    assert park.head() == (19,)


def test_groups_asleep_as_the_cycle_starts_never_enter_the_heap():
    free = [4.0]
    park, _ = parking([5.0, 4.0, 3.0], free)
    park.line_up({"q": []})
    assert [id_ for _, id_ in park.awake] == [2]
    assert park.head() == (2,)


def test_a_group_wakes_at_its_first_job_still_parked():
    free = [10.0]
    park, _ = parking([1.0], free)
    group = park.groups[0]
    for k in range(1, 4):  # three more jobs in the group, after the first
        job = SimpleNamespace(key=f"k{k}")
        group.entries.append(((0, k), job))  # type: ignore[arg-type]
        group.live += 1
        park.where[job.key] = 0
    park.forget(["j0", "k1"])  # (changed: no longer parked)
    park.line_up({"q": []})
    assert group.start == group.at == 2
    assert park.head() == (0, 2) and park.pop().key == "k2"
    assert park.head() == (0, 3)
    park.line_up({"q": []})  # the next cycle: k2 was taken, so the group starts at k3
    assert group.start == 3 and park.head() == (0, 3)
