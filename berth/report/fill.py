"""Fill-until-full results: a CSV of every run's curve, a summary of the means, and a plot of
GPU allocation against the arrived workload, one line per policy."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from berth.report.figures import new_figure, save
from berth.report.plotter import Plotter
from berth.sim.fill import FillRun, mean_curves


def fill_summary(runs: list[FillRun]) -> dict[str, Any]:
    """Per policy: mean and spread of the final allocation over the seeds, and each run."""
    policies: dict[str, dict[str, Any]] = {}
    for run in runs:
        entry = policies.setdefault(run.label, {"runs": []})
        entry["runs"].append(run.summary())
    for entry in policies.values():
        finals = np.array([r["gpu_allocation_percent"] for r in entry["runs"]])
        unallocated = np.array([r["gpus_unallocated"] for r in entry["runs"]])
        frag = np.array([r["fragmentation_percent"] for r in entry["runs"]])
        entry.update(
            seeds=len(finals),
            gpu_allocation_percent=round(float(finals.mean()), 2),
            gpu_allocation_std=round(float(finals.std()), 2),
            gpus_unallocated=round(float(unallocated.mean()), 1),
            fragmentation_percent=round(float(frag.mean()), 2),
        )
    return {"policies": policies}


def write_fill_outputs(
    runs: list[FillRun], out: Path, plotter: Plotter | None = None
) -> dict[str, Any]:
    """``fill.csv`` (every sample of every run), ``summary.json`` and ``allocation.png`` (drawn
    by ``plotter`` while the rest is written)."""
    out.mkdir(parents=True, exist_ok=True)
    drawn = (plotter or Plotter()).draw(plot_allocation, runs, out / "allocation.png")
    with open(out / "fill.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            ["policy", "seed", "arrived_percent", "allocated_percent", "fragmented_percent"]
        )
        for run in runs:
            for arrived, allocated, frag in zip(
                run.arrived, run.allocated, run.fragmented, strict=True
            ):
                writer.writerow(
                    [run.label, run.seed, f"{arrived:.3f}", f"{allocated:.3f}", f"{frag:.3f}"]
                )
    summary = fill_summary(runs)
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    drawn()
    return summary


def plot_allocation(runs: list[FillRun], path: Path, title: str = "") -> None:
    figure, (axes,) = new_figure()
    for policy, curve in mean_curves(runs).items():
        axes.plot(curve["arrived"], curve["allocated"], label=policy)
    axes.plot([0, 100], [0, 100], color="0.8", linestyle=":", linewidth=1)
    axes.set_xlabel("arrived workload (% of cluster GPUs requested)")
    axes.set_ylabel("GPUs allocated (%)")
    if title:
        axes.set_title(title)
    axes.legend(loc="lower right")
    save(figure, path)
