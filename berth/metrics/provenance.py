"""What produced a result: berth's version, the command, every input file with a content hash,
the scheduler configuration as resolved (actions, plugins, arguments), how the cluster was made
and the seed. Written into ``summary.json``, ``compare.json`` and the reports, so a number can
always be traced back to the run that made it."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

from berth import __version__, native
from berth.api.manifest import MANIFEST_SUFFIXES
from berth.framework.config import SchedulerConfig
from berth.sim.inputs import InputSpec

_CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read in chunks (traces can be gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def input_files(spec: InputSpec, config: SchedulerConfig) -> list[dict[str, Any]]:
    """Every file the run read (a folder stands for its manifest files), with size and hash."""
    named: list[tuple[str, str]] = []
    if spec.cluster:
        named.append(("cluster", spec.cluster))
    named += [("workload", workload) for workload in spec.workloads]
    if spec.trace:
        named.append(("trace", spec.trace))
    if config.source and not config.source.startswith("<"):
        named.append(("configuration", config.source))
    files = []
    for role, name in named:
        path = Path(name)
        paths = (
            sorted(p for p in path.iterdir() if p.suffix.lower() in MANIFEST_SUFFIXES)
            if path.is_dir()
            else [path]
        )
        for file in paths:
            if file.is_file():
                size = file.stat().st_size
                files.append(
                    {"role": role, "path": str(file), "bytes": size, "sha256": file_digest(file)}
                )
    return files


def resolved_configuration(config: SchedulerConfig) -> dict[str, Any]:
    """The configuration as berth runs it: after defaults, Volcano umbrella plugins expanded
    and switches applied."""
    return {
        "source": config.source,
        "actions": list(config.actions),
        "tiers": [
            [
                {
                    "name": spec.name,
                    "arguments": spec.arguments,
                    "disabled": sorted(spec.disabled),
                }
                for spec in tier
            ]
            for tier in config.tiers
        ],
        "search": dataclasses.asdict(config.search),
        "period": config.period,
        "scheduler_names": list(config.scheduler_names),
        "simulation": config.simulation,
    }


def describe(
    spec: InputSpec,
    config: SchedulerConfig,
    notes: list[str],
    command: list[str] | None,
) -> dict[str, Any]:
    return {
        "berth_version": __version__,
        "berth_modules": native.MODE,  # the placing path compiled or from source: same decisions
        "command": command or [],
        "inputs": "built-in scenario" if spec.builtin else input_files(spec, config),
        "configuration": resolved_configuration(config),
        "how_inputs_were_read": list(notes),
        "seed": spec.seed,
        "until": spec.until,
    }
