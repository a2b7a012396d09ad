"""Converted traces load back as the same pods and groups, and the selection options (window,
sample, speedup, queues) behave and are deterministic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from berth.api.keys import DURATION_ANNOTATION, GROUP_NAME_ANNOTATION, SUBMIT_TIME_ANNOTATION
from berth.api.manifest import load_files
from berth.api.objects import Pod, PodGroup
from berth.traces import (
    Selection,
    TraceJob,
    TraceOptions,
    iter_jobs,
    iter_specs,
    load_nodes,
    node_manifest,
    parse_queue_rule,
    workload_manifests,
)
from berth.traces.writer import write_manifests

WRITTEN = {GROUP_NAME_ANNOTATION, SUBMIT_TIME_ANNOTATION, DURATION_ANNOTATION}
SAMPLES = [
    "philly/cluster_job_log",
    "philly/philly_jobs.csv",
    "helios/cluster_log.csv",
    "pai/pai_task_table.csv",
]


def pod_facts(pod: Pod) -> tuple[Any, ...]:
    annotations = {k: v for k, v in pod.annotations.items() if k not in WRITTEN}
    return (
        pod.name,
        pod.requests,
        pod.submit_time,
        pod.duration,
        pod.group,
        pod.labels,
        annotations,
        pod.priority,
        pod.priority_class_name,
        pod.affinity,
    )


def group_facts(group: PodGroup) -> tuple[Any, ...]:
    return (
        group.name,
        group.min_member,
        group.min_resources,
        group.queue,
        group.submit_time,
        group.priority,
        group.priority_class_name,
    )


def convert(
    source: Path,
    out: Path,
    options: TraceOptions | None = None,
    selection: Selection | None = None,
) -> list[TraceJob]:
    """Convert, and return the jobs as the loader built them (a second read of the trace)."""
    options = options or TraceOptions()
    jobs = iter_jobs(source, options=options, selection=selection)
    write_manifests(out, workload_manifests(jobs, options.queue_rule))
    return list(iter_jobs(source, options=options, selection=selection))


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_round_trip(data: Path, tmp_path: Path, sample: str, suffix: str) -> None:
    out = tmp_path / f"workload{suffix}"
    jobs = convert(data / sample, out)
    loaded = load_files(out)
    assert not loaded.problems, loaded.problems
    assert [group_facts(g) for g in loaded.groups] == [group_facts(j.group) for j in jobs]
    assert [pod_facts(p) for p in loaded.pods] == [pod_facts(p) for j in jobs for p in j.pods]
    trace_queues = {j.group.queue for j in jobs} - {"default"}
    assert {q.name for q in loaded.queues} == trace_queues


def test_round_trip_of_fractional_gpus_affinity_and_priority(shared: Path, tmp_path: Path) -> None:
    source = shared / "alibaba-openb-2023" / "openb_pod_list_gpuspec20.csv"
    out = tmp_path / "openb.yaml"
    jobs = convert(source, out, selection=Selection(sample=400))
    loaded = load_files(out)
    assert not loaded.problems
    assert [pod_facts(p) for p in loaded.pods] == [pod_facts(p) for j in jobs for p in j.pods]
    assert any(p.affinity.node_required for p in loaded.pods)
    assert any(0 < p.requests.get("nvidia.com/gpu", 0) < 1000 for p in loaded.pods)
    assert {(c.name, c.value) for c in loaded.priority_classes} >= {("qos-ls", 1000)}


def test_node_lists_round_trip(shared: Path, tmp_path: Path) -> None:
    nodes = load_nodes(shared / "alibaba-openb-2023" / "openb_node_list_all_node.csv")
    out = tmp_path / "cluster.yaml"
    write_manifests(out, (node_manifest(node) for node in nodes))
    loaded = load_files(out)
    assert not loaded.problems
    facts = [(n.name, n.labels, n.annotations, n.allocatable) for n in nodes]
    assert [(n.name, n.labels, n.annotations, n.allocatable) for n in loaded.nodes] == facts


def test_window_shifts_times_to_its_start(data: Path) -> None:
    jobs = iter_jobs(data / "philly" / "philly_jobs.csv", selection=Selection(100, 1000))
    assert [(j.group.name, j.group.submit_time) for j in jobs] == [("job-3", 20), ("job-4", 200)]
    assert jobs.log.excluded == {
        "jobs submitted before the window start (100s)": 1,
        "jobs submitted at or after the window end (1000s)": 1,
    }
    assert [p.submit_time for j in iter_jobs(data / "philly" / "philly_jobs.csv") for p in j.pods][
        :2
    ] == [0, 120]


def test_speedup_divides_the_gaps_between_arrivals(data: Path) -> None:
    jobs = iter_jobs(data / "philly" / "philly_jobs.csv", selection=Selection(speedup=4))
    assert [j.group.submit_time for j in jobs] == [0, 30, 75, 1000]
    first = next(iter_jobs(data / "philly" / "philly_jobs.csv", selection=Selection(speedup=4)))
    assert first.pods[0].duration == 3600  # durations are not scaled


def test_sample_is_seeded_and_keeps_trace_order(shared: Path) -> None:
    path = shared / "itp" / "cluster04.csv"

    def names(seed: int) -> list[str]:
        return [s.name for s in iter_specs(path, selection=Selection(sample=50, seed=seed))]

    first, again, other = names(1), names(1), names(2)
    assert len(first) == 50
    assert first == again
    assert first != other
    specs = iter_specs(path, selection=Selection(sample=50))
    submits = [spec.submit for spec in specs]
    assert submits == sorted(submits)  # cluster04 is in submission order, and so is the sample
    assert specs.log.excluded == {"jobs not in the sample": 15_802 - 50}


def test_sample_larger_than_the_trace_keeps_everything(data: Path) -> None:
    jobs = iter_jobs(data / "philly" / "philly_jobs.csv", selection=Selection(sample=10))
    assert len(list(jobs)) == 4
    assert not jobs.log.excluded


def test_weighted_queues_are_written_first(data: Path, tmp_path: Path) -> None:
    options = TraceOptions(queue_rule=parse_queue_rule("a:1,b:1"))
    out = tmp_path / "w.jsonl"
    jobs = convert(data / "philly" / "philly_jobs.csv", out, options)
    lines = out.read_text().splitlines()
    assert lines[0].startswith('{"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue"')
    loaded = load_files(out)
    assert [(q.name, q.weight) for q in loaded.queues] == [("a", 1), ("b", 1)]
    assert [g.queue for g in loaded.groups] == [j.group.queue for j in jobs]
    assert set(g.queue for g in loaded.groups) <= {"a", "b"}


def test_queues_by_size(data: Path) -> None:
    options = TraceOptions(queue_rule=parse_queue_rule("by-size"))
    jobs = iter_jobs(data / "philly" / "philly_jobs.csv", options=options)
    assert [j.group.queue for j in jobs] == ["small", "large", "small", "large"]


def test_selection_is_checked() -> None:
    with pytest.raises(ValueError, match="must be after its start"):
        Selection(10, 5)
    with pytest.raises(ValueError, match="speedup must be > 0"):
        Selection(speedup=0)
