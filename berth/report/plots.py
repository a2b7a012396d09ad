"""The report's PNG plots.

Figures are built with ``matplotlib.figure.Figure`` on an explicit Agg canvas instead of pyplot:
no global backend switch, no figure registry to leak into across many runs in one process, and
it works on a machine without a display.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from berth.api.objects import GroupPhase, PodGroup
from berth.metrics.timeseries import TimeSeries
from berth.report.console import format_duration
from berth.resources import GPU, PODS

FIGSIZE = (8.0, 4.5)
#: Taller: the shares and the fairness index below them share one time axis.
QUEUE_SHARES_FIGSIZE = (8.0, 6.0)
DPI = 100
PLOT_FILES = ("utilization.png", "pending.png", "queueing_cdf.png", "jct_cdf.png")
#: Written only when at least two queues held resources: with one there is nothing to share.
QUEUE_SHARES_FILE = "queue_shares.png"

#: (span threshold, seconds per unit, unit name) from the largest unit down; the first threshold
#: the span exceeds wins. Days past 4 d, so a 60-day trace does not read in the thousands of hours.
_TIME_UNITS = (
    (4 * 86400.0, 86400.0, "days"),
    (2 * 3600.0, 3600.0, "hours"),
    (2 * 60.0, 60.0, "minutes"),
)
#: Tick positions for log-scaled duration axes: durations people think in.
_NICE_DURATIONS = (1, 10, 60, 600, 3600, 6 * 3600, 86400, 7 * 86400, 30 * 86400)
#: A distribution is drawn on a log axis once its largest value is this many times its smallest
#: (positive) one: otherwise the short delays, usually most jobs, collapse onto the y axis.
_LOG_RANGE = 100.0


def time_unit(span: float) -> tuple[float, str]:
    """The unit a time axis covering ``span`` seconds reads best in."""
    for threshold, scale, name in _TIME_UNITS:
        if span > threshold:
            return scale, name
    return 1.0, "seconds"


def _new_figure(title: str) -> tuple[Figure, Axes]:
    figure = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    return figure, axes


def _save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    # No Software tag: matplotlib's version would otherwise make identical runs differ by bytes.
    figure.savefig(path, dpi=DPI, metadata={"Software": None})
    return path


def _no_data(axes: Axes) -> None:
    axes.text(
        0.5,
        0.5,
        "no data",
        ha="center",
        va="center",
        fontsize=14,
        color="gray",
        transform=axes.transAxes,
    )
    axes.set_xticks([])
    axes.set_yticks([])


def plot_utilization(series: TimeSeries, path: Path) -> Path:
    """Allocated (solid) and used (dashed) fraction of capacity per resource over time."""
    figure, axes = _new_figure("Allocation and utilization")
    capacity = series.capacity
    shown = [
        i
        for i, name in enumerate(series.resources)
        if name != PODS and len(series) and capacity[:, i].max() > 0
    ]
    if not shown:
        _no_data(axes)
        return _save(figure, path)
    times = series.times
    scale, unit = time_unit(float(times[-1] - times[0]))
    x = times / scale
    for i in shown:
        cap = capacity[:, i]
        with np.errstate(invalid="ignore", divide="ignore"):
            allocated = np.where(cap > 0, series.allocated[:, i] / cap, np.nan)
            used = np.where(cap > 0, series.used[:, i] / cap, np.nan)
        name = series.resources[i]
        (line,) = axes.plot(x, allocated, drawstyle="steps-post", label=f"{name} allocated")
        axes.plot(
            x,
            used,
            drawstyle="steps-post",
            color=line.get_color(),
            linestyle="--",
            label=f"{name} used",
        )
        if name == GPU and series.gpu_fragmented.any():
            with np.errstate(invalid="ignore", divide="ignore"):
                fragmented = np.where(cap > 0, series.gpu_fragmented / cap, np.nan)
            axes.plot(
                x,
                fragmented,
                drawstyle="steps-post",
                color=line.get_color(),
                linestyle=":",
                label="GPU idle, fragmented",
            )
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel("fraction of capacity")
    axes.set_ylim(0, 1.05)
    axes.legend(loc="best", fontsize="small", ncols=2)
    return _save(figure, path)


def plot_pending(series: TimeSeries, path: Path) -> Path:
    """Pending and running pod counts over time."""
    figure, axes = _new_figure("Pending and running pods")
    if not len(series):
        _no_data(axes)
        return _save(figure, path)
    times = series.times
    scale, unit = time_unit(float(times[-1] - times[0]))
    axes.plot(times / scale, series.pending, drawstyle="steps-post", label="pending")
    axes.plot(times / scale, series.running, drawstyle="steps-post", label="running")
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel("pods")
    axes.set_ylim(bottom=0)
    axes.legend(loc="best")
    return _save(figure, path)


def plot_cdf(values: np.ndarray, title: str, xlabel: str, path: Path) -> Path:
    """Empirical CDF of durations in seconds, on a log axis when they span orders of magnitude."""
    return plot_cdfs([("", values)], title, xlabel, path)


def plot_cdfs(named: list[tuple[str, np.ndarray]], title: str, xlabel: str, path: Path) -> Path:
    """Several empirical CDFs on one axis (one per label; an empty label draws no legend)."""
    figure, axes = _new_figure(title)
    datasets = [(label, np.sort(np.asarray(v, dtype=np.float64))) for label, v in named]
    datasets = [(label, data) for label, data in datasets if data.size]
    if not datasets:
        _no_data(axes)
        return _save(figure, path)
    everything = np.concatenate([data for _, data in datasets])
    positive = everything[everything > 0]
    wide = positive.size > 0 and positive.max() >= _LOG_RANGE * max(positive.min(), 1.0)
    if wide:
        # symlog rather than log: zero delays (jobs that started at once) stay on the plot.
        axes.set_xscale("symlog", linthresh=1.0)
        axes.xaxis.set_major_locator(FixedLocator([0.0, *_NICE_DURATIONS]))
        # End on a labelled tick so the longest delay can be read off the axis.
        top = everything.max()
        right = min((t for t in _NICE_DURATIONS if t >= top), default=top)
        axes.set_xlim(0.0, right)
        axes.xaxis.set_minor_locator(NullLocator())
        axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: format_duration(x)))
        axes.set_xlabel(f"{xlabel} (log scale)")
        scale = 1.0
    else:
        scale, unit = time_unit(float(everything.max()))
        axes.set_xlabel(f"{xlabel} ({unit})")
    for label, data in datasets:
        x = data / scale
        fractions = np.arange(1, data.size + 1) / data.size
        axes.step(
            np.concatenate([[x[0]], x]),
            np.concatenate([[0.0], fractions]),
            where="post",
            label=label or None,
        )
    if any(label for label, _ in datasets):
        axes.legend(loc="lower right")
    axes.set_ylabel("fraction of jobs")
    axes.set_ylim(0, 1.02)
    return _save(figure, path)


def plot_fraction_overlay(
    named: list[tuple[str, np.ndarray, np.ndarray]], title: str, ylabel: str, path: Path
) -> Path:
    """Several (times, fractions) step curves on one time axis."""
    figure, axes = _new_figure(title)
    named = [(label, t, f) for label, t, f in named if len(t)]
    if not named:
        _no_data(axes)
        return _save(figure, path)
    span = max(float(t[-1]) for _, t, _ in named)
    scale, unit = time_unit(span)
    for label, times, fractions in named:
        axes.step(times / scale, fractions, where="post", label=label)
    axes.set_xlabel(f"simulated time ({unit})")
    axes.set_ylabel(ylabel)
    axes.set_ylim(0, 1.02)
    axes.legend(loc="best")
    return _save(figure, path)


def plot_queue_shares(series: TimeSeries, path: Path) -> Path | None:
    """Each queue's dominant share over time above Jain's index; None (nothing written) unless
    two or more queues held resources at some point. Queues that never held anything are left
    out: every run has a default queue, and its flat line at zero would only crowd the legend."""
    shares = series.queue_shares()
    active = np.flatnonzero((shares > 0).any(axis=0))
    if len(active) < 2:
        return None
    figure = Figure(figsize=QUEUE_SHARES_FIGSIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    times = series.times
    scale, unit = time_unit(float(times[-1] - times[0]))
    x = times / scale
    queues = series.queues
    for column in active:
        top.plot(x, shares[:, column], drawstyle="steps-post", label=queues[column])
    top.set_title("Queue shares over time")
    top.set_ylabel("dominant share")
    top.set_ylim(0, 1.05)
    top.legend(loc="best", fontsize="small")
    bottom.plot(x, series.fairness(), drawstyle="steps-post", color="black")
    bottom.set_ylabel("Jain's index")
    bottom.set_ylim(0, 1.05)
    bottom.set_xlabel(f"simulated time ({unit})")
    for axes in (top, bottom):
        axes.grid(True, alpha=0.3)
    return _save(figure, path)


def write_plots(out_dir: Path, series: TimeSeries, groups: list[PodGroup]) -> list[Path]:
    """Write the report PNGs into ``out_dir``: the four of ``PLOT_FILES`` in that order, then
    ``QUEUE_SHARES_FILE`` when there are queues to compare."""
    started = [g.start_time - g.submit_time for g in groups if g.start_time is not None]
    finished = [
        g.end_time - g.submit_time
        for g in groups
        if g.phase == GroupPhase.COMPLETED and g.end_time is not None
    ]
    utilization, pending, queueing, jct = (out_dir / name for name in PLOT_FILES)
    written = [
        plot_utilization(series, utilization),
        plot_pending(series, pending),
        plot_cdf(np.array(started), "Job queueing delay", "submit to start", queueing),
        plot_cdf(np.array(finished), "Job completion time", "submit to end", jct),
    ]
    shares = plot_queue_shares(series, out_dir / QUEUE_SHARES_FILE)
    if shares is None:
        # A rerun into the same directory must not leave an earlier run's queues on show.
        (out_dir / QUEUE_SHARES_FILE).unlink(missing_ok=True)
        return written
    return [*written, shares]
