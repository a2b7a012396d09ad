"""``berth serve --jobset`` on the real API server: a JobSet's Jobs run by the simulator's
controllers in berth's cache (none reaches the API, so kube-controller-manager makes no pods
for them), their pods created by berth, named and labelled as JobSet's Jobs make them and owned
by the JobSet, and the JobSet's verdict written back once its pods have succeeded."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from berth.api.jobset import JOBSET_NAME_KEY, REPLICATED_JOB_NAME_KEY
from berth.k8s.kinds import JOB_SET
from tests.k8s.harness import Cluster, fast_options, node_doc, serving, settle, wait_for

JOBS = "/apis/batch/v1/namespaces/default/jobs"


def job_set_doc(name: str, replicas: int, pods: int, cpu: str) -> dict[str, Any]:
    container = {"name": "c", "image": "trainer:1", "resources": {"requests": {"cpu": cpu}}}
    pod_spec = {"schedulerName": "berth", "restartPolicy": "Never", "containers": [container]}
    job = {"parallelism": pods, "completions": pods, "template": {"spec": pod_spec}}
    return {
        "apiVersion": JOB_SET.api_version,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicatedJobs": [{"name": "workers", "replicas": replicas, "template": {"spec": job}}]
        },
    }


@pytest.fixture
def jobset_cluster(cluster: Cluster) -> Iterator[Cluster]:
    """The cluster, its JobSets removed afterwards (the harness cleans the kinds berth
    always watches)."""
    yield cluster
    cluster.admin.request("DELETE", JOB_SET.collection("default"))


def test_a_job_set_runs_its_jobs_pods_and_completes(jobset_cluster: Cluster) -> None:
    cluster = jobset_cluster
    cluster.add(node_doc("n1", cpu="4"), job_set_doc("train", 2, 2, "1"))
    with serving(cluster, options=fast_options(jobset=True)) as server:
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
        pods = cluster.objects("Pod")
        assert cluster.admin.request("GET", JOBS)["items"] == []
        for pod in pods:
            meta = pod["metadata"]
            assert meta["labels"][JOBSET_NAME_KEY] == "train"
            assert meta["labels"][REPLICATED_JOB_NAME_KEY] == "workers"
            (owner,) = meta["ownerReferences"]
            assert (owner["kind"], owner["name"]) == ("JobSet", "train")
        names = sorted(p["metadata"]["name"].rsplit("-", 1)[0] for p in pods)
        assert names == ["train-workers-0"] * 2 + ["train-workers-1"] * 2  # a Job's suffix
        # Both Jobs have active pods, none ready (no kubelet runs them).
        wait_for(lambda: _replicated(cluster) == [_counts(active=2)])
        for pod in pods:
            name = pod["metadata"]["name"]
            cluster.patch("Pod", "default", name, {"status": {"phase": "Succeeded"}})

        def done() -> bool:
            (js,) = cluster.objects(JOB_SET.kind)
            return (js.get("status") or {}).get("terminalState") == "Completed"

        wait_for(done, timeout=30)
    (js,) = cluster.objects(JOB_SET.kind)
    (condition,) = js["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("Completed", "True")
    assert js["status"]["replicatedJobsStatus"] == [_counts(succeeded=2)]


def _counts(**counts: int) -> dict[str, Any]:
    """A replicated Job's status row for "workers", zero where not given."""
    zero = dict.fromkeys(("ready", "succeeded", "failed", "active", "suspended"), 0)
    return {"name": "workers", **zero, **counts}


def _replicated(cluster: Cluster) -> list[dict[str, Any]]:
    (js,) = cluster.objects(JOB_SET.kind)
    return (js.get("status") or {}).get("replicatedJobsStatus") or []


def test_a_restarted_server_takes_the_job_sets_pods_back(jobset_cluster: Cluster) -> None:
    """berth restarts while a JobSet runs: its Jobs, kept only in berth's cache, are made
    again from the pods the API has (by their replicated Job and index labels), so no pod is
    made twice, and the JobSet still completes when they succeed."""
    cluster = jobset_cluster
    cluster.add(node_doc("n1", cpu="4"), job_set_doc("train", 2, 2, "1"))
    with serving(cluster, options=fast_options(jobset=True)) as server:
        wait_for(lambda: len(cluster.bindings()) == 4, timeout=30)
        settle(server)
    before = sorted(p["metadata"]["name"] for p in cluster.objects("Pod"))
    with serving(cluster, options=fast_options(jobset=True)) as server:
        settle(server)
        assert sorted(p["metadata"]["name"] for p in cluster.objects("Pod")) == before
        for name in before:
            cluster.patch("Pod", "default", name, {"status": {"phase": "Succeeded"}})
        wait_for(lambda: _terminal(cluster) == "Completed", timeout=30)
        settle(server)
    assert sorted(p["metadata"]["name"] for p in cluster.objects("Pod")) == before
    groups = cluster.objects("PodGroup")
    assert len(groups) == 2  # one per Job, the same across the restart
    for group in groups:
        (owner,) = group["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("JobSet", "train")


def _terminal(cluster: Cluster) -> str | None:
    (js,) = cluster.objects("JobSet")
    return (js.get("status") or {}).get("terminalState")
