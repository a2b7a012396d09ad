"""The comparison table: means over seeds, spread, ratios of means, better or worse, and the
per-queue and per-size breakdowns, on hand-made runs whose figures are worked out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from berth.api.objects import GroupPhase, Pod, PodGroup
from berth.metrics.breakdown import (
    BY_GPUS,
    BY_PODS,
    JobSample,
    breakdown,
    job_sample,
    size_bucket,
    size_dimension,
)
from berth.metrics.comparison import RunOutcome, comparison_table, verdict

NAN = float("nan")


def _jobs(queues=(), gpus=(), pods=(), wait=(), jct=()) -> JobSample:
    return JobSample(
        list(queues),
        np.array(gpus, float),
        np.array(pods, float),
        np.array(wait, float),
        np.array(jct, float),
    )


def _run(config: str, seed: int, summary: dict, jobs: JobSample | None = None) -> RunOutcome:
    return RunOutcome(config, seed, summary, jobs or _jobs(), np.zeros(0), np.zeros((0, 0)), [])


def _rows(table: dict) -> dict[str, dict]:
    return {row["metric"]: row for row in table["rows"]}


def test_ratios_are_relative_to_the_first_configuration():
    table = comparison_table(
        [
            _run("a", 0, {"queueing_delay": {"mean": 100.0}}),
            _run("b", 0, {"queueing_delay": {"mean": 50.0}}),
            _run("c", 0, {"queueing_delay": {"mean": None}}),
        ]
    )
    row = _rows(table)["queueing delay mean"]
    assert row["ratio_to_first"] == {"a": 1.0, "b": 0.5, "c": None}
    assert row["unit"] == "seconds" and row["lower_is_better"] is True
    assert row["verdict"] == {"b": "better", "c": None}
    assert row["spread"] == {"a": None, "b": None, "c": None}


def test_preempted_and_reclaimed_rows_come_from_summary_evictions():
    def summary(preempted, reclaimed):
        evictions = {"preempted": preempted, "reclaimed": reclaimed, "other": 1}
        return {"pods": {"evicted": preempted + reclaimed + 1}, "evictions": evictions}

    rows = _rows(comparison_table([_run("a", 0, summary(4, 2)), _run("b", 0, summary(1, 0))]))
    assert rows["pods evicted"]["values"] == {"a": 7.0, "b": 2.0}
    assert rows["pods preempted"]["ratio_to_first"] == {"a": 1.0, "b": 0.25}
    assert rows["pods reclaimed"]["ratio_to_first"] == {"a": 1.0, "b": 0.0}
    assert rows["pods preempted"]["verdict"] == {"b": "better"}


def test_seeds_give_means_spread_and_ratio_of_means():
    # a: 100 and 300 (mean 200, sd 141.42); b: 90 and 110 (mean 100, sd 14.14).
    runs = [
        _run("a", 0, {"jct": {"mean": 100.0}, "jobs": {"completed": 10}}),
        _run("a", 1, {"jct": {"mean": 300.0}, "jobs": {"completed": 12}}),
        _run("b", 0, {"jct": {"mean": 90.0}, "jobs": {"completed": 14}}),
        _run("b", 1, {"jct": {"mean": 110.0}, "jobs": {"completed": 14}}),
    ]
    table = comparison_table(runs)
    assert table["configs"] == ["a", "b"] and table["seeds"] == {"a": [0, 1], "b": [0, 1]}
    jct = _rows(table)["JCT mean"]
    assert jct["values"] == {"a": 200.0, "b": 100.0}
    assert jct["runs"] == {"a": [100.0, 300.0], "b": [90.0, 110.0]}
    assert jct["spread"]["a"] == pytest.approx(math.sqrt(20000))
    assert jct["spread"]["b"] == pytest.approx(math.sqrt(200))
    assert jct["ratio_to_first"] == {"a": 1.0, "b": 0.5}
    # Standard error of the difference: sqrt(20000/2 + 200/2) = 100.5; 2 of them exceed 100.
    assert jct["verdict"] == {"b": "same"}
    completed = _rows(table)["jobs completed"]
    # 11 ± 1.41 against 14 ± 0: a difference of 3 is above 2 standard errors (2.0).
    assert completed["verdict"] == {"b": "better"}


@pytest.mark.parametrize(
    ("base", "other", "lower", "expected"),
    [
        ((100.0,), (80.0,), True, "better"),
        ((100.0,), (80.0,), False, "worse"),
        ((100.0,), (120.0,), True, "worse"),
        ((100.0,), (100.5,), True, "same"),  # within 1%
        ((0.0,), (0.0,), True, "same"),
        ((0.0,), (1.0,), True, "worse"),  # anything from nothing is a change
        ((100.0, 102.0), (90.0, 91.0), True, "better"),  # 2·se = 2.24 < 10.5
        ((100.0, 140.0), (90.0, 110.0), True, "same"),  # 2·se = 31.6 > 20
        ((100.0,), (None,), True, None),
    ],
)
def test_verdict(base, other, lower, expected):
    from berth.metrics.breakdown import aggregate

    assert verdict(aggregate(list(base)), aggregate(list(other)), lower) == expected


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (0, "none"),
        (0.5, "<1"),
        (1, "1"),
        (2, "2"),
        (3, "3–4"),
        (4, "3–4"),
        (5, "5–8"),
        (8, "5–8"),
        (9, "9–16"),
        (64, "33–64"),
        (65, "65–128"),
        (1.5, "2"),  # one and a half GPUs: more than one
    ],
)
def test_size_buckets(value, label):
    assert size_bucket(value)[1] == label


def test_job_sample_counts_gpus_and_distinct_pods():
    groups = [
        PodGroup("train", start_time=5.0, end_time=65.0, phase=GroupPhase.COMPLETED),
        PodGroup("web", submit_time=10.0, queue="online", start_time=10.0),
        PodGroup("late", submit_time=20.0),
    ]
    pods = [
        Pod("train-0", group="train", requests={"nvidia.com/gpu": 2000}),
        Pod("train-1", group="train", requests={"nvidia.com/gpu": 2000}),
        Pod("train-1", group="train", requests={"nvidia.com/gpu": 2000}),  # a replacement
        Pod("web-0", group="web", requests={"cpu": 500}),
    ]
    sample = job_sample(pods, groups)
    assert sample.queues == ["default", "online", "default"]
    assert sample.gpus.tolist() == [4.0, 0.0, 0.0]
    assert sample.pods.tolist() == [2.0, 1.0, 0.0]
    assert sample.wait[:2].tolist() == [5.0, 0.0] and math.isnan(sample.wait[2])
    assert sample.jct[0] == 65.0 and np.isnan(sample.jct[1:]).all()
    assert sample.queueing.tolist() == [5.0, 0.0] and sample.completion.tolist() == [65.0]
    assert size_dimension([sample]) == BY_GPUS
    assert size_dimension([_jobs(["q"], [0.0], [3.0], [1.0], [2.0])]) == BY_PODS


def test_breakdown_per_queue_and_size_over_seeds():
    # Seed 0: research waits 10 and 30 (one 8-GPU job, one 1-GPU), prod waits 0 (1 GPU).
    seed0 = _jobs(
        ["research", "research", "prod"], [8, 1, 1], [1, 1, 1], [10, 30, 0], [110, NAN, 50]
    )
    # Seed 1: research waits 20 (8 GPUs), prod never started.
    seed1 = _jobs(["research", "prod"], [8, 1], [1, 1], [20, NAN], [120, NAN])
    by_queue = breakdown({"a": [seed0, seed1]}, "queue")
    rows = {row["group"]: row["values"]["a"] for row in by_queue["rows"]}
    assert list(rows) == ["prod", "research"]
    research = rows["research"]
    assert research["jobs"]["runs"] == [2.0, 1.0] and research["jobs"]["mean"] == 1.5
    assert research["queueing_mean"]["runs"] == [20.0, 20.0]
    assert research["queueing_mean"]["spread"] == 0.0
    assert research["jct_mean"]["runs"] == [110.0, 120.0]
    assert research["jct_mean"]["mean"] == 115.0
    prod = rows["prod"]
    assert prod["queueing_mean"]["runs"] == [0.0, None] and prod["queueing_mean"]["mean"] == 0.0
    assert prod["queueing_mean"]["spread"] is None  # one seed had a value
    by_size = breakdown({"a": [seed0, seed1]}, BY_GPUS)
    assert by_size["by"] == BY_GPUS
    sizes = {row["group"]: row["values"]["a"] for row in by_size["rows"]}
    assert list(sizes) == ["1", "5–8"]  # in size order
    assert sizes["1"]["queueing_mean"]["runs"] == [15.0, None]
    assert sizes["5–8"]["queueing_mean"]["runs"] == [10.0, 20.0]
    assert sizes["5–8"]["queueing_p95"]["runs"] == [10.0, 20.0]


def test_comparison_table_breaks_down_by_queue_and_size():
    jobs = _jobs(["q1", "q2"], [0, 0], [1, 4], [5.0, 50.0], [10.0, 100.0])
    table = comparison_table([_run("a", 0, {}, jobs), _run("b", 0, {}, jobs)])
    assert [row["group"] for row in table["breakdowns"]["queue"]["rows"]] == ["q1", "q2"]
    size = table["breakdowns"]["size"]
    assert size["by"] == BY_PODS and [row["group"] for row in size["rows"]] == ["1", "3–4"]
    assert size["rows"][1]["values"]["b"]["jct_mean"]["mean"] == 100.0
