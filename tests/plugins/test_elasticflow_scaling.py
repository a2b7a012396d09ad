"""ElasticFlow's scaling of elastic jobs (simulation.scaling policy elasticflow): minimum
satisfactory shares earliest deadline first, then the GPUs left by marginal time saved."""

from __future__ import annotations

import pytest

from berth.api.elastic import Throughput
from berth.controllers.scaling import elasticflow
from berth.controllers.scaling.aryl import ElasticJob

LINEAR = Throughput("linear", 1.0)  # speed(n) = n


def job(key: str, remaining: float, low: int = 1, high: int = 4, workers: int = 1, gpus: int = 1):
    return ElasticJob(key, low, high, workers, gpus, remaining, LINEAR)


ROWS = {
    # name: (jobs, deadlines, idle GPUs, expected targets)
    "alone, a job takes every GPU it can use": ([job("a", 1000)], {"a": 5000}, 3, {"a": 4}),
    # a needs 3 workers from now on to do 900 one-worker seconds by 300: its share now is 3,
    # which b (no deadline) cannot take although one more worker saves b more.
    "the tight deadline's share comes first": (
        [job("a", 900), job("b", 10_000)],
        {"a": 300},
        2,
        {"a": 3, "b": 1},
    ),
    # Shares are taken as late as the deadline allows: a loose deadline takes nothing now,
    # and the GPUs left go by seconds saved per GPU (b's 10,000 s gain more).
    "a loose deadline leaves the GPUs to marginal gain": (
        [job("a", 100), job("b", 10_000)],
        {"a": 5000},
        2,
        {"a": 1, "b": 3},
    ),
    # No share meets a's deadline: it keeps its minimum, then marginal gain decides.
    "an unsatisfiable deadline keeps the minimum": (
        [job("a", 100_000), job("b", 10)],
        {"a": 10},
        2,
        {"a": 3, "b": 1},
    ),
    "a worker of 2 GPUs does not fit in 1 GPU left": (
        [job("a", 1000, gpus=2, workers=1)],
        {},
        1,
        {"a": 1},
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_targets(name: str) -> None:
    jobs, deadlines, idle, expected = ROWS[name]
    assert elasticflow.scale(jobs, deadlines, idle, now=0.0) == expected
