"""gandiva's node sets, on tables after the ElasticFlow artifact's code (cluster.py:
gandiva_placement, gandiva_node_set_shrink/_expand/_adjust, time_slicing_execute's
concurrency), 8-GPU nodes as in its cluster specs."""

from __future__ import annotations

import pytest

from berth.plugins.gandiva import NodeSets

#: job GPUs: (nodes of its node set, capacity = int(nodes * 8 / GPUs)), the artifact's formula.
CAPACITY = {
    1: (1, 8),
    2: (1, 4),
    4: (1, 2),
    8: (1, 1),
    12: (2, 1),
    16: (2, 1),
    24: (3, 1),
    32: (4, 1),
    64: (8, 1),
}


@pytest.mark.parametrize("gpus", list(CAPACITY))
def test_a_node_set_of_a_size(gpus: int) -> None:
    sets = NodeSets(list(range(8)), 8)
    node_set = sets.place("j", gpus)
    assert node_set is not None
    assert (len(node_set.rows), node_set.capacity) == CAPACITY[gpus]


def speeds(sets: NodeSets) -> dict[str, float]:
    groups = sets.groups()
    members: dict[int, int] = {}
    for group, _ in groups.values():
        members[group] = members.get(group, 0) + 1
    return {key: min(1.0, cap / members[group]) for key, (group, cap) in groups.items()}


PLACEMENT = {
    # name: (free nodes, jobs in arrival order as GPUs, expected node set index per job
    #        (None: waits), expected speeds)
    "1-GPU jobs pack while util + 1 < 8, the 8th opens a set": (
        2,
        [1] * 8,
        [0] * 7 + [1],
        [1.0] * 8,
    ),
    "8-GPU jobs never pack (1 + 1 < 1 fails): each takes a node": (2, [8, 8], [0, 1], [1.0] * 2),
    "no free node: time-sliced on the set, two jobs in turns": (1, [8, 8], [0, 0], [0.5, 0.5]),
    "4-GPU jobs: packing refused (1 + 1 < 2 fails), time-sliced two run at once": (
        1,
        [4, 4],
        [0, 0],
        [1.0, 1.0],
    ),
    "three 4-GPU jobs on one node: capacity 2 of 3": (1, [4, 4, 4], [0, 0, 0], [2 / 3] * 3),
    "no free node and no set of its size: it waits": (1, [8, 1], [0, None], [1.0]),
    "a 16-GPU job needs two free nodes": (1, [16], [None], []),
}


@pytest.mark.parametrize("name", list(PLACEMENT))
def test_placement(name: str) -> None:
    free, jobs, expected, expected_speeds = PLACEMENT[name]
    sets = NodeSets(list(range(free)), 8)
    found: list[object] = []
    ids: dict[int, int] = {}
    for i, gpus in enumerate(jobs):
        node_set = sets.place(f"j{i}", gpus)
        found.append(None if node_set is None else ids.setdefault(id(node_set), len(ids)))
    assert found == expected
    assert list(speeds(sets).values()) == pytest.approx(expected_speeds)


def test_util_is_not_lowered_when_a_job_ends() -> None:
    # time_slicing_execute removes an ended job from node_set['jobs'] but leaves 'util'.
    sets = NodeSets([0, 1], 8)
    for i in range(3):
        sets.place(f"j{i}", 1)
    sets.leave("j0")
    sets.leave("j1")
    node_set = sets.of["j2"]
    assert (node_set.util, node_set.jobs) == (3.0, ["j2"])


def test_shrink_moves_the_jobs_of_the_least_used_sets() -> None:
    # Two 1-GPU sets with one job each: demand 2 GPUs, 16 held: diff -14 -> 14 sets to give
    # back, capped at all but one; the least used set (j7's, util 1 against 7) goes, its job
    # moving to the other.
    sets = NodeSets([0, 1], 8)
    for i in range(8):
        sets.place(f"j{i}", 1)
    for i in range(1, 7):
        sets.leave(f"j{i}")
    assert sets.of["j0"] is not sets.of["j7"]
    sets.adjust()
    assert sets.of["j0"] is sets.of["j7"]
    assert sets.migrations == 1
    assert sets.free == [1]


def test_expanding_one_node_sets_moves_nobody() -> None:
    # The artifact's expand loop reuses its counter for the new set's nodes: after placing a
    # one-node set it is 0 and nothing is redistributed, so the time-sliced pair stays. (c
    # joins b's set: packing put a's set last before the time-slicing step took the first.)
    sets = NodeSets([0, 1], 8)
    for key in ("a", "b", "c"):
        sets.place(key, 8)
    assert sets.of["b"] is sets.of["c"]
    sets.leave("a")
    sets.release_empty()
    sets.adjust()
    sets.release_empty()
    assert sets.of["b"] is sets.of["c"]
    assert sets.migrations == 0
    assert speeds(sets) == {"b": 0.5, "c": 0.5}
    assert sets.free == [0]


def test_expanding_two_node_sets_deals_the_jobs_again() -> None:
    sets = NodeSets([0, 1, 2, 3], 8)
    for key in ("a", "b", "c"):
        sets.place(key, 16)
    sets.leave("a")
    sets.release_empty()
    sets.adjust()
    assert sets.of["b"] is not sets.of["c"]
    assert sets.migrations == 1  # c, dealt to the new set
    assert speeds(sets) == {"b": 1.0, "c": 1.0}
    assert sets.free == []


def test_mem_util_must_be_positive() -> None:
    from berth.plugins.gandiva import Gandiva

    with pytest.raises(ValueError, match="argument memUtil: expected > 0"):
        Gandiva({"memUtil": 0})


def test_node_sets_use_the_nodes_with_the_most_gpus() -> None:
    from berth.framework.scheduler import Scheduler
    from berth.plugins.gandiva import Gandiva
    from tests.builders import config, node

    s = Scheduler(config(["gandiva"], actions="gandiva"))
    for name, gpus in (("a", 8), ("b", 4), ("c", 8), ("cpu", 0)):
        s.add_node(node(name, cpu=64000, mem=65536, gpu=gpus * 1000))
    plugin = next(p for p in s.framework.plugins if isinstance(p, Gandiva))
    sets = plugin.node_sets(s.state)
    assert ([s.state.names[r] for r in sets.free], sets.per_node) == (["a", "c"], 8)
