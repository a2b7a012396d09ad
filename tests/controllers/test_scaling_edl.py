"""The edl scaling policy on the table of PaddlePaddle's own autoscaler tests
(paddle-operator's pkg/autoscaler/autoscaler_test.go): the cluster's resources and one job in,
the change of workers out. Units are upstream's (milli-cpu, megabytes; "100Mi" is 105 MB,
as Kubernetes rounds it up). Two of upstream's GPU cases are commented out there; their
expectations are kept here, since berth's policy does count GPUs."""

from __future__ import annotations

import numpy as np
import pytest

from berth.controllers.scaling import edl

IDLE = np.array([[99999.0, 99999.0, 10.0]])  # upstream's allIdleNodes (one roomy node)
NO_NODES = np.zeros((0, 3))


def load(cpu=(0, 0), memory=(0, 0), gpu=(0, 0), idle=IDLE) -> edl.Load:
    """(requested, total) per resource."""
    return edl.Load(
        total=np.array([cpu[1], memory[1], gpu[1]], dtype=float),
        requested=np.array([cpu[0], memory[0], gpu[0]], dtype=float),
        idle=idle.copy(),
    )


def job(cpu, memory, gpu, low, high, workers, key="test/name") -> edl.Job:
    return edl.Job(key, low, high, workers, np.array([cpu, memory, gpu], dtype=float))


@pytest.mark.parametrize(
    "name,cluster,worker,moves",
    [
        # moves: (diff so far, scale down?, expected change), applied one after another
        ("Satisfied", load(cpu=(0, 2000), memory=(0, 1000), idle=NO_NODES),
         job(10**9, 105, 0, 1, 2, 2), [(0, False, 0)]),
        ("MoreCPU", load(cpu=(100, 3000), memory=(100, 1000)),
         job(1000, 105, 0, 1, 3, 1), [(0, False, 1)]),
        ("NoMoreCPU", load(cpu=(1000, 1000), memory=(100, 1000)),
         job(1000, 105, 0, 1, 3, 1), [(0, False, 0)]),
        ("MoreGPU", load(cpu=(0, 2000), memory=(100, 1000), gpu=(0, 10)),
         job(1000, 11, 1, 1, 3, 1), [(0, False, 1)]),
        ("MoreGPU, asked to scale down", load(cpu=(0, 2000), memory=(100, 1000), gpu=(0, 10)),
         job(1000, 11, 1, 1, 3, 1), [(0, True, 0)]),
        ("NoMoreGPU", load(cpu=(0, 2000), memory=(100, 1000), gpu=(10, 10)),
         job(1000, 11, 1, 1, 3, 1), [(0, False, 0)]),
        ("ScaleDownMoreThanExpected",
         load(cpu=(1000, 1000), memory=(1000, 1000), gpu=(10, 10), idle=NO_NODES),
         job(1000, 11, 0, 1, 3, 6), [(0, True, -1), (-1, True, -1), (-2, True, -1), (-3, True, 0)]),
        ("ScaleDownToMin", load(cpu=(5000, 3000), memory=(1000, 1000), gpu=(10, 10)),
         job(1000, 11, 0, 1, 3, 3), [(0, True, -1), (-1, True, -1), (-2, True, 0)]),
        ("ScaleDownFullCluster", load(cpu=(2000, 1000), memory=(1000, 1000), gpu=(10, 10)),
         job(1000, 11, 0, 1, 3, 3), [(0, True, -1), (0, False, 0)]),
        ("NoMem", load(cpu=(1000, 1000), memory=(1000, 1000), gpu=(10, 10)),
         job(1000, 105, 0, 1, 3, 1), [(0, False, 0)]),
    ],
)  # fmt: skip
def test_scale_dry_run(name, cluster, worker, moves) -> None:
    for diff, down, expected in moves:
        assert edl.step(cluster, worker, diff, 1.0, down) == expected, (name, diff, down)


@pytest.mark.parametrize(
    "name,cluster,worker,max_load,expected",
    [
        ("AllNoMem", load(cpu=(0, 1000), memory=(1000, 1000), gpu=(0, 10)),
         job(1000, 1, 0, 1, 3, 1), 1.0, 0),
        ("All", load(cpu=(1000, 4000), memory=(100, 1000), gpu=(8, 10)),
         job(1000, 105, 0, 1, 3, 1), 1.0, 2),
        ("AllNotFull", load(cpu=(1000, 3000), memory=(100, 1000), gpu=(0, 10)),
         job(1000, 105, 0, 1, 3, 1), 0.8, 1),
        ("AllDownNotFull", load(cpu=(3000, 3000), memory=(100, 1000), gpu=(0, 10), idle=NO_NODES),
         job(1000, 105, 0, 1, 3, 3), 0.8, -1),
        ("AllLessCPU", load(cpu=(2000, 3000), memory=(100, 1000), gpu=(8, 10)),
         job(1000, 1, 0, 1, 3, 1), 1.0, 1),
        ("AllLessGPU", load(cpu=(990, 2000), memory=(100, 1000), gpu=(9, 10)),
         job(1000, 1, 0, 1, 3, 1), 1.0, 1),
    ],
)  # fmt: skip
def test_scale_all_dry_run(name, cluster, worker, max_load, expected) -> None:
    assert edl.scale([worker], cluster, max_load) == {worker.key: expected}, name


@pytest.mark.parametrize(
    "low,high,workers,expected", [(1, 2, 2, 1.0), (1, 2, 1, 0.0), (1, 3, 2, 0.5)]
)
def test_fulfillment(low, high, workers, expected) -> None:
    worker = job(1, 1, 1, low, high, workers)
    assert worker.fulfillment(workers) == expected


def test_rigid_jobs_are_left_out_and_the_least_fulfilled_goes_first() -> None:
    jobs = [
        job(1, 1, 1, 1, 2, 2, "test/a"),
        job(1, 1, 1, 1, 20, 2, "test/b"),
        job(1, 1, 1, 1, 10, 2, "test/c"),
        job(1, 1, 1, 1, 1, 2, "test/d"),
    ]
    order = edl.ranked(jobs, {j.key: j.workers for j in jobs})
    assert [j.key for j in order] == ["test/b", "test/c", "test/a"]


def test_growth_goes_one_worker_at_a_time_to_the_least_fulfilled() -> None:
    """Two jobs of 1-GPU workers, 3 GPUs free: each pass gives one worker to each job that
    can grow, least fulfilled first, so the GPUs are shared and the odd one goes to the job
    less fulfilled after the first pass."""
    idle = np.array([[100.0, 100.0, 3.0]])
    cluster = load(cpu=(0, 100), memory=(0, 100), gpu=(5, 8), idle=idle)
    a = job(1, 1, 1, 1, 5, 3, "a")  # fulfillment 0.5, then 0.75
    b = job(1, 1, 1, 2, 6, 2, "b")  # fulfillment 0, then 0.25
    assert edl.scale([a, b], cluster, 1.0) == {"a": 1, "b": 2}


def test_a_load_above_the_bound_shrinks_the_most_fulfilled_first() -> None:
    cluster = load(cpu=(0, 100), memory=(0, 100), gpu=(10, 10), idle=NO_NODES)
    a = job(1, 1, 1, 1, 4, 4, "a")  # fulfillment 1
    b = job(1, 1, 1, 1, 4, 2, "b")  # fulfillment 1/3
    # 10 of 10 GPUs against a bound of 9.7: one worker goes, from the most fulfilled.
    assert edl.scale([a, b], cluster, 0.97) == {"a": -1, "b": 0}
