"""End-to-end: the LeaderWorkerSet and JobSet examples through ``berth validate`` and ``berth
simulate``, and, over random clusters and sizes, that exclusive placement and gangs hold in
what the scheduler did (a group never spans two domains, no domain holds two groups, a
group's pods run all or none)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.cli import main

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "lws" / "cluster.yaml"
RACK = "topology.berth.io/rack"


def simulate(out: Path, workload: Path, cluster: Path = CLUSTER, until: str = "7200") -> None:
    argv = ["simulate", "--cluster", str(cluster), "--workload", str(workload)]
    assert main([*argv, "--until", until, "--out", str(out), "--quiet"]) == 0


def rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def racks(cluster: Path) -> dict[str, str]:
    """Node → rack, from a NodePool with ``topology.tiers`` (2 nodes per rack here) or from
    the nodes' labels."""
    result = {}
    for doc in yaml.safe_load_all(cluster.read_text()):
        if doc["kind"] == "NodePool":
            size = doc["spec"]["topology"]["tiers"][0]["size"]
            count = doc["spec"]["count"]
            for i in range(count):
                result[f"{doc['metadata']['name']}-{i}"] = str(i // size)
        else:
            result[doc["metadata"]["name"]] = doc["metadata"]["labels"].get(RACK, "")
    return result


def check_exclusive(pods: list[dict[str, str]], domains: dict[str, str], group_of: Any) -> None:
    """Over the pods alive at each bind time: a group in one domain, a domain for one group."""
    times = sorted({float(p["bind_time"]) for p in pods if p["bind_time"]})
    for t in times:
        alive = [
            p
            for p in pods
            if p["bind_time"]
            and float(p["bind_time"]) <= t
            and (not p["end_time"] or float(p["end_time"]) > t)
        ]
        by_group: dict[str, set[str]] = {}
        by_domain: dict[str, set[str]] = {}
        for p in alive:
            domain = domains[p["node"]]
            by_group.setdefault(group_of(p), set()).add(domain)
            by_domain.setdefault(domain, set()).add(group_of(p))
        assert all(len(d) == 1 for d in by_group.values()), (t, by_group)
        assert all(len(g) == 1 for g in by_domain.values()), (t, by_domain)


def test_examples_validate(capsys: Any) -> None:
    files = [CLUSTER, ROOT / "examples/lws/serving.yaml", ROOT / "examples/jobset/training.yaml"]
    assert main(["validate", *map(str, files)]) == 0
    assert "error" not in capsys.readouterr().out


def test_lws_example(tmp_path: Path) -> None:
    simulate(tmp_path, ROOT / "examples" / "lws" / "serving.yaml")
    pods = rows(tmp_path / "pods.csv")
    assert {p["name"] for p in pods} == {
        f"vllm-{g}{'' if w == 0 else f'-{w}'}" for g in range(3) for w in range(4)
    }
    check_exclusive(pods, racks(CLUSTER), lambda p: p["job"])
    jobs = rows(tmp_path / "jobs.csv")
    assert len(jobs) == 6 and {j["min_member"] for j in jobs} == {"4"}
    (workload,) = rows(tmp_path / "workloads.csv")
    assert workload["kind"] == "LeaderWorkerSet"
    assert (workload["ready"], workload["updated"]) == ("3", "3")  # groups
    assert (workload["rollouts"], workload["rollouts_complete"]) == ("1", "1")
    assert workload["peak_unavailable"] == "1"


def test_jobset_example(tmp_path: Path) -> None:
    simulate(tmp_path, ROOT / "examples" / "jobset" / "training.yaml")
    pods = rows(tmp_path / "pods.csv")
    assert sum(p["phase"] == "Succeeded" for p in pods) == 6
    (driver,) = [p for p in pods if p["name"].startswith("train-driver-0-")]
    assert driver["phase"] == "Deleted" and "the JobSet completed" in driver["reason"]
    check_exclusive(pods, racks(CLUSTER), lambda p: p["job"])
    jobs = {j["name"]: j for j in rows(tmp_path / "jobs.csv")}
    assert sorted(jobs) == [
        "job-train-driver-0",
        "job-train-workers-0",
        "job-train-workers-1",
        "job-train-workers-2",
    ]


def lws_doc(name: str, replicas: int, size: int, gpus: int) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "i",
        "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}},
    }
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": name,
            "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": RACK},
        },
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {
                "size": size,
                "workerTemplate": {"spec": {"containers": [container]}},
            },
        },
    }


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    nodes=st.lists(st.integers(0, 3), min_size=2, max_size=8),
    sets=st.lists(
        st.tuples(st.integers(1, 3), st.integers(1, 4), st.sampled_from([1, 2, 4, 8])),
        min_size=1,
        max_size=3,
    ),
)
def test_exclusive_groups_and_gangs_property(
    tmp_path_factory: Any, nodes: list[int], sets: list[tuple[int, int, int]]
) -> None:
    out = tmp_path_factory.mktemp("prop")
    cluster = out / "cluster.yaml"
    cluster.write_text(
        yaml.safe_dump_all(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": {RACK: f"r{rack}"}},
                "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "nvidia.com/gpu": "8"}},
            }
            for i, rack in enumerate(nodes)
        )
    )
    workload = out / "workload.yaml"
    docs = [lws_doc(f"s{i}", r, size, gpus) for i, (r, size, gpus) in enumerate(sets)]
    workload.write_text(yaml.safe_dump_all(docs))
    simulate(out / "run", workload, cluster, until="600")
    pods = rows(out / "run" / "pods.csv")
    domains = {f"n{i}": f"r{rack}" for i, rack in enumerate(nodes)}
    check_exclusive(pods, domains, lambda p: p["job"])
    sizes = {f"s{i}": size for i, (_, size, _) in enumerate(sets)}
    groups: dict[str, list[dict[str, str]]] = {}
    for p in pods:
        groups.setdefault(p["job"], []).append(p)
    for name, members in groups.items():
        bound = sum(1 for p in members if p["bind_time"])
        assert bound in (0, sizes[name.split("-")[0]]), (name, members)
