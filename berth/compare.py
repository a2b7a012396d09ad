"""``berth compare``: the same workload and cluster under several scheduler configurations.

Each configuration runs in its own process (the runs are independent and CPU-bound) and writes
its full output directory; the parent gathers the headline numbers and the distributions and
writes one side-by-side report with ratios against the first configuration.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import Manager
from pathlib import Path
from typing import Any

import numpy as np

from berth.metrics.provenance import describe, resolved_configuration
from berth.outputs import write_outputs
from berth.report.compare import write_compare_report
from berth.sim.engine import expected_end
from berth.sim.inputs import InputSpec
from berth.sim.run import Inputs, load_inputs, simulate

#: Headline rows: (label, path into summary.json, lower is better, unit). Durations are in
#: seconds, fractions in 0..1, counts plain.
METRICS: tuple[tuple[str, tuple[str, ...], bool, str], ...] = (
    ("jobs completed", ("jobs", "completed"), False, "count"),
    ("jobs pending at end", ("jobs", "pending"), True, "count"),
    ("queueing delay mean", ("queueing_delay", "mean"), True, "seconds"),
    ("queueing delay p50", ("queueing_delay", "p50"), True, "seconds"),
    ("queueing delay p95", ("queueing_delay", "p95"), True, "seconds"),
    ("JCT mean", ("jct", "mean"), True, "seconds"),
    ("JCT p50", ("jct", "p50"), True, "seconds"),
    ("JCT p95", ("jct", "p95"), True, "seconds"),
    ("makespan", ("makespan",), True, "seconds"),
    ("pods evicted", ("pods", "evicted"), True, "count"),
    ("pods preempted", ("evictions", "preempted"), True, "count"),
    ("pods reclaimed", ("evictions", "reclaimed"), True, "count"),
)
#: Resources whose shares are too small or uniform to compare usefully.
_SKIP_RESOURCES = {"pods"}


@dataclass
class RunOutcome:
    name: str
    summary: dict[str, Any]
    queueing: np.ndarray  # per started job
    jct: np.ndarray  # per completed job
    times: np.ndarray
    allocation: np.ndarray  # (T, R) fraction of capacity
    resources: list[str]


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


def run_one(
    spec: InputSpec,
    config: str,
    name: str,
    out_dir: str,
    command: list[str] | None = None,
    report: Report | None = None,
) -> RunOutcome:
    """One configuration, start to finish (runs in a worker process, where ``report`` puts
    its progress on a queue the parent reads)."""
    inputs = load_inputs(spec, None if config == "default" else config)
    until = inputs.until if spec.until is None else spec.until
    if report is not None:
        horizon = expected_end(inputs.manifests.pods, until)
        report(RunProgress(name, len(inputs.manifests.nodes), horizon))
    result = simulate(
        inputs,
        spec.seed,
        spec.until,
        None if report is None else (lambda now: report(RunProgress(name, now=now))),
    )
    provenance = describe(spec, inputs.config, inputs.notes, command)
    summary, _ = write_outputs(result, Path(out_dir) / name, provenance)
    if report is not None:
        report(RunProgress(name, done=True))
    groups = result.groups
    queueing = np.array(
        [g.start_time - g.submit_time for g in groups if g.start_time is not None], dtype=float
    )
    jct = np.array(
        [g.end_time - g.submit_time for g in groups if g.end_time is not None], dtype=float
    )
    series = result.series
    capacity = np.maximum(series.capacity, 1e-12)
    allocation = np.where(series.capacity > 0, series.allocated / capacity, np.nan)
    return RunOutcome(
        name, summary, queueing, jct, np.array(series.times), allocation, list(series.resources)
    )


def compare(
    spec: InputSpec,
    configs: Sequence[str],
    out_dir: str | Path,
    workers: int | None = None,
    progress: Report | None = None,
    command: list[str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[list[RunOutcome], Path]:
    """Run every configuration and write ``compare.html``, ``compare.json`` and plots.

    Every configuration is loaded and checked before any run starts: a bad file fails first,
    and ``warn`` hears each configuration's warnings (prefixed with its name) and any two
    configurations that resolve to the same policy."""
    names = config_names(configs)
    checked = [
        load_inputs(spec, None if config == "default" else config, check_only=True)
        for config in configs
    ]
    if warn is not None:
        for message in _warnings(names, checked):
            warn(message)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    workers = workers or min(len(configs), os.cpu_count() or 1)
    outcomes: dict[str, RunOutcome] = {}
    if workers <= 1:
        for config, name in zip(configs, names, strict=True):
            outcomes[name] = run_one(spec, config, name, str(out), command, progress)
    else:
        with Manager() as manager, ProcessPoolExecutor(max_workers=workers) as pool:
            updates = manager.Queue() if progress is not None else None
            report = None if updates is None else updates.put
            futures = {
                pool.submit(run_one, spec, config, name, str(out), command, report): name
                for config, name in zip(configs, names, strict=True)
            }
            relay = _relay(updates, progress, len(futures)) if progress else None
            for future, name in futures.items():
                outcomes[name] = future.result()
            if relay is not None:
                relay.join()
    ordered = [outcomes[name] for name in names]
    table = comparison_table(ordered)
    table["provenance"] = {
        **describe(spec, checked[0].config, checked[0].notes, command),
        "configuration": {
            name: resolved_configuration(inputs.config)
            for name, inputs in zip(names, checked, strict=True)
        },
    }
    (out / "compare.json").write_text(json.dumps(table, indent=2, sort_keys=True) + "\n")
    report = write_compare_report(out, table, ordered)
    return ordered, report


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


def _lookup(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return None if value is None else float(value)


def comparison_table(outcomes: Sequence[RunOutcome]) -> dict[str, Any]:
    """Rows of metrics with each configuration's value and its ratio to the first one."""
    rows = []
    metrics = list(METRICS)
    resources = outcomes[0].resources if outcomes else []
    for resource in resources:
        if resource in _SKIP_RESOURCES:
            continue
        if all(resource in o.summary.get("allocation", {}) for o in outcomes):
            metrics.append((f"{resource} allocation", ("allocation", resource), False, "fraction"))
            metrics.append(
                (f"{resource} utilization", ("utilization", resource), False, "fraction")
            )
        if all(resource in o.summary.get("fragmentation", {}) for o in outcomes):
            metrics.append(
                (f"{resource} idle stranded", ("fragmentation", resource), True, "fraction")
            )
    for label, path, lower_better, unit in metrics:
        values = [_lookup(o.summary, path) for o in outcomes]
        base = values[0]
        ratios = [None if v is None or not base else round(v / base, 3) for v in values]
        rows.append(
            {
                "metric": label,
                "unit": unit,
                "lower_is_better": lower_better,
                "values": {o.name: v for o, v in zip(outcomes, values, strict=True)},
                "ratio_to_first": {o.name: r for o, r in zip(outcomes, ratios, strict=True)},
            }
        )
    return {"configs": [o.name for o in outcomes], "rows": rows}
