"""The report's capacity-loaning part: GPUs lent and each pool's GPUs over time, the reclaims
and the jobs they preempted, and how long inference pods waited against the stated bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from berth.durations import format_duration
from berth.metrics.loaning import POOLS
from berth.report.console import format_percent
from berth.report.figures import Plot, binning_note, draw_series, save, stacked_figure, time_unit
from berth.report.page import figure, heading, table
from berth.sim.timeseries import TimeSeries

LOANING_FILE = "loaning.png"
#: Reclaim events listed in the page; summary.json has them all.
MAX_EVENTS = 50
_POOL_COLOURS = {"inference": "#2ca02c", "lent": "#ff7f0e", "training": "#1f77b4"}


def plot_loaning(series: TimeSeries, path: Path) -> Plot | None:
    """GPUs lent (upper panel) and GPUs allocated of each pool against its GPUs (lower); None
    for a run without loaning."""
    if "lent_gpus" not in series.extras or not len(series):
        return None
    title = "Capacity loaning: GPUs lent, and each pool's GPUs"
    figure_, (lent, pools) = stacked_figure(2)
    times = series.times
    scale, unit = time_unit(float(times[-1] - times[0]))
    draw_series(lent, times, series.extra("lent_gpus"), scale, "GPUs lent", "black")
    lent.set_ylabel("GPUs lent", fontsize="small")
    lent.set_ylim(bottom=0)
    for pool in POOLS:
        colour = _POOL_COLOURS[pool]
        draw_series(
            pools, times, series.extra(f"{pool}_gpus_allocated"), scale, f"{pool} allocated", colour
        )
        draw_series(
            pools,
            times,
            series.extra(f"{pool}_gpus_capacity"),
            scale,
            f"{pool} GPUs",
            colour,
            linestyle="--",
        )
    pools.set_ylabel("GPUs", fontsize="small")
    pools.set_ylim(bottom=0)
    pools.legend(loc="upper right", fontsize="x-small", ncols=3)
    pools.set_xlabel(f"simulated time ({unit})")
    return Plot(save(figure_, path), title, binning_note(times))


def _percent(fraction: float | None) -> str:
    return "—" if fraction is None else format_percent(fraction)


def loaning_section(summary: dict[str, Any], plot: Plot | None) -> str:
    """Empty for a run without loaning."""
    loaning = summary.get("loaning")
    if loaning is None:
        return ""
    wait = loaning["inference_wait"]
    bound = loaning["wait_bound"]
    lines = [
        f"{loaning['inference_nodes']} inference nodes; {loaning['lends']} loans, "
        f"{loaning['reclaims']} reclaims; GPUs lent: mean {loaning['lent_gpus']['mean'] or 0:g}, "
        f"max {loaning['lent_gpus']['max']:g}.",
        f"Reclaims preempted {loaning['pods_preempted']} pods of {loaning['jobs_preempted']} jobs "
        f"(restarted from the start: {loaning['gpu_hours_lost']:g} GPU-hours of work lost).",
        f"Inference pods waited p99 {format_duration(wait['p99'])}, max "
        f"{format_duration(wait['max'])} over {wait['count']} pods; bound "
        f"{format_duration(bound)}, exceeded by {loaning['inference_wait_over_bound']}; "
        f"{loaning['inference_pending']} still pending.",
    ]
    pools = [
        [
            pool,
            f"{loaning['pools'][pool]['mean_gpus'] or 0:g}",
            _percent(loaning["pools"][pool]["gpu_allocation"]),
        ]
        for pool in POOLS
    ]
    events = [
        [
            format_duration(event["time"]),
            event["node"],
            f"{event['cost']:g}",
            f"{event['gpus']:g}",
            str(event["pods_preempted"]),
            ", ".join(event["jobs"]) or "—",
        ]
        for event in loaning["reclaim_events"][:MAX_EVENTS]
    ]
    more = len(loaning["reclaim_events"]) - len(events)
    return (
        heading("loaning", "Capacity loaning")
        + "".join(f"<p>{line}</p>" for line in lines)
        + table(["pool", "mean GPUs", "GPUs allocated"], pools)
        + (figure(plot) if plot is not None else "")
        + (
            table(["time", "node", "cost", "GPUs", "pods preempted", "jobs"], events, 2)
            if events
            else "<p class='note'>No reclaim.</p>"
        )
        + (f"<p class='note'>{more} more reclaims in summary.json.</p>" if more > 0 else "")
    )
