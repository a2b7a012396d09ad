"""examples/cpuset through the CLI: the cpuset column of pods.csv, no cpu held twice, LS pods
on the shared pool; and bad CPU topologies and resource specs refused with one line each."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from berth.cli import main
from berth.cluster.cpusets import _parse

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cpuset"


def test_the_example_gives_every_lse_and_lsr_pod_its_own_cpus(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    argv = ["simulate", "--cluster", str(EXAMPLE / "cluster.yaml")]
    argv += ["--workload", str(EXAMPLE / "workload.yaml"), "--until", "1h", "--quiet"]
    assert main([*argv, "--out", str(out)]) == 0
    with open(out / "pods.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    held: dict[str, set[int]] = {}
    for row in rows:
        cpus = _parse(row["cpuset"])
        if row["name"].startswith("web-"):
            assert cpus == []
            continue
        assert len(cpus) == (8 if row["name"].startswith("trading-") else 6), row
        node = held.setdefault(row["node"], set())
        assert not node & set(cpus), f"cpus held twice on {row['node']}"
        node.update(cpus)
    spread = sorted(_parse(r["cpuset"]) for r in rows if r["name"].startswith("cache-"))
    assert spread[0][:3] == [16, 18, 20]  # one thread per core first


NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: n0
  labels: {labels}
  annotations: {annotations}
status:
  allocatable: {{cpu: "16", memory: 64Gi}}
"""

BAD = {
    "NUMA nodes that do not split the cores": (
        NODE.format(
            labels="{}",
            annotations='{berth.io/cpu-cores-per-socket: "6", '
            'berth.io/cpu-numa-nodes-per-socket: "4"}',
        ),
        "metadata.annotations.berth.io/cpu-numa-nodes-per-socket: 4 NUMA nodes per socket do "
        "not split its 6 cores evenly",
    ),
    "fewer cpus than allocatable": (
        NODE.format(labels="{}", annotations='{berth.io/cpu-cores-per-socket: "8"}'),
        "metadata.annotations.berth.io/cpu-cores-per-socket: the topology has 8 cpus, fewer "
        "than the node's allocatable cpu 16",
    ),
    "unknown NUMA strategy": (
        NODE.format(
            labels="{node.koordinator.sh/numa-allocate-strategy: Packed}", annotations="{}"
        ),
        "metadata.labels.node.koordinator.sh/numa-allocate-strategy: 'Packed' is not one of "
        "MostAllocated, LeastAllocated",
    ),
    "resource spec that is not JSON": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        "    scheduling.koordinator.sh/resource-spec: '{policy'\n"
        "spec: {containers: [{name: c}]}\n",
        'metadata.annotations.scheduling.koordinator.sh/resource-spec: "{policy" is not JSON '
        "(expected an object)",
    ),
    "unknown bind policy": (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n"
        '    scheduling.koordinator.sh/resource-spec: \'{"preferredCPUBindPolicy": "Any"}\'\n'
        "spec: {containers: [{name: c}]}\n",
        'preferredCPUBindPolicy: "Any" is not one of FullPCPUs, SpreadByPCPUs',
    ),
}


@pytest.mark.parametrize("text,message", BAD.values(), ids=BAD.keys())
def test_bad_topologies_and_specs(tmp_path: Path, capsys, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert message in out + err
    assert "Traceback" not in out + err
