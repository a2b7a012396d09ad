"""A workload and its pods already placed, in one input (what ``berth snapshot`` writes): the
workload's controller adopts the pods (same names, same nodes, none made twice) and then goes
on as it would have: creates only the missing pods, scales, finishes."""

from __future__ import annotations

from collections import Counter
from typing import Any

from berth.api.manifest import cross_check, parse_documents
from berth.api.objects import PodPhase
from berth.sim.engine import SimResult
from tests.controllers.test_job_controller import job, task
from tests.controllers.test_leaderworkerset import API as LWS_API
from tests.controllers.workload_docs import KRUISE, cloneset, load, statefulset, template, workload
from tests.sim.test_workloads import by_kind, nodes, simulate

GROUP = "scheduling.k8s.io/group-name"
REVISION = "controller-revision-hash"


def pod(
    name: str,
    node: str,
    owner: tuple[str, str, str],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    container: str = "app",
) -> dict[str, Any]:
    """A running pod of ``owner`` (apiVersion, kind, name) as a snapshot writes it."""
    api_version, kind, owner_name = owner
    ref = {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels or {},
            "annotations": annotations or {},
            "ownerReferences": [ref],
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": container, "image": "app:1", "resources": {"requests": {"cpu": "1"}}}
            ],
        },
    }


def placed(result: SimResult) -> dict[str, str]:
    """Pod name → node, every pod object the run had (a name made twice fails)."""
    names = Counter(p.name for p in result.pods)
    assert all(count == 1 for count in names.values()), names
    return {p.name: p.bound_node for p in result.pods}


def test_cloneset_adopts_its_pods_then_creates_only_the_missing_and_scales() -> None:
    owner = (KRUISE, "CloneSet", "web")
    revision = load(cloneset(replicas=3))[0].spec.template.revision
    labels = {"app": "web", REVISION: f"web-{revision}"}
    adopted = [pod(n, "n2", owner, labels, {GROUP: "cloneset-web"}) for n in ("web-a1", "web-b2")]
    result = simulate(
        [*nodes(3), cloneset(replicas=3), cloneset(replicas=4, at=50), *adopted], until=100
    )
    nodes_of = placed(result)
    assert nodes_of["web-a1"] == nodes_of["web-b2"] == "n2"
    assert len(nodes_of) == 4  # two adopted, one missing at the start, one from the scale-out
    web = by_kind(result, "web")
    assert web.status.created == 2 and web.status.deleted == 0
    assert web.status.replicas == web.status.ready == 4
    assert all(p.phase == PodPhase.RUNNING for p in result.pods)
    first = {p.name: p.bind_time for p in result.pods if p.name.startswith("web-")}
    assert first["web-a1"] == first["web-b2"] == 0.0


def test_cloneset_rolls_out_adopted_pods_of_an_older_revision() -> None:
    """Pods whose revision is not the template's are the old revision: the rollout replaces
    them, as it would on the cluster."""
    owner = (KRUISE, "CloneSet", "web")
    adopted = [pod("web-a1", "n1", owner, {"app": "web", REVISION: "web-old"})]
    result = simulate([*nodes(2), cloneset(replicas=1), *adopted], until=50)
    web = by_kind(result, "web")
    gone = {p.name: p.phase for p in result.pods}
    assert gone["web-a1"] == PodPhase.DELETED and web.status.updated == 1


def test_advanced_statefulset_adopts_ordinals_and_creates_the_rest() -> None:
    sts = statefulset(advanced=True, replicas=3)
    revision = load(sts)[0].spec.template.revision
    owner = ("apps.kruise.io/v1beta1", "StatefulSet", "db")
    labels = {"app": "db", REVISION: f"db-{revision}"}
    adopted = [pod(f"db-{i}", "n1", owner, labels, {GROUP: "asts-db"}) for i in (0, 1)]
    result = simulate([*nodes(3), sts, *adopted], until=100)
    nodes_of = placed(result)
    assert set(nodes_of) == {"db-0", "db-1", "db-2"}
    assert nodes_of["db-0"] == nodes_of["db-1"] == "n1"
    db = next(w for w in result.workloads if w.name == "db")
    assert db.status.created == 1 and db.status.ready == 3


def test_volcano_job_adopts_its_pods_by_name_and_succeeds() -> None:
    owner = ("batch.volcano.sh/v1alpha1", "Job", "train")
    labels = {"volcano.sh/job-name": "train"}
    adopted = [pod(f"train-worker-{i}", "n2", owner, labels, container="c") for i in (0, 2)]
    result = simulate([*nodes(3), job("train", [task("worker", 3, duration=100)]), *adopted])
    nodes_of = placed(result)
    assert set(nodes_of) == {"train-worker-0", "train-worker-1", "train-worker-2"}
    assert nodes_of["train-worker-0"] == nodes_of["train-worker-2"] == "n2"
    assert all(p.phase == PodPhase.SUCCEEDED for p in result.pods)
    (train,) = result.jobs
    assert str(train.phase) == "Completed"


def test_volcano_job_retries_an_adopted_pod_that_fails() -> None:
    """The adopted pod is the Job's: its failure restarts the Job (its policy), whose new pods
    are made under new names."""
    owner = ("batch.volcano.sh/v1alpha1", "Job", "train")
    failing = task(
        "worker",
        2,
        duration=100,
        annotations={"berth.io/fail-after": "10"},
        policies=[{"event": "PodFailed", "action": "RestartJob"}],
    )
    docs = [*nodes(2), job("train", [failing], maxRetry=2), pod("train-worker-0", "n1", owner)]
    result = simulate(docs)
    first = next(p for p in result.pods if p.name == "train-worker-0")
    assert first.bound_node == "n1" and first.phase == PodPhase.FAILED
    (train,) = result.jobs
    assert train.retries == 2 and str(train.phase) == "Failed"
    assert Counter(p.name.partition(".")[0] for p in result.pods)["train-worker-0"] == 2


def test_pytorch_job_adopts_master_and_workers() -> None:
    container = [{"name": "pytorch", "resources": {"requests": {"cpu": "1"}}}]
    spec = {"template": {"spec": {"containers": container}}}
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llama", "annotations": {"berth.io/duration": "60"}},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, **spec},
                "Worker": {"replicas": 2, **spec},
            }
        },
    }
    owner = ("kubeflow.org/v1", "PyTorchJob", "llama")
    labels = {"training.kubeflow.org/job-name": "llama"}
    adopted = [
        pod("llama-master-0", "n0", owner, labels, container="pytorch"),
        pod("llama-worker-1", "n0", owner, labels, container="pytorch"),
    ]
    result = simulate([*nodes(2), pytorch, *adopted])
    nodes_of = placed(result)
    assert set(nodes_of) == {"llama-master-0", "llama-worker-0", "llama-worker-1"}
    assert nodes_of["llama-master-0"] == nodes_of["llama-worker-1"] == "n0"
    (llama,) = result.jobs
    assert str(llama.phase) == "Completed"


def test_leader_worker_set_keeps_an_adopted_group_and_makes_the_other() -> None:
    lwt = {"size": 2, "workerTemplate": template("lws")}
    doc = workload(LWS_API, "LeaderWorkerSet", "lws", replicas=2, leaderWorkerTemplate=lwt)
    spec = load(doc)[0].spec
    group = f"lws-0-{spec.revision}"
    owner = (LWS_API, "LeaderWorkerSet", "lws")
    labels = {
        "leaderworkerset.sigs.k8s.io/name": "lws",
        "leaderworkerset.sigs.k8s.io/group-index": "0",
        "leaderworkerset.sigs.k8s.io/template-revision-hash": spec.revision,
    }
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": group},
        "spec": {"minMember": 2},
    }
    adopted = [
        pod("lws-0", "n1", owner, {**labels, "leaderworkerset.sigs.k8s.io/worker-index": "0"}),
        pod("lws-0-1", "n1", owner, {**labels, "leaderworkerset.sigs.k8s.io/worker-index": "1"}),
    ]
    for item in adopted:
        item["metadata"]["annotations"][GROUP] = group
    result = simulate([*nodes(2), doc, podgroup, *adopted], until=50)
    nodes_of = placed(result)
    assert set(nodes_of) == {"lws-0", "lws-0-1", "lws-1", "lws-1-1"}
    assert nodes_of["lws-0"] == nodes_of["lws-0-1"] == "n1"
    assert all(p.phase == PodPhase.RUNNING for p in result.pods)


def test_a_pod_whose_owner_is_not_in_the_input_runs_plain_with_a_warning() -> None:
    docs = [*nodes(1), pod("web-a1", "n0", (KRUISE, "CloneSet", "web"))]
    manifests = parse_documents(docs, "snap.yaml")
    cross_check(manifests)
    (warning,) = [str(w) for w in manifests.warnings]
    assert warning == (
        "snap.yaml: Pod/web-a1: metadata.ownerReferences: CloneSet web is not in the loaded "
        "files: the pod runs as a plain pod"
    )
    result = simulate(docs, until=10)
    (only,) = result.pods
    assert only.bound_node == "n0" and only.owner == "" and only.phase == PodPhase.RUNNING


def test_adoption_is_deterministic() -> None:
    owner = (KRUISE, "CloneSet", "web")
    docs = [*nodes(3), cloneset(replicas=4), pod("web-a1", "n2", owner, {"app": "web"})]
    runs = [
        [(p.name, p.bound_node, p.phase, p.end_time) for p in simulate(docs, until=60).pods]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
