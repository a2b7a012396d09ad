"""The Workload API (``scheduling.k8s.io/v1beta1`` Workload and PodGroup, pods joining by
``spec.schedulingGroup``): its gangs are decided as Volcano PodGroups are, the verdicts of
kube-scheduler's gang scheduling plugin hold, and bad objects get one line each."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from berth.api.keys import GROUP_NAME_ANNOTATION
from berth.api.manifest import cross_check, load_files, parse_documents
from berth.api.objects import PodPhase
from berth.framework.config import parse_config
from berth.sim.engine import SimConfig, Simulation
from tests.builders import node_doc

API = "scheduling.k8s.io/v1beta1"
EXAMPLES = Path(__file__).parents[2] / "examples" / "workload"


def workload(name: str, **templates: dict[str, Any]) -> dict[str, Any]:
    listed = [{"name": t, "schedulingPolicy": policy} for t, policy in templates.items()]
    return {
        "apiVersion": API,
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"podGroupTemplates": listed},
    }


def gang(count: int) -> dict[str, Any]:
    return {"gang": {"minCount": count}}


BASIC: dict[str, Any] = {"basic": {}}


def pod_group(name: str, policy: dict[str, Any], ref: tuple[str, str] | None = None):
    spec: dict[str, Any] = {"schedulingPolicy": policy}
    if ref is not None:
        spec["workloadRef"] = {"workloadName": ref[0], "templateName": ref[1]}
    return {"apiVersion": API, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def pod(name: str, group: str | None = None, cpu: str = "1", volcano: str | None = None):
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    annotations = {"berth.io/duration": "600"}
    if volcano is not None:
        annotations[GROUP_NAME_ANNOTATION] = volcano
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": spec,
    }


def simulate(docs: list[dict[str, Any]]) -> dict[str, PodPhase]:
    """Every pod's phase one second after everything arrived (all that can run is running)."""
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    assert not manifests.errors, [str(p) for p in manifests.errors]
    config = parse_config({"simulation": {"startLatency": 0}}, "test")
    sim = SimConfig.from_raw(config.simulation, "test")
    result = Simulation(manifests, config, sim_config=sim, until=5).run()
    return {p.name: p.phase for p in result.pods}


RUN, WAIT = PodPhase.RUNNING, PodPhase.PENDING

# Ported from kube-scheduler v1.37.2's TestGangSchedulingFlow (gangscheduling plugin): groups
# pg1 (gang of 3) and pg2 (gang of 4) of Workload gang-wl, pg3 (basic) of basic-wl; pods p1..p3
# in pg1, p4 and p5 in pg2. Upstream states each verdict for one pod at PreEnqueue/Permit; here
# the same situations are simulated on room enough for all, and each pod's outcome is checked.
NODES = [node_doc("n0", cpu="16"), node_doc("n1", cpu="16")]
GROUPS = [
    workload("gang-wl", t1=gang(3), t2=gang(4)),
    workload("basic-wl", **{"1": BASIC}),
    pod_group("pg1", gang(3), ("gang-wl", "t1")),
    pod_group("pg2", gang(4), ("gang-wl", "t2")),
    pod_group("pg3", BASIC, ("basic-wl", "1")),
]
FLOW = [
    ("non-gang pod succeeds immediately", [pod("non-gang")], {"non-gang": RUN}),
    ("basic policy pod succeeds immediately", [pod("basic-pod", "pg3")], {"basic-pod": RUN}),
    (
        "gang pod waits while its pod group is not yet created",
        [pod("p1", "pg-missing")],
        {"p1": WAIT},
    ),
    (
        "gang pod waits while the quorum is not met",
        [pod("p1", "pg1"), pod("p2", "pg1")],
        {"p1": WAIT, "p2": WAIT},
    ),
    (
        "final gang pod arrives and allows all waiting pods of its gang (not another gang's)",
        [pod(f"p{i}", "pg1") for i in (1, 2, 3)] + [pod("p4", "pg2"), pod("p5", "pg2")],
        {"p1": RUN, "p2": RUN, "p3": RUN, "p4": WAIT, "p5": WAIT},
    ),
]


@pytest.mark.parametrize(("pods", "expected"), [c[1:] for c in FLOW], ids=[c[0] for c in FLOW])
def test_gang_scheduling_flow(pods: list[dict[str, Any]], expected: dict[str, PodPhase]) -> None:
    assert simulate(NODES + GROUPS + pods) == expected


def test_a_pod_naming_no_group_is_warned_about() -> None:
    manifests = parse_documents([*NODES, pod("p1", "pg-missing")], "test")
    cross_check(manifests)
    assert [p.message.split(":")[0] for p in manifests.warnings] == [
        'no PodGroup named "pg-missing" in the loaded files'
    ]


def test_a_gang_that_cannot_fit_whole_holds_no_node() -> None:
    # Three pods of 10 cores on two 16-core nodes: two would fit, the gang of three never does.
    docs = [*NODES, pod_group("big", gang(3))]
    docs += [pod(f"big-{i}", "big", cpu="10") for i in range(3)]
    docs += [pod_group("small", gang(2)), pod("small-0", "small"), pod("small-1", "small")]
    assert simulate(docs) == {
        "big-0": WAIT,
        "big-1": WAIT,
        "big-2": WAIT,
        "small-0": RUN,
        "small-1": RUN,
    }


def test_a_minimum_below_the_pod_count_starts_the_gang_with_what_fits() -> None:
    # minCount 2 of 3 pods of 10 cores: two fit and start; the third waits for room.
    docs = [*NODES, pod_group("g", gang(2))] + [pod(f"g-{i}", "g", cpu="10") for i in range(3)]
    assert sorted(simulate(docs).values()) == [WAIT, RUN, RUN]


def test_the_same_gangs_as_volcano_pod_groups_are_placed_alike() -> None:
    volcano = [
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": count},
        }
        for name, count in (("big", 3), ("small", 2))
    ]
    sizes = {"big": "10", "small": "6"}
    names = [(g, f"{g}-{i}") for g in ("big", "small") for i in range(3)]
    as_volcano = [*NODES, *volcano] + [pod(n, cpu=sizes[g], volcano=g) for g, n in names]
    groups = [pod_group("big", gang(3)), pod_group("small", gang(2))]
    as_workload = [*NODES, *groups] + [pod(n, g, cpu=sizes[g]) for g, n in names]
    assert simulate(as_workload) == simulate(as_volcano)
    assert sorted(simulate(as_workload).values()).count(RUN) == 3  # small's three, big none


def test_the_example_loads_and_runs() -> None:
    manifests = load_files([EXAMPLES / "cluster.yaml", EXAMPLES / "gangs.yaml"])
    assert not manifests.problems, [str(p) for p in manifests.problems]
    assert {g.name: g.min_member for g in manifests.groups} == {
        "train-0": 3,
        "train-1": 3,
        "eval-0": 1,
    }


def _bad(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``doc`` with the field at the dotted ``path`` set (None: removed)."""
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    where = doc
    for key in parents:
        where = where[int(key)] if key.isdigit() else where[key]
    if value is None:
        del where[last]
    else:
        where[last] = value
    return doc


PG = pod_group("pg", gang(2), ("wl", "workers"))
WL = workload("wl", workers=gang(2))
BAD = [
    (
        "a pod in a Workload's group and a Volcano group",
        [pod("p", "pg", volcano="vc")],
        "error",
        'Pod p: spec.schedulingGroup.podGroupName: names PodGroup "pg" of the Workload API, but '
        'the pod\'s annotations put it in Volcano PodGroup "vc" (expected one or the other: a '
        "pod is gang-scheduled by one group)",
    ),
    (
        "both policies",
        [_bad(PG, "spec.schedulingPolicy", {"basic": {}, "gang": {"minCount": 2}})],
        "error",
        "PodGroup pg: spec.schedulingPolicy: expected exactly one of basic, gang",
    ),
    (
        "no policy",
        [_bad(PG, "spec.schedulingPolicy", {})],
        "error",
        "PodGroup pg: spec.schedulingPolicy: expected exactly one of basic, gang",
    ),
    (
        "a gang of none",
        [_bad(PG, "spec.schedulingPolicy.gang.minCount", 0)],
        "error",
        "PodGroup pg: spec.schedulingPolicy.gang.minCount: must be >= 1 (got 0)",
    ),
    (
        "nine templates",
        [workload("wl", **{f"t{i}": gang(1) for i in range(9)})],
        "error",
        "Workload wl: spec.podGroupTemplates: at most 8 templates (got 9)",
    ),
    (
        "a template named twice",
        [_bad(WL, "spec.podGroupTemplates", [WL["spec"]["podGroupTemplates"][0]] * 2)],
        "error",
        'Workload wl: spec.podGroupTemplates[1].name: duplicate template name "workers"',
    ),
    (
        "a Workload named twice",
        [WL, WL],
        "error",
        "Workload wl: metadata.name: defined more than once",
    ),
    (
        "a reference to no Workload",
        [PG],
        "warning",
        'PodGroup pg: spec.workloadRef.workloadName: no Workload named "wl" in the loaded files',
    ),
    (
        "a reference to no template",
        [PG, workload("wl", eval=BASIC)],
        "warning",
        'PodGroup pg: spec.workloadRef.templateName: Workload "wl" has no template "workers" '
        "(it has eval)",
    ),
    (
        "a gang unlike its template's",
        [PG, workload("wl", workers=gang(4))],
        "warning",
        'PodGroup pg: spec.schedulingPolicy: gang of 2 differs from template "workers"\'s 4; '
        "the PodGroup's own policy is used",
    ),
    (
        "composite groups",
        [_bad(WL, "spec.compositePodGroupTemplates", [{"name": "x"}])],
        "warning",
        "Workload wl: spec.compositePodGroupTemplates: not supported by berth, ignored",
    ),
]


@pytest.mark.parametrize(
    ("docs", "severity", "line"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_bad_objects_get_one_line(docs: list[dict[str, Any]], severity: str, line: str) -> None:
    manifests = parse_documents(docs, "test")
    cross_check(manifests)
    found = [
        f"{p.kind} {p.name}: {p.path}: {p.message}"
        for p in manifests.problems
        if p.severity == severity and p.kind in ("Pod", "PodGroup", "Workload")
    ]
    assert line in found, found


def test_a_live_pod_group_is_not_checked_against_workloads() -> None:
    # berth serve reads each PodGroup alone and no Workloads: a reference is no warning there.
    manifests = parse_documents([PG], "cluster", live=True)
    cross_check(manifests)
    assert not [p for p in manifests.problems if p.path.startswith("spec.workloadRef")]
    assert [g.min_member for g in manifests.groups] == [2]
