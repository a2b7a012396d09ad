"""``berth trace convert --as``: the same trace as Volcano PodGroups, DRA claims, Workload API
gangs, LeaderWorkerSets and JobSets, simulated on the same nodes. DRA and the Workload API
decide exactly as Volcano's shape does; JobSet (no gang) and LWS (a serving API: groups start
again) differ where they are meant to, and the tests say how."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from berth.api.jobset import JOBSET_NAME_KEY
from berth.api.lws import NAME_LABEL
from berth.api.manifest import load_files
from berth.api.objects import Node, Pod, PodGroup, PodPhase
from berth.framework.config import parse_config
from berth.resources import GPU, MIB
from berth.sim.engine import SimConfig, Simulation
from berth.traces import TraceError, TraceJob, TraceOptions, iter_jobs, workload_manifests
from berth.traces.model import JOB_LABEL
from berth.traces.shapes import SHAPES, cluster_manifests, shaper
from berth.traces.writer import write_manifests

Run = Callable[..., int]
# Two 8-GPU nodes; job-3 (two 8-GPU workers) must wait for job-2's 4 GPUs to leave gpu-0.
CONTENDED = (
    "timestamp,duration,num_gpus,gpu_time,cluster\n"
    "0,1000,4,4000,vc1\n10,500,16,8000,vc1\n20,300,2,600,vc1\n"
)
Placement = tuple[str, str, float | None, float | None, PodPhase]


def gpu_nodes(count: int) -> list[Node]:
    allocatable = {"cpu": 64_000, "memory": 512 * 1024 * MIB, "pods": 110, GPU: 8000}
    return [Node(f"gpu-{i}", allocatable=dict(allocatable)) for i in range(count)]


def job_of(pod: Pod) -> str:
    return pod.labels.get(JOB_LABEL) or pod.labels.get(NAME_LABEL) or pod.labels[JOBSET_NAME_KEY]


def simulate(trace: Path, shape: str, folder: Path, until: float) -> list[Placement]:
    """Each pod's (job, node, start, end, phase), sorted: the trace converted to ``shape``,
    on two GPU nodes converted to it too."""
    folder.mkdir()
    options = TraceOptions()
    write_manifests(folder / "cluster.yaml", cluster_manifests(gpu_nodes(2), shape))
    jobs = iter_jobs(trace, options=options)
    write_manifests(
        folder / "workload.yaml", workload_manifests(jobs, options.queue_rule, shaper(shape))
    )
    manifests = load_files([folder / "cluster.yaml", folder / "workload.yaml"])
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    result = Simulation(manifests, config, sim_config=sim, until=until).run()
    return sorted((job_of(p), p.bound_node, p.start_time, p.end_time, p.phase) for p in result.pods)


@pytest.fixture
def contended(tmp_path: Path) -> Path:
    path = tmp_path / "philly_jobs.csv"
    path.write_text(CONTENDED)
    return path


TRACES = ["contended", "philly/cluster_job_log", "helios/cluster_log.csv"]


def trace_path(name: str, data: Path, contended: Path) -> Path:
    return contended if name == "contended" else data / name


@pytest.mark.parametrize("shape", ["dra", "workload"])
@pytest.mark.parametrize("name", TRACES)
def test_dra_and_workload_gangs_decide_as_volcano_does(
    data: Path, contended: Path, tmp_path: Path, name: str, shape: str
) -> None:
    trace = trace_path(name, data, contended)
    until = 1e6
    volcano = simulate(trace, "volcano", tmp_path / "volcano", until)
    assert simulate(trace, shape, tmp_path / shape, until) == volcano
    assert any(phase == PodPhase.SUCCEEDED for *_, phase in volcano)


def test_a_jobset_has_no_gang_so_a_job_starts_in_parts(contended: Path, tmp_path: Path) -> None:
    volcano = simulate(contended, "volcano", tmp_path / "volcano", 3000)
    jobset = simulate(contended, "jobset", tmp_path / "jobset", 3000)
    # job-3's two 8-GPU workers: Volcano starts both once gpu-0 is free (t=1002); the JobSet's
    # Job starts one on idle gpu-1 at once and the other when that one is done.
    assert [row for row in volcano if row[0] == "job-3"] == [
        ("job-3", "gpu-0", 1002.0, 1502.0, PodPhase.SUCCEEDED),
        ("job-3", "gpu-1", 1002.0, 1502.0, PodPhase.SUCCEEDED),
    ]
    assert [row for row in jobset if row[0] == "job-3"] == [
        ("job-3", "gpu-1", 11.0, 511.0, PodPhase.SUCCEEDED),
        ("job-3", "gpu-1", 512.0, 1012.0, PodPhase.SUCCEEDED),
    ]
    # The jobs that are one pod are decided alike.
    assert [r for r in jobset if r[0] != "job-3"] == [r for r in volcano if r[0] != "job-3"]


def test_a_leader_worker_set_gangs_its_group_but_starts_it_again(
    contended: Path, tmp_path: Path
) -> None:
    volcano = simulate(contended, "volcano", tmp_path / "volcano", 3000)
    lws = simulate(contended, "lws", tmp_path / "lws", 3000)
    first = {job: start for job, _, start, *_ in reversed(lws) if start is not None}
    assert first == {"job-2": 1.0, "job-4": 21.0}  # as Volcano starts them
    runs = [row for row in lws if row[0] == "job-2"]
    assert [r[2] for r in runs] == [1.0, 1002.0, 2003.0]  # a serving group: started again
    # job-3's gang never finds both nodes free: job-2's group takes gpu-0 back each time.
    assert [r[4] for r in lws if r[0] == "job-3"] == [PodPhase.PENDING] * 2
    assert [r[4] for r in volcano if r[0] == "job-3"] == [PodPhase.SUCCEEDED] * 2


def test_every_shape_of_a_trace_loads_without_a_problem(data: Path, tmp_path: Path) -> None:
    for shape in SHAPES:
        out = tmp_path / f"{shape}.yaml"
        jobs = iter_jobs(data / "pai" / "pai_task_table.csv")
        if shape == "dra":
            with pytest.raises(TraceError, match="not a whole number of devices"):
                write_manifests(
                    out, workload_manifests(jobs, TraceOptions().queue_rule, shaper(shape))
                )
            continue
        write_manifests(out, workload_manifests(jobs, TraceOptions().queue_rule, shaper(shape)))
        loaded = load_files(out)
        assert not loaded.problems, (shape, [str(p) for p in loaded.problems])


def test_a_leader_worker_set_takes_one_worker_shape() -> None:
    def pod(name: str, cpu: int) -> Pod:
        return Pod(name, requests={"cpu": cpu, "pods": 1}, group="j")

    job = TraceJob(PodGroup("j", min_member=3), [pod("a", 1000), pod("b", 2000), pod("c", 3000)])
    with pytest.raises(TraceError) as caught:
        shaper("lws")(job)
    assert str(caught.value) == (
        "job j: its workers differ in shape, and a LeaderWorkerSet has one worker template "
        "(--as jobset writes each task as its own Job)"
    )


def test_a_node_list_as_dra_publishes_its_gpus(
    berth_trace: Run, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pai_machine_spec.csv"
    path.write_text("m1,V100,96,512,8\nm2,CPU,96,512,0\n")
    out = tmp_path / "cluster.yaml"
    assert berth_trace("convert", str(path), "--as", "dra", "--out", str(out)) == 0
    loaded = load_files(out)
    assert not loaded.problems, [str(p) for p in loaded.problems]
    device_class, gpus = loaded.dra
    assert type(device_class).__name__ == "DeviceClass"
    assert (gpus.name, gpus.driver, gpus.pool) == ("m1-gpu.nvidia.com", "gpu.nvidia.com", "m1")
    assert [d.name for d in gpus.devices] == [f"gpu-{i}" for i in range(8)]
    # The GPUs are the slice's now: no node advertises nvidia.com/gpu beside them.
    assert [n.allocatable.get(GPU, 0) for n in loaded.nodes] == [0, 0]


def test_an_unknown_shape_is_one_line(
    berth_trace: Run, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = str(data / "philly" / "philly_jobs.csv")
    out = tmp_path / "w.yaml"
    assert berth_trace("convert", trace, "--as", "kueue", "--out", str(out)) == 1
    captured: Any = capsys.readouterr()
    assert captured.err == (
        "error: --as kueue: unknown shape (expected one of volcano, dra, workload, lws, jobset)\n"
    )
    assert not out.exists()
