"""gang: all-or-nothing placement, minMember below the replica count, job validity, reasons."""

from __future__ import annotations

import numpy as np
import pytest

from berth.api.objects import PodGroup
from berth.api.selectors import SpreadConstraint
from tests.builders import ZONE, best_effort, node, pod, run, scheduler, sel


def snapshot(s):
    st = s.state
    n = st.n
    return {
        "requested": st.requested[:n].copy(),
        "free": st.free[:n].copy(),
        "usage": st.usage[:n].copy(),
        "pods_on": [dict(p) for p in st.pods_on],
        "counts": {k: v[:n].copy() for k, v in st.selector_counts.items()},
    }


def assert_same_state(before, s):
    after = snapshot(s)
    for name in ("requested", "free", "usage"):
        np.testing.assert_array_equal(after[name], before[name], err_msg=name)
    assert after["pods_on"] == before["pods_on"]
    for key, counts in after["counts"].items():
        # Counters registered during the session must count exactly the pods bound before it.
        fresh = [
            sum(key.matches(p, s.state.namespace_labels) for p in on.values())
            for on in before["pods_on"]
        ]
        expected = before["counts"].get(key, np.array(fresh))
        np.testing.assert_array_equal(counts, expected, err_msg=str(key))


def zoned_nodes(count=2, cpu=4000):
    return [node(f"n{i}", cpu=cpu, zone=f"z{i % 2}") for i in range(count)]


def gang_pods(name, count, cpu=3000, **fields):
    spread = (SpreadConstraint(1, ZONE, "ScheduleAnyway", sel(job=name)),)
    return [
        pod(f"{name}-{i}", cpu=cpu, group=name, labels={"job": name}, spread=spread, **fields)
        for i in range(count)
    ]


def test_gang_short_of_room_binds_nothing_and_leaves_state_untouched():
    s = scheduler(
        zoned_nodes(),
        groups=[PodGroup("g", min_member=3)],
        bound=[(pod("x", cpu=500, labels={"job": "g"}), "n0")],
    )
    before = snapshot(s)
    pods = gang_pods("g", 3)
    assert run(s, pods) == {}
    assert_same_state(before, s)
    assert s.pending_reason(pods[0]) == ("gang 0/3: not enough nodes for the whole group at once")
    # The rolled-back statement did not leak: a later session still sees the same room.
    s.add_node(node("n2", cpu=4000, zone="z0"))
    assert len(run(s, now=1.0)) == 3


CASES = {
    # (nodes, min_member, replicas) -> pods bound
    "fits whole": (3, 3, 3, 3),
    "room for 2 of 3, min 3": (2, 3, 3, 0),
    "room for 2 of 3, min 2": (2, 2, 3, 2),
    "room for 2 of 4, min 1": (2, 1, 4, 2),
    "room for 1 of 3, min 2": (1, 2, 3, 0),
    "min 0 behaves as min 1": (1, 0, 2, 1),
}


@pytest.mark.parametrize("nodes,min_member,replicas,bound", CASES.values(), ids=CASES.keys())
def test_min_member(nodes, min_member, replicas, bound):
    s = scheduler(zoned_nodes(nodes), groups=[PodGroup("g", min_member=min_member)])
    binds = run(s, gang_pods("g", replicas))
    assert len(binds) == bound
    assert len(set(binds.values())) == bound  # one 3-cpu pod per 4-cpu node


def test_job_with_fewer_pods_than_min_member_is_not_valid():
    s = scheduler(zoned_nodes(4), groups=[PodGroup("g", min_member=3)])
    pods = gang_pods("g", 3)
    assert run(s, pods[:2]) == {}
    assert s.pending_reason(pods[0]) == "gang 2/3: waiting for pods"
    assert len(run(s, pods[2:], now=1.0)) == 3


def test_running_members_count_towards_min_member():
    s = scheduler(zoned_nodes(3), groups=[PodGroup("g", min_member=3)])
    pods = gang_pods("g", 3)
    s.place_bound(pods[0], "n0")
    s.place_bound(pods[1], "n1")
    assert run(s, pods[2:]) == {"g-2": "n2"}


def test_failed_gang_frees_room_for_a_later_job():
    s = scheduler(
        zoned_nodes(2),
        groups=[PodGroup("big", min_member=3, priority=10), PodGroup("small", min_member=2)],
    )
    binds = run(s, gang_pods("big", 3) + gang_pods("small", 2))
    assert sorted(binds) == ["small-0", "small-1"]


def test_jobs_below_min_member_go_before_running_ones():
    s = scheduler(
        zoned_nodes(2),
        groups=[
            PodGroup("old", min_member=1, submit_time=0.0),
            PodGroup("new", min_member=1, submit_time=9.0),
        ],
    )
    old = gang_pods("old", 2)
    s.place_bound(old[0], "n0")
    binds = run(s, old[1:] + gang_pods("new", 1))
    assert binds == {"new-0": "n1"}


def test_best_effort_gang_is_all_or_nothing():
    s = scheduler([node("n", pods=2)], groups=[PodGroup("be", min_member=3)])
    assert run(s, [best_effort(f"be-{i}", group="be") for i in range(3)]) == {}


def test_gang_with_a_best_effort_member_binds_together():
    s = scheduler([node("n")], groups=[PodGroup("mix", min_member=3)])
    pods = [pod("w0", group="mix"), pod("w1", group="mix"), best_effort("side", group="mix")]
    assert sorted(run(s, pods)) == ["side", "w0", "w1"]


def task_pod(name: str, task: str, cpu: int, group: str = "job") -> object:
    return pod(name, cpu=cpu, group=group, labels={"volcano.sh/task-spec": task})


# A 4-CPU node and a 2-CPU node; workers need 2 CPUs, the ps 3 (fits the big node) or 5 (fits
# nowhere).
TASK_NODES = [node("big", cpu=4000), node("small", cpu=2000)]
TASK_CASES = {
    # minMember 2 covers ps 1 + worker 1: the ps and one worker, on different nodes
    "each task's minimum met": (
        PodGroup("job", min_member=2, min_task_member={"ps": 1, "worker": 1}),
        [task_pod("ps", "ps", 3000), task_pod("w0", "worker", 2000)],
        {"ps": "big", "w0": "small"},
    ),
    # the ps asks for more than any node: two workers alone would reach minMember 2, but the
    # ps task's minimum is not met, so nothing binds
    "a task short of its minimum holds the gang": (
        PodGroup("job", min_member=2, min_task_member={"ps": 1, "worker": 1}),
        [
            task_pod("ps", "ps", 5000),
            task_pod("w0", "worker", 2000),
            task_pod("w1", "worker", 2000),
        ],
        {},
    ),
    # without per-task minimums the same pods start with two workers
    "no per-task minimums": (
        PodGroup("job", min_member=2),
        [
            task_pod("ps", "ps", 5000),
            task_pod("w0", "worker", 2000),
            task_pod("w1", "worker", 2000),
        ],
        {"w0": "big", "w1": "big"},
    ),
    # minMember 1 does not cover the minimums' sum (2): Volcano ignores them
    "minimums beyond minMember are ignored": (
        PodGroup("job", min_member=1, min_task_member={"ps": 1, "worker": 1}),
        [task_pod("ps", "ps", 5000), task_pod("w0", "worker", 2000)],
        {"w0": "big"},
    ),
}


@pytest.mark.parametrize("group,pods,expected", TASK_CASES.values(), ids=TASK_CASES.keys())
def test_per_task_min_available(group, pods, expected):
    s = scheduler(TASK_NODES, groups=[group])
    assert run(s, pods) == expected


def test_task_short_of_pods_is_invalid():
    s = scheduler(TASK_NODES, groups=[PodGroup("job", min_member=2, min_task_member={"ps": 1})])
    pods = [task_pod("w0", "worker", 1000), task_pod("w1", "worker", 1000)]
    assert run(s, pods) == {}
    assert s.pending_reason(pods[0]) == "gang: task ps 0/1: waiting for pods"
