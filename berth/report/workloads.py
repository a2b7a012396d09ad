"""The report's workloads section: each workload object (Deployment, CloneSet, Job, ...) and
each of its rollouts, from the ``workloads`` part of the summary."""

from __future__ import annotations

from typing import Any

from berth.durations import format_duration
from berth.report.page import heading, table
from berth.resources import CPU, MEMORY, format_amount


def churn_text(churn: dict[str, int]) -> str:
    parts = [
        f"{format_amount(name, churn[name])} {name}" for name in (CPU, MEMORY) if churn.get(name)
    ]
    return ", ".join(parts) or "—"


def workloads_section(summary: dict[str, Any]) -> str:
    """Each workload object, then each rollout (absent for runs without workload objects)."""
    workloads = summary.get("workloads")
    if not workloads:
        return ""
    rows = [
        [
            row["kind"],
            row["name"] if row["namespace"] == "default" else f"{row['namespace']}/{row['name']}",
            row["phase"] or "—",
            f"{row['available']}/{row['desired']}",
            str(row["pods_created"]),
            str(row["pods_deleted"]),
            f"{row['rollouts_complete']}/{row['rollouts']}",
        ]
        for row in workloads
    ]
    header = ["kind", "name", "phase", "available", "pods created", "deleted", "rollouts done"]
    html = heading("workloads", "Workloads") + table(header, rows, text_columns=3)
    rollouts = [
        [
            row["name"],
            rollout["strategy"],
            format_duration(rollout["start"]),
            format_duration(rollout["duration"])
            if rollout["duration"] is not None
            else ("superseded" if rollout["superseded"] is not None else "not done"),
            str(rollout["pods_recreated"]),
            str(rollout["pods_updated_in_place"]),
            f"{rollout['peak_unavailable']}"
            + ("" if rollout["max_unavailable"] is None else f" (≤ {rollout['max_unavailable']})"),
            str(rollout["peak_surge"]),
            churn_text(rollout["churn"]),
        ]
        for row in workloads
        for rollout in row["rollout_list"]
    ]
    if rollouts:
        header = [
            "workload",
            "strategy",
            "at",
            "took",
            "recreated",
            "in place",
            "peak unavailable",
            "peak surge",
            "capacity churn",
        ]
        note = (
            '<p class="note">A rollout is done when every pod that should run the new revision '
            "does and is available. Recreated pods went through the scheduler again; capacity "
            "churn is what they held on the nodes they left.</p>"
        )
        html += "<h3>Rollouts</h3>" + note + table(header, rollouts, text_columns=2)
    return html
