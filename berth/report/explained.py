"""Explained decisions (explain.json) as report.html's section and as terminal tables: per pod,
each filter's tally and the best nodes' scores, plugin by plugin, for the cycle that placed it
and the last cycle that refused it."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from berth.durations import format_duration
from berth.report.page import heading, table

CHOSEN = "◀ chosen"


def _filter_rows(decision: dict[str, Any]) -> list[list[str]]:
    rows = []
    for tally in decision["filters"]:
        rejected = ", ".join(
            f"{count} {reason}"
            for reason, count in sorted(tally["rejected"].items(), key=lambda i: (-i[1], i[0]))
        )
        rows.append([tally["plugin"], rejected or "—", str(tally["passed"])])
    return rows


def _score_header(decision: dict[str, Any]) -> list[str]:
    return [
        "node",
        "total",
        *(f"{name} ×{weight:g}" for name, weight in decision["weights"].items()),
        "",
    ]


def _score_rows(decision: dict[str, Any]) -> list[list[str]]:
    """Per listed node: its total and, per scorer, the weighted score with the raw one."""
    rows = []
    for score in decision["scores"]:
        cells = [
            f"{score['plugins'][name]['weighted']:.1f} ({score['plugins'][name]['raw']:.1f})"
            for name in decision["weights"]
        ]
        rows.append(
            [score["node"], f"{score['total']:.2f}", *cells, CHOSEN if score["chosen"] else ""]
        )
    return rows


def _title(decision: dict[str, Any]) -> str:
    when = f"at {format_duration(decision['time'])} (cycle {decision['cycle']})"
    if decision["node"] and decision["outcome"] != "rolled back":
        return f"{decision['outcome'].capitalize()} on {decision['node']} {when}"
    return f"{decision['outcome'].capitalize()} {when}"


def _summary_line(pod: dict[str, Any]) -> str:
    parts = [pod["phase"] + (f" on {pod['node']}" if pod["node"] else "")]
    if pod["refusals"]:
        first = format_duration(pod["first_refused"])
        parts.append(f"refused in {pod['refusals']} cycles, the first at {first}")
    if pod["reason"]:
        parts.append(pod["reason"])
    if pod["placed"] is None and pod["refused"] is None:
        parts.append("no node search was made for it (see the reason)")
    return " · ".join(parts)


def _decisions(pod: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The placing decision first, then the last refusal (what it waited for)."""
    for key in ("placed", "refused"):
        if pod[key] is not None:
            yield pod[key]


def _score_note(decision: dict[str, Any]) -> str:
    return (
        f"{decision['feasible']} of {decision['nodes']} nodes passed every filter; the best "
        "by total score (the weighted scores plus a tie-break below 0.000001), each plugin's "
        "weighted score with its raw 0–100 score in brackets"
    )


def explained_section(pods: list[dict[str, Any]] | None) -> str:
    if pods is None:
        return ""
    parts = [
        heading("explained", "Explained decisions"),
        '<p class="note">The pods asked for with --explain; explain.json has the same. '
        "Each filter counts the nodes it rejected among those the filters before it "
        "passed.</p>",
    ]
    if not pods:
        parts.append('<p class="note">No pod matched the patterns.</p>')
    for pod in pods:
        parts.append(f"<h3>{escape(pod['pod'])}</h3><p>{escape(_summary_line(pod))}</p>")
        for decision in _decisions(pod):
            parts.append(f"<h4>{escape(_title(decision))}</h4>")
            if decision["message"]:
                parts.append(f"<p>{escape(decision['message'])}</p>")
            if decision["filters"]:
                parts.append(
                    table(["filter", "nodes rejected", "nodes left"], _filter_rows(decision), 2)
                )
            if decision["scores"]:
                parts.append(f'<p class="note">{escape(_score_note(decision))}.</p>')
                parts.append(table(_score_header(decision), _score_rows(decision), 1))
    return "".join(parts)


def _rich_table(header: list[str], rows: list[list[str]], left: int) -> Table:
    result = Table(show_edge=True)
    for i, name in enumerate(header):
        result.add_column(name, justify="left" if i < left else "right")
    for row in rows:
        result.add_row(*(Text(cell) for cell in row))
    return result


def explained_console(pod: dict[str, Any]) -> RenderableType:
    """One pod's explanation for the terminal."""
    items: list[RenderableType] = [
        Text(pod["pod"], style="bold"),
        Text(_summary_line(pod)),
    ]
    for decision in _decisions(pod):
        items.append(Text(""))
        items.append(Text(_title(decision), style="bold"))
        if decision["message"]:
            items.append(Text(decision["message"]))
        if decision["filters"]:
            header = ["filter", "nodes rejected", "nodes left"]
            items.append(_rich_table(header, _filter_rows(decision), 2))
        if decision["scores"]:
            items.append(Text(_score_note(decision), style="dim"))
            items.append(_rich_table(_score_header(decision), _score_rows(decision), 1))
    return Group(*items)
