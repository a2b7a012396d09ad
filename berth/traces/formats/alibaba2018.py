"""Alibaba cluster-trace-v2018: machines of the colocation cluster and their utilisation.

``machine_meta.csv`` (no header: machine_id,time_stamp,failure_domain_1,failure_domain_2,
cpu_num,mem_size,status) has several rows per machine over time; the latest row of each machine
wins (its current state; in the published data the sizes never change). A machine becomes a
node named after ``machine_id`` (``m_1`` → ``m-1``) with ``failure_domain_1`` as its zone label,
``failure_domain_2`` as ``berth.io/failure-domain-2`` and ``status`` as an annotation. ``mem_size``
is normalised to 100 and scaled by ``TraceOptions.normalized_memory``. Nodes are collected in a
map before they are returned, since a later row replaces an earlier one.

``machine_usage.csv`` (no header: machine_id,time_stamp,cpu_util_percent,mem_util_percent,
mem_gps,mkpi,net_in,net_out,disk_io_percent) streams as ``UsageSample`` rows for colocation
work. A sample names its machine as the node of that machine is named: ``m_1`` and ``m-1`` both
make ``m-1``, and the machine list renames the later one (``m-1-2``), so ``iter_usage`` names the
samples from the ``machine_meta.csv`` beside the usage file when there is one, else by the same
rule over the usage file's own machines (the trace's id is kept in ``trace_id``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from berth.api.keys import ZONE_LABEL
from berth.api.objects import Node
from berth.traces.base import Table, TraceFormat, table_file
from berth.traces.constants import ALIBABA2018
from berth.traces.errors import TraceLog
from berth.traces.model import (
    STATUS_ANNOTATION,
    TRACE_ID_ANNOTATION,
    TraceOptions,
    scaled,
    trace_node,
)
from berth.traces.names import dns_name
from berth.traces.rows import Row, guard, read_csv

META_COLUMNS = (
    "machine_id",
    "time_stamp",
    "failure_domain_1",
    "failure_domain_2",
    "cpu_num",
    "mem_size",
    "status",
)
USAGE_COLUMNS = (
    "machine_id",
    "time_stamp",
    "cpu_util_percent",
    "mem_util_percent",
    "mem_gps",
    "mkpi",
    "net_in",
    "net_out",
    "disk_io_percent",
)
FAILURE_DOMAIN_2_LABEL = "berth.io/failure-domain-2"


#: The machine list published beside ``machine_usage.csv``: its nodes name the samples.
MACHINE_LIST = "machine_meta.csv"


class UsageSample(NamedTuple):
    machine: str  # the node's name
    time: float  # seconds
    cpu_util: float  # percent
    mem_util: float  # percent
    trace_id: str = ""  # the machine's id in the trace


def read_machines(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[Node]:
    latest: dict[str, tuple[float, Node]] = {}
    rows = guard(
        read_csv(path, META_COLUMNS, header=None), lambda r: _machine(r, options), log, path
    )
    for time, node in rows:
        # By the trace's id: m_1 and m-1 are two machines, though both make the name m-1.
        machine = node.annotations.get(TRACE_ID_ANNOTATION, node.name)
        known = latest.get(machine)
        if known is None or time >= known[0]:
            latest[machine] = (time, node)
    return (node for _, node in latest.values())


def _machine(row: Row, options: TraceOptions) -> tuple[float, Node]:
    labels = {}
    for column, label in (
        ("failure_domain_1", ZONE_LABEL),
        ("failure_domain_2", FAILURE_DOMAIN_2_LABEL),
    ):
        if row.text(column):
            labels[label] = row.text(column)
    node = trace_node(
        row.required("machine_id", "a machine id"),
        cpu=row.integer("cpu_num", "cores >= 0", minimum=0) * 1000,
        memory=scaled(
            row.number("mem_size", "memory normalised to 100", minimum=0) / 100,
            options.normalized_memory,
        ),
        gpus=0,
        labels=labels,
        annotations={STATUS_ANNOTATION: row.text("status")},
    )
    return row.number("time_stamp", "seconds"), node


def read_usage(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[UsageSample]:
    return guard(read_csv(path, USAGE_COLUMNS, header=None), _usage, log, path)


def _usage(row: Row) -> UsageSample:
    machine = row.required("machine_id", "a machine id")
    return UsageSample(
        dns_name(machine),
        row.number("time_stamp", "seconds"),
        row.number("cpu_util_percent", "percent", minimum=0),
        row.number("mem_util_percent", "percent", minimum=0),
        machine,
    )


FORMAT = TraceFormat(
    ALIBABA2018,
    "Alibaba cluster-trace-v2018 machines (machine_meta) and utilisation (machine_usage)",
    (
        Table(
            "nodes",
            f"machine_meta ({','.join(META_COLUMNS)})",
            table_file("machine_meta", META_COLUMNS),
            read_machines,
        ),
        Table(
            "usage",
            f"machine_usage ({','.join(USAGE_COLUMNS)})",
            table_file("machine_usage", USAGE_COLUMNS),
            read_usage,
        ),
    ),
)
