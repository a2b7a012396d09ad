"""The one-page summary of ``berth compare``: one row per configuration (jobs completed, mean and
p95 JCT, mean queueing delay, pods preempted, deadlines met, missed and dropped when the jobs
have deadlines, GPU utilization) and one figure, the JCT and queueing delay CDFs of every
configuration, so that a comparison of policies can go into a paper or a slide as it is.
``paper.html`` is the page (self-contained, as every berth page), ``paper.md`` the same table in
Markdown and ``paper_cdf.png`` the figure.

The numbers are those of ``compare.json`` (means over seeds), which with one seed are each
run's own ``summary.json``."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from berth.metrics.comparison import RunOutcome, by_config
from berth.report.figures import WIDTH, Plot, draw_cdfs, row_figure, save
from berth.report.page import figure, page, table
from berth.resources import GPU

PAGE_FILE = "paper.html"
MARKDOWN_FILE = "paper.md"
FIGURE_FILE = "paper_cdf.png"

#: Columns: (heading, compare.json metric, how a value is written). Deadline columns appear when
#: the comparison has deadline rows, the GPU column when the runs measured GPUs.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("jobs completed", "jobs completed", "count"),
    ("mean JCT (h)", "JCT mean", "hours"),
    ("p95 JCT (h)", "JCT p95", "hours"),
    ("mean queueing (s)", "queueing delay mean", "count"),
    ("pods preempted", "pods preempted", "count"),
    ("deadlines met", "deadlines met", "count"),
    ("met, share", "deadlines met, share", "percent"),
    ("deadlines missed", "deadlines missed", "count"),
    ("jobs dropped", "jobs dropped", "count"),
    ("GPU utilization", f"{GPU} utilization", "percent"),
)


def cell(form: str, value: float | None) -> str:
    """A value as the page writes it: hours to 2 decimals, shares in percent to 1, counts and
    seconds whole (a mean over seeds to 1 decimal when it is not whole)."""
    if value is None:
        return "—"
    if form == "hours":
        return f"{value / 3600:,.2f}"
    if form == "percent":
        return f"{value * 100:.1f}%"
    return f"{value:,.0f}" if float(value).is_integer() or value >= 100 else f"{value:,.1f}"


def paper_rows(table_: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The header and one row per configuration, from the comparison table (compare.json)."""
    rows = {row["metric"]: row for row in table_["rows"]}
    columns = [column for column in COLUMNS if column[1] in rows]
    header = ["policy", *(heading for heading, _, _ in columns)]
    body = [
        [name, *(cell(form, rows[metric]["values"][name]) for _, metric, form in columns)]
        for name in table_["configs"]
    ]
    return header, body


def plot_cdfs(outcomes: Sequence[RunOutcome], path: Path) -> Plot:
    """Every configuration's JCT CDF and, beside it, its queueing delay CDF (its seeds' jobs
    pooled): on a trace at moderate load JCT is mostly run time and the curves of policies
    lie close, while the wait before a first start tells them apart."""
    title = "Job completion time and queueing delay, per policy"
    figure_, (left, right) = row_figure(2, 4.0, WIDTH * 1.2)
    runs = by_config(outcomes).items()
    left.set_title("JCT")
    draw_cdfs(left, [(name, np.concatenate([o.jct for o in seeds])) for name, seeds in runs], "JCT")
    right.set_title("Queueing delay")
    waits = [(name, np.concatenate([o.queueing for o in seeds])) for name, seeds in runs]
    draw_cdfs(right, waits, "submit to first start")
    return Plot(save(figure_, path), title)


def markdown(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def write_paper(out: Path, table_: dict[str, Any], outcomes: Sequence[RunOutcome]) -> Path:
    """Write the page, its Markdown table and its figure into ``out``; return the page."""
    header, body = paper_rows(table_)
    plot = plot_cdfs(outcomes, out / FIGURE_FILE)
    seeds = max(len(s) for s in table_["seeds"].values())
    over = f"means over {seeds} seeds" if seeds > 1 else "one run each"
    provenance = table_.get("provenance", {})
    read = "; ".join(str(note) for note in provenance.get("how_inputs_were_read", []))
    command = " ".join(str(word) for word in provenance.get("command", []))
    note = (
        f"<p class='note'>Same workload and cluster for every policy ({over}"
        + (f"; {escape(read)}" if read else "")
        + "). Queueing is submit to first start; pods preempted counts evictions by preempt; "
        "GPU utilization is the time-weighted share of the cluster's GPUs in use. Each "
        "policy's full report and the comparison's details are in compare.html.</p>"
    )
    if command:
        note += f"<p class='note'><code>{escape(command)}</code></p>"
    (out / MARKDOWN_FILE).write_text(markdown(header, body), encoding="utf-8")
    path = out / PAGE_FILE
    path.write_text(page("Policies compared", [note + table(header, body), figure(plot)]))
    return path
