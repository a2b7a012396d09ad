"""The run summary for the terminal, and the number formats the HTML report shares."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from berth.durations import format_duration
from berth.resources import PODS

#: Percentile rows shown for each delay distribution, in order.
DELAY_STATS = ("mean", "p50", "p95", "p99")


def gpu_fragmentation_text(frag: dict[str, float]) -> str:
    """Idle GPUs the workload's typical pods cannot use (time-weighted mean)."""
    text = f"{frag['mean_gpus']:.1f} GPUs idle but unusable by typical pods"
    if "share_of_idle" in frag:
        text += f" ({format_percent(frag['share_of_idle'])} of idle GPUs)"
    return text


def rollouts_text(workloads: list[dict[str, Any]]) -> str:
    """All rollouts of the run in one line: how many finished, how long, what they moved."""
    rollouts = [r for w in workloads for r in w["rollout_list"]]
    if not rollouts:
        count = len(workloads)
        return f"{count} workload object{'' if count == 1 else 's'}, no rollout"
    done = [r["duration"] for r in rollouts if r["duration"] is not None]
    text = f"{len(done)}/{len(rollouts)} done"
    if done:
        text += f" · longest {format_duration(max(done))}"
    recreated = sum(r["pods_recreated"] for r in rollouts)
    in_place = sum(r["pods_updated_in_place"] for r in rollouts)
    peak = max(r["peak_unavailable"] for r in rollouts)
    return f"{text} · {recreated} pods recreated · {in_place} in place · peak unavailable {peak}"


def format_percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def shown_makespan(summary: dict[str, Any]) -> str:
    """The makespan, or what stands for it when no job completed (summary.json keeps 0)."""
    if not summary["jobs"].get("completed"):
        return "none (no job completed)"
    return format_duration(summary["makespan"])


def format_stats(stats: dict[str, Any]) -> str:
    """``mean 5m · p50 1m · …`` for one percentile dict, or "no data"."""
    if not stats.get("count"):
        return "no data"
    return " · ".join(f"{name} {format_duration(stats[name])}" for name in DELAY_STATS)


def _format_counts(counts: dict[str, int]) -> str:
    return " · ".join(f"{value} {name}" for name, value in counts.items())


def summary_table(summary: dict[str, Any]) -> Table:
    """The headline numbers of ``summary`` as a two-column rich table."""
    table = Table(title="Simulation summary", show_header=False)
    table.add_column("metric", style="bold")
    table.add_column("value")
    table.add_row("pods", _format_counts(summary["pods"]))
    table.add_row("jobs", _format_counts(summary["jobs"]))
    table.add_section()
    table.add_row("job queueing delay", format_stats(summary["queueing_delay"]))
    table.add_row("pod queueing delay", format_stats(summary["pod_queueing_delay"]))
    table.add_row("job completion time", format_stats(summary["jct"]))
    table.add_row("makespan", shown_makespan(summary))
    if summary.get("fairness") is not None:
        table.add_row("queue fairness", f"Jain's index {summary['fairness']:.2f} (1 = fair)")
    table.add_section()
    for resource, allocated in summary["allocation"].items():
        if resource == PODS:
            continue  # a pod-count limit, not a resource: its numbers stay in the CSVs
        used = summary["utilization"].get(resource)
        usage = "—" if used is None else format_percent(used)
        text = f"allocated {format_percent(allocated)} · used {usage}"
        stranded = summary.get("fragmentation", {}).get(resource)
        if stranded is not None:
            text += f" · idle stranded {format_percent(stranded)}"
        table.add_row(resource, text)
    frag = summary.get("gpu_fragmentation")
    if frag is not None:
        table.add_row("GPU fragmentation", gpu_fragmentation_text(frag))
    workloads = summary.get("workloads")
    if workloads:
        table.add_section()
        table.add_row("rollouts", rollouts_text(workloads))
    table.add_section()
    table.add_row("simulated time", format_duration(summary["end_time"]))
    table.add_row("events", f"{summary['events']:,}")
    table.add_row("wall time", f"{summary['wall_seconds']:.2f}s")
    return table
