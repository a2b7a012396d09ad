"""Running kube-scheduler's plugin test tables against berth configured as kube-scheduler's
default profile (a KubeSchedulerConfiguration with no profile settings, or with the table's
plugin arguments as pluginConfig).

Tables give nodes, the pods already on them and an incoming pod in Kubernetes' own shapes;
pods go through berth's manifest loader, so the same conversion that reads users' YAML is
tested. The verdict or score of one plugin is then asked for every node, as the upstream unit
tests ask one plugin: other filters are not applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from berth.api.manifest import parse_documents
from berth.api.objects import Namespace, Node, Pod
from berth.api.selectors import Taint
from berth.framework.kube_config import KUBE_API, KUBE_KIND, parse_kube_config
from berth.framework.plugin import Plugin
from berth.framework.scheduler import Scheduler
from berth.resources import canonical_name, to_canonical

#: Spec fields of an incoming pod that wants nodes labelled ``foo`` (selector, affinity).
NODE_SEL = {"nodeSelector": {"foo": ""}}
NODE_AFF = {
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "foo", "operator": "In", "values": [""]}]}
                ]
            }
        }
    }
}


def kube_profile(plugin_config: Iterable[dict[str, Any]] = ()) -> Scheduler:
    """A scheduler running kube-scheduler's default profile, with ``plugin_config``."""
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    configs = list(plugin_config)
    if configs:
        profile["pluginConfig"] = configs
    raw = {"apiVersion": KUBE_API, "kind": KUBE_KIND, "profiles": [profile]}
    return Scheduler(parse_kube_config(raw, "kube-default"))


def node(
    name: str,
    labels: dict[str, str] | None = None,
    capacity: dict[str, str | int] | None = None,
    taints: Iterable[tuple[str, str, str]] = (),
) -> Node:
    """A node with ``capacity`` in Kubernetes quantities; taints as (key, value, effect)."""
    allocatable = {
        canonical_name(k): to_canonical(k, v) for k, v in (capacity or {"pods": 110}).items()
    }
    allocatable.setdefault("pods", 110)
    return Node(
        name,
        labels=dict(labels or {}),
        allocatable=allocatable,
        taints=tuple(Taint(k, v, e) for k, v, e in taints),
    )


def pod(
    name: str = "p",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    containers: Iterable[dict[str, str | int]] | None = (),
    init_containers: Iterable[dict[str, str | int]] = (),
    overhead: dict[str, str | int] | None = None,
    **spec: Any,
) -> Pod:
    """A pod read from its Kubernetes document: ``containers`` are request lists; ``spec``
    holds further pod spec fields in Kubernetes' camelCase (affinity, nodeSelector, ...).

    Without containers it is a pod as kube-scheduler's tests build them with no container at
    all (berth's manifests require one): it requests nothing, not even default cpu/memory.
    """
    listed = list(containers or ())
    body: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(listed)
        ]
        or [{"name": "c"}],
        **spec,
    }
    if init_containers:
        body["initContainers"] = [
            {"name": f"i{i}", "resources": {"requests": r}} for i, r in enumerate(init_containers)
        ]
    if overhead:
        body["overhead"] = overhead
    doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels or {})},
        "spec": body,
    }
    manifests = parse_documents([doc], "table")
    assert not manifests.errors, [str(p) for p in manifests.errors]
    (loaded,) = manifests.pods
    if not listed:
        loaded.requests = {"pods": 1}
        loaded.nonzero_requests = (0, 0)
    return loaded


def cluster(
    nodes: Iterable[Node],
    existing: Iterable[tuple[Pod, str]] = (),
    namespaces: Iterable[Namespace] = (),
    plugin_config: Iterable[dict[str, Any]] = (),
) -> Scheduler:
    s = kube_profile(plugin_config)
    for namespace in namespaces:
        s.add_namespace(namespace)
    for n in nodes:
        s.add_node(n)
    for existing_pod, where in existing:
        s.place_bound(existing_pod, where)
    return s


def plugin(s: Scheduler, name: str) -> Plugin:
    """The berth plugin of the profile named ``name``, wherever it serves."""
    for candidate in s.framework.plugins:
        if candidate.name == name:
            return candidate
    raise AssertionError(f"{name} is not in the profile")


def verdicts(s: Scheduler, name: str, incoming: Pod) -> dict[str, bool]:
    """Whether plugin ``name``'s filter lets ``incoming`` onto each node."""
    state = s.state
    cls = s.search.compile(incoming)
    p = plugin(s, name)
    if not p.relevant(cls, "filter"):
        return dict.fromkeys(state.names, True)
    mask = p.filter(cls, state, np.arange(state.n))
    return {state.names[i]: bool(ok) for i, ok in enumerate(mask)}


def scores(
    s: Scheduler, name: str, incoming: Pod, candidates: Iterable[str] | None = None
) -> dict[str, float]:
    """Plugin ``name``'s 0..100 score for ``incoming`` on each candidate node (every node by
    default); a plugin with nothing to say about the pod scores every node 0, as a skipped
    kube-scheduler plugin adds nothing."""
    state = s.state
    names = list(state.names if candidates is None else candidates)
    rows = np.array([state.rows[n] for n in names], dtype=np.intp)
    cls = s.search.compile(incoming)
    p = plugin(s, name)
    if not p.relevant(cls, "score"):
        return dict.fromkeys(names, 0.0)
    cls.scratch.clear()
    values = p.score(cls, state, rows)
    return {n: float(v) for n, v in zip(names, values, strict=True)}


def truncated(got: dict[str, float]) -> dict[str, int]:
    """berth's exact scores cut to whole points as kube-scheduler's integer arithmetic does;
    the tolerance absorbs floating-point error (45 computed as 44.999999...)."""
    return {n: int(np.floor(v + 1e-9)) for n, v in got.items()}


def same_ranking(got: dict[str, float], expected: dict[str, int]) -> bool:
    """Whether two score lists order every pair of nodes the same way (ties included)."""
    names = list(expected)
    return all(
        np.sign(got[a] - got[b]) == np.sign(expected[a] - expected[b])
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    )
