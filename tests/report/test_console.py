"""format_duration and the terminal summary table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rich.console import Console

from berth.api.objects import GroupPhase, PodGroup
from berth.durations import format_duration
from berth.metrics.summary import summarize
from berth.report.console import rollouts_text, shown_makespan, summary_table
from berth.sim.timeseries import TimeSeries


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "—"),
        (math.nan, "—"),
        (0, "0s"),
        (0.04, "<0.1s"),
        (0.5, "0.5s"),
        (3.25, "3.2s"),
        (35, "35s"),
        (59.4, "59s"),
        (59.6, "1m"),
        (60, "1m"),
        (725, "12m 5s"),
        (3599.6, "1h"),
        (3 * 3600 + 20 * 60, "3h 20m"),
        (3 * 3600 + 20 * 60 + 29, "3h 20m"),
        (24 * 3600 - 10, "1d"),
        (2 * 86400 + 4 * 3600, "2d 4h"),
        (60 * 86400, "60d"),
        (-90, "-1m 30s"),
    ],
)
def test_format_duration(seconds: float | None, text: str) -> None:
    assert format_duration(seconds) == text


def _render(summary: dict) -> str:
    console = Console(width=160, record=True, file=None, force_terminal=False)
    with console.capture() as capture:
        console.print(summary_table(summary))
    return capture.get()


def test_summary_table_shows_headline_numbers() -> None:
    series = TimeSeries(["cpu", "nvidia.com/gpu"])
    series.sample(0, 0, 1, np.array([500, 1000]), np.array([250, 500]), np.array([1000, 2000]))
    groups = [
        PodGroup(name="a", submit_time=0, start_time=35, end_time=4800, phase=GroupPhase.COMPLETED)
    ]
    summary = summarize([], groups, series, seed=1, events=12345, wall_seconds=1.5, end_time=60)
    text = _render(summary)
    for expected in ("35s", "1h 20m", "12,345", "1.50s", "50.0%", "25.0%", "nvidia.com/gpu"):
        assert expected in text


def test_summary_table_with_empty_run() -> None:
    summary = summarize(
        [], [], TimeSeries(["cpu"]), seed=0, events=0, wall_seconds=0.0, end_time=0.0
    )
    assert "no data" in _render(summary)


def test_rollouts_line() -> None:
    rollout = {
        "duration": 120.0,
        "pods_recreated": 24,
        "pods_updated_in_place": 0,
        "peak_unavailable": 6,
    }
    unfinished = {**rollout, "duration": None, "pods_recreated": 2, "peak_unavailable": 1}
    workloads = [{"rollout_list": [rollout]}, {"rollout_list": [unfinished]}]
    assert rollouts_text(workloads) == (
        "1/2 done · longest 2m · 26 pods recreated · 0 in place · peak unavailable 6"
    )
    assert rollouts_text([{"rollout_list": []}]) == "1 workload object, no rollout"


@pytest.mark.parametrize(
    ("jobs", "makespan", "shown"),
    [
        ({"completed": 0, "submitted": 3}, 0.0, "none (no job completed)"),
        ({"completed": 2, "submitted": 3}, 90.0, "1m 30s"),
    ],
)
def test_makespan_says_when_no_job_completed(jobs, makespan, shown):
    assert shown_makespan({"jobs": jobs, "makespan": makespan}) == shown


def test_summary_table_does_not_list_the_pods_pseudo_resource() -> None:
    """The pod-count limit is not a resource a user sizes: summary.json keeps it, the table
    shows the real resources only."""
    series = TimeSeries(["cpu", "pods"])
    series.sample(0, 0, 1, np.array([500, 10]), np.array([250, 10]), np.array([1000, 110]))
    summary = summarize([], [], series, seed=1, events=1, wall_seconds=0.1, end_time=60)
    assert "pods" in summary["allocation"]
    rows = [line for line in _render(summary).splitlines() if "allocated" in line]
    assert len(rows) == 1 and "cpu" in rows[0], rows
