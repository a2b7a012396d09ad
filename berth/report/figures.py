"""What every berth figure shares: the canvas, time axes, long series made readable, CDFs.

Figures are built with ``matplotlib.figure.Figure`` on an explicit Agg canvas instead of pyplot:
no global backend switch, no figure registry to leak into across many runs in one process, and
it works on a machine without a display. matplotlib is imported by the functions that draw, so
that a command imports it only when it writes a figure (it takes about a quarter of a second).

A 60-day trace gives ~5,000 samples, several per pixel of an 900-pixel plot: drawn as they are,
a series that moves every sample becomes a solid block. Past ``MAX_POINTS`` samples a series is
drawn as the mean of equal time bins with a band from the bin's lowest to highest sample, so
the trend reads and the extremes stay visible.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from berth.durations import format_duration

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

DPI = 100
WIDTH = 9.0
#: Height of one panel of a figure of stacked panels, in inches.
PANEL_HEIGHT = 1.9
#: Width of a figure shown beside another (the CDFs).
HALF_WIDTH = 5.6
#: Line styles by position, so that overlaid curves that coincide still show (and a
#: printout in grey tells them apart).
LINESTYLES = ("-", "--", ":", "-.")
#: Samples drawn as they are; a longer series is binned to half this many bins.
MAX_POINTS = 800

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


@dataclass(frozen=True, slots=True)
class Plot:
    """One written plot: its file, its title, and what to know to read it."""

    path: Path
    title: str
    caption: str = ""


def time_unit(span: float) -> tuple[float, str]:
    """The unit a time axis covering ``span`` seconds reads best in."""
    for threshold, scale, name in _TIME_UNITS:
        if span > threshold:
            return scale, name
    return 1.0, "seconds"


def new_figure(
    panels: int = 1, height: float = 4.5, width: float = WIDTH
) -> tuple[Figure, list[Axes]]:
    """A figure of ``panels`` axes stacked on a shared time axis, ``height`` inches tall, on
    its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(panels, 1, sharex=True, squeeze=False).ravel().tolist()
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return figure, axes


def row_figure(panels: int, height: float, width: float = WIDTH) -> tuple[Figure, list[Axes]]:
    """``panels`` axes side by side, each with its own x axis (distributions of different
    ranges), on its own Agg canvas."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.subplots(1, panels, squeeze=False).ravel().tolist()
    for ax in axes:
        ax.grid(True, alpha=0.3)
    return figure, axes


def stacked_figure(panels: int) -> tuple[Figure, list[Axes]]:
    """One panel per item (at least one, for a "no data" note), each PANEL_HEIGHT tall."""
    count = max(panels, 1)
    return new_figure(count, 0.6 + PANEL_HEIGHT * count)


def save(figure: Figure, path: Path) -> Path:
    figure.tight_layout()
    # tight_layout leaves a placeholder layout engine behind, and savefig draws the whole figure
    # once more, without rendering, for any engine; the layout is done, so drop it.
    figure.set_layout_engine(None)
    # No Software tag: matplotlib's version would otherwise make identical runs differ by bytes.
    figure.savefig(path, dpi=DPI, metadata={"Software": None})
    return path


def data_uri(png: Path) -> str:
    """The PNG as a ``data:`` URI, so a page shows it without any file beside it."""
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def image_size(png: Path) -> tuple[int, int]:
    """Width and height in pixels, read from the PNG header."""
    header = png.read_bytes()[16:24]
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")


def no_data(axes: Axes) -> None:
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


def binned(
    times: np.ndarray, values: np.ndarray, edges: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per time bin holding samples: its start, and the mean, lowest and highest sample (NaN
    samples, times without capacity, are left out; a bin of only NaN gives NaN)."""
    starts = np.searchsorted(times, edges[:-1])
    keep = starts < np.append(starts[1:], len(times))
    starts = starts[keep]
    known = ~np.isnan(values)
    counts = np.add.reduceat(known.astype(float), starts)
    sums = np.add.reduceat(np.where(known, values, 0.0), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        lows = np.fmin.reduceat(values, starts)
        highs = np.fmax.reduceat(values, starts)
    return edges[:-1][keep], means, lows, highs


def bin_edges(start: float, end: float, points: int = MAX_POINTS) -> np.ndarray:
    return np.linspace(start, max(end, start + 1.0), points // 2 + 1)


def draw_series(
    axes: Axes,
    times: np.ndarray,
    values: np.ndarray,
    scale: float,
    label: str,
    color: str | None = None,
    linestyle: str = "-",
) -> str:
    """A series over time: as sampled (steps), or binned with a min–max band when long.
    Returns the colour used."""
    if len(times) <= MAX_POINTS:
        (line,) = axes.plot(
            times / scale,
            values,
            drawstyle="steps-post",
            label=label,
            color=color,
            linestyle=linestyle,
            linewidth=1.2,
        )
        return str(line.get_color())
    starts, means, lows, highs = binned(times, values, bin_edges(times[0], times[-1]))
    x = starts / scale
    (line,) = axes.plot(
        x, means, drawstyle="steps-post", label=label, color=color, linestyle=linestyle
    )
    axes.fill_between(x, lows, highs, step="post", color=line.get_color(), alpha=0.15, lw=0)
    return str(line.get_color())


def binning_note(times: np.ndarray) -> str:
    """What a binned series shows, for the figure's caption; empty when drawn as sampled."""
    if len(times) <= MAX_POINTS:
        return ""
    width = (times[-1] - times[0]) / (MAX_POINTS // 2)
    return f"lines: mean of each {format_duration(width)}; bands: lowest to highest sample"


def percent_axis(axes: Axes, top: float = 1.0) -> None:
    from matplotlib.ticker import PercentFormatter

    axes.set_ylim(0, top * 1.05)
    axes.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))


def draw_cdfs(axes: Axes, named: Sequence[tuple[str, np.ndarray]], xlabel: str) -> None:
    """Empirical CDFs of durations in seconds on one axis (an empty label draws no legend),
    on a log axis when they span orders of magnitude."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    datasets = [(label, np.sort(np.asarray(v, dtype=np.float64))) for label, v in named]
    datasets = [(label, data) for label, data in datasets if data.size]
    if not datasets:
        no_data(axes)
        return
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
    for k, (label, data) in enumerate(datasets):
        x = data / scale
        fractions = np.arange(1, data.size + 1) / data.size
        axes.step(
            np.concatenate([[x[0]], x]),
            np.concatenate([[0.0], fractions]),
            where="post",
            label=label or None,
            linestyle=LINESTYLES[k % len(LINESTYLES)],
        )
    if any(label for label, _ in datasets):
        axes.legend(loc="lower right", fontsize="small")
    axes.set_ylabel("fraction of jobs")
    percent_axis(axes, 0.97)
