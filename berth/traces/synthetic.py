"""The built-in scenario: a mixed cluster and a simulated day of work, generated from a seed.

It is written as the same Kubernetes-shaped documents a user would put in YAML files and goes
through the same loader, so the demo exercises exactly the path user input takes. The shape is
meant to look like a small production cluster: CPU nodes and 8-GPU nodes in two zones, long-
running services spread across zones with anti-affinity, gang-scheduled training jobs arriving
through the day, and many short batch pods with a daytime peak.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

DAY = 86_400.0
ZONES = ("zone-a", "zone-b")
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def builtin_documents(seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cluster documents, workload documents) for the built-in scenario."""
    rng = np.random.default_rng(seed)
    return _cluster(), _queues() + _services(rng) + _training(rng) + _batch(rng)


def _pool(
    name: str,
    count: int,
    zone: str,
    capacity: dict[str, Any],
    labels: dict[str, str],
    taints: list[dict[str, str]],
    topology: tuple[int, int, int],
) -> dict[str, Any]:
    sockets, cores, threads = topology
    return {
        "apiVersion": "berth.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "count": count,
            "template": {
                "metadata": {
                    "labels": {"topology.kubernetes.io/zone": zone, **labels},
                    "annotations": {
                        "berth.io/cpu-sockets": str(sockets),
                        "berth.io/cpu-cores-per-socket": str(cores),
                        "berth.io/cpu-threads-per-core": str(threads),
                    },
                },
                "spec": {"taints": taints},
                "status": {"allocatable": capacity},
            },
        },
    }


def _cluster() -> list[dict[str, Any]]:
    docs = []
    for zone in ZONES:
        short = zone[-1]
        docs.append(
            _pool(
                f"cpu-{short}",
                24,
                zone,
                {"cpu": "32", "memory": "128Gi", "pods": "110"},
                {"node.berth.io/class": "cpu"},
                [],
                (2, 8, 2),
            )
        )
        docs.append(
            _pool(
                f"gpu-{short}",
                6,
                zone,
                {"cpu": "96", "memory": "768Gi", "nvidia.com/gpu": "8", "pods": "110"},
                {"node.berth.io/class": "gpu", "nvidia.com/gpu.product": "A100"},
                [GPU_TAINT],
                (2, 24, 2),
            )
        )
    return docs


def _queues() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": {"weight": weight},
        }
        for name, weight in (("online", 4), ("training", 3), ("batch", 2))
    ]
    docs += [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in (("online", 1000), ("training", 500), ("batch", 100))
    ]
    return docs


def _meta(
    name: str,
    submit: float,
    duration: float | None,
    utilization: float,
    labels: dict[str, str],
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    annotations = {
        "berth.io/submit-time": f"{submit:.1f}",
        "berth.io/utilization": f"{utilization:.2f}",
    }
    if duration is not None:
        annotations["berth.io/duration"] = f"{duration:.1f}"
    annotations.update(extra or {})
    return {"name": name, "namespace": "default", "labels": labels, "annotations": annotations}


def _container(cpu: str, memory: str, gpu: int = 0) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    return {"name": "main", "image": "registry.example/app:1", "resources": {"requests": requests}}


def _services(rng: np.random.Generator) -> list[dict[str, Any]]:
    docs = []
    for i in range(12):
        app = f"svc-{i:02d}"
        replicas = int(rng.integers(3, 9))
        cpu = str(int(rng.choice([1, 2, 4])))
        memory = f"{int(rng.choice([2, 4, 8]))}Gi"
        selector = {"matchLabels": {"app": app}}
        for r in range(replicas):
            submit = float(rng.uniform(0, 600))
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{app}-{r}",
                        submit,
                        None,
                        float(rng.uniform(0.25, 0.6)),
                        {"app": app, "tier": "online"},
                        {"scheduling.volcano.sh/queue-name": "online"},
                    ),
                    "spec": {
                        "priorityClassName": "online",
                        "containers": [_container(cpu, memory)],
                        "nodeSelector": {"node.berth.io/class": "cpu"},
                        "affinity": {
                            "podAntiAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": [
                                    {
                                        "labelSelector": selector,
                                        "topologyKey": "kubernetes.io/hostname",
                                    }
                                ]
                            }
                        },
                        "topologySpreadConstraints": [
                            {
                                "maxSkew": 1,
                                "topologyKey": "topology.kubernetes.io/zone",
                                "whenUnsatisfiable": "DoNotSchedule",
                                "labelSelector": selector,
                            }
                        ],
                    },
                }
            )
    return docs


def _training(rng: np.random.Generator) -> list[dict[str, Any]]:
    docs = []
    arrivals = np.sort(rng.uniform(0, DAY * 0.8, size=60))
    for j, submit in enumerate(arrivals):
        name = f"train-{j:03d}"
        workers = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        gpus = int(rng.choice([1, 2, 4, 8], p=[0.2, 0.2, 0.3, 0.3]))
        duration = float(np.clip(rng.lognormal(math.log(5400), 0.9), 900, 6 * 3600))
        docs.append(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "metadata": _meta(name, float(submit), None, 1.0, {}),
                "spec": {
                    "minMember": workers,
                    "queue": "training",
                    "priorityClassName": "training",
                    "minResources": {"nvidia.com/gpu": str(workers * gpus)},
                },
            }
        )
        for w in range(workers):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": _meta(
                        f"{name}-worker-{w}",
                        float(submit),
                        duration,
                        float(rng.uniform(0.7, 0.95)),
                        {"job": name, "role": "worker"},
                        {"scheduling.k8s.io/group-name": name},
                    ),
                    "spec": {
                        "priorityClassName": "training",
                        "containers": [_container(str(gpus * 8), f"{gpus * 48}Gi", gpus)],
                        "tolerations": [
                            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                        ],
                        "nodeSelector": {"node.berth.io/class": "gpu"},
                    },
                }
            )
    return docs


def _batch(rng: np.random.Generator) -> list[dict[str, Any]]:
    """Short pods, more of them in the daytime (a sinusoidal arrival rate, by thinning)."""
    docs = []
    peak_rate = 3000 / DAY * 1.8
    t = 0.0
    i = 0
    while True:
        t += float(rng.exponential(1 / peak_rate))
        if t >= DAY:
            break
        rate = 0.5 + 0.45 * math.sin(2 * math.pi * (t / DAY - 0.25))
        if rng.random() > rate:
            continue
        best_effort = rng.random() < 0.03
        cpu = str(float(rng.choice([0.5, 1, 2, 4])))
        memory = f"{int(rng.choice([1, 2, 4, 8]))}Gi"
        container = (
            {"name": "main", "image": "registry.example/batch:1"}
            if best_effort
            else (_container(cpu, memory))
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": _meta(
                    f"batch-{i:05d}",
                    t,
                    float(rng.uniform(60, 1800)),
                    float(rng.uniform(0.6, 0.95)),
                    {"tier": "batch"},
                    {"scheduling.volcano.sh/queue-name": "batch"},
                ),
                "spec": {"priorityClassName": "batch", "containers": [container]},
            }
        )
        i += 1
    return docs
