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
    #: Other objects the case needs (DRA: its nodes' ResourceSlices, its claim template).
    objects: list[dict[str, Any]] = field(default_factory=list)

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


#: The DRA cases' driver and DeviceClass (every device of the driver).
DRA_DRIVER = "gpu.example.com"
DRA_CLASS = "oracle-gpu"
DRA_KINDS = ("dra-count", "dra-cel", "dra-all")


def dra_class() -> dict[str, Any]:
    selector = {"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRA_CLASS},
        "spec": {"selectors": [selector]},
    }


def _dra_slice(node: dict[str, Any], devices: list[dict[str, Any]]) -> dict[str, Any]:
    name = node["metadata"]["name"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-gpus"},
        "spec": {
            "driver": DRA_DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def _gpu(index: int, model: str, memory: int) -> dict[str, Any]:
    attributes = {"model": {"string": model}, "memory": {"int": memory}}
    return {"name": f"gpu-{index}", "attributes": attributes}


def generate_dra(count: int, seed: int = 0) -> list[Case]:
    """DRA cases with one right answer, the pod asking its devices through a claim template:

    - ``dra-count``: one node has exactly the devices the pod asks, the others fewer;
    - ``dra-cel``: a CEL selector on a device attribute leaves one device in the case;
    - ``dra-all``: allocationMode All of the devices of one model, on the one node with cpu
      enough for the pod (the other is too small).
    """
    rng = random.Random(seed)
    cases = []
    for number in range(count):
        name = f"d{number:03d}"
        kind = DRA_KINDS[number % len(DRA_KINDS)]
        case = Case(name, kind)
        exactly: dict[str, Any] = {"deviceClassName": DRA_CLASS}
        cpu = 500
        if kind == "dra-count":
            case.nodes = [_node(name, i, rng) for i in range(rng.randint(2, 4))]
            asked = rng.randint(2, 4)
            chosen = rng.randrange(len(case.nodes))
            for i, node in enumerate(case.nodes):
                have = asked if i == chosen else rng.randint(0, asked - 1)
                devices = [_gpu(g, "a", 40) for g in range(have)]
                if devices:
                    case.objects.append(_dra_slice(node, devices))
            exactly["count"] = asked
        elif kind == "dra-cel":
            case.nodes = [_node(name, i, rng) for i in range(rng.randint(2, 3))]
            memories = rng.sample(range(8, 200, 8), 4 * len(case.nodes))
            wanted = None
            for node in case.nodes:
                devices = [
                    _gpu(g, rng.choice("ab"), memories.pop()) for g in range(rng.randint(2, 4))
                ]
                if wanted is None or rng.random() < 0.3:
                    wanted = devices[rng.randrange(len(devices))]["attributes"]["memory"]["int"]
                case.objects.append(_dra_slice(node, devices))
            expression = f'device.attributes["{DRA_DRIVER}"].memory == {wanted}'
            exactly["selectors"] = [{"cel": {"expression": expression}}]
        else:
            case.nodes = [_node(name, i, rng) for i in range(2)]
            big = rng.randrange(2)
            for i, node in enumerate(case.nodes):
                cores = 8 if i == big else 1
                node["status"]["allocatable"]["cpu"] = str(cores)
                node["status"]["capacity"]["cpu"] = str(cores)
                models = ["a"] + [rng.choice("ab") for _ in range(rng.randint(1, 3))]
                rng.shuffle(models)
                devices = [_gpu(g, m, 40) for g, m in enumerate(models)]
                case.objects.append(_dra_slice(node, devices))
            cpu = 2000
            exactly["allocationMode"] = "All"
            selector = f'device.attributes["{DRA_DRIVER}"].model == "a"'
            exactly["selectors"] = [{"cel": {"expression": selector}}]
        template = f"{name}-gpus"
        case.objects.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": template, "namespace": "default"},
                "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
            }
        )
        container = _container(cpu, 128)
        container["resources"]["claims"] = [{"name": "gpu"}]
        case.pending = {
            "nodeSelector": {CASE_LABEL: name},
            "containers": [container],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
        }
        cases.append(case)
    return cases
