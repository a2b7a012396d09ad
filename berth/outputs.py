"""What a run leaves behind: its output folder checked before it starts, then summary.json,
pods.csv, jobs.csv, workloads.csv, timeseries.csv and the report written from its result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from berth.api.objects import GroupPhase, JobPhase, PodPhase
from berth.collector import new_objects_only
from berth.framework.explain import PodRecord
from berth.metrics.deadlines import deadline_columns, summarize_deadlines
from berth.metrics.loaning import summarize_loaning
from berth.metrics.summary import eviction_cause, summarize, write_summary
from berth.metrics.tables import JobOutcome, write_jobs_csv, write_pods_csv, write_timeseries_csv
from berth.metrics.workloads import summarize_workloads, write_workloads_csv
from berth.report.html import report_figures, write_report
from berth.report.plots import job_delays
from berth.report.plotter import Plotter
from berth.sim.engine import SimResult
from berth.sim.inputs import InputError

#: What a folder berth wrote holds; a folder with only these may be written over.
RUN_MARKERS = ("summary.json", "compare.json")


def prepare_output(out_dir: str | Path, force: bool = False) -> str | None:
    """Check before anything runs that results can be written to ``out_dir`` (created when
    they are written): a folder holding an earlier berth run is written over (the note returned
    says so); one holding anything else is refused unless ``force``, so no file of the user's
    is lost."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    note = None
    if out.is_dir():
        entries = {entry.name for entry in out.iterdir()}
        if entries & set(RUN_MARKERS):
            note = f"writing over the earlier run in {out}"
        elif entries and force:
            note = f"writing into {out}, which holds other files (--force)"
        elif entries:
            raise InputError(
                f"--out {out}: holds files berth did not write; choose a new or empty folder, "
                "or give --force to write into it"
            )
        existing = out
    else:
        existing = next(parent for parent in out.absolute().parents if parent.exists())
        if not existing.is_dir():
            raise InputError(f"--out {out}: cannot create ({existing} is not a folder)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: cannot write in {existing}")
    return note


def job_outcomes(result: SimResult) -> dict[str, JobOutcome]:
    """Per group: pods made, the batch Job's phase and retries, preemptions, and a reason: the
    scheduler's for a group still waiting (not yet admitted, or with pods still pending), the
    Job's last condition for one that ended; none for a group whose pods all run."""
    outcomes = {group.key: JobOutcome() for group in result.groups}
    waiting = {group.key for group in result.groups if group.phase == GroupPhase.PENDING}
    for pod in result.pods:
        key = pod.job_key
        outcome = outcomes.get(key)
        if outcome is None:
            continue
        outcome.tasks += 1
        if pod.waited_for and not outcome.waited_for:
            outcome.waited_for = pod.waited_for
        cause = eviction_cause(result.reasons.get(pod.ref, ""))
        if pod.phase == PodPhase.EVICTED and cause != "other":
            outcome.preemptions += 1
        if pod.phase == PodPhase.PENDING:
            waiting.add(key)
            if not outcome.reason:
                outcome.reason = result.reasons.get(pod.ref, "")
    for key, reason in result.scheduler.last_reasons.every():
        if key in outcomes and key in waiting:
            outcomes[key].reason = str(reason)
    for job in result.jobs:
        outcome = outcomes.get(job.key)
        if outcome is None:
            continue
        outcome.phase, outcome.retries = str(job.phase), job.retries
        outcome.resizes = job.resizes
        if job.key not in waiting and job.phase != JobPhase.RUNNING and job.conditions:
            outcome.reason = job.conditions[-1][2]
    return outcomes


#: Where a run keeps the decisions it was asked to explain (``simulate --explain``).
EXPLAIN_FILE = "explain.json"


def explanations(result: SimResult) -> dict[str, Any] | None:
    """The explained pods of a run asked to explain some (None otherwise): per pod its end
    state and reason as pods.csv has them, and the decisions recorded for it."""
    explainer = result.scheduler.explainer
    if explainer is None:
        return None
    pods = []
    for pod in result.pods:
        if not explainer.wants(pod):
            continue
        record = explainer.records.get(pod.key)
        pods.append(
            {
                "pod": pod.key,
                "job": pod.job_key,
                "phase": str(pod.phase),
                "node": pod.bound_node,
                "reason": result.reasons.get(pod.ref, ""),
                **(PodRecord() if record is None else record).to_dict(),
            }
        )
    return {"patterns": explainer.patterns, "pods": pods}


def write_outputs(
    result: SimResult,
    out_dir: str | Path,
    provenance: dict[str, Any] | None = None,
    plotter: Plotter | None = None,
) -> tuple[dict[str, Any], Path]:
    """summary.json, pods.csv, jobs.csv, workloads.csv, timeseries.csv, report.html (+ PNGs)
    and, for a run asked to explain pods, explain.json in out_dir;
    ``provenance`` (``berth.metrics.provenance.describe``) goes into the summary and report.
    The PNGs are drawn by ``plotter`` (in its worker, while the tables are written)."""
    with new_objects_only():
        return _write_outputs(result, Path(out_dir), provenance, plotter or Plotter())


def _write_outputs(
    result: SimResult, out: Path, provenance: dict[str, Any] | None, plotter: Plotter
) -> tuple[dict[str, Any], Path]:
    out.mkdir(parents=True, exist_ok=True)
    drawn = plotter.draw(report_figures, out, result.series, job_delays(result.groups))
    summary = summarize(
        result.pods,
        result.groups,
        result.series,
        seed=result.seed,
        events=result.events,
        wall_seconds=result.wall_seconds,
        end_time=result.end_time,
        reasons=result.reasons,
        workloads=summarize_workloads(result.workloads),
        loaning=None
        if result.loaning is None
        else summarize_loaning(result.loaning, result.series, result.end_time),
    )
    if result.colocation is not None:
        summary["colocation"] = result.colocation  # see berth.sim.colocation
    if result.scaling is not None:
        summary["scaling"] = result.scaling  # see berth.sim.scaling
    outcomes = job_outcomes(result)
    reasons = {key: outcome.reason for key, outcome in outcomes.items()}
    deadlines = deadline_columns(result.groups, reasons, result.end_time)
    if deadlines is not None:
        summary["deadlines"] = summarize_deadlines(deadlines)
    if provenance is not None:
        summary["provenance"] = provenance
    write_summary(out / "summary.json", summary)
    write_workloads_csv(out / "workloads.csv", summary.get("workloads", []))
    group_queue = {g.key: g.queue for g in result.groups}
    write_pods_csv(out / "pods.csv", result.pods, group_queue, result.reasons)
    write_jobs_csv(out / "jobs.csv", result.groups, outcomes, deadlines)
    write_timeseries_csv(result.series, out / "timeseries.csv")
    explained = explanations(result)
    if explained is None:
        (out / EXPLAIN_FILE).unlink(missing_ok=True)  # an earlier run's, written over
    else:
        write_summary(out / EXPLAIN_FILE, explained)
    report = write_report(
        out,
        summary,
        result.series,
        result.pods,
        result.groups,
        result.reasons,
        outcomes,
        None if explained is None else explained["pods"],
        drawn(),
    )
    return summary, report
