"""Simulating straight from a trace: cluster sizing, companion node lists, errors, bench --sim."""

from __future__ import annotations

import json
import math

import pytest

from berth.api.objects import Pod
from berth.cli import main
from berth.resources import GPU
from berth.sim.cluster_sizing import SizingRule, size_cluster

ITP_HEADER = "job_id,submission_time,duration,num_gpu\n"


def itp(tmp_path, rows):
    path = tmp_path / "cluster99.csv"
    path.write_text(ITP_HEADER + "".join(f"{r}\n" for r in rows))
    return path


def gpu_pod(name, group, gpus, submit, duration):
    return Pod(
        name,
        group=group,
        submit_time=submit,
        duration=duration,
        requests={"cpu": gpus * 8000, "memory": gpus * 65536, GPU: gpus * 1000, "pods": 1},
    )


SIZING_CASES = {
    # pods (group, gpus, submit, duration), expected node count
    # mean demand 8 GPUs over a 100 s span at 70% load → ceil(8/0.7/8) = 2 nodes
    "mean demand": ([("a", 8, 0, 100), ("b", 8, 100, 0.001)], 2),
    # a 32-GPU gang needs 4 nodes even when mean demand is tiny
    "largest job": (
        [("g", 8, 0, 1), ("g", 8, 0, 1), ("g", 8, 0, 1), ("g", 8, 0, 1), ("x", 1, 1_000_000, 1)],
        4,
    ),
    "one small job": ([("a", 1, 0, 10)], 1),
}


@pytest.mark.parametrize("pods,expected", SIZING_CASES.values(), ids=SIZING_CASES.keys())
def test_cluster_sizing_rule(pods, expected):
    objects = [gpu_pod(f"p{i}", g, n, t, d) for i, (g, n, t, d) in enumerate(pods)]
    nodes, note = size_cluster(objects, SizingRule())
    assert len(nodes) == expected
    assert all(n.allocatable[GPU] == 8000 and n.allocatable["cpu"] == 64000 for n in nodes)
    assert f"{expected} 8-GPU nodes" in note and "70%" in note


def test_cpu_only_traces_get_cpu_nodes():
    pods = [Pod("p", group="p", duration=10, requests={"cpu": 4000, "memory": 1024, "pods": 1})]
    nodes, note = size_cluster(pods, SizingRule())
    assert [n.allocatable["cpu"] for n in nodes] == [96000]
    assert "96-core" in note


def test_simulate_an_itp_trace_on_a_sized_cluster(tmp_path, capsys):
    trace = itp(tmp_path, ["a,0,600,8", "b,10,600,16", "c,20,60,1", "d,30,60,2"])
    out = tmp_path / "out"
    rc = main(
        ["simulate", "--trace", str(trace), "--cluster-from-trace", "--out", str(out), "--quiet"]
    )
    assert rc == 0
    err = capsys.readouterr().err
    assert "note: cluster sized from the trace" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs"]["completed"] == 4
    assert summary["pods"]["submitted"] == 1 + 2 + 1 + 1  # the 16-GPU job has two workers
    rows = (out / "jobs.csv").read_text().splitlines()
    assert any(r.startswith("default,b,default,2,2,") for r in rows)


def test_a_trace_needs_a_cluster(tmp_path, capsys):
    trace = itp(tmp_path, ["a,0,600,8"])
    rc = main(["simulate", "--trace", str(trace), "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 1
    assert "give --cluster FILE or --cluster-from-trace" in capsys.readouterr().err


def test_bad_trace_rows_fail_or_are_skipped_and_reported(tmp_path, capsys):
    trace = itp(tmp_path, ["a,0,600,8", "b,ten,600,1", "c,20,60,1"])
    base = ["simulate", "--trace", str(trace), "--cluster-from-trace", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "o1")]) == 1
    assert f"{trace}:3:" in capsys.readouterr().err
    assert not (tmp_path / "o1").exists()
    assert main([*base, "--out", str(tmp_path / "o2"), "--on-bad-row", "skip"]) == 0
    assert "skipped 1 bad rows" in capsys.readouterr().err
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["jobs"]["submitted"] == 2


def test_openb_uses_the_node_list_beside_it(tmp_path, capsys):
    (tmp_path / "openb_node_list_all_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        "openb-node-0000,64000,262144,2,P100\n"
        "openb-node-0001,96000,393216,8,V100M32\n"
    )
    pods = tmp_path / "openb_pod_list_default.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n"
        "openb-pod-0000,12000,16384,1,500,,LS,Running,0,100,0\n"
        "openb-pod-0001,6000,12288,4,1000,V100M32,BE,Running,5,50,5\n"
    )
    out = tmp_path / "out"
    assert (
        main(
            ["simulate", "--trace", str(pods), "--cluster-from-trace", "--out", str(out), "--quiet"]
        )
        == 0
    )
    assert "openb_node_list_all_node.csv (2 nodes)" in capsys.readouterr().err
    placed = {r.split(",")[1]: r.split(",")[4] for r in (out / "pods.csv").read_text().split()[1:]}
    assert placed["openb-pod-0001"] == "openb-node-0001"  # the V100 model constraint


def test_bench_sim_reports_rates(tmp_path, capsys):
    trace = itp(tmp_path, [f"j{i},{i * 10},300,{1 + i % 8}" for i in range(40)])
    assert main(["bench", "--sim", "--trace", str(trace), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["jobs"] == 40
    assert report["events"] > 40
    assert set(report) >= {"events_per_second", "jobs_per_second", "seconds", "nodes"}
    assert math.isclose(report["jobs_per_second"] * report["seconds"], 40, rel_tol=0.05)


@pytest.mark.parametrize("suffix", ["yaml", "jsonl"])
def test_convert_then_simulate_matches_simulating_the_trace(tmp_path, suffix):
    trace = itp(
        tmp_path, [f"j{i},{i * 30},{200 + 50 * (i % 4)},{(1, 2, 8, 12)[i % 4]}" for i in range(24)]
    )
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        "apiVersion: berth.io/v1alpha1\nkind: NodePool\nmetadata: {name: gpu}\n"
        "spec:\n  count: 3\n  template:\n    status:\n      allocatable:\n"
        "        {cpu: '64', memory: 512Gi, nvidia.com/gpu: '8', pods: '110'}\n"
    )
    workload = tmp_path / f"workload.{suffix}"
    assert main(["trace", "convert", str(trace), "--out", str(workload)]) == 0
    via_manifests, direct = tmp_path / "via", tmp_path / "direct"
    assert (
        main(
            [
                "simulate",
                "--cluster",
                str(cluster),
                "--workload",
                str(workload),
                "--out",
                str(via_manifests),
                "--quiet",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "simulate",
                "--trace",
                str(trace),
                "--cluster",
                str(cluster),
                "--out",
                str(direct),
                "--quiet",
            ]
        )
        == 0
    )
    for name in ("pods.csv", "jobs.csv", "timeseries.csv"):
        assert (via_manifests / name).read_text() == (direct / name).read_text(), name
    summary = json.loads((direct / "summary.json").read_text())
    assert summary["jobs"]["completed"] == 24
