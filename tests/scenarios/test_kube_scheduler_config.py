"""``berth simulate`` and ``berth validate`` with a KubeSchedulerConfiguration, end to end
through the CLI, on the example configuration the docs point to."""

from __future__ import annotations

import csv
from pathlib import Path

import yaml

from berth.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kube-scheduler.yaml"

CLUSTER = """\
apiVersion: berth.io/v1alpha1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 2
  template:
    status: {allocatable: {cpu: "64", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}}
"""


def gpu_pod(name: str, scheduler: str | None = None) -> dict:
    spec: dict = {
        "containers": [
            {
                "name": "main",
                "resources": {"requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}},
            }
        ]
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": {"berth.io/duration": "600"}},
        "spec": spec,
    }


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLUSTER)
    workload = tmp_path / "workload.yaml"
    pods = [gpu_pod(f"train-{i}") for i in range(3)] + [gpu_pod("elsewhere", "other-scheduler")]
    workload.write_text(yaml.safe_dump_all(pods))
    return cluster, workload


def placements(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "pods.csv", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def simulate(tmp_path: Path, name: str, *config: str) -> dict[str, dict[str, str]]:
    cluster, workload = write_inputs(tmp_path)
    out = tmp_path / name
    argv = ["simulate", "--cluster", str(cluster), "--workload", str(workload), "--out", str(out)]
    assert main([*argv, *config, "--quiet", "--until", "60"]) == 0
    return placements(out)


def test_the_profile_is_what_schedules(tmp_path, capsys):
    """The example packs GPUs (RequestedToCapacityRatio on nvidia.com/gpu): the three GPU pods
    share a node, where kube-scheduler's default profile (LeastAllocated on cpu and memory)
    spreads them; a pod for another scheduler waits."""
    packed = simulate(tmp_path, "kube", "--config", str(EXAMPLE))
    assert len({packed[f"train-{i}"]["node"] for i in range(3)}) == 1
    assert packed["elsewhere"]["node"] == ""
    assert packed["elsewhere"]["reason"] == (
        "schedulerName other-scheduler is not handled by berth"
    )
    assert "plugins with nothing to act on in berth, skipped" in capsys.readouterr().err
    plain = tmp_path / "plain.yaml"
    plain.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: default-scheduler}]\n"
    )
    spread = simulate(tmp_path, "plain", "--config", str(plain))
    assert len({spread[f"train-{i}"]["node"] for i in range(3)}) == 2


def test_validate_recognises_every_kind_of_file(capsys):
    files = sorted(str(p) for p in (ROOT / "examples").glob("*.yaml"))
    assert main(["validate", *files, str(ROOT / "examples" / "volcano-scheduler.conf")]) == 0
    out = capsys.readouterr().out.splitlines()
    expected = f"valid: {EXAMPLE}: scheduler configuration (actions allocate, preempt, backfill;"
    assert any(line.startswith(expected) for line in out)
    assert any(line.startswith("valid: ") and "nodes" in line for line in out)
    assert sum("scheduler configuration" in line for line in out) == 3


def test_validate_reports_a_bad_configuration(tmp_path, capsys):
    bad = tmp_path / "kube.yaml"
    bad.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "  - pluginConfig:\n"
        "      - name: NodeResourcesFit\n"
        "        args: {scoringStrategy: {type: Packed}}\n"
    )
    assert main(["validate", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == (
        f"{bad}: profiles[0].pluginConfig[NodeResourcesFit].args.scoringStrategy.type: "
        "expected one of LeastAllocated, MostAllocated, RequestedToCapacityRatio (got 'Packed')\n"
    )
    assert "Traceback" not in captured.err


def test_simulate_refuses_two_profiles(tmp_path, capsys):
    cluster, workload = write_inputs(tmp_path)
    config = tmp_path / "kube.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles: [{schedulerName: default-scheduler}, {schedulerName: packer}]\n"
    )
    argv = ["simulate", "--cluster", str(cluster), "--workload", str(workload)]
    assert main([*argv, "--config", str(config), "--out", str(tmp_path / "o"), "--quiet"]) == 1
    assert capsys.readouterr().err == (
        f"error: {config}: profiles: 2 profiles (default-scheduler, packer); berth runs one "
        "profile per run: keep the one to simulate\n"
    )
