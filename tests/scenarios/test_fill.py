"""``berth fill`` and ``berth simulate --cluster NODES.csv`` through the CLI, on small openb-format
node and pod lists written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from berth.cli import main
from berth.sim.fill import fill_workload
from tests.builders import pod

NODES = """sn,cpu_milli,memory_mib,gpu,model
n0,32000,131072,2,T4
n1,32000,131072,4,V100
n2,64000,262144,8,V100
n3,16000,65536,0,
"""
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    """p0,4000,8192,1,500,,LS,Running,0,100,0
p1,4000,8192,1,1000,,LS,Running,1,100,1
p2,2000,4096,1,250,T4,LS,Running,2,100,2
p3,8000,16384,2,1000,,LS,Running,3,100,3
p4,1000,2048,0,0,,BE,Running,4,100,4
p5,4000,8192,1,700,V100,LS,Running,5,100,5
"""
)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path]:
    nodes, pods = tmp_path / "openb_node_list_gpu_node.csv", tmp_path / "openb_pod_list_t.csv"
    nodes.write_text(NODES)
    pods.write_text(PODS)
    return nodes, pods


def test_fill_writes_curves_and_is_deterministic(inputs, tmp_path, capsys):
    nodes, pods = inputs
    args = ["fill", "--cluster", str(nodes), "--workload", str(pods), "--seeds", "2", "--jobs", "1"]
    assert main([*args, "--policy", "fgd", "--policy", "random", "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--policy", "fgd", "--policy", "random", "--out", str(tmp_path / "b")]) == 0
    assert "fgd" in capsys.readouterr().out
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "fill.csv").read_text() == (b / "fill.csv").read_text()
    summary = json.loads((a / "summary.json").read_text())
    fgd = summary["policies"]["fgd"]
    assert fgd["seeds"] == 2
    for run in fgd["runs"]:
        assert 0 < run["gpu_allocation_percent"] <= 100
        assert run["placed"] + run["dropped"] == run["pods"]
        assert run["arrived_percent"] <= 130
    assert (a / "allocation.png").stat().st_size > 0
    rows = (a / "fill.csv").read_text().splitlines()
    assert rows[0] == "policy,seed,arrived_percent,allocated_percent,fragmented_percent"


def test_fill_shows_a_spread_only_over_several_seeds(inputs, tmp_path, capsys):
    nodes, pods = inputs
    args = ["fill", "--cluster", str(nodes), "--workload", str(pods), "--policy", "fgd"]
    assert main([*args, "--out", str(tmp_path / "one")]) == 0
    assert "±" not in capsys.readouterr().out
    assert main([*args, "--seeds", "2", "--jobs", "1", "--out", str(tmp_path / "two")]) == 0
    assert "±" in capsys.readouterr().out


def test_fill_workload_reaches_the_target_and_no_further():
    pods = [pod(f"p{i}", gpu=g) for i, g in enumerate([500, 1000, 2000, 0])]
    workload = fill_workload(pods, capacity=14000, seed=3, target=1.3)
    total = sum(p.requests.get("nvidia.com/gpu", 0) for p in workload)
    assert 1.3 * 14000 - 2000 < total <= 1.3 * 14000
    assert len({p.key for p in workload}) == len(workload)
    trimmed = fill_workload(pods, capacity=1000, seed=3, target=1.0)
    assert sum(p.requests.get("nvidia.com/gpu", 0) for p in trimmed) <= 1000


@pytest.mark.parametrize(
    "cluster,workload,message",
    [
        ("missing.csv", "PODS", "missing.csv"),
        ("CPU_ONLY", "PODS", "the cluster has no GPUs"),
        ("NODES", "NODES", "holds nodes (openb), not pods"),
    ],
)
def test_fill_bad_input_is_one_line(inputs, tmp_path, capsys, cluster, workload, message):
    nodes, pods = inputs
    cpu_only = tmp_path / "cpu.csv"
    cpu_only.write_text("sn,cpu_milli,memory_mib,gpu,model\nc0,1000,1024,0,\n")
    names = {"NODES": str(nodes), "PODS": str(pods), "CPU_ONLY": str(cpu_only)}
    argv = ["fill", "--cluster", names.get(cluster, cluster), "--workload", names[workload]]
    assert main([*argv, "--jobs", "1", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_fill_refuses_a_folder_of_other_files(inputs, tmp_path, capsys):
    nodes, pods = inputs
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep")
    argv = ["fill", "--cluster", str(nodes), "--workload", str(pods), "--out", str(out)]
    assert main([*argv, "--jobs", "1"]) == 1
    assert "holds files berth did not write" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "keep"


def test_simulate_reads_a_node_list_as_the_cluster(inputs, tmp_path):
    nodes, pods = inputs
    out = tmp_path / "sim"
    argv = ["simulate", "--trace", str(pods), "--cluster", str(nodes), "--out", str(out)]
    assert main([*argv, "--quiet"]) == 0
    rows = (out / "pods.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert header[4:6] == ["node", "devices"]
    summary = json.loads((out / "summary.json").read_text())
    assert "gpu_fragmentation" in summary
    assert "gpu_fragmented" in (out / "timeseries.csv").read_text().splitlines()[0]
