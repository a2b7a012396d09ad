"""Generated scheduling cases for comparing berth with the real kube-scheduler on one API
server. Each case is a small cluster of its own inside the shared one: its nodes carry a case
label, its pods select it (so kube-scheduler and berth see only the case's nodes), and its
labels, zones and topology values are the case's own, so no two cases interact. A case has
nodes, pods already running on them (bound by name), and one pod to place, of one kind:
plain requests, node affinity, taints, inter-pod affinity, anti-affinity, or topology spread.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from tests.k8s.harness import priority_class_doc

CASE_LABEL = "berth.test/case"
KINDS = ("resources", "node-affinity", "taints", "pod-affinity", "anti-affinity", "spread")


@dataclass
class Case:
    name: str
    kind: str
    nodes: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, Any] = field(default_factory=dict)  # the spec, without schedulerName

    def pod(self, scheduler: str) -> dict[str, Any]:
        """The pod to place, for ``scheduler``."""
        spec = {**self.pending, "schedulerName": scheduler}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{self.name}-{'ks' if scheduler != 'berth' else 'berth'}",
                "namespace": "default",
                "labels": {CASE_LABEL: self.name, "app": f"{self.name}-new"},
            },
            "spec": spec,
        }


def _container(cpu: int, memory: int) -> dict[str, Any]:
    requests = {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}
    return {"name": "c", "image": "busybox", "resources": {"requests": requests}}


def _node(case: str, index: int, rng: random.Random) -> dict[str, Any]:
    name = f"{case}-n{index}"
    cpu, memory = rng.choice([(2, 4096), (4, 8192), (8, 16384), (4, 16384)])
    labels = {
        CASE_LABEL: case,
        "kubernetes.io/hostname": name,
        "topology.kubernetes.io/zone": f"{case}-z{index % 2}",
        "disk": rng.choice(["ssd", "hdd"]),
        "tier": rng.choice(["a", "b", "c"]),
    }
    amounts = {"cpu": str(cpu), "memory": f"{memory}Mi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": dict(amounts), "allocatable": amounts},
    }


def _running(case: str, node: dict[str, Any], index: int, rng: random.Random) -> dict[str, Any]:
    cpu = int(node["status"]["allocatable"]["cpu"]) * 1000
    memory = int(node["status"]["allocatable"]["memory"].removesuffix("Mi"))
    share = rng.choice([0.1, 0.25, 0.4, 0.6])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{case}-r{index}",
            "namespace": "default",
            "labels": {CASE_LABEL: case, "app": f"{case}-{rng.choice('ab')}"},
        },
        "spec": {
            "nodeName": node["metadata"]["name"],
            "containers": [_container(int(cpu * share), int(memory * rng.choice([0.1, 0.5])))],
        },
    }


def _term(case: str, app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": f"{case}-{app}"}}, "topologyKey": key}


def _keys(case: str) -> list[str]:
    return ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]


def generate(count: int, seed: int = 0) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        name = f"c{number:03d}"
        kind = KINDS[number % len(KINDS)]
        case = Case(name, kind)
        case.nodes = [_node(name, i, rng) for i in range(rng.randint(2, 5))]
        for i in range(rng.randint(0, 2 * len(case.nodes))):
            case.running.append(_running(name, rng.choice(case.nodes), i, rng))
        cpu = rng.choice([100, 250, 500, 1000, 1500])
        memory = rng.choice([128, 256, 512, 1024])
        spec: dict[str, Any] = {
            "nodeSelector": {CASE_LABEL: name},
            "containers": [_container(cpu, memory)],
        }
        if kind == "node-affinity":
            affinity: dict[str, Any] = {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": rng.randint(1, 100),
                        "preference": {
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": [rng.choice("abc")]}
                            ]
                        },
                    }
                    for _ in range(rng.randint(1, 2))
                ]
            }
            if rng.random() < 0.5:
                affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}
                    ]
                }
            spec["affinity"] = {"nodeAffinity": affinity}
        elif kind == "taints":
            for node in case.nodes:
                effect = rng.choice([None, "NoSchedule", "PreferNoSchedule", "PreferNoSchedule"])
                if effect:
                    value = rng.choice(["x", "y"])
                    node["spec"] = {
                        "taints": [{"key": "dedicated", "value": value, "effect": effect}]
                    }
            if rng.random() < 0.6:
                value = rng.choice(["x", "y"])
                spec["tolerations"] = [
                    {
                        "key": "dedicated",
                        "operator": "Equal",
                        "value": value,
                        "effect": rng.choice(["NoSchedule", "PreferNoSchedule"]),
                    }
                ]
        elif kind in ("pod-affinity", "anti-affinity"):
            field_name = "podAffinity" if kind == "pod-affinity" else "podAntiAffinity"
            terms: dict[str, Any] = {}
            key = rng.choice(_keys(name))
            if rng.random() < 0.5:
                terms["requiredDuringSchedulingIgnoredDuringExecution"] = [
                    _term(name, rng.choice("ab"), key)
                ]
            terms["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": rng.randint(1, 100),
                    "podAffinityTerm": _term(name, rng.choice("ab"), rng.choice(_keys(name))),
                }
                for _ in range(rng.randint(1, 2))
            ]
            spec["affinity"] = {field_name: terms}
        elif kind == "spread":
            spec["topologySpreadConstraints"] = [
                {
                    "maxSkew": rng.choice([1, 2]),
                    "topologyKey": rng.choice(_keys(name)),
                    "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
                    "labelSelector": {"matchLabels": {"app": f"{name}-{rng.choice('ab')}"}},
                }
            ]
        case.pending = spec
        cases.append(case)
    return cases


#: The priority classes of the preemption cases (name → value).
PRIORITY_CLASSES = {
    "oracle-low": 100,
    "oracle-mid": 500,
    "oracle-high": 10_000,
    "oracle-high-never": 10_000,  # preemptionPolicy: Never
}


def priority_classes() -> list[dict[str, Any]]:
    return [
        priority_class_doc(name, value, "Never" if name.endswith("-never") else "")
        for name, value in PRIORITY_CLASSES.items()
    ]


def generate_preemption(count: int, seed: int = 0) -> list[Case]:
    """Cases where the pod to place fits on no node as it is: its nodes are filled with
    lower-priority pods (oracle-low and oracle-mid), it is oracle-high and asks for more than
    any node has free. Some ask for more than any node has at all, some may not preempt
    (their class has ``preemptionPolicy: Never``): both leave those pending."""
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        name = f"p{number:03d}"
        case = Case(name, "preemption")
        case.nodes = [_node(name, i, rng) for i in range(rng.randint(2, 4))]
        for node in case.nodes:
            node["metadata"]["labels"]["disk"] = "ssd"
        free = []
        index = 0
        for node in case.nodes:
            cpu = int(node["status"]["allocatable"]["cpu"]) * 1000
            shares = [rng.choice([0.15, 0.25, 0.3, 0.4]) for _ in range(rng.randint(1, 3))]
            used = 0
            for share in shares:
                if used + int(cpu * share) > cpu * 0.95:
                    break
                pod = _running(name, node, index, rng)
                pod["spec"]["containers"] = [_container(int(cpu * share), 256)]
                pod["spec"]["priorityClassName"] = rng.choice(["oracle-low", "oracle-mid"])
                case.running.append(pod)
                used += int(cpu * share)
                index += 1
            free.append(cpu - used)
        largest = max(int(n["status"]["allocatable"]["cpu"]) * 1000 for n in case.nodes)
        if rng.random() < 0.1:
            cpu = largest + 500  # fits nowhere, whatever goes
        else:
            cpu = rng.randint(max(free) + 1, largest) if max(free) < largest else largest
        spec: dict[str, Any] = {
            "nodeSelector": {CASE_LABEL: name},
            "containers": [_container(cpu, 128)],
            "priorityClassName": "oracle-high",
        }
        if rng.random() < 0.1:
            spec["priorityClassName"] = "oracle-high-never"
        case.pending = spec
        cases.append(case)
    return cases
