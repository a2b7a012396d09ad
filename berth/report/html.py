"""The run's ``report.html``: one self-contained page (inline CSS, no scripts, no remote assets)
that can be opened from a CI artifact or mailed around next to its PNGs."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from berth.api.objects import GroupPhase, Pod, PodGroup, PodPhase
from berth.metrics.tables import JobOutcome
from berth.metrics.timeseries import TimeSeries
from berth.report.console import format_duration, format_percent, gpu_fragmentation_text
from berth.report.plots import (
    DPI,
    FIGSIZE,
    PLOT_FILES,
    QUEUE_SHARES_FIGSIZE,
    QUEUE_SHARES_FILE,
    write_plots,
)

#: Enough pending pods to spot a pattern (one namespace, one job) without a megabyte page.
PENDING_ROWS = 50

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1, h2 { font-weight: 600; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.8em; text-align: right; }
th { background: #f3f3f3; }
td.text, th.text { text-align: left; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
.note { color: #666; }
"""

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
_PLOT_TITLES = dict(
    zip(
        PLOT_FILES,
        (
            "Allocation and utilization",
            "Pending and running pods",
            "Job queueing delay CDF",
            "Job completion time CDF",
        ),
        strict=True,
    )
) | {QUEUE_SHARES_FILE: "Queue shares over time"}


def _table(header: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
    """An HTML table of already-formatted cells; the first ``text_columns`` are left-aligned."""

    def cells(tag: str, values: list[str]) -> str:
        left = ' class="text"'
        return "".join(
            f"<{tag}{left if i < text_columns else ''}>{escape(v)}</{tag}>"
            for i, v in enumerate(values)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><tr>{cells('th', header)}</tr>{body}</table>"


def _counts_section(summary: dict[str, Any]) -> str:
    rows = []
    for label, key in (("Pods", "pods"), ("Jobs", "jobs")):
        counts = summary[key]
        rows.append([label, *(str(counts[c]) if c in counts else "—" for c in _COUNT_COLUMNS)])
    evictions = summary["evictions"]
    line = (
        f"Evictions: {evictions['preempted']} preempted · {evictions['reclaimed']} reclaimed · "
        f"{evictions['other']} other (node failures) · {evictions['total']} total"
    )
    return f"<h2>Counts</h2>{_table(['', *_COUNT_COLUMNS], rows)}<p>{escape(line)}</p>"


def _delay_section(summary: dict[str, Any]) -> str:
    rows = []
    for label, key in _DELAY_ROWS:
        stats = summary[key]
        rows.append(
            [label, str(stats["count"]), *(format_duration(stats[c]) for c in _DELAY_COLUMNS)]
        )
    table = _table(["", "count", *_DELAY_COLUMNS], rows)
    makespan = escape(format_duration(summary["makespan"]))
    return f"<h2>Delays</h2>{table}<p>Makespan: {makespan}</p>"


def _percent_or_dash(fraction: float | None) -> str:
    return "—" if fraction is None else format_percent(fraction)


def _resource_section(summary: dict[str, Any]) -> str:
    allocation, utilization = summary["allocation"], summary["utilization"]
    if not allocation:
        return '<h2>Resources</h2><p class="note">No capacity was sampled.</p>'
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
            "time in utilization.png.</p>"
        )
    return (
        "<h2>Resources</h2>"
        + note
        + _table(["resource", "allocated", "used", "idle stranded on partly used nodes"], rows)
    )


def _run_section(summary: dict[str, Any]) -> str:
    rows = [
        ["seed", str(summary["seed"])],
        ["simulated time", format_duration(summary["end_time"])],
        ["events", f"{summary['events']:,}"],
        ["wall time", f"{summary['wall_seconds']:.2f}s"],
    ]
    return "<h2>Run</h2>" + _table(["", "value"], rows)


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
        "<h2>Provenance</h2>"
        + _table(["", "value"], rows, text_columns=2)
        + '<p class="note">The configuration as resolved, with every argument, is in '
        "summary.json under provenance.</p>"
    )


def _plots_section(plots: Sequence[str]) -> str:
    def image(name: str) -> str:
        title = _PLOT_TITLES[name]
        inches = QUEUE_SHARES_FIGSIZE if name == QUEUE_SHARES_FILE else FIGSIZE
        width, height = (round(side * DPI) for side in inches)
        return (
            f"<h3>{escape(title)}</h3>"
            f'<img src="{escape(name)}" alt="{escape(title)}" width="{width}" height="{height}">'
        )

    images = "".join(image(name) for name in plots)
    return "<h2>Plots</h2>" + images


def _pending_section(
    pods: list[Pod],
    groups: list[PodGroup],
    outcomes: dict[str, JobOutcome],
    end_time: float,
    reasons: dict[str, str],
) -> str:
    """Jobs still waiting at the end, one row each with one reason, longest wait first: those
    with pods pending, and those not admitted at all (a Volcano Job's pods exist only once
    its group is admitted, so without this it would not show)."""
    pending: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.phase == PodPhase.PENDING:
            pending.setdefault(f"{pod.namespace}/{pod.group}", []).append(pod)
    waiting = [g for g in groups if g.key in pending or g.phase == GroupPhase.PENDING]
    if not waiting:
        return ""
    waiting.sort(key=lambda g: (g.submit_time, g.key))
    rows = []
    for group in waiting[:PENDING_ROWS]:
        members = pending.get(group.key, [])
        outcome = outcomes.get(group.key)
        why = (outcome.reason if outcome else "") or (
            reasons.get(members[0].key, "") if members else ""
        )
        count = str(len(members)) if members else "none created yet"
        waited = format_duration(end_time - group.submit_time)
        rows.append([group.namespace, group.name, group.queue, count, why, waited])
    table = _table(["namespace", "job", "queue", "pods pending", "why", "waiting"], rows, 5)
    more = len(waiting) - PENDING_ROWS
    note = f'<p class="note">… and {more} more (jobs.csv lists every job).</p>' if more else ""
    total = sum(len(members) for members in pending.values())
    return f"<h2>Waiting at the end: {len(waiting)} jobs, {total} pods</h2>{table}{note}"


def render_html(
    summary: dict[str, Any],
    pods: list[Pod],
    reasons: dict[str, str] | None = None,
    plots: Sequence[str] = PLOT_FILES,
    groups: list[PodGroup] | None = None,
    outcomes: dict[str, JobOutcome] | None = None,
) -> str:
    """The report page for ``summary``; ``plots`` names the PNGs written beside it, since the
    queue shares plot exists only for runs with queues to compare."""
    title = "berth simulation report"
    sections = (
        _counts_section(summary),
        _delay_section(summary),
        _resource_section(summary),
        _run_section(summary),
        _plots_section(plots),
        _pending_section(pods, groups or [], outcomes or {}, summary["end_time"], reasons or {}),
        _provenance_section(summary),
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body><h1>{escape(title)}</h1>\n"
        + "\n".join(section for section in sections if section)
        + "\n</body></html>\n"
    )


def write_report(
    out_dir: Path,
    summary: dict[str, Any],
    series: TimeSeries,
    pods: list[Pod],
    groups: list[PodGroup],
    reasons: dict[str, str] | None = None,
    outcomes: dict[str, JobOutcome] | None = None,
) -> Path:
    """Write ``report.html`` and its PNGs into ``out_dir`` (created if missing); ``reasons``
    says, by pod key, why a pod still pending could not be placed."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = [png.name for png in write_plots(out_dir, series, groups)]
    path = out_dir / "report.html"
    html = render_html(summary, pods, reasons, plots, groups, outcomes)
    path.write_text(html, encoding="utf-8")
    return path
