"""A cluster from a file: Kubernetes/berth manifests, or a machine list published with a trace
(openb node list, PAI machine spec, Alibaba 2018 machine_meta), recognised by its header."""

from __future__ import annotations

from pathlib import Path

from berth.api.loaded import Manifests
from berth.api.manifest import load_files
from berth.traces import TraceError, TraceOptions, detect_format, find_table, load_nodes

#: Suffixes of files read as manifests whatever their first line says.
_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def trace_table(path: str | Path) -> tuple[str, str] | None:
    """(format, kind of table: jobs, nodes or usage) when ``path`` is a trace file, None when
    it is to be read as manifests."""
    if str(path).lower().endswith(_MANIFEST_SUFFIXES):
        return None
    try:
        fmt = detect_format(path)
        _, table = find_table(path, fmt)
    except (TraceError, OSError):
        return None
    return fmt, table.kind


def node_list_format(path: str | Path) -> str | None:
    """The trace format of ``path`` if it is a machine list, else None."""
    found = trace_table(path)
    return found[0] if found is not None and found[1] == "nodes" else None


def load_cluster(path: str | Path, options: TraceOptions | None = None) -> Manifests:
    """The objects of a cluster file; a machine list gives Nodes (read with ``options``: its
    bad rows, a machine's memory), with its skipped rows as warnings. Raises TraceError for a
    machine list that cannot be read."""
    fmt = node_list_format(path)
    if fmt is None:
        return load_files([path])
    nodes = load_nodes(path, fmt, options)
    manifests = Manifests()
    manifests.nodes.extend(nodes)
    return manifests
