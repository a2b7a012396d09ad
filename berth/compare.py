"""``berth compare``: the same workload and cluster under several scheduler configurations.

Each run (a configuration under one seed) goes to a worker process (the runs are independent and
CPU-bound) and writes its full output folder; the parent gathers the headline numbers and the
distributions (``berth.metrics.comparison``) and writes one side-by-side report with means over
seeds, spread and ratios against the first configuration.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from multiprocessing import Manager
from pathlib import Path
from typing import Any

import numpy as np

from berth.api.loaded import Manifests
from berth.executors import (
    LOCAL,
    Executor,
    folder_files,
    raise_failures,
    ray_map,
    scratch,
    write_files,
)
from berth.metrics.breakdown import job_sample
from berth.metrics.comparison import RunOutcome, comparison_table
from berth.metrics.provenance import describe, resolved_configuration
from berth.outputs import write_outputs
from berth.report.compare import write_compare_report
from berth.sim.engine import expected_end
from berth.sim.inputs import InputSpec
from berth.sim.run import Inputs, load_inputs, simulate, until_cuts_nothing


def config_names(configs: Sequence[str]) -> list[str]:
    """Directory-safe, unique names for the configurations (file stems, or "default")."""
    names: list[str] = []
    for config in configs:
        base = "default" if config == "default" else Path(config).stem
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.append(name)
    return names


@dataclass(frozen=True, slots=True)
class RunProgress:
    """What a run reports as it goes: once at its start (its cluster size and the simulated
    time it should reach), then the simulated time reached, then that it is done."""

    name: str
    nodes: int = 0
    horizon: float = 0.0
    now: float = 0.0
    done: bool = False


Report = Callable[[RunProgress], None]


def run_folder(name: str, seed: int, seeds: int) -> str:
    """Where one run writes its outputs, under the comparison's folder: ``<config>`` with one
    seed, ``<config>/seed-<s>`` with several."""
    return name if seeds == 1 else f"{name}/seed-{seed}"


def run_label(name: str, seed: int, seeds: int) -> str:
    """How progress and errors name a run."""
    return name if seeds == 1 else f"{name} seed {seed}"


def run_one(
    spec: InputSpec,
    config: str,
    name: str,
    out_dir: str,
    command: list[str] | None = None,
    report: Report | None = None,
    seeds: int = 1,
) -> RunOutcome:
    """One configuration under ``spec.seed``, start to finish (runs in a worker process, where
    ``report`` puts its progress on a queue the parent reads)."""
    return run_loaded(spec, load_inputs(spec, config), name, out_dir, command, report, seeds)


def run_loaded(
    spec: InputSpec,
    inputs: Inputs,
    name: str,
    out_dir: str,
    command: list[str] | None = None,
    report: Report | None = None,
    seeds: int = 1,
    provenance: dict[str, Any] | None = None,
) -> RunOutcome:
    """``run_one`` on inputs already loaded (a Ray task's, shared by every run);
    ``provenance``: as the caller described the run (where the input files are)."""
    label = run_label(name, spec.seed, seeds)
    until = inputs.until if spec.until is None else spec.until
    if report is not None:
        horizon = expected_end(inputs.manifests.pods, until)
        report(RunProgress(label, len(inputs.manifests.nodes), horizon))
    result = simulate(
        inputs,
        spec.seed,
        spec.until,
        None if report is None else (lambda now: report(RunProgress(label, now=now))),
    )
    if provenance is None:
        provenance = describe(spec, inputs.config, inputs.notes, command)
    folder = Path(out_dir) / run_folder(name, spec.seed, seeds)
    summary, _ = write_outputs(result, folder, provenance)
    if report is not None:
        report(RunProgress(label, done=True))
    series = result.series
    capacity = np.maximum(series.capacity, 1e-12)
    allocation = np.where(series.capacity > 0, series.allocated / capacity, np.nan)
    return RunOutcome(
        name,
        spec.seed,
        summary,
        job_sample(result.pods, result.groups),
        np.array(series.times),
        allocation,
        list(series.resources),
        result.quiet_from,
    )


def compare(
    spec: InputSpec,
    configs: Sequence[str],
    out_dir: str | Path,
    workers: int | None = None,
    progress: Report | None = None,
    command: list[str] | None = None,
    warn: Callable[[str], None] | None = None,
    seeds: int = 1,
    executor: Executor = LOCAL,
) -> tuple[dict[str, Any], Path]:
    """Run every configuration under ``seeds`` seeds (``spec.seed`` and the ones after it)
    and write ``compare.html``, ``compare.json`` and plots; returns the table (as written to
    compare.json) and the page's path.

    Every configuration is loaded and checked before any run starts: a bad file fails first,
    and ``warn`` hears each configuration's warnings (prefixed with its name) and any two
    configurations that resolve to the same policy."""
    names = config_names(configs)
    checked = [load_inputs(spec, config, check_only=True) for config in configs]
    if warn is not None:
        for message in _warnings(names, checked):
            warn(message)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runs = [
        (replace(spec, seed=spec.seed + k), config, name)
        for config, name in zip(configs, names, strict=True)
        for k in range(seeds)
    ]
    workers = workers or min(len(runs), os.cpu_count() or 1)
    ordered: list[RunOutcome] = []
    if executor.remote:
        ordered = _on_ray(executor, spec, configs, checked, runs, out, command, progress, seeds)
    elif workers <= 1:
        for run_spec, config, name in runs:
            ordered.append(run_one(run_spec, config, name, str(out), command, progress, seeds))
    else:
        with Manager() as manager, ProcessPoolExecutor(max_workers=workers) as pool:
            updates = manager.Queue() if progress is not None else None
            report = None if updates is None else updates.put
            futures = [
                pool.submit(run_one, run_spec, config, name, str(out), command, report, seeds)
                for run_spec, config, name in runs
            ]
            relay = _relay(updates, progress, len(futures)) if progress else None
            ordered = [future.result() for future in futures]
            if relay is not None:
                relay.join()
    quiet = [outcome.quiet_from for outcome in ordered]
    if warn is not None and spec.until is not None and None not in quiet:
        warn(until_cuts_nothing(spec.until, max(q for q in quiet if q is not None)))
    table = comparison_table(ordered)
    table["folders"] = {
        name: [run_folder(name, o.seed, seeds) for o in ordered if o.config == name]
        for name in names
    }
    table["provenance"] = {
        **describe(spec, checked[0].config, checked[0].notes, command),
        "configuration": {
            name: resolved_configuration(inputs.config)
            for name, inputs in zip(names, checked, strict=True)
        },
    }
    (out / "compare.json").write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
    report = write_compare_report(out, table, ordered)
    return table, report


def _on_ray(
    executor: Executor,
    spec: InputSpec,
    configs: Sequence[str],
    checked: list[Inputs],
    runs: list[tuple[InputSpec, str, str]],
    out: Path,
    command: list[str] | None,
    progress: Report | None,
    seeds: int,
) -> list[RunOutcome]:
    """Every run as a Ray task. The workload is read here once per seed and shared through the
    object store; each task gets its configuration as checked here and the provenance
    described here (where the files are), and sends its output folder back to be written
    under ``out``."""
    inputs_of = dict(zip(configs, checked, strict=True))
    shared = {
        seed: load_inputs(replace(spec, seed=seed), configs[0]).manifests
        for seed in sorted({run_spec.seed for run_spec, _, _ in runs})
    }
    tasks = []
    for run_spec, config, name in runs:
        inputs = inputs_of[config]
        provenance = describe(run_spec, inputs.config, inputs.notes, command)
        tasks.append((run_spec.seed, (run_spec, inputs, name, command, seeds, provenance)))
    labels = [run_label(name, run_spec.seed, seeds) for run_spec, _, name in runs]

    def finished(_count: int, label: str) -> None:
        if progress is not None:
            progress(RunProgress(label, done=True))

    results = ray_map(executor, _ray_run, shared, tasks, labels, finished)
    ordered = []
    for (run_spec, _, name), result in zip(runs, results, strict=True):
        if isinstance(result, tuple):
            outcome, files = result
            write_files(out / run_folder(name, run_spec.seed, seeds), files)
            ordered.append(outcome)
    raise_failures(results, f"the other runs' folders are in {out}")
    return ordered


def _ray_run(manifests: Manifests, item: tuple) -> tuple[RunOutcome, dict[str, bytes]]:
    """One run on a Ray worker: simulated into a scratch folder whose files go back."""
    spec, inputs, name, command, seeds, provenance = item
    inputs = replace(inputs, manifests=manifests)
    with scratch() as folder:
        outcome = run_loaded(spec, inputs, name, folder, command, None, seeds, provenance)
        return outcome, folder_files(Path(folder) / run_folder(name, spec.seed, seeds))


def _relay(updates: Any, progress: Report, runs: int) -> threading.Thread:
    """A thread handing the workers' progress to ``progress`` until every run is done."""

    def forward() -> None:
        finished = 0
        while finished < runs:
            update = updates.get()
            progress(update)
            finished += update.done

    thread = threading.Thread(target=forward, daemon=True)
    thread.start()
    return thread


def _warnings(names: list[str], checked: list[Inputs]) -> list[str]:
    """Each configuration's own warnings, then a line for every configuration that runs the
    same policy as an earlier one (a comparison of identical policies measures only noise)."""
    messages = [
        f"[{name}] {warning}"
        for name, inputs in zip(names, checked, strict=True)
        for warning in inputs.config.warnings
    ]
    policies: list[dict[str, Any]] = []
    for name, inputs in zip(names, checked, strict=True):
        policy = resolved_configuration(inputs.config)
        del policy["source"]
        same = next((names[i] for i, p in enumerate(policies) if p == policy), None)
        if same is not None:
            messages.append(
                f"[{name}] runs the same policy as [{same}]: identical actions, plugins, "
                "arguments and search"
            )
        policies.append(policy)
    return messages
