"""The side-by-side report of ``berth compare``: one table (values and ratios to the first
configuration) and overlaid plots, each configuration's own report one click away."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from berth.report.console import format_duration, format_percent
from berth.report.html import STYLE
from berth.report.plots import plot_cdfs, plot_fraction_overlay

if TYPE_CHECKING:
    from berth.compare import RunOutcome

COMPARE_PLOTS = {
    "compare_queueing_cdf.png": "Job queueing delay",
    "compare_jct_cdf.png": "Job completion time",
    "compare_allocation.png": "Allocation over time",
}


def _format(unit: str, value: float | None) -> str:
    if value is None:
        return "—"
    if unit == "seconds":
        return format_duration(value)
    if unit == "fraction":
        return format_percent(value)
    return f"{value:,.0f}"


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}×"


def _main_resource(outcomes: list[RunOutcome]) -> str | None:
    """GPU when the cluster has GPUs, otherwise CPU: what the allocation plot shows."""
    summary = outcomes[0].summary.get("allocation", {})
    for resource in ("nvidia.com/gpu", "cpu"):
        if resource in summary:
            return resource
    return None


def write_compare_plots(out: Path, outcomes: list[RunOutcome]) -> None:
    queueing, jct, allocation = (out / name for name in COMPARE_PLOTS)
    plot_cdfs(
        [(o.name, o.queueing) for o in outcomes], "Job queueing delay", "submit to start", queueing
    )
    plot_cdfs([(o.name, o.jct) for o in outcomes], "Job completion time", "submit to end", jct)
    resource = _main_resource(outcomes)
    curves = []
    if resource is not None:
        for o in outcomes:
            col = o.resources.index(resource)
            curves.append((o.name, o.times, o.allocation[:, col]))
    plot_fraction_overlay(
        curves,
        f"{resource or 'resource'} allocation over time",
        "fraction of capacity allocated",
        allocation,
    )


def write_compare_report(out: Path, table: dict[str, Any], outcomes: list[RunOutcome]) -> Path:
    write_compare_plots(out, outcomes)
    names = table["configs"]
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    body = []
    for row in table["rows"]:
        cells = []
        for i, name in enumerate(names):
            value = _format(row["unit"], row["values"][name])
            ratio = "" if i == 0 else _ratio(row["ratio_to_first"][name])
            cells.append(f"<td>{escape(value)} <span class='note'>{escape(ratio)}</span></td>")
        body.append(f"<tr><td class='text'>{escape(row['metric'])}</td>{''.join(cells)}</tr>")
    links = " · ".join(f"<a href='{escape(n)}/report.html'>{escape(n)}</a>" for n in names)
    plots = "".join(
        f"<h3>{escape(title)}</h3><img src='{escape(name)}' alt='{escape(title)}' "
        "width='800' height='450'>"
        for name, title in COMPARE_PLOTS.items()
    )
    html = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>berth comparison</title><style>{STYLE}</style></head><body>"
        "<h1>berth comparison</h1>"
        f"<p class='note'>Same workload and cluster; ratios are against {escape(names[0])}.</p>"
        f"<table><tr><th>metric</th>{head}</tr>{''.join(body)}</table>"
        f"<p>Each configuration's own report: {links}</p>"
        f"<h2>Plots</h2>{plots}</body></html>\n"
    )
    path = out / "compare.html"
    path.write_text(html, encoding="utf-8")
    return path


def comparison_console_table(outcomes: list[RunOutcome]) -> Table:
    from berth.compare import comparison_table

    table_data = comparison_table(outcomes)
    names = table_data["configs"]
    table = Table(title="Comparison (ratio to the first configuration)")
    table.add_column("metric")
    for name in names:
        table.add_column(name, justify="right")
    for row in table_data["rows"]:
        cells = []
        for i, name in enumerate(names):
            value = _format(row["unit"], row["values"][name])
            ratio = "" if i == 0 else f" ({_ratio(row['ratio_to_first'][name])})"
            cells.append(value + ratio)
        table.add_row(row["metric"], *cells)
    return table
