"""The run's ``report.html``: one self-contained page (see ``berth.report.page``) with the
headline numbers, the plots embedded, the jobs worth a look, the jobs still waiting and why,
decisions explained on request, and what produced it all."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from berth.api.objects import Pod, PodGroup
from berth.durations import format_duration
from berth.metrics.tables import JobOutcome
from berth.report.console import format_percent, gpu_fragmentation_text, shown_makespan
from berth.report.explained import explained_section
from berth.report.figures import Plot
from berth.report.jobs import jobs_section, pending_section
from berth.report.loaning import LOANING_FILE, loaning_section, plot_loaning
from berth.report.page import figures, heading, page, table
from berth.report.plots import JCT_FILE, QUEUEING_FILE, job_delays, write_plots
from berth.report.workloads import workloads_section
from berth.sim.timeseries import TimeSeries

_COUNT_COLUMNS = (
    "submitted",
    "completed",
    "running",
    "pending",
    "failed",
    "evicted",
    "deleted",
)
_DELAY_ROWS = (
    ("Job queueing delay", "queueing_delay"),
    ("Pod queueing delay", "pod_queueing_delay"),
    ("Job completion time", "jct"),
)
_DELAY_COLUMNS = ("mean", "p50", "p95", "p99", "max")


def _counts_section(summary: dict[str, Any]) -> str:
    rows = []
    for label, key in (("Pods", "pods"), ("Jobs", "jobs")):
        counts = summary[key]
        rows.append([label, *(str(counts[c]) if c in counts else "—" for c in _COUNT_COLUMNS)])
    evictions = summary["evictions"]
    line = (
        f"Evictions: {evictions['preempted']} preempted · {evictions['reclaimed']} reclaimed · "
        + (f"{evictions['loaning']} lent nodes taken back · " if evictions.get("loaning") else "")
        + f"{evictions['other']} other (node failures) · {evictions['total']} total"
    )
    return f"{heading('counts', 'Counts')}{table(['', *_COUNT_COLUMNS], rows)}<p>{escape(line)}</p>"


def _delay_section(summary: dict[str, Any]) -> str:
    rows = []
    for label, key in _DELAY_ROWS:
        stats = summary[key]
        rows.append(
            [label, str(stats["count"]), *(format_duration(stats[c]) for c in _DELAY_COLUMNS)]
        )
    delays = table(["", "count", *_DELAY_COLUMNS], rows)
    makespan = escape(shown_makespan(summary))
    return f"{heading('delays', 'Delays')}{delays}<p>Makespan: {makespan}</p>"


def _percent_or_dash(fraction: float | None) -> str:
    return "—" if fraction is None else format_percent(fraction)


def _resource_section(summary: dict[str, Any]) -> str:
    allocation, utilization = summary["allocation"], summary["utilization"]
    if not allocation:
        return heading("resources", "Resources") + '<p class="note">No capacity was sampled.</p>'
    rows = [
        [
            name,
            format_percent(allocation[name]),
            format_percent(utilization[name]),
            _percent_or_dash(summary.get("fragmentation", {}).get(name)),
        ]
        for name in allocation
    ]
    note = (
        '<p class="note">Time-weighted mean over the run, as a share of schedulable capacity.</p>'
    )
    frag = summary.get("gpu_fragmentation")
    if frag is not None:
        note += (
            '<p class="note">GPU fragmentation (idle GPU capacity the workload\'s typical pods '
            f"cannot use, time-weighted): {escape(gpu_fragmentation_text(frag))}; over "
            "time in the plots below.</p>"
        )
    return (
        heading("resources", "Resources")
        + note
        + table(["resource", "allocated", "used", "idle stranded on partly used nodes"], rows)
    )


def _run_section(summary: dict[str, Any]) -> str:
    rows = [
        ["seed", str(summary["seed"])],
        ["simulated time", format_duration(summary["end_time"])],
        ["events", f"{summary['events']:,}"],
        ["wall time", f"{summary['wall_seconds']:.2f}s"],
    ]
    return heading("run", "Run") + table(["", "value"], rows)


def _provenance_section(summary: dict[str, Any]) -> str:
    """What produced the numbers above: the command, the inputs by content hash, the
    configuration as it ran."""
    provenance = summary.get("provenance")
    if not provenance:
        return ""
    config = provenance["configuration"]
    plugins = ", ".join(spec["name"] for tier in config["tiers"] for spec in tier)
    actions = ", ".join(config["actions"])
    rows = [
        ["berth", provenance["berth_version"]],
        ["command", " ".join(provenance["command"]) or "—"],
        ["configuration", f"{config['source']}: actions {actions}; plugins {plugins}"],
        *(["read", note] for note in provenance["how_inputs_were_read"]),
    ]
    inputs = provenance["inputs"]
    if isinstance(inputs, str):
        rows.append(["inputs", inputs])
    else:
        rows += [
            [
                item["role"],
                f"{item['path']} ({item['bytes']:,} bytes, sha256 {item['sha256'][:16]}…)",
            ]
            for item in inputs
        ]
    return (
        heading("provenance", "Provenance")
        + table(["", "value"], rows, text_columns=2)
        + '<p class="note">The configuration as resolved, with every argument, is in '
        "summary.json under provenance.</p>"
    )


def _plots_section(plots: Sequence[Plot]) -> str:
    """The plots, the two CDFs side by side."""
    cdfs = [plot for plot in plots if plot.path.name in (QUEUEING_FILE, JCT_FILE)]
    others = [plot for plot in plots if plot not in cdfs]
    return (
        heading("plots", "Plots")
        + figures(others[:3])
        + figures(cdfs, pair=True)
        + figures(others[3:])
    )


def render_html(
    summary: dict[str, Any],
    pods: list[Pod],
    reasons: dict[str, str] | None = None,
    plots: Sequence[Plot] = (),
    groups: list[PodGroup] | None = None,
    outcomes: dict[str, JobOutcome] | None = None,
    explained: list[dict[str, Any]] | None = None,
    loaning_plot: Plot | None = None,
) -> str:
    """The report page for ``summary`` with ``plots`` (written beside it, embedded here), the
    ``explained`` pods' decisions (as in explain.json) and, for a run with capacity loaning,
    its section with ``loaning_plot``."""
    groups = groups or []
    outcomes = outcomes or {}
    end = summary["end_time"]
    sections = (
        _counts_section(summary),
        _delay_section(summary),
        _resource_section(summary),
        _plots_section(plots),
        loaning_section(summary, loaning_plot),
        jobs_section(groups, outcomes, end),
        pending_section(pods, groups, outcomes, end, reasons or {}),
        workloads_section(summary),
        explained_section(explained),
        _run_section(summary),
        _provenance_section(summary),
    )
    nav = [
        ("counts", "Counts"),
        ("plots", "Plots"),
        *([("loaning", "Loaning")] if sections[4] else []),
        *([("jobs", "Jobs")] if groups else []),
        *([("waiting", "Waiting")] if sections[6] else []),
        *([("workloads", "Workloads")] if sections[7] else []),
        *([("explained", "Explained decisions")] if sections[8] else []),
        ("provenance", "Provenance"),
    ]
    return page("berth simulation report", sections, nav)


#: What ``report_figures`` draws: the plots, and capacity loaning's when the run loaned.
Figures = tuple[list[Plot], Plot | None]


def report_figures(
    out_dir: Path, series: TimeSeries, delays: tuple[np.ndarray, np.ndarray]
) -> Figures:
    """Draw the report's PNGs into ``out_dir`` (``delays``: ``plots.job_delays``)."""
    plots = write_plots(out_dir, series, delays)
    loaning_plot = plot_loaning(series, out_dir / LOANING_FILE)
    if loaning_plot is None:
        (out_dir / LOANING_FILE).unlink(missing_ok=True)  # an earlier run's, written over
    return plots, loaning_plot


def write_report(
    out_dir: Path,
    summary: dict[str, Any],
    series: TimeSeries,
    pods: list[Pod],
    groups: list[PodGroup],
    reasons: dict[str, str] | None = None,
    outcomes: dict[str, JobOutcome] | None = None,
    explained: list[dict[str, Any]] | None = None,
    drawn: Figures | None = None,
) -> Path:
    """Write ``report.html`` and its PNGs into ``out_dir`` (created if missing); ``reasons``
    says, by pod ref (``Pod.ref``), why a pod still pending could not be placed. ``drawn``:
    the PNGs drawn already (``report_figures``, in a worker)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots, loaning_plot = (
        report_figures(out_dir, series, job_delays(groups)) if drawn is None else drawn
    )
    path = out_dir / "report.html"
    html = render_html(summary, pods, reasons, plots, groups, outcomes, explained, loaning_plot)
    path.write_text(html, encoding="utf-8")
    return path
