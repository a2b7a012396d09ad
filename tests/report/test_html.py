"""write_report: the self-contained HTML page and its PNGs, for a normal run and an empty one."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.metrics.summary import summarize
from berth.metrics.tables import JobOutcome
from berth.report.figures import MAX_POINTS, bin_edges, binned, time_unit
from berth.report.html import write_report
from berth.report.jobs import ALL_JOBS_ROWS, NOTABLE_ROWS, PENDING_ROWS
from berth.report.plots import PLOT_FILES, QUEUE_SHARES_FILE
from berth.sim.timeseries import TimeSeries

RESOURCES = ["cpu", "memory", "nvidia.com/gpu", "pods"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _run(hours: float, jobs: int) -> tuple[dict, TimeSeries, list[Pod], list[PodGroup]]:
    series = TimeSeries(RESOURCES)
    capacity = np.array([64_000, 256 * 1024, 8000, 110], dtype=float)
    for i, t in enumerate(np.arange(0, hours * 3600, 60.0)):
        load = (i % 50) / 50
        series.sample(t, i % 7, i % 11, capacity * load, capacity * load * 0.6, capacity)
    groups = [
        PodGroup(
            name=f"job-{i}",
            submit_time=i * 30.0,
            start_time=i * 30.0 + (i % 5) ** 4,
            end_time=i * 30.0 + (i % 5) ** 4 + 600 + i,
            phase=GroupPhase.COMPLETED,
        )
        for i in range(jobs)
    ]
    pods = [Pod(name=f"job-{i}-0", group=f"job-{i}", phase=PodPhase.SUCCEEDED) for i in range(jobs)]
    summary = summarize(
        pods, groups, series, seed=1, events=100, wall_seconds=0.1, end_time=hours * 3600
    )
    return summary, series, pods, groups


def _images(html: str) -> list[bytes]:
    """The PNGs the page embeds, decoded."""
    sources = re.findall(r'<img src="([^"]*)"', html)
    prefix = "data:image/png;base64,"
    assert all(src.startswith(prefix) for src in sources), "an image the page does not hold"
    return [base64.b64decode(src[len(prefix) :]) for src in sources]


def _assert_written(out_dir: Path, html_path: Path) -> str:
    """Every plot is written beside the page and embedded in it byte for byte."""
    assert html_path == out_dir / "report.html"
    html = html_path.read_text()
    embedded = _images(html)
    for name in PLOT_FILES:
        png = (out_dir / name).read_bytes()
        assert png[:8] == PNG_MAGIC, name
        assert png in embedded, name
    return html


@pytest.mark.parametrize("hours", [0.5, 6.0, 24 * 5])
def test_report_for_normal_run(tmp_path: Path, hours: float) -> None:
    summary, series, pods, groups = _run(hours, jobs=40)
    html = _assert_written(tmp_path, write_report(tmp_path, summary, series, pods, groups))
    assert "<script" not in html
    assert "http" not in html and 'src="data:' in html  # no external assets
    assert "Pending pods" not in html


def test_report_for_empty_run(tmp_path: Path) -> None:
    series = TimeSeries(RESOURCES)
    summary = summarize([], [], series, seed=0, events=0, wall_seconds=0.0, end_time=0.0)
    out_dir = tmp_path / "out"  # not created yet
    html = _assert_written(out_dir, write_report(out_dir, summary, series, [], []))
    assert "No capacity was sampled" in html


def test_waiting_jobs_are_listed_one_row_each_and_escaped(tmp_path: Path) -> None:
    series = TimeSeries(RESOURCES)
    pods = [Pod(name="<x>", namespace="a&b", group='"g"')]
    groups = [PodGroup(name='"g"', namespace="a&b", queue="q<1>", submit_time=1.0)]
    for i in range(PENDING_ROWS + 5):
        pods += [Pod(name=f"p{i}-{k}", group=f"j{i}", submit_time=i) for k in range(2)]
        groups.append(PodGroup(name=f"j{i}", submit_time=float(i)))
    # A Volcano Job's group refused at admission: no pods exist for it.
    groups.append(PodGroup(name="refused", owned=True, submit_time=0.5))
    outcomes = {"default/refused": JobOutcome(reason="queue research is closed")}
    reasons = {"default/p0-0": "0/3 nodes available: 3 insufficient cpu"}
    summary = summarize(pods, groups, series, seed=0, events=0, wall_seconds=0.0, end_time=99.0)
    html = write_report(tmp_path, summary, series, pods, groups, reasons, outcomes).read_text()
    assert "<x>" not in html and "q<1>" not in html
    assert "a&amp;b" in html and "&quot;g&quot;" in html and "q&lt;1&gt;" in html
    assert f"Waiting at the end: {PENDING_ROWS + 7} jobs, {2 * PENDING_ROWS + 11} pods" in html
    assert "7 more (jobs.csv lists every job)" in html
    # Longest waiting first: j0 (submitted at 0), the refused Job (0.5), "g" (1.0), j1, ...
    assert html.index(">j0<") < html.index(">refused<") < html.index("q&lt;1&gt;")
    assert "none created yet" in html and "queue research is closed" in html
    assert "3 insufficient cpu" in html
    assert f">j{PENDING_ROWS - 3}<" in html and f">j{PENDING_ROWS - 2}<" not in html


def test_single_sample_and_single_job(tmp_path: Path) -> None:
    series = TimeSeries(RESOURCES)
    series.sample(0, 1, 0, np.zeros(4), np.zeros(4), np.array([1000, 1024, 0, 10]))
    groups = [PodGroup(name="g", start_time=0.0, end_time=5.0, phase=GroupPhase.COMPLETED)]
    summary = summarize([], groups, series, seed=0, events=1, wall_seconds=0.0, end_time=0.0)
    _assert_written(tmp_path, write_report(tmp_path, summary, series, [], groups))


def test_pngs_are_deterministic(tmp_path: Path) -> None:
    for name in ("a", "b"):
        summary, series, pods, groups = _run(3.0, jobs=20)
        write_report(tmp_path / name, summary, series, pods, groups)
    for png in PLOT_FILES:
        assert (tmp_path / "a" / png).read_bytes() == (tmp_path / "b" / png).read_bytes()


@pytest.mark.parametrize(
    ("span", "unit"),
    [(30, "seconds"), (600, "minutes"), (7200, "minutes"), (7201, "hours"), (10 * 86400, "days")],
)
def test_time_unit(span: float, unit: str) -> None:
    assert time_unit(span)[1] == unit


def _queued_series(held: dict[str, float]) -> TimeSeries:
    """Queues a, b and default; each queue in ``held`` holds that fraction of the cpu from the
    second sample on."""
    series = TimeSeries(RESOURCES, ["a", "b", "default"])
    capacity = np.array([64_000, 256 * 1024, 8000, 110], dtype=float)
    cpu_only = np.array([1.0, 0, 0, 0])
    for t in range(10):
        queues = {q: capacity * cpu_only * share * (t > 0) for q, share in held.items()}
        total = sum(queues.values(), np.zeros(4))
        series.sample(60.0 * t, 0, 1, total, total, capacity, queue_allocated=queues)
    return series


@pytest.mark.parametrize(
    ("held", "drawn"),
    [
        ({"a": 0.5, "b": 0.25}, True),
        ({"a": 0.5, "b": 0.0, "default": 0.2}, True),
        ({"a": 0.5, "b": 0.0}, False),  # one queue holding anything: nothing to compare
        ({}, False),
    ],
)
def test_queue_shares_plot_only_with_two_queues_holding_resources(
    tmp_path: Path, held: dict[str, float], drawn: bool
) -> None:
    series = _queued_series(held)
    summary = summarize([], [], series, seed=0, events=0, wall_seconds=0.0, end_time=600.0)
    html = write_report(tmp_path, summary, series, [], []).read_text()
    png = tmp_path / QUEUE_SHARES_FILE
    assert png.is_file() is drawn
    assert ("Queue shares over time" in html) is drawn
    if drawn:
        assert png.read_bytes() in _images(html)
        assert 'width="900" height="600"' in html


def test_queue_shares_plot_of_an_earlier_run_is_removed(tmp_path: Path) -> None:
    for held in ({"a": 0.5, "b": 0.25}, {"a": 0.5}):
        series = _queued_series(held)
        summary = summarize([], [], series, seed=0, events=0, wall_seconds=0.0, end_time=600.0)
        write_report(tmp_path, summary, series, [], [])
    assert not (tmp_path / QUEUE_SHARES_FILE).exists()


def test_queue_shares_plot_is_deterministic(tmp_path: Path) -> None:
    for name in ("a", "b"):
        series = _queued_series({"a": 0.5, "b": 0.25})
        summary = summarize([], [], series, seed=0, events=0, wall_seconds=0.0, end_time=600.0)
        write_report(tmp_path / name, summary, series, [], [])
    first = (tmp_path / "a" / QUEUE_SHARES_FILE).read_bytes()
    assert first == (tmp_path / "b" / QUEUE_SHARES_FILE).read_bytes()


def test_counts_section_has_evictions_by_cause(tmp_path: Path) -> None:
    series = TimeSeries(RESOURCES)
    pods = [Pod(name=f"e{i}", phase=PodPhase.EVICTED) for i in range(4)]
    reasons = {
        "default/e0": "preempted by default/high",
        "default/e1": "preempted by default/high",
        "default/e2": "reclaimed by queue b",
        "default/e3": "node n0 failed",
    }
    summary = summarize(
        pods, [], series, seed=0, events=0, wall_seconds=0.0, end_time=10.0, reasons=reasons
    )
    html = write_report(tmp_path, summary, series, pods, [], reasons).read_text()
    counts = html[html.index('id="counts"') : html.index('id="delays"')]
    assert "Evictions: 2 preempted · 1 reclaimed · 1 other (node failures) · 4 total" in counts


def _job(i: int, **fields) -> PodGroup:
    return PodGroup(name=f"j{i:04d}", submit_time=float(i), **fields)


def test_few_jobs_are_all_listed_with_their_outcome(tmp_path: Path) -> None:
    groups = [
        _job(0, start_time=10.0, end_time=70.0, phase=GroupPhase.COMPLETED),
        _job(1, start_time=1.0, phase=GroupPhase.RUNNING),
        _job(2, phase=GroupPhase.PENDING),
    ]
    outcomes = {
        "default/j0000": JobOutcome(tasks=4, retries=1, preemptions=2, waited_for="gang 1/4"),
        "default/j0002": JobOutcome(tasks=2, reason="queue q is overused"),
    }
    series = TimeSeries(RESOURCES)
    summary = summarize([], groups, series, seed=0, events=0, wall_seconds=0.0, end_time=100.0)
    html = write_report(tmp_path, summary, series, [], groups, None, outcomes).read_text()
    jobs = html[html.index('id="jobs"') : html.index("</table>", html.index('id="jobs"'))]
    rows = re.findall(r"<tr>(.*?)</tr>", jobs)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    # job, queue, phase, waited for, pods, retries, preemptions, queueing delay, JCT
    assert cells[0] == ["default/j0000", "default", "Completed", "gang 1/4", "4", "1", "2"] + [
        "10s",
        "1m 10s",
    ]
    assert cells[1][2:4] == ["Running", "—"] and cells[1][7:] == ["0s", "—"]
    assert cells[2][2:4] == ["Pending", "queue q is overused"]
    assert cells[2][7:] == ["waiting 1m 38s", "—"]
    assert "jobs.csv lists every one" in html


def test_many_jobs_list_the_notable_ones(tmp_path: Path) -> None:
    count = ALL_JOBS_ROWS + 100
    groups = [
        _job(i, start_time=i + i % 37, end_time=i + i % 37 + 100.0, phase=GroupPhase.COMPLETED)
        for i in range(count)
    ]
    groups.append(_job(count, phase=GroupPhase.FAILED, start_time=float(count)))
    outcomes = {f"default/j{i:04d}": JobOutcome(preemptions=1) for i in (3, 5)}
    series = TimeSeries(RESOURCES)
    summary = summarize([], groups, series, seed=0, events=0, wall_seconds=0.0, end_time=1e4)
    html = write_report(tmp_path, summary, series, [], groups, None, outcomes).read_text()
    assert f"{count + 1:,} jobs; jobs.csv lists every one" in html
    assert "<h3>Failed</h3>" in html and "<h3>Preempted or restarted</h3>" in html
    assert f"<h3>Longest queueing delay ({count + 1} jobs, {NOTABLE_ROWS} shown)</h3>" in html
    waits = html[html.index("<h3>Longest queueing delay") : html.index("<h3>Longest completion")]
    # The 36-second waits come first (i % 37 == 36), then the 35-second ones, and so on.
    listed = re.findall(r">default/(j\d+)<", waits)
    assert listed == ["j0036", "j0073", "j0110", "j0035", "j0072", "j0109"] + [
        "j0034",
        "j0071",
        "j0108",
        "j0033",
    ]


def test_binned_series_keeps_mean_and_extremes() -> None:
    times = np.arange(8.0)
    values = np.array([0.0, 1.0, 2.0, np.nan, 4.0, 4.0, np.nan, np.nan])
    starts, means, lows, highs = binned(times, values, np.array([0.0, 2.0, 4.0, 6.0, 8.0]))
    assert starts.tolist() == [0.0, 2.0, 4.0, 6.0]
    assert means[:3].tolist() == [0.5, 2.0, 4.0] and np.isnan(means[3])
    assert lows[:3].tolist() == [0.0, 2.0, 4.0] and highs[:3].tolist() == [1.0, 2.0, 4.0]


def test_a_long_run_is_binned_and_says_so(tmp_path: Path) -> None:
    summary, series, pods, groups = _run(24 * 60, jobs=10)  # 60 days, a sample a minute
    assert len(series) > MAX_POINTS
    html = write_report(tmp_path, summary, series, pods, groups).read_text()
    assert "lines: mean of each" in html and "bands: lowest to highest sample" in html


# The time series a figure draws: past MAX_POINTS samples, one mean per time bin with a band
# from the bin's lowest to its highest sample. No peak or trough may be lost in the band.
samples = st.lists(
    st.tuples(
        st.floats(0, 1e6, allow_nan=False),
        st.one_of(st.floats(-1e3, 1e3, allow_nan=False), st.just(float("nan"))),
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(samples, st.integers(2, 60))
def test_binned_bands_hold_every_sample(pairs: list[tuple[float, float]], points: int) -> None:
    pairs.sort(key=lambda pair: pair[0])
    times = np.array([t for t, _ in pairs])
    values = np.array([v for _, v in pairs])
    edges = bin_edges(times[0], times[-1], points)
    starts, means, lows, highs = binned(times, values, edges)
    first = np.searchsorted(times, starts)  # each bin's first sample
    assert first[0] == 0 and np.all(np.diff(first) > 0)
    for k, (begin, end) in enumerate(zip(first, [*first[1:], len(times)], strict=True)):
        held = values[begin:end]
        assert np.all(times[begin:end] >= starts[k])
        known = held[~np.isnan(held)]
        if known.size == 0:
            assert np.isnan(means[k]) and np.isnan(lows[k]) and np.isnan(highs[k])
            continue
        assert lows[k] == known.min() and highs[k] == known.max()
        assert lows[k] <= means[k] + 1e-9 and means[k] <= highs[k] + 1e-9
