"""The real kube-scheduler as the oracle: the same generated cases (tests/k8s/oracle_cases.py)
scheduled by kube-scheduler, then by ``berth serve`` reading the same
KubeSchedulerConfiguration, on one API server, for the default profile and for a profile with
other weights and MostAllocated scoring.

kube-scheduler breaks ties between equally scored nodes at random, so its per-node totals are
read from its own log (``--vmodule=schedule_one=10`` prints "Calculated node's final score for
pod"), and berth agrees with it when berth's node is one of the best scored, or when both leave
the pod unschedulable. Where only one node is feasible kube-scheduler scores nothing and the
node must be the same.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.framework.kube_config import parse_kube_config
from tests.k8s.controlplane import BIN, ControlPlane
from tests.k8s.harness import Cluster, fast_options, serving, settle, wait_for
from tests.k8s.oracle_cases import (
    KINDS,
    PRIORITY_CLASSES,
    Case,
    generate,
    generate_preemption,
    priority_classes,
)
from tests.k8s.proxy import FaultProxy

CASES = 210
PREEMPTION_CASES = 60
WEIGHTED = {
    "schedulerName": "weighted",
    "plugins": {
        "score": {
            "enabled": [
                {"name": "NodeResourcesBalancedAllocation", "weight": 5},
                {"name": "InterPodAffinity", "weight": 4},
                {"name": "TaintToleration", "weight": 1},
                {"name": "NodeAffinity", "weight": 6},
            ]
        }
    },
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                }
            },
        }
    ],
}
PROFILES = {"default-scheduler": {"schedulerName": "default-scheduler"}, "weighted": WEIGHTED}
SCORE = re.compile(
    r'"Calculated node\'s final score for pod" pod="default/([^"]+)" node="([^"]+)" score=(\d+)'
)
PLUGIN_SCORE = re.compile(
    r'"Plugin scored node for pod" pod="default/([^"]+)" plugin="([^"]+)" node="([^"]+)" '
    r"score=(\d+)"
)


@pytest.fixture(scope="module")
def kube_scheduler(control_plane: tuple[ControlPlane, FaultProxy]) -> Iterator[Path]:
    """kube-scheduler with both profiles, logging its node scores; the log's path."""
    plane, _ = control_plane
    plane.write_kubeconfig("scheduler")
    settings = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(plane.folder / "scheduler.kubeconfig")},
        "leaderElection": {"leaderElect": False},
        "profiles": list(PROFILES.values()),
    }
    config = plane.folder / "oracle-scheduler.yaml"
    config.write_text(yaml.safe_dump(settings))
    log = plane.folder / "logs" / "oracle-kube-scheduler.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(BIN / "kube-scheduler"),
                f"--config={config}",
                "--secure-port=0",
                "--v=2",
                "--vmodule=schedule_one=10",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield log
    finally:
        process.terminate()
        process.wait(15)


def _decided(cluster: Cluster, names: set[str]) -> dict[str, str] | None:
    """pod → node ("" when the scheduler called it unschedulable), once every pod of
    ``names`` is decided; None before that."""
    answer: dict[str, str] = {}
    for pod in cluster.objects("Pod"):
        name = pod["metadata"]["name"]
        if name not in names:
            continue
        node = pod["spec"].get("nodeName")
        if node:
            answer[name] = node
            continue
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                answer[name] = ""
    return answer if len(answer) == len(names) else None


def _log_since(log: Path, since: int) -> str:
    """The scheduler's log from byte ``since`` on (this run's lines)."""
    with log.open("rb") as handle:
        handle.seek(since)
        return handle.read().decode(errors="replace")


def _scores(text: str) -> dict[str, dict[str, int]]:
    """pod → node → total score, from the last scoring of each pod."""
    scores: dict[str, dict[str, int]] = {}
    for match in SCORE.finditer(text):
        pod, node, score = match.groups()
        scores.setdefault(pod, {})[node] = int(score)
    return scores


def _plugin_scores(text: str, pod: str) -> dict[str, dict[str, int]]:
    """node → plugin → weighted score, for a disagreement's message."""
    found: dict[str, dict[str, int]] = {}
    for match in PLUGIN_SCORE.finditer(text):
        if match.group(1) == pod:
            found.setdefault(match.group(3), {})[match.group(2)] = int(match.group(4))
    return found


def _berth_config(tmp: Path, profile: dict[str, Any]) -> Path:
    raw = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{**profile, "schedulerName": "berth"}],
    }
    path = tmp / "berth-scheduler.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _run(cluster: Cluster, cases: list[Case], scheduler: str, config: Any = None) -> dict:
    pods = [case.pod(scheduler) for case in cases]
    names = {p["metadata"]["name"] for p in pods}
    if scheduler == "berth":
        with serving(cluster, config, fast_options()) as server:
            settle(server)
            cluster.add(*pods)
            wait_for(lambda: _decided(cluster, names) is not None, timeout=60)
            settle(server)
    else:
        cluster.add(*pods)
        wait_for(lambda: _decided(cluster, names) is not None, timeout=60)
    decided = _decided(cluster, names)
    assert decided is not None
    for name in names:
        cluster.delete("Pod", "default", name)
    return {name.rsplit("-", 1)[0]: node for name, node in decided.items()}


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_berth_agrees_with_kube_scheduler(
    cluster: Cluster, kube_scheduler: Path, tmp_path: Path, profile: str
):
    cases = generate(CASES, seed=7)
    for case in cases:
        cluster.add(*case.nodes)
    for case in cases:
        cluster.add(*case.running)
    since = kube_scheduler.stat().st_size
    theirs = _run(cluster, cases, profile)
    time.sleep(0.5)  # the last score lines flushed
    logged = _log_since(kube_scheduler, since)
    scores = _scores(logged)
    config = parse_kube_config(
        yaml.safe_load(_berth_config(tmp_path, PROFILES[profile]).read_text()), "<oracle>"
    )
    config.period = 0.05
    ours = _run(cluster, cases, "berth", config)
    disagreements = []
    agreed_by_kind = dict.fromkeys(KINDS, 0)
    for case in cases:
        mine, oracle = ours[case.name], theirs[case.name]
        node_scores = scores.get(f"{case.name}-ks", {})
        best = max(node_scores.values()) if node_scores else None
        agrees = mine == oracle or (
            bool(mine) and bool(oracle) and best is not None and node_scores.get(mine) == best
        )
        if agrees:
            agreed_by_kind[case.kind] += 1
        else:
            plugins = _plugin_scores(logged, f"{case.name}-ks")
            disagreements.append((case.name, case.kind, oracle, mine, node_scores, plugins))
    print(f"{profile}: {CASES - len(disagreements)}/{CASES} agree; by kind {agreed_by_kind}")
    assert not disagreements, "\n".join(map(str, disagreements))


def _running_now(cluster: Cluster) -> dict[str, dict[str, Any]]:
    """Pods not being deleted, by name."""
    return {
        p["metadata"]["name"]: p
        for p in cluster.objects("Pod")
        if not p["metadata"].get("deletionTimestamp")
    }


def _restore(cluster: Cluster, cases: list[Case]) -> None:
    """Every case's running pods back (those preempted recreated on their nodes), Running."""
    present = _running_now(cluster)
    wanted = [p for case in cases for p in case.running]
    cluster.add(*(p for p in wanted if p["metadata"]["name"] not in present))
    names = {p["metadata"]["name"] for p in wanted}

    def running() -> bool:
        now = _running_now(cluster)
        return all((now.get(n, {}).get("status") or {}).get("phase") == "Running" for n in names)

    wait_for(running, timeout=60)


def _outcome(cluster: Cluster, names: set[str]) -> dict[str, tuple[str, bool]] | None:
    """pod → (node, still nominated) once every pod of ``names`` is bound or called
    unschedulable; None before that."""
    answer = {}
    for pod in cluster.objects("Pod"):
        name = pod["metadata"]["name"]
        if name not in names:
            continue
        status = pod.get("status") or {}
        node = pod["spec"].get("nodeName")
        refused = any(
            c["type"] == "PodScheduled" and c["status"] == "False"
            for c in status.get("conditions") or []
        )
        if node or refused:
            answer[name] = (node or "", bool(status.get("nominatedNodeName")))
    return answer if len(answer) == len(names) else None


def _preempting_run(
    cluster: Cluster, cases: list[Case], scheduler: str, config: Any = None
) -> dict[str, tuple[str, frozenset[str]]]:
    """case → (the node its pod went to or "", the case's running pods it preempted)."""
    pods = [case.pod(scheduler) for case in cases]
    names = {p["metadata"]["name"] for p in pods}
    last: list[Any] = [None, time.monotonic()]

    def quiet() -> bool:
        # Preemption takes steps (victims deleted, the pod nominated, then bound): decided
        # once nothing is nominated and the answer has held for two seconds.
        now = _outcome(cluster, names)
        if now != last[0]:
            last[:] = [now, time.monotonic()]
            return False
        if now is None or any(nominated and not node for node, nominated in now.values()):
            return False
        return time.monotonic() - last[1] >= 2.0

    if scheduler == "berth":
        with serving(cluster, config, fast_options()) as server:
            settle(server)
            cluster.add(*pods)
            wait_for(quiet, timeout=90)
    else:
        cluster.add(*pods)
        wait_for(quiet, timeout=90)
    decided = _outcome(cluster, names)
    assert decided is not None
    present = _running_now(cluster)
    result = {}
    for case in cases:
        node, _ = decided[case.pod(scheduler)["metadata"]["name"]]
        gone = {p["metadata"]["name"] for p in case.running} - set(present)
        result[case.name] = (node, frozenset(gone))
    for name in names:
        cluster.delete("Pod", "default", name)
    return result


def _victim_cost(case: Case, victims: frozenset[str]) -> tuple[int, int, int]:
    """kube-scheduler's order among nodes that preemption could use: the lowest highest
    victim priority, then the lowest sum of victim priorities, then the fewest victims."""
    values = [
        PRIORITY_CLASSES[p["spec"]["priorityClassName"]]
        for p in case.running
        if p["metadata"]["name"] in victims
    ]
    return (max(values, default=0), sum(values), len(values))


def test_preemption_agrees_with_kube_scheduler(
    cluster: Cluster, kube_scheduler: Path, tmp_path: Path
):
    """The same preemption cases, kube-scheduler's DefaultPreemption against berth's preempt
    action: the node the pod lands on and the pods it preempts. kube-scheduler picks at random
    among nodes equal on its criteria, so an equal cost counts as agreeing."""
    cases = generate_preemption(PREEMPTION_CASES, seed=11)
    cluster.add(*priority_classes())
    for case in cases:
        cluster.add(*case.nodes)
    profile = PROFILES["default-scheduler"]
    config = parse_kube_config(
        yaml.safe_load(_berth_config(tmp_path, profile).read_text()), "<oracle>"
    )
    config.period = 0.05
    with cluster.kubelet():
        _restore(cluster, cases)
        theirs = _preempting_run(cluster, cases, "default-scheduler")
        _restore(cluster, cases)
        ours = _preempting_run(cluster, cases, "berth", config)
    exact = tied = 0
    disagreements = []
    for case in cases:
        (their_node, their_victims), (my_node, my_victims) = theirs[case.name], ours[case.name]
        if (their_node, their_victims) == (my_node, my_victims):
            exact += 1
        elif (
            their_node
            and my_node
            and (_victim_cost(case, their_victims) == _victim_cost(case, my_victims))
        ):
            tied += 1
        else:
            disagreements.append(
                (case.name, (their_node, sorted(their_victims)), (my_node, sorted(my_victims)))
            )
    print(f"preemption: {exact} same, {tied} equally good, {len(disagreements)} differ")
    assert not disagreements, "\n".join(map(str, disagreements))
