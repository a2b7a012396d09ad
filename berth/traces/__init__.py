"""Workloads from public cluster traces (ITP, Philly, Alibaba openb/PAI/2017/2018, Helios), and
the built-in synthetic scenario (``berth.traces.synthetic``).

Loaders stream a trace row by row into berth's objects; ``docs/traces.md`` lists each format's
columns and how they become pods.
"""

from berth.traces.base import TraceFormat
from berth.traces.errors import TraceError, TraceLog
from berth.traces.formats import FORMATS
from berth.traces.formats.alibaba2018 import UsageSample
from berth.traces.loader import (
    Nodes,
    Stream,
    detect_format,
    find_table,
    iter_jobs,
    iter_specs,
    iter_usage,
    load_nodes,
)
from berth.traces.manifests import node_manifest, to_manifests, workload_manifests
from berth.traces.model import JobSpec, Task, TraceJob, TraceOptions, build_job
from berth.traces.queues import SizeQueues, TraceQueues, WeightedQueues, parse_queue_rule
from berth.traces.select import Selection

__all__ = [
    "FORMATS",
    "JobSpec",
    "Nodes",
    "Selection",
    "SizeQueues",
    "Stream",
    "Task",
    "TraceError",
    "TraceFormat",
    "TraceJob",
    "TraceLog",
    "TraceOptions",
    "TraceQueues",
    "UsageSample",
    "WeightedQueues",
    "build_job",
    "detect_format",
    "find_table",
    "iter_jobs",
    "iter_specs",
    "iter_usage",
    "load_nodes",
    "node_manifest",
    "parse_queue_rule",
    "to_manifests",
    "workload_manifests",
]
