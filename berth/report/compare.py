"""The side-by-side report of ``berth compare``: one table (means over seeds with their spread,
ratios to the first configuration, better or worse marked), breakdowns per queue and per job
size, plots that stay readable over long traces, and each run's own report one click away."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from berth.durations import format_duration
from berth.metrics.comparison import BETTER, WORSE, RunOutcome, by_config
from berth.report.console import format_percent
from berth.report.figures import (
    HALF_WIDTH,
    LINESTYLES,
    Plot,
    bin_edges,
    binned,
    draw_cdfs,
    new_figure,
    no_data,
    percent_axis,
    save,
    stacked_figure,
    time_unit,
)
from berth.report.page import figures, heading, page
from berth.report.paper import write_paper

QUEUEING_FILE = "compare_queueing_cdf.png"
JCT_FILE = "compare_jct_cdf.png"
ALLOCATION_FILE = "compare_allocation.png"
COMPARE_PLOTS = (QUEUEING_FILE, JCT_FILE, ALLOCATION_FILE)
PAPER_LINK = (
    "<p>One page with the table and the JCT and queueing CDFs: <a href='paper.html'>paper.html</a>"
    ".</p>"
)
#: Marks that say better or worse without colour (a printout, a colour-blind reader).
MARKS = {BETTER: "✓", WORSE: "✗"}
_BREAKDOWN_COLUMNS = (
    ("queueing_mean", "queueing mean"),
    ("queueing_p95", "queueing p95"),
    ("jct_mean", "JCT mean"),
)


def format_value(unit: str, value: float | None) -> str:
    if value is None:
        return "—"
    if unit == "seconds":
        return format_duration(value)
    if unit == "fraction":
        return format_percent(value)
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def format_spread(unit: str, spread: float | None) -> str:
    """`` ± s`` for a spread over seeds (a fraction's in percentage points), or nothing."""
    if spread is None:
        return ""
    if unit == "fraction":
        return f" ± {spread * 100:.1f}pp"
    return f" ± {format_value(unit, spread)}"


def _ratio(ratio: float | None) -> str:
    return "" if ratio is None else f"{ratio:.2f}×"


def _cell(row: dict[str, Any], name: str) -> tuple[str, str, str | None]:
    """(value with spread, ratio with mark, verdict) of one configuration in one row."""
    unit = row["unit"]
    value = format_value(unit, row["values"][name]) + format_spread(unit, row["spread"][name])
    verdict = row["verdict"].get(name)
    ratio = _ratio(row["ratio_to_first"][name]) if name in row["verdict"] else ""
    mark = MARKS.get(verdict or "", "")
    return value, f"{ratio} {mark}".strip(), verdict


def _main_resources(outcomes: Sequence[RunOutcome]) -> list[str]:
    """Resources every run measured, but the pod count."""
    first = outcomes[0].summary.get("allocation", {})
    return [
        name
        for name in first
        if name != "pods" and all(name in o.summary.get("allocation", {}) for o in outcomes)
    ]


def plot_allocation(outcomes: Sequence[RunOutcome], path: Path) -> Plot:
    """One panel per resource, one line per configuration: the share allocated, as the mean
    over equal time bins and over the configuration's seeds, so that configurations can be
    told apart over a 60-day trace."""
    title = "Allocation over time"
    resources = _main_resources(outcomes) if outcomes else []
    figure, panels = stacked_figure(len(resources))
    runs = by_config(outcomes)
    spans = [float(o.times[-1]) for o in outcomes if len(o.times)]
    if not resources or not spans:
        no_data(panels[0])
        return Plot(save(figure, path), title)
    edges = bin_edges(0.0, max(spans))
    scale, unit = time_unit(max(spans))
    for axes, resource in zip(panels, resources, strict=True):
        for k, (name, seeds) in enumerate(runs.items()):
            curves = []
            for outcome in seeds:
                column = outcome.allocation[:, outcome.resources.index(resource)]
                starts, means, _, _ = binned(outcome.times, column, edges)
                curve = np.full(len(edges) - 1, np.nan)
                curve[np.searchsorted(edges, starts)] = means
                curves.append(curve)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # no seed reached a bin: a gap
                line = np.nanmean(np.vstack(curves), axis=0)
            style = LINESTYLES[k % len(LINESTYLES)]
            axes.plot(edges[:-1] / scale, line, drawstyle="steps-post", label=name, ls=style)
        axes.set_title(f"{resource} allocated", fontsize="medium", loc="left")
        percent_axis(axes)
    panels[0].legend(loc="upper right", fontsize="small", ncols=min(len(runs), 4))
    panels[-1].set_xlabel(f"simulated time ({unit})")
    width = format_duration(float(edges[1] - edges[0]))
    seeds = max(len(s) for s in runs.values())
    caption = f"each step: mean of {width}" + (f" and of {seeds} seeds" if seeds > 1 else "")
    return Plot(save(figure, path), title, caption)


def plot_cdf(outcomes: Sequence[RunOutcome], which: str, path: Path) -> Plot:
    """The CDF of every job's queueing delay (``which`` = "queueing") or JCT, per configuration,
    pooling its seeds."""
    title = "Job queueing delay" if which == "queueing" else "Job completion time"
    figure, (axes,) = new_figure(1, 3.8, HALF_WIDTH)
    axes.set_title(title)
    named = [
        (name, np.concatenate([getattr(o, which) for o in seeds]))
        for name, seeds in by_config(outcomes).items()
    ]
    draw_cdfs(axes, named, "submit to start" if which == "queueing" else "submit to end")
    return Plot(save(figure, path), title)


def write_compare_plots(out: Path, outcomes: Sequence[RunOutcome]) -> list[Plot]:
    return [
        plot_cdf(outcomes, "queueing", out / QUEUEING_FILE),
        plot_cdf(outcomes, "jct", out / JCT_FILE),
        plot_allocation(outcomes, out / ALLOCATION_FILE),
    ]


def _metrics_table(table: dict[str, Any]) -> str:
    names = table["configs"]
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    body = []
    for row in table["rows"]:
        cells = []
        for name in names:
            value, ratio, verdict = _cell(row, name)
            css = f" class='{verdict}'" if verdict in MARKS else ""
            cells.append(f"<td{css}>{escape(value)} <span class='note'>{escape(ratio)}</span></td>")
        direction = "lower is better" if row["lower_is_better"] else "higher is better"
        body.append(
            f"<tr><td class='text'>{escape(row['metric'])} "
            f"<span class='note'>({direction})</span></td>{''.join(cells)}</tr>"
        )
    return f"<table><tr><th class='text'>metric</th>{head}</tr>{''.join(body)}</table>"


def _breakdown_table(names: list[str], breakdown: dict[str, Any]) -> str:
    """Rows per group; per configuration its jobs and delays (means over seeds)."""
    top = "".join(f"<th colspan='{len(_BREAKDOWN_COLUMNS)}'>{escape(name)}</th>" for name in names)
    sub = "".join(f"<th>{escape(label)}</th>" for _ in names for _, label in _BREAKDOWN_COLUMNS)
    rows = []
    for row in breakdown["rows"]:
        jobs = next(
            (row["values"][n]["jobs"]["mean"] for n in names if row["values"][n]["jobs"]["mean"]),
            None,
        )
        cells = []
        for name in names:
            figures_ = row["values"][name]
            for stat, _ in _BREAKDOWN_COLUMNS:
                item = figures_[stat]
                text = format_value("seconds", item["mean"]) + format_spread(
                    "seconds", item["spread"]
                )
                cells.append(f"<td>{escape(text)}</td>")
        rows.append(
            f"<tr><td class='text'>{escape(row['group'])}</td>"
            f"<td>{escape(format_value('count', jobs))}</td>{''.join(cells)}</tr>"
        )
    return (
        f"<table><tr><th class='text' rowspan='2'>{escape(breakdown['by'])}</th>"
        f"<th rowspan='2'>jobs</th>{top}</tr><tr>{sub}</tr>{''.join(rows)}</table>"
    )


def _links(table: dict[str, Any]) -> str:
    items = []
    for name in table["configs"]:
        folders = table.get("folders", {}).get(name, [name])
        seeds = table["seeds"][name]
        if len(folders) == 1:
            items.append(f"<a href='{escape(folders[0])}/report.html'>{escape(name)}</a>")
        else:
            runs = ", ".join(
                f"<a href='{escape(folder)}/report.html'>seed {seed}</a>"
                for folder, seed in zip(folders, seeds, strict=True)
            )
            items.append(f"{escape(name)} ({runs})")
    return "<p>Each run's own report: " + " · ".join(items) + "</p>"


def render_compare(table: dict[str, Any], plots: Sequence[Plot]) -> str:
    names = table["configs"]
    seeds = max(len(s) for s in table["seeds"].values())
    spread = (
        f"Values are means over {seeds} seeds ± their standard deviation; ratios are of means. "
        if seeds > 1
        else ""
    )
    intro = (
        f"<p class='note'>Same workload and cluster. {spread}Ratios are against "
        f"{escape(names[0])}; ✓ marks better, ✗ worse (by more than 1%"
        + (", and by more than two standard errors" if seeds > 1 else "")
        + ").</p>"
    )
    breakdowns = table["breakdowns"]
    sections = [
        heading("metrics", "Metrics") + PAPER_LINK + intro + _metrics_table(table) + _links(table),
        heading("breakdowns", "Per queue and per job size")
        + "<p class='note'>Job queueing delay and JCT of each group of jobs (means over "
        "seeds).</p>"
        + _breakdown_table(names, breakdowns["queue"])
        + _breakdown_table(names, breakdowns["size"]),
        heading("plots", "Plots")
        + figures([p for p in plots if p.path.name != ALLOCATION_FILE], pair=True)
        + figures([p for p in plots if p.path.name == ALLOCATION_FILE]),
    ]
    nav = [("metrics", "Metrics"), ("breakdowns", "Breakdowns"), ("plots", "Plots")]
    return page("berth comparison", sections, nav)


def write_compare_report(out: Path, table: dict[str, Any], outcomes: Sequence[RunOutcome]) -> Path:
    plots = write_compare_plots(out, outcomes)
    path = out / "compare.html"
    path.write_text(render_compare(table, plots), encoding="utf-8")
    write_paper(out, table, outcomes)
    return path


def comparison_console_table(table: dict[str, Any]) -> Table:
    """The metrics table for the terminal, better in green and worse in red."""
    names = table["configs"]
    seeds = max(len(s) for s in table["seeds"].values())
    title = "Comparison (ratio to the first configuration; ✓ better, ✗ worse)"
    if seeds > 1:
        title += f": means over {seeds} seeds ± standard deviation"
    console = Table(title=title)
    console.add_column("metric")
    for name in names:
        console.add_column(name, justify="right")
    style = {BETTER: "green", WORSE: "red"}
    for row in table["rows"]:
        cells = []
        for name in names:
            value, ratio, verdict = _cell(row, name)
            text = f"{value} ({ratio})" if ratio else value
            colour = style.get(verdict or "")
            cells.append(f"[{colour}]{text}[/{colour}]" if colour else text)
        console.add_row(row["metric"], *cells)
    return console
