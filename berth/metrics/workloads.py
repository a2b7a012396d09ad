"""Workload objects after a run: ``workloads.csv`` (one row per object) and the ``workloads``
part of ``summary.json`` (the same, with each rollout on its own).

A rollout's duration runs from the version's submit time to when every pod that should run the
new revision did and was available (``kubectl rollout status`` would have returned); one that
never got there, or that a newer version replaced first, has none. ``pods_recreated`` are pods
deleted and created anew through the scheduler, ``pods_updated_in_place`` kept their name,
uid and node; ``peak_unavailable`` is the most desired replicas unavailable at once, and
``churn_*`` the requests of the pods the rollout took off their nodes.
"""

from __future__ import annotations

from os import PathLike
from typing import Any

from berth.api.workloads import UPSTREAM, Rollout, Workload
from berth.metrics.tables import format_decimal, write_rows
from berth.resources import CPU, MEMORY

WORKLOAD_COLUMNS = (
    "kind",
    "namespace",
    "name",
    "desired",
    "pods",
    "ready",
    "available",
    "updated",
    "phase",
    "pods_created",
    "pods_deleted",
    "rollouts",
    "rollouts_complete",
    "rollout_seconds",
    "pods_recreated",
    "pods_updated_in_place",
    "peak_unavailable",
    "peak_surge",
    "churn_cpu_cores",
    "churn_memory_bytes",
)


def kind_name(workload: Workload) -> str:
    """The kind as users know it, qualified where two upstream kinds share a name."""
    api_version, kind = UPSTREAM[workload.kind]
    if api_version.startswith("apps.kruise.io") and kind == "StatefulSet":
        return "StatefulSet (Kruise)"
    if api_version == "batch/v1":
        return "Job (batch/v1)"
    return kind


def duration(rollout: Rollout) -> float | None:
    return None if rollout.end is None else rollout.end - rollout.start


def rollout_summary(rollout: Rollout) -> dict[str, Any]:
    return {
        "revision": rollout.revision,
        "strategy": rollout.strategy,
        "start": rollout.start,
        "end": rollout.end,
        "duration": duration(rollout),
        "superseded": rollout.superseded,
        "replicas": rollout.replicas,
        "max_unavailable": rollout.max_unavailable,
        "pods_recreated": rollout.recreated,
        "pods_updated_in_place": rollout.in_place,
        "peak_unavailable": rollout.peak_unavailable,
        "peak_surge": rollout.peak_surge,
        "churn": dict(sorted(rollout.churn.items())),
    }


def workload_summary(workload: Workload) -> dict[str, Any]:
    """One object's row, as a dict (``summary.json``); ``rollouts`` lists them all."""
    status = workload.status
    rollouts = status.rollouts
    complete = [r for r in rollouts if r.end is not None]
    churn: dict[str, int] = {}
    for rollout in rollouts:
        for name, amount in rollout.churn.items():
            churn[name] = churn.get(name, 0) + amount
    return {
        "kind": kind_name(workload),
        "namespace": workload.namespace,
        "name": workload.name,
        "desired": status.desired,
        "pods": status.replicas,
        "ready": status.ready,
        "available": status.available,
        "updated": status.updated,
        "phase": status.phase,
        "pods_created": status.created,
        "pods_deleted": status.deleted,
        "rollouts": len(rollouts),
        "rollouts_complete": len(complete),
        "rollout_seconds": sum(r.end - r.start for r in complete) if complete else None,  # type: ignore[operator]
        "pods_recreated": sum(r.recreated for r in rollouts),
        "pods_updated_in_place": sum(r.in_place for r in rollouts),
        "peak_unavailable": max((r.peak_unavailable for r in rollouts), default=0),
        "peak_surge": max((r.peak_surge for r in rollouts), default=0),
        "churn": dict(sorted(churn.items())),
        "rollout_list": [rollout_summary(r) for r in rollouts],
    }


def summarize_workloads(workloads: list[Workload]) -> list[dict[str, Any]]:
    return [workload_summary(w) for w in workloads]


def write_workloads_csv(path: str | PathLike[str], summaries: list[dict[str, Any]]) -> None:
    rows = []
    for row in summaries:
        churn = row["churn"]
        rows.append(
            (
                row["kind"],
                row["namespace"],
                row["name"],
                str(row["desired"]),
                str(row["pods"]),
                str(row["ready"]),
                str(row["available"]),
                str(row["updated"]),
                row["phase"],
                str(row["pods_created"]),
                str(row["pods_deleted"]),
                str(row["rollouts"]),
                str(row["rollouts_complete"]),
                format_decimal(row["rollout_seconds"]),
                str(row["pods_recreated"]),
                str(row["pods_updated_in_place"]),
                str(row["peak_unavailable"]),
                str(row["peak_surge"]),
                format_decimal(churn[CPU] / 1000) if CPU in churn else "0",
                str(churn.get(MEMORY, 0)),
            )
        )
    write_rows(path, WORKLOAD_COLUMNS, rows)
