"""The shared rules: GPUs over workers, pod naming and group sizes, names, queue rules."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.api.objects import Queue
from berth.resources import CPU, GPU, MEMORY, MIB, PODS
from berth.traces import JobSpec, Task, TraceLog, TraceOptions, build_job, parse_queue_rule
from berth.traces.model import gpu_job_tasks, split_evenly
from berth.traces.names import dns_name
from berth.traces.queues import SizeQueues, WeightedQueues


@given(st.integers(0, 10_000), st.integers(1, 64))
def test_split_evenly_is_even_and_complete(total: int, parts: int) -> None:
    shares = split_evenly(total, parts)
    assert len(shares) == parts
    assert sum(shares) == total
    assert max(shares) - min(shares) <= 1
    assert shares == sorted(shares, reverse=True)


def test_gpus_spread_over_workers() -> None:
    options = TraceOptions()
    assert gpu_job_tasks(12, options, 60) == [Task(2, 48_000, 6 * 65_536, 6000, 60)]
    assert gpu_job_tasks(13, options, 60) == [
        Task(1, 56_000, 7 * 65_536, 7000, 60),
        Task(1, 48_000, 6 * 65_536, 6000, 60),
    ]
    assert gpu_job_tasks(0, options, None) == [Task(1, 4000, 16_384, 0, None)]
    assert gpu_job_tasks(12, TraceOptions(gpus_per_node=4), 1)[0].count == 3


def test_build_job_names_sizes_and_min_resources() -> None:
    spec = JobSpec(
        name="j",
        submit=5,
        tasks=[Task(1, 6000, 1024, role="ps"), Task(2, 4000, 2048, 500, 30, role="worker")],
    )
    job = build_job(spec, TraceOptions(), TraceLog())
    assert [pod.name for pod in job.pods] == ["j-ps-0", "j-worker-0", "j-worker-1"]
    assert job.group.min_member == 3
    assert job.group.min_resources == {CPU: 14_000, MEMORY: 5120 * MIB, GPU: 1000}
    assert job.pods[1].requests == {CPU: 4000, MEMORY: 2048 * MIB, GPU: 500, PODS: 1}
    assert {pod.group for pod in job.pods} == {"j"}
    assert {pod.submit_time for pod in job.pods} == {5}


def test_batch_tasks_are_not_gangs_and_caps_are_reported() -> None:
    spec = JobSpec(name="t", submit=0, tasks=[Task(5, 500, 100, duration=0)], gang=False)
    log = TraceLog()
    job = build_job(spec, TraceOptions(max_instances=3), log)
    assert [pod.name for pod in job.pods] == ["t-0", "t-1", "t-2"]
    assert (job.group.min_member, job.group.min_resources) == (1, {CPU: 500, MEMORY: 100 * MIB})
    assert {pod.duration for pod in job.pods} == {1.0}
    assert log.lines() == [
        "changed 1 tasks capped at 3 instances",
        "changed 1 tasks shorter than 1s (raised to it)",
    ]


def test_a_single_pod_is_named_after_its_job() -> None:
    job = build_job(JobSpec("solo", 0, [Task(1, 1, 1)]), TraceOptions(), TraceLog())
    assert [pod.name for pod in job.pods] == ["solo"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("c9c620ea-4336", "c9c620ea-4336"),
        ("application_1506638472019_14199", "application-1506638472019-14199"),
        ("m_1", "m-1"),
        ("__x__", "x"),
    ],
)
def test_dns_name(raw: str, expected: str) -> None:
    assert dns_name(raw) == expected


def test_dns_name_keeps_names_that_differ_in_case_apart() -> None:
    assert dns_name("vcAB") != dns_name("vcab") == "vcab"
    assert dns_name("vcAB") == dns_name("vcAB")
    assert dns_name("vcAB").startswith("vcab-")
    assert dns_name("%%%").startswith("x-")


def test_weighted_queues_are_proportional_and_stable() -> None:
    rule = parse_queue_rule("research:3, prod:1")
    assert rule == WeightedQueues((("research", 3), ("prod", 1)))
    assert rule.queues() == [Queue("research", 3), Queue("prod", 1)]
    picks = Counter(rule.queue_for(f"job-{i}", "", 0) for i in range(4000))
    assert 2800 < picks["research"] < 3200
    assert all(rule.queue_for("job-7", "", 0) == rule.queue_for("job-7", "x", 9) for _ in range(3))


def test_queues_by_size_and_from_the_trace() -> None:
    rule = parse_queue_rule("by-size")
    assert isinstance(rule, SizeQueues)
    sizes = [rule.queue_for("j", "", gpu) for gpu in (0, 500, 1000, 8000, 8001)]
    assert sizes == ["small", "small", "small", "medium", "large"]
    trace = parse_queue_rule("trace")
    assert (trace.queue_for("j", "vc1", 0), trace.queue_for("j", "", 0)) == ("vc1", "default")


@pytest.mark.parametrize("spec", ["a", "a:0", "a:x", ":3", "a:1,a:2"])
def test_bad_queue_specs(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_queue_rule(spec)


def test_a_tasks_pods_share_their_dicts_and_a_placement_writes_only_its_own() -> None:
    """A task's pods share one labels, annotations and requests dict (memory on traces of
    millions of pods); recording one pod's GPU devices gives that pod a dict of its own."""
    from berth.cluster.devices import GPU_DEVICES_ANNOTATION, Placement, record_devices

    spec = JobSpec(name="j", submit=0.0, tasks=[Task(3, 1000, 1024, 1000, 60)], gang=True)
    spec.annotations["note"] = "kept"
    first, second, third = build_job(spec, TraceOptions(), TraceLog()).pods
    assert first.requests is second.requests and first.labels is third.labels
    assert first.annotations is second.annotations
    record_devices(second, "n1", Placement(0, (1,), (1000,), 0))
    assert second.annotations[GPU_DEVICES_ANNOTATION]
    assert second.annotations["note"] == "kept"
    assert GPU_DEVICES_ANNOTATION not in first.annotations
    assert GPU_DEVICES_ANNOTATION not in third.annotations
