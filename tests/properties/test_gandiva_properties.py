"""gandiva's node sets under any sequence of arrivals, ends and re-divisions: no job is lost
(each placed job is in exactly one set until it ends), node sets hold disjoint whole nodes and
with the free ones make up the cluster, and no set runs more GPUs at once than it has."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.plugins.gandiva import NodeSets

SIZES = st.sampled_from([1, 2, 4, 8, 16, 32])
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), SIZES),
        st.tuples(st.just("end"), st.integers(0, 1000)),
        st.tuples(st.just("adjust"), st.just(0)),
        st.tuples(st.just("rotate"), st.just(0)),
    ),
    max_size=60,
)


def check(sets: NodeSets, nodes: int, alive: set[str]) -> None:
    rows = [row for group in sets.sizes.values() for s in group for row in s.rows]
    assert sorted(rows + sets.free) == list(range(nodes))
    assert set(sets.of) == alive
    for g, group in sets.sizes.items():
        for node_set in group:
            assert node_set.gpus == g
            assert len(node_set.rows) == sets.nodes_for(g)
            assert all(sets.of[key] is node_set for key in node_set.jobs)
            if node_set.jobs:
                running = sets.running(node_set)
                assert 1 <= running <= len(node_set.jobs)
                assert running * g <= len(node_set.rows) * sets.per_node
    members = [key for group in sets.sizes.values() for s in group for key in s.jobs]
    assert sorted(members) == sorted(alive)


@settings(max_examples=150, deadline=None)
@given(nodes=st.integers(1, 6), steps=STEPS)
def test_no_job_lost_and_no_set_over_its_gpus(nodes: int, steps) -> None:
    sets = NodeSets(list(range(nodes)), 8)
    alive: set[str] = set()
    for index, (kind, value) in enumerate(steps):
        if kind == "arrive":
            if sets.place(f"j{index}", value) is not None:
                alive.add(f"j{index}")
        elif kind == "end" and alive:
            key = sorted(alive)[value % len(alive)]
            sets.leave(key)
            alive.discard(key)
            sets.release_empty()
        elif kind == "adjust":
            sets.adjust()
            sets.release_empty()
        elif kind == "rotate":
            sets.rotate()
        check(sets, nodes, alive)
