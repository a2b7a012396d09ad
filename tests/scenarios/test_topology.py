"""Network and GPU topology end to end through the CLI: the example's racked cluster and jobs,
warnings about HyperNodes that select nothing, and a trace replayed with --network-topology."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from berth.api.hypernodes import PoolTier, pool_switch_labels
from berth.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "topology"


def pods_of(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "pods.csv", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


def switches(count: int, *tiers: tuple[str, int]) -> dict[str, dict[str, str]]:
    """Switch labels by node name, as the example's NodePool ("gpu") makes them."""
    labels = pool_switch_labels("gpu", count, tuple(PoolTier(n, s) for n, s in tiers))
    width = len(str(count - 1))
    return {f"gpu-{i:0{width}d}": own for i, own in enumerate(labels)}


def test_example(tmp_path: Path) -> None:
    def run(out: Path) -> dict[str, dict[str, str]]:
        args = ["simulate", "--cluster", str(EXAMPLES / "cluster.yaml")]
        args += ["--workload", str(EXAMPLES / "jobs.yaml")]
        args += ["--config", str(EXAMPLES / "scheduler.conf"), "--seed", "1", "--quiet"]
        assert main([*args, "--out", str(out)]) == 0
        return pods_of(out)

    pods = run(tmp_path / "a")
    labels = switches(64, ("rack", 4), ("spine", 2), ("core", 8))

    def spanned(job: str, tier: str) -> set[str]:
        nodes = [row["node"] for name, row in pods.items() if row["job"] == job]
        assert all(nodes)
        return {labels[node][f"topology.berth.io/{tier}"] for node in nodes}

    assert len(spanned("allreduce", "rack")) == 1
    assert len(spanned("pretrain", "spine")) == 1
    assert len(spanned("pretrain", "rack")) == 2  # eight servers: two racks of one spine
    for name, row in pods.items():
        if row["job"] == "finetune":  # four GPUs: one NVLink island
            assert row["devices"] in ("0,1,2,3", "4,5,6,7"), name
    again = run(tmp_path / "b")
    assert again == pods


def test_hypernodes_that_select_nothing_are_reported(tmp_path: Path, capsys) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        (EXAMPLES / "cluster.yaml").read_text()
        + """---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: typo}
spec:
  tier: 1
  members: [{type: Node, selector: {regexMatch: {pattern: "^cpu-"}}}]
"""
    )
    args = ["simulate", "--cluster", str(cluster), "--workload", str(EXAMPLES / "jobs.yaml")]
    assert main([*args, "--out", str(tmp_path / "out"), "--until", "1m", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: HyperNodes: typo hold no node (their members match none, or only nodes an "
        "earlier HyperNode of the tier kept)" in err
    )


def test_trace_with_network_topology(tmp_path: Path) -> None:
    """Three 16-GPU jobs (two 8-GPU workers each) on racks of two servers: in hard mode within
    a rack, each job's workers share one."""
    trace = tmp_path / "itp.csv"
    trace.write_text(
        "job_id,submission_time,duration,num_gpu\n"
        "a,0,600,16\nb,10,600,16\nc,20,600,16\nd,30,600,8\n"
    )
    cluster = tmp_path / "racks.yaml"
    cluster.write_text(
        """apiVersion: berth.io/v1alpha1
kind: NodePool
metadata: {name: gpu}
spec:
  count: 7
  template:
    status: {allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}}
  topology:
    tiers: [{name: rack, size: 2}]
"""
    )
    out = tmp_path / "out"
    args = ["simulate", "--trace", str(trace), "--cluster", str(cluster), "--quiet"]
    assert main([*args, "--network-topology", "hard:1", "--out", str(out)]) == 0
    labels = switches(7, ("rack", 2))
    racks: dict[str, set[str]] = {}
    for row in pods_of(out).values():
        racks.setdefault(row["job"], set()).add(labels[row["node"]]["topology.berth.io/rack"])
    assert {job: len(r) for job, r in racks.items()} == {"a": 1, "b": 1, "c": 1, "d": 1}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("strict", "'strict': expected hard or soft, optionally with :TIER (e.g. hard:1)"),
        ("hard:x", "'hard:x': the tier must be a whole number >= 0"),
        ("soft:-1", "'soft:-1': the tier must be a whole number >= 0"),
    ],
)
def test_bad_network_topology_option(tmp_path: Path, capsys, value: str, message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "--trace", "x.csv", "--cluster-from-trace", "--network-topology", value])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_converted_trace_keeps_the_network_topology(tmp_path: Path) -> None:
    trace = tmp_path / "itp.csv"
    trace.write_text("job_id,submission_time,duration,num_gpu\na,0,600,16\nb,5,600,8\n")
    out = tmp_path / "jobs.yaml"
    args = ["trace", "convert", str(trace), "--out", str(out), "--network-topology", "soft:2"]
    assert main(args) == 0
    text = out.read_text()
    assert text.count("networkTopology") == 1  # the two-worker job only
    assert "highestTierAllowed: 2" in text and "mode: soft" in text


def test_validate_counts_hypernodes(capsys) -> None:
    assert main(["validate", str(EXAMPLES / "cluster.yaml")]) == 0
    # 16 racks, 8 spines, 1 core switch
    assert capsys.readouterr().out.strip() == (
        "valid: 64 nodes, 0 pods, 0 podgroups, 0 queues, 25 hypernodes"
    )
