"""Workloads from public cluster traces (ITP, Philly, Alibaba openb/PAI/2017/2018, Helios), and
the built-in synthetic scenario (``berth.traces.synthetic``).

Loaders stream a trace row by row into berth's objects; ``docs/traces.md`` lists each format's
columns and how they become pods.

The names below are loaded from their modules when first asked for, not when the package is:
the command line imports the package's light modules (its arguments, the trace catalog) to
build its parser, and should not pay for every loader and the object model behind them.
"""

from __future__ import annotations

from berth.lazy import lazy_names

#: Each name the package offers, and the module it comes from.
_HOMES = {
    "FORMATS": "berth.traces.formats",
    "JobSpec": "berth.traces.model",
    "Nodes": "berth.traces.loader",
    "Selection": "berth.traces.select",
    "SizeQueues": "berth.traces.queues",
    "Stream": "berth.traces.loader",
    "Task": "berth.traces.model",
    "TraceError": "berth.traces.errors",
    "TraceFormat": "berth.traces.base",
    "TraceJob": "berth.traces.model",
    "TraceLog": "berth.traces.errors",
    "TraceOptions": "berth.traces.model",
    "TraceQueues": "berth.traces.queues",
    "UsageSample": "berth.traces.formats.alibaba2018",
    "WeightedQueues": "berth.traces.queues",
    "build_job": "berth.traces.model",
    "detect_format": "berth.traces.loader",
    "find_table": "berth.traces.loader",
    "iter_jobs": "berth.traces.loader",
    "iter_specs": "berth.traces.loader",
    "iter_usage": "berth.traces.loader",
    "jobs_of": "berth.traces.loader",
    "load_nodes": "berth.traces.loader",
    "node_manifest": "berth.traces.manifests",
    "parse_queue_rule": "berth.traces.queues",
    "to_manifests": "berth.traces.manifests",
    "workload_manifests": "berth.traces.manifests",
}

__all__ = list(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
