"""summarize(), percentiles() and the time weighting behind allocation/utilization."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from berth.api.manifest import Manifests
from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase, Queue
from berth.framework.config import SchedulerConfig
from berth.metrics.summary import percentiles, summarize, time_weighted_fractions, write_summary
from berth.outputs import write_outputs
from berth.sim.engine import NodeFailure, SimConfig, Simulation
from berth.sim.timeseries import TimeSeries
from tests.builders import GANG, config, node, pod, queued


def _summary(
    pods: list[Pod] | None = None,
    groups: list[PodGroup] | None = None,
    series: TimeSeries | None = None,
    end_time: float = 100.0,
    reasons: dict[str, str] | None = None,
) -> dict[str, Any]:
    return summarize(
        pods or [],
        groups or [],
        series or TimeSeries(["cpu"]),
        seed=1,
        events=10,
        wall_seconds=0.5,
        end_time=end_time,
        reasons=reasons,
    )


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], {"mean": None, "p50": None, "p95": None, "p99": None, "max": None, "count": 0}),
        ([7.0], {"mean": 7.0, "p50": 7.0, "p95": 7.0, "p99": 7.0, "max": 7.0, "count": 1}),
        ([1, 2, 3, 4], {"mean": 2.5, "p50": 2.5, "p95": 3.85, "p99": 3.97, "max": 4, "count": 4}),
        (
            list(range(101)),
            {"mean": 50.0, "p50": 50.0, "p95": 95.0, "p99": 99.0, "max": 100.0, "count": 101},
        ),
    ],
)
def test_percentiles(values: list[float], expected: dict[str, Any]) -> None:
    assert percentiles(np.array(values, dtype=float)) == pytest.approx(expected)


def test_pod_counts_by_phase() -> None:
    phases = [
        PodPhase.PENDING,
        PodPhase.PENDING,
        PodPhase.BOUND,
        PodPhase.RUNNING,
        PodPhase.SUCCEEDED,
        PodPhase.SUCCEEDED,
        PodPhase.SUCCEEDED,
        PodPhase.FAILED,
        PodPhase.EVICTED,
        PodPhase.DELETED,
    ]
    pods = [Pod(name=f"p{i}", phase=phase) for i, phase in enumerate(phases)]
    counts = _summary(pods=pods)["pods"]
    # Every pod object is in exactly one of the counts after "submitted".
    assert counts["submitted"] == sum(v for k, v in counts.items() if k != "submitted")
    assert counts == {
        "submitted": 10,
        "completed": 3,
        "failed": 1,
        "evicted": 1,
        "deleted": 1,
        "running": 2,
        "pending": 2,
    }


def test_job_counts_by_phase() -> None:
    phases = [
        GroupPhase.PENDING,
        GroupPhase.INQUEUE,
        GroupPhase.RUNNING,
        GroupPhase.COMPLETED,
        GroupPhase.COMPLETED,
        GroupPhase.FAILED,
    ]
    groups = [PodGroup(name=f"g{i}", phase=phase) for i, phase in enumerate(phases)]
    assert _summary(groups=groups)["jobs"] == {
        "submitted": 6,
        "completed": 2,
        "running": 1,
        "pending": 2,
        "failed": 1,
    }


def _group(
    name: str, submit: float, start: float | None, end: float | None, phase: GroupPhase
) -> PodGroup:
    return PodGroup(name=name, submit_time=submit, start_time=start, end_time=end, phase=phase)


def test_delays_jct_and_makespan() -> None:
    groups = [
        _group("a", 10, 20, 110, GroupPhase.COMPLETED),  # waited 10, jct 100
        _group("b", 5, 35, 305, GroupPhase.COMPLETED),  # waited 30, jct 300
        _group("c", 50, 70, None, GroupPhase.RUNNING),  # waited 20, no jct
        _group("d", 2, None, None, GroupPhase.PENDING),  # never started
        _group("e", 60, 60, 400, GroupPhase.FAILED),  # ended but not completed: no jct
    ]
    pods = [
        Pod(name="x", submit_time=1, bind_time=4, phase=PodPhase.SUCCEEDED),
        Pod(name="y", submit_time=2, bind_time=None),
    ]
    summary = _summary(pods=pods, groups=groups)
    assert summary["queueing_delay"]["count"] == 4
    assert summary["queueing_delay"]["mean"] == 15.0  # (10 + 30 + 20 + 0) / 4
    assert summary["queueing_delay"]["max"] == 30.0
    assert summary["pod_queueing_delay"] == {
        "mean": 3.0,
        "p50": 3.0,
        "p95": 3.0,
        "p99": 3.0,
        "max": 3.0,
        "count": 1,
    }
    assert summary["jct"]["count"] == 2
    assert summary["jct"]["mean"] == 200.0
    assert summary["makespan"] == 303.0  # last completed end 305 - first submit 2


def test_makespan_zero_without_completed_groups() -> None:
    groups = [_group("a", 0, 5, None, GroupPhase.RUNNING)]
    assert _summary(groups=groups)["makespan"] == 0.0


def _series(samples: list[tuple[float, float, float, float]]) -> TimeSeries:
    """(time, allocated, used, capacity) samples of a single cpu resource."""
    series = TimeSeries(["cpu"])
    for time, allocated, used, capacity in samples:
        series.sample(time, 0, 0, np.array([allocated]), np.array([used]), np.array([capacity]))
    return series


@pytest.mark.parametrize(
    ("samples", "end_time", "allocation", "utilization"),
    [
        # Half the run at 50%, then half at 100%: the last sample holds until end_time.
        ([(0, 50, 25, 100), (10, 100, 50, 100)], 20, 0.75, 0.375),
        # Unequal intervals: 50% for 30 s, 100% for 10 s.
        ([(0, 50, 50, 100), (30, 100, 100, 100)], 40, 0.625, 0.625),
        # Samples without capacity carry no weight instead of counting as 0%.
        ([(0, 0, 0, 0), (10, 40, 20, 100)], 20, 0.4, 0.2),
        # A single sample at the very end still reports its value.
        ([(5, 30, 10, 100)], 5, 0.3, 0.1),
        # Capacity changes over time: each sample is a ratio of its own capacity.
        ([(0, 100, 100, 200), (10, 100, 100, 100)], 20, 0.75, 0.75),
    ],
)
def test_time_weighted_allocation(
    samples: list[tuple[float, float, float, float]],
    end_time: float,
    allocation: float,
    utilization: float,
) -> None:
    summary = _summary(series=_series(samples), end_time=end_time)
    assert summary["allocation"] == {"cpu": pytest.approx(allocation)}
    assert summary["utilization"] == {"cpu": pytest.approx(utilization)}


def test_resources_without_capacity_are_skipped() -> None:
    series = TimeSeries(["cpu", "nvidia.com/gpu"])
    series.sample(0, 0, 0, np.array([1, 0]), np.array([1, 0]), np.array([2, 0]))
    summary = _summary(series=series)
    assert set(summary["allocation"]) == {"cpu"}
    assert set(summary["utilization"]) == {"cpu"}
    assert summary["resources"] == ["cpu", "nvidia.com/gpu"]


def test_time_weighted_fractions_without_samples_is_nan() -> None:
    empty = np.zeros((0, 2))
    assert np.isnan(time_weighted_fractions(np.zeros(0), empty, empty, 10.0)).all()


def test_empty_run() -> None:
    summary = _summary()
    assert summary["pods"]["submitted"] == 0
    assert summary["jobs"]["submitted"] == 0
    assert summary["jct"]["count"] == 0
    assert summary["makespan"] == 0.0
    assert summary["allocation"] == {}


def test_floats_are_rounded_to_three_decimals() -> None:
    groups = [_group("a", 0, 1 / 3, 2 / 3, GroupPhase.COMPLETED)]
    summary = summarize(
        [], groups, TimeSeries(["cpu"]), seed=3, events=1, wall_seconds=0.123456, end_time=1 / 7
    )
    assert summary["queueing_delay"]["mean"] == 0.333
    assert summary["jct"]["p99"] == 0.667
    assert summary["end_time"] == 0.143
    assert summary["wall_seconds"] == 0.123


def test_summary_json_is_byte_identical_and_sorted(tmp_path: Path) -> None:
    def write(path: Path) -> bytes:
        groups = [
            _group(f"g{i}", i * 0.1, i * 0.7, i * 1.3, GroupPhase.COMPLETED) for i in range(50)
        ]
        pods = [Pod(name=f"p{i}", submit_time=i * 0.1, bind_time=i * 0.7) for i in range(50)]
        series = _series([(t * 0.3, t % 7, t % 5, 10) for t in range(40)])
        summary = summarize(
            pods, groups, series, seed=9, events=123, wall_seconds=1.0, end_time=20.0
        )
        write_summary(path, summary)
        return path.read_bytes()

    first = write(tmp_path / "a.json")
    assert first == write(tmp_path / "b.json")
    loaded = json.loads(first)
    assert list(loaded) == sorted(loaded)
    assert first.endswith(b"}\n")


def test_fragmentation_is_the_time_weighted_share_of_idle_capacity_stranded() -> None:
    series = TimeSeries(["nvidia.com/gpu"])
    # 8 GPUs: first half 4 allocated, all 4 idle ones stranded; second half 2 allocated,
    # 3 of the 6 idle stranded. Mean of 1.0 and 0.5 over equal halves.
    series.sample(
        0,
        0,
        0,
        np.array([4000.0]),
        np.array([0.0]),
        np.array([8000.0]),
        stranded=np.array([4000.0]),
    )
    series.sample(
        50,
        0,
        0,
        np.array([2000.0]),
        np.array([0.0]),
        np.array([8000.0]),
        stranded=np.array([3000.0]),
    )
    summary = summarize([], [], series, seed=0, events=0, wall_seconds=0.0, end_time=100.0)
    assert summary["fragmentation"] == {"nvidia.com/gpu": 0.75}


def test_evictions_are_counted_by_the_cause_their_reason_names() -> None:
    pods = [Pod(name=f"e{i}", phase=PodPhase.EVICTED) for i in range(8)]
    pods.append(Pod(name="done", phase=PodPhase.SUCCEEDED))
    reasons = {
        "default/e0": "preempted by default/train-7",
        "default/e1": "preempted by default/train-8",
        "default/e2": "reclaimed by queue research",
        "default/e3": "node n4 failed",
        # e4: no reason at all
        "default/e5": "exited with code 1 after 5s (berth.io/fail-after)",
        "default/done": "preempted by default/x",  # not evicted: not counted
        "default/e6": "lent node inf-2 taken back for inference",
        "default/e7": "scaled in by the aryl scaling policy to 3 workers",
    }
    assert _summary(pods=pods, reasons=reasons)["evictions"] == {
        "preempted": 2,
        "reclaimed": 1,
        "loaning": 1,
        "scaled_in": 1,
        "other": 3,
        "total": 8,
    }


def test_without_reasons_every_eviction_is_other() -> None:
    pods = [Pod(name="a", phase=PodPhase.EVICTED), Pod(name="b", phase=PodPhase.RUNNING)]
    assert _summary(pods=pods)["evictions"] == {
        "preempted": 0,
        "reclaimed": 0,
        "loaning": 0,
        "scaled_in": 0,
        "other": 1,
        "total": 1,
    }


Scenario = tuple[Manifests, SchedulerConfig, SimConfig | None]


def _cpu(name: str, amount: int, **fields: Any) -> Pod:
    return pod(name, cpu=amount, mem=0, duration=100.0, **fields)


def _preemption() -> Scenario:
    """Two low-priority pods fill the node; a high-priority one needing all of it arrives."""
    pods = [_cpu("low0", 2000), _cpu("low1", 2000), _cpu("high", 4000, priority=10, submit_time=10)]
    actions = "enqueue, allocate, preempt, backfill"
    cfg = config(["priority", GANG, "resource-fit", "least-allocated"], actions=actions)
    return Manifests(nodes=[node("n", cpu=4000)], pods=pods), cfg, None


def _reclaim() -> Scenario:
    """Queue a holds the whole node; queue b, deserving half, arrives wanting half."""
    pods = [queued(_cpu(f"a{i}", 1000), "a") for i in range(4)]
    pods += [queued(_cpu(f"b{i}", 1000, submit_time=10), "b") for i in range(2)]
    cfg = config(
        ["priority", GANG, "proportion", "resource-fit"], actions="enqueue, allocate, reclaim"
    )
    manifests = Manifests(nodes=[node("n", cpu=4000)], queues=[Queue("a"), Queue("b")], pods=pods)
    return manifests, cfg, None


def _node_failure() -> Scenario:
    manifests = Manifests(nodes=[node("n", cpu=4000)], pods=[_cpu("p0", 1000), _cpu("p1", 1000)])
    failure = SimConfig(node_failures=(NodeFailure("n", 10.0),))
    return manifests, config(["resource-fit"]), failure


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        (
            _preemption,
            {"preempted": 2, "reclaimed": 0, "loaning": 0, "scaled_in": 0, "other": 0, "total": 2},
        ),
        (
            _reclaim,
            {"preempted": 0, "reclaimed": 2, "loaning": 0, "scaled_in": 0, "other": 0, "total": 2},
        ),
        (
            _node_failure,
            {"preempted": 0, "reclaimed": 0, "loaning": 0, "scaled_in": 0, "other": 2, "total": 2},
        ),
    ],
    ids=["preempt", "reclaim", "node-failure"],
)
def test_simulated_evictions_reach_summary_json(
    tmp_path: Path, scenario: Callable[[], Scenario], expected: dict[str, int]
) -> None:
    manifests, cfg, sim_config = scenario()
    result = Simulation(manifests, cfg, sim_config=sim_config).run()
    write_outputs(result, tmp_path)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["evictions"] == expected
    assert summary["pods"]["evicted"] == expected["total"]
