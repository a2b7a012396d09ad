"""Manifest loading: what valid manifests become, and the exact line each mistake produces."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.api.manifest import (
    ManifestError,
    Manifests,
    Problem,
    load_file,
    load_files,
    load_or_raise,
    parse_documents,
)
from berth.api.objects import CpuTopology
from berth.api.selectors import (
    MATCH_NOTHING,
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredNodeTerm,
    Requirement,
    SpreadConstraint,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from berth.resources import MIB


def write(tmp_path: Path, text: str, name: str = "m.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def load(tmp_path: Path, text: str, name: str = "m.yaml") -> Manifests:
    return load_files([write(tmp_path, text, name)])


def lines(m: Manifests, tmp_path: Path, severity: str | None = None) -> list[str]:
    """Problem lines with the temporary directory stripped, so expectations stay readable."""
    return [
        str(p).replace(f"{tmp_path}/", "")
        for p in m.problems
        if severity is None or p.severity == severity
    ]


def pod_doc(spec: dict | None = None, **metadata: object) -> dict:
    meta = {"name": "p", **metadata}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec if spec is not None else {"containers": [{"name": "c"}]},
    }


def requests_pod(requests: dict, limits: dict | None = None) -> dict:
    resources: dict = {"requests": requests}
    if limits is not None:
        resources["limits"] = limits
    return pod_doc({"containers": [{"name": "c", "resources": resources}]})


def only(docs: list[dict]) -> Manifests:
    m = parse_documents(docs, "t.yaml")
    assert m.problems == []
    return m


# -- valid objects --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resource", "value", "key", "expected"),
    [
        ("cpu", "500m", "cpu", 500),
        ("cpu", 1.5, "cpu", 1500),
        ("cpu", "2", "cpu", 2000),
        ("memory", "4Gi", "memory", 4 * 2**30),
        ("memory", "512Mi", "memory", 512 * 2**20),
        ("memory", "1G", "memory", 10**9),  # bytes, exactly as the API stores them
        ("memory", "1.5Ki", "memory", 1536),
        ("memory", "0.5", "memory", 1),  # a fraction of a byte rounds up, as Value() does
        ("hugepages-2Mi", "1Gi", "hugepages-2Mi", 2**30),
        ("nvidia.com/gpu", 2, "nvidia.com/gpu", 2000),
        ("nvidia.com/gpu", 0.5, "nvidia.com/gpu", 500),
        ("gpu", "1", "nvidia.com/gpu", 1000),
        ("ephemeral-storage", "10Gi", "ephemeral-storage", 10 * 2**30),
        ("example.com/fpga", "3", "example.com/fpga", 3),
    ],
)
def test_quantities_become_canonical_units(
    resource: str, value: object, key: str, expected: int
) -> None:
    pod = only([requests_pod({resource: value})]).pods[0]
    assert pod.requests == {key: expected, "pods": 1}


def test_node(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Node
        metadata:
          name: n1
          labels: {tier: cpu}
          annotations:
            berth.io/cpu-sockets: "2"
            berth.io/cpu-cores-per-socket: "16"
            berth.io/cpu-threads-per-core: "2"
        spec:
          unschedulable: true
          taints: [{key: dedicated, value: ml, effect: NoExecute}]
        status:
          capacity: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8"}
          allocatable: {cpu: 63500m, memory: 250Gi}
        """,
    )
    assert m.problems == []
    (node,) = m.nodes
    assert node.name == "n1"
    assert node.labels == {"tier": "cpu", "kubernetes.io/hostname": "n1"}
    # allocatable wins; capacity fills in what allocatable leaves out; pods defaults to 110
    assert node.allocatable == {
        "cpu": 63500,
        "memory": 256000 * MIB,
        "nvidia.com/gpu": 8000,
        "pods": 110,
    }
    assert node.taints == (Taint("dedicated", "ml", "NoExecute"),)
    assert node.unschedulable is True
    assert node.cpu_topology == CpuTopology(2, 16, 2)


def test_node_keeps_its_own_hostname_label_and_pods() -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "host-1"}},
        "status": {"allocatable": {"cpu": 4, "pods": 16}},
    }
    (node,) = only([doc]).nodes
    assert node.labels["kubernetes.io/hostname"] == "host-1"
    assert node.allocatable == {"cpu": 4000, "pods": 16}
    assert node.cpu_topology is None


@pytest.mark.parametrize(
    ("count", "first", "last"),
    [
        (1, "pool-0", "pool-0"),
        (10, "pool-0", "pool-9"),
        (11, "pool-00", "pool-10"),
        (120, "pool-000", "pool-119"),
    ],
)
def test_node_pool_names(count: int, first: str, last: str) -> None:
    doc = {
        "apiVersion": "berth.io/v1alpha1",
        "kind": "NodePool",
        "metadata": {"name": "pool"},
        "spec": {"count": count, "template": {"status": {"allocatable": {"cpu": 8}}}},
    }
    nodes = only([doc]).nodes
    assert len(nodes) == count
    assert (nodes[0].name, nodes[-1].name) == (first, last)
    assert len({n.name for n in nodes}) == count
    assert all(n.labels["kubernetes.io/hostname"] == n.name for n in nodes)


def test_node_pool_template_and_zones(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: berth.io/v1alpha1
        kind: NodePool
        metadata: {name: gpu}
        spec:
          count: 5
          zones: [za, zb]
          template:
            metadata:
              labels: {tier: gpu}
              annotations: {berth.io/cpu-sockets: "2", berth.io/cpu-cores-per-socket: "16"}
            spec:
              taints: [{key: gpu, effect: NoSchedule}]
            status:
              allocatable: {cpu: 32, memory: 128Gi, nvidia.com/gpu: 4}
        """,
    )
    assert m.problems == []
    assert [n.labels["topology.kubernetes.io/zone"] for n in m.nodes] == [
        "za",
        "zb",
        "za",
        "zb",
        "za",
    ]
    node = m.nodes[3]
    assert node.name == "gpu-3"
    assert node.labels == {
        "tier": "gpu",
        "kubernetes.io/hostname": "gpu-3",
        "topology.kubernetes.io/zone": "zb",
    }
    assert node.allocatable == {
        "cpu": 32000,
        "memory": 131072 * MIB,
        "nvidia.com/gpu": 4000,
        "pods": 110,
    }
    assert node.taints == (Taint("gpu", "", "NoSchedule"),)
    assert node.cpu_topology == CpuTopology(2, 16, 1)
    # every node owns its dicts, so the simulator can change one without touching the others
    assert m.nodes[0].allocatable is not m.nodes[1].allocatable


def test_node_pool_template_zone_wins_over_zones(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: berth.io/v1alpha1
        kind: NodePool
        metadata: {name: p}
        spec:
          count: 2
          zones: [za, zb]
          template:
            metadata: {labels: {topology.kubernetes.io/zone: zc}}
        """,
    )
    assert [n.labels["topology.kubernetes.io/zone"] for n in m.nodes] == ["zc", "zc"]
    assert lines(m, tmp_path) == [
        "m.yaml: NodePool/p: spec.zones: ignored (the template sets topology.kubernetes.io/zone)"
    ]


def test_pod_defaults() -> None:
    (pod,) = only([pod_doc()]).pods
    assert pod.name == "p"
    assert pod.namespace == "default"
    assert pod.requests == {"pods": 1}
    assert pod.scheduler_name == "berth"
    assert (pod.priority, pod.group, pod.submit_time, pod.duration, pod.utilization) == (
        0,
        "",
        0.0,
        None,
        1.0,
    )
    assert pod.best_effort


@pytest.mark.parametrize("scheduler", ["berth", "volcano", "default-scheduler"])
def test_scheduler_name_kept_as_is(scheduler: str) -> None:
    doc = pod_doc({"containers": [{"name": "c"}], "schedulerName": scheduler})
    assert only([doc]).pods[0].scheduler_name == scheduler


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"limits": {"cpu": 2, "memory": "1Gi"}}, {"cpu": 2000, "memory": 1024 * MIB}),
        ({"limits": {"cpu": 2}, "requests": {"cpu": "500m"}}, {"cpu": 500}),
        ({"limits": {"cpu": 2}, "requests": {"memory": "1Gi"}}, {"cpu": 2000, "memory": 2**30}),
        ({"limits": {"nvidia.com/gpu": 1}}, {"nvidia.com/gpu": 1000}),
    ],
)
def test_requests_default_to_limits(resources: dict, expected: dict) -> None:
    pod = only([pod_doc({"containers": [{"name": "c", "resources": resources}]})]).pods[0]
    assert pod.requests == {**expected, "pods": 1}


def container(cpu: str, memory: str = "0", **extra: object) -> dict:
    return {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}, **extra}


@pytest.mark.parametrize(
    ("init", "main", "expected"),
    [
        # the largest init container beats the sum of the main containers...
        ([container("4")], [container("1", "1Gi"), container("1", "1Gi")], (4000, 2048 * MIB)),
        # ...per resource, and init containers run one at a time, so they do not add up
        ([container("1", "4Gi"), container("1")], [container("3", "1Gi")], (3000, 4096 * MIB)),
        # a sidecar keeps running: it adds to the main phase and to later init containers
        ([container("1", restartPolicy="Always"), container("4")], [container("1")], (5000, 0)),
        ([container("4"), container("1", restartPolicy="Always")], [container("1")], (4000, 0)),
    ],
)
def test_init_containers(init: list, main: list, expected: tuple[int, int]) -> None:
    pod = only([pod_doc({"containers": main, "initContainers": init})]).pods[0]
    assert (pod.requests["cpu"], pod.requests["memory"]) == expected


def test_requests_sum_over_containers_with_overhead() -> None:
    spec = {
        "containers": [container("500m", "1Gi"), container("1.5", "512Mi")],
        "overhead": {"cpu": "250m"},
    }
    assert only([pod_doc(spec)]).pods[0].requests == {"cpu": 2250, "memory": 1536 * MIB, "pods": 1}


def test_pod_scheduling_fields(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Pod
        metadata:
          name: web-0
          namespace: shop
          labels: {app: web}
          annotations:
            scheduling.volcano.sh/group-name: web
            berth.io/submit-time: "12.5"
            berth.io/duration: "600"
            berth.io/utilization: "0.25"
        spec:
          priority: 7
          nodeName: n3
          nodeSelector: {tier: cpu}
          containers: [{name: c, resources: {requests: {cpu: 1}}}]
          tolerations:
          - {key: gpu, operator: Exists, effect: NoSchedule}
          - {key: dedicated, value: ml}
          - {operator: Exists}
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {key: cores, operator: Gt, values: ["8"]}
                  - {key: tier, operator: In, values: [cpu, mixed]}
                - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 20
                preference:
                  matchExpressions: [{key: ssd, operator: Exists}]
            podAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - labelSelector: {matchLabels: {app: cache}}
                topologyKey: topology.kubernetes.io/zone
                namespaces: [shop, infra]
            podAntiAffinity:
              preferredDuringSchedulingIgnoredDuringExecution:
              - weight: 100
                podAffinityTerm:
                  labelSelector:
                    matchExpressions: [{key: app, operator: In, values: [web]}]
                  topologyKey: kubernetes.io/hostname
          topologySpreadConstraints:
          - maxSkew: 2
            topologyKey: topology.kubernetes.io/zone
            whenUnsatisfiable: DoNotSchedule
            minDomains: 3
            labelSelector: {matchLabels: {app: web}}
          - maxSkew: 1
            topologyKey: kubernetes.io/hostname
            whenUnsatisfiable: ScheduleAnyway
            labelSelector: {}
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: web, namespace: shop}
        spec: {minMember: 1}
        """,
    )
    assert m.problems == []
    (pod,) = m.pods
    assert (pod.name, pod.namespace, pod.key) == ("web-0", "shop", "shop/web-0")
    assert pod.group == "web"
    assert (pod.submit_time, pod.duration, pod.utilization) == (12.5, 600.0, 0.25)
    assert (pod.priority, pod.node_name, pod.node_selector) == (7, "n3", {"tier": "cpu"})
    assert pod.tolerations == (
        Toleration("gpu", "Exists", "", "NoSchedule"),
        Toleration("dedicated", "Equal", "ml", ""),
        Toleration("", "Exists", "", ""),
    )
    app = lambda value: LabelSelector((Requirement("app", "In", (value,)),))  # noqa: E731
    affinity = pod.affinity
    assert affinity.node_required == (
        NodeSelectorTerm(
            expressions=(
                Requirement("cores", "Gt", ("8",)),
                Requirement("tier", "In", ("cpu", "mixed")),
            )
        ),
        NodeSelectorTerm(fields=(Requirement("metadata.name", "In", ("n1",)),)),
    )
    assert affinity.node_preferred == (
        PreferredNodeTerm(20, NodeSelectorTerm(expressions=(Requirement("ssd", "Exists"),))),
    )
    assert affinity.pod_required == (
        PodAffinityTerm(app("cache"), "topology.kubernetes.io/zone", ("shop", "infra")),
    )
    assert affinity.pod_preferred == ()
    assert affinity.anti_required == ()
    assert affinity.anti_preferred == (
        WeightedPodAffinityTerm(100, PodAffinityTerm(app("web"), "kubernetes.io/hostname")),
    )
    assert pod.spread == (
        SpreadConstraint(2, "topology.kubernetes.io/zone", "DoNotSchedule", app("web"), 3),
        SpreadConstraint(1, "kubernetes.io/hostname", "ScheduleAnyway", LabelSelector(), 1),
    )


def test_group_annotation_k8s_spelling() -> None:
    doc = pod_doc(annotations={"scheduling.k8s.io/group-name": "g1"})
    assert only([doc]).pods[0].group == "g1"


def test_pod_group_queue_priority_class(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata:
          name: train
          namespace: ml
          annotations: {berth.io/submit-time: "30"}
        spec:
          minMember: 4
          minResources: {cpu: 16, nvidia.com/gpu: 4}
          queue: research
          priorityClassName: high
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: defaults}
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: research}
        spec:
          weight: 3
          capability: {cpu: 100, memory: 1Ti}
          reclaimable: true
          guarantee: {resource: {cpu: 10}}
          deserved: {cpu: 50}
          parent: root
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: closed}
        status: {state: Closed}
        ---
        apiVersion: scheduling.k8s.io/v1
        kind: PriorityClass
        metadata: {name: high}
        value: 1000
        globalDefault: false
        description: for training
        """,
    )
    # Only the gangs' pods are missing: these groups cannot start from these files alone.
    assert [(p.severity, p.name, p.message) for p in m.problems] == [
        (
            "warning",
            "ml/train",
            "4 but only 0 pods in the loaded files name this group: it cannot start",
        ),
        (
            "warning",
            "defaults",
            "1 but only 0 pods in the loaded files name this group: it cannot start",
        ),
    ]
    train, defaults = m.groups
    assert (train.name, train.namespace, train.min_member, train.queue) == (
        "train",
        "ml",
        4,
        "research",
    )
    assert train.min_resources == {"cpu": 16000, "nvidia.com/gpu": 4000}
    assert (train.priority_class_name, train.priority, train.submit_time) == ("high", 1000, 30.0)
    assert (defaults.min_member, defaults.queue, defaults.priority) == (1, "default", 0)
    research, closed = m.queues
    assert (research.weight, research.state) == (3, "Open")
    assert research.capability == {"cpu": 100000, "memory": 1048576 * MIB}
    assert (closed.weight, closed.capability, closed.state) == (1, {}, "Closed")
    (pc,) = m.priority_classes
    assert (pc.name, pc.value, pc.global_default) == ("high", 1000, False)


PRIORITY_CLASSES = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "base"},
        "value": 10,
        "globalDefault": True,
    },
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"priorityClassName": "high"}, (1000, "high")),
        ({"priorityClassName": "high", "priority": 1000}, (1000, "high")),
        ({"priority": 5}, (5, "")),  # an explicit priority is not overridden by the default
        ({}, (10, "base")),  # neither: the global default applies
        ({"priorityClassName": "system-node-critical"}, (2000001000, "system-node-critical")),
        ({"priorityClassName": "system-cluster-critical"}, (2000000000, "system-cluster-critical")),
    ],
)
def test_priority_from_class(tmp_path: Path, spec: dict, expected: tuple[int, str]) -> None:
    docs = [*PRIORITY_CLASSES, pod_doc({"containers": [{"name": "c"}], **spec})]
    write(tmp_path, json.dumps(docs), "all.json")
    m = load_files([tmp_path / "all.json"])
    assert m.problems == []
    assert (m.pods[0].priority, m.pods[0].priority_class_name) == expected


def test_group_priority_from_global_default(tmp_path: Path) -> None:
    group = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
    }
    write(tmp_path, json.dumps([*PRIORITY_CLASSES, group]), "all.json")
    m = load_files([tmp_path / "all.json"])
    assert (m.groups[0].priority, m.groups[0].priority_class_name) == (10, "base")


def test_priority_differing_from_its_class_warns(tmp_path: Path) -> None:
    docs = [
        PRIORITY_CLASSES[0],
        pod_doc({"containers": [{"name": "c"}], "priorityClassName": "high", "priority": 3}),
    ]
    write(tmp_path, json.dumps(docs), "all.json")
    m = load_files([tmp_path / "all.json"])
    assert m.pods[0].priority == 3
    assert lines(m, tmp_path) == [
        "all.json: Pod/p: spec.priority: 3 differs from the value of high (1000); spec.priority "
        "is used (Kubernetes would reject the pod)"
    ]


NEVER_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "polite"},
    "value": 500,
    "preemptionPolicy": "Never",
}

POLICY_CASES = {
    "the class's policy when the pod sets none": ({"priorityClassName": "polite"}, "Never"),
    "the pod's own wins": (
        {"priorityClassName": "polite", "preemptionPolicy": "PreemptLowerPriority"},
        "PreemptLowerPriority",
    ),
    "the pod's Never": ({"preemptionPolicy": "Never"}, "Never"),
    "a class without one": ({"priorityClassName": "high"}, "PreemptLowerPriority"),
    "neither": ({}, "PreemptLowerPriority"),
}


@pytest.mark.parametrize(("spec", "policy"), POLICY_CASES.values(), ids=POLICY_CASES.keys())
def test_preemption_policy(tmp_path: Path, spec: dict, policy: str) -> None:
    docs = [*PRIORITY_CLASSES, NEVER_CLASS, pod_doc({"containers": [{"name": "c"}], **spec})]
    write(tmp_path, json.dumps(docs), "all.json")
    m = load_files([tmp_path / "all.json"])
    assert m.problems == []
    assert m.pods[0].preemption_policy == policy
    assert m.pods[0].may_preempt is (policy != "Never")


def test_preemption_policy_must_be_known() -> None:
    m = parse_documents(
        [pod_doc({"containers": [{"name": "c"}], "preemptionPolicy": "Sometimes"})], "t.yaml"
    )
    assert len(m.errors) == 1
    assert "spec.preemptionPolicy" in str(m.errors[0])


# -- file formats ---------------------------------------------------------------------------------

TWO_OBJECTS = [
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4"}},
    },
    pod_doc(),
]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("multi.yaml", "---\n" + "\n---\n".join(json.dumps(d) for d in TWO_OBJECTS) + "\n---\n"),
        ("list.json", json.dumps(TWO_OBJECTS)),
        (
            "list-kind.json",
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "List",
                    "items": TWO_OBJECTS,
                    "metadata": {"resourceVersion": ""},
                }
            ),
        ),
        (
            "list-kind.yml",
            "apiVersion: v1\nkind: List\nitems:\n"
            + "".join(f"- {json.dumps(d)}\n" for d in TWO_OBJECTS),
        ),
        ("one.json", json.dumps(TWO_OBJECTS[0]) + "\n"),
    ],
)
def test_file_formats(tmp_path: Path, name: str, text: str) -> None:
    m = load_file(write(tmp_path, text, name))
    assert m.problems == []
    assert [n.name for n in m.nodes] == ["n1"]
    assert [p.name for p in m.pods] == ([] if name == "one.json" else ["p"])


def test_empty_documents_are_skipped(tmp_path: Path) -> None:
    m = load(tmp_path, "---\n---\n# just a comment\n---\n" + yaml.safe_dump(pod_doc()))
    assert m.problems == [] and [p.name for p in m.pods] == ["p"]


@pytest.mark.parametrize("text", ["", "---\n---\n# just a comment\n"], ids=["empty", "comments"])
def test_a_file_without_objects_is_an_error(tmp_path: Path, text: str) -> None:
    assert lines(load_files([write(tmp_path, text, "m.yaml")]), tmp_path) == [
        "m.yaml: holds no objects (expected Kubernetes-style manifests)"
    ]


HOSTILE = {
    "duplicate key": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  name: b\n",
        'm.yaml: invalid YAML at line 5, column 3: duplicate key "name" (first at line 4)',
    ),
    "duplicate key in a flow mapping": (
        "{apiVersion: v1, kind: Pod, kind: Node}\n",
        'm.yaml: invalid YAML at line 1, column 29: duplicate key "kind" (first at line 1)',
    ),
    "deep flow nesting": (
        "a: " + "[" * 100_000,
        "m.yaml: nested 100000 levels deep (at most 200 are read)",
    ),
    "deep block nesting": (
        "".join(" " * (2 * i) + "k:\n" for i in range(300)),
        "m.yaml: nested 299 levels deep (at most 200 are read)",
    ),
    "deep dash nesting": (
        "- " * 1000 + "x\n",
        "m.yaml: nested 1000 levels deep (at most 200 are read)",
    ),
}


@pytest.mark.parametrize("text,message", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_yaml_is_refused_in_one_line(tmp_path: Path, text: str, message: str) -> None:
    assert lines(load_files([write(tmp_path, text, "m.yaml")]), tmp_path) == [message]


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("m.json", '{"kind": "Pod", "kind": "Node"}', 'm.json: invalid JSON: duplicate key "kind"'),
        (
            "m.json",
            "[" * 5000 + "]" * 5000,
            "m.json: nested 5000 levels deep (at most 200 are read)",
        ),
        (
            "m.jsonl",
            '{"a": 1}\n{"b": 1, "b": 2}\n',
            'm.jsonl:2: invalid JSON: duplicate key "b" (expected an object per line)',
        ),
    ],
)
def test_hostile_json_is_refused_in_one_line(tmp_path: Path, name: str, text: str, message: str):
    assert message in lines(load_files([write(tmp_path, text, name)]), tmp_path)


def test_kinds_that_do_not_schedule_are_read_past_with_one_warning(tmp_path: Path) -> None:
    bundle = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s2"}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"}},
        pod_doc(),
    ]
    m = load_files([write(tmp_path, yaml.safe_dump_all(bundle), "m.yaml")])
    assert [p.name for p in m.pods] == ["p"]
    assert lines(m, tmp_path) == [
        "m.yaml: skipped 5 objects of ConfigMap, PodDisruptionBudget, Service (2): kinds that do "
        "not affect scheduling; DaemonSet: workload kinds berth does not simulate yet (their "
        "pods are not created)"
    ]
    assert [p.severity for p in m.problems] == ["warning"]


def test_load_files_concatenates(tmp_path: Path) -> None:
    a = write(tmp_path, json.dumps(TWO_OBJECTS[0]), "a.json")
    b = write(tmp_path, json.dumps(pod_doc()), "b.json")
    m = load_files([a, b])
    assert ([n.name for n in m.nodes], [p.name for p in m.pods]) == (["n1"], ["p"])


# -- problems -------------------------------------------------------------------------------------

POD_HEAD = """\
apiVersion: v1
kind: Pod
metadata:
  name: web
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{name: c, resources: {requests: {cpu: abc}}}]\n",
            'm.yaml: Pod/web: spec.containers[0].resources.requests.cpu: "abc" is not a quantity '
            "(expected e.g. 500m, 2, 4Gi)",
            id="bad-quantity",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{name: c, resources: {limits: {memory: -1Gi}}}]\n",
            "m.yaml: Pod/web: spec.containers[0].resources.limits.memory: "
            'must be >= 0 (got "-1Gi")',
            id="negative-quantity",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{}]}\n",
            "m.yaml: Pod/-: metadata.name: field required",
            id="missing-name",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nspec: {containers: [{}]}\n",
            "m.yaml: Pod/-: metadata.name: field required",
            id="missing-metadata",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{}]}\n",
            'm.yaml: Pod/Web_1: metadata.name: "Web_1" is not a valid name (expected lowercase '
            "letters, digits, '-' and '.', starting and ending with a letter or digit)",
            id="bad-name",
        ),
        pytest.param(
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: web}\n",
            'm.yaml: Widget/web: kind: unknown kind "Widget" (expected one of Node, '
            "NodePool, HyperNode, Pod, PodGroup, Queue, PriorityClass, Job, Command, PyTorchJob, "
            "TrainingJob, Namespace, "
            "Deployment, ReplicaSet, StatefulSet, CloneSet, SidecarSet, BroadcastJob, "
            "LeaderWorkerSet, JobSet, "
            "ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, Workload, List)",
            id="unknown-kind",
        ),
        pytest.param(
            "apiVersion: v1\nmetadata: {name: web}\n",
            "m.yaml: -/web: kind: field required",
            id="missing-kind",
        ),
        pytest.param(
            "apiVersion: scheduling.k8s.io/v1\nkind: Queue\nmetadata: {name: q}\n",
            'm.yaml: Queue/q: apiVersion: "scheduling.k8s.io/v1" is not the apiVersion of Queue '
            "(expected scheduling.volcano.sh/v1beta1)",
            id="wrong-api-version",
        ),
        pytest.param(
            "kind: Node\nmetadata: {name: n}\n",
            "m.yaml: Node/n: apiVersion: field required (expected v1)",
            id="missing-api-version",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
            "spec: {taints: [{key: a, effect: NoRun}]}\n",
            'm.yaml: Node/n: spec.taints[0].effect: "NoRun" is not a valid value (expected one of '
            "NoSchedule, PreferNoSchedule, NoExecute)",
            id="bad-enum",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  tolerations: [{key: a, operator: Is}]\n",
            'm.yaml: Pod/web: spec.tolerations[0].operator: "Is" is not a valid value (expected '
            "one of Equal, Exists)",
            id="bad-toleration-operator",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  affinity:\n    nodeAffinity:\n"
            "      preferredDuringSchedulingIgnoredDuringExecution:\n"
            "      - {weight: 0, preference: {}}\n",
            "m.yaml: Pod/web: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuring"
            "Execution[0].weight: must be >= 1 (got 0)",
            id="weight-too-low",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  affinity:\n    podAffinity:\n"
            "      preferredDuringSchedulingIgnoredDuringExecution:\n"
            "      - weight: 101\n        podAffinityTerm: {labelSelector: {}, topologyKey: z}\n",
            "m.yaml: Pod/web: spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuring"
            "Execution[0].weight: must be <= 100 (got 101)",
            id="weight-too-high",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  affinity:\n    podAntiAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "      - labelSelector: {matchLabels: {app: web}}\n",
            "m.yaml: Pod/web: spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuring"
            "Execution[0].topologyKey: field required",
            id="missing-topology-key",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  topologySpreadConstraints:\n"
            "  - {maxSkew: 1, topologyKey: '', whenUnsatisfiable: DoNotSchedule}\n",
            "m.yaml: Pod/web: spec.topologySpreadConstraints[0].topologyKey: must not be empty",
            id="empty-topology-key",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  topologySpreadConstraints:\n"
            "  - {maxSkew: 0, topologyKey: z, whenUnsatisfiable: DoNotSchedule,"
            " labelSelector: {}}\n",
            "m.yaml: Pod/web: spec.topologySpreadConstraints[0].maxSkew: must be >= 1 (got 0)",
            id="max-skew",
        ),
        pytest.param(
            POD_HEAD + "  annotations: {berth.io/submit-time: soon}\nspec: {containers: [{}]}\n",
            'm.yaml: Pod/web: metadata.annotations.berth.io/submit-time: "soon" is not a number',
            id="bad-submit-time",
        ),
        pytest.param(
            POD_HEAD + "  annotations: {berth.io/submit-time: '-5'}\nspec: {containers: [{}]}\n",
            "m.yaml: Pod/web: metadata.annotations.berth.io/submit-time: must be >= 0 (got -5)",
            id="negative-submit-time",
        ),
        pytest.param(
            POD_HEAD + "  annotations: {berth.io/duration: '0'}\nspec: {containers: [{}]}\n",
            "m.yaml: Pod/web: metadata.annotations.berth.io/duration: must be > 0 (got 0)",
            id="zero-duration",
        ),
        pytest.param(
            POD_HEAD + "  annotations: {berth.io/utilization: '1.5'}\nspec: {containers: [{}]}\n",
            "m.yaml: Pod/web: metadata.annotations.berth.io/utilization: must be between 0 and 1 "
            "(got 1.5)",
            id="utilization-range",
        ),
        pytest.param(
            POD_HEAD + "spec: {containers: []}\n",
            "m.yaml: Pod/web: spec.containers: must have at least 1 item(s)",
            id="no-containers",
        ),
        pytest.param(
            POD_HEAD + "spec: {containers: [{}], priority: high}\n",
            'm.yaml: Pod/web: spec.priority: "high" is not an integer',
            id="priority-not-int",
        ),
        pytest.param(
            POD_HEAD
            + "spec:\n  containers:\n  - resources: {requests: {cpu: 2}, limits: {cpu: 1}}\n",
            "m.yaml: Pod/web: spec.containers[0].resources.requests.cpu: must be <= its limit 1 "
            "(got 2)",
            id="request-above-limit",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  affinity:\n    nodeAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms: [{matchExpressions: [{key: a, operator: In}]}]\n",
            "m.yaml: Pod/web: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
            "Execution.nodeSelectorTerms[0].matchExpressions[0].values: must not be empty for "
            "operator In",
            id="in-without-values",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  tolerations: [{operator: Exists, value: x}]\n",
            "m.yaml: Pod/web: spec.tolerations[0].value: must be empty when operator is Exists",
            id="exists-with-value",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{}]\n  affinity:\n    nodeAffinity:\n"
            "      requiredDuringSchedulingIgnoredDuringExecution:\n"
            "        nodeSelectorTerms:\n"
            "        - matchExpressions: [{key: a, operator: Gt, values: [x]}]\n",
            "m.yaml: Pod/web: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuring"
            "Execution.nodeSelectorTerms[0].matchExpressions[0].values: must be a single integer "
            'for operator Gt (got ["x"])',
            id="gt-not-integer",
        ),
        pytest.param(
            POD_HEAD + "  annotations:\n    scheduling.k8s.io/group-name: a\n"
            "    scheduling.volcano.sh/group-name: b\nspec: {containers: [{}]}\n",
            'm.yaml: Pod/web: metadata.annotations.scheduling.volcano.sh/group-name: "b" '
            'contradicts scheduling.k8s.io/group-name "a" (expected the same group name)',
            id="group-names-disagree",
        ),
        pytest.param(
            "apiVersion: berth.io/v1alpha1\nkind: NodePool\nmetadata: {name: p}\n"
            "spec: {count: 0, template: {}}\n",
            "m.yaml: NodePool/p: spec.count: must be >= 1 (got 0)",
            id="pool-count",
        ),
        pytest.param(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
            "spec: {minMember: -1}\n",
            "m.yaml: PodGroup/g: spec.minMember: must be >= 0 (got -1)",
            id="negative-min-member",
        ),
        pytest.param(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {weight: 0}\n",
            "m.yaml: Queue/q: spec.weight: must be >= 1 (got 0)",
            id="queue-weight",
        ),
        pytest.param(
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {state: Paused}\n",
            'm.yaml: Queue/q: spec.state: "Paused" is not a valid value (expected one of Open, '
            "Closed)",
            id="queue-state",
        ),
        pytest.param(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc}\n",
            "m.yaml: PriorityClass/pc: value: field required",
            id="priority-class-value",
        ),
        pytest.param(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: pc}\n"
            "value: 1000000001\n",
            "m.yaml: PriorityClass/pc: value: must be <= 1000000000 (got 1000000001; larger "
            "values are reserved for the built-in system classes)",
            id="priority-class-too-high",
        ),
        pytest.param(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
            "metadata: {name: system-node-critical}\nvalue: 5\n",
            "m.yaml: PriorityClass/system-node-critical: value: must be 2000001000 for this "
            "built-in class (got 5)",
            id="builtin-priority-class-value",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{resources: {requests: {memory: 1e999999999}}}]\n",
            'm.yaml: Pod/web: spec.containers[0].resources.requests.memory: "1e999999999" is too '
            "large (expected at most 4e+15)",
            id="huge-quantity",
        ),
        pytest.param(
            POD_HEAD + "spec:\n  containers: [{resources: {requests: {cpu: 1e30}}}]\n",
            'm.yaml: Pod/web: spec.containers[0].resources.requests.cpu: "1e30" is too large '
            "(expected at most 4e+15)",
            id="large-quantity",
        ),
        pytest.param(
            "apiVersion: v1\nkind: [Pod]\n",
            "m.yaml: -/-: kind: unknown kind a list (expected one of Node, NodePool, HyperNode, "
            "Pod, PodGroup, Queue, PriorityClass, Job, Command, PyTorchJob, TrainingJob, "
            "Namespace, Deployment, ReplicaSet, StatefulSet, CloneSet, SidecarSet, BroadcastJob, "
            "LeaderWorkerSet, JobSet, "
            "ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, Workload, List)",
            id="kind-not-a-string",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n, labels: [a]}\n",
            "m.yaml: Node/n: metadata.labels: expected a mapping (got a list)",
            id="labels-not-a-mapping",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n"
            "  annotations: {berth.io/cpu-sockets: '0'}\n",
            "m.yaml: Node/n: metadata.annotations.berth.io/cpu-sockets: must be >= 1 (got 0)",
            id="cpu-sockets",
        ),
        pytest.param(
            "apiVersion: berth.io/v1alpha1\nkind: NodePool\nmetadata: {name: p}\nspec:\n"
            "  count: 1\n"
            "  template: {metadata: {annotations: {berth.io/cpu-threads-per-core: x}}}\n",
            "m.yaml: NodePool/p: spec.template.metadata.annotations.berth.io/cpu-threads-per-core: "
            '"x" is not an integer (expected a positive integer)',
            id="pool-cpu-threads",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Node\nmetadata: {name: n}\nspec: {unschedulable: 'yes'}\n",
            'm.yaml: Node/n: spec.unschedulable: "yes" is not a boolean (expected true or false)',
            id="bool-field",
        ),
        pytest.param(
            "- just\n- strings\n",
            'm.yaml: -/-: [0]: expected an object with apiVersion and kind (got "just")\n'
            'm.yaml: -/-: [1]: expected an object with apiVersion and kind (got "strings")',
            id="not-objects",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, spec: {}}\n",
            "m.yaml: Pod/-: items[0].metadata.name: field required\n"
            "m.yaml: Pod/-: items[0].spec.containers: field required",
            id="list-item-without-name",
        ),
        pytest.param(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{}]}\n---\n"
            "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{}]}\n",
            'm.yaml: Pod/a: metadata.name: duplicate Pod "default/a" (also defined earlier in '
            "this file)",
            id="duplicate-in-file",
        ),
        pytest.param(
            POD_HEAD + "spec: {containers: [{}], priorityClassName: urgent}\n",
            'm.yaml: Pod/web: spec.priorityClassName: no PriorityClass named "urgent" (expected '
            "one defined in the loaded files, or system-cluster-critical / system-node-critical)",
            id="unknown-priority-class",
        ),
    ],
)
def test_bad_input(tmp_path: Path, text: str, expected: str) -> None:
    m = load(tmp_path, text)
    assert "\n".join(lines(m, tmp_path, "error")) == expected


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    m = load(tmp_path, "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n   bad: [\n")
    # the wording after the position comes from PyYAML and differs between its C and Python parsers
    (line,) = lines(m, tmp_path)
    assert line.startswith(
        "m.yaml: invalid YAML at line 5, column 7: mapping values are not allowed"
    )
    assert m.nodes == []


def test_json_syntax_error_names_the_line(tmp_path: Path) -> None:
    m = load(tmp_path, '{"apiVersion": "v1",\n "kind": }\n', "bad.json")
    assert lines(m, tmp_path) == ["bad.json: invalid JSON at line 2, column 10: Expecting value"]


def test_missing_file(tmp_path: Path) -> None:
    m = load_files([tmp_path / "nope.yaml"])
    assert lines(m, tmp_path) == ["nope.yaml: file not found"]


def test_duplicate_names_across_files(tmp_path: Path) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    pool = (
        "apiVersion: berth.io/v1alpha1\nkind: NodePool\nmetadata: {name: n}\n"
        "spec: {count: 2, template: {}}\n"
    )
    a = write(tmp_path, node + "---\n" + pool, "a.yaml")
    b = write(tmp_path, node, "b.yaml")
    m = load_files([a, b])
    assert lines(m, tmp_path) == [
        'b.yaml: Node/n1: metadata.name: duplicate Node "n1" (also defined in a.yaml)'
    ]


def test_same_name_in_other_namespace_is_no_duplicate() -> None:
    m = parse_documents([pod_doc(), pod_doc(namespace="other")], "t.yaml")
    assert m.problems == []


def test_pod_naming_unknown_group_is_a_warning(tmp_path: Path) -> None:
    """Not an error (the group may be in a file not given), but the pod would wait for ever."""
    m = load(
        tmp_path,
        POD_HEAD + "  annotations: {scheduling.k8s.io/group-name: later}\n"
        "spec: {containers: [{}]}\n",
    )
    assert m.errors == []
    assert [(p.path, p.message) for p in m.warnings] == [
        (
            "metadata.annotations.scheduling.k8s.io/group-name",
            'no PodGroup named "later" in the loaded files: the pod waits until one exists',
        )
    ]


def test_problems_of_all_documents_are_collected(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: v1
        kind: Node
        metadata: {name: n1}
        status: {allocatable: {cpu: lots}}
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: n2}
        status: {allocatable: {cpu: "2"}}
        ---
        kind: Widget
        """,
    )
    assert [n.name for n in m.nodes] == ["n2"]
    assert len(m.errors) == 2 and m.warnings == []


def test_unknown_fields_are_errors_or_with_leniency_warnings(tmp_path: Path) -> None:
    """As kubectl's strict validation: a field the schema does not know is an error, with the
    closest known one suggested; ``lenient`` (--unknown-fields warn) makes it a warning."""
    path = write(
        tmp_path,
        POD_HEAD
        + textwrap.dedent(
            """\
          colour: blue
        spec:
          containers: [{name: c, resourcez: {}}]
          affinity:
            podAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
              - {labelSelector: {}, topologyKey: z, namespaceSelecter: {}}
        extra: 1
        """
        ),
    )
    found = [
        "m.yaml: Pod/web: metadata.colour: unknown field",
        "m.yaml: Pod/web: spec.containers[0].resourcez: unknown field (did you mean resources?)",
        "m.yaml: Pod/web: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuring"
        "Execution[0].namespaceSelecter: unknown field (did you mean namespaceSelector?)",
        "m.yaml: Pod/web: extra: unknown field",
    ]
    strict = load_files([path])
    assert lines(strict, tmp_path, "error") == found
    lenient = load_files([path], lenient=True)
    assert lenient.errors == []
    assert lines(lenient, tmp_path) == [f"{line}, ignored" for line in found]
    assert len(lenient.pods) == 1


def test_misspelt_field_is_reported_with_the_missing_one(tmp_path: Path) -> None:
    m = load(tmp_path, POD_HEAD + "spec: {container: [{}]}\n")
    assert lines(m, tmp_path) == [
        "m.yaml: Pod/web: spec.container: unknown field (did you mean containers?)",
        "m.yaml: Pod/web: spec.containers: field required",
    ]


def test_unquoted_annotation_is_read_with_a_warning(tmp_path: Path) -> None:
    m = load(
        tmp_path, POD_HEAD + "  annotations: {berth.io/duration: 300}\nspec: {containers: [{}]}\n"
    )
    assert m.pods[0].duration == 300.0
    assert lines(m, tmp_path) == [
        "m.yaml: Pod/web: metadata.annotations.berth.io/duration: 300 is not a string, read as "
        '"300" (quote it: Kubernetes accepts only strings here)'
    ]


def test_terms_without_label_selector_match_no_pods_with_a_warning(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        POD_HEAD
        + textwrap.dedent(
            """\
        spec:
          containers: [{}]
          topologySpreadConstraints:
          - {maxSkew: 1, topologyKey: z, whenUnsatisfiable: ScheduleAnyway}
          affinity:
            podAffinity:
              requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: z}]
        """
        ),
    )
    assert [c.selector for c in m.pods[0].spread] == [MATCH_NOTHING]
    assert [t.selector for t in m.pods[0].affinity.pod_required] == [MATCH_NOTHING]
    assert lines(m, tmp_path) == [
        "m.yaml: Pod/web: spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuring"
        "Execution[0].labelSelector: missing: the term matches no pods, as in Kubernetes",
        "m.yaml: Pod/web: spec.topologySpreadConstraints[0].labelSelector: missing: the "
        "constraint counts no pods, as in Kubernetes (only its topology key still limits the "
        "nodes)",
    ]


KUBECTL_POD = """\
apiVersion: v1
kind: Pod
metadata:
  annotations:
    kubectl.kubernetes.io/restartedAt: "2024-05-01T10:00:00Z"
  creationTimestamp: "2024-05-01T10:00:00Z"
  generateName: web-7d4b9c-
  labels:
    app: web
    pod-template-hash: 7d4b9c
  name: web-7d4b9c-x2x9q
  namespace: shop
  ownerReferences:
  - apiVersion: apps/v1
    blockOwnerDeletion: true
    controller: true
    kind: ReplicaSet
    name: web-7d4b9c
    uid: 0b8f0c62-8d7e-4b8e-9d0e-5f5c2a0a1b11
  resourceVersion: "123456"
  uid: 5a1e2f3c-1111-2222-3333-444455556666
  finalizers: [example.com/keep]
  generation: 1
  managedFields:
  - apiVersion: v1
    fieldsType: FieldsV1
    manager: kube-controller-manager
    operation: Update
spec:
  containers:
  - image: nginx:1.27
    imagePullPolicy: IfNotPresent
    name: web
    command: [nginx]
    args: [-g, daemon off;]
    env: [{name: MODE, value: prod}]
    ports: [{containerPort: 80, protocol: TCP}]
    livenessProbe: {httpGet: {path: /, port: 80}}
    readinessProbe: {httpGet: {path: /, port: 80}}
    resources:
      limits: {cpu: "1", memory: 512Mi}
      requests: {cpu: 250m, memory: 256Mi}
    securityContext: {runAsNonRoot: true}
    terminationMessagePath: /dev/termination-log
    terminationMessagePolicy: File
    volumeMounts:
    - mountPath: /var/run/secrets/kubernetes.io/serviceaccount
      name: kube-api-access-abcde
      readOnly: true
  dnsPolicy: ClusterFirst
  enableServiceLinks: true
  hostNetwork: false
  nodeName: node-3
  preemptionPolicy: PreemptLowerPriority
  priority: 0
  restartPolicy: Always
  schedulerName: default-scheduler
  securityContext: {}
  serviceAccount: default
  serviceAccountName: default
  terminationGracePeriodSeconds: 30
  tolerations:
  - effect: NoExecute
    key: node.kubernetes.io/not-ready
    operator: Exists
    tolerationSeconds: 300
  - effect: NoExecute
    key: node.kubernetes.io/unreachable
    operator: Exists
    tolerationSeconds: 300
  volumes:
  - name: kube-api-access-abcde
    projected: {defaultMode: 420, sources: [{serviceAccountToken: {path: token}}]}
status:
  conditions: [{type: Ready, status: "True"}]
  containerStatuses: [{name: web, ready: true, restartCount: 0}]
  hostIP: 10.0.0.3
  phase: Running
  podIP: 10.244.1.7
  qosClass: Burstable
  startTime: "2024-05-01T10:00:01Z"
"""

KUBECTL_NODE = """\
apiVersion: v1
kind: List
metadata:
  resourceVersion: ""
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      node.alpha.kubernetes.io/ttl: "0"
    creationTimestamp: "2024-04-01T00:00:00Z"
    labels:
      kubernetes.io/arch: amd64
      kubernetes.io/hostname: node-3
      kubernetes.io/os: linux
      topology.kubernetes.io/zone: eu-1a
    name: node-3
    resourceVersion: "99"
    uid: 9b1c6a10-0000-1111-2222-333344445555
  spec:
    podCIDR: 10.244.1.0/24
    podCIDRs: [10.244.1.0/24]
    providerID: kind://docker/kind/node-3
    taints:
    - {effect: NoSchedule, key: gpu, value: "true", timeAdded: "2024-04-01T00:00:00Z"}
  status:
    addresses: [{address: 10.0.0.3, type: InternalIP}]
    allocatable:
      cpu: "8"
      ephemeral-storage: 100Gi
      hugepages-2Mi: "0"
      memory: 32827564Ki
      pods: "110"
    capacity:
      cpu: "8"
      ephemeral-storage: 100Gi
      hugepages-2Mi: "0"
      memory: 32929964Ki
      pods: "110"
    conditions: [{type: Ready, status: "True"}]
    daemonEndpoints: {kubeletEndpoint: {Port: 10250}}
    images: [{names: [nginx], sizeBytes: 100}]
    nodeInfo: {kubeletVersion: v1.30.0, architecture: amd64}
"""


def test_kubectl_output_loads_without_problems(tmp_path: Path) -> None:
    m = load_files(
        [write(tmp_path, KUBECTL_POD, "pod.yaml"), write(tmp_path, KUBECTL_NODE, "n.yaml")]
    )
    assert m.problems == []
    (pod,) = m.pods
    assert pod.key == "shop/web-7d4b9c-x2x9q"
    assert pod.requests == {"cpu": 250, "memory": 256 * MIB, "pods": 1}
    assert (pod.node_name, pod.scheduler_name, pod.priority) == ("node-3", "default-scheduler", 0)
    assert len(pod.tolerations) == 2
    (node,) = m.nodes
    assert node.allocatable["memory"] == 32827564 * 1024  # bytes, exactly
    assert node.allocatable["pods"] == 110
    assert node.taints == (Taint("gpu", "true", "NoSchedule"),)


KUBECTL_VOLCANO = """\
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: PodGroup
  metadata:
    annotations: {scheduling.k8s.io/group-name: train}
    name: train
    namespace: ml
    ownerReferences: [{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, name: train, uid: x}]
    resourceVersion: "77"
    uid: 1f2e3d4c-0000-0000-0000-000000000000
  spec:
    minMember: 3
    minResources: {count/pods: "3", cpu: "6", memory: 12Gi}
    minTaskMember: {ps: 1, worker: 2}
    priorityClassName: system-cluster-critical
    queue: default
  status:
    conditions: [{type: Scheduled, status: "True"}]
    phase: Running
    running: 3
- apiVersion: scheduling.volcano.sh/v1beta1
  kind: Queue
  metadata: {name: default, uid: 2a3b4c5d, generation: 1}
  spec: {reclaimable: true, weight: 1}
  status:
    allocated: {cpu: "0", memory: "0"}
    reservation: {}
    state: Open
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: system-node-critical, uid: 3b4c5d6e}
  value: 2000001000
  description: Used for system critical pods that must not be moved from their current node.
  preemptionPolicy: PreemptLowerPriority
"""


def test_kubectl_volcano_output_loads_without_problems(tmp_path: Path) -> None:
    m = load(tmp_path, KUBECTL_VOLCANO)
    assert m.errors == []
    # The listing has the PodGroup but not its pods.
    assert [p.path for p in m.warnings] == ["spec.minMember"]
    (group,) = m.groups
    assert (group.key, group.min_member, group.priority) == ("ml/train", 3, 2000000000)
    assert group.min_resources == {"count/pods": 3, "cpu": 6000, "memory": 12288 * MIB}
    assert [(q.name, q.weight, q.state) for q in m.queues] == [("default", 1, "Open")]
    assert [pc.value for pc in m.priority_classes] == [2000001000]


def test_a_folder_without_manifests_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "README.txt").write_text("notes")
    assert lines(load_files([tmp_path]), tmp_path.parent) == [
        f"{tmp_path.name}: no manifest files (.yaml, .yml, .json, .jsonl) in it"
    ]


# -- API surface ----------------------------------------------------------------------------------


def test_load_or_raise(tmp_path: Path) -> None:
    good = write(tmp_path, POD_HEAD + "  labels: {a: 1}\nspec: {containers: [{}]}\n", "good.yaml")
    assert len(load_or_raise([good]).warnings) == 1
    bad = write(tmp_path, POD_HEAD + "spec: {containers: [{}], priority: x}\n", "bad.yaml")
    with pytest.raises(ManifestError) as info:
        load_or_raise([good, bad, tmp_path / "gone.yaml"])
    assert [p.severity for p in info.value.problems] == ["error", "error"]
    assert str(info.value).replace(f"{tmp_path}/", "").splitlines() == [
        'bad.yaml: Pod/web: spec.priority: "x" is not an integer',
        "gone.yaml: file not found",
    ]


def test_problem_str() -> None:
    problem = Problem("f.yaml", "Pod", "ns/p", "spec.priority", "must be >= 1 (got 0)", "error")
    assert str(problem) == "f.yaml: Pod/ns/p: spec.priority: must be >= 1 (got 0)"
    assert str(Problem("f.yaml", "", "", "", "file not found", "error")) == "f.yaml: file not found"


def test_extend_keeps_objects_and_problems() -> None:
    first = parse_documents([pod_doc()], "a.yaml")
    second = parse_documents([pod_doc(name="q"), {"kind": "Thing"}], "b.yaml")
    first.extend(second)
    assert [p.name for p in first.pods] == ["p", "q"]
    assert [str(p) for p in first.errors] == [
        'b.yaml: Thing/-: kind: unknown kind "Thing" (expected one of Node, NodePool, HyperNode, '
        "Pod, PodGroup, Queue, PriorityClass, Job, Command, PyTorchJob, TrainingJob, "
        "Namespace, Deployment, ReplicaSet, StatefulSet, CloneSet, SidecarSet, BroadcastJob, "
        "LeaderWorkerSet, JobSet, "
        "ResourceSlice, DeviceClass, ResourceClaim, ResourceClaimTemplate, Workload, List)"
    ]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
FIELDS = st.sampled_from(
    [
        "spec",
        "metadata",
        "status",
        "containers",
        "resources",
        "requests",
        "affinity",
        "tolerations",
        "topologySpreadConstraints",
        "nodeSelectorTerms",
        "items",
        "count",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["Node", "NodePool", "Pod", "PodGroup", "Queue", "PriorityClass", "List"]),
    replacements=st.dictionaries(FIELDS, JSON_VALUES, max_size=3),
)
def test_arbitrary_content_never_raises(kind: str, replacements: dict) -> None:
    """Whatever sits where a field is expected, the answer is problems, never a traceback."""

    def mangle(node: object) -> object:
        if isinstance(node, dict):
            return {k: replacements.get(k, mangle(v)) for k, v in node.items()}
        if isinstance(node, list):
            return [mangle(v) for v in node]
        return node

    api = {
        "NodePool": "berth.io/v1alpha1",
        "PodGroup": "scheduling.volcano.sh/v1beta1",
        "Queue": "scheduling.volcano.sh/v1beta1",
        "PriorityClass": "scheduling.k8s.io/v1",
    }
    doc = {
        **requests_pod({"cpu": "1"}, {"cpu": "2"}),
        "kind": kind,
        "apiVersion": api.get(kind, "v1"),
        "items": [pod_doc()],
        "value": 1,
        "status": {"allocatable": {"cpu": 1}},
    }
    doc["spec"]["count"] = 2
    doc["spec"]["template"] = {"status": {"allocatable": {"cpu": 1}}}
    m = parse_documents([mangle(doc)], "fuzz.yaml")
    assert all(isinstance(str(p), str) for p in m.problems)


def test_a_group_or_job_in_a_queue_nobody_defined_is_a_warning(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: g}
        spec: {minMember: 1, queue: research}
        ---
        apiVersion: v1
        kind: Pod
        metadata:
          name: p
          annotations: {scheduling.k8s.io/group-name: g}
        spec: {containers: [{name: c}]}
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: PodGroup
        metadata: {name: h}
        spec: {minMember: 0, queue: default}
        """,
    )
    assert lines(m, tmp_path) == [
        'm.yaml: PodGroup/g: spec.queue: no Queue named "research" in the loaded files: its '
        "pods wait until one exists"
    ]
