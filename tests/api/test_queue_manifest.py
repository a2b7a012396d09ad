"""Queue manifests: guarantee, deserved, reclaimable and parent; the hierarchy checks that need
every queue; and the preemptable and SLA annotations of pods and groups."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from berth.api.manifest import Manifests, cross_check, load_files, parse_documents
from berth.api.objects import Queue
from berth.durations import DurationError, parse_duration
from berth.resources import MIB

API = "scheduling.volcano.sh/v1beta1"


def load(tmp_path: Path, text: str) -> Manifests:
    path = tmp_path / "q.yaml"
    path.write_text(textwrap.dedent(text))
    return load_files([path])


def lines(m: Manifests) -> list[str]:
    return [str(p).split(": ", 1)[1] for p in m.problems]


def queue(name: str, **spec: object) -> dict:
    return {"apiVersion": API, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def annotated(name: str, path: str | None, weights: str | None) -> dict:
    doc = queue(name)
    annotations = {}
    if path is not None:
        annotations["volcano.sh/hierarchy"] = path
    if weights is not None:
        annotations["volcano.sh/hierarchy-weights"] = weights
    doc["metadata"]["annotations"] = annotations
    return doc


def test_full_queue_spec(tmp_path: Path) -> None:
    m = load(
        tmp_path,
        """
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: research}
        spec:
          weight: 2
          capability: {cpu: 64, memory: 256Gi, nvidia.com/gpu: 8}
          deserved: {cpu: 32, nvidia.com/gpu: 4}
          guarantee: {resource: {cpu: 8}}
          reclaimable: false
          parent: org
        ---
        apiVersion: scheduling.volcano.sh/v1beta1
        kind: Queue
        metadata: {name: org}
        """,
    )
    assert m.problems == []
    research, org = m.queues
    assert research == Queue(
        "research",
        weight=2,
        capability={"cpu": 64000, "memory": 262144 * MIB, "nvidia.com/gpu": 8000},
        guarantee={"cpu": 8000},
        deserved={"cpu": 32000, "nvidia.com/gpu": 4000},
        reclaimable=False,
        parent="org",
    )
    assert org == Queue("org")
    assert (org.reclaimable, org.parent, org.guarantee, org.deserved) == (True, "", {}, {})


SPEC_CASES = {
    "parent root without a root queue": ([queue("a", parent="root")], []),
    "parent root when root is defined": ([queue("a", parent="root"), queue("root")], []),
    "missing parent": (
        [queue("a", parent="ghost")],
        [
            'Queue/a: spec.parent: no Queue named "ghost" (expected a queue defined in the loaded '
            "files, or root)"
        ],
    ),
    "self parent": ([queue("a", parent="a")], ["Queue/a: spec.parent: queues form a cycle: a → a"]),
    "two-queue cycle": (
        [queue("a", parent="b"), queue("b", parent="a")],
        [
            "Queue/a: spec.parent: queues form a cycle: a → b → a",
            "Queue/b: spec.parent: queues form a cycle: b → a → b",
        ],
    ),
    "a child hanging under a cycle is not itself a cycle": (
        [queue("leaf", parent="a"), queue("a", parent="b"), queue("b", parent="a")],
        [
            "Queue/a: spec.parent: queues form a cycle: a → b → a",
            "Queue/b: spec.parent: queues form a cycle: b → a → b",
        ],
    ),
    "deep tree": ([queue("a"), queue("b", parent="a"), queue("c", parent="b")], []),
    "parent not a name": (
        [queue("a", parent="Not_A_Name")],
        [
            'Queue/a: spec.parent: "Not_A_Name" is not a valid name (expected lowercase letters, '
            "digits, '-' and '.', starting and ending with a letter or digit)"
        ],
    ),
    "reclaimable not a boolean": (
        [queue("a", reclaimable="yes")],
        ['Queue/a: spec.reclaimable: "yes" is not a boolean (expected true or false)'],
    ),
    "guarantee not under resource": (
        [queue("a", guarantee={"cpu": 2})],
        ["Queue/a: spec.guarantee.cpu: unknown field"],
    ),
    "deserved quantity": (
        [queue("a", deserved={"cpu": "lots"})],
        ['Queue/a: spec.deserved.cpu: "lots" is not a quantity (expected e.g. 500m, 2, 4Gi)'],
    ),
    "guarantee above capability": (
        [queue("a", capability={"cpu": 2}, guarantee={"resource": {"cpu": 4}})],
        [
            "Queue/a: spec.guarantee.resource.cpu: 4 exceeds spec.capability.cpu (2); only the "
            "capability can be used"
        ],
    ),
    "queue priority is read": ([queue("a", priority=10)], []),
    "hierarchy annotations": (
        [annotated("a", "root/eng/dev", "100/50/50")],
        [],
    ),
    "hierarchy not from root": (
        [annotated("a", "eng/dev", "50/50")],
        [
            'Queue/a: metadata.annotations.volcano.sh/hierarchy: "eng/dev" is not a path from '
            "root (expected e.g. root/eng/dev)"
        ],
    ),
    "hierarchy weights short": (
        [annotated("a", "root/eng/dev", "100/50")],
        [
            'Queue/a: metadata.annotations.volcano.sh/hierarchy-weights: "100/50" has 2 weights '
            'for 3 levels of "root/eng/dev"'
        ],
    ),
    "hierarchy weight not a number": (
        [annotated("a", "root/eng", "100/x")],
        [
            'Queue/a: metadata.annotations.volcano.sh/hierarchy-weights: weight "x" is not a '
            "number >= 1; it counts as 1"
        ],
    ),
    "hierarchy weights alone": (
        [annotated("a", None, "100/50")],
        [
            "Queue/a: metadata.annotations.volcano.sh/hierarchy-weights: has no effect without "
            "volcano.sh/hierarchy"
        ],
    ),
}


def test_queue_priority_and_annotations_are_kept() -> None:
    m = parse_documents([annotated("a", "root/a", "1/2"), queue("b", priority=7)], "t.yaml")
    a, b = m.queues
    assert a.annotations == {
        "volcano.sh/hierarchy": "root/a",
        "volcano.sh/hierarchy-weights": "1/2",
    }
    assert (a.priority, b.priority) == (0, 7)


@pytest.mark.parametrize("docs,expected", SPEC_CASES.values(), ids=SPEC_CASES.keys())
def test_queue_checks(docs: list[dict], expected: list[str]) -> None:
    m = parse_documents(docs, "t.yaml")
    cross_check(m)
    assert lines(m) == expected


def test_parent_checks_run_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(
        f"apiVersion: {API}\nkind: Queue\nmetadata: {{name: child}}\nspec: {{parent: org}}\n"
    )
    (tmp_path / "b.yaml").write_text(f"apiVersion: {API}\nkind: Queue\nmetadata: {{name: org}}\n")
    assert load_files([tmp_path / "a.yaml"]).errors != []
    assert load_files([tmp_path / "a.yaml", tmp_path / "b.yaml"]).problems == []


def pod(annotations: dict | None = None, labels: dict | None = None) -> dict:
    meta: dict = {"name": "p", "annotations": annotations or {}, "labels": labels or {}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "c"}]},
    }


def group(annotations: dict | None = None) -> dict:
    return {
        "apiVersion": API,
        "kind": "PodGroup",
        "metadata": {"name": "g", "annotations": annotations or {}},
    }


PREEMPTABLE_CASES = {
    "default": (pod(), True, []),
    "annotation false": (pod({"volcano.sh/preemptable": "false"}), False, []),
    "annotation in Go spelling": (pod({"volcano.sh/preemptable": "F"}), False, []),
    "annotation true": (pod({"volcano.sh/preemptable": "true"}), True, []),
    "label false": (pod(labels={"volcano.sh/preemptable": "false"}), False, []),
    "annotation wins over label": (
        pod({"volcano.sh/preemptable": "true"}, {"volcano.sh/preemptable": "false"}),
        True,
        [],
    ),
    "not a boolean": (
        pod({"volcano.sh/preemptable": "never"}),
        True,
        [
            'Pod/p: metadata.annotations.volcano.sh/preemptable: "never" is not a boolean '
            '(expected "true" or "false")'
        ],
    ),
    "group annotation false": (group({"volcano.sh/preemptable": "false"}), False, []),
    "group default": (group(), True, []),
}


@pytest.mark.parametrize(
    "doc,preemptable,problems", PREEMPTABLE_CASES.values(), ids=PREEMPTABLE_CASES.keys()
)
def test_preemptable(doc: dict, preemptable: bool, problems: list[str]) -> None:
    m = parse_documents([doc], "t.yaml")
    (obj,) = m.pods or m.groups
    assert obj.preemptable is preemptable
    assert lines(m) == problems


SLA_CASES = {
    "hours": ("1h", []),
    "compound": ("1h30m", []),
    "negative": (
        "-5m",
        ["PodGroup/g: metadata.annotations.sla-waiting-time: must not be negative (got -5m)"],
    ),
    "not a duration": (
        "an hour",
        [
            "PodGroup/g: metadata.annotations.sla-waiting-time: "
            '"an hour" is not a duration (expected e.g. 30m, 1h, 1h30m)'
        ],
    ),
}


@pytest.mark.parametrize("text,problems", SLA_CASES.values(), ids=SLA_CASES.keys())
def test_sla_annotation_is_checked_and_kept(text: str, problems: list[str]) -> None:
    m = parse_documents([group({"sla-waiting-time": text})], "t.yaml")
    assert lines(m) == problems
    assert m.groups[0].annotations == {"sla-waiting-time": text}


DURATIONS = {
    "0": 0.0,
    "90s": 90.0,
    "1h": 3600.0,
    "1h30m": 5400.0,
    "1.5h": 5400.0,
    "500ms": 0.5,
    "2m0.5s": 120.5,
    "+10s": 10.0,
    "-1m": -60.0,
    "1us": 1e-6,
}


@pytest.mark.parametrize("text,seconds", DURATIONS.items(), ids=DURATIONS.keys())
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "1", "h", "1d", "1h x", "--1s", "1.h2"])
def test_not_go_durations(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)
