"""Which jobs met their deadlines (``berth.api.deadline``): jobs.csv's ``deadline`` and
``deadline_status`` columns and the summary's ``deadlines`` section, present only when some
job has a deadline, so runs without deadlines write what they always wrote.

A job's status: ``met`` (completed by its deadline), ``missed`` (completed after it, or
not completed by a deadline the run reached), ``open`` (not completed when the run ended,
its deadline still ahead: ``--until`` cut it short), ``dropped`` (refused by a
deadline-aware admission test: it never ran).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.api.deadline import DROPPED_REASON, deadline_of
from berth.api.objects import GroupPhase, PodGroup

STATUSES = ("met", "missed", "open", "dropped")


def deadline_status(group: PodGroup, deadline: float, reason: str, end_time: float) -> str:
    if reason.startswith(DROPPED_REASON):
        return "dropped"
    if group.phase == GroupPhase.COMPLETED and group.end_time is not None:
        return "met" if group.end_time <= deadline else "missed"
    return "open" if deadline > end_time else "missed"


def deadline_columns(
    groups: list[PodGroup], reasons: Mapping[str, str], end_time: float
) -> dict[str, tuple[float, str]] | None:
    """Per group with a deadline: (deadline, status); None when no group has one. ``reasons``
    is jobs.csv's reason by group key, ``end_time`` when the run ended."""
    columns = {}
    for group in groups:
        deadline = deadline_of(group.annotations)
        if deadline is not None:
            status = deadline_status(group, deadline, reasons.get(group.key, ""), end_time)
            columns[group.key] = (deadline, status)
    return columns or None


def summarize_deadlines(columns: dict[str, tuple[float, str]]) -> dict[str, Any]:
    """Counts by status and the share met, of every job with a deadline and of the jobs
    admitted (not dropped); jobs left open count in neither share."""
    counts = dict.fromkeys(STATUSES, 0)
    for _, status in columns.values():
        counts[status] += 1
    jobs = len(columns) - counts["open"]
    admitted = jobs - counts["dropped"]
    return {
        "jobs": len(columns),
        **counts,
        "met_share": round(counts["met"] / jobs, 4) if jobs else 0.0,
        "met_share_of_admitted": round(counts["met"] / admitted, 4) if admitted else 0.0,
    }
