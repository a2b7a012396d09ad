"""The aryl scaling policy: the knapsack against a brute-force search, phase 1's shortest
first, and the split of GPUs between elastic jobs by the time each worker saves."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.elastic import Throughput
from berth.controllers.scaling import aryl, knapsack

LINEAR = Throughput("linear", 1.0)  # n workers run n times as fast


def value(groups, chosen) -> float:
    return float(sum(groups[g][c][1] for g, c in enumerate(chosen)))


def brute_force(groups, capacity) -> float:
    best = float("-inf")
    for chosen in itertools.product(*(range(len(g)) for g in groups)):
        if sum(groups[i][c][0] for i, c in enumerate(chosen)) <= capacity:
            best = max(best, value(groups, chosen))
    return best


group = st.lists(
    st.tuples(st.integers(1, 6), st.floats(-5, 50, allow_nan=False)), min_size=0, max_size=3
).map(lambda rest: [(0, 0.0), *rest])


@settings(max_examples=300, deadline=None)
@given(st.lists(group, min_size=1, max_size=4), st.integers(0, 12))
def test_the_knapsack_finds_what_a_brute_force_search_finds(groups, capacity) -> None:
    chosen = knapsack.solve(groups, capacity)
    assert sum(groups[i][c][0] for i, c in enumerate(chosen)) <= capacity
    assert value(groups, chosen) == pytest.approx(brute_force(groups, capacity))


@pytest.mark.parametrize(
    "groups,capacity,expected",
    [
        # One group: the best choice that fits.
        ([[(0, 0.0), (2, 5.0), (4, 6.0)]], 3, [1]),
        # Two groups sharing 4: (2, 5) + (2, 4) beats (4, 6) + nothing.
        ([[(0, 0.0), (2, 5.0), (4, 6.0)], [(0, 0.0), (2, 4.0)]], 4, [1, 1]),
        # Nothing fits: weight 0 everywhere.
        ([[(0, 0.0), (3, 9.0)], [(0, 0.0), (5, 1.0)]], 2, [0, 0]),
        # A choice worth less than nothing is not taken even when it fits.
        ([[(0, 0.0), (1, -1.0)]], 5, [0]),
    ],
)
def test_knapsack_cases(groups, capacity, expected) -> None:
    assert knapsack.solve(groups, capacity) == expected


def test_a_group_without_a_choice_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="weight 0"):
        knapsack.solve([[(1, 1.0)]], 3)


def test_phase_one_serves_the_shortest_first_and_passes_over_what_does_not_fit() -> None:
    waiting = [
        aryl.WaitingJob("long", 4, 9000.0),
        aryl.WaitingJob("big", 16, 60.0),
        aryl.WaitingJob("short", 4, 600.0),
        aryl.WaitingJob("medium", 4, 3000.0),
    ]
    admitted, left = aryl.admit(waiting, 10)
    assert admitted == {"short", "medium"} and left == 2


def elastic(key, low, high, workers, remaining, gpus=1, pause=0.0, waiting=False):
    return aryl.ElasticJob(key, low, high, workers, gpus, remaining, LINEAR, pause, waiting)


def test_the_gpus_left_go_where_they_save_the_most_time() -> None:
    """Linear speed-up: a worker added to a job of n at its minimum saves
    remaining/n − remaining/(n+1). With 2 GPUs left, job a (remaining 4,000 s of one
    worker, minimum 1) saves 2,000 s with one more and 2,667 s with two; job b (remaining
    1,000 s, minimum 1) saves 500 s with one. Both to a."""
    jobs = [elastic("a", 1, 3, 1, 4000.0), elastic("b", 1, 3, 1, 1000.0)]
    assert aryl.scale(jobs, [], 2) == {"a": 3, "b": 1}


def test_a_waiting_job_takes_the_extra_workers_of_a_running_one() -> None:
    """No GPU idle, job a runs 3 workers above its minimum of 1; a rigid job of 2 GPUs waits.
    Phase 1 gives it two of a's extra GPUs; phase 2 leaves a one extra worker."""
    jobs = [elastic("a", 1, 4, 4, 4000.0)]
    waiting = [aryl.WaitingJob("rigid", 2, 100.0)]
    assert aryl.scale(jobs, waiting, 0) == {"a": 2}


def test_the_resize_pause_keeps_a_job_as_it_is_when_growing_saves_less() -> None:
    # One more worker would save 10 s (remaining 20 s at 1 worker) but costs a 30 s pause.
    jobs = [elastic("a", 1, 2, 1, 20.0, pause=30.0)]
    assert aryl.scale(jobs, [], 5) == {"a": 1}


def test_an_elastic_job_that_waits_and_is_not_served_keeps_its_minimum() -> None:
    jobs = [elastic("late", 4, 8, 0, 8000.0, gpus=2, waiting=True)]
    waiting = [aryl.WaitingJob("late", 8, 2000.0)]
    assert aryl.scale(jobs, waiting, 6) == {"late": 4}
    # Served, it also gets the GPUs left over: 10 − 8 = 2, one worker of 2 GPUs.
    assert aryl.scale(jobs, waiting, 10) == {"late": 5}
