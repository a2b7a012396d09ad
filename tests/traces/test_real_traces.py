"""Loaders on the real public traces: row counts and the first rows' values, checked against
the files themselves (counted with the csv module when these tests were written)."""

from __future__ import annotations

from pathlib import Path

from berth.api.keys import HOSTNAME_LABEL, ZONE_LABEL
from berth.resources import CPU, GIB, GPU, MEMORY, MIB, PODS
from berth.traces import (
    Selection,
    TraceOptions,
    iter_jobs,
    iter_specs,
    iter_usage,
    load_nodes,
)
from berth.traces.load import load_curve
from berth.traces.model import GPU_PRODUCT_LABEL, STATUS_ANNOTATION

ITP_JOBS = {
    "cluster01": 1595,
    "cluster02": 5778,
    "cluster03": 3011,
    "cluster04": 15802,
    "cluster05": 3629,
    "cluster06": 2396,
    "cluster07": 12699,
    "cluster08": 13047,
    "cluster09": 11134,
    "cluster10": 260,
}


def test_itp_cluster04_first_job_and_count(shared: Path) -> None:
    jobs = iter_jobs(shared / "itp" / "cluster04.csv")
    first = next(jobs)
    assert first.group.name == "c9c620ea-4336-c1a9-8abe-e26bd13076b8"
    assert first.group.submit_time == 5810
    # 16 GPUs on 8-GPU nodes: a gang of two 8-GPU workers, 8 cores and 64 GiB per GPU.
    assert first.group.min_member == 2
    assert first.group.min_resources == {CPU: 128_000, MEMORY: 1_048_576 * MIB, GPU: 16_000}
    assert [pod.requests for pod in first.pods] == [
        {CPU: 64_000, MEMORY: 524_288 * MIB, GPU: 8000, PODS: 1}
    ] * 2
    assert {pod.duration for pod in first.pods} == {288_476}
    assert 1 + sum(1 for _ in jobs) == 15_802
    assert jobs.log.rows == 15_802
    assert not jobs.skipped


def test_itp_every_cluster(shared: Path) -> None:
    counts = {name: sum(1 for _ in iter_specs(shared / "itp" / f"{name}.csv")) for name in ITP_JOBS}
    assert counts == ITP_JOBS
    assert sum(counts.values()) == 69_351


def test_openb_default_pods(shared: Path) -> None:
    jobs = iter_jobs(shared / "alibaba-openb-2023" / "openb_pod_list_default.csv")
    first, second = next(jobs), next(jobs)
    pod = first.pods[0]
    assert pod.name == first.group.name == "openb-pod-0000"
    assert pod.requests == {CPU: 12_000, MEMORY: 16_384 * MIB, GPU: 1000, PODS: 1}
    assert (pod.submit_time, pod.duration) == (0, 12_537_496)
    assert pod.annotations == {"berth.io/qos": "LS", STATUS_ANNOTATION: "Running"}
    assert (pod.priority_class_name, pod.priority) == ("qos-ls", 1000)
    assert second.pods[0].requests[GPU] == 460  # a shared GPU: 46% of one device
    assert 2 + sum(1 for _ in jobs) == 8152


def test_openb_gpu_spec_becomes_required_affinity(shared: Path) -> None:
    jobs = iter_specs(shared / "alibaba-openb-2023" / "openb_pod_list_gpuspec10.csv")
    constrained = next(spec for spec in jobs if spec.gpu_products)
    assert (constrained.name, constrained.gpu_products) == ("openb-pod-0008", ("T4",))


def test_openb_variant_without_times(shared: Path) -> None:
    jobs = list(iter_jobs(shared / "alibaba-openb-2023" / "openb_pod_list_multigpu20.csv"))
    assert len(jobs) == 8324
    assert {(job.group.submit_time, job.pods[0].duration) for job in jobs} == {(0, None)}


def test_openb_nodes(shared: Path) -> None:
    everything = load_nodes(shared / "alibaba-openb-2023" / "openb_node_list_all_node.csv")
    gpu_nodes = load_nodes(shared / "alibaba-openb-2023" / "openb_node_list_gpu_node.csv")
    assert (len(everything), len(gpu_nodes)) == (1523, 1213)
    first = everything[0]
    assert first.name == "openb-node-0000"
    assert first.allocatable == {CPU: 32_000, MEMORY: 262_144 * MIB, PODS: 110}
    assert GPU_PRODUCT_LABEL not in first.labels
    assert gpu_nodes[0].allocatable[GPU] == 2000
    assert gpu_nodes[0].labels == {HOSTNAME_LABEL: "openb-node-0000", GPU_PRODUCT_LABEL: "P100"}


def test_pai_machine_spec(shared: Path) -> None:
    nodes = load_nodes(shared / "alibaba-pai-2020" / "pai_machine_spec.csv")
    assert len(nodes) == 1897
    assert nodes[0].name == "7399a758eb02bae1a3621236"
    assert nodes[0].allocatable == {CPU: 96_000, MEMORY: 512 * GIB, PODS: 110}  # gpu_type CPU
    v100 = next(n for n in nodes if n.labels.get(GPU_PRODUCT_LABEL) == "V100M32")
    assert v100.allocatable[GPU] == 8000


def test_alibaba2017_tasks(shared: Path) -> None:
    specs = iter_specs(shared / "alibaba-2017" / "batch_task.csv")
    first = next(specs)
    assert (first.name, first.submit, first.gang) == ("task-3-4", 6459, False)
    task = first.tasks[0]
    # 50 hundredths of a core; 0.007956928 of a 64 GiB machine, rounded up to whole MiB.
    assert (task.count, task.cpu, task.memory, task.duration) == (15_740, 500, 522, 65)
    rest = sum(1 for _ in specs)
    assert specs.log.rows == 80_553
    assert 1 + rest == 71_536
    assert specs.log.excluded == {"tasks without a cpu or memory request": 9017}


def test_alibaba2017_window_builds_pods_with_instance_cap(shared: Path) -> None:
    jobs = iter_jobs(
        shared / "alibaba-2017" / "batch_task.csv",
        options=TraceOptions(max_instances=100),
        selection=Selection(start=6400, end=6500),
    )
    built = list(jobs)
    assert built
    assert all(0 <= job.group.submit_time < 100 for job in built)
    assert max(len(job.pods) for job in built) == 100
    assert {job.group.min_member for job in built} == {1}
    assert jobs.log.adjusted["tasks capped at 100 instances"] >= 1  # task-3-4 has 15,740


def test_alibaba2018_machines(shared: Path) -> None:
    nodes = load_nodes(shared / "alibaba-2018" / "machine_meta.csv")
    assert len(nodes) == 4034
    assert nodes.log.rows == 17_592
    first = nodes[0]
    assert first.name == "m-1"
    assert first.labels[ZONE_LABEL] == "219"
    assert first.allocatable == {CPU: 96_000, MEMORY: 65_536 * MIB, PODS: 110}
    assert first.annotations[STATUS_ANNOTATION] == "USING"


def test_alibaba2018_usage(shared: Path) -> None:
    samples = iter_usage(shared / "alibaba-2018" / "machine_usage_subset.csv")
    assert tuple(next(samples)) == ("m-1932", 386_640, 41, 92, "m_1932")
    assert 1 + sum(1 for _ in samples) == 100_002


def test_alibaba2025_dlrm_instances(shared: Path) -> None:
    stream = iter_jobs(shared / "alibaba-dlrm-2025" / "disaggregated_DLRM_trace.csv")
    jobs = list(stream)
    assert len(jobs) == 23_871  # one job of one pod per instance
    first = jobs[0].pods[0]
    # instance_0: HN, 12 cores, 1 GPU, 120 GiB; created before the trace, never deleted in it.
    assert first.name == "instance-0"
    assert first.requests == {CPU: 12_000, MEMORY: 120 * GIB, GPU: 1000, PODS: 1}
    assert (first.submit_time, first.duration) == (0.0, None)
    assert first.annotations["berth.io/app"] == "app_0"
    gpu_pods = sum(1 for job in jobs if job.pods[0].requests.get(GPU))
    assert gpu_pods == 7_386  # the HN instances
    # 23,871 - 12,248 rows without a density limit (-1)
    assert (
        stream.log.adjusted["instances with a max_instance_per_node limit, which is not enforced"]
        == 11_623
    )


def test_azure_llm_load_curve(shared: Path) -> None:
    folder = shared / "azure-llm-2023"
    code, _ = load_curve(folder / "AzureLLMInferenceTrace_code.csv")
    conv, _ = load_curve(folder / "AzureLLMInferenceTrace_conv.csv", bin_seconds=300)
    assert (code.total_requests, conv.total_requests) == (8_819, 19_366)
    assert code.requests.sum() * 60 == 8_819  # every request lands in one bin
    assert conv.requests.sum() * 300 == 19_366
    assert 0 < code.span <= 3600 and 0 < conv.span <= 3600
    assert code.tokens.max() > code.requests.max()
