"""``berth validate``: manifests and scheduler configurations checked without running
anything, each file told apart, every problem on a line of its own."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from berth.input_failures import EXIT_INPUT


def add_unknown_fields(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--unknown-fields",
        choices=("error", "warn"),
        default="error",
        help="a manifest field berth does not know is an error (the default, as kubectl's "
        "strict validation), or a warning and ignored",
    )


def add_validate_command(sub: Any) -> None:
    val = sub.add_parser(
        "validate",
        help="check manifests and configurations without running anything",
        description="Read manifests and scheduler configurations as simulate would and report "
        "every problem, one line each; exit 1 if any is an error.",
    )
    val.add_argument(
        "files",
        type=Path,
        nargs="+",
        help="manifests, scheduler configurations, or folders of them (each file told apart)",
    )
    add_unknown_fields(val)
    val.set_defaults(handler=_validate)


def _validate(args: argparse.Namespace) -> int:
    from berth.api.documents import is_empty_file
    from berth.api.manifest import MANIFEST_SUFFIXES, load_files
    from berth.framework.config_files import is_scheduler_configuration

    files: list[Path] = []
    for path in args.files:
        # A folder's files are told apart one by one: configurations sit beside manifests.
        inside = sorted(path.iterdir()) if path.is_dir() else []
        inside = [p for p in inside if p.suffix.lower() in (*MANIFEST_SUFFIXES, ".conf")]
        files += inside or [path]
    empty = [path for path in files if path.is_file() and is_empty_file(path)]
    for path in empty:  # refused as simulate refuses it, whether meant as --config or not
        print(f"{path}: empty: no manifests or scheduler configuration in it")
    files = [path for path in files if path not in empty]
    configs = [path for path in files if is_scheduler_configuration(path)]
    manifest_files = [path for path in files if path not in configs]
    failed = bool(empty) or not all([_check_config(path) for path in configs])
    if not manifest_files:
        return EXIT_INPUT if failed else 0
    manifests = load_files(manifest_files, lenient=args.unknown_fields == "warn")
    _print_some([f"warning: {w}" for w in manifests.warnings], "warnings", sys.stderr)
    _print_some(manifests.errors, "problems", sys.stdout)
    if manifests.errors:
        return EXIT_INPUT
    counts = (
        f"{len(manifests.nodes)} nodes, {len(manifests.pods)} pods, "
        f"{len(manifests.groups)} podgroups, {len(manifests.queues)} queues"
    )
    if manifests.jobs or manifests.commands:
        counts += f", {len(manifests.jobs)} jobs, {len(manifests.commands)} commands"
    if manifests.namespaces:
        counts += f", {len(manifests.namespaces)} namespaces"
    if manifests.hypernodes:
        counts += f", {len(manifests.hypernodes)} hypernodes"
    if manifests.workloads:
        objects = len({(w.kind, w.key) for w in manifests.workloads})
        counts += f", {objects} workload objects"
        if len(manifests.workloads) > objects:
            counts += f" ({len(manifests.workloads)} versions)"
    print(f"valid: {counts}")
    return EXIT_INPUT if failed else 0


def _check_config(path: Path) -> bool:
    """Check one scheduler configuration as ``simulate --config`` would use it."""
    from berth.framework.config import ConfigError
    from berth.framework.config_files import describe, load_config
    from berth.framework.framework import Framework
    from berth.framework.plugin import PluginArgumentError
    from berth.sim.config import SimConfig, SimConfigError

    try:
        config = load_config(path)
        Framework(config)
        SimConfig.from_raw(config.simulation, config.source)
    except (ConfigError, PluginArgumentError, SimConfigError) as exc:
        message = str(exc)
        print(message if message.startswith(str(path)) else f"{path}: {message}")
        return False
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"valid: {path}: scheduler configuration ({describe(config)})")
    return True


#: Problems printed of one kind; a file repeating one mistake thousands of times says so once
#: per problem up to here, then how many more there are.
SHOWN_PROBLEMS = 50


def _print_some(lines: list[str], what: str, stream: TextIO) -> None:
    for line in lines[:SHOWN_PROBLEMS]:
        print(line, file=stream)
    if len(lines) > SHOWN_PROBLEMS:
        print(f"... and {len(lines) - SHOWN_PROBLEMS:,} more {what}", file=stream)
