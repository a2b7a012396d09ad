"""``berth serve --scaling edl|aryl`` against the real API server: under edl an elastic Volcano
Job grows to fill the cluster, gives workers back when another pod waits, and grows again when
it leaves, the workers it does not run waiting in the API with a condition that says why; under
aryl the spare GPUs go to the job with the most work left, as its trainer reports it
(``berth.io/progress``) or as estimated from its duration, on Volcano Jobs and PyTorchJobs."""

from __future__ import annotations

from typing import Any

import pytest

from berth.controllers.scaling.config import ScalingConfig
from berth.k8s.scaling import ServeScaling
from berth.k8s.server import Server
from tests.builders import elastic_job_doc
from tests.k8s.harness import Cluster, config, fast_options, node_doc, pod_doc, serving, wait_for
from tests.k8s.test_kubeflow import pytorch_job_doc

PROGRESS = "berth.io/progress"
HELD = "held back by the edl scaling policy (target {} workers)"


def elastic_job() -> dict[str, Any]:
    """Four workers of one core, at least one; as a cluster holds it: no simulated run time."""
    doc = elastic_job_doc({"cpu": "1"}, min_available=1, namespace="default", uid="job-uid")
    doc["spec"]["schedulerName"] = "berth"
    return doc


def options(max_load: float = 1.0) -> Any:
    return fast_options(scaling=ScalingConfig("edl", 0.05, max_load))


def pods(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {p["metadata"]["name"]: p for p in cluster.objects("Pod")}


def workers(cluster: Cluster, bound: bool) -> list[str]:
    return sorted(
        name
        for name, pod in pods(cluster).items()
        if name.startswith("train-")
        and not pod["metadata"].get("deletionTimestamp")  # evicted, its kubelet stopping it
        and bool(pod["spec"].get("nodeName")) == bound
    )


def condition(pod: dict[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled":
            return c.get("message", "")
    return ""


def scaling(server: Server) -> ServeScaling:
    assert server.scaling is not None
    return server.scaling


def test_an_elastic_job_grows_gives_way_and_grows_again(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()) as server, cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        assert scaling(server).holding.targets == {"default/train": 4}

        # A pod that needs two cores waits: EDL counts it and cuts the job to two workers.
        cluster.add(pod_doc("other", cpu="2"))
        wait_for(lambda: cluster.bindings().get("default/other") == "n1")
        wait_for(lambda: len(workers(cluster, bound=False)) == 2)
        assert len(workers(cluster, bound=True)) == 2
        record = scaling(server).holding.record
        assert record.workers_removed == 2
        assert scaling(server).holding.targets == {"default/train": 2}
        exposition = server.metrics.exposition().decode()
        assert "berth_scaling_scaled_in_total 2.0" in exposition
        wait_for(lambda: "berth_scaling_held_pods 2.0" in server.metrics.exposition().decode())
        # The Job controller replaced the two evicted workers; the replacements wait, held.
        waiting = workers(cluster, bound=False)
        assert all("." in name for name in waiting), waiting
        wait_for(lambda: all(condition(pods(cluster)[n]) == HELD.format(2) for n in waiting))

        # The other pod leaves: the job grows back onto the two cores it frees.
        cluster.delete("Pod", "default", "other")
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        assert scaling(server).holding.targets == {"default/train": 4}
        assert record.grown >= 2 and record.shrunk >= 1


def test_growth_stops_at_the_desired_load(cluster: Cluster):
    # 0.5 of 4 cores: the job may grow while its requests stay within 2 cores.
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options(max_load=0.5)) as server, cluster.kubelet():
        wait_for(lambda: scaling(server).holding.record.rounds >= 1)
        wait_for(lambda: len(workers(cluster, bound=True)) == 2)
        wait_for(lambda: len(workers(cluster, bound=False)) == 2)
        assert scaling(server).holding.targets == {"default/train": 2}
        waiting = workers(cluster, bound=False)
        wait_for(lambda: all(condition(pods(cluster)[n]) == HELD.format(2) for n in waiting))


def test_without_a_policy_an_elastic_job_takes_what_fits(cluster: Cluster):
    # The cluster object has no berth.io/duration: serve takes it all the same.
    cluster.add(node_doc("n1", cpu="3"), elastic_job())
    with serving(cluster) as server, cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 3)
        assert server.scaling is None
        assert not server.store.skipped


def gpu_node(name: str, gpus: int) -> dict[str, Any]:
    doc = node_doc(name, cpu="16", memory="64Gi")
    doc["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    return doc


def gpu_job(name: str, annotations: dict[str, str]) -> dict[str, Any]:
    """Four workers of one GPU, at least one; ``annotations`` say what is known of its work."""
    doc = elastic_job_doc(
        {"cpu": "1", "nvidia.com/gpu": "1"},
        min_available=1,
        annotations=annotations,
        namespace="default",
        uid=f"{name}-uid",
    )
    doc["metadata"]["name"] = name
    doc["spec"]["schedulerName"] = "berth"
    (container,) = doc["spec"]["tasks"][0]["template"]["spec"]["containers"]
    container["resources"]["limits"] = {"nvidia.com/gpu": "1"}  # the API wants GPUs' limits
    return doc


def bound_workers(cluster: Cluster, job: str) -> int:
    return sum(
        1
        for name, pod in pods(cluster).items()
        if name.startswith(f"{job}-worker-")
        and pod["spec"].get("nodeName")
        and not pod["metadata"].get("deletionTimestamp")
    )


HOUR = {"berth.io/duration": "3600"}


def test_aryl_gives_the_spare_gpus_to_the_job_with_the_most_work_left(cluster: Cluster):
    # Four GPUs, two jobs at one worker each: the two spare GPUs go where they save the most
    # time. "short" reports 90% done; "long" reports nothing and is estimated from its
    # duration (it has barely run).
    cluster.add(
        gpu_node("n1", 4),
        gpu_job("short", {**HOUR, "berth.io/progress": "0.9"}),
        gpu_job("long", HOUR),
    )
    opts = fast_options(scaling=ScalingConfig("aryl", 0.05))
    with serving(cluster, options=opts) as server, cluster.kubelet():
        targets = scaling(server).holding.targets
        wait_for(lambda: targets == {"default/short": 1, "default/long": 3})
        wait_for(
            lambda: bound_workers(cluster, "long") == 3 and bound_workers(cluster, "short") == 1
        )
        assert scaling(server).remaining.sources == {
            "default/short": "progress",
            "default/long": "estimate",
        }
        exposition = server.metrics.exposition().decode()
        assert 'berth_aryl_jobs{source="progress"} 1.0' in exposition
        assert 'berth_aryl_jobs{source="estimate"} 1.0' in exposition

        # The trainers report again: "long" is nearly done, "short" has most of its work
        # left. The new reports alone make the policy look again, and the GPUs move.
        cluster.patch("Job", "default", "long", {"metadata": {"annotations": {PROGRESS: "0.99"}}})
        cluster.patch("Job", "default", "short", {"metadata": {"annotations": {PROGRESS: "0.1"}}})
        wait_for(lambda: targets == {"default/short": 3, "default/long": 1})
        wait_for(
            lambda: bound_workers(cluster, "long") == 1 and bound_workers(cluster, "short") == 3
        )
        assert scaling(server).holding.record.workers_removed == 2
        assert set(scaling(server).remaining.sources.values()) == {"progress"}


def test_aryl_runs_a_job_whose_work_is_unknown_at_its_minimum(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
):
    # No duration, no report: nothing values an extra worker, though three GPUs are idle.
    cluster.add(gpu_node("n1", 4), gpu_job("blind", {}))
    opts = fast_options(scaling=ScalingConfig("aryl", 0.05))
    with serving(cluster, options=opts) as server, cluster.kubelet():
        wait_for(lambda: scaling(server).holding.record.rounds >= 1)
        wait_for(lambda: bound_workers(cluster, "blind") == 1)
        assert scaling(server).holding.targets == {"default/blind": 1}
        assert scaling(server).remaining.sources == {"default/blind": "unknown"}
        wait_for(
            lambda: 'berth_aryl_jobs{source="unknown"} 1.0' in server.metrics.exposition().decode()
        )
        # A bad report is not read, and the log says so: the job stays unknown.
        cluster.patch("Job", "default", "blind", {"metadata": {"annotations": {PROGRESS: "90%"}}})
        wait_for(lambda: "progress not read" in caplog.text)
        assert scaling(server).remaining.reported("default/blind") is None
        assert scaling(server).remaining.sources == {"default/blind": "unknown"}
        assert scaling(server).holding.targets == {"default/blind": 1}


def test_serve_refuses_a_policy_it_cannot_run(cluster: Cluster):
    with pytest.raises(ValueError, match="elasticflow runs only in the simulator"):
        Server(cluster.client(), config(), fast_options(scaling=ScalingConfig("elasticflow")))


def test_a_restarted_server_keeps_the_workers_it_finds(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()), cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
    with serving(cluster, options=options()) as server, cluster.kubelet():
        wait_for(lambda: scaling(server).holding.record.rounds >= 1)
        assert scaling(server).holding.targets == {"default/train": 4}
        assert scaling(server).holding.record.workers_removed == 0
        assert len(workers(cluster, bound=True)) == 4


def test_a_worker_in_its_grace_period_is_not_cut_twice(cluster: Cluster):
    # Evicted pods stay, still running, for 0.4 s: eight rounds of 0.05 s see them.
    cluster.node_agent.max_grace = 0.4
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()) as server, cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        cluster.add(pod_doc("other", cpu="2"))
        wait_for(lambda: len(cluster.api.evictions) == 2)
        # A change while they shut down makes the policy look again: they are not the
        # job's any more, so it cuts nothing.
        cordoned = node_doc("n2", cpu="4")
        cordoned["spec"] = {"unschedulable": True}
        cluster.add(cordoned)
        wait_for(lambda: cluster.bindings().get("default/other") == "n1")
        wait_for(lambda: len(workers(cluster, bound=False)) == 2)
        assert len(cluster.api.evictions) == 2, cluster.api.evictions
        assert scaling(server).holding.record.workers_removed == 2
        bound = server.scheduler.jobs["default/train"].bound
        wait_for(lambda: not any(p.terminating for p in list(bound.values())))  # gone at last


def _report_starts(cluster: Cluster, minutes: tuple[int, ...]) -> None:
    """The kubelet's startTime of train-worker-<i>: 10:<minutes[i]>:00."""
    for index, minute in enumerate(minutes):
        status = {"phase": "Running", "startTime": f"2026-11-26T10:{minute}:00Z"}
        cluster.patch("Pod", "default", f"train-worker-{index}", {"status": status})


def _started_seen(server: Server) -> bool:
    job = server.scheduler.jobs.get("default/train")
    return job is not None and len(job.bound) == 4 and all(p.start_time for p in job.bound.values())


def _cut_for_another_pod(cluster: Cluster) -> list[str]:
    """The workers evicted to make room for a one-core pod."""
    cluster.add(pod_doc("other", cpu="1"))
    wait_for(lambda: len(cluster.api.evictions) == 1)
    return cluster.api.evictions


def test_workers_placed_together_go_by_name_whatever_their_kubelets_report(cluster: Cluster):
    # One session placed all four; their kubelets' whole-second stamps do not reorder them
    # (the simulator starts them together), so the last by name goes first.
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()) as server:
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        bound = server.scheduler.jobs["default/train"].bound.values()
        assert len({p.bind_time for p in bound}) == 1
        _report_starts(cluster, (40, 30, 20, 10))  # worker-0 reported last
        wait_for(lambda: _started_seen(server))
        assert _cut_for_another_pod(cluster) == ["default/train-worker-3"]


def test_workers_placed_before_berth_started_go_latest_started_first(cluster: Cluster):
    # A restarted berth did not see them placed: the kubelet's startTime orders them, and
    # worker-0 started last.
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()):
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
    _report_starts(cluster, (40, 10, 20, 30))
    with serving(cluster, options=options()) as server:
        wait_for(lambda: _started_seen(server))
        assert _cut_for_another_pod(cluster) == ["default/train-worker-0"]


def test_a_cut_that_could_not_be_made_is_tried_again(cluster: Cluster):
    cluster.add(node_doc("n1", cpu="4"), elastic_job())
    with serving(cluster, options=options()) as server, cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        holding = scaling(server).holding
        holding.removable = lambda pod: False  # as if every bind were still in flight
        cluster.add(pod_doc("other", cpu="2"))
        wait_for(lambda: holding.targets == {"default/train": 2})
        assert not cluster.api.evictions
        holding.removable = lambda pod: True  # the binds answered; nothing else changed
        wait_for(lambda: len(cluster.api.evictions) == 2)
        wait_for(lambda: cluster.bindings().get("default/other") == "n1")


def test_workers_leaving_a_cordoned_node_are_not_taken_off_the_load_twice(cluster: Cluster):
    # Two workers on each of two nodes; n2 is drained: cordoned, its pods being deleted
    # (with a grace period their kubelet takes all of, here).
    cluster.node_agent.max_grace = 30
    cluster.add(node_doc("n1", cpu="2"), node_doc("n2", cpu="2"), elastic_job())
    with serving(cluster, options=options()) as server, cluster.kubelet():
        wait_for(lambda: len(workers(cluster, bound=True)) == 4)
        drained = [n for n, p in pods(cluster).items() if p["spec"].get("nodeName") == "n2"]
        record = scaling(server).holding.record
        cluster.patch("Node", "", "n2", {"spec": {"unschedulable": True}})
        for name in drained:  # one at a time, a round between (nothing else changes)
            rounds = record.rounds
            wait_for(lambda rounds=rounds: record.rounds > rounds)
            cluster.delete("Pod", "default", name, grace=30)
        # n1 is full with the job's two other workers: the job is cut to them.
        wait_for(lambda: scaling(server).holding.targets == {"default/train": 2})
        assert not cluster.api.evictions


def test_aryl_scales_pytorch_jobs_by_their_reported_progress(cluster: Cluster):
    # A PyTorchJob (elasticPolicy, one GPU per worker) beside a Volcano Job, on four GPUs:
    # the one with more work left gets the two spare GPUs, written into its Worker replicas.
    llama = pytorch_job_doc(
        "llama", workers=3, master=False, elastic={"minReplicas": 1, "maxReplicas": 3}
    )
    llama["metadata"]["annotations"] = {**HOUR, PROGRESS: "0.1"}
    container = llama["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    cluster.add(gpu_node("n1", 4), llama, gpu_job("short", {**HOUR, PROGRESS: "0.9"}))
    opts = fast_options(kubeflow=True, scaling=ScalingConfig("aryl", 0.05))

    def replicas() -> int:
        (job,) = [j for j in cluster.objects("PyTorchJob") if j["metadata"]["name"] == "llama"]
        return int(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"])

    with serving(cluster, options=opts) as server, cluster.kubelet():
        targets = scaling(server).holding.targets
        wait_for(lambda: targets == {"default/llama": 3, "default/short": 1}, timeout=30)
        wait_for(lambda: bound_workers(cluster, "llama") == 3 and replicas() == 3, timeout=30)
        assert scaling(server).remaining.sources["default/llama"] == "progress"

        cluster.patch(
            "PyTorchJob", "default", "llama", {"metadata": {"annotations": {PROGRESS: "0.99"}}}
        )
        wait_for(lambda: targets == {"default/llama": 1, "default/short": 3}, timeout=30)
        wait_for(lambda: bound_workers(cluster, "short") == 3 and replicas() == 1, timeout=30)


def _wide_gang() -> dict[str, Any]:
    """A rigid Volcano Job of two 4-GPU pods, all or nothing: a whole server each."""
    doc = gpu_job("wide", {})
    del doc["metadata"]["annotations"]["berth.io/elastic"]
    doc["spec"]["minAvailable"] = 2
    task = doc["spec"]["tasks"][0]
    task["replicas"] = 2
    (container,) = task["template"]["spec"]["containers"]
    container["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "4"},
        "limits": {"nvidia.com/gpu": "4"},
    }
    return doc


@pytest.mark.parametrize("policy", ["edl", "aryl"])
def test_the_starvation_guard_frees_whole_servers_for_a_waiting_gang(cluster: Cluster, policy: str):
    # As tests/sim/test_scaling_starvation.py: two elastic jobs of eight 1-GPU workers (at
    # least two) fill four 4-GPU servers; a gang of two whole-server pods comes. The policies
    # alone never make room for it (the simulator shows it with the guard off).
    jobs = []
    for name in ("e0", "e1"):
        job = gpu_job(name, {"berth.io/duration": "400000"})
        job["spec"]["minAvailable"] = 2
        job["spec"]["tasks"][0]["replicas"] = 8
        jobs.append(job)
    cluster.add(*(gpu_node(f"n{i}", 4) for i in range(4)), *jobs)
    guard = ScalingConfig(policy, 0.05, max_load_desired=1.0, starvation_wait=0.0)
    with serving(cluster, options=fast_options(scaling=guard)) as server, cluster.kubelet():
        wait_for(lambda: bound_workers(cluster, "e0") + bound_workers(cluster, "e1") == 16)
        cluster.add(_wide_gang())
        wait_for(lambda: bound_workers(cluster, "wide") == 2)
        record = scaling(server).holding.record
        assert record.workers_removed >= 8  # two whole servers freed, through the Eviction API
        assert len(cluster.api.evictions) == record.workers_removed
        assert bound_workers(cluster, "e0") >= 2 and bound_workers(cluster, "e1") >= 2
        nodes = {p["spec"]["nodeName"] for n, p in pods(cluster).items() if n.startswith("wide-")}
        assert len(nodes) == 2
