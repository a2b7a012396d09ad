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
from tests.k8s.oracle_cases import KINDS, Case, generate
from tests.k8s.proxy import FaultProxy

CASES = 210
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
