"""gpu-load-aware's per-job GPU profiles in ``berth serve``, on the real control plane: a pod's
GPU use is read from the ``berth.io/gpu-utilization`` annotation a node agent writes, its job's
profile is kept in a ConfigMap, and a server started afresh places the job's next pod where
the server that saw the first pod leave places it (and not where a server without the profile
does). A ConfigMap berth cannot read is logged once and ignored.

Node ``a`` has 4 GPUs, none in use; ``b`` has 8, 2 of them used by a pod bound there. A pod of
job ``train`` asks 4 GPUs, and gpu-load-aware scores the GPU share left after its estimate:
- with no profile (estimated at its request): a (4-0-4)/4 = 0, b (8-2-4)/8 = 25 → b;
- with the profile its first pod left (25% of its GPUs): a (4-1)/4 = 75, b (8-2-1)/8 = 62 → a.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml

from berth.cli import main
from berth.k8s.client import ApiError
from berth.k8s.profiles import CONFIGMAP, DATA_KEY, GPU_UTILIZATION_ANNOTATION
from berth.k8s.server import ServeOptions, Server
from berth.sim.inputs import InputSpec
from berth.sim.run import load_inputs, simulate
from tests.k8s.harness import (
    Cluster,
    config,
    fast_options,
    node_doc,
    pod_doc,
    serving,
    settle,
    wait_for,
)

NAMESPACE = "berth-system"

CONFIG = {
    "actions": "enqueue, allocate",
    "tiers": [
        {
            "plugins": [
                {"name": "gang"},
                {"name": "predicates"},
                {"name": "gpu-load-aware", "arguments": {"resourceWeights": {"nvidia.com/gpu": 1}}},
            ]
        }
    ],
}


def gpu_node(name: str, gpus: int) -> dict[str, Any]:
    doc = node_doc(name, cpu="16", memory="64Gi")
    doc["status"]["allocatable"]["nvidia.com/gpu"] = str(gpus)
    return doc


def gpu_pod(name: str, gpus: int, *, group: str = "", node: str = "") -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": group} if group else {}
    doc = pod_doc(name, node=node, annotations=annotations)
    (container,) = doc["spec"]["containers"]
    container["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
        "limits": {"nvidia.com/gpu": str(gpus)},  # the API wants GPUs' limits
    }
    return doc


TRAIN_GROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "train", "namespace": "default"},
    "spec": {"minMember": 1},
}


def options(configmap: str | None, **overrides: Any) -> ServeOptions:
    """Profiles written at most every 0.2 s unless told otherwise."""
    return fast_options(**{"profiles_interval": 0.2, **overrides, "profiles_configmap": configmap})


def read_configmap(cluster: Cluster, name: str) -> dict[str, Any] | None:
    try:
        return cluster.admin.request("GET", CONFIGMAP.item(NAMESPACE, name))
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


def saved_jobs(cluster: Cluster, name: str) -> dict[str, dict[str, float]]:
    raw = read_configmap(cluster, name)
    if raw is None:
        return {}
    jobs = orjson.loads(raw["data"][DATA_KEY])["jobs"]
    return {entry.pop("job"): entry for entry in jobs}


@pytest.fixture
def configmap(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A ConfigMap name of this test's own, removed afterwards (tests' cleaning leaves
    berth-system's ConfigMaps alone)."""
    name = f"profiles-{request.node.name.replace('_', '-')[:40].strip('-').lower()}"
    yield name
    cluster._delete_quietly(CONFIGMAP.item(NAMESPACE, name))


def placed(cluster: Cluster, pod: str) -> str:
    wait_for(lambda: f"default/{pod}" in cluster.bindings(), timeout=60)
    return cluster.bindings()[f"default/{pod}"]


def leave(cluster: Cluster, server: Any, pod: str, used: str = "0.25") -> None:
    """The pod runs, its node agent reports the GPU share it used, and it is deleted."""
    wait_for(lambda: server.store.get("Pod", f"default/{pod}").phase.value == "Running")
    annotate = {"metadata": {"annotations": {GPU_UTILIZATION_ANNOTATION: used}}}
    cluster.patch("Pod", "default", pod, annotate)
    settle(server)
    cluster.delete("Pod", "default", pod)
    settle(server)


def first_run_leaves_a_profile(cluster: Cluster, server: Any, name: str) -> None:
    """train-1 placed without a profile, its agent reports 25%, it is deleted."""
    cluster.add(gpu_pod("train-1", 4, group="train"))
    assert placed(cluster, "train-1") == "b"
    leave(cluster, server, "train-1")
    wait_for(lambda: "default/train" in saved_jobs(cluster, name), timeout=30)


def test_a_jobs_profile_outlives_a_restart(cluster: Cluster, configmap: str):
    cluster.add(gpu_node("a", 4), gpu_node("b", 8), gpu_pod("hog", 2, node="b"), TRAIN_GROUP)
    where = f"{NAMESPACE}/{configmap}"
    with cluster.kubelet():
        with serving(cluster, config(CONFIG), options(where)) as server:
            settle(server)
            first_run_leaves_a_profile(cluster, server, configmap)
            sample = server.metrics.gpu_profile_readings.labels("annotation")._value.get()
            assert sample == 1
            # The same server, never restarted, places the job's next pod by the profile.
            cluster.add(gpu_pod("train-2", 4, group="train"))
            without_restart = placed(cluster, "train-2")
            leave(cluster, server, "train-2")
        assert without_restart == "a"
        assert saved_jobs(cluster, configmap) == {
            "default/train": {"cpu": 1.0, "memory": 1.0, "gpu": 0.25}
        }
        # Restarted: the profile is read back before the first cycle.
        with serving(cluster, config(CONFIG), options(where)) as server:
            settle(server)
            cluster.add(gpu_pod("train-3", 4, group="train"))
            assert placed(cluster, "train-3") == without_restart
            leave(cluster, server, "train-3")
        # Without the ConfigMap the restarted server has no profile: the pod goes to b.
        with serving(cluster, config(CONFIG), options(None)) as server:
            settle(server)
            cluster.add(gpu_pod("train-4", 4, group="train"))
            assert placed(cluster, "train-4") == "b"
            leave(cluster, server, "train-4", used="0.5")  # measured all the same
        gpu = {owner: p[2] for owner, p in server.scheduler.state.profiles.items()}
        assert gpu == {"default/train": 0.5}
    assert saved_jobs(cluster, configmap)["default/train"]["gpu"] == 0.25  # not written


def test_writes_wait_for_the_interval_and_the_shutdown(cluster: Cluster, configmap: str):
    """At most one write per interval: the first profile is written at once, the next one
    waits. A server that dies loses what waited; one that stops writes it."""
    cluster.add(gpu_node("a", 4), gpu_node("b", 8), gpu_pod("hog", 2, node="b"), TRAIN_GROUP)
    where = f"{NAMESPACE}/{configmap}"
    slow = options(where, profiles_interval=600.0)
    crash = threading.Event()
    server = Server(cluster.client(), config(CONFIG), slow)
    thread = threading.Thread(target=server.run, args=(crash,), daemon=True)
    with cluster.kubelet():
        thread.start()
        try:
            settle(server)
            first_run_leaves_a_profile(cluster, server, configmap)
            cluster.add(gpu_pod("eval", 1))  # a pod of its own: its own profile
            placed(cluster, "eval")
            leave(cluster, server, "eval")
            assert len(server.scheduler.state.profiles) == 2
        finally:
            crash.set()  # killed: nothing is written on the way out
            server.stop()
            thread.join(10)
        assert list(saved_jobs(cluster, configmap)) == ["default/train"]
        with serving(cluster, config(CONFIG), slow) as server:
            settle(server)
            for pod in ("eval", "tune"):
                cluster.add(gpu_pod(pod, 1))
                placed(cluster, pod)
                leave(cluster, server, pod)
            # eval's was written at once, tune's waits for the interval
            assert list(saved_jobs(cluster, configmap)) == ["default/train", "default/eval"]
        assert list(saved_jobs(cluster, configmap)) == [
            "default/train",
            "default/eval",
            "default/tune",
        ]
    assert server.metrics.gpu_profile_writes.labels("written")._value.get() == 2


def test_placements_after_a_restart_are_the_simulators(cluster: Cluster, configmap: str, tmp_path):
    """Decision parity across a restart: the simulator, whose usage model gives train-1 its
    GPU use by its ``berth.io/utilization``, places train-1 and then train-2 as berth serve
    does when train-1's node agent reports that use and berth restarts between the two."""
    nodes = [gpu_node("a", 4), gpu_node("b", 8)]
    first, second = gpu_pod("train-1", 4, group="train"), gpu_pod("train-2", 4, group="train")
    simulated_first = {
        **first,
        "metadata": {
            **first["metadata"],
            "annotations": {
                **first["metadata"]["annotations"],
                "berth.io/utilization": "0.25",
                "berth.io/duration": "5",
            },
        },
    }
    simulated_second = {
        **second,
        "metadata": {
            **second["metadata"],
            "annotations": {**second["metadata"]["annotations"], "berth.io/submit-time": "60"},
        },
    }
    # A cpu pod of the group that runs throughout: the simulator's group stays running, so
    # it takes train-2 (a group whose pods have all finished is complete there).
    keeper = pod_doc("train-keeper", annotations={"scheduling.k8s.io/group-name": "train"})
    workload = [
        gpu_pod("hog", 2, node="b"),
        TRAIN_GROUP,
        keeper,
        simulated_first,
        simulated_second,
    ]
    (tmp_path / "cluster.yaml").write_text(yaml.safe_dump_all(nodes))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump_all(workload))
    (tmp_path / "scheduler.yaml").write_text(yaml.safe_dump(CONFIG))
    spec = InputSpec(
        cluster=str(tmp_path / "cluster.yaml"), workloads=(str(tmp_path / "workload.yaml"),)
    )
    result = simulate(load_inputs(spec, tmp_path / "scheduler.yaml"), seed=0)
    expected = {pod.name: pod.bound_node for pod in result.pods if pod.name.startswith("train")}

    cluster.add(*nodes, gpu_pod("hog", 2, node="b"), TRAIN_GROUP, keeper)
    where = f"{NAMESPACE}/{configmap}"
    served = {}
    with cluster.kubelet():
        with serving(cluster, config(CONFIG), options(where)) as server:
            settle(server)
            served["train-keeper"] = placed(cluster, "train-keeper")
            cluster.add(first)
            served["train-1"] = placed(cluster, "train-1")
            leave(cluster, server, "train-1")
        with serving(cluster, config(CONFIG), options(where)) as server:
            settle(server)
            cluster.add(second)
            served["train-2"] = placed(cluster, "train-2")
    assert served == expected
    assert (expected["train-1"], expected["train-2"]) == ("b", "a")  # the profile decided


@pytest.mark.parametrize("reported", ["lots", "1.5", "-0.1"])
def test_a_reading_that_is_not_a_fraction_leaves_the_specs_figure(
    cluster: Cluster, configmap: str, reported: str, caplog: pytest.LogCaptureFixture
):
    cluster.add(gpu_node("a", 4), gpu_node("b", 8), gpu_pod("hog", 2, node="b"), TRAIN_GROUP)
    where = f"{NAMESPACE}/{configmap}"
    with (
        caplog.at_level(logging.WARNING, logger="berth.k8s"),
        cluster.kubelet(),
        serving(cluster, config(CONFIG), options(where)) as server,
    ):
        settle(server)
        cluster.add(gpu_pod("train-1", 4, group="train"))
        placed(cluster, "train-1")
        leave(cluster, server, "train-1", used=reported)
        wait_for(lambda: "default/train" in saved_jobs(cluster, configmap), timeout=30)
        readings = server.metrics.gpu_profile_readings
        assert readings.labels("spec")._value.get() == 1
        assert readings.labels("annotation")._value.get() == 0
    warned = [r for r in caplog.records if r.getMessage() == "GPU utilization not read"]
    assert [r.pod for r in warned] == ["default/train-1"]  # type: ignore[attr-defined]
    assert saved_jobs(cluster, configmap)["default/train"]["gpu"] == 1.0


@pytest.mark.parametrize(
    "data",
    [
        {DATA_KEY: "{not json"},
        {"other": "{}"},
        {DATA_KEY: '{"jobs": {"default/train": 0.25}}'},
        {DATA_KEY: '{"jobs": [{"job": "default/train", "cpu": 1, "memory": 1, "gpu": -1}]}'},
        {DATA_KEY: '{"jobs": [{"cpu": 1, "memory": 1, "gpu": 0.25}]}'},
    ],
    ids=["not-json", "no-key", "jobs-not-a-list", "negative", "no-job-name"],
)
def test_a_malformed_configmap_is_ignored_with_one_log_line(
    cluster: Cluster, configmap: str, data: dict[str, str], caplog: pytest.LogCaptureFixture
):
    cluster.admin.request(
        "POST",
        CONFIGMAP.collection(NAMESPACE),
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": configmap},
            "data": data,
        },
    )
    cluster.add(gpu_node("a", 4), gpu_node("b", 8), gpu_pod("hog", 2, node="b"), TRAIN_GROUP)
    where = f"{NAMESPACE}/{configmap}"
    with (
        caplog.at_level(logging.WARNING, logger="berth.k8s"),
        cluster.kubelet(),
        serving(cluster, config(CONFIG), options(where)) as server,
    ):
        settle(server)
        ignored = [r for r in caplog.records if r.getMessage() == "GPU profiles ignored"]
        assert len(ignored) == 1 and ignored[0].configmap == where  # type: ignore[attr-defined]
        # Placed as with no profile, and the next profile replaces what could not be read.
        first_run_leaves_a_profile(cluster, server, configmap)
    assert saved_jobs(cluster, configmap)["default/train"]["gpu"] == 0.25


def test_the_oldest_jobs_are_dropped_past_the_limit(cluster: Cluster, configmap: str):
    jobs = [{"job": f"default/old-{i}", "cpu": 1.0, "memory": 1.0, "gpu": 0.5} for i in range(3)]
    cluster.admin.request(
        "POST",
        CONFIGMAP.collection(NAMESPACE),
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": configmap},
            "data": {DATA_KEY: orjson.dumps({"jobs": jobs}).decode()},
        },
    )
    cluster.add(gpu_node("a", 4), gpu_node("b", 8), gpu_pod("hog", 2, node="b"), TRAIN_GROUP)
    where = f"{NAMESPACE}/{configmap}"
    with (
        cluster.kubelet(),
        serving(cluster, config(CONFIG), options(where, profiles_limit=2)) as server,
    ):
        settle(server)
        # Read back the two most recent of the three; train's makes old-1 the oldest dropped.
        assert [owner for owner, _ in server.scheduler.state.profiles.items()] == [
            "default/old-1",
            "default/old-2",
        ]
        first_run_leaves_a_profile(cluster, server, configmap)
    assert list(saved_jobs(cluster, configmap)) == ["default/old-2", "default/train"]


@pytest.mark.parametrize(
    "arguments,message",
    [
        (["--profiles-configmap", "profiles"], "'profiles': expected NAMESPACE/NAME or off"),
        (["--profiles-configmap", "a/b/c"], "'a/b/c': expected NAMESPACE/NAME or off"),
        (["--profiles-configmap", "/b"], "'/b': expected NAMESPACE/NAME or off"),
        (["--profiles-limit", "0"], "0 must be a number > 0"),
        (["--profiles-limit", "many"], "'many' is not a number"),
        (["--profiles-interval", "0"], "0 must be > 0"),
    ],
)
def test_serve_refuses_bad_profile_flags(arguments, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--kubeconfig", "/nowhere", *arguments])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
