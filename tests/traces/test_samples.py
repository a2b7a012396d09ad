"""Loaders on samples written in the published formats that are not in ../shared/traces
(Philly, PAI job and task tables, Helios), and small hand-made files for the rules."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from berth.api.keys import ZONE_LABEL
from berth.resources import CPU, GPU, MEMORY, MIB, PODS
from berth.traces import (
    TraceError,
    TraceJob,
    TraceOptions,
    detect_format,
    iter_jobs,
    iter_usage,
    load_nodes,
)
from berth.traces.load import load_curve
from berth.traces.model import STATUS_ANNOTATION, TRACE_ID_ANNOTATION, USER_ANNOTATION
from berth.traces.names import dns_name


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def by_name(path: Path) -> dict[str, TraceJob]:
    return {job.group.name: job for job in iter_jobs(path)}


def test_philly_cluster_job_log(data: Path) -> None:
    path = data / "philly" / "cluster_job_log"
    assert detect_format(path) == "philly"
    jobs = list(iter_jobs(path))
    names = [job.group.name for job in jobs]
    assert names == [
        "application-1506638472019-14199",
        "application-1506638472019-10256",
        "application-1506638472019-12011",
        "application-1506638472019-15001",
    ]
    retried, earliest, two_machines, running = jobs
    # Seconds since the earliest submission (2017-10-03 02:25:44, the second job).
    assert earliest.group.submit_time == 0
    assert retried.group.submit_time == 3 * 86_400 + 22 * 3600 + 45 * 60 + 55
    # The last attempt's run: 2017-10-07 01:13:30 to 2017-10-09 06:53:12.
    assert retried.pods[0].duration == 2 * 86_400 + 5 * 3600 + 39 * 60 + 42
    assert retried.pods[0].annotations == {
        TRACE_ID_ANNOTATION: "application_1506638472019_14199",
        USER_ANNOTATION: "ce2f4c",
        STATUS_ANNOTATION: "Pass",
        "berth.io/attempts": "2",
    }
    assert retried.group.queue == "ee9e8c"
    # One worker per machine, each with that machine's GPUs.
    assert [pod.requests[GPU] for pod in two_machines.pods] == [8000, 4000]
    assert two_machines.group.min_member == 2
    assert two_machines.group.min_resources[GPU] == 12_000
    assert running.pods[0].duration is None  # no end_time: still running when traced


def test_philly_csv(data: Path) -> None:
    jobs = by_name(data / "philly" / "philly_jobs.csv")
    assert list(jobs) == ["job-2", "job-3", "job-4", "job-5"]
    single, big, cpu_only, twelve = jobs.values()
    assert [p.name for p in big.pods] == ["job-3-0", "job-3-1"]
    assert [p.requests[GPU] for p in twelve.pods] == [6000, 6000]
    assert cpu_only.pods[0].requests == {CPU: 4000, MEMORY: 16_384 * MIB, PODS: 1}
    assert (big.group.queue, big.group.submit_time) == ("vc2", 120)


def test_philly_csv_with_dates_as_published_with_pollux(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "philly.csv",
        """
        timestamp,duration,num_gpus,gpu_time,cluster
        2017-10-09 07:01:55,3600,1,3600,vc1
        2017-10-09 07:00:00,60,8,480,vc2
        2017-10-10 07:00:00,60,2,120,vc2
        """,
    )
    jobs = by_name(path)
    times = {name: job.group.submit_time for name, job in jobs.items()}
    assert times == {"job-2": 115, "job-3": 0, "job-4": 86_400}


def test_dates_with_and_without_a_zone_mix(tmp_path: Path) -> None:
    """A zone is converted to UTC and a time without one read as UTC, so the two compare."""
    path = write(
        tmp_path,
        "philly.csv",
        """
        timestamp,duration,num_gpus,gpu_time,cluster
        2017-10-09 07:00:00,3600,1,3600,vc1
        2017-10-09T09:00:00+02:00,60,8,480,vc2
        2017-10-09 07:30:00Z,60,2,120,vc2
        """,
    )
    times = {name: job.group.submit_time for name, job in by_name(path).items()}
    assert times == {"job-2": 0, "job-3": 0, "job-4": 1800}


def test_philly_csv_bad_date_is_a_bad_row(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "philly.csv",
        """
        timestamp,duration,num_gpus,gpu_time,cluster
        2017-10-09 07:01:55,3600,1,3600,vc1
        yesterday,60,8,480,vc2
        """,
    )
    with pytest.raises(TraceError, match=r"philly.csv:3: timestamp \"yesterday\" is not a date"):
        by_name(path)


def test_helios(data: Path) -> None:
    path = data / "helios" / "cluster_log.csv"
    assert detect_format(path) == "helios"
    jobs = list(iter_jobs(path))
    first, _, _, gang, cpu_job = jobs
    assert first.group.submit_time == 0
    assert gang.group.submit_time == 539  # 18:50:00 - 18:41:01
    assert [pod.requests for pod in gang.pods] == [
        {CPU: 32_000, MEMORY: 524_288 * MIB, GPU: 8000, PODS: 1}
    ] * 2
    assert gang.group.min_member == 2
    assert first.group.queue == dns_name("vcJkd") == gang.group.queue
    assert first.group.queue.startswith("vcjkd-")  # capitals: a hash keeps it distinct
    assert cpu_job.pods[0].requests == {CPU: 8000, MEMORY: 16_384 * MIB, PODS: 1}
    assert cpu_job.pods[0].duration == 60  # empty duration: end - start
    assert first.pods[0].annotations == {USER_ANNOTATION: "uXBbc", STATUS_ANNOTATION: "COMPLETED"}


def test_helios_times_in_seconds_are_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "cluster_log.csv",
        """
        job_id,user,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue
        7,u1,8,8,1,COMPLETED,500,510,610,100,10
        """,
    )
    (job,) = iter_jobs(path)
    assert (job.group.submit_time, job.pods[0].duration, job.group.queue) == (500, 100, "default")


def test_pai_tasks_with_the_job_table_beside(data: Path) -> None:
    path = data / "pai" / "pai_task_table.csv"
    assert detect_format(path) == "pai"
    jobs = list(iter_jobs(path))
    both, running, alone = jobs
    assert [pod.name for pod in both.pods] == [
        "4b3f04b66a525d2df903eb16-ps-0",
        "4b3f04b66a525d2df903eb16-worker-0",
        "4b3f04b66a525d2df903eb16-worker-1",
    ]
    ps, worker, _ = both.pods
    # 600% of a core, 10 GB; 400%, 29.296875 GB (30,000 MiB) and half a GPU.
    assert ps.requests == {CPU: 6000, MEMORY: 10_240 * MIB, PODS: 1}
    assert worker.requests == {CPU: 4000, MEMORY: 30_000 * MIB, GPU: 500, PODS: 1}
    assert (ps.duration, worker.duration) == (525, 510)
    assert both.group.min_member == 3
    assert both.group.submit_time == 4_550_879  # the job table's submission time
    assert ps.annotations[USER_ANNOTATION] == "58540f191766"
    assert ps.labels["berth.io/role"] == "ps"
    assert running.pods[0].duration is None
    assert alone.group.submit_time == 1_739_162  # not in the job table: its task's start


def test_pai_without_the_job_table(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "pai_task_table.csv"
    shutil.copy(data / "pai" / "pai_task_table.csv", path)
    first = next(iter_jobs(path))
    assert first.group.submit_time == 4_550_885  # the earliest task start
    assert USER_ANNOTATION not in first.pods[0].annotations


def test_pai_job_rows_must_be_consecutive(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "pai_task_table.csv",
        """
        a,worker,1,Terminated,10,20,100,1,,
        b,worker,1,Terminated,10,20,100,1,,
        a,ps,1,Terminated,10,20,100,1,,
        """,
    )
    with pytest.raises(TraceError, match=r"pai_task_table.csv:3: job a continues after"):
        list(iter_jobs(path))
    jobs = iter_jobs(path, options=TraceOptions(on_bad_row="skip"))
    assert [job.group.name for job in jobs] == ["a", "b"]
    assert len(jobs.skipped) == 1


def test_pai_job_table_alone_is_explained(data: Path) -> None:
    with pytest.raises(TraceError, match="has no resource requests"):
        list(iter_jobs(data / "pai" / "pai_job_table.csv"))


def test_alibaba2018_latest_row_of_a_machine_wins(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "machine_meta.csv",
        """
        m_7,900,3,4,64,50,USING
        m_7,100,1,2,96,100,IMPORT_INSTALLING
        m_8,0,1,2,96,100,USING
        """,
    )
    nodes = load_nodes(path, options=TraceOptions(normalized_memory=1000))
    assert [node.name for node in nodes] == ["m-7", "m-8"]
    assert nodes[0].labels[ZONE_LABEL] == "3"
    assert nodes[0].allocatable == {CPU: 64_000, MEMORY: 500 * MIB, PODS: 110}
    assert nodes[0].annotations[STATUS_ANNOTATION] == "USING"


@pytest.mark.parametrize("beside", [True, False], ids=["machine list beside", "usage alone"])
def test_alibaba2018_usage_of_a_renamed_machine_follows_its_node(
    tmp_path: Path, beside: bool
) -> None:
    """m_1 and m-1 both make the name m-1; the machine list renames the later one, and its
    usage samples carry the node's new name (the machine list decides when it is there)."""
    if beside:
        meta = write(
            tmp_path, "machine_meta.csv", "m-1,0,1,2,96,100,USING\nm_1,0,1,2,96,100,USING\n"
        )
        nodes = load_nodes(meta)
        assert [(node.annotations.get(TRACE_ID_ANNOTATION), node.name) for node in nodes] == [
            (None, "m-1"),
            ("m_1", "m-1-2"),
        ]
    usage = write(
        tmp_path,
        "machine_usage.csv",
        """
        m_1,0,10,50,,,1,1,1
        m-1,0,20,60,,,1,1,1
        m_1,10,30,70,,,1,1,1
        m_2,10,40,80,,,1,1,1
        """,
    )
    samples = iter_usage(usage)
    named = [(sample.trace_id, sample.machine) for sample in samples]
    first = "m-1-2" if beside else "m-1"  # without the list, the first machine seen keeps it
    second = "m-1" if beside else "m-1-2"
    assert named == [("m_1", first), ("m-1", second), ("m_1", first), ("m_2", "m-2")]
    assert any("renamed" in line for line in samples.log.lines()) != beside


DLRM_HEADER = (
    "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,"
    "rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,"
    "creation_time,scheduled_time,deletion_time\n"
)


def test_alibaba2025_times_outside_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "disaggregated_DLRM_trace.csv"
    path.write_text(
        DLRM_HEADER
        + "i_a,CN,app_1,8,8,0,0,1,1,40.0,40.0,85.0,100.0,-1,,,\n"  # before and after the trace
        + "i_b,CN,app_1,8,8,0,0,1,1,40.0,40.0,85.0,100.0,2,,,500.0\n"  # deleted during it
        + "i_c,HN,app_2,12,12,1,1,25,25,120.0,120.0,680.0,800.0,-1,100.0,120.0,NaN\n"
    )
    assert detect_format(path) == "alibaba2025"
    stream = iter_jobs(path)
    a, b, c = (job.pods[0] for job in stream)
    assert (a.submit_time, a.duration) == (0.0, None)
    assert (b.submit_time, b.duration) == (0.0, 500.0)
    assert (c.submit_time, c.duration, c.requests[GPU]) == (100.0, None, 1000)
    assert stream.log.lines() == [
        "changed 1 instances with a max_instance_per_node limit, which is not enforced"
    ]


def test_alibaba2025_deleted_before_created_is_a_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "disaggregated_DLRM_trace.csv"
    path.write_text(DLRM_HEADER + "i_a,CN,app_1,8,8,0,0,1,1,40,40,85,100,-1,900,901,100\n")
    with pytest.raises(TraceError, match=r":2: deletion_time 100 is before creation_time 900"):
        list(iter_jobs(path))


def test_azure_llm_requests_become_a_curve(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "AzureLLMInferenceTrace_code.csv",
        """
        TIMESTAMP,ContextTokens,GeneratedTokens
        2023-11-16 18:00:00.5000000,100,10
        2023-11-16 18:00:59.0000000,200,20
        2023-11-16 18:02:10.0000000,300,30
        """,
    )
    assert detect_format(path) == "azure-llm"
    curve, _ = load_curve(path)
    assert curve.requests.tolist() == [2 / 60, 0.0, 1 / 60]
    assert curve.tokens.tolist() == [330 / 60, 0.0, 330 / 60]
    assert curve.at(130) == 1 / 60 and curve.at(180 + 10) == 2 / 60  # repeats after its span
    with pytest.raises(TraceError, match="holds load, not jobs"):
        list(iter_jobs(path))
