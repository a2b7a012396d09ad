"""Deployments following their load curve, as an HPA would: up at once, down only after the
stabilisation window."""

from __future__ import annotations

from pathlib import Path

from berth.api.manifest import load_files
from berth.api.objects import PodPhase
from berth.framework.config_files import load_config
from berth.sim.engine import SimResult, Simulation
from tests.builders import node

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  annotations:
    berth.io/load-curve: curve.csv
    berth.io/load-period: "400"
    berth.io/requests-per-replica: "2"
    berth.io/scale-interval: "10"
    berth.io/scale-down-stabilization: "60"
spec:
  replicas: 1
  selector: {matchLabels: {app: chat}}
  template:
    metadata:
      labels: {app: chat}
    spec:
      containers:
        - name: server
          image: vllm
          resources: {requests: {cpu: "1"}}
"""

# 2 requests/s until t=100, 8 from 100 to 200, then 2 again (steps: each point holds until
# the next one, the ramp between two rows being one second long).
CURVE = "time,requests_per_second\n0,2\n99,2\n100,8\n199,8\n200,2\n399,2\n"


def run(tmp_path: Path, until: float | None) -> SimResult:
    (tmp_path / "curve.csv").write_text(CURVE)
    (tmp_path / "chat.yaml").write_text(DEPLOYMENT)
    manifests = load_files([tmp_path / "chat.yaml"])
    assert not manifests.errors, manifests.errors
    manifests.nodes = [node(f"n{i}", cpu=8000) for i in range(2)]
    return Simulation(manifests, load_config(None), until=until).run()


def replicas_at(tmp_path: Path, at: float) -> tuple[int, int]:
    """The Deployment's replicas and its running pods at ``at``."""
    result = run(tmp_path, at)
    (deployment,) = result.workloads
    running = sum(1 for p in result.pods if p.phase == PodPhase.RUNNING)
    return deployment.spec.replicas, running


def test_replicas_follow_the_curve(tmp_path) -> None:
    assert replicas_at(tmp_path, 50) == (1, 1)
    assert replicas_at(tmp_path, 115) == (4, 4)  # the first tick after the rise
    # Down only once the last 60 s of recommendations all say so: 200 + 60, at a tick.
    assert replicas_at(tmp_path, 255)[0] == 4
    assert replicas_at(tmp_path, 275) == (1, 1)
    assert replicas_at(tmp_path, 515)[0] == 4  # the next period's rise


def test_a_run_of_services_ends_with_its_other_events(tmp_path) -> None:
    """The autoscaler's ticks never keep a run going on their own."""
    result = run(tmp_path, None)
    assert result.end_time < 60 and len(result.series) >= 1
