"""The run report's plots, one PNG each, written beside report.html (which embeds them).

Resources are drawn as small multiples, one panel per resource on a shared time axis, so no
line hides another and each panel keeps its own story (GPUs full while CPUs idle).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from berth.api.objects import GroupPhase, PodGroup
from berth.metrics.summary import time_weighted_fractions
from berth.report.console import format_percent
from berth.report.figures import (
    HALF_WIDTH,
    Plot,
    binning_note,
    draw_cdfs,
    draw_series,
    new_figure,
    no_data,
    percent_axis,
    save,
    stacked_figure,
    time_unit,
)
from berth.resources import GPU, PODS
from berth.sim.timeseries import TimeSeries

if TYPE_CHECKING:
    from matplotlib.axes import Axes

UTILIZATION_FILE = "utilization.png"
STRANDED_FILE = "stranded.png"
PENDING_FILE = "pending.png"
QUEUEING_FILE = "queueing_cdf.png"
JCT_FILE = "jct_cdf.png"
#: Written only when at least two queues held resources: with one there is nothing to share.
QUEUE_SHARES_FILE = "queue_shares.png"
PLOT_FILES = (UTILIZATION_FILE, STRANDED_FILE, PENDING_FILE, QUEUEING_FILE, JCT_FILE)
#: Colours kept for one meaning across every panel.
ALLOCATED, USED, IDLE, STRANDED, FRAGMENTED = "#1f77b4", "#ff7f0e", "#9ecae1", "#d62728", "#7b3294"


def shown_resources(series: TimeSeries) -> list[int]:
    """Columns worth a panel: every resource some node has, but the pod count."""
    if not len(series):
        return []
    capacity = series.capacity
    return [
        i for i, name in enumerate(series.resources) if name != PODS and capacity[:, i].max() > 0
    ]


def _fraction(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(whole > 0, part / np.where(whole > 0, whole, 1.0), np.nan)


def _mean(series: TimeSeries, part: np.ndarray, whole: np.ndarray) -> float:
    end = float(series.times[-1])
    return float(time_weighted_fractions(series.times, part[:, None], whole[:, None], end)[0])


def _time_axis(series: TimeSeries) -> tuple[float, str]:
    times = series.times
    return time_unit(float(times[-1] - times[0]))


def _per_resource(
    series: TimeSeries, path: Path, title: str, draw: Callable[[Axes, int, float], None]
) -> Plot:
    """A figure of one panel per shown resource, ``draw(axes, column, time scale)`` filling
    each."""
    shown = shown_resources(series)
    figure, panels = stacked_figure(len(shown))
    if not shown:
        no_data(panels[0])
        return Plot(save(figure, path), title)
    scale, unit = _time_axis(series)
    for axes, column in zip(panels, shown, strict=True):
        draw(axes, column, scale)
        percent_axis(axes)
    panels[-1].set_xlabel(f"simulated time ({unit})")
    return Plot(save(figure, path), title, binning_note(series.times))


def plot_utilization(series: TimeSeries, path: Path) -> Plot:
    """Per resource, the share of capacity allocated and the share used, over time."""
    times = series.times

    def draw(axes: Axes, i: int, scale: float) -> None:
        cap = series.capacity[:, i]
        allocated, used = series.allocated[:, i], series.used[:, i]
        draw_series(axes, times, _fraction(allocated, cap), scale, "allocated", ALLOCATED)
        draw_series(axes, times, _fraction(used, cap), scale, "used", USED)
        axes.set_title(
            f"{series.resources[i]}: allocated {format_percent(_mean(series, allocated, cap))}, "
            f"used {format_percent(_mean(series, used, cap))} (time-weighted)",
            fontsize="medium",
            loc="left",
        )
        axes.legend(loc="upper right", fontsize="small", ncols=2)

    return _per_resource(series, path, "Allocation and utilization per resource", draw)


def plot_stranded(series: TimeSeries, path: Path) -> Plot:
    """Per resource, idle capacity and the part of it stranded on partly used nodes; for
    GPUs also the idle GPUs the workload's typical GPU pods cannot use (fragmentation)."""
    times = series.times

    def draw(axes: Axes, i: int, scale: float) -> None:
        cap = series.capacity[:, i]
        idle = np.maximum(cap - series.allocated[:, i], 0.0)
        stranded = series.stranded[:, i]
        draw_series(axes, times, _fraction(idle, cap), scale, "idle", IDLE)
        draw_series(
            axes, times, _fraction(stranded, cap), scale, "idle on partly used nodes", STRANDED
        )
        name = series.resources[i]
        text = f"{name}: {format_percent(_mean(series, stranded, idle))} of idle is stranded"
        if name == GPU and series.gpu_fragmented.any():
            fragmented = series.gpu_fragmented
            draw_series(
                axes,
                times,
                _fraction(fragmented, cap),
                scale,
                "idle GPU typical pods cannot use",
                FRAGMENTED,
                "--",
            )
            text += f", {format_percent(_mean(series, fragmented, idle))} unusable"
        axes.set_title(text + " (time-weighted)", fontsize="medium", loc="left")
        axes.set_ylabel("of capacity", fontsize="small")
        axes.legend(loc="upper right", fontsize="small", ncols=3)

    return _per_resource(series, path, "Idle capacity: stranded and unusable", draw)


def plot_pending(series: TimeSeries, path: Path) -> Plot:
    """Running and pending pod counts over time, each on its own scale."""
    title = "Running and pending pods"
    figure, (running, pending) = stacked_figure(2)
    if not len(series):
        no_data(running)
        no_data(pending)
        return Plot(save(figure, path), title)
    scale, unit = _time_axis(series)
    times = series.times
    draw_series(running, times, series.running.astype(float), scale, "running", ALLOCATED)
    draw_series(pending, times, series.pending.astype(float), scale, "pending", STRANDED)
    for axes, name in ((running, "running pods"), (pending, "pending pods")):
        axes.set_ylabel(name, fontsize="small")
        axes.set_ylim(bottom=0)
    pending.set_xlabel(f"simulated time ({unit})")
    return Plot(save(figure, path), title, binning_note(times))


def plot_cdf(values: np.ndarray, title: str, xlabel: str, path: Path) -> Plot:
    """Empirical CDF of durations in seconds."""
    figure, (axes,) = new_figure(1, 3.8, HALF_WIDTH)
    axes.set_title(title)
    draw_cdfs(axes, [("", values)], xlabel)
    return Plot(save(figure, path), title)


def plot_queue_shares(series: TimeSeries, path: Path) -> Plot | None:
    """Each queue's dominant share over time above Jain's index; None (nothing written) unless
    two or more queues held resources at some point. Queues that never held anything are left
    out: every run has a default queue, and its flat line at zero would only crowd the legend."""
    shares = series.queue_shares()
    active = np.flatnonzero((shares > 0).any(axis=0))
    if len(active) < 2:
        return None
    title = "Queue shares over time"
    figure, (top, bottom) = new_figure(2, 6.0)
    scale, unit = _time_axis(series)
    times = series.times
    for column in active:
        draw_series(top, times, shares[:, column], scale, series.queues[column])
    top.set_ylabel("dominant share")
    percent_axis(top)
    top.legend(loc="upper right", fontsize="small", ncols=min(len(active), 4))
    draw_series(bottom, times, series.fairness(), scale, "Jain's index", "black")
    bottom.set_ylabel("Jain's index")
    bottom.set_ylim(0, 1.05)
    bottom.set_xlabel(f"simulated time ({unit})")
    return Plot(save(figure, path), title, binning_note(times))


def job_delays(groups: list[PodGroup]) -> tuple[np.ndarray, np.ndarray]:
    """Each started job's queueing delay and each completed job's completion time (seconds):
    what the CDF plots draw."""
    started = [g.start_time - g.submit_time for g in groups if g.start_time is not None]
    finished = [
        g.end_time - g.submit_time
        for g in groups
        if g.phase == GroupPhase.COMPLETED and g.end_time is not None
    ]
    return np.array(started, dtype=np.float64), np.array(finished, dtype=np.float64)


def write_plots(
    out_dir: Path, series: TimeSeries, delays: tuple[np.ndarray, np.ndarray]
) -> list[Plot]:
    """Write the report PNGs into ``out_dir``: those of ``PLOT_FILES`` in that order, then
    ``QUEUE_SHARES_FILE`` when there are queues to compare. ``delays``: ``job_delays``."""
    started, finished = delays
    written = [
        plot_utilization(series, out_dir / UTILIZATION_FILE),
        plot_stranded(series, out_dir / STRANDED_FILE),
        plot_pending(series, out_dir / PENDING_FILE),
        plot_cdf(started, "Job queueing delay", "submit to start", out_dir / QUEUEING_FILE),
        plot_cdf(finished, "Job completion time", "submit to end", out_dir / JCT_FILE),
    ]
    shares = plot_queue_shares(series, out_dir / QUEUE_SHARES_FILE)
    if shares is None:
        # A rerun into the same directory must not leave an earlier run's queues on show.
        (out_dir / QUEUE_SHARES_FILE).unlink(missing_ok=True)
        return written
    return [*written, shares]
